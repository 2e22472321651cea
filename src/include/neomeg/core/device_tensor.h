// A contiguous tensor in a blob on a comp node: the values a graph holds (constants), is fed
// (inputs) and gives back (outputs). Copies share the blob.
#pragma once

#include <memory>

#include "neomeg/core/blob.h"
#include "neomeg/dnn/tensor.h"

namespace neomeg {

class DeviceTensor {
public:
    DeviceTensor() = default;  // invalid until assigned

    // Uninitialised contents.
    static DeviceTensor empty(const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn);
    // Copies shape.total_nr_elems() contiguous host elements of `dtype` from `data`.
    static DeviceTensor from_host(const void* data, const dnn::TensorShape& shape, dnn::DType dtype,
                                  CompNode cn);
    // Copies shape.total_nr_elems() contiguous elements at `src`, memory of `cn`.
    static DeviceTensor copy_of(const void* src, const dnn::TensorShape& shape, dnn::DType dtype,
                                CompNode cn);

    bool valid() const { return m_blob != nullptr; }
    CompNode comp_node() const { return m_blob->comp_node(); }
    const dnn::TensorLayout& layout() const { return m_layout; }
    const dnn::TensorShape& shape() const { return m_layout; }
    dnn::DType dtype() const { return m_layout.dtype; }
    std::byte* raw_ptr() const { return m_blob->ptr(); }
    dnn::TensorND as_nd() const { return {m_blob->ptr(), m_layout, &m_blob->storage()}; }
    const dnn::StorageId& storage() const { return m_blob->storage(); }
    // Copies the elements into `dst`, which holds shape().total_nr_elems() of dtype().
    void to_host(void* dst) const;

private:
    DeviceTensor(std::shared_ptr<Blob> blob, const dnn::TensorLayout& layout)
        : m_blob(std::move(blob)), m_layout(layout) {}

    std::shared_ptr<Blob> m_blob;
    dnn::TensorLayout m_layout;
};

}  // namespace neomeg
