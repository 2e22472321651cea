#include "neomeg/imperative/apply.h"

#include <array>

namespace neomeg::imperative {
namespace {

// Most ops have at most this many inputs/outputs; more spill to the heap.
constexpr size_t kInline = 8;

template <class T>
class ScratchArray {
public:
    explicit ScratchArray(size_t n) : m_size(n) {
        if (n > kInline) {
            m_heap.resize(n);
            m_data = m_heap.data();
        } else {
            m_data = m_inline.data();
        }
    }
    T& operator[](size_t i) { return m_data[i]; }
    std::span<T> span() { return {m_data, m_size}; }

private:
    size_t m_size;
    std::array<T, kInline> m_inline{};
    std::vector<T> m_heap;
    T* m_data;
};

std::vector<Tensor> run(dnn::OperatorBase& dop, std::span<const Tensor> inputs,
                        std::span<dnn::TensorLayout> out_layouts, CompNode cn) {
    ScratchArray<dnn::TensorND> in_nd(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
        in_nd[i] = inputs[i].dnn_tensor();

    std::vector<Tensor> outputs;
    outputs.reserve(out_layouts.size());
    ScratchArray<dnn::TensorND> out_nd(out_layouts.size());
    for (size_t i = 0; i < out_layouts.size(); ++i) {
        outputs.push_back(Tensor::empty(out_layouts[i], out_layouts[i].dtype, cn));
        out_nd[i] = outputs.back().dnn_tensor();
    }

    ScratchArray<dnn::TensorLayout> in_layouts(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
        in_layouts[i] = inputs[i].layout();
    size_t ws_size = dop.get_workspace_in_bytes(in_layouts.span(), out_layouts);
    if (ws_size) {
        Blob ws(cn, ws_size);
        dop.exec_unchecked(in_nd.span(), out_nd.span(), {ws.ptr(), ws_size});
    } else {
        dop.exec_unchecked(in_nd.span(), out_nd.span(), {});
    }
    return outputs;
}

}  // namespace

std::vector<Tensor> apply(const OpDef& op, std::span<const Tensor> inputs) {
    NM_THROW_IF(inputs.empty(), ParamError, op.to_string(),
                ": apply() needs at least one input; use apply_generator for generator ops");
    CompNode cn = inputs[0].comp_node();
    ScratchArray<dnn::TensorLayout> in_layouts(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        NM_THROW_IF(!inputs[i].valid(), ParamError, op.to_string(), ": input ", i,
                    " is an empty tensor handle");
        NM_THROW_IF(inputs[i].comp_node() != cn, ParamError, op.to_string(), ": input ", i,
                    " is on ", inputs[i].comp_node().to_string(), " but input 0 is on ",
                    cn.to_string(), "; copy it first");
        in_layouts[i] = inputs[i].layout();
    }
    dnn::OperatorBase& dop = op.dnn_operator(cn.dnn_handle());
    ScratchArray<dnn::TensorLayout> out_layouts(dop.num_outputs());
    // deduce_layout validates the inputs; exec then runs unchecked on our own allocations.
    dop.deduce_layout(in_layouts.span(), out_layouts.span());
    return run(dop, inputs, out_layouts.span(), cn);
}

std::vector<Tensor> apply_generator(const OpDef& op, std::span<const dnn::TensorShape> shapes,
                                    CompNode cn) {
    dnn::OperatorBase& dop = op.dnn_operator(cn.dnn_handle());
    NM_THROW_IF(shapes.size() != dop.num_outputs(), ParamError, op.to_string(), ": ",
                dop.num_outputs(), " output shapes needed, got ", shapes.size());
    ScratchArray<dnn::TensorLayout> out_layouts(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i)
        static_cast<dnn::TensorShape&>(out_layouts[i]) = shapes[i];
    dop.deduce_layout({}, out_layouts.span());
    return run(dop, {}, out_layouts.span(), cn);
}

}  // namespace neomeg::imperative
