// Where SVD's outputs come from in cuSOLVER's results: host/device arithmetic, so that the CPU
// tests check it against naive (dnn/test/cuda/svd_layout.cpp) and the store kernel runs it.
// cuSOLVER works column-major: matrix b's A is m x n with leading dimension m, its U m x ws_ucols
// (leading dimension m) and V n x ws_vcols (leading dimension n), S its k singular values in
// descending order. The outputs are S (k), U (m x ucols) and Vh (vrows x n), Vh = V^T.
#pragma once

#include <limits>

#include "src/cuda/kernels/args.h"

namespace neomeg::dnn::cuda::kern {

struct SvdShape {
    int64_t m, n, k;
    int64_t ucols, vrows;        // the outputs' (k, or m and n when full)
    int64_t ws_ucols, ws_vcols;  // the columns cuSOLVER writes (>= ucols, vrows)
    bool uv;
};

enum class SvdPart : int { S, U, Vh };

// Output element e of one matrix, counting S, then U and Vh (row-major) when uv.
struct SvdElement {
    SvdPart part;
    int64_t r, c;  // S: c only
};

NM_HOST_DEVICE double svd_nan() {
#ifdef __CUDA_ARCH__
    return __longlong_as_double(0x7ff8000000000000ll);
#else
    return std::numeric_limits<double>::quiet_NaN();
#endif
}

NM_HOST_DEVICE int64_t svd_outputs_per_matrix(const SvdShape& sh) {
    return sh.k + (sh.uv ? sh.m * sh.ucols + sh.vrows * sh.n : 0);
}

NM_HOST_DEVICE SvdElement svd_element(const SvdShape& sh, int64_t e) {
    if (e < sh.k)
        return {SvdPart::S, 0, e};
    e -= sh.k;
    if (e < sh.m * sh.ucols)
        return {SvdPart::U, e / sh.ucols, e % sh.ucols};
    e -= sh.m * sh.ucols;
    return {SvdPart::Vh, e / sh.n, e % sh.n};
}

// The element's value from one matrix's results: NaN everywhere when the matrix `failed` (it held
// NaN or inf, as naive, or Jacobi did not converge); identity factors for a matrix without
// elements (k = 0), as naive.
NM_HOST_DEVICE double svd_value(const SvdShape& sh, const SvdElement& el, const double* s,
                                const double* u, const double* v, bool failed) {
    if (sh.k == 0)
        return el.r == el.c ? 1.0 : 0.0;
    if (failed)
        return svd_nan();
    switch (el.part) {
        case SvdPart::S:
            return s[el.c];
        case SvdPart::U:
            return u[el.r + el.c * sh.m];
        default:
            return v[el.c + el.r * sh.n];
    }
}

// Column-major position of A's (r, c).
NM_HOST_DEVICE int64_t svd_a_index(const SvdShape& sh, int64_t r, int64_t c) {
    return r + c * sh.m;
}

}  // namespace neomeg::dnn::cuda::kern
