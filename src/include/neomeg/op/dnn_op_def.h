// The OpDef of a kernel-library operator: its params, and the dnn operator that runs it, made
// for a handle on first use and cached.
#pragma once

#include "neomeg/dnn/forwarding.h"
#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/param_base.h"
#include "neomeg/op/op_def.h"

namespace neomeg {

class DnnOpDefBase : public OpDef {
public:
    // The kernel-library operator for `handle`, carrying this op's params. Cached in the op, so
    // a reused op costs no lookup and keeps its kernels' plans (x86's per-shape oneDNN
    // primitives); one op object must not run on two threads at once.
    virtual dnn::OperatorBase& dnn_operator(dnn::Handle* handle) const = 0;

    std::vector<dnn::TensorLayout> infer_layouts(
            CompNode cn, std::span<const dnn::TensorLayout> inputs,
            std::span<const dnn::TensorShape> output_shapes) const final;
    size_t workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> inputs,
                              std::span<const dnn::TensorLayout> outputs) const final;
    void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const final;

    // The input whose elements the output is, unchanged in row-major order (its definition's
    // forwards=...), or dnn::kForwardsNothing: where that input is contiguous, the eager runtime
    // views it and the graph plans the output on its memory.
    int forwarded_input() const { return dnn::forwarded_input(static_cast<dnn::OpType>(id())); }
};

// DnnOp: a class of <neomeg/dnn/operators/<group>.h>.
template <class DnnOp>
class DnnOpDef final : public DnnOpDefBase {
public:
    using Param = typename DnnOp::Param;
    static constexpr OpId kId = static_cast<OpId>(DnnOp::kType);

    explicit DnnOpDef(const Param& param = {}) : m_param(param) {}

    const Param& param() const { return m_param; }
    void set_param(const Param& param) {
        m_param = param;
        m_cached_handle = nullptr;
        m_cached_op.reset();
    }

    OpId id() const override { return kId; }
    size_t hash() const override { return dnn::param::hash_param(m_param) ^ size_t(kId); }
    bool is_same(const OpDef& rhs) const override {
        return rhs.id() == kId && static_cast<const DnnOpDef&>(rhs).m_param == m_param;
    }
    std::string to_string() const override { return name() + dnn::param::to_string(m_param); }
    std::shared_ptr<OpDef> clone() const override { return std::make_shared<DnnOpDef>(m_param); }

    std::vector<ParamField> param_fields() const override { return param_fields_of(m_param); }
    void set_param_field(std::string_view field, const ParamValue& value) override {
        Param p = m_param;
        set_param_field_of(p, field, value, to_string());
        set_param(p);
    }

    dnn::OperatorBase& dnn_operator(dnn::Handle* handle) const override {
        if (handle != m_cached_handle) {
            auto op = handle->create_operator<DnnOp>();
            op->param() = m_param;
            m_cached_op = std::move(op);
            m_cached_handle = handle;
        }
        return *m_cached_op;
    }

private:
    Param m_param;
    mutable dnn::Handle* m_cached_handle = nullptr;
    mutable std::unique_ptr<dnn::OperatorBase> m_cached_op;
};

}  // namespace neomeg
