// The float32 -> float32 Elemwise loops shared by elemwise_hwy.cpp and elemwise_math_hwy.cpp:
// naive's scalar formula for the lanes a vector formula does not cover, formulas computed in
// double and rounded once, and float formulas with a bounded error. Included once per target after
// elemwise_hwy-inl.h, like Highway's own -inl headers (the guard flips with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_ELEMWISE_F32_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_ELEMWISE_F32_HWY_INL_H_
#undef NEOMEG_X86_ELEMWISE_F32_HWY_INL_H_
#else
#define NEOMEG_X86_ELEMWISE_F32_HWY_INL_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include "src/naive/elemwise_scalar.h"
#include "src/x86/elemwise_hwy-inl.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Naive's formula for element i: the tail of a run whose vector formula gives naive's bits (one
// IEEE operation, or POW's exact forms), where the two cannot differ.
HWY_INLINE void scalar_at(elemwise::Mode mode, const ElemwiseSrc* s, size_t arity, float* dst,
                          size_t i) {
    double x[4] = {};
    for (size_t k = 0; k < arity; ++k) {
        const float* p = static_cast<const float*>(s[k].p);
        x[k] = s[k].broadcast ? *p : p[i];
    }
    dst[i] = static_cast<float>(naive::elemwise::eval_float(mode, x));
}

// Naive's formula for the lanes of a vector that `marked` selects, whose operands are x (float or
// double lanes, as loaded), into dst; the other lanes keep what dst holds (the vector formula's
// values). From the registers, not the operands' memory: the vector's value may have been stored
// over them already (a graph runs an Elemwise in place, dst an operand). Only the marked lanes:
// an element's result must not depend on which others share its vector (see padded_tail).
template <size_t kArity, class D, class V, class M>
HWY_INLINE void scalar_lanes(elemwise::Mode mode, D d, const V (&x)[kArity], M marked, float* dst) {
    HWY_ALIGN hn::TFromD<D> lane[kArity][hn::MaxLanes(d)];
    uint8_t bits[(hn::MaxLanes(d) + 7) / 8] = {};
    hn::StoreMaskBits(d, marked, bits);
    for (size_t k = 0; k < kArity; ++k)
        hn::Store(x[k], d, lane[k]);
    for (size_t j = 0; j < hn::Lanes(d); ++j) {
        if (!((bits[j / 8] >> (j % 8)) & 1))
            continue;
        double v[4] = {};
        for (size_t k = 0; k < kArity; ++k)
            v[k] = static_cast<double>(lane[k][j]);
        dst[j] = static_cast<float>(naive::elemwise::eval_float(mode, v));
    }
}

// The last n (< a vector) elements of a run from element i, computed by run(src, dst) as one
// whole vector at element 0: the operands are copied into a vector's lanes, the last element
// repeated into the rest, and n results copied out. Naive's scalar formula for the tail gave an
// element a result up to the mode's ULP bound away from the vector formula's, so a result changed
// with the element's place in its run: a fused graph's blocks differed from the unfused Elemwise's
// run on AVX-512, whose tails are up to 15 elements
// (PassFuseElemwise.EveryBlockingGivesTheUnfusedResults).
template <size_t kArity, class D, class Run>
HWY_INLINE void padded_tail(D d, const ElemwiseSrc* s, float* dst, size_t i, size_t n,
                            const Run& run) {
    HWY_ALIGN float in[kArity][hn::MaxLanes(d)];
    HWY_ALIGN float out[hn::MaxLanes(d)];
    ElemwiseSrc t[kArity];
    for (size_t k = 0; k < kArity; ++k) {
        t[k] = s[k];
        if (s[k].broadcast)
            continue;
        const float* p = static_cast<const float*>(s[k].p) + i;
        for (size_t j = 0; j < hn::Lanes(d); ++j)
            in[k][j] = p[j < n ? j : n - 1];
        t[k].p = in[k];
    }
    run(t, out);
    for (size_t j = 0; j < n; ++j)
        dst[i + j] = out[j];
}

// A float formula of a few operations and no special lanes (POW by 2, 0.5, -1, 3): the plain
// vector loop, the tail by the scalar formula, without run_float_special's check of the lanes.
template <size_t kArity, class F>
HWY_INLINE void run_float_plain(elemwise::Mode mode, const ElemwiseSrc* s, float* dst, size_t n,
                                F f) {
    const hn::ScalableTag<float> d;
    run_lanes<kArity>(
            d, s, n, f, [&](size_t i, auto v) { hn::StoreU(v, d, dst + i); },
            [&](size_t i) { scalar_at(mode, s, kArity, dst, i); });
}

// Elements a double formula prefetches ahead of the one it computes.
constexpr size_t kPrefetchAhead = 512;

// f's value at x, with the lanes f.special marks in `marked`. A formula whose check would compute
// part of the value again (TAN's cosine, POW's logarithm) gives both at once as
// f.with_special(d, x, marked), which must mark exactly the lanes f.special(d, x) marks.
template <class F, class D, class V, size_t K>
HWY_INLINE V value_and_special(const F& f, D d, const V (&x)[K], hn::Mask<D>& marked) {
    if constexpr (requires { f.with_special(d, x, marked); }) {
        return f.with_special(d, x, marked);
    } else {
        marked = f.special(d, x);
        return apply(f, d, x);
    }
}

// One vector of a double formula at element i, rounded once to float; the lanes F::special(d, x)
// marks (x holds the operands) by the scalar formula.
template <size_t kArity, class F>
HWY_INLINE void double_vector(elemwise::Mode mode, const ElemwiseSrc* s, float* dst, size_t i,
                              const F& f) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    hn::Vec<decltype(dd)> x[kArity];
    for (size_t k = 0; k < kArity; ++k)
        x[k] = hn::PromoteTo(dd, load(df, s[k], i));
    auto marked = hn::FirstN(dd, 0);
    hn::StoreU(hn::DemoteTo(df, value_and_special(f, dd, x, marked)), df, dst + i);
    if (!hn::AllFalse(dd, marked))
        scalar_lanes(mode, dd, x, marked, dst + i);
}

// Double formulas, rounded once to float, a vector at a time (double_vector).
template <size_t kArity, class F>
HWY_INLINE void run_double(elemwise::Mode mode, const ElemwiseSrc* s, float* dst, size_t n, F f) {
    const hn::ScalableTag<double> dd;
    const hn::Rebind<float, decltype(dd)> df;
    const size_t lanes = hn::Lanes(dd);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        // These loops are long enough per element that the hardware prefetchers fall behind a
        // stream from memory: ask for the data a few hundred elements ahead.
        if (i % 16 == 0) {
            for (size_t k = 0; k < kArity; ++k)
                if (!s[k].broadcast)
                    hwy::Prefetch(static_cast<const float*>(s[k].p) + i + kPrefetchAhead);
            hwy::Prefetch(dst + i + kPrefetchAhead);
        }
        double_vector<kArity>(mode, s, dst, i, f);
    }
    if (i < n)
        padded_tail<kArity>(df, s, dst, i, n - i, [&](const ElemwiseSrc* t, float* out) {
            double_vector<kArity>(mode, t, out, 0, f);
        });
}

// Lanes with |x| > limit or NaN.
template <class D, class V>
HWY_INLINE auto outside(D d, V x, double limit) {
    return hn::Not(hn::Le(hn::Abs(x), hn::Set(d, static_cast<hn::TFromD<D>>(limit))));
}

struct NoSpecial {
    template <class D, class V>
    auto special(D d, const V*) const {
        return hn::FirstN(d, 0);
    }
};

// Vectors run_float_special computes per step. Its formulas are chains of dependent operations
// (EXP's Horner steps, GELU's exp and rational function) whose latency one vector at a time left
// the FMA units idle: interleaving four independent vectors took EXP from 3.5 to 2.2 ns per
// 16-lane vector and GELU from 5.6 to 3.5 (AVX-512, Zen 5).
constexpr size_t kFloatUnroll = 4;

// The lanes f.special marks in a vector whose formula's values dst holds, redone: by f.redo(d, x)
// where F has one (a vector formula, e.g. SIGMOID's double lanes for saturated inputs, which are
// common enough that naive's scalar formula per lane was a cliff), else by naive's scalar formula
// per lane. The unmarked lanes keep the float formula's values.
template <size_t kArity, class F, class D, class V>
HWY_INLINE void redo_marked(elemwise::Mode mode, const F& f, D d, const V (&x)[kArity],
                            float* dst) {
    const auto marked = f.special(d, x);
    if constexpr (requires { f.redo(d, x); })
        hn::StoreU(hn::IfThenElse(marked, f.redo(d, x), hn::LoadU(d, dst)), d, dst);
    else
        scalar_lanes(mode, d, x, marked, dst);
}

// One vector of a float formula whose operands are x, into dst.
template <size_t kArity, class F, class D, class V>
HWY_INLINE void float_vector(elemwise::Mode mode, const F& f, D d, const V (&x)[kArity],
                             float* dst) {
    hn::StoreU(apply(f, d, x), d, dst);
    if (!hn::AllFalse(d, f.special(d, x)))
        redo_marked(mode, f, d, x, dst);
}

// Float formulas of bounded error (elemwise_f32_max_ulp), computed in float where f.special(d, x)
// marks no lane; a vector holding a marked lane is redone (redo_marked). The operands'
// broadcast pattern is fixed per loop (Operands): POW by a constant (`x ** 2`) reads its exponent
// from a register, not through a flag per vector. No software prefetch: asking for every operand
// and dst 512 elements ahead each cache line (as run_double does) took EXP from memory on one Zen
// 4 core from 25.7-26.3 GB/s to 19.6-21.3 (SIGMOID 23.0 -> 21.1-21.6), and further ahead was
// slower still; the hardware prefetchers follow these streams.
template <size_t kArity, class F>
HWY_INLINE void run_float_special(elemwise::Mode mode, const ElemwiseSrc* s, float* dst, size_t n,
                                  F f) {
    const hn::ScalableTag<float> d;
    const size_t lanes = hn::Lanes(d);
    size_t i = 0;
    if (n >= lanes)  // an empty run touches no memory (see run_lanes)
        with_operands<kArity>(d, s, [&](const auto& in) NEOMEG_OPERANDS_BODY {
            for (; i + kFloatUnroll * lanes <= n; i += kFloatUnroll * lanes) {
                hn::Vec<decltype(d)> x[kFloatUnroll][kArity];
                for (size_t u = 0; u < kFloatUnroll; ++u) {
                    for (size_t k = 0; k < kArity; ++k)
                        x[u][k] = in(d, k, i + u * lanes);
                }
                auto marked = f.special(d, x[0]);
                for (size_t u = 0; u < kFloatUnroll; ++u) {
                    hn::StoreU(apply(f, d, x[u]), d, dst + i + u * lanes);
                    if (u > 0)
                        marked = hn::Or(marked, f.special(d, x[u]));
                }
                if (HWY_UNLIKELY(!hn::AllFalse(d, marked)))
                    for (size_t u = 0; u < kFloatUnroll; ++u)
                        if (!hn::AllFalse(d, f.special(d, x[u])))
                            redo_marked(mode, f, d, x[u], dst + i + u * lanes);
            }
            for (; i + lanes <= n; i += lanes) {
                hn::Vec<decltype(d)> x[kArity];
                for (size_t k = 0; k < kArity; ++k)
                    x[k] = in(d, k, i);
                float_vector<kArity>(mode, f, d, x, dst + i);
            }
        });
    if (i < n)
        padded_tail<kArity>(d, s, dst, i, n - i, [&](const ElemwiseSrc* t, float* out) {
            hn::Vec<decltype(d)> x[kArity];
            for (size_t k = 0; k < kArity; ++k)
                x[k] = load(d, t[k], 0);
            float_vector<kArity>(mode, f, d, x, out);
        });
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
