// Running a kernel-library operator on eager tensors: deduce the output layouts, allocate them
// on the inputs' comp node, exec. deduce_layout validates the inputs, so exec runs unchecked.
// Outputs are contiguous except where the operator's definition says an output follows a
// channels-last input (layout_follows): consecutive oneDNN ops then run without converting to
// NCHW between them. A graph keeps contiguous vars: this rule is eager mode's alone.
#include <chrono>
#include <cstddef>
#include <memory>
#include <new>

#include "neomeg/dnn/channels_last.h"
#include "neomeg/imperative/op_timeline.h"

#include "blocked_dispatch.h"
#include "exec.h"
#include "op_profile.h"

namespace neomeg::imperative {
namespace {

// Most ops have at most this many inputs/outputs; more spill to the heap. Only the elements in
// use are constructed: a TensorLayout zeroes its 120 bytes when made, and the four arrays of
// kInline an apply fills cost 4 KB of stores, 0.1 us of a 1.2 us `a + b`.
constexpr size_t kInline = 8;

template <class T>
class ScratchArray {
public:
    explicit ScratchArray(size_t n) : m_size(n) {
        m_data = n > kInline ? static_cast<T*>(::operator new(n * sizeof(T)))
                             : reinterpret_cast<T*>(m_inline);
        std::uninitialized_value_construct_n(m_data, n);
    }
    ~ScratchArray() {
        std::destroy_n(m_data, m_size);
        if (m_size > kInline)
            ::operator delete(m_data);
    }
    ScratchArray(const ScratchArray&) = delete;
    ScratchArray& operator=(const ScratchArray&) = delete;

    T& operator[](size_t i) { return m_data[i]; }
    std::span<T> span() { return {m_data, m_size}; }

private:
    size_t m_size;
    alignas(T) std::byte m_inline[kInline * sizeof(T)];
    T* m_data;
};

void exec_into(dnn::OperatorBase& dop, std::span<const dnn::TensorND> in_nd,
               std::span<const dnn::TensorLayout> in_layouts, std::span<const dnn::TensorND> out_nd,
               std::span<const dnn::TensorLayout> out_layouts, CompNode cn) {
    size_t ws_size = dop.get_workspace_in_bytes(in_layouts, out_layouts);
    if (ws_size) {
        Blob ws(cn, ws_size);
        dop.exec_unchecked(in_nd, out_nd, {ws.ptr(), ws_size});
    } else {
        dop.exec_unchecked(in_nd, out_nd, {});
    }
}

// exec_into() with the eager profile's and the timeline's records of the call.
void exec_into_timed(const OpDef& def, dnn::OperatorBase& dop, std::span<const dnn::TensorND> in_nd,
                     std::span<const dnn::TensorLayout> in_layouts,
                     std::span<const dnn::TensorND> out_nd,
                     std::span<const dnn::TensorLayout> out_layouts, CompNode cn) {
    const bool profiled = eager_profile_enabled();
    const bool recorded = timeline_recording();
    const int64_t start = profiled || recorded ? timeline_now_ns() : 0;
    exec_into(dop, in_nd, in_layouts, out_nd, out_layouts, cn);
    if (profiled || recorded) {
        const int64_t end = timeline_now_ns();
        if (profiled)
            eager_profile_add(def, in_layouts, std::chrono::nanoseconds(end - start));
        if (recorded)
            timeline_add(def, in_layouts, start, end);
    }
}

// New outputs of these layouts (contiguous, or dense in a channels-last order), and their views.
std::vector<Tensor> allocate(std::span<const dnn::TensorLayout> out_layouts, CompNode cn,
                             ScratchArray<dnn::TensorND>& out_nd) {
    std::vector<Tensor> outputs;
    outputs.reserve(out_layouts.size());
    for (size_t i = 0; i < out_layouts.size(); ++i) {
        const dnn::TensorLayout& l = out_layouts[i];
        outputs.push_back(dnn::is_channels_last(l) ? Tensor::empty_dense(l, cn)
                                                   : Tensor::empty(l, l.dtype, cn));
        out_nd[i] = outputs.back().dnn_tensor();
    }
    return outputs;
}

std::vector<Tensor> exec(dnn::OperatorBase& dop, std::span<const dnn::TensorND> in_nd,
                         std::span<const dnn::TensorLayout> in_layouts,
                         std::span<dnn::TensorLayout> out_layouts, CompNode cn) {
    ScratchArray<dnn::TensorND> out_nd(out_layouts.size());
    std::vector<Tensor> outputs = allocate(out_layouts, cn, out_nd);
    exec_into(dop, in_nd, in_layouts, out_nd.span(), out_layouts, cn);
    return outputs;
}

// exec() with the eager profile's and the timeline's records of the call.
std::vector<Tensor> exec_timed(const OpDef& def, dnn::OperatorBase& dop,
                               std::span<const dnn::TensorND> in_nd,
                               std::span<const dnn::TensorLayout> in_layouts,
                               std::span<dnn::TensorLayout> out_layouts, CompNode cn) {
    ScratchArray<dnn::TensorND> out_nd(out_layouts.size());
    std::vector<Tensor> outputs = allocate(out_layouts, cn, out_nd);
    exec_into_timed(def, dop, in_nd, in_layouts, out_nd.span(), out_layouts, cn);
    return outputs;
}

}  // namespace

std::vector<Tensor> run_dnn_nd(const OpDef& def, dnn::OperatorBase& dop,
                               std::span<const dnn::TensorND> inputs,
                               std::span<const dnn::TensorShape> shapes, CompNode cn) {
    ScratchArray<dnn::TensorLayout> in_layouts(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
        in_layouts[i] = inputs[i].layout;
    ScratchArray<dnn::TensorLayout> out_layouts(dop.num_outputs());
    for (size_t i = 0; i < shapes.size(); ++i)
        static_cast<dnn::TensorShape&>(out_layouts[i]) = shapes[i];
    dop.deduce_layout(in_layouts.span(), out_layouts.span());
    return exec_timed(def, dop, inputs, in_layouts.span(), out_layouts.span(), cn);
}

void run_dnn_into(const OpDef& def, dnn::OperatorBase& dop, std::span<const dnn::TensorND> inputs,
                  std::span<const dnn::TensorND> outputs, CompNode cn) {
    ScratchArray<dnn::TensorLayout> in_layouts(inputs.size()), out_layouts(outputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
        in_layouts[i] = inputs[i].layout;
    for (size_t i = 0; i < outputs.size(); ++i)
        out_layouts[i] = outputs[i].layout;
    exec_into_timed(def, dop, inputs, in_layouts.span(), outputs, out_layouts.span(), cn);
}

std::vector<Tensor> run_dnn_op(const OpDef& def, dnn::OperatorBase& dop,
                               std::span<const Tensor> inputs,
                               std::span<const dnn::TensorShape> shapes) {
    CompNode cn = inputs[0].comp_node();
    ScratchArray<dnn::TensorLayout> in_layouts(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
        NM_THROW_IF(!inputs[i].valid(), ParamError, def.to_string(), ": input ", i,
                    " is an empty tensor handle");
        NM_THROW_IF(inputs[i].comp_node() != cn, ParamError, def.to_string(), ": input ", i,
                    " is on ", inputs[i].comp_node().to_string(), " but input 0 is on ",
                    cn.to_string(), "; copy it first");
        in_layouts[i] = inputs[i].layout();
    }
    ScratchArray<dnn::TensorLayout> out_layouts(dop.num_outputs());
    if (!shapes.empty()) {
        NM_THROW_IF(shapes.size() != dop.num_outputs(), ParamError, def.to_string(), ": ",
                    dop.num_outputs(), " output shapes needed, got ", shapes.size());
        for (size_t i = 0; i < shapes.size(); ++i)
            static_cast<dnn::TensorShape&>(out_layouts[i]) = shapes[i];
    }
    dop.deduce_layout(in_layouts.span(), out_layouts.span());
    if (blocked_candidate(def)) {
        auto blocked = run_blocked(def, inputs, out_layouts.span());
        if (blocked)
            return std::move(*blocked);
    }
    dnn::apply_layout_follows(dop.type(), in_layouts.span(), out_layouts.span());
    ScratchArray<dnn::TensorND> in_nd(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i)
        in_nd[i] = inputs[i].dnn_tensor();
    auto outputs = exec_timed(def, dop, in_nd.span(), in_layouts.span(), out_layouts.span(), cn);
    // A channels-last output is the runtime's choice when every channels-last input was.
    bool any_last = false, all_auto = true;
    for (const Tensor& t : inputs)
        if (dnn::is_channels_last(t.layout())) {
            any_last = true;
            all_auto = all_auto && t.auto_layout();
        }
    if (any_last && all_auto)
        for (Tensor& t : outputs)
            t.set_auto_layout(dnn::is_channels_last(t.layout()));
    return outputs;
}

std::vector<Tensor> run_dnn_generator(const OpDef& def, dnn::OperatorBase& dop,
                                      std::span<const dnn::TensorShape> shapes, CompNode cn) {
    NM_THROW_IF(shapes.size() != dop.num_outputs(), ParamError, def.to_string(), ": ",
                dop.num_outputs(), " output shapes needed, got ", shapes.size());
    ScratchArray<dnn::TensorLayout> out_layouts(shapes.size());
    for (size_t i = 0; i < shapes.size(); ++i)
        static_cast<dnn::TensorShape&>(out_layouts[i]) = shapes[i];
    dop.deduce_layout({}, out_layouts.span());
    return exec(dop, {}, {}, out_layouts.span(), cn);
}

}  // namespace neomeg::imperative
