// The OpDef of a layout operator (src/ops/defs/views.py): Reshape, Broadcast, Dimshuffle,
// AddAxis, RemoveAxis. Its layout rule gives the output as a view of the input; the eager
// runtime returns that view (sharing storage), a graph copies it into the output's planned memory.
#pragma once

#include <optional>

#include "neomeg/dnn/param_base.h"
#include "neomeg/op/op_def.h"

namespace neomeg {

namespace dnn {
class Relayout;  // <neomeg/dnn/operators/tensor_basic.h>, which only view_op_def.cpp needs
}

// The layout of a view op's output and where its element 0 lies, in elements from the input's.
struct ViewLayout {
    dnn::TensorLayout layout;
    ptrdiff_t offset = 0;
};

class ViewOpDefBase : public OpDef {
public:
    ViewOpDefBase();
    ~ViewOpDefBase() override;  // where dnn::Relayout is complete
    // The output as a view of `src`, or nullopt when src's strides cannot express it without a
    // copy; bad params throw ShapeError/ParamError naming this op.
    virtual std::optional<ViewLayout> view_layout(const dnn::TensorLayout& src) const = 0;

    std::vector<dnn::TensorLayout> infer_layouts(
            CompNode cn, std::span<const dnn::TensorLayout> inputs,
            std::span<const dnn::TensorShape> output_shapes) const final;
    size_t workspace_in_bytes(CompNode cn, std::span<const dnn::TensorLayout> inputs,
                              std::span<const dnn::TensorLayout> outputs) const final;
    // Copies the view of inputs[0] into outputs[0] with dnn Relayout.
    void exec(CompNode cn, std::span<const dnn::TensorND> inputs,
              std::span<const dnn::TensorND> outputs, dnn::Workspace workspace) const final;

private:
    mutable dnn::Handle* m_relayout_handle = nullptr;
    mutable std::unique_ptr<dnn::Relayout> m_relayout;
};

template <class Param, OpId kIdValue>
class ViewOpDef final : public ViewOpDefBase {
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
    std::shared_ptr<OpDef> clone() const override { return std::make_shared<ViewOpDef>(m_param); }

    std::vector<ParamField> param_fields() const override { return param_fields_of(m_param); }
    void set_param_field(std::string_view field, const ParamValue& value) override {
        set_param_field_of(m_param, field, value, to_string());
    }

    // Each view op's rule is found by argument-dependent lookup on its param type
    // (neomeg/op/view_layouts.h, src/op/view_layouts.cpp).
    std::optional<ViewLayout> view_layout(const dnn::TensorLayout& src) const override;

private:
    Param m_param;
};

template <class Param, OpId kIdValue>
std::optional<ViewLayout> ViewOpDef<Param, kIdValue>::view_layout(
        const dnn::TensorLayout& src) const {
    return view_layout_of(*this, m_param, src);
}

}  // namespace neomeg
