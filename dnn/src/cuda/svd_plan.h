// How SVD runs through cuSOLVER (svd.cpp), decided on the host from the layouts alone, so that
// the CPU tests check it: gesvdjBatched for matrices of at most 32 rows and columns (one call per
// chunk of at most kSvdBatchedChunk matrices; it writes full U and V), else one gesvdj per matrix
// (econ unless full_matrices). The workspace holds, in double, every matrix packed column-major,
// S, U and V as cuSOLVER writes them, then an int info and a non-finite flag per matrix, then
// cuSOLVER's own work.
#pragma once

#include <optional>
#include <vector>

#include "neomeg/dnn/layout.h"
#include "src/cuda/kernels/svd_layout.h"

namespace neomeg::dnn::cuda {

// Byte offsets of the arrays of `matrices` matrices, one region after another, each 256-byte
// aligned: A, S, U, V (cuSOLVER's), then an int info and a non-finite flag per matrix; `end` is
// the first byte after them.
struct SvdRegions {
    size_t a = 0, s = 0, u = 0, v = 0, info = 0, bad = 0, end = 0;
};
SvdRegions svd_regions(const kern::SvdShape& shape, int64_t matrices);

struct SvdPlan {
    kern::SvdShape shape;
    int64_t batch = 0;
    bool batched = false;
    // Matrices per cuSOLVER call: gesvdjBatched's chunk (the last call takes what is left), 1 for
    // gesvdj.
    int64_t chunk = 1;
    // The workspace's regions for the whole batch; cuSOLVER's work (lwork doubles) follows `end`.
    SvdRegions ws;

    size_t workspace_bytes(int64_t lwork) const {
        return ws.end + static_cast<size_t>(lwork) * sizeof(double);
    }
    // The distinct matrix counts of the plan's calls (cuSOLVER's work size may depend on them):
    // the chunk, then the last call's when it is smaller; none without a decomposition.
    std::vector<int64_t> call_sizes() const;
};

// Matrices of up to this many rows and columns go to gesvdjBatched (cuSOLVER's limit).
inline constexpr int64_t kSvdBatchedMax = 32;
// gesvdjBatched's matrices per call: its batch size and work size are ints, and bounding the
// chunk keeps the work buffer (which grows with the batch) well inside them.
inline constexpr int64_t kSvdBatchedChunk = 32768;

// The plan for src (..., m, n), or nullopt when cuSOLVER's int arguments cannot hold one matrix
// (the case then runs staged).
std::optional<SvdPlan> plan_svd(const TensorLayout& src, bool compute_uv, bool full_matrices);

}  // namespace neomeg::dnn::cuda
