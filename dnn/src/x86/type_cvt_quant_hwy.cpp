// Highway compiles this file once per instruction set; see elemwise_hwy.cpp. Built with
// -ffp-contract=off (dnn/CMakeLists.txt), so that each product, quotient and difference rounds
// on its own as naive's scalar ones do.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS (HWY_SSSE3 | HWY_SSE4 | HWY_AVX3_DL)
#endif

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "src/x86/type_cvt_quant_hwy.cpp"
#include <hwy/foreach_target.h>  // IWYU pragma: keep
// clang-format off: highway.h must follow foreach_target.h
#include <hwy/highway.h>
// clang-format on

#include <cstdint>
#include <cstring>
#include <limits>
#include <optional>

#include "src/x86/type_cvt_quant_hwy.h"

// The storage, scale and zero point of a dtype handled here, outside the per-target namespaces
// (this file is compiled once per target) so that every target's Convert has one signature.
#ifndef NEOMEG_X86_TYPE_CVT_QUANT_TYPES
#define NEOMEG_X86_TYPE_CVT_QUANT_TYPES
namespace neomeg::dnn::x86::quant_cvt {
enum class Kind { F32, S8, U8, S32 };
struct Q {
    Kind kind;
    float scale;
    int32_t zero;
};
}  // namespace neomeg::dnn::x86::quant_cvt
#endif

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

using DI = hn::ScalableTag<int32_t>;
using DF = hn::RebindToFloat<DI>;
using VI = hn::Vec<DI>;
using VF = hn::Vec<DF>;

using quant_cvt::Kind;
using quant_cvt::Q;

HWY_INLINE VF load_value(const Q& q, const void* p) {
    const DI di;
    const DF df;
    VI v;
    switch (q.kind) {
        case Kind::F32:
            return hn::LoadU(df, static_cast<const float*>(p));
        case Kind::S8:
            v = hn::PromoteTo(di,
                              hn::LoadU(hn::Rebind<int8_t, DI>(), static_cast<const int8_t*>(p)));
            break;
        case Kind::U8:
            v = hn::PromoteTo(di,
                              hn::LoadU(hn::Rebind<uint8_t, DI>(), static_cast<const uint8_t*>(p)));
            break;
        case Kind::S32:
            v = hn::LoadU(di, static_cast<const int32_t*>(p));
            break;
    }
    // v - zero fits int32 here (naive computes it in int64): 8-bit v, or int32 v with zero 0.
    return hn::Mul(hn::ConvertTo(df, hn::Sub(v, hn::Set(di, q.zero))), hn::Set(df, q.scale));
}

// quantize_value: round(x * (1 / scale)) halves away from zero (x - trunc(x) is exact), + zero
// point, saturated to the storage; NaN -> zero point.
HWY_INLINE void store_value(const Q& q, VF x, void* p) {
    const DI di;
    const DF df;
    if (q.kind == Kind::F32) {
        hn::StoreU(x, df, static_cast<float*>(p));
        return;
    }
    x = hn::Mul(x, hn::Set(df, 1.0f / q.scale));
    const VF t = hn::Trunc(x);
    const auto up = hn::Ge(hn::Abs(hn::Sub(x, t)), hn::Set(df, 0.5f));
    x = hn::IfThenElse(up, hn::Add(t, hn::CopySign(hn::Set(df, 1.0f), x)), t);
    const auto nan = hn::RebindMask(di, hn::IsNaN(x));
    VI v;
    if (q.kind == Kind::S32) {
        // Zero point 0: x itself, saturated; float(INT32_MAX) is 2^31, above every int32.
        v = hn::ConvertTo(di, x);
        v = hn::IfThenElse(hn::RebindMask(di, hn::Ge(x, hn::Set(df, 2147483648.0f))),
                           hn::Set(di, std::numeric_limits<int32_t>::max()), v);
        v = hn::IfThenElse(hn::RebindMask(di, hn::Lt(x, hn::Set(df, -2147483648.0f))),
                           hn::Set(di, std::numeric_limits<int32_t>::min()), v);
    } else {
        const float lo = q.kind == Kind::S8 ? -128.f : 0.f, hi = q.kind == Kind::S8 ? 127.f : 255.f;
        const auto z = static_cast<float>(q.zero);
        x = hn::Max(hn::Min(x, hn::Set(df, hi - z)), hn::Set(df, lo - z));
        v = hn::Add(hn::ConvertTo(di, x), hn::Set(di, q.zero));
    }
    v = hn::IfThenElse(nan, hn::Set(di, q.zero), v);
    switch (q.kind) {
        case Kind::S8:
            hn::StoreU(hn::DemoteTo(hn::Rebind<int8_t, DI>(), v), hn::Rebind<int8_t, DI>(),
                       static_cast<int8_t*>(p));
            break;
        case Kind::U8:
            hn::StoreU(hn::DemoteTo(hn::Rebind<uint8_t, DI>(), v), hn::Rebind<uint8_t, DI>(),
                       static_cast<uint8_t*>(p));
            break;
        default:
            hn::StoreU(v, di, static_cast<int32_t*>(p));
            break;
    }
}

size_t size_of(Kind k) {
    return k == Kind::F32 || k == Kind::S32 ? 4 : 1;
}

// A vector of int32's lane count at a time; the tail through a zero-padded buffer, so it takes
// exactly the same arithmetic.
template <Kind From, Kind To>
void RunPair(const Q& from, const Q& to, const void* s, void* d, size_t n) {
    const size_t lanes = hn::Lanes(DI()), sf = size_of(From), st = size_of(To);
    const Q f{From, from.scale, from.zero}, t{To, to.scale, to.zero};
    const auto* src = static_cast<const uint8_t*>(s);
    auto* dst = static_cast<uint8_t*>(d);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes)
        store_value(t, load_value(f, src + i * sf), dst + i * st);
    if (i < n) {
        constexpr size_t kMax = 64 * 4;  // 64 lanes of 4 bytes: more than any x86 vector
        alignas(64) uint8_t in[kMax] = {}, out[kMax];
        std::memcpy(in, src + i * sf, (n - i) * sf);
        store_value(t, load_value(f, in), out);
        std::memcpy(dst + i * st, out, (n - i) * st);
    }
}

template <Kind From>
void RunFrom(const Q& from, const Q& to, const void* s, void* d, size_t n) {
    switch (to.kind) {
        case Kind::F32:
            return RunPair<From, Kind::F32>(from, to, s, d, n);
        case Kind::S8:
            return RunPair<From, Kind::S8>(from, to, s, d, n);
        case Kind::U8:
            return RunPair<From, Kind::U8>(from, to, s, d, n);
        case Kind::S32:
            return RunPair<From, Kind::S32>(from, to, s, d, n);
    }
}

void Convert(const Q& from, const Q& to, const void* s, void* d, size_t n) {
    switch (from.kind) {
        case Kind::F32:
            return RunFrom<Kind::F32>(from, to, s, d, n);
        case Kind::S8:
            return RunFrom<Kind::S8>(from, to, s, d, n);
        case Kind::U8:
            return RunFrom<Kind::U8>(from, to, s, d, n);
        case Kind::S32:
            return RunFrom<Kind::S32>(from, to, s, d, n);
    }
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace neomeg::dnn::x86 {
namespace {

using quant_cvt::Kind;
using quant_cvt::Q;

std::optional<Q> q_of(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float32:
            return Q{Kind::F32, 1.f, 0};
        case DTypeEnum::QuantizedS8:
            return Q{Kind::S8, dt.scale(), 0};
        case DTypeEnum::Quantized8Asymm:
            return Q{Kind::U8, dt.scale(), dt.zero_point()};
        case DTypeEnum::QuantizedS32:
            // int32 v - zero would need int64 lanes; MegEngine's QuantizedS32 has zero point 0.
            if (dt.zero_point() != 0)
                return std::nullopt;
            return Q{Kind::S32, dt.scale(), 0};
        default:
            return std::nullopt;
    }
}

}  // namespace

HWY_EXPORT(Convert);

bool quantized_cvt_supported(DType src, DType dst) {
    return (src.is_quantized() || dst.is_quantized()) && q_of(src) && q_of(dst);
}

void quantized_cvt_run(DType src, DType dst, const void* s, void* d, size_t n) {
    HWY_DYNAMIC_DISPATCH(Convert)(*q_of(src), *q_of(dst), s, d, n);
}

}  // namespace neomeg::dnn::x86
#endif
