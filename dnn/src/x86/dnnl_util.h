// What the oneDNN kernels share: describing our strided layouts to oneDNN, staging the tensors it
// cannot address through dense copies, and carving the operator's workspace into the buffers that
// staging, layout reorders and the primitive's scratchpad need.
#pragma once

#include <memory>
#include <oneapi/dnnl/dnnl.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "neomeg/dnn/tensor.h"
#include "src/x86/block_transpose.h"
#include "src/x86/element_copy.h"
#include "src/x86/weight_cache.h"

namespace neomeg::dnn::x86 {

using dnnl::memory;

memory::dims dims_of(const TensorLayout& l);
memory::dims strides_of(const TensorLayout& l);

// oneDNN's name for a float dtype (float32, bfloat16, float16), or nullopt for the others.
std::optional<memory::data_type> dnnl_type_of(DType dt);

// A plain descriptor with these dims and strides, or nullopt where oneDNN cannot address them: a
// stride <= 0 on an axis longer than 1 (broadcast and reversed views). A size-1 axis addresses
// nothing, so its stride is replaced by the dense one: a dense tensor then looks dense to oneDNN
// whatever strides its size-1 axes carry.
std::optional<memory::desc> plain_desc(const memory::dims& dims, memory::dims strides,
                                       memory::data_type type = memory::data_type::f32);

// Copies between a strided tensor (any dtype) and a dense row-major buffer of its shape.
void copy_to_dense(const TensorND& src, void* dense);
void copy_from_dense(const void* dense, const TensorND& dst);

// The same memory read with axes [first, ndim) reversed: a convolution's filter in the flipped
// (CONVOLUTION) mode. Its strides are negative, so an Operand stages it.
TensorND reversed_from(const TensorND& t, size_t first);

// A reorder of at most this many bytes runs on the calling thread: oneDNN's reorders split even a
// depthwise filter gradient's 576 floats across the OpenMP threads, whose wake-up took 0.9 us of
// the 0.22 us copy on two threads (a twelfth of a batch-1 depthwise filter gradient). Between
// plain and blocked layouts of one dtype such a reorder is an ElementCopy (element_copy.h).
inline constexpr size_t kSmallReorderBytes = size_t(1) << 15;

// r.execute(stream, from, to), on the calling thread alone where the copy is small (a depthwise
// filter's), whose OpenMP threads would take longer to wake than it takes.
void run_reorder(dnnl::reorder& r, dnnl::stream& stream, dnnl::memory& from, dnnl::memory& to);

// Offsets of the buffers a kernel carves out of its workspace, each 64-byte aligned (the eager
// runtime's workspace is 64-byte aligned, so the buffers are too).
class WorkspacePlan {
public:
    static constexpr size_t kAlign = 64;
    size_t add(size_t bytes);  // the new buffer's offset
    size_t total() const { return m_total; }

private:
    size_t m_total = 0;
};

// One tensor argument of a primitive: the caller's tensor, a dense copy of it when oneDNN cannot
// address its strides ("staged"), and a reorder when the primitive chose another layout (oneDNN's
// blocked formats). An operand object is planned once per shape and reused: its memory objects
// only get new data pointers on each call.
class Operand {
public:
    // `describe` gives the primitive's view of a layout of the caller's tensor (matmul swaps a
    // transposed operand's axes, grouped convolution splits the filter's first axis) or nullopt.
    // Non-contiguous tensors are staged when oneDNN cannot address them or `stage` says so.
    // `reverse_from` < ndim reverses the axes from there on (reversed_from): such an operand is
    // always staged, its dense copy is the reversed tensor.
    template <class Describe>
    static Operand of(const TensorLayout& layout, bool stage, Describe&& describe,
                      size_t reverse_from = TensorLayout::MAX_NDIM) {
        Operand op;
        op.m_layout = layout;
        op.m_reverse_from = reverse_from;
        std::optional<memory::desc> md;
        if (reverse_from >= layout.ndim && (!stage || layout.is_contiguous()))
            md = describe(layout);
        if (!md) {
            op.m_staged = true;
            md = describe(TensorLayout(layout, layout.dtype));
        }
        op.m_user_md = *md;
        return op;
    }

    // Marks an input whose value is often the same from call to call (a convolution's filter):
    // its reordered form is kept in the WeightCache (weight_cache.h), keyed by the tensor's
    // storage and version, and a later call with the same value skips staging and reordering.
    Operand&& cached() && {
        m_cached = true;
        return std::move(*this);
    }

    const memory::desc& user_desc() const { return m_user_md; }
    bool staged() const { return m_staged; }
    bool is_output() const { return m_output; }

    // Binds the layout the primitive chose (`prim`), planning the staging and reorder buffers.
    void bind(const memory::desc& prim, bool is_output, const dnnl::engine& engine,
              WorkspacePlan& plan);
    // The memory the primitive reads or writes; pass it in the primitive's argument map.
    const memory& prim_memory() const { return m_reorder ? m_prim_mem : m_user_mem; }

    // Before the primitive runs: points the memories at this call's tensor and workspace, and
    // stages and reorders an input.
    void prepare(const TensorND& t, std::byte* ws, dnnl::stream& stream);
    // After it ran: reorders and unstages an output into the caller's tensor.
    void finish_output(const TensorND& t, std::byte* ws, dnnl::stream& stream);
    // After the call: lets go of the cached weights it used.
    void release() { m_held.reset(); }

private:
    TensorND view(const TensorND& t) const {
        return m_reverse_from < t.layout.ndim ? reversed_from(t, m_reverse_from) : t;
    }

    // Staging and reordering this call's input into the primitive's memory, at `prim`.
    void stage_and_reorder(const TensorND& t, std::byte* ws, void* prim, dnnl::stream& stream);

    TensorLayout m_layout;
    size_t m_reverse_from = TensorLayout::MAX_NDIM;
    memory::desc m_user_md;
    bool m_staged = false, m_output = false, m_cached = false;
    std::shared_ptr<const WeightCache::Entry> m_held;  // the cached weights this call reads
    // Points m at p, unless it points there already (`at`: where this operand last pointed it):
    // each oneDNN call checks the descriptor's padding, a few of them on every call otherwise.
    static void point(memory& m, void*& at, void* p) {
        if (at != p) {
            m.set_data_handle(p);
            at = p;
        }
    }

    size_t m_stage_off = 0, m_reorder_off = 0;
    memory m_user_mem, m_prim_mem;
    void *m_user_at = nullptr, *m_prim_at = nullptr;  // their data, as point() set them
    std::optional<dnnl::reorder> m_reorder;
    std::optional<ElementCopy> m_copy;  // the reorder, where small, as a copy by offsets
    // An output's reorder out of a 1x1 filter gradient's square blocks, where not small.
    std::optional<BlockTranspose> m_transpose;
};

// What a kernel plans per shape and runs on every call with that shape.
class Plan {
public:
    virtual ~Plan() = default;
    virtual size_t workspace_in_bytes() const = 0;
    // The part of the workspace the primitives use for themselves (oneDNN's scratchpad), not the
    // staging and reorder buffers of the call's tensors, which a plan over a slice of the tensors
    // needs all the same; a plan that does not tell the two apart counts its whole workspace.
    virtual size_t scratchpad_in_bytes() const { return workspace_in_bytes(); }
    // "onednn:<implementation>", e.g. onednn:jit:avx2.
    virtual const char* name() const = 0;
    // Runs on the call's inputs then outputs, in the operator's order.
    virtual void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) = 0;
};

// One or more primitives run in sequence (max pooling's backward first reruns the forward for its
// indices) with their operands, internal buffers and scratchpad, planned for one shape.
class PrimitivePlan : public Plan {
public:
    PrimitivePlan(const dnnl::engine& engine, std::string_view impl);
    // A plan of one primitive, whose descriptor must use scratchpad_mode::user.
    PrimitivePlan(dnnl::primitive prim, const dnnl::primitive_desc& pd, const dnnl::engine& engine,
                  std::string_view impl);

    // Appends a primitive (scratchpad_mode::user); later add/add_buffer/use calls feed it.
    void add_step(dnnl::primitive prim, const dnnl::primitive_desc_base& pd);
    // Adds the next tensor of the call (inputs, then outputs) under oneDNN's argument id
    // (DNNL_ARG_SRC, ...), bound to `prim`'s layout.
    void add(int arg, Operand op, const memory::desc& prim, bool is_output);
    // The same for the call's tensor `tensor`, out of turn (the next tensor stays the next).
    void add_at(size_t tensor, int arg, Operand op, const memory::desc& prim, bool is_output);
    // Passes over the next tensor of the call: one the primitives do not read.
    void skip_tensor() { ++m_next_tensor; }
    // Passes the memory the primitive reads or writes for an earlier step's `operand` (counted in
    // the order added) to the step `step`: ConvBias's residual is reordered into dst's buffer by a
    // step before the convolution adds to it.
    void use_operand(size_t step, int arg, size_t operand);
    size_t num_operands() const { return m_operands.size(); }
    // A buffer in the workspace, not a tensor of the call (max pooling's indices, batch
    // normalisation's statistics); returns its workspace offset. use() passes it to a later step.
    size_t add_buffer(int arg, const memory::desc& md);
    void use(int arg, size_t buffer_offset);
    // Plans the scratchpad last, after the operands' buffers; the steps share it.
    void finalize();

    size_t workspace_in_bytes() const override { return m_ws.total(); }
    size_t scratchpad_in_bytes() const override { return m_scratch_bytes; }
    const char* name() const override { return m_name.c_str(); }
    void run(std::span<const TensorND> tensors, Workspace ws, dnnl::stream& stream) override;

private:
    struct Step {
        dnnl::primitive prim;
        memory::desc scratch_md;
        std::unordered_map<int, memory> args;
        void* scratch_at = nullptr;  // the scratchpad's data, as last set
    };
    struct Buffer {
        size_t offset;
        memory mem;
        void* at = nullptr;
    };
    dnnl::engine m_engine;
    std::vector<Step> m_steps;
    size_t m_scratch_off = 0, m_scratch_bytes = 0;
    WorkspacePlan m_ws;
    std::vector<Operand> m_operands;
    std::vector<size_t> m_tensor_of;  // the call tensor each operand reads or writes
    size_t m_next_tensor = 0;
    std::vector<Buffer> m_buffers;
    std::string m_name;
};

// oneDNN's reference implementations are correct but slow; a kernel that gets one retries with
// its operands staged dense, which the fast implementations accept.
inline bool is_reference_impl(std::string_view impl) {
    return impl.starts_with("ref");
}

}  // namespace neomeg::dnn::x86
