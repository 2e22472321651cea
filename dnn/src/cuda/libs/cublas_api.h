// cuBLAS's entry points, resolved from the library found at run time (NeoMeg does not link it).
// Kernels call libcublas().cublasXxx(...); an entry point used anywhere is listed here once.
#pragma once

#include <cublas_v2.h>

#include "src/cuda/libs/dynamic_library.h"

// cuBLAS overloads cublasGemmStridedBatchedEx in C++ (an inline wrapper taking the older
// cudaDataType compute type), so its type is spelled out: the library's own entry point.
using CublasGemmStridedBatchedEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t,
                                                      cublasOperation_t, int, int, int, const void*,
                                                      const void*, cudaDataType, int, long long,
                                                      const void*, cudaDataType, int, long long,
                                                      const void*, void*, cudaDataType, int,
                                                      long long, int, cublasComputeType_t,
                                                      cublasGemmAlgo_t);

// Names as the API spells them; cublas_v2.h maps some to versioned symbols (cublasCreate is
// cublasCreate_v2), and the table's members and the symbols looked up follow it. X(name) takes
// the type of the header's declaration, XT(name, type) the given one.
#define NM_CUBLAS_ENTRY_POINTS(X, XT)                          \
    X(cublasGetProperty)                                       \
    X(cublasGetStatusName)                                     \
    X(cublasGetStatusString)                                   \
    X(cublasCreate)                                            \
    X(cublasDestroy)                                           \
    X(cublasSetStream)                                         \
    X(cublasSetPointerMode)                                    \
    XT(cublasGemmStridedBatchedEx, CublasGemmStridedBatchedEx) \
    X(cublasDotEx)

namespace neomeg::dnn::cuda {

struct CublasApi {
#define NM_CUBLAS_MEMBER(fn) decltype(&::fn) fn = nullptr;
#define NM_CUBLAS_TYPED_MEMBER(fn, type) type fn = nullptr;
    NM_CUBLAS_ENTRY_POINTS(NM_CUBLAS_MEMBER, NM_CUBLAS_TYPED_MEMBER)
#undef NM_CUBLAS_MEMBER
#undef NM_CUBLAS_TYPED_MEMBER
};

// As load_cudnn (cudnn_api.h), for cuBLAS.
CublasApi load_cublas(const std::vector<std::string>& candidates, LoadReport& report);

// The process's table, loaded on first use; throws dnn::Error naming the library when it is not
// usable.
const CublasApi& libcublas();
const LoadReport& cublas_report();

}  // namespace neomeg::dnn::cuda
