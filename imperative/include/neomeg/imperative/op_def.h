// OpDef: an operator with its params, as the eager runtime (and later the graph and the model
// file) sees it. One class per operator, generated (imperative/opgen/emit_op_defs.py):
//   DnnOpDef<dnn::Op>      kernel-library operators (dnn/ops/defs): run a dnn kernel;
//   ViewOpDef<Param, Id>   layout operators (imperative/ops/defs): return a view, copy if needed.
// apply() (apply.h) runs any OpDef and records it for autograd.
#pragma once

#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators.h"
#include "neomeg/imperative/op_ids.h"
#include "neomeg/imperative/tensor.h"

namespace neomeg::imperative {

// The id of OpDefs that are not generated (they override name() and grad_rule()).
inline constexpr OpId kCustomOpId = static_cast<OpId>(kNumOpIds);

struct GradRule;  // grad.h

class OpDef {
public:
    virtual ~OpDef() = default;

    // The generated operators' id. An OpDef defined outside the generated set (a Python
    // autodiff.Function) returns kCustomOpId and overrides name() and grad_rule().
    virtual OpId id() const = 0;
    virtual const char* name() const { return op_id_name(id()); }
    // The backward rule autograd records this op with; nullptr: not differentiable.
    virtual const GradRule* grad_rule() const;
    virtual size_t hash() const = 0;
    virtual bool is_same(const OpDef& rhs) const = 0;  // same operator and equal params
    virtual std::string to_string() const = 0;         // "Elemwise(mode=ADD)"

    // Computes the outputs; no autograd (apply() adds that).
    virtual std::vector<Tensor> run(std::span<const Tensor> inputs) const = 0;
    // As run(), with every output's shape preset by the caller, for operators whose layout rule
    // accepts a preset (ConvolutionBackwardData/Filter: several input shapes give one forward
    // output, and a backward rule must reproduce the forward input's).
    virtual std::vector<Tensor> run_with_shapes(
            std::span<const Tensor> /*inputs*/,
            std::span<const dnn::TensorShape> /*shapes*/) const {
        throw dnn::ParamError(dnn::str_cat(to_string(), ": takes no preset output shapes"));
    }
    // Runs an op without inputs (Fill, Eye, the RNGs) with caller-chosen output shapes.
    virtual std::vector<Tensor> run_generator(std::span<const dnn::TensorShape> /*shapes*/,
                                              CompNode /*cn*/) const {
        throw dnn::ParamError(dnn::str_cat(to_string(), ": not a generator op"));
    }
    // A copy with the same params, for the autograd tape to keep.
    virtual std::shared_ptr<OpDef> clone() const = 0;
};

// Runs a kernel-library operator on the inputs' comp node (imperative/src/dnn_exec.cpp);
// `shapes`, if not empty, presets every output's shape for its layout rule to check.
std::vector<Tensor> run_dnn_op(const OpDef& def, dnn::OperatorBase& op,
                               std::span<const Tensor> inputs,
                               std::span<const dnn::TensorShape> shapes = {});
// Runs a generator operator (no inputs) with caller-chosen output shapes.
std::vector<Tensor> run_dnn_generator(const OpDef& def, dnn::OperatorBase& op,
                                      std::span<const dnn::TensorShape> shapes, CompNode cn);

template <class DnnOp>
class DnnOpDef final : public OpDef {
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
    std::vector<Tensor> run(std::span<const Tensor> inputs) const override {
        NM_THROW_IF(inputs.empty(), ParamError, to_string(),
                    ": needs at least one input; a generator op runs with run_generator()");
        return run_dnn_op(*this, dnn_operator(inputs[0].comp_node().dnn_handle()), inputs);
    }
    std::vector<Tensor> run_with_shapes(std::span<const Tensor> inputs,
                                        std::span<const dnn::TensorShape> shapes) const override {
        NM_THROW_IF(inputs.empty() || shapes.empty(), ParamError, to_string(),
                    ": run_with_shapes needs inputs and output shapes");
        return run_dnn_op(*this, dnn_operator(inputs[0].comp_node().dnn_handle()), inputs, shapes);
    }
    std::vector<Tensor> run_generator(std::span<const dnn::TensorShape> shapes,
                                      CompNode cn) const override {
        return run_dnn_generator(*this, dnn_operator(cn.dnn_handle()), shapes, cn);
    }

    // The kernel-library operator for `handle`, carrying this op's params. Cached in the OpDef,
    // so a reused OpDef costs no lookup; one OpDef must not run on two threads at once.
    dnn::OperatorBase& dnn_operator(dnn::Handle* handle) const {
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

// The layout of a view op's output and where its element 0 lies, in elements from the input's.
struct ViewLayout {
    dnn::TensorLayout layout;
    ptrdiff_t offset = 0;
};

template <class Param, OpId kIdValue>
class ViewOpDef final : public OpDef {
public:
    static constexpr OpId kId = kIdValue;

    explicit ViewOpDef(const Param& param = {}) : m_param(param) {}
    const Param& param() const { return m_param; }
    void set_param(const Param& param) { m_param = param; }

    OpId id() const override { return kId; }
    size_t hash() const override { return dnn::param::hash_param(m_param) ^ size_t(kId); }
    bool is_same(const OpDef& rhs) const override {
        return rhs.id() == kId && static_cast<const ViewOpDef&>(rhs).m_param == m_param;
    }
    std::string to_string() const override { return name() + dnn::param::to_string(m_param); }

    std::vector<Tensor> run(std::span<const Tensor> inputs) const override;
    std::shared_ptr<OpDef> clone() const override { return std::make_shared<ViewOpDef>(m_param); }

private:
    Param m_param;
};

// Each view op's layout rule, found by argument-dependent lookup on its param type and defined in
// imperative/src/ops/view_layouts.cpp (declared in neomeg/imperative/view_layouts.h): returns the
// output view, or nullopt when src's strides cannot express it and a contiguous copy is needed.
template <class Param, OpId kIdValue>
std::vector<Tensor> ViewOpDef<Param, kIdValue>::run(std::span<const Tensor> inputs) const {
    NM_THROW_IF(inputs.size() != 1, ParamError, to_string(), ": expects 1 input, got ",
                inputs.size());
    const Tensor& src = inputs[0];
    if (auto v = view_layout(*this, m_param, src.layout()))
        return {src.view(v->layout, v->offset * static_cast<ptrdiff_t>(src.dtype().size()))};
    Tensor c = src.contiguous();
    auto v = view_layout(*this, m_param, c.layout());
    NM_THROW_IF(!v, Error, to_string(), ": no view of contiguous ", c.layout().to_string());
    return {c.view(v->layout, v->offset * static_cast<ptrdiff_t>(c.dtype().size()))};
}

}  // namespace neomeg::imperative
