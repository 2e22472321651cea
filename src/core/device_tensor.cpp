#include "neomeg/core/device_tensor.h"

namespace neomeg {

DeviceTensor DeviceTensor::empty(const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn) {
    dnn::TensorLayout layout(shape, dtype);
    return DeviceTensor(std::make_shared<Blob>(cn, layout.access_bytes()), layout);
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
    comp_node().copy_to_host(dst, m_blob->ptr(), m_layout.access_bytes());
}

}  // namespace neomeg
