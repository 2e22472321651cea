// How SVD runs through cuSOLVER (svd.cpp), decided on the host from the layouts alone, so that
// the CPU tests check it: gesvdjBatched for matrices of at most 32 rows and columns (one call
// for the batch; it writes full U and V), else one gesvdj per matrix (econ unless full_matrices).
// The workspace holds, in double, every matrix packed column-major, S, U and V as cuSOLVER
// writes them, then an int info and a non-finite flag per matrix, then cuSOLVER's own work.
#pragma once

#include <optional>

#include "neomeg/dnn/layout.h"
#include "src/cuda/kernels/svd_layout.h"

namespace neomeg::dnn::cuda {

struct SvdPlan {
    kern::SvdShape shape;
    int64_t batch = 0;
    bool batched = false;
    // Byte offsets of the workspace's regions; `work` is last and holds lwork doubles.
    size_t a = 0, s = 0, u = 0, v = 0, info = 0, bad = 0, work = 0;

    size_t workspace_bytes(int64_t lwork) const {
        return work + static_cast<size_t>(lwork) * sizeof(double);
    }
};

// Matrices of up to this many rows and columns go to gesvdjBatched (cuSOLVER's limit).
inline constexpr int64_t kSvdBatchedMax = 32;

// The plan for src (..., m, n), or nullopt when cuSOLVER's int arguments cannot hold the case
// (it then runs staged).
std::optional<SvdPlan> plan_svd(const TensorLayout& src, bool compute_uv, bool full_matrices);

}  // namespace neomeg::dnn::cuda
