// Element access for the normalisation, softmax, dropout and RNG kernels. They compute in double
// and switch on dtype per element access rather than instantiating every kernel per dtype:
// slower, but the reference stays one plain loop and compiles once.
#pragma once

#include <vector>

#include "src/common/dtype_dispatch.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::naive {

// Element offsets of `layout` in logical row-major order.
inline std::vector<ptrdiff_t> offsets_of(const TensorLayout& layout) {
    std::vector<ptrdiff_t> r;
    r.reserve(layout.total_nr_elems());
    for_each_offset(layout, [&](ptrdiff_t off) { r.push_back(off); });
    return r;
}

inline double load(const TensorND& t, ptrdiff_t off) {
    return dispatch_dtype(t.layout.dtype, [&](auto tag) -> double {
        using T = typename decltype(tag)::type;
        return static_cast<double>(static_cast<compute_type_t<T>>(elem<T>(t, off)));
    });
}

inline void store(const TensorND& t, ptrdiff_t off, double v) {
    dispatch_dtype(t.layout.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (is_float_type_v<T>)
            elem<T>(t, off) = static_cast<T>(static_cast<float>(v));
        else
            elem<T>(t, off) = static_cast<T>(v);
    });
}

}  // namespace neomeg::dnn::naive

namespace neomeg::dnn::naive {

// Mean and biased variance of the n elements of t at offs[0..n), by two passes in double. An
// empty set has mean 0 and variance 0, so that normalising nothing stays finite.
struct Moments {
    double mean = 0, var = 0;
};
inline Moments moments(const TensorND& t, const ptrdiff_t* offs, size_t n) {
    Moments m;
    if (n == 0)
        return m;
    for (size_t i = 0; i < n; ++i)
        m.mean += load(t, offs[i]);
    m.mean /= double(n);
    for (size_t i = 0; i < n; ++i) {
        double c = load(t, offs[i]) - m.mean;
        m.var += c * c;
    }
    m.var /= double(n);
    return m;
}

}  // namespace neomeg::dnn::naive
