#include "neomeg/imperative/tensor.h"

#include <atomic>
#include <mutex>

#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators/tensor_basic.h"

#include "blocked_dispatch.h"
#include "dtr_value.h"

namespace neomeg::imperative {

// The value of a tensor that eager mode's blocked dispatch made, shared by the tensor's copies.
// One form at a time: `blocked` until someone needs memory in the plain layout, then `plain` (the
// blocked storage is released, so a plain writer cannot leave a stale blocked copy). `plain` is
// set once, under the mutex, and never changes after, so a reader that saw has_plain needs no lock.
struct BlockedValue {
    std::mutex mutex;
    std::atomic<bool> has_plain{false};
    Tensor blocked;               // (N, ceil(C/b), spatial..., b), contiguous; invalid once plain
    std::shared_ptr<Blob> plain;  // the contiguous plain form at offset 0, once made
    CompNode cn;
};

Tensor Tensor::from_blocked(const Tensor& blocked, const dnn::TensorLayout& plain) {
    NM_THROW_IF(!blocked.valid() || blocked.m_blocked || !blocked.layout().is_contiguous() ||
                        blocked.layout().ndim != plain.ndim + 1 || !plain.is_contiguous(),
                ShapeError, "Tensor::from_blocked: ", blocked.layout().to_string(),
                " is not the blocked form of ", plain.to_string());
    Tensor t;
    t.m_layout = plain;
    t.m_blocked = std::make_shared<BlockedValue>();
    t.m_blocked->blocked = blocked;
    t.m_blocked->cn = blocked.comp_node();
    return t;
}

Tensor Tensor::blocked() const {
    if (m_dtr) [[unlikely]]
        return resident().blocked();
    if (!m_blocked || m_blocked->has_plain.load(std::memory_order_acquire))
        return {};
    std::lock_guard lock(m_blocked->mutex);
    return m_blocked->blocked;
}

bool Tensor::is_blocked() const {
    if (m_dtr) [[unlikely]]
        return resident().is_blocked();
    return m_blocked && !m_blocked->has_plain.load(std::memory_order_acquire);
}

CompNode Tensor::other_comp_node() const {
    if (m_dtr)
        return resident_comp_node(*m_dtr);
    return m_blocked->cn;
}

const std::shared_ptr<Blob>& Tensor::plain_blob() const {
    BlockedValue& v = *m_blocked;
    if (!v.has_plain.load(std::memory_order_acquire)) {
        std::lock_guard lock(v.mutex);
        if (!v.plain) {
            v.plain = unblock(v.blocked, m_layout).m_blob;
            v.blocked = {};
            v.has_plain.store(true, std::memory_order_release);
        }
    }
    return v.plain;
}

size_t Tensor::owned_bytes() const {
    if (m_blob)
        return m_blob.use_count() == 1 ? m_blob->size() : 0;
    if (!m_blocked || m_blocked.use_count() != 1)
        return 0;
    if (m_blocked->plain)
        return m_blocked->plain.use_count() == 1 ? m_blocked->plain->size() : 0;
    const auto& b = m_blocked->blocked.m_blob;
    return b && b.use_count() == 1 ? b->size() : 0;
}

const Tensor& Tensor::resident() const {
    return m_dtr->value->materialize();
}

Tensor Tensor::as_plain() const {
    Tensor t(plain_blob(), 0, m_layout);
    t.m_auto_layout = m_auto_layout;
    return t;
}

Tensor Tensor::empty(const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn) {
    dnn::TensorLayout layout(shape, dtype);
    return Tensor(std::make_shared<Blob>(cn, layout.span_bytes()), 0, layout);
}

Tensor Tensor::empty_dense(const dnn::TensorLayout& layout, CompNode cn) {
    auto [lo, hi] = layout.span_elems();
    NM_THROW_IF(lo != 0 || static_cast<size_t>(hi) != layout.total_nr_elems(), ShapeError,
                "Tensor::empty_dense: ", layout.to_string(), " is not dense");
    return Tensor(std::make_shared<Blob>(cn, layout.span_bytes()), 0, layout);
}

Tensor Tensor::from_host(const void* data, const dnn::TensorShape& shape, dnn::DType dtype,
                         CompNode cn) {
    Tensor t = empty(shape, dtype, cn);
    cn.copy_from_host(t.m_blob->ptr(), data, t.layout().access_bytes());
    return t;
}

Tensor Tensor::share(std::shared_ptr<Blob> blob, ptrdiff_t offset_bytes,
                     const dnn::TensorLayout& layout) {
    NM_THROW_IF(!blob, ShapeError, "Tensor::share: no storage");
    return Tensor(std::move(blob), 0, layout).view(layout, offset_bytes);
}

Tensor Tensor::view(const dnn::TensorLayout& layout, ptrdiff_t offset_bytes) const {
    if (m_dtr) [[unlikely]]  // the view shares the storage, which then stays resident
        return resident().view(layout, offset_bytes);
    if (m_blocked)
        return as_plain().view(layout, offset_bytes);
    auto [lo, hi] = layout.span_elems();
    ptrdiff_t begin = m_offset + offset_bytes + lo * static_cast<ptrdiff_t>(layout.dtype.size());
    ptrdiff_t end = m_offset + offset_bytes + hi * static_cast<ptrdiff_t>(layout.dtype.size());
    NM_THROW_IF(!layout.is_empty() && (begin < 0 || end > static_cast<ptrdiff_t>(m_blob->size())),
                ShapeError, "view ", layout.to_string(), " at byte offset ", offset_bytes,
                " reaches outside a storage of ", m_blob->size(), " bytes");
    Tensor t(m_blob, m_offset + offset_bytes, layout);
    t.m_auto_layout = m_auto_layout;
    return t;
}

namespace {
// Gathers a strided tensor into contiguous memory at `dst` with the kernel library.
void relayout_into(const Tensor& src, void* dst) {
    auto relayout = src.comp_node().dnn_handle()->create_operator<dnn::Relayout>();
    dnn::TensorND in = src.dnn_tensor(), out(dst, dnn::TensorLayout(src.layout(), src.dtype()));
    relayout->exec({&in, 1}, {&out, 1});
}
}  // namespace

Tensor Tensor::contiguous() const {
    if (m_layout.is_contiguous())
        return *this;
    Tensor out = empty(m_layout, m_layout.dtype, comp_node());
    relayout_into(*this, out.m_blob->ptr());
    return out;
}

Tensor Tensor::copy_to(CompNode cn) const {
    if (m_dtr) [[unlikely]]
        return resident().copy_to(cn);
    if (m_blocked)
        return as_plain().copy_to(cn);
    Tensor out = empty(m_layout, m_layout.dtype, cn);
    if (cn.device_type() == CompNode::DeviceType::CPU &&
        comp_node().device_type() == CompNode::DeviceType::CPU) {
        to_host(out.m_blob->ptr());  // a strided tensor is gathered straight into `out`
        return out;
    }
    // A strided tensor is gathered on its own node first, where its kernels run.
    Tensor src = contiguous();
    CompNode::copy(cn, out.m_blob->ptr(), src.comp_node(), src.m_blob->ptr() + src.m_offset,
                   m_layout.access_bytes());
    return out;
}

void Tensor::to_host(void* dst) const {
    if (m_dtr) [[unlikely]]
        return resident().to_host(dst);
    if (m_blocked)
        return as_plain().to_host(dst);
    CompNode cn = comp_node();
    if (m_layout.is_contiguous()) {
        cn.copy_to_host(dst, m_blob->ptr() + m_offset, m_layout.access_bytes());
        return;
    }
    if (cn.device_type() == CompNode::DeviceType::CPU) {
        relayout_into(*this, dst);  // straight into `dst`: no temporary on the host
        return;
    }
    Tensor c = contiguous();
    cn.copy_to_host(dst, c.m_blob->ptr() + c.m_offset, m_layout.access_bytes());
}

}  // namespace neomeg::imperative
