// Highway compiles this file once per instruction set; see elemwise_hwy.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/batch_norm_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
#include "src/x86/lowp_cvt_hwy-inl.h"
// clang-format on

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "neomeg/dnn/dtype.h"
#include "src/x86/batch_norm_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DD = hn::ScalableTag<double>;
using DF = hn::Rebind<float, DD>;

using DI32 = hn::Rebind<int32_t, DD>;

// The data's element: float, or the bits of a float16 or bfloat16.
template <BnData K>
using Elem = std::conditional_t<K == BnData::F32, float, uint16_t>;

// Lanes of p widened to double: 16-bit values exactly, as naive's loads (NaN payloads aside, which
// never reach a result: every output NaN is rounded to the dtype's one NaN).
template <BnData K>
HWY_INLINE hn::Vec<DD> load(const Elem<K>* p) {
    if constexpr (K == BnData::F32) {
        return hn::PromoteTo(DD(), hn::LoadU(DF(), p));
    } else {
        const DI32 di;
        auto h = load_narrow(di, p);
        auto f = K == BnData::BF16 ? hn::BitCast(DF(), hn::ShiftLeft<16>(h)) : f32_from_f16(di, h);
        return hn::PromoteTo(DD(), f);
    }
}

template <BnData K>
HWY_INLINE double scalar(const Elem<K>* p) {
    if constexpr (K == BnData::F32) {
        return *p;
    } else if constexpr (K == BnData::BF16) {
        uint32_t bits = uint32_t(*p) << 16;
        float f;
        std::memcpy(&f, &bits, sizeof f);
        return f;
    } else {
        return static_cast<float>(Eigen::numext::bit_cast<Eigen::half>(*p));
    }
}

// y rounded to float, then to the 16-bit dtype (to nearest even): naive's store.
template <BnData K>
HWY_INLINE void store(hn::Vec<DD> y, Elem<K>* p) {
    auto f = hn::DemoteTo(DF(), y);
    if constexpr (K == BnData::F32) {
        hn::StoreU(f, DF(), p);
    } else {
        const DI32 di;
        store_narrow(di, K == BnData::BF16 ? bf16_bits(di, f) : f16_bits(di, f), p);
    }
}

template <BnData K>
HWY_INLINE void store_scalar(double y, Elem<K>* p) {
    float f = static_cast<float>(y);
    if constexpr (K == BnData::F32)
        *p = f;
    else if constexpr (K == BnData::BF16)
        *p = Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(f));
    else
        *p = Eigen::numext::bit_cast<uint16_t>(Eigen::half(f));
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

// Calls f(vector index i, accumulator j < 4) over each row's full vectors, four consecutive
// vectors going to four accumulators (one chain of dependent double additions per sum was
// latency-bound over a channel in L2), and g(i) over the row's tail.
template <class F, class G>
HWY_INLINE void for_each4(ChannelRows r, F&& f, G&& g) {
    const size_t lanes = hn::Lanes(DD());
    for (size_t n = 0; n < r.rows; ++n) {
        size_t base = n * r.row_stride, i = 0;
        for (; i + 4 * lanes <= r.len; i += 4 * lanes) {
            f(base + i, 0);
            f(base + i + lanes, 1);
            f(base + i + 2 * lanes, 2);
            f(base + i + 3 * lanes, 3);
        }
        for (; i + lanes <= r.len; i += lanes)
            f(base + i, 0);
        for (; i < r.len; ++i)
            g(base + i);
    }
}

// The sum of four accumulators' lanes.
HWY_INLINE double sum_lanes(const hn::Vec<DD> (&acc)[4]) {
    return sum_lanes(hn::Add(hn::Add(acc[0], acc[1]), hn::Add(acc[2], acc[3])));
}

template <BnData K>
void MomentsT(const Elem<K>* src, ChannelRows r, double* mean, double* var) {
    const DD dd;
    const double count = double(r.rows * r.len);
    hn::Vec<DD> acc[4] = {hn::Zero(dd), hn::Zero(dd), hn::Zero(dd), hn::Zero(dd)};
    double tail = 0;
    for_each4(
            r, [&](size_t i, int j) { acc[j] = hn::Add(acc[j], load<K>(src + i)); },
            [&](size_t i) { tail += scalar<K>(src + i); });
    const double m = (sum_lanes(acc) + tail) / count;
    const auto vm = hn::Set(dd, m);
    for (auto& a : acc)
        a = hn::Zero(dd);
    tail = 0;
    for_each4(
            r,
            [&](size_t i, int j) {
                auto c = hn::Sub(load<K>(src + i), vm);
                acc[j] = hn::MulAdd(c, c, acc[j]);
            },
            [&](size_t i) {
                double c = scalar<K>(src + i) - m;
                tail += c * c;
            });
    *mean = m;
    *var = (sum_lanes(acc) + tail) / count;
}

template <BnData K>
void NormalizeT(const Elem<K>* src, Elem<K>* dst, ChannelRows r, double mean, double inv_std,
                double scale, double bias) {
    const DD dd;
    const auto vm = hn::Set(dd, mean), vi = hn::Set(dd, inv_std), vs = hn::Set(dd, scale),
               vb = hn::Set(dd, bias);
    for_each(
            r,
            [&](size_t i) {
                auto y = hn::Add(hn::Mul(hn::Mul(hn::Sub(load<K>(src + i), vm), vi), vs), vb);
                store<K>(y, dst + i);
            },
            [&](size_t i) {
                store_scalar<K>((scalar<K>(src + i) - mean) * inv_std * scale + bias, dst + i);
            });
}

template <BnData K>
void GradSumsT(const Elem<K>* dy, const Elem<K>* src, ChannelRows r, double mean, double inv_std,
               double* dbias, double* dscale) {
    const DD dd;
    const auto vm = hn::Set(dd, mean), vi = hn::Set(dd, inv_std);
    hn::Vec<DD> sb[4] = {hn::Zero(dd), hn::Zero(dd), hn::Zero(dd), hn::Zero(dd)};
    hn::Vec<DD> ss[4] = {hn::Zero(dd), hn::Zero(dd), hn::Zero(dd), hn::Zero(dd)};
    double tb = 0, ts = 0;
    for_each4(
            r,
            [&](size_t i, int j) {
                auto g = load<K>(dy + i);
                sb[j] = hn::Add(sb[j], g);
                ss[j] = hn::Add(ss[j], hn::Mul(hn::Mul(g, hn::Sub(load<K>(src + i), vm)), vi));
            },
            [&](size_t i) {
                double g = scalar<K>(dy + i);
                tb += g;
                ts += g * (scalar<K>(src + i) - mean) * inv_std;
            });
    *dbias = sum_lanes(sb) + tb;
    *dscale = sum_lanes(ss) + ts;
}

template <BnData K>
void GradT(const Elem<K>* dy, const Elem<K>* src, Elem<K>* grad, ChannelRows r, double mean,
           double inv_std, double scale, double dbias, double dscale, bool training) {
    const DD dd;
    const double count = double(r.rows * r.len), k = scale * inv_std;
    const auto vm = hn::Set(dd, mean), vi = hn::Set(dd, inv_std), vk = hn::Set(dd, k),
               vdb = hn::Set(dd, dbias), vds = hn::Set(dd, dscale), vc = hn::Set(dd, count);
    for_each(
            r,
            [&](size_t i) {
                auto g = load<K>(dy + i);
                if (training) {
                    auto xhat = hn::Mul(hn::Sub(load<K>(src + i), vm), vi);
                    g = hn::Sub(g, hn::Div(hn::Add(vdb, hn::Mul(xhat, vds)), vc));
                }
                store<K>(hn::Mul(vk, g), grad + i);
            },
            [&](size_t i) {
                double g = scalar<K>(dy + i);
                if (training) {
                    double xhat = (scalar<K>(src + i) - mean) * inv_std;
                    g = g - (dbias + xhat * dscale) / count;
                }
                store_scalar<K>(k * g, grad + i);
            });
}

// The kernels on untyped pointers, dispatched on the data's kind.
#define NEOMEG_BN_DISPATCH(kind, call)           \
    switch (kind) {                              \
        case BnData::F32:                        \
            return call(BnData::F32, float);     \
        case BnData::BF16:                       \
            return call(BnData::BF16, uint16_t); \
        case BnData::F16:                        \
            return call(BnData::F16, uint16_t);  \
    }

void Moments(BnData kind, const void* src, ChannelRows r, double* mean, double* var) {
#define CALL(K, T) MomentsT<K>(static_cast<const T*>(src), r, mean, var)
    NEOMEG_BN_DISPATCH(kind, CALL)
#undef CALL
}

void Normalize(BnData kind, const void* src, void* dst, ChannelRows r, double mean, double inv_std,
               double scale, double bias) {
#define CALL(K, T) \
    NormalizeT<K>(static_cast<const T*>(src), static_cast<T*>(dst), r, mean, inv_std, scale, bias)
    NEOMEG_BN_DISPATCH(kind, CALL)
#undef CALL
}

void GradSums(BnData kind, const void* dy, const void* src, ChannelRows r, double mean,
              double inv_std, double* dbias, double* dscale) {
#define CALL(K, T)                                                                               \
    GradSumsT<K>(static_cast<const T*>(dy), static_cast<const T*>(src), r, mean, inv_std, dbias, \
                 dscale)
    NEOMEG_BN_DISPATCH(kind, CALL)
#undef CALL
}

void Grad(BnData kind, const void* dy, const void* src, void* grad, ChannelRows r, double mean,
          double inv_std, double scale, double dbias, double dscale, bool training) {
#define CALL(K, T)                                                                            \
    GradT<K>(static_cast<const T*>(dy), static_cast<const T*>(src), static_cast<T*>(grad), r, \
             mean, inv_std, scale, dbias, dscale, training)
    NEOMEG_BN_DISPATCH(kind, CALL)
#undef CALL
}
#undef NEOMEG_BN_DISPATCH

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {

HWY_EXPORT(Moments);
HWY_EXPORT(Normalize);
HWY_EXPORT(GradSums);
HWY_EXPORT(Grad);

void bn_moments(BnData kind, const void* src, ChannelRows r, double* mean, double* var) {
    HWY_DYNAMIC_DISPATCH(Moments)(kind, src, r, mean, var);
}

void bn_normalize(BnData kind, const void* src, void* dst, ChannelRows r, double mean,
                  double inv_std, double scale, double bias) {
    HWY_DYNAMIC_DISPATCH(Normalize)(kind, src, dst, r, mean, inv_std, scale, bias);
}

void bn_grad_sums(BnData kind, const void* dy, const void* src, ChannelRows r, double mean,
                  double inv_std, double* dbias, double* dscale) {
    HWY_DYNAMIC_DISPATCH(GradSums)(kind, dy, src, r, mean, inv_std, dbias, dscale);
}

void bn_grad(BnData kind, const void* dy, const void* src, void* grad, ChannelRows r, double mean,
             double inv_std, double scale, double dbias, double dscale, bool training) {
    HWY_DYNAMIC_DISPATCH(Grad)
    (kind, dy, src, grad, r, mean, inv_std, scale, dbias, dscale, training);
}

}  // namespace neomeg::dnn::x86
#endif
