// NM_CUDA_CHECK: a failing CUDA runtime call throws dnn::Error naming the call and the runtime's
// message (error.cpp). Apart from error.h so that the .cu launchers, which include no NeoMeg
// header beyond kernels/args.h, check their runtime calls the same way.
#pragma once

#include <cuda_runtime_api.h>

namespace neomeg::dnn::cuda {

[[noreturn]] void throw_cuda_error(cudaError_t err, const char* call);

}  // namespace neomeg::dnn::cuda

#define NM_CUDA_CHECK(expr)                                        \
    do {                                                           \
        cudaError_t nm_err_ = (expr);                              \
        if (nm_err_ != cudaSuccess)                                \
            ::neomeg::dnn::cuda::throw_cuda_error(nm_err_, #expr); \
    } while (0)
