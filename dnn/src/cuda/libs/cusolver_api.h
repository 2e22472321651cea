// cuSOLVER's dense entry points, resolved from the library found at run time (NeoMeg does not
// link it). Kernels call libcusolver().cusolverXxx(...); an entry point used anywhere is listed
// here once. Only SVD calls it, so nothing loads it before an SVD runs on a GPU.
#pragma once

#include <cusolverDn.h>

#include "src/cuda/libs/dynamic_library.h"

#define NM_CUSOLVER_ENTRY_POINTS(X)        \
    X(cusolverGetProperty)                 \
    X(cusolverDnCreate)                    \
    X(cusolverDnDestroy)                   \
    X(cusolverDnSetStream)                 \
    X(cusolverDnCreateGesvdjInfo)          \
    X(cusolverDnDestroyGesvdjInfo)         \
    X(cusolverDnDgesvdj_bufferSize)        \
    X(cusolverDnDgesvdj)                   \
    X(cusolverDnDgesvdjBatched_bufferSize) \
    X(cusolverDnDgesvdjBatched)

namespace neomeg::dnn::cuda {

// The headers' version in the loaders' numbering (major * 10000 + minor * 100 + patch; the
// headers' CUSOLVER_VERSION multiplies the major version by 1000).
inline constexpr int kCusolverBuildVersion =
        CUSOLVER_VER_MAJOR * 10000 + CUSOLVER_VER_MINOR * 100 + CUSOLVER_VER_PATCH;

struct CusolverApi {
#define NM_CUSOLVER_MEMBER(fn) decltype(&::fn) fn = nullptr;
    NM_CUSOLVER_ENTRY_POINTS(NM_CUSOLVER_MEMBER)
#undef NM_CUSOLVER_MEMBER
};

// As load_cudnn (cudnn_api.h), for cuSOLVER.
CusolverApi load_cusolver(const std::vector<std::string>& candidates, LoadReport& report);

// The process's table, loaded on first use; throws dnn::Error naming the library when it is not
// usable.
const CusolverApi& libcusolver();
const LoadReport& cusolver_report();

// "CUSOLVER_STATUS_INVALID_VALUE": cuSOLVER has no status-name function of its own.
const char* cusolver_status_name(cusolverStatus_t status);

}  // namespace neomeg::dnn::cuda
