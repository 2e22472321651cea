// SVD on the CUDA handle through cuSOLVER's Jacobi SVD (gesvdj) in double, as naive decomposes in
// double through Eigen: the matrices are packed column-major into the workspace, decomposed
// (svd_plan.h says by which call) and stored through the outputs' layouts in src's dtype, rounded
// through float32 as naive. Singular values are in descending order, as naive's; each pair of
// singular vectors is naive's up to a sign both share (neither library fixes the sign), so
// U diag(S) Vh is naive's product. A matrix holding NaN or inf gets NaN everywhere, and an empty
// one identity factors, as naive; a matrix Jacobi does not converge on gets NaN too, without
// waiting for the stream. cuSOLVER is loaded on first use (libs/cusolver_api.h).
//
// cuSOLVER's work-size queries are given device arrays of the sizes the calls will have: its
// documentation (cusolverDn<t>gesvdj_bufferSize, cusolverDn<t>gesvdjBatched_bufferSize) lists A,
// S, U and V among their parameters as device arrays of those dimensions and nowhere says that
// they may be null, so a null pointer is outside what it promises. Those arrays are allocated for
// the query, once per shape (cudaFree waits for the device); where that memory cannot be had,
// the case runs staged.
#include <algorithm>
#include <optional>
#include <utility>
#include <vector>

#include "neomeg/dnn/operators/linalg.h"
#include "src/cuda/kernel.h"
#include "src/cuda/layout_util.h"
#include "src/cuda/svd_plan.h"

namespace neomeg::dnn::cuda {
namespace {

// The axes of a layout before its last `matrix_axes` (none for a single matrix).
kern::Strided batch_of(const TensorLayout& l, size_t matrix_axes) {
    kern::Strided s;
    s.ndim = static_cast<int>(l.ndim - matrix_axes);
    for (size_t d = 0; d + matrix_axes < l.ndim; ++d) {
        s.shape[d] = static_cast<int64_t>(l[d]);
        s.stride[d] = l.stride[d];
    }
    return s;
}

template <class T>
T* at(std::byte* base, size_t offset) {
    return reinterpret_cast<T*>(base + offset);
}

// Device memory for a work-size query; null when cudaMalloc refuses (not an error here).
class QueryArrays {
public:
    explicit QueryArrays(size_t bytes) {
        if (cudaMalloc(&m_ptr, std::max<size_t>(bytes, 1)) != cudaSuccess) {
            cudaGetLastError();  // out of memory is not sticky; leave no error behind
            m_ptr = nullptr;
        }
    }
    ~QueryArrays() {
        if (m_ptr)
            cudaFree(m_ptr);
    }
    QueryArrays(const QueryArrays&) = delete;
    QueryArrays& operator=(const QueryArrays&) = delete;
    std::byte* get() const { return static_cast<std::byte*>(m_ptr); }

private:
    void* m_ptr = nullptr;
};

class SvdImpl final : public CudaKernel<SVD> {
public:
    using CudaKernel::CudaKernel;
    SvdImpl(const SvdImpl&) = delete;
    SvdImpl& operator=(const SvdImpl&) = delete;
    ~SvdImpl() override {
        if (m_params)
            libcusolver().cusolverDnDestroyGesvdjInfo(m_params);
    }

private:
    bool accepts(std::span<const TensorLayout> in, std::span<const TensorLayout>) override {
        auto p = plan_svd(in[0], m_param.compute_uv, m_param.full_matrices);
        return p && lwork(*p).has_value();
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        SvdPlan p = *plan_svd(in[0], m_param.compute_uv, m_param.full_matrices);
        return p.workspace_bytes(*lwork(p));
    }

    const char* run(std::span<const TensorND> in, std::span<const TensorND> out,
                    Workspace ws) override {
        const TensorLayout& sl = in[0].layout;
        SvdPlan p = *plan_svd(sl, m_param.compute_uv, m_param.full_matrices);
        kern::SvdArgs a = args(p, in[0], out);
        if (p.batch == 0)
            return "cuda:empty";
        if (p.shape.k == 0) {
            kern::svd_store(a, nullptr, nullptr, nullptr, nullptr, nullptr, stream());
            return "cuda";
        }
        const SvdRegions& r = p.ws;
        auto* packed = at<double>(ws.ptr, r.a);
        auto *s = at<double>(ws.ptr, r.s), *u = at<double>(ws.ptr, r.u),
             *v = at<double>(ws.ptr, r.v);
        auto *info = at<int>(ws.ptr, r.info), *bad = at<int>(ws.ptr, r.bad);
        auto* work = at<double>(ws.ptr, r.end);
        kern::svd_gather(a, packed, bad, stream());
        NM_CUDA_CHECK(cudaGetLastError());
        const auto& sh = p.shape;
        const int m = static_cast<int>(sh.m), n = static_cast<int>(sh.n);
        const int lw = *lwork(p);
        const auto& lib = libcusolver();
        cusolverDnHandle_t h = cuda_handle().cusolver();
        const int econ = m_param.full_matrices ? 0 : 1;
        // One call per chunk of matrices (gesvdjBatched) or per matrix (gesvdj), in stream order
        // on the handle's stream, sharing the work buffer.
        for (int64_t b = 0; b < p.batch; b += p.chunk) {
            const int count = static_cast<int>(std::min(p.chunk, p.batch - b));
            double* pa = packed + b * sh.m * sh.n;
            double *ps = s + b * sh.k, *pu = u + b * sh.m * sh.ws_ucols,
                   *pv = v + b * sh.n * sh.ws_vcols;
            if (p.batched)
                NM_CUSOLVER_CHECK(lib.cusolverDnDgesvdjBatched(h, jobz(), m, n, pa, m, ps, pu, m,
                                                               pv, n, work, lw, info + b, params(),
                                                               count));
            else
                NM_CUSOLVER_CHECK(lib.cusolverDnDgesvdj(h, jobz(), econ, m, n, pa, m, ps, pu, m, pv,
                                                        n, work, lw, info + b, params()));
        }
        kern::svd_store(a, s, u, v, info, bad, stream());
        return p.batched ? "cusolver:gesvdj_batched" : "cusolver:gesvdj";
    }

    kern::SvdArgs args(const SvdPlan& p, const TensorND& src, std::span<const TensorND> out) const {
        kern::SvdArgs a{};
        const auto& sh = p.shape;
        a.m = sh.m;
        a.n = sh.n;
        a.k = sh.k;
        a.batch = p.batch;
        a.ucols = sh.ucols;
        a.vrows = sh.vrows;
        a.ws_ucols = sh.ws_ucols;
        a.ws_vcols = sh.ws_vcols;
        a.uv = sh.uv;
        const TensorLayout& sl = src.layout;
        a.dt = to_kern(sl.dtype);
        a.src = src.raw_ptr();
        a.src_batch = batch_of(sl, 2);
        a.src_row = sl.stride[sl.ndim - 2];
        a.src_col = sl.stride[sl.ndim - 1];
        const TensorND& s_out = sh.uv ? out[1] : out[0];
        a.s = s_out.raw_ptr();
        a.s_batch = batch_of(s_out.layout, 1);
        a.s_step = s_out.layout.stride[s_out.layout.ndim - 1];
        if (sh.uv) {
            const TensorLayout &ul = out[0].layout, &vl = out[2].layout;
            a.u = out[0].raw_ptr();
            a.u_batch = batch_of(ul, 2);
            a.u_row = ul.stride[ul.ndim - 2];
            a.u_col = ul.stride[ul.ndim - 1];
            a.vh = out[2].raw_ptr();
            a.vh_batch = batch_of(vl, 2);
            a.vh_row = vl.stride[vl.ndim - 2];
            a.vh_col = vl.stride[vl.ndim - 1];
        }
        return a;
    }

    cusolverEigMode_t jobz() const {
        return m_param.compute_uv ? CUSOLVER_EIG_MODE_VECTOR : CUSOLVER_EIG_MODE_NOVECTOR;
    }

    // Jacobi's settings: cuSOLVER's defaults (tolerance: double's machine epsilon, 100 sweeps,
    // singular values sorted in descending order).
    gesvdjInfo_t params() {
        if (!m_params)
            NM_CUSOLVER_CHECK(libcusolver().cusolverDnCreateGesvdjInfo(&m_params));
        return m_params;
    }

    // Doubles of cuSOLVER's work buffer for the plan's calls (the largest any of them asks for),
    // nullopt when the query's arrays could not be allocated; remembered per case, so that
    // accepts() answers the same for it every time.
    std::optional<int> lwork(const SvdPlan& p) {
        const std::vector<int64_t> calls = p.call_sizes();
        if (calls.empty())
            return 0;
        const LworkKey key{p.shape.m, p.shape.n, calls, m_param.compute_uv, m_param.full_matrices};
        for (const auto& [k, lw] : m_lwork)
            if (k == key)
                return lw;
        std::optional<int> lw = query_lwork(p, calls);
        if (m_lwork.size() == kMaxCases)
            m_lwork.erase(m_lwork.begin());
        m_lwork.emplace_back(key, lw);
        return lw;
    }

    std::optional<int> query_lwork(const SvdPlan& p, const std::vector<int64_t>& calls) {
        DeviceGuard guard(cuda_handle().device());
        const int m = static_cast<int>(p.shape.m), n = static_cast<int>(p.shape.n);
        const auto& lib = libcusolver();
        cusolverDnHandle_t h = cuda_handle().cusolver();
        int most = 0;
        for (int64_t count : calls) {
            const SvdRegions r = svd_regions(p.shape, count);
            QueryArrays arrays(r.info);  // A, S, U and V of one call
            if (!arrays.get())
                return std::nullopt;
            auto *a = at<double>(arrays.get(), r.a), *s = at<double>(arrays.get(), r.s),
                 *u = at<double>(arrays.get(), r.u), *v = at<double>(arrays.get(), r.v);
            int lw = 0;
            if (p.batched)
                NM_CUSOLVER_CHECK(lib.cusolverDnDgesvdjBatched_bufferSize(h, jobz(), m, n, a, m, s,
                                                                          u, m, v, n, &lw, params(),
                                                                          static_cast<int>(count)));
            else
                NM_CUSOLVER_CHECK(
                        lib.cusolverDnDgesvdj_bufferSize(h, jobz(), m_param.full_matrices ? 0 : 1,
                                                         m, n, a, m, s, u, m, v, n, &lw, params()));
            most = std::max(most, lw);
        }
        return most;
    }

    struct LworkKey {
        int64_t m, n;
        std::vector<int64_t> calls;
        bool uv, full;
        bool operator==(const LworkKey&) const = default;
    };
    static constexpr size_t kMaxCases = 8;
    std::vector<std::pair<LworkKey, std::optional<int>>> m_lwork;
    gesvdjInfo_t m_params = nullptr;
};

}  // namespace
NM_REGISTER_CUDA(SVD, SvdImpl);
}  // namespace neomeg::dnn::cuda
