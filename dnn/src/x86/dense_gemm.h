// What the x86 kernels that contract sampled columns with a filter by GEMM share (the deformable
// and region-restricted convolutions): float32 tensors of any strides as dense arrays (the
// tensor itself when contiguous, else a copy), dense results written back, and oneDNN's
// row-major sgemm (threaded on OpenMP like the rest of the backend).
#pragma once

#include <oneapi/dnnl/dnnl.h>

#include <algorithm>
#include <array>
#include <span>
#include <vector>

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn::x86::dense_gemm {

// A float32 tensor as a dense row-major array: the tensor itself when contiguous, else a copy.
inline const float* dense(const TensorND& t, std::vector<float>& buf) {
    const auto* p = static_cast<const float*>(t.raw_ptr());
    if (t.layout.is_contiguous())
        return p;
    buf.resize(t.layout.total_nr_elems());
    const TensorLayout& l = t.layout;
    size_t i = 0;
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    for (; i < buf.size(); ++i) {
        ptrdiff_t off = 0;
        for (size_t d = 0; d < l.ndim; ++d)
            off += static_cast<ptrdiff_t>(idx[d]) * l.stride[d];
        buf[i] = p[off];
        for (size_t d = l.ndim; d-- > 0;)
            if (++idx[d] < l[d])
                break;
            else
                idx[d] = 0;
    }
    return buf.data();
}

// Writes dense values into t (any strides); `dense` may be t's own memory (contiguous t).
inline void store(const TensorND& t, const float* dense_v) {
    auto* p = static_cast<float*>(t.raw_ptr());
    if (p == dense_v)
        return;
    const TensorLayout& l = t.layout;
    std::array<size_t, TensorLayout::MAX_NDIM> idx{};
    for (size_t i = 0, n = l.total_nr_elems(); i < n; ++i) {
        ptrdiff_t off = 0;
        for (size_t d = 0; d < l.ndim; ++d)
            off += static_cast<ptrdiff_t>(idx[d]) * l.stride[d];
        p[off] = dense_v[i];
        for (size_t d = l.ndim; d-- > 0;)
            if (++idx[d] < l[d])
                break;
            else
                idx[d] = 0;
    }
}

// An output's dense buffer: the tensor's memory when contiguous, else `buf`.
inline float* dense_out(const TensorND& t, std::vector<float>& buf) {
    if (t.layout.is_contiguous())
        return static_cast<float*>(t.raw_ptr());
    buf.resize(t.layout.total_nr_elems());
    return buf.data();
}

// Row-major C = op(A) op(B) (beta 0) or C += (beta 1), oneDNN's sgemm.
inline void gemm(char ta, char tb, long m, long n, long k, const float* a, long lda, const float* b,
                 long ldb, float beta, float* c, long ldc) {
    if (m == 0 || n == 0)
        return;
    if (k == 0) {  // sgemm leaves C alone; C = 0 * C is C's zeroing
        if (beta == 0)
            for (long i = 0; i < m; ++i)
                std::fill(c + i * ldc, c + i * ldc + n, 0.f);
        return;
    }
    dnnl_status_t st = dnnl_sgemm(ta, tb, m, n, k, 1.f, a, lda, b, ldb, beta, c, ldc);
    NM_THROW_IF(st != dnnl_success, NotSupportedError, "dnnl_sgemm failed: status ", int(st));
}

// Whether every tensor of the call is float32, `except` (an index into `in`) aside.
inline bool float32_call(std::span<const TensorND> in, std::span<const TensorND> out,
                         std::ptrdiff_t except = -1) {
    for (size_t i = 0; i < in.size(); ++i)
        if (static_cast<std::ptrdiff_t>(i) != except && in[i].layout.dtype != dtype::Float32)
            return false;
    for (const TensorND& t : out)
        if (t.layout.dtype != dtype::Float32)
            return false;
    return true;
}

}  // namespace neomeg::dnn::x86::dense_gemm
