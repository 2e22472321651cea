// OpDef: an operator with its params, as the eager runtime (and later the graph and the model
// file) sees it. Every kernel-library operator has one, generated from dnn/ops/defs as
// DnnOpDef<dnn::Op> (imperative/opgen/emit_op_defs.py); apply() runs it.
#pragma once

#include <memory>
#include <string>

#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators.h"

namespace neomeg::imperative {

class OpDef {
public:
    virtual ~OpDef() = default;

    virtual dnn::OpType dnn_type() const = 0;
    const char* name() const { return dnn::op_type_name(dnn_type()); }
    virtual size_t hash() const = 0;
    virtual bool is_same(const OpDef& rhs) const = 0;  // same operator and equal params
    virtual std::string to_string() const = 0;          // "Elemwise(mode=ADD)"

    // The kernel-library operator that runs this op on `handle`, carrying this op's params.
    // Cached in the OpDef, so a reused OpDef costs no lookup; not safe to share one OpDef
    // between threads that run it concurrently.
    dnn::OperatorBase& dnn_operator(dnn::Handle* handle) const {
        if (handle != m_cached_handle) {
            m_cached_op = create_dnn_operator(handle);
            m_cached_handle = handle;
        }
        return *m_cached_op;
    }

protected:
    virtual std::unique_ptr<dnn::OperatorBase> create_dnn_operator(dnn::Handle* handle) const = 0;
    void invalidate_cache() {
        m_cached_handle = nullptr;
        m_cached_op.reset();
    }

private:
    mutable dnn::Handle* m_cached_handle = nullptr;
    mutable std::unique_ptr<dnn::OperatorBase> m_cached_op;
};

template <class DnnOp>
class DnnOpDef final : public OpDef {
public:
    using Param = typename DnnOp::Param;
    static constexpr dnn::OpType kType = DnnOp::kType;

    explicit DnnOpDef(const Param& param = {}) : m_param(param) {}

    const Param& param() const { return m_param; }
    void set_param(const Param& param) {
        m_param = param;
        invalidate_cache();
    }

    dnn::OpType dnn_type() const override { return kType; }
    size_t hash() const override { return dnn::param::hash_param(m_param) ^ size_t(kType); }
    bool is_same(const OpDef& rhs) const override {
        return rhs.dnn_type() == kType && static_cast<const DnnOpDef&>(rhs).m_param == m_param;
    }
    std::string to_string() const override { return name() + dnn::param::to_string(m_param); }

protected:
    std::unique_ptr<dnn::OperatorBase> create_dnn_operator(dnn::Handle* handle) const override {
        auto op = handle->create_operator<DnnOp>();
        op->param() = m_param;
        return op;
    }

private:
    Param m_param;
};

}  // namespace neomeg::imperative
