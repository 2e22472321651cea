#include "neomeg/core/device_tensor.h"

#include "neomeg/dnn/errors.h"

namespace neomeg {

DeviceTensor DeviceTensor::empty(const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn) {
    dnn::TensorLayout layout(shape, dtype);
    return DeviceTensor(std::make_shared<Blob>(cn, layout.access_bytes()), layout);
}

DeviceTensor DeviceTensor::share(std::shared_ptr<Blob> blob, size_t offset_bytes,
                                 const dnn::TensorLayout& layout) {
    NM_THROW_IF(!blob, ParamError, "DeviceTensor::share: no storage");
    // An empty layout addresses no memory; its strides (made from max(dim, 1)) need not pass
    // is_contiguous, which expects the products of the dims.
    NM_THROW_IF(!layout.is_empty() && !layout.is_contiguous(), ParamError,
                "DeviceTensor::share: ", layout.to_string(), " is not contiguous");
    NM_THROW_IF(offset_bytes > blob->size() || layout.access_bytes() > blob->size() - offset_bytes,
                ParamError, "DeviceTensor::share: ", layout.to_string(), " at byte offset ",
                offset_bytes, " reaches outside a storage of ", blob->size(), " bytes");
    return DeviceTensor(std::move(blob), layout, offset_bytes);
}

DeviceTensor DeviceTensor::copy_of(const void* src, const dnn::TensorShape& shape, dnn::DType dtype,
                                   CompNode cn) {
    DeviceTensor t = empty(shape, dtype, cn);
    CompNode::copy(cn, t.raw_ptr(), cn, src, t.layout().access_bytes());
    return t;
}

DeviceTensor DeviceTensor::from_host(const void* data, const dnn::TensorShape& shape,
                                     dnn::DType dtype, CompNode cn) {
    DeviceTensor t = empty(shape, dtype, cn);
    cn.copy_from_host(t.raw_ptr(), data, t.layout().access_bytes());
    return t;
}

void DeviceTensor::to_host(void* dst) const {
    comp_node().copy_to_host(dst, raw_ptr(), m_layout.access_bytes());
}

}  // namespace neomeg
