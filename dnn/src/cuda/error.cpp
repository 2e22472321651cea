#include "src/cuda/error.h"

namespace neomeg::dnn::cuda {

void throw_cuda_error(cudaError_t err, const char* call) {
    // Clears a non-sticky error so that the next call does not report this one again.
    cudaGetLastError();
    throw Error(str_cat("CUDA error ", cudaGetErrorName(err), " (", cudaGetErrorString(err),
                        ") in ", call));
}

void throw_cublas_error(cublasStatus_t err, const char* call) {
    throw Error(str_cat("cuBLAS error ", libcublas().cublasGetStatusName(err), " (",
                        libcublas().cublasGetStatusString(err), ") in ", call));
}

void throw_cudnn_error(cudnnStatus_t err, const char* call) {
    throw Error(str_cat("cuDNN error ", libcudnn().cudnnGetErrorString(err), " in ", call));
}

void throw_cusolver_error(cusolverStatus_t err, const char* call) {
    throw Error(str_cat("cuSOLVER error ", cusolver_status_name(err), " in ", call));
}

}  // namespace neomeg::dnn::cuda
