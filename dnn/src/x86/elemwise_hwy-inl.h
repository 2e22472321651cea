// The loop shared by the Elemwise Highway files (elemwise_hwy.cpp, elemwise_int_hwy.cpp): a run
// of n elements in whole vectors, the tail element by element. Included once per target, after
// highway.h, like Highway's own -inl headers (the guard flips with HWY_TARGET_TOGGLE).
#if defined(NEOMEG_X86_ELEMWISE_HWY_INL_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef NEOMEG_X86_ELEMWISE_HWY_INL_H_
#undef NEOMEG_X86_ELEMWISE_HWY_INL_H_
#else
#define NEOMEG_X86_ELEMWISE_HWY_INL_H_
#endif

#include <hwy/highway.h>

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

// For whole vectors at i: store(i, f(d, operands at i)); then tail(i) for the rest.
template <size_t kArity, class D, class F, class Store, class Tail>
HWY_INLINE void run_lanes(D d, const ElemwiseSrc* s, size_t n, const F& f, const Store& store,
                          const Tail& tail) {
    const size_t lanes = hn::Lanes(d);
    size_t i = 0;
    for (; i + lanes <= n; i += lanes) {
        hn::Vec<D> x[kArity];
        for (size_t k = 0; k < kArity; ++k)
            x[k] = load(d, s[k], i);
        store(i, apply(f, d, x));
    }
    for (; i < n; ++i)
        tail(i);
}

}  // namespace neomeg::dnn::x86::HWY_NAMESPACE
HWY_AFTER_NAMESPACE();

#endif
