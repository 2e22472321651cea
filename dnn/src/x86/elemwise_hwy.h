// Vectorised float32 Elemwise over one run of elements (Highway, the instruction set chosen at run
// time). Results equal naive's, which computes in double and rounds once: single IEEE operations
// (+ - * /, sqrt, comparisons) run in float, where they round the same; every other formula runs
// in double and rounds once, and lanes outside the vector math's range (non-finite inputs,
// |x| > 700 for exp, x <= 0 for log, ...) are recomputed with naive's scalar formula.
#pragma once

#include <cstddef>

#include "src/common/elemwise.h"

namespace neomeg::dnn::x86 {

// One operand of a run: the element at index i is p[i], or *p for every i when broadcast.
struct ElemwiseSrc {
    const float* p = nullptr;
    bool broadcast = false;
};

// Whether elemwise_f32 computes this mode.
bool elemwise_f32_supported(elemwise::Mode mode);

// dst[i] = mode(srcs[0][i], srcs[1][i], ...) for i in [0, n); srcs has the mode's arity.
void elemwise_f32(elemwise::Mode mode, const ElemwiseSrc* srcs, float* dst, size_t n);

// The instruction set the kernels dispatch to, e.g. "AVX3" or "AVX2".
const char* elemwise_target();

}  // namespace neomeg::dnn::x86
