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

#include <cmath>

#include "src/x86/group_norm_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DD = hn::ScalableTag<double>;
using DF = hn::Rebind<float, DD>;
using VD = hn::Vec<DD>;

HWY_INLINE VD load(const float* p) {
    return hn::PromoteTo(DD(), hn::LoadU(DF(), p));
}

// Sum of x[0, len) in double: four vector accumulators hide the add latency (naive's one
// sequential sum was latency bound, 0.10x PyTorch).
double run_sum(const float* x, size_t len) {
    const DD d;
    const size_t n = hn::Lanes(d);
    VD s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    size_t i = 0;
    for (; i + 4 * n <= len; i += 4 * n) {
        s0 = hn::Add(s0, load(x + i));
        s1 = hn::Add(s1, load(x + i + n));
        s2 = hn::Add(s2, load(x + i + 2 * n));
        s3 = hn::Add(s3, load(x + i + 3 * n));
    }
    for (; i + n <= len; i += n)
        s0 = hn::Add(s0, load(x + i));
    double s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
    for (; i < len; ++i)
        s += x[i];
    return s;
}

double run_sq_dist(const float* x, size_t len, double mu) {
    const DD d;
    const size_t n = hn::Lanes(d);
    const VD m = hn::Set(d, mu);
    VD s0 = hn::Zero(d), s1 = hn::Zero(d), s2 = hn::Zero(d), s3 = hn::Zero(d);
    size_t i = 0;
    for (; i + 4 * n <= len; i += 4 * n) {
        VD a = hn::Sub(load(x + i), m), b = hn::Sub(load(x + i + n), m);
        VD c = hn::Sub(load(x + i + 2 * n), m), e = hn::Sub(load(x + i + 3 * n), m);
        s0 = hn::MulAdd(a, a, s0);
        s1 = hn::MulAdd(b, b, s1);
        s2 = hn::MulAdd(c, c, s2);
        s3 = hn::MulAdd(e, e, s3);
    }
    for (; i + n <= len; i += n) {
        VD a = hn::Sub(load(x + i), m);
        s0 = hn::MulAdd(a, a, s0);
    }
    double s = hn::GetLane(hn::SumOfLanes(d, hn::Add(hn::Add(s0, s1), hn::Add(s2, s3))));
    for (; i < len; ++i) {
        double c = x[i] - mu;
        s += c * c;
    }
    return s;
}

// One channel's elements: naive's y = (x - mean) * rstd, then y * w + b, each operation rounded
// in double (the file is built with -ffp-contract=off), so equal moments give naive's bits.
void channel(const float* x, float* y, size_t len, double mu, double rs, bool affine, double w,
             double b) {
    const DD d;
    const DF df;
    const size_t n = hn::Lanes(d);
    const VD m = hn::Set(d, mu), s = hn::Set(d, rs), vw = hn::Set(d, w), vb = hn::Set(d, b);
    size_t i = 0;
    for (; i + n <= len; i += n) {
        VD v = hn::Mul(hn::Sub(load(x + i), m), s);
        if (affine)
            v = hn::Add(hn::Mul(v, vw), vb);
        hn::StoreU(hn::DemoteTo(df, v), df, y + i);
    }
    for (; i < len; ++i) {
        double v = (x[i] - mu) * rs;
        if (affine)
            v = v * w + b;
        y[i] = static_cast<float>(v);
    }
}

void GroupNormRuns(const float* x, const float* weight, const float* bias, float* y, float* mean,
                   float* rstd, size_t begin, size_t end, size_t group, size_t cpg, size_t spatial,
                   double eps) {
    const size_t size = cpg * spatial;
    for (size_t r = begin; r < end; ++r) {
        const float* xr = x + r * size;
        double mu = 0, var = 0;
        if (size) {
            mu = run_sum(xr, size) / double(size);
            var = run_sq_dist(xr, size, mu) / double(size);
        }
        const double rs = 1.0 / std::sqrt(var + eps);
        const size_t c0 = (r % group) * cpg;
        for (size_t k = 0; k < cpg; ++k) {
            const size_t c = c0 + k;
            channel(xr + k * spatial, y + r * size + k * spatial, spatial, mu, rs,
                    weight != nullptr, weight ? double(weight[c]) : 1.0,
                    bias ? double(bias[c]) : 0.0);
        }
        mean[r] = static_cast<float>(mu);
        rstd[r] = static_cast<float>(rs);
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(GroupNormRuns);

void group_norm_runs(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, size_t begin, size_t end, size_t group, size_t cpg,
                     size_t spatial, double eps) {
    HWY_DYNAMIC_DISPATCH(GroupNormRuns)
    (x, weight, bias, y, mean, rstd, begin, end, group, cpg, spatial, eps);
}

}  // namespace neomeg::dnn::x86
#endif  // HWY_ONCE
