#include "neomeg/imperative/tensor.h"

#include <cstring>

#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators.h"

namespace neomeg::imperative {

Tensor Tensor::empty(const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn) {
    dnn::TensorLayout layout(shape, dtype);
    return Tensor(std::make_shared<Blob>(cn, layout.span_bytes()), 0, layout);
}

Tensor Tensor::from_host(const void* data, const dnn::TensorShape& shape, dnn::DType dtype,
                         CompNode cn) {
    Tensor t = empty(shape, dtype, cn);
    if (size_t bytes = t.layout().access_bytes())
        std::memcpy(t.m_blob->ptr(), data, bytes);  // host comp nodes only, for now
    return t;
}

Tensor Tensor::view(const dnn::TensorLayout& layout, ptrdiff_t offset_bytes) const {
    auto [lo, hi] = layout.span_elems();
    ptrdiff_t begin = m_offset + offset_bytes + lo * static_cast<ptrdiff_t>(layout.dtype.size());
    ptrdiff_t end = m_offset + offset_bytes + hi * static_cast<ptrdiff_t>(layout.dtype.size());
    NM_THROW_IF(!layout.is_empty() && (begin < 0 || end > static_cast<ptrdiff_t>(m_blob->size())),
                ShapeError, "view ", layout.to_string(), " at byte offset ", offset_bytes,
                " reaches outside a storage of ", m_blob->size(), " bytes");
    return Tensor(m_blob, m_offset + offset_bytes, layout);
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
    // Host comp nodes only until device comp nodes exist: a copy through host memory.
    Tensor out = empty(m_layout, m_layout.dtype, cn);
    to_host(out.m_blob->ptr());
    return out;
}

void Tensor::to_host(void* dst) const {
    if (m_layout.is_contiguous()) {
        if (size_t bytes = m_layout.access_bytes())
            std::memcpy(dst, m_blob->ptr() + m_offset, bytes);
        return;
    }
    relayout_into(*this, dst);
}

}  // namespace neomeg::imperative
