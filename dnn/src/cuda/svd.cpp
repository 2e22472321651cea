// SVD on the CUDA handle through cuSOLVER's Jacobi SVD (gesvdj) in double, as naive decomposes in
// double through Eigen: the matrices are packed column-major into the workspace, decomposed
// (svd_plan.h says by which call) and stored through the outputs' layouts in src's dtype, rounded
// through float32 as naive. Singular values are in descending order, as naive's; each pair of
// singular vectors is naive's up to a sign both share (neither library fixes the sign), so
// U diag(S) Vh is naive's product. A matrix holding NaN or inf gets NaN everywhere, and an empty
// one identity factors, as naive; a matrix Jacobi does not converge on gets NaN too, without
// waiting for the stream. cuSOLVER is loaded on first use (libs/cusolver_api.h).
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
T* at(const Workspace& ws, size_t offset) {
    return reinterpret_cast<T*>(ws.ptr + offset);
}

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
        return plan_svd(in[0], m_param.compute_uv, m_param.full_matrices).has_value();
    }
    size_t workspace_in_bytes(std::span<const TensorLayout> in,
                              std::span<const TensorLayout>) override {
        SvdPlan p = *plan_svd(in[0], m_param.compute_uv, m_param.full_matrices);
        return p.workspace_bytes(lwork(p));
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
        auto* packed = at<double>(ws, p.a);
        auto *s = at<double>(ws, p.s), *u = at<double>(ws, p.u), *v = at<double>(ws, p.v);
        auto *info = at<int>(ws, p.info), *bad = at<int>(ws, p.bad);
        auto* work = at<double>(ws, p.work);
        kern::svd_gather(a, packed, bad, stream());
        NM_CUDA_CHECK(cudaGetLastError());
        const int m = static_cast<int>(p.shape.m), n = static_cast<int>(p.shape.n);
        const int lw = lwork(p);
        const auto& lib = libcusolver();
        cusolverDnHandle_t h = cuda_handle().cusolver();
        if (p.batched) {
            NM_CUSOLVER_CHECK(lib.cusolverDnDgesvdjBatched(h, jobz(), m, n, packed, m, s, u, m, v,
                                                           n, work, lw, info, params(),
                                                           static_cast<int>(p.batch)));
        } else {
            const int econ = m_param.full_matrices ? 0 : 1;
            for (int64_t b = 0; b < p.batch; ++b)
                NM_CUSOLVER_CHECK(lib.cusolverDnDgesvdj(
                        h, jobz(), econ, m, n, packed + b * p.shape.m * p.shape.n, m,
                        s + b * p.shape.k, u + b * m * p.shape.ws_ucols, m,
                        v + b * n * p.shape.ws_vcols, n, work, lw, info + b, params()));
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

    // Doubles of cuSOLVER's work buffer for the plan (the size queries read no matrix).
    int lwork(const SvdPlan& p) {
        if (p.batch == 0 || p.shape.k == 0)
            return 0;
        const int m = static_cast<int>(p.shape.m), n = static_cast<int>(p.shape.n);
        const auto& lib = libcusolver();
        cusolverDnHandle_t h = cuda_handle().cusolver();
        int lw = 0;
        if (p.batched)
            NM_CUSOLVER_CHECK(lib.cusolverDnDgesvdjBatched_bufferSize(
                    h, jobz(), m, n, nullptr, m, nullptr, nullptr, m, nullptr, n, &lw, params(),
                    static_cast<int>(p.batch)));
        else
            NM_CUSOLVER_CHECK(lib.cusolverDnDgesvdj_bufferSize(
                    h, jobz(), m_param.full_matrices ? 0 : 1, m, n, nullptr, m, nullptr, nullptr, m,
                    nullptr, n, &lw, params()));
        return lw;
    }

    gesvdjInfo_t m_params = nullptr;
};

}  // namespace
NM_REGISTER_CUDA(SVD, SvdImpl);
}  // namespace neomeg::dnn::cuda
