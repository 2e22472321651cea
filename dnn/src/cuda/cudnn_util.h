// cuDNN descriptors as RAII objects built from NeoMeg layouts, shared by the cuDNN kernels.
#pragma once

#include <optional>
#include <vector>

#include "neomeg/dnn/layout.h"
#include "src/cuda/error.h"

namespace neomeg::dnn::cuda {

std::optional<cudnnDataType_t> cudnn_type(DType dt);

// (N, C, spatial...) dims and strides for cuDNN: at least 4 dims (a 1-D convolution gets H = 1,
// (N, C) gets trailing 1s),
// every stride positive (a size-1 axis gets stride 1, whatever it had). nullopt when the layout
// has a broadcast or reversed axis, which cuDNN cannot read.
struct NdDims {
    std::vector<int> dims, strides;
};
std::optional<NdDims> cudnn_dims(const TensorLayout& l);

class TensorDesc {
public:
    TensorDesc();
    ~TensorDesc();
    TensorDesc(const TensorDesc&) = delete;
    TensorDesc& operator=(const TensorDesc&) = delete;
    // Describes l; false where cudnn_dims declines it.
    bool set(const TensorLayout& l);
    bool set_dims(DType dt, const NdDims& d);
    cudnnTensorDescriptor_t get() const { return m_desc; }

private:
    cudnnTensorDescriptor_t m_desc = nullptr;
};

class FilterDesc {
public:
    FilterDesc();
    ~FilterDesc();
    FilterDesc(const FilterDesc&) = delete;
    FilterDesc& operator=(const FilterDesc&) = delete;
    // Describes a contiguous (OC, IC/group, k...) filter; false where l is not contiguous.
    bool set(const TensorLayout& l);
    cudnnFilterDescriptor_t get() const { return m_desc; }

private:
    cudnnFilterDescriptor_t m_desc = nullptr;
};

class ActivationDesc {
public:
    ActivationDesc();
    ~ActivationDesc();
    ActivationDesc(const ActivationDesc&) = delete;
    ActivationDesc& operator=(const ActivationDesc&) = delete;
    // NaN is not propagated (ReLU of NaN is 0), as the naive kernel's `a > 0 ? a : 0`.
    void set(cudnnActivationMode_t mode);
    cudnnActivationDescriptor_t get() const { return m_desc; }

private:
    cudnnActivationDescriptor_t m_desc = nullptr;
};

}  // namespace neomeg::dnn::cuda
