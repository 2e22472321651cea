// Errors of the CUDA libraries as NeoMeg exceptions: a failing runtime, cuBLAS, cuDNN or cuSOLVER
// call throws dnn::Error naming the call and the library's own message, never aborts.
#pragma once

#include "neomeg/dnn/errors.h"
#include "src/cuda/cuda_check.h"
#include "src/cuda/libs/cublas_api.h"
#include "src/cuda/libs/cudnn_api.h"
#include "src/cuda/libs/cusolver_api.h"

namespace neomeg::dnn::cuda {

[[noreturn]] void throw_cublas_error(cublasStatus_t err, const char* call);
[[noreturn]] void throw_cudnn_error(cudnnStatus_t err, const char* call);
[[noreturn]] void throw_cusolver_error(cusolverStatus_t err, const char* call);

}  // namespace neomeg::dnn::cuda

#define NM_CUBLAS_CHECK(expr)                                        \
    do {                                                             \
        cublasStatus_t nm_err_ = (expr);                             \
        if (nm_err_ != CUBLAS_STATUS_SUCCESS)                        \
            ::neomeg::dnn::cuda::throw_cublas_error(nm_err_, #expr); \
    } while (0)
#define NM_CUDNN_CHECK(expr)                                        \
    do {                                                            \
        cudnnStatus_t nm_err_ = (expr);                             \
        if (nm_err_ != CUDNN_STATUS_SUCCESS)                        \
            ::neomeg::dnn::cuda::throw_cudnn_error(nm_err_, #expr); \
    } while (0)
#define NM_CUSOLVER_CHECK(expr)                                        \
    do {                                                               \
        cusolverStatus_t nm_err_ = (expr);                             \
        if (nm_err_ != CUSOLVER_STATUS_SUCCESS)                        \
            ::neomeg::dnn::cuda::throw_cusolver_error(nm_err_, #expr); \
    } while (0)
