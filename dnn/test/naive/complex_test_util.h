// complex64 HostTensors for tests: HostTensor's values() reads plain dtypes only, so these read
// and write std::complex<float> elements in logical row-major order through any layout.
#pragma once

#include <complex>
#include <vector>

#include "common/host_tensor.h"
#include "src/naive/iterate.h"

namespace neomeg::dnn::test {

using cf = std::complex<float>;

inline void set_complex(HostTensor& t, const std::vector<cf>& v) {
    size_t i = 0;
    TensorND nd = t.nd();
    naive::for_each_offset(t.layout(),
                           [&](ptrdiff_t off) { naive::elem<cf>(nd, off) = v.at(i++); });
}

// A complex64 tensor of `layout` (its dtype is set here; any strides) holding v.
inline HostTensor complex_tensor(TensorLayout layout, const std::vector<cf>& v) {
    layout.dtype = dtype::Complex64;
    HostTensor t(layout);
    set_complex(t, v);
    return t;
}

inline std::vector<cf> complex_values(const HostTensor& t) {
    std::vector<cf> out;
    TensorND nd = t.nd();
    naive::for_each_offset(t.layout(),
                           [&](ptrdiff_t off) { out.push_back(naive::elem<cf>(nd, off)); });
    return out;
}

}  // namespace neomeg::dnn::test
