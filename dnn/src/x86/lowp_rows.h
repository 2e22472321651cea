// One channel of a dense (N, C, S) float16 or bfloat16 tensor as float32: the channel's N rows of S
// elements are widened (exactly) into a dense N * S float buffer, which the float32 kernels work
// on, and a result buffer is rounded back into the channel's rows (to nearest even, as naive's
// store). Vectorised by TypeCvt's kernels, so the values are naive's bit for bit.
#pragma once

#include <cstddef>

#include "neomeg/dnn/dtype.h"
#include "src/x86/batch_norm_hwy.h"

namespace neomeg::dnn::x86 {

// Whether dt is a 16-bit float dtype these helpers convert.
bool is_lowp_float(DType dt);

// buf[n * S + s] = float(src's channel c, row n, element s), for r = {N, C * S, S}.
void widen_channel(DType dt, const void* src, ChannelRows r, size_t c, float* buf);

// dst's channel c, row n, element s = round(buf[n * S + s]).
void narrow_channel(DType dt, const float* buf, ChannelRows r, size_t c, void* dst);

// The rows of a dense buffer that widen_channel filled: {N, S, S}.
inline ChannelRows dense_rows(ChannelRows r) {
    return {r.rows, r.len, r.len};
}

}  // namespace neomeg::dnn::x86
