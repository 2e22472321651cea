// The loop shared by the Elemwise Highway files (elemwise_hwy.cpp, elemwise_int_hwy.cpp): a run
// of n elements in whole vectors, the tail element by element, and the modes whose vector form is
// the same for float and integer lanes. Included once per target, after highway.h, like Highway's
// own -inl headers (the guard flips with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_ELEMWISE_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_ELEMWISE_HWY_INL_H_
#undef NEOMEG_X86_ELEMWISE_HWY_INL_H_
#else
#define NEOMEG_X86_ELEMWISE_HWY_INL_H_
#endif

#include <hwy/highway.h>

#include <utility>

#include "src/x86/elemwise_hwy.h"

HWY_BEFORE_NAMESPACE();
namespace neomeg::dnn::x86::HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Operand s's vector at element i, read as D's lane type.
template <class D>
HWY_INLINE hn::Vec<D> load(D d, const ElemwiseSrc& s, size_t i) {
    const auto* p = static_cast<const hn::TFromD<D>*>(s.p);
    return s.broadcast ? hn::Set(d, *p) : hn::LoadU(d, p + i);
}

// f(d, x[0], ..., x[K-1]).
template <class F, class D, class V, size_t K>
HWY_INLINE auto apply(const F& f, D d, const V (&x)[K]) {
    static_assert(K >= 1 && K <= 4);
    if constexpr (K == 1)
        return f(d, x[0]);
    else if constexpr (K == 2)
        return f(d, x[0], x[1]);
    else if constexpr (K == 3)
        return f(d, x[0], x[1], x[2]);
    else
        return f(d, x[0], x[1], x[2], x[3]);
}

// A run's operands with their broadcast pattern fixed at compile time (bit k of kBroadcast: operand
// k is one value): a loop over them loads only the dense operands and keeps the broadcast ones in
// registers. Reading each operand's flag and pointer per vector (from memory: dst's stores might
// alias them, so the compiler reloaded them and could not split the loop) cost F.clip a quarter
// of its time and a + b[0] a fifth where the data sat in cache (issue 12).
template <class D, size_t kArity, unsigned kBroadcast>
struct Operands {
    using T = hn::TFromD<D>;
    const T* p[kArity];
    hn::Vec<D> v[kArity];

    Operands(D d, const ElemwiseSrc* s) {
        for (size_t k = 0; k < kArity; ++k) {
            p[k] = static_cast<const T*>(s[k].p);
            v[k] = broadcast(k) ? hn::Set(d, *p[k]) : hn::Zero(d);
        }
    }
    static constexpr bool broadcast(size_t k) { return (kBroadcast >> k) & 1; }
    // Operand k's vector at element i.
    HWY_INLINE hn::Vec<D> operator()(D d, size_t k, size_t i) const {
        return broadcast(k) ? v[k] : hn::LoadU(d, p[k] + i);
    }
};

template <size_t kArity, class D, class Body, unsigned... kPatterns>
HWY_INLINE void dispatch_operands(D d, const ElemwiseSrc* s, unsigned pattern, const Body& body,
                                  std::integer_sequence<unsigned, kPatterns...>) {
    (void)((pattern == kPatterns && (body(Operands<D, kArity, kPatterns>(d, s)), true)) || ...);
}

// A with_operands body: `[&](const auto& in) NEOMEG_OPERANDS_BODY { ... }`. Inlined, its captures
// (the run's length, dst, the index) stay in registers; a body left out of line (GCC did, for the
// bigger loops) went through them in memory: `x ** 2` in cache took 0.140 ms against 0.102.
#define NEOMEG_OPERANDS_BODY __attribute__((always_inline))

// body(in) with in the Operands of s's broadcast pattern (2^kArity loops are compiled).
template <size_t kArity, class D, class Body>
HWY_INLINE void with_operands(D d, const ElemwiseSrc* s, const Body& body) {
    unsigned pattern = 0;
    for (size_t k = 0; k < kArity; ++k)
        pattern |= unsigned(s[k].broadcast) << k;
    dispatch_operands<kArity>(d, s, pattern, body,
                              std::make_integer_sequence<unsigned, 1u << kArity>());
}

// For whole vectors at i: store(i, f(d, operands at i)); then tail(i) for the rest.
template <size_t kArity, class D, class F, class Store, class Tail>
HWY_INLINE void run_lanes(D d, const ElemwiseSrc* s, size_t n, const F& f, const Store& store,
                          const Tail& tail) {
    const size_t lanes = hn::Lanes(d);
    size_t i = 0;
    // A run shorter than a vector reads no operand here: an empty one touches no memory (the
    // mode switches are asked which modes they run with no operands at all).
    if (n >= lanes)
        with_operands<kArity>(d, s, [&](const auto& in) NEOMEG_OPERANDS_BODY {
            for (; i + lanes <= n; i += lanes) {
                hn::Vec<D> x[kArity];
                for (size_t k = 0; k < kArity; ++k)
                    x[k] = in(d, k, i);
                store(i, apply(f, d, x));
            }
        });
    for (; i < n; ++i)
        tail(i);
}

// The modes whose vector form is the same for float and integer lanes (both Elemwise files use
// them). Integer lanes wrap as naive's int64 result narrowed: Abs of INT32_MIN is INT32_MIN.
struct AddOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Add(a, b);
    }
};
struct SubOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Sub(a, b);
    }
};
struct MulOp {
    template <class D, class V>
    V operator()(D, V a, V b) const {
        return hn::Mul(a, b);
    }
};
struct Square {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Mul(a, a);
    }
};
struct Abs {
    template <class D, class V>
    V operator()(D, V a) const {
        return hn::Abs(a);
    }
};
// MegDNN's x > 0 ? dy : -dy, so -dy at 0 (and at a float NaN); exact, so float rounds as double
// does.
struct AbsGrad {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        return hn::IfThenElse(hn::Gt(x, hn::Zero(d)), dy, hn::Neg(dy));
    }
};
// (x, dy): dy where x > 0, else 0 (RELU's gradient).
struct SwitchGt0 {
    template <class D, class V>
    V operator()(D d, V x, V dy) const {
        return hn::IfThenElseZero(hn::Gt(x, hn::Zero(d)), dy);
    }
};

struct PRelu {
    template <class D, class V>
    V operator()(D d, V x, V slope) const {
        return hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Mul(x, slope), x);
    }
};

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
