#include "src/cuda/cudnn_util.h"

namespace neomeg::dnn::cuda {

std::optional<cudnnDataType_t> cudnn_type(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float32:
            return CUDNN_DATA_FLOAT;
        case DTypeEnum::Float16:
            return CUDNN_DATA_HALF;
        case DTypeEnum::BFloat16:
            return CUDNN_DATA_BFLOAT16;
        default:
            return std::nullopt;
    }
}

std::optional<NdDims> cudnn_dims(const TensorLayout& l) {
    NdDims r;
    constexpr size_t kMaxInt = 1u << 31;
    for (size_t i = 0; i < l.ndim; ++i) {
        ptrdiff_t s = l[i] == 1 ? 1 : l.stride[i];
        if (s <= 0 || l[i] >= kMaxInt || static_cast<size_t>(s) >= kMaxInt)
            return std::nullopt;
        r.dims.push_back(static_cast<int>(l[i]));
        r.strides.push_back(static_cast<int>(s));
    }
    if (r.dims.size() == 3) {
        // (N, C, W) as (N, C, 1, W).
        r.dims.insert(r.dims.begin() + 2, 1);
        r.strides.insert(r.strides.begin() + 2, r.strides[2] * r.dims[3]);
    }
    // (N, C) and lower ranks as (N, C, 1, 1): cuDNN takes 4 dims at least.
    while (r.dims.size() < 4) {
        r.dims.push_back(1);
        r.strides.push_back(1);
    }
    return r;
}

TensorDesc::TensorDesc() {
    NM_CUDNN_CHECK(libcudnn().cudnnCreateTensorDescriptor(&m_desc));
}
TensorDesc::~TensorDesc() {
    libcudnn().cudnnDestroyTensorDescriptor(m_desc);
}
bool TensorDesc::set_dims(DType dt, const NdDims& d) {
    auto type = cudnn_type(dt);
    return type && libcudnn().cudnnSetTensorNdDescriptor(
                           m_desc, *type, static_cast<int>(d.dims.size()), d.dims.data(),
                           d.strides.data()) == CUDNN_STATUS_SUCCESS;
}

bool TensorDesc::set(const TensorLayout& l) {
    auto type = cudnn_type(l.dtype);
    auto d = cudnn_dims(l);
    if (!type || !d)
        return false;
    return libcudnn().cudnnSetTensorNdDescriptor(m_desc, *type, static_cast<int>(d->dims.size()),
                                                 d->dims.data(),
                                                 d->strides.data()) == CUDNN_STATUS_SUCCESS;
}

FilterDesc::FilterDesc() {
    NM_CUDNN_CHECK(libcudnn().cudnnCreateFilterDescriptor(&m_desc));
}
FilterDesc::~FilterDesc() {
    libcudnn().cudnnDestroyFilterDescriptor(m_desc);
}
bool FilterDesc::set(const TensorLayout& l) {
    auto type = cudnn_type(l.dtype);
    auto d = cudnn_dims(l);
    if (!type || !d || !l.is_contiguous())
        return false;
    return libcudnn().cudnnSetFilterNdDescriptor(m_desc, *type, CUDNN_TENSOR_NCHW,
                                                 static_cast<int>(d->dims.size()),
                                                 d->dims.data()) == CUDNN_STATUS_SUCCESS;
}

ActivationDesc::ActivationDesc() {
    NM_CUDNN_CHECK(libcudnn().cudnnCreateActivationDescriptor(&m_desc));
}
ActivationDesc::~ActivationDesc() {
    libcudnn().cudnnDestroyActivationDescriptor(m_desc);
}
void ActivationDesc::set(cudnnActivationMode_t mode) {
    NM_CUDNN_CHECK(
            libcudnn().cudnnSetActivationDescriptor(m_desc, mode, CUDNN_NOT_PROPAGATE_NAN, 0.0));
}

}  // namespace neomeg::dnn::cuda
