// A complex64 tensor's real or imaginary parts as a float32 view of its bytes (complex64 is two
// float32s, real first): the same shape, every stride doubled, the imaginary parts one float
// further. CreateComplex and ComplexPart are then copies between float32 layouts, which the x86
// and CUDA kernels run through their strided copies.
#pragma once

#include "neomeg/dnn/tensor.h"

namespace neomeg::dnn {

// part 0: the real parts, 1: the imaginary parts. `t` must be complex64.
inline TensorND complex_part_view(const TensorND& t, int part) {
    TensorLayout l = t.layout;
    l.dtype = dtype::Float32;
    for (size_t i = 0; i < l.ndim; ++i)
        l.stride[i] *= 2;
    return TensorND(static_cast<float*>(t.raw_ptr()) + part, l);
}

}  // namespace neomeg::dnn
