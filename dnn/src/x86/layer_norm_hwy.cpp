// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/layer_norm_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <cmath>

#include "src/x86/layer_norm_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

HWY_INLINE float sum_lanes(D d, V v) {
    return hn::GetLane(hn::SumOfLanes(d, v));
}

// Sum of the row's elements, and of the squares of their distances from mu.
float row_sum(const float* x, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    V s0 = hn::Zero(d), s1 = hn::Zero(d);
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        s0 = hn::Add(s0, hn::LoadU(d, x + i));
        s1 = hn::Add(s1, hn::LoadU(d, x + i + n));
    }
    for (; i + n <= len; i += n)
        s0 = hn::Add(s0, hn::LoadU(d, x + i));
    float s = sum_lanes(d, hn::Add(s0, s1));
    for (; i < len; ++i)
        s += x[i];
    return s;
}

float row_sq_dist(const float* x, size_t len, float mu) {
    const D d;
    const size_t n = hn::Lanes(d);
    const V m = hn::Set(d, mu);
    V s0 = hn::Zero(d), s1 = hn::Zero(d);
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        V a = hn::Sub(hn::LoadU(d, x + i), m), b = hn::Sub(hn::LoadU(d, x + i + n), m);
        s0 = hn::MulAdd(a, a, s0);
        s1 = hn::MulAdd(b, b, s1);
    }
    for (; i + n <= len; i += n) {
        V a = hn::Sub(hn::LoadU(d, x + i), m);
        s0 = hn::MulAdd(a, a, s0);
    }
    float s = sum_lanes(d, hn::Add(s0, s1));
    for (; i < len; ++i)
        s += (x[i] - mu) * (x[i] - mu);
    return s;
}

void LayerNormRows(const float* x, const float* weight, const float* bias, float* y, float* mean,
                   float* rstd, size_t begin, size_t end, size_t len, float eps) {
    const D d;
    const size_t n = hn::Lanes(d);
    const float inv_len = 1.0f / static_cast<float>(len);
    for (size_t r = begin; r < end; ++r) {
        const float* xr = x + r * len;
        float* yr = y + r * len;
        const float mu = row_sum(xr, len) * inv_len;
        const float var = row_sq_dist(xr, len, mu) * inv_len;
        const auto rs = static_cast<float>(1.0 / std::sqrt(double(var) + double(eps)));
        mean[r] = mu;
        rstd[r] = rs;
        const V m = hn::Set(d, mu), s = hn::Set(d, rs);
        size_t i = 0;
        if (weight) {
            for (; i + n <= len; i += n) {
                V xh = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), m), s);
                hn::StoreU(hn::MulAdd(xh, hn::LoadU(d, weight + i), hn::LoadU(d, bias + i)), d,
                           yr + i);
            }
            for (; i < len; ++i)
                yr[i] = (xr[i] - mu) * rs * weight[i] + bias[i];
        } else {
            for (; i + n <= len; i += n)
                hn::StoreU(hn::Mul(hn::Sub(hn::LoadU(d, xr + i), m), s), d, yr + i);
            for (; i < len; ++i)
                yr[i] = (xr[i] - mu) * rs;
        }
    }
}

void LayerNormGradRows(const float* dy, const float* x, const float* mean, const float* rstd,
                       const float* weight, float* dx, float* dw_acc, float* db_acc, size_t begin,
                       size_t end, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    const float inv_len = 1.0f / static_cast<float>(len);
    for (size_t r = begin; r < end; ++r) {
        const float *xr = x + r * len, *gr = dy + r * len;
        float* out = dx + r * len;
        const float mu = mean[r], rs = rstd[r];
        const V m = hn::Set(d, mu), s = hn::Set(d, rs);
        // Pass 1: sum(g), sum(g * xhat), and the weight's and bias's partial sums.
        V sg = hn::Zero(d), sgx = hn::Zero(d);
        float g_sum = 0, gx_sum = 0;
        size_t i = 0;
        if (weight) {
            for (; i + n <= len; i += n) {
                V xh = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), m), s);
                V dyv = hn::LoadU(d, gr + i);
                V g = hn::Mul(dyv, hn::LoadU(d, weight + i));
                sg = hn::Add(sg, g);
                sgx = hn::MulAdd(g, xh, sgx);
                hn::StoreU(hn::MulAdd(dyv, xh, hn::LoadU(d, dw_acc + i)), d, dw_acc + i);
                hn::StoreU(hn::Add(dyv, hn::LoadU(d, db_acc + i)), d, db_acc + i);
            }
            for (; i < len; ++i) {
                float xh = (xr[i] - mu) * rs, g = gr[i] * weight[i];
                g_sum += g;
                gx_sum += g * xh;
                dw_acc[i] += gr[i] * xh;
                db_acc[i] += gr[i];
            }
        } else {
            for (; i + n <= len; i += n) {
                V xh = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), m), s);
                V g = hn::LoadU(d, gr + i);
                sg = hn::Add(sg, g);
                sgx = hn::MulAdd(g, xh, sgx);
            }
            for (; i < len; ++i) {
                float xh = (xr[i] - mu) * rs;
                g_sum += gr[i];
                gx_sum += gr[i] * xh;
            }
        }
        const float c1 = (sum_lanes(d, sg) + g_sum) * inv_len;
        const float c2 = (sum_lanes(d, sgx) + gx_sum) * inv_len;
        // Pass 2: dx = rstd * (g - c1 - xhat * c2).
        const V v1 = hn::Set(d, c1), v2 = hn::Set(d, c2);
        i = 0;
        for (; i + n <= len; i += n) {
            V xh = hn::Mul(hn::Sub(hn::LoadU(d, xr + i), m), s);
            V g = hn::LoadU(d, gr + i);
            if (weight)
                g = hn::Mul(g, hn::LoadU(d, weight + i));
            hn::StoreU(hn::Mul(s, hn::NegMulAdd(xh, v2, hn::Sub(g, v1))), d, out + i);
        }
        for (; i < len; ++i) {
            float xh = (xr[i] - mu) * rs, g = weight ? gr[i] * weight[i] : gr[i];
            out[i] = rs * (g - c1 - xh * c2);
        }
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(LayerNormRows);
HWY_EXPORT(LayerNormGradRows);

void layer_norm_rows(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, size_t begin, size_t end, size_t len, float eps) {
    HWY_DYNAMIC_DISPATCH(LayerNormRows)(x, weight, bias, y, mean, rstd, begin, end, len, eps);
}

void layer_norm_grad_rows(const float* dy, const float* x, const float* mean, const float* rstd,
                          const float* weight, float* dx, float* dw_acc, float* db_acc,
                          size_t begin, size_t end, size_t len) {
    HWY_DYNAMIC_DISPATCH(LayerNormGradRows)
    (dy, x, mean, rstd, weight, dx, dw_acc, db_acc, begin, end, len);
}

}  // namespace neomeg::dnn::x86
#endif  // HWY_ONCE
