// SVD's packing and storing around cuSOLVER: one thread per element, a grid-stride loop over the
// whole batch (svd_layout.h says which result each output element takes).
#include "src/cuda/cuda_check.h"
#include "src/cuda/kernels/device.cuh"
#include "src/cuda/kernels/svd_layout.h"

namespace neomeg::dnn::cuda::kern {
namespace {

SvdShape shape_of(const SvdArgs& a) {
    return {a.m, a.n, a.k, a.ucols, a.vrows, a.ws_ucols, a.ws_vcols, a.uv};
}

__global__ void gather_kernel(SvdArgs a, SvdShape sh, double* packed, int* bad) {
    const int64_t mn = a.m * a.n;
    grid_stride<int64_t>(a.batch * mn, [&](int64_t i) {
        int64_t b = i / mn, e = i % mn, r = e / a.n, c = e % a.n;
        double v =
                load_float(a.src, a.dt, offset_of(a.src_batch, b) + r * a.src_row + c * a.src_col);
        if (!isfinite(v)) {
            // The matrix's results become NaN (the flag); a zero keeps Jacobi's sweeps finite.
            bad[b] = 1;
            v = 0.0;
        }
        packed[b * mn + svd_a_index(sh, r, c)] = v;
    });
}

__global__ void store_kernel(SvdArgs a, SvdShape sh, const double* s, const double* u,
                             const double* v, const int* info, const int* bad) {
    const int64_t per = svd_outputs_per_matrix(sh);
    grid_stride<int64_t>(a.batch * per, [&](int64_t i) {
        int64_t b = i / per;
        SvdElement el = svd_element(sh, i % per);
        bool failed = sh.k > 0 && (bad[b] != 0 || info[b] != 0);
        double x = svd_value(sh, el, s + b * a.k, u + b * a.m * a.ws_ucols,
                             v + b * a.n * a.ws_vcols, failed);
        switch (el.part) {
            case SvdPart::S:
                store_float(a.s, a.dt, offset_of(a.s_batch, b) + el.c * a.s_step, x);
                break;
            case SvdPart::U:
                store_float(a.u, a.dt, offset_of(a.u_batch, b) + el.r * a.u_row + el.c * a.u_col,
                            x);
                break;
            default:
                store_float(a.vh, a.dt,
                            offset_of(a.vh_batch, b) + el.r * a.vh_row + el.c * a.vh_col, x);
        }
    });
}

}  // namespace

void svd_gather(const SvdArgs& a, double* packed, int* bad, cudaStream_t stream) {
    int64_t total = a.batch * a.m * a.n;
    if (a.batch)
        NM_CUDA_CHECK(cudaMemsetAsync(bad, 0, static_cast<size_t>(a.batch) * sizeof(int), stream));
    if (total)
        gather_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, shape_of(a), packed, bad);
}

void svd_store(const SvdArgs& a, const double* s, const double* u, const double* v, const int* info,
               const int* bad, cudaStream_t stream) {
    SvdShape sh = shape_of(a);
    int64_t total = a.batch * svd_outputs_per_matrix(sh);
    if (total)
        store_kernel<<<grid_for(total), kBlock, 0, stream>>>(a, sh, s, u, v, info, bad);
}

}  // namespace neomeg::dnn::cuda::kern
