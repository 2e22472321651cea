// cuDNN's entry points, resolved from the library found at run time (NeoMeg does not link it).
// Kernels call libcudnn().cudnnXxx(...); an entry point used anywhere is listed here once.
#pragma once

#include <cudnn.h>

#include "src/cuda/libs/dynamic_library.h"

#define NM_CUDNN_ENTRY_POINTS(X)                      \
    X(cudnnGetVersion)                                \
    X(cudnnGetCudartVersion)                          \
    X(cudnnGetErrorString)                            \
    X(cudnnCreate)                                    \
    X(cudnnDestroy)                                   \
    X(cudnnSetStream)                                 \
    X(cudnnCreateTensorDescriptor)                    \
    X(cudnnDestroyTensorDescriptor)                   \
    X(cudnnSetTensorNdDescriptor)                     \
    X(cudnnCreateFilterDescriptor)                    \
    X(cudnnDestroyFilterDescriptor)                   \
    X(cudnnSetFilterNdDescriptor)                     \
    X(cudnnCreateConvolutionDescriptor)               \
    X(cudnnDestroyConvolutionDescriptor)              \
    X(cudnnSetConvolutionNdDescriptor)                \
    X(cudnnSetConvolutionGroupCount)                  \
    X(cudnnSetConvolutionMathType)                    \
    X(cudnnCreateActivationDescriptor)                \
    X(cudnnDestroyActivationDescriptor)               \
    X(cudnnSetActivationDescriptor)                   \
    X(cudnnGetConvolutionForwardAlgorithm_v7)         \
    X(cudnnGetConvolutionBackwardDataAlgorithm_v7)    \
    X(cudnnGetConvolutionBackwardFilterAlgorithm_v7)  \
    X(cudnnFindConvolutionForwardAlgorithmEx)         \
    X(cudnnFindConvolutionBackwardDataAlgorithmEx)    \
    X(cudnnFindConvolutionBackwardFilterAlgorithmEx)  \
    X(cudnnGetConvolutionForwardWorkspaceSize)        \
    X(cudnnGetConvolutionBackwardDataWorkspaceSize)   \
    X(cudnnGetConvolutionBackwardFilterWorkspaceSize) \
    X(cudnnConvolutionForward)                        \
    X(cudnnConvolutionBiasActivationForward)          \
    X(cudnnConvolutionBackwardData)                   \
    X(cudnnConvolutionBackwardFilter)                 \
    X(cudnnCreatePoolingDescriptor)                   \
    X(cudnnDestroyPoolingDescriptor)                  \
    X(cudnnSetPoolingNdDescriptor)                    \
    X(cudnnPoolingForward)                            \
    X(cudnnPoolingBackward)                           \
    X(cudnnSoftmaxForward)                            \
    X(cudnnSoftmaxBackward)                           \
    X(cudnnBatchNormalizationForwardTraining)         \
    X(cudnnBatchNormalizationBackward)                \
    X(cudnnBackendCreateDescriptor)                   \
    X(cudnnBackendDestroyDescriptor)                  \
    X(cudnnBackendSetAttribute)                       \
    X(cudnnBackendGetAttribute)                       \
    X(cudnnBackendFinalize)                           \
    X(cudnnBackendExecute)

namespace neomeg::dnn::cuda {

struct CudnnApi {
#define NM_CUDNN_MEMBER(fn) decltype(&::fn) fn = nullptr;
    NM_CUDNN_ENTRY_POINTS(NM_CUDNN_MEMBER)
#undef NM_CUDNN_MEMBER
};

// Loads a table from the first of `candidates` that opens; `report.error` says why it is not
// usable (no file, an entry point missing, or a version mismatch naming both versions).
// Uncached: the process's table is libcudnn(); tests load others.
CudnnApi load_cudnn(const std::vector<std::string>& candidates, LoadReport& report);

// The process's table (cuda_libraries::library_file(Cudnn)), loaded on first use; throws
// dnn::Error with cuda_libraries::load_error's sentence when it is not usable.
const CudnnApi& libcudnn();
const LoadReport& cudnn_report();

}  // namespace neomeg::dnn::cuda
