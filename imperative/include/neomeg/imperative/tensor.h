// The eager runtime's tensor: refcounted storage on a comp node plus a layout. Tensors are
// values: copying one shares its storage, and no operation changes a tensor's contents except
// the explicitly in-place ones. Python's megengine.Tensor wraps one of these.
#pragma once

#include <memory>

#include "neomeg/core/blob.h"
#include "neomeg/core/comp_node.h"
#include "neomeg/dnn/tensor.h"

namespace neomeg::imperative {

struct AutogradMeta;  // grad.h: this tensor's places in the autograd graphs recording it
struct BlockedValue;  // tensor.cpp: a value held in ChannelBlock's layout
struct DtrHandle;     // dtr.cpp: a user's handle on a value DTR may evict and recompute

using ::neomeg::Blob;

class Tensor {
public:
    Tensor() = default;  // an empty handle; valid() is false

    // A new contiguous tensor of `shape` and `dtype`; contents uninitialised.
    static Tensor empty(const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn);
    // A new tensor of a dense `layout` in any axis order (a channels-last one); contents
    // uninitialised. ShapeError for a layout with gaps, overlaps or negative strides.
    static Tensor empty_dense(const dnn::TensorLayout& layout, CompNode cn);
    // Copies `layout.total_nr_elems()` contiguous host elements into a new tensor.
    static Tensor from_host(const void* data, const dnn::TensorShape& shape, dnn::DType dtype,
                            CompNode cn);

    // A tensor of `layout` at `offset_bytes` in `blob` (storage another owner made: a graph's
    // output), sharing it; elements it addresses must lie within the storage (checked;
    // ShapeError otherwise).
    static Tensor share(std::shared_ptr<Blob> blob, ptrdiff_t offset_bytes,
                        const dnn::TensorLayout& layout);

    // A tensor of the contiguous `plain` layout (N, C, spatial...) whose value is `blocked`,
    // that value in ChannelBlock's layout (N, ceil(C/b), spatial..., b) with zeros past C: what
    // eager mode's blocked operators return (blocked_dispatch.cpp). Copies share the value.
    static Tensor from_blocked(const Tensor& blocked, const dnn::TensorLayout& plain);

    bool valid() const { return m_blob != nullptr || m_blocked != nullptr || m_dtr != nullptr; }
    // The value in ChannelBlock's layout, if this tensor still holds it in that form (an invalid
    // tensor otherwise); materialises nothing. Only the eager dispatch asks for it.
    Tensor blocked() const;
    // Whether the value is (still) held in the blocked form only.
    bool is_blocked() const;

    // The accessors below expose memory, so they first give a blocked value its plain form (one
    // ChannelUnblock, at offset 0 of a new blob), which from then on stands for the value in
    // every copy of this tensor (the blocked form is dropped: a write through them leaves no stale
    // blocked copy behind). The switch is the shared state's, under its lock: a Tensor object
    // itself never changes, so copies on several threads stay safe to read.
    //
    // The storage, and the bytes from its start to element offset 0 (to share them with a graph).
    const std::shared_ptr<Blob>& blob() const {
        if (m_dtr) [[unlikely]]
            return resident().blob();
        return m_blocked ? plain_blob() : m_blob;
    }
    ptrdiff_t offset() const { return m_offset; }
    // The logical layout (for a blocked value, the contiguous plain one it stands for).
    const dnn::TensorLayout& layout() const { return m_layout; }
    const dnn::TensorShape& shape() const { return m_layout; }
    dnn::DType dtype() const { return m_layout.dtype; }
    CompNode comp_node() const { return m_blob ? m_blob->comp_node() : other_comp_node(); }
    // The view the kernel library reads and writes.
    dnn::TensorND dnn_tensor() const {
        Blob& b = *blob();
        return {b.ptr() + m_offset, m_layout, &b.storage()};
    }

    // A tensor sharing this storage with another layout; elements it addresses must lie within
    // the storage (checked; ShapeError otherwise).
    Tensor view(const dnn::TensorLayout& layout, ptrdiff_t offset_bytes = 0) const;
    // A contiguous copy on another comp node (no autograd identity).
    Tensor copy_to(CompNode cn) const;
    // This tensor if it is contiguous, else a contiguous copy (through dnn Relayout).
    Tensor contiguous() const;
    // Copies the logical elements in row-major order into `dst`, which must hold
    // shape().total_nr_elems() elements of dtype().
    void to_host(void* dst) const;

    // Autograd identity: shared by copies of this tensor, absent on a fresh or detached one.
    const std::shared_ptr<AutogradMeta>& grad_meta() const { return m_grad_meta; }
    void set_grad_meta(std::shared_ptr<AutogradMeta> meta) { m_grad_meta = std::move(meta); }
    // The same values without autograd identity.
    Tensor detach() const {
        Tensor t(m_blob, m_offset, m_layout);
        t.m_blocked = m_blocked;
        t.m_dtr = m_dtr;
        t.m_auto_layout = m_auto_layout;
        return t;
    }

    // Whether a channels-last layout was chosen by the runtime (autocast's casts for oneDNN)
    // rather than asked for by the program: Tensor.format then stays "default", as MegEngine
    // gives for the same program. Views keep it; an output that follows channels-last inputs
    // has it when all of those inputs have it (dnn_exec.cpp).
    bool auto_layout() const { return m_auto_layout; }
    void set_auto_layout(bool on) { m_auto_layout = on; }

private:
    Tensor(std::shared_ptr<Blob> blob, ptrdiff_t offset, const dnn::TensorLayout& layout)
        : m_blob(std::move(blob)), m_offset(offset), m_layout(layout) {}

    // A blocked value's plain form, made on first use.
    const std::shared_ptr<Blob>& plain_blob() const;
    // This value as a plain tensor (materialised).
    Tensor as_plain() const;
    CompNode other_comp_node() const;  // of a blocked or DTR-managed value
    // A DTR-managed value in memory (recomputed first if it was evicted), as an ordinary tensor;
    // the reference stays good until the next eviction, which only apply() runs.
    const Tensor& resident() const;
    // The bytes of storage this tensor alone holds (0 where anyone else shares it).
    size_t owned_bytes() const;
    friend struct DtrValue;

    std::shared_ptr<Blob> m_blob;  // null where m_blocked holds the value
    ptrdiff_t m_offset = 0;        // bytes from the blob's start to element offset 0
    std::shared_ptr<BlockedValue> m_blocked;
    std::shared_ptr<DtrHandle> m_dtr;  // set (and the two above null) for a DTR-managed value
    dnn::TensorLayout m_layout;
    std::shared_ptr<AutogradMeta> m_grad_meta;
    bool m_auto_layout = false;
};

}  // namespace neomeg::imperative
