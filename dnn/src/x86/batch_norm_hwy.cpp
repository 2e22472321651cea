// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/batch_norm_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include "src/x86/batch_norm_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DD = hn::ScalableTag<double>;
using DF = hn::Rebind<float, DD>;

HWY_INLINE hn::Vec<DD> load(const float* p) {
    return hn::PromoteTo(DD(), hn::LoadU(DF(), p));
}

HWY_INLINE double sum_lanes(hn::Vec<DD> v) {
    double lane[64];  // more than any x86 vector's lanes
    hn::StoreU(v, DD(), lane);
    double s = 0;
    for (size_t j = 0; j < hn::Lanes(DD()); ++j)
        s += lane[j];
    return s;
}

// Calls f(vector index i) over each row's full vectors and g(i) over its tail.
template <class F, class G>
HWY_INLINE void for_each(ChannelRows r, F&& f, G&& g) {
    const size_t lanes = hn::Lanes(DD());
    for (size_t n = 0; n < r.rows; ++n) {
        size_t base = n * r.row_stride, i = 0;
        for (; i + lanes <= r.len; i += lanes)
            f(base + i);
        for (; i < r.len; ++i)
            g(base + i);
    }
}

void Moments(const float* src, ChannelRows r, double* mean, double* var) {
    const DD dd;
    const double count = double(r.rows * r.len);
    auto acc = hn::Zero(dd);
    double tail = 0;
    for_each(
            r, [&](size_t i) { acc = hn::Add(acc, load(src + i)); },
            [&](size_t i) { tail += src[i]; });
    const double m = (sum_lanes(acc) + tail) / count;
    const auto vm = hn::Set(dd, m);
    acc = hn::Zero(dd);
    tail = 0;
    for_each(
            r,
            [&](size_t i) {
                auto c = hn::Sub(load(src + i), vm);
                acc = hn::MulAdd(c, c, acc);
            },
            [&](size_t i) {
                double c = src[i] - m;
                tail += c * c;
            });
    *mean = m;
    *var = (sum_lanes(acc) + tail) / count;
}

void Normalize(const float* src, float* dst, ChannelRows r, double mean, double inv_std,
               double scale, double bias) {
    const DD dd;
    const DF df;
    const auto vm = hn::Set(dd, mean), vi = hn::Set(dd, inv_std), vs = hn::Set(dd, scale),
               vb = hn::Set(dd, bias);
    for_each(
            r,
            [&](size_t i) {
                auto y = hn::Add(hn::Mul(hn::Mul(hn::Sub(load(src + i), vm), vi), vs), vb);
                hn::StoreU(hn::DemoteTo(df, y), df, dst + i);
            },
            [&](size_t i) {
                dst[i] = static_cast<float>((src[i] - mean) * inv_std * scale + bias);
            });
}

void GradSums(const float* dy, const float* src, ChannelRows r, double mean, double inv_std,
              double* dbias, double* dscale) {
    const DD dd;
    const auto vm = hn::Set(dd, mean), vi = hn::Set(dd, inv_std);
    auto sb = hn::Zero(dd), ss = hn::Zero(dd);
    double tb = 0, ts = 0;
    for_each(
            r,
            [&](size_t i) {
                auto g = load(dy + i);
                sb = hn::Add(sb, g);
                ss = hn::Add(ss, hn::Mul(hn::Mul(g, hn::Sub(load(src + i), vm)), vi));
            },
            [&](size_t i) {
                tb += dy[i];
                ts += dy[i] * (src[i] - mean) * inv_std;
            });
    *dbias = sum_lanes(sb) + tb;
    *dscale = sum_lanes(ss) + ts;
}

void Grad(const float* dy, const float* src, float* grad, ChannelRows r, double mean,
          double inv_std, double scale, double dbias, double dscale, bool training) {
    const DD dd;
    const DF df;
    const double count = double(r.rows * r.len), k = scale * inv_std;
    const auto vm = hn::Set(dd, mean), vi = hn::Set(dd, inv_std), vk = hn::Set(dd, k),
               vdb = hn::Set(dd, dbias), vds = hn::Set(dd, dscale), vc = hn::Set(dd, count);
    for_each(
            r,
            [&](size_t i) {
                auto g = load(dy + i);
                if (training) {
                    auto xhat = hn::Mul(hn::Sub(load(src + i), vm), vi);
                    g = hn::Sub(g, hn::Div(hn::Add(vdb, hn::Mul(xhat, vds)), vc));
                }
                hn::StoreU(hn::DemoteTo(df, hn::Mul(vk, g)), df, grad + i);
            },
            [&](size_t i) {
                double g = dy[i];
                if (training) {
                    double xhat = (src[i] - mean) * inv_std;
                    g = g - (dbias + xhat * dscale) / count;
                }
                grad[i] = static_cast<float>(k * g);
            });
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Moments);
HWY_EXPORT(Normalize);
HWY_EXPORT(GradSums);
HWY_EXPORT(Grad);

void bn_moments(const float* src, ChannelRows r, double* mean, double* var) {
    HWY_DYNAMIC_DISPATCH(Moments)(src, r, mean, var);
}

void bn_normalize(const float* src, float* dst, ChannelRows r, double mean, double inv_std,
                  double scale, double bias) {
    HWY_DYNAMIC_DISPATCH(Normalize)(src, dst, r, mean, inv_std, scale, bias);
}

void bn_grad_sums(const float* dy, const float* src, ChannelRows r, double mean, double inv_std,
                  double* dbias, double* dscale) {
    HWY_DYNAMIC_DISPATCH(GradSums)(dy, src, r, mean, inv_std, dbias, dscale);
}

void bn_grad(const float* dy, const float* src, float* grad, ChannelRows r, double mean,
             double inv_std, double scale, double dbias, double dscale, bool training) {
    HWY_DYNAMIC_DISPATCH(Grad)(dy, src, grad, r, mean, inv_std, scale, dbias, dscale, training);
}

}  // namespace neomeg::dnn::x86
#endif
