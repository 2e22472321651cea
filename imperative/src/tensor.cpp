#include "neomeg/imperative/tensor.h"

#include <cstring>

#include "neomeg/dnn/handle.h"
#include "neomeg/dnn/operators.h"

namespace neomeg::imperative {

Blob::Blob(CompNode cn, size_t size)
        : m_cn(cn), m_ptr(static_cast<std::byte*>(cn.alloc(size))), m_size(size) {}

Blob::~Blob() {
    m_cn.free(m_ptr);
}

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
    NM_THROW_IF(!layout.is_empty() &&
                        (begin < 0 || end > static_cast<ptrdiff_t>(m_blob->size())),
                ShapeError, "view ", layout.to_string(), " at byte offset ", offset_bytes,
                " reaches outside a storage of ", m_blob->size(), " bytes");
    return Tensor(m_blob, m_offset + offset_bytes, layout);
}

void Tensor::to_host(void* dst) const {
    dnn::TensorLayout contiguous(m_layout, m_layout.dtype);
    if (m_layout.is_contiguous()) {
        std::memcpy(dst, m_blob->ptr() + m_offset, m_layout.access_bytes());
        return;
    }
    // A strided view: let the kernel library gather it.
    auto relayout = comp_node().dnn_handle()->create_operator<dnn::Relayout>();
    dnn::TensorND src = dnn_tensor(), out(dst, contiguous);
    relayout->exec({&src, 1}, {&out, 1});
}

}  // namespace neomeg::imperative
