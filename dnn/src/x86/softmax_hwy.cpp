// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/softmax_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>
#include "src/x86/exp_f32_hwy-inl.h"
// clang-format on

#include <algorithm>
#include <cmath>
#include <limits>

#include "src/x86/softmax_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;
constexpr float kInf = std::numeric_limits<float>::infinity();
constexpr size_t kMaxLanes = HWY_MAX_BYTES / sizeof(float);

// exp of every lane: ExpF, and std::exp for the lanes outside its range (subnormal results, 0 for
// -inf, infinities and NaN).
HWY_INLINE V exp_lanes(D d, V x) {
    const ExpF f;
    V r = f(d, x);
    const auto out = f.special(d, &x);
    if (HWY_UNLIKELY(!hn::AllFalse(d, out))) {
        alignas(HWY_MAX_BYTES) float in[kMaxLanes], res[kMaxLanes];
        hn::Store(x, d, in);
        hn::Store(r, d, res);
        for (size_t j = 0; j < hn::Lanes(d); ++j)
            if (!(in[j] >= -87.0f && in[j] <= 88.0f))
                res[j] = std::exp(in[j]);
        r = hn::Load(d, res);
    }
    return r;
}

// Naive's forward in double along one strided line, for lines holding a NaN or an infinity.
void scalar_forward(const float* x, float* y, size_t len, size_t stride, bool log) {
    double mx = -std::numeric_limits<double>::infinity();
    for (size_t k = 0; k < len; ++k)
        mx = std::max(mx, double(x[k * stride]));
    double sum = 0;
    for (size_t k = 0; k < len; ++k)
        sum += std::exp(double(x[k * stride]) - mx);
    const double log_sum = std::log(sum);
    for (size_t k = 0; k < len; ++k) {
        double v = x[k * stride];
        y[k * stride] = static_cast<float>(log ? v - mx - log_sum : std::exp(v - mx) / sum);
    }
}

void forward_row(const float* x, float* y, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    V m0 = hn::Set(d, -kInf), m1 = m0;
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        m0 = hn::Max(m0, hn::LoadU(d, x + i));
        m1 = hn::Max(m1, hn::LoadU(d, x + i + n));
    }
    for (; i + n <= len; i += n)
        m0 = hn::Max(m0, hn::LoadU(d, x + i));
    float mx = hn::GetLane(hn::MaxOfLanes(d, hn::Max(m0, m1)));
    for (; i < len; ++i)
        mx = std::max(mx, x[i]);
    if (!std::isfinite(mx)) {
        scalar_forward(x, y, len, 1, false);
        return;
    }
    const V vm = hn::Set(d, mx);
    V s0 = hn::Zero(d), s1 = hn::Zero(d);
    for (i = 0; i + 2 * n <= len; i += 2 * n) {
        V e0 = exp_lanes(d, hn::Sub(hn::LoadU(d, x + i), vm));
        V e1 = exp_lanes(d, hn::Sub(hn::LoadU(d, x + i + n), vm));
        hn::StoreU(e0, d, y + i);
        hn::StoreU(e1, d, y + i + n);
        s0 = hn::Add(s0, e0);
        s1 = hn::Add(s1, e1);
    }
    for (; i + n <= len; i += n) {
        V e = exp_lanes(d, hn::Sub(hn::LoadU(d, x + i), vm));
        hn::StoreU(e, d, y + i);
        s0 = hn::Add(s0, e);
    }
    float sum = hn::GetLane(hn::SumOfLanes(d, hn::Add(s0, s1)));
    for (; i < len; ++i) {
        y[i] = std::exp(x[i] - mx);
        sum += y[i];
    }
    if (!std::isfinite(sum)) {  // a NaN
        scalar_forward(x, y, len, 1, false);
        return;
    }
    const float r = 1.0f / sum;
    const V vr = hn::Set(d, r);
    for (i = 0; i + n <= len; i += n)
        hn::StoreU(hn::Mul(hn::LoadU(d, y + i), vr), d, y + i);
    for (; i < len; ++i)
        y[i] *= r;
}

void SoftmaxRows(const float* x, float* y, size_t rb, size_t re, size_t len) {
    for (size_t r = rb; r < re; ++r)
        forward_row(x + r * len, y + r * len, len);
}

// The maximum of each column of [x, x + w) down `len` rows of stride `inner`, into m.
void column_max(const float* x, size_t len, size_t inner, size_t w, float* m) {
    const D d;
    const size_t n = hn::Lanes(d);
    std::fill(m, m + w, -kInf);
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n)
            hn::Store(hn::Max(hn::Load(d, m + j), hn::LoadU(d, xr + j)), d, m + j);
        for (; j < w; ++j)
            m[j] = std::max(m[j], xr[j]);
    }
}

// Softmax down w columns from x (y): per column statistics on the stack, rows streamed.
void softmax_columns(const float* x, float* y, size_t len, size_t inner, size_t w) {
    const D d;
    const size_t n = hn::Lanes(d);
    alignas(HWY_MAX_BYTES) float m[kSoftmaxColumns], s[kSoftmaxColumns];
    column_max(x, len, inner, w, m);
    std::fill(s, s + w, 0.0f);
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        float* yr = y + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            V e = exp_lanes(d, hn::Sub(hn::LoadU(d, xr + j), hn::Load(d, m + j)));
            hn::StoreU(e, d, yr + j);
            hn::Store(hn::Add(hn::Load(d, s + j), e), d, s + j);
        }
        for (; j < w; ++j) {
            yr[j] = std::exp(xr[j] - m[j]);
            s[j] += yr[j];
        }
    }
    for (size_t j = 0; j < w; ++j)
        s[j] = 1.0f / s[j];
    for (size_t k = 0; k < len; ++k) {
        float* yr = y + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n)
            hn::StoreU(hn::Mul(hn::LoadU(d, yr + j), hn::Load(d, s + j)), d, yr + j);
        for (; j < w; ++j)
            yr[j] *= s[j];
    }
    for (size_t j = 0; j < w; ++j)
        if (!std::isfinite(m[j]) || !std::isfinite(s[j]))
            scalar_forward(x + j, y + j, len, inner, false);
}

// Log-softmax down w columns in double, as naive and log_softmax_hwy.h's rows (in naive's order
// down each column): a classifier's printed loss shows float32's last digits, which a float32 sum
// of exponentials moves (log_softmax([[1, 1], [3, 3]], axis=0) was 4 ULPs off).
void log_softmax_columns(const float* x, float* y, size_t len, size_t inner, size_t w) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> dh;
    const size_t n = hn::Lanes(dd);
    alignas(HWY_MAX_BYTES) float m[kSoftmaxColumns];
    alignas(HWY_MAX_BYTES) double s[kSoftmaxColumns];
    column_max(x, len, inner, w, m);
    std::fill(s, s + w, 0.0);
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            auto v = hn::Sub(hn::PromoteTo(dd, hn::LoadU(dh, xr + j)),
                             hn::PromoteTo(dd, hn::Load(dh, m + j)));
            // Highway's Exp takes finite lanes above -DBL_MAX: -inf (x = -inf) is clamped to
            // where exp underflows to 0, and a NaN passed on, so that its column is redone below.
            auto e = hn::Exp(dd, hn::Max(v, hn::Set(dd, -800.0)));
            e = hn::IfThenElse(hn::IsNaN(v), v, e);
            hn::Store(hn::Add(hn::Load(dd, s + j), e), dd, s + j);
        }
        for (; j < w; ++j)
            s[j] += std::exp(double(xr[j]) - m[j]);
    }
    for (size_t j = 0; j < w; ++j)
        s[j] = std::log(s[j]);
    for (size_t k = 0; k < len; ++k) {
        const float* xr = x + k * inner;
        float* yr = y + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            auto v = hn::Sub(hn::PromoteTo(dd, hn::LoadU(dh, xr + j)),
                             hn::PromoteTo(dd, hn::Load(dh, m + j)));
            hn::StoreU(hn::DemoteTo(dh, hn::Sub(v, hn::Load(dd, s + j))), dh, yr + j);
        }
        for (; j < w; ++j)
            yr[j] = static_cast<float>(double(xr[j]) - m[j] - s[j]);
    }
    for (size_t j = 0; j < w; ++j)
        if (!std::isfinite(m[j]) || !std::isfinite(s[j]))
            scalar_forward(x + j, y + j, len, inner, true);
}

void SoftmaxCols(const float* x, float* y, size_t len, size_t inner, size_t cb, size_t ce,
                 bool log) {
    if (log)
        log_softmax_columns(x + cb, y + cb, len, inner, ce - cb);
    else
        softmax_columns(x + cb, y + cb, len, inner, ce - cb);
}

// softmax: dx = y (dy - sum(dy y)); log-softmax: dx = dy - exp(y) sum(dy).
void grad_row(const float* y, const float* dy, float* dx, size_t len, bool log) {
    const D d;
    const size_t n = hn::Lanes(d);
    V a0 = hn::Zero(d), a1 = hn::Zero(d);
    size_t i = 0;
    for (; i + 2 * n <= len; i += 2 * n) {
        V g0 = hn::LoadU(d, dy + i), g1 = hn::LoadU(d, dy + i + n);
        if (log) {
            a0 = hn::Add(a0, g0);
            a1 = hn::Add(a1, g1);
        } else {
            a0 = hn::MulAdd(g0, hn::LoadU(d, y + i), a0);
            a1 = hn::MulAdd(g1, hn::LoadU(d, y + i + n), a1);
        }
    }
    for (; i + n <= len; i += n) {
        V g = hn::LoadU(d, dy + i);
        a0 = log ? hn::Add(a0, g) : hn::MulAdd(g, hn::LoadU(d, y + i), a0);
    }
    float acc = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
    for (; i < len; ++i)
        acc += log ? dy[i] : dy[i] * y[i];
    const V va = hn::Set(d, acc);
    for (i = 0; i + n <= len; i += n) {
        V g = hn::LoadU(d, dy + i), v = hn::LoadU(d, y + i);
        V r = log ? hn::NegMulAdd(exp_lanes(d, v), va, g) : hn::Mul(v, hn::Sub(g, va));
        hn::StoreU(r, d, dx + i);
    }
    for (; i < len; ++i)
        dx[i] = log ? dy[i] - std::exp(y[i]) * acc : y[i] * (dy[i] - acc);
}

void SoftmaxGradRows(const float* y, const float* dy, float* dx, size_t rb, size_t re, size_t len,
                     bool log) {
    for (size_t r = rb; r < re; ++r)
        grad_row(y + r * len, dy + r * len, dx + r * len, len, log);
}

void SoftmaxGradCols(const float* y, const float* dy, float* dx, size_t len, size_t inner,
                     size_t cb, size_t ce, bool log) {
    const D d;
    const size_t n = hn::Lanes(d), w = ce - cb;
    alignas(HWY_MAX_BYTES) float a[kSoftmaxColumns];
    std::fill(a, a + w, 0.0f);
    y += cb;
    dy += cb;
    dx += cb;
    for (size_t k = 0; k < len; ++k) {
        const float *yr = y + k * inner, *gr = dy + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            V g = hn::LoadU(d, gr + j), acc = hn::Load(d, a + j);
            acc = log ? hn::Add(acc, g) : hn::MulAdd(g, hn::LoadU(d, yr + j), acc);
            hn::Store(acc, d, a + j);
        }
        for (; j < w; ++j)
            a[j] += log ? gr[j] : gr[j] * yr[j];
    }
    for (size_t k = 0; k < len; ++k) {
        const float *yr = y + k * inner, *gr = dy + k * inner;
        float* xr = dx + k * inner;
        size_t j = 0;
        for (; j + n <= w; j += n) {
            V g = hn::LoadU(d, gr + j), v = hn::LoadU(d, yr + j), acc = hn::Load(d, a + j);
            V r = log ? hn::NegMulAdd(exp_lanes(d, v), acc, g) : hn::Mul(v, hn::Sub(g, acc));
            hn::StoreU(r, d, xr + j);
        }
        for (; j < w; ++j)
            xr[j] = log ? gr[j] - std::exp(yr[j]) * a[j] : yr[j] * (gr[j] - a[j]);
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(SoftmaxRows);
HWY_EXPORT(SoftmaxCols);
HWY_EXPORT(SoftmaxGradRows);
HWY_EXPORT(SoftmaxGradCols);

void softmax_rows(const float* x, float* y, size_t row_begin, size_t row_end, size_t len) {
    HWY_DYNAMIC_DISPATCH(SoftmaxRows)(x, y, row_begin, row_end, len);
}

void softmax_cols(const float* x, float* y, size_t len, size_t inner, size_t col_begin,
                  size_t col_end, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxCols)(x, y, len, inner, col_begin, col_end, log);
}

void softmax_grad_rows(const float* y, const float* dy, float* dx, size_t row_begin, size_t row_end,
                       size_t len, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxGradRows)(y, dy, dx, row_begin, row_end, len, log);
}

void softmax_grad_cols(const float* y, const float* dy, float* dx, size_t len, size_t inner,
                       size_t col_begin, size_t col_end, bool log) {
    HWY_DYNAMIC_DISPATCH(SoftmaxGradCols)(y, dy, dx, len, inner, col_begin, col_end, log);
}

}  // namespace neomeg::dnn::x86
#endif
