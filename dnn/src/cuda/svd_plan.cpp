#include "src/cuda/svd_plan.h"

#include <algorithm>
#include <limits>

namespace neomeg::dnn::cuda {
namespace {

constexpr size_t kAlign = 256;

size_t align_up(size_t v) {
    return (v + kAlign - 1) / kAlign * kAlign;
}

}  // namespace

SvdRegions svd_regions(const kern::SvdShape& sh, int64_t matrices) {
    const auto doubles = [](int64_t count) {
        return align_up(static_cast<size_t>(count) * sizeof(double));
    };
    const auto ints = [](int64_t count) {
        return align_up(static_cast<size_t>(count) * sizeof(int));
    };
    SvdRegions r;
    r.a = 0;
    r.s = r.a + doubles(matrices * sh.m * sh.n);
    r.u = r.s + doubles(matrices * sh.k);
    // Also without vectors: cuSOLVER's documentation does not promise that jobz = NOVECTOR
    // leaves U and V unwritten, so they get their room whatever the outputs are.
    r.v = r.u + doubles(matrices * sh.m * sh.ws_ucols);
    r.info = r.v + doubles(matrices * sh.n * sh.ws_vcols);
    r.bad = r.info + ints(matrices);
    r.end = r.bad + ints(matrices);
    return r;
}

std::vector<int64_t> SvdPlan::call_sizes() const {
    if (batch == 0 || shape.k == 0)
        return {};
    std::vector<int64_t> sizes{std::min(chunk, batch)};
    if (batch > chunk && batch % chunk != 0)
        sizes.push_back(batch % chunk);
    return sizes;
}

std::optional<SvdPlan> plan_svd(const TensorLayout& src, bool compute_uv, bool full_matrices) {
    if (src.ndim < 2 || src.ndim - 2 > static_cast<size_t>(kern::kMaxNdim))
        return std::nullopt;
    const auto m = static_cast<int64_t>(src[src.ndim - 2]);
    const auto n = static_cast<int64_t>(src[src.ndim - 1]);
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < src.ndim; ++d)
        batch *= static_cast<int64_t>(src[d]);
    // cuSOLVER indexes a matrix with int.
    constexpr int64_t kIntMax = std::numeric_limits<int>::max();
    if (m > kIntMax || n > kIntMax || m * n > kIntMax)
        return std::nullopt;
    SvdPlan p;
    const int64_t k = std::min(m, n);
    p.batch = batch;
    p.batched = k > 0 && m <= kSvdBatchedMax && n <= kSvdBatchedMax;
    p.chunk = p.batched ? kSvdBatchedChunk : 1;
    auto& sh = p.shape;
    sh.m = m;
    sh.n = n;
    sh.k = k;
    sh.uv = compute_uv;
    sh.ucols = full_matrices ? m : k;
    sh.vrows = full_matrices ? n : k;
    // gesvdjBatched always writes full factors; gesvdj's econ writes k columns.
    const bool full_ws = p.batched || full_matrices;
    sh.ws_ucols = full_ws ? m : k;
    sh.ws_vcols = full_ws ? n : k;
    if (k == 0)
        return p;  // identity factors only: no decomposition, no workspace
    p.ws = svd_regions(sh, batch);
    return p;
}

}  // namespace neomeg::dnn::cuda
