// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/group_norm_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <hwy/cache_control.h>

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "src/x86/group_norm_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using D = hn::ScalableTag<float>;
using V = hn::Vec<D>;

// Each of the four float accumulators takes at most this many vectors before its block is added
// into a double: a float sum of k terms errs by at most (k - 1) units of its last place per term
// magnitude, so blocks of 16 (plus the 5 roundings of adding the accumulators and their lanes)
// keep a sum within 21 * 2^-24 of the sum of the magnitudes at any run length and any vector
// width.
constexpr size_t kBlockVectors = 16;

HWY_INLINE double lanes_sum(D d, V a0, V a1, V a2, V a3) {
    return hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(a0, a1), hn::Add(a2, a3))));
}

// The end of the block that starts at i: four accumulators of kBlockVectors vectors, or what is
// left of [0, len) in whole groups of four vectors (the last three vectors at most, then the
// scalars, are summed apart).
HWY_INLINE size_t block_end(size_t i, size_t len, size_t n) {
    size_t quads = std::min(kBlockVectors, (len - i) / (4 * n));
    return i + quads * 4 * n;
}

// Sum of x[0, len).
double sum(const float* x, size_t len) {
    const D d;
    const size_t n = hn::Lanes(d);
    double s = 0;
    size_t i = 0;
    while (i + 4 * n <= len) {
        V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
        for (const size_t end = block_end(i, len, n); i < end; i += 4 * n) {
            a0 = hn::Add(a0, hn::LoadU(d, x + i));
            a1 = hn::Add(a1, hn::LoadU(d, x + i + n));
            a2 = hn::Add(a2, hn::LoadU(d, x + i + 2 * n));
            a3 = hn::Add(a3, hn::LoadU(d, x + i + 3 * n));
        }
        s += lanes_sum(d, a0, a1, a2, a3);
    }
    V a = hn::Zero(d);
    for (; i + n <= len; i += n)
        a = hn::Add(a, hn::LoadU(d, x + i));
    s += hn::GetLane(hn::SumOfLanes(d, a));
    for (; i < len; ++i)
        s += x[i];
    return s;
}

// s1 += sum of (x - m), s2 += sum of (x - m)^2 over x[0, len); m is near the mean, so each
// difference is exact or nearly (the inputs' own spread) and the squares do not cancel.
void dist_sums(const float* x, size_t len, float m, double& s1, double& s2) {
    const D d;
    const size_t n = hn::Lanes(d);
    const V vm = hn::Set(d, m);
    size_t i = 0;
    while (i + 4 * n <= len) {
        V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
        V q0 = hn::Zero(d), q1 = hn::Zero(d), q2 = hn::Zero(d), q3 = hn::Zero(d);
        for (const size_t end = block_end(i, len, n); i < end; i += 4 * n) {
            V e0 = hn::Sub(hn::LoadU(d, x + i), vm), e1 = hn::Sub(hn::LoadU(d, x + i + n), vm);
            V e2 = hn::Sub(hn::LoadU(d, x + i + 2 * n), vm);
            V e3 = hn::Sub(hn::LoadU(d, x + i + 3 * n), vm);
            a0 = hn::Add(a0, e0);
            a1 = hn::Add(a1, e1);
            a2 = hn::Add(a2, e2);
            a3 = hn::Add(a3, e3);
            q0 = hn::MulAdd(e0, e0, q0);
            q1 = hn::MulAdd(e1, e1, q1);
            q2 = hn::MulAdd(e2, e2, q2);
            q3 = hn::MulAdd(e3, e3, q3);
        }
        s1 += lanes_sum(d, a0, a1, a2, a3);
        s2 += lanes_sum(d, q0, q1, q2, q3);
    }
    V a = hn::Zero(d), q = hn::Zero(d);
    for (; i + n <= len; i += n) {
        V e = hn::Sub(hn::LoadU(d, x + i), vm);
        a = hn::Add(a, e);
        q = hn::MulAdd(e, e, q);
    }
    s1 += hn::GetLane(hn::SumOfLanes(d, a));
    s2 += hn::GetLane(hn::SumOfLanes(d, q));
    for (; i < len; ++i) {
        const float e = x[i] - m;
        s1 += e;
        s2 += double(e) * e;
    }
}

// a += sum of dy, b += sum of dy * (x - m) over [0, len).
void grad_sums(const float* dy, const float* x, size_t len, float m, double& a, double& b) {
    const D d;
    const size_t n = hn::Lanes(d);
    const V vm = hn::Set(d, m);
    size_t i = 0;
    while (i + 4 * n <= len) {
        V a0 = hn::Zero(d), a1 = hn::Zero(d), a2 = hn::Zero(d), a3 = hn::Zero(d);
        V b0 = hn::Zero(d), b1 = hn::Zero(d), b2 = hn::Zero(d), b3 = hn::Zero(d);
        for (const size_t end = block_end(i, len, n); i < end; i += 4 * n) {
            V g0 = hn::LoadU(d, dy + i), g1 = hn::LoadU(d, dy + i + n);
            V g2 = hn::LoadU(d, dy + i + 2 * n), g3 = hn::LoadU(d, dy + i + 3 * n);
            a0 = hn::Add(a0, g0);
            a1 = hn::Add(a1, g1);
            a2 = hn::Add(a2, g2);
            a3 = hn::Add(a3, g3);
            b0 = hn::MulAdd(g0, hn::Sub(hn::LoadU(d, x + i), vm), b0);
            b1 = hn::MulAdd(g1, hn::Sub(hn::LoadU(d, x + i + n), vm), b1);
            b2 = hn::MulAdd(g2, hn::Sub(hn::LoadU(d, x + i + 2 * n), vm), b2);
            b3 = hn::MulAdd(g3, hn::Sub(hn::LoadU(d, x + i + 3 * n), vm), b3);
        }
        a += lanes_sum(d, a0, a1, a2, a3);
        b += lanes_sum(d, b0, b1, b2, b3);
    }
    V va = hn::Zero(d), vb = hn::Zero(d);
    for (; i + n <= len; i += n) {
        V g = hn::LoadU(d, dy + i);
        va = hn::Add(va, g);
        vb = hn::MulAdd(g, hn::Sub(hn::LoadU(d, x + i), vm), vb);
    }
    a += hn::GetLane(hn::SumOfLanes(d, va));
    b += hn::GetLane(hn::SumOfLanes(d, vb));
    for (; i < len; ++i) {
        a += dy[i];
        b += double(dy[i]) * (x[i] - m);
    }
}

// Stores v at p, y's or dx's element i: non-temporal where `stream` (p then is vector aligned).
HWY_INLINE void store(D d, V v, float* p, bool stream) {
    if (stream)
        hn::Stream(v, d, p);
    else
        hn::StoreU(v, d, p);
}

// Elements before out's first vector-aligned one (all of [0, len) where there are fewer): the
// non-temporal stores need aligned addresses.
HWY_INLINE size_t head(D d, const float* out, size_t len, bool stream) {
    if (!stream)
        return 0;
    const size_t bytes = hn::Lanes(d) * sizeof(float);
    return std::min(len,
                    (bytes - reinterpret_cast<uintptr_t>(out) % bytes) % bytes / sizeof(float));
}

// y = (x - m) * s + t over [0, len).
void scale_shift(const float* x, float* y, size_t len, float m, float s, float t, bool stream) {
    const D d;
    const size_t n = hn::Lanes(d);
    const V vm = hn::Set(d, m), vs = hn::Set(d, s), vt = hn::Set(d, t);
    size_t i = 0;
    for (const size_t h = head(d, y, len, stream); i < h; ++i)
        y[i] = std::fma(x[i] - m, s, t);
    for (; i + 2 * n <= len; i += 2 * n) {
        store(d, hn::MulAdd(hn::Sub(hn::LoadU(d, x + i), vm), vs, vt), y + i, stream);
        store(d, hn::MulAdd(hn::Sub(hn::LoadU(d, x + i + n), vm), vs, vt), y + i + n, stream);
    }
    for (; i + n <= len; i += n)
        store(d, hn::MulAdd(hn::Sub(hn::LoadU(d, x + i), vm), vs, vt), y + i, stream);
    for (; i < len; ++i)
        y[i] = std::fma(x[i] - m, s, t);
}

// dx = dy * p + (x - m) * q + t over [0, len).
void grad_elems(const float* dy, const float* x, float* dx, size_t len, float m, float p, float q,
                float t, bool stream) {
    const D d;
    const size_t n = hn::Lanes(d);
    const V vm = hn::Set(d, m), vp = hn::Set(d, p), vq = hn::Set(d, q), vt = hn::Set(d, t);
    size_t i = 0;
    for (const size_t h = head(d, dx, len, stream); i < h; ++i)
        dx[i] = std::fma(dy[i], p, std::fma(x[i] - m, q, t));
    for (; i + n <= len; i += n) {
        V u = hn::MulAdd(hn::Sub(hn::LoadU(d, x + i), vm), vq, vt);
        store(d, hn::MulAdd(hn::LoadU(d, dy + i), vp, u), dx + i, stream);
    }
    for (; i < len; ++i)
        dx[i] = std::fma(dy[i], p, std::fma(x[i] - m, q, t));
}

void GroupNormRuns(const float* x, const float* weight, const float* bias, float* y, float* mean,
                   float* rstd, size_t begin, size_t end, size_t group, size_t cpg, size_t spatial,
                   double eps, bool stream) {
    const size_t size = cpg * spatial;
    for (size_t r = begin; r < end; ++r) {
        const float* xr = x + r * size;
        // The mean in two steps: a first estimate m, then the mean of the distances from it,
        // which also gives the variance without the cancellation of sum(x^2) - sum(x)^2 / n.
        double shift = 0, var = 0;
        float m = 0;
        if (size) {
            m = static_cast<float>(sum(xr, size) / double(size));
            double s1 = 0, s2 = 0;
            dist_sums(xr, size, m, s1, s2);
            shift = s1 / double(size);
            var = std::max(0.0, s2 / double(size) - shift * shift);
        }
        const double rs = 1.0 / std::sqrt(var + eps);
        // y = (x - m) * a + t per channel: a = rstd * w, t = b - shift * a, the part of the mean
        // that m lacks folded into t in double: no term cancels another, whatever the mean.
        const size_t c0 = (r % group) * cpg;
        for (size_t k = 0; k < cpg; ++k) {
            const double a = weight ? rs * double(weight[c0 + k]) : rs;
            const double t = (weight ? double(bias[c0 + k]) : 0.0) - shift * a;
            scale_shift(xr + k * spatial, y + r * size + k * spatial, spatial, m,
                        static_cast<float>(a), static_cast<float>(t), stream);
        }
        mean[r] = static_cast<float>(double(m) + shift);
        rstd[r] = static_cast<float>(rs);
    }
    if (stream)
        hwy::FlushStream();
}

void GroupNormGradRuns(const float* dy, const float* x, const float* mean, const float* rstd,
                       const float* weight, float* dx, double* sums, size_t begin, size_t end,
                       size_t group, size_t cpg, size_t spatial, bool stream) {
    const size_t size = cpg * spatial;
    for (size_t r = begin; r < end; ++r) {
        const size_t base = r * size, c0 = (r % group) * cpg;
        const float m = mean[r];
        const double rs = rstd[r];
        // Per channel: sum(dy) and rstd * sum(dy * (x - mean)) = sum(dy * xhat), dbias's and
        // dweight's parts; weighted, they sum to the run's sum(g) and sum(g * xhat), g = dy * w.
        double* cs = sums + 2 * r * cpg;
        double sg = 0, sgx = 0;
        for (size_t k = 0; k < cpg; ++k) {
            double a = 0, b = 0;
            grad_sums(dy + base + k * spatial, x + base + k * spatial, spatial, m, a, b);
            b *= rs;
            cs[2 * k] = a;
            cs[2 * k + 1] = b;
            const double w = weight ? double(weight[c0 + k]) : 1.0;
            sg += w * a;
            sgx += w * b;
        }
        // dx = rstd * (g - mean(g) - xhat * mean(g * xhat))
        //    = dy * (rstd * w) + (x - mean) * (-rstd^2 * mean(g * xhat)) - rstd * mean(g).
        const double inv = size ? 1.0 / double(size) : 0.0;
        const auto q = static_cast<float>(-rs * rs * sgx * inv);
        const auto t = static_cast<float>(-rs * sg * inv);
        for (size_t k = 0; k < cpg; ++k) {
            const double w = weight ? double(weight[c0 + k]) : 1.0;
            grad_elems(dy + base + k * spatial, x + base + k * spatial, dx + base + k * spatial,
                       spatial, m, static_cast<float>(rs * w), q, t, stream);
        }
    }
    if (stream)
        hwy::FlushStream();
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(GroupNormRuns);
HWY_EXPORT(GroupNormGradRuns);

void group_norm_runs(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, size_t begin, size_t end, size_t group, size_t cpg,
                     size_t spatial, double eps, bool stream) {
    HWY_DYNAMIC_DISPATCH(GroupNormRuns)
    (x, weight, bias, y, mean, rstd, begin, end, group, cpg, spatial, eps, stream);
}

void group_norm_grad_runs(const float* dy, const float* x, const float* mean, const float* rstd,
                          const float* weight, float* dx, double* sums, size_t begin, size_t end,
                          size_t group, size_t cpg, size_t spatial, bool stream) {
    HWY_DYNAMIC_DISPATCH(GroupNormGradRuns)
    (dy, x, mean, rstd, weight, dx, sums, begin, end, group, cpg, spatial, stream);
}

}  // namespace neomeg::dnn::x86
#endif  // HWY_ONCE
