#include "neomeg/core/device_tensor.h"

#include <cstring>

namespace neomeg {

DeviceTensor DeviceTensor::empty(const dnn::TensorShape& shape, dnn::DType dtype, CompNode cn) {
    dnn::TensorLayout layout(shape, dtype);
    return DeviceTensor(std::make_shared<Blob>(cn, layout.access_bytes()), layout);
}

DeviceTensor DeviceTensor::from_host(const void* data, const dnn::TensorShape& shape,
                                     dnn::DType dtype, CompNode cn) {
    DeviceTensor t = empty(shape, dtype, cn);
    if (size_t bytes = t.layout().access_bytes())
        std::memcpy(t.raw_ptr(), data, bytes);  // host comp nodes only, for now
    return t;
}

void DeviceTensor::to_host(void* dst) const {
    if (size_t bytes = m_layout.access_bytes())
        std::memcpy(dst, m_blob->ptr(), bytes);  // host comp nodes only, for now
}

}  // namespace neomeg
