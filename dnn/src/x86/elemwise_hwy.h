// Vectorised Elemwise over one run of elements (Highway, the instruction set chosen at run time),
// for four dtype cases: float32 -> float32, int32 -> int32, float32 or int32 -> bool (comparisons
// and ISNAN/ISINF), bool -> bool (logical modes) and COND (a bool condition choosing between
// float32 or int32 operands), and through elemwise_math_hwy.cpp TRUE_DIV of int32 into float32.
// Results equal naive's, but for the float32 modes elemwise_f32_max_ulp (elemwise_math_hwy.h)
// names, within that many ULPs. Naive computes floats
// in double and rounds once: single IEEE operations (+ - * /, sqrt, comparisons, rounding to an
// integer) run in float, where they round the same; every other formula runs in double and rounds
// once, and lanes outside the vector math's range (non-finite inputs, |x| > 700 for exp, x <= 0
// for log, ...) are recomputed with naive's scalar formula. Integers wrap like naive's int64
// formulas narrowed to int32.
#pragma once

#include <array>
#include <cstddef>

#include "src/common/elemwise.h"

namespace neomeg::dnn::x86 {

// One operand of a run: the element at index i is p[i], or *p for every i when broadcast.
struct ElemwiseSrc {
    const void* p = nullptr;
    bool broadcast = false;
};

// Whether the kernels compute this mode on float32 data into float32.
bool elemwise_f32_supported(elemwise::Mode mode);

// Whether the kernels compute `mode` with every input of dtype `data` and dst of dtype `dst`.
bool elemwise_supported(elemwise::Mode mode, DType data, DType dst);

// dst[i] = mode(srcs[0][i], srcs[1][i], ...) for i in [0, n); srcs has the mode's arity, and the
// dtypes are a pair elemwise_supported accepts.
void elemwise_run(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                  void* dst, size_t n);

// Runs that one elemwise_run_rows call takes: `count` runs of n elements, run r + 1's operand k
// starting step[k] elements after run r's (for a broadcast operand, its one value: a per-channel
// slope over NCHW steps 1 a run, a row broadcast 0), dst's dst_step elements after.
struct ElemwiseRows {
    size_t count = 1;
    std::array<ptrdiff_t, 4> step{};
    ptrdiff_t dst_step = 0;
};

// elemwise_run over rows.count runs of n elements in one call: the mode's switch and the dispatch
// to the instruction set once, not once a run (short runs: a run of 49 elements cost about 20 ns
// with them, more than its arithmetic). Returns false, running nothing, where the mode and dtypes
// are not one of the float32 -> float32 loops that take rows; the caller then runs one run at a
// time.
bool elemwise_run_rows(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                       void* dst, size_t n, const ElemwiseRows& rows);

// The instruction set the kernels dispatch to, e.g. "AVX3" or "AVX2".
const char* elemwise_target();

}  // namespace neomeg::dnn::x86
