// Vectorised batch normalisation of one channel of a dense (N, C, S) tensor (Highway, the
// instruction set chosen at run time): the channel is N rows of S elements, `row_stride` (C * S)
// apart, from `p` (the channel's first element). The data is float32, or float16 or bfloat16 (the
// data of autocast's batch norm), read exactly and rounded to float then to the 16-bit dtype, as
// naive stores. Everything computes in double, in naive's order of operations, and rounds once.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

struct ChannelRows {
    size_t rows, row_stride, len;  // N, C * S, S
};

// The data's dtype; pointers are to its elements.
enum class BnData { F32, BF16, F16 };

// Mean and biased variance (two passes, as naive).
void bn_moments(BnData kind, const void* src, ChannelRows r, double* mean, double* var);

// dst = (src - mean) * inv_std * scale + bias.
void bn_normalize(BnData kind, const void* src, void* dst, ChannelRows r, double mean,
                  double inv_std, double scale, double bias);

// dbias = sum(dy), dscale = sum(dy * (src - mean) * inv_std).
void bn_grad_sums(BnData kind, const void* dy, const void* src, ChannelRows r, double mean,
                  double inv_std, double* dbias, double* dscale);

// grad = scale * inv_std * g with g = dy - (dbias + xhat * dscale) / M in training (the batch
// statistics depend on every element), g = dy in inference.
void bn_grad(BnData kind, const void* dy, const void* src, void* grad, ChannelRows r, double mean,
             double inv_std, double scale, double dbias, double dscale, bool training);

}  // namespace neomeg::dnn::x86
