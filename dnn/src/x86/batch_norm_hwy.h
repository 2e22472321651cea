// Vectorised float32 batch normalisation of one channel of a dense (N, C, S) tensor (Highway, the
// instruction set chosen at run time): the channel is N rows of S elements, `row_stride` (C * S)
// apart, from `p` (the channel's first element). Everything computes in double, in naive's order
// of operations, and rounds once.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

struct ChannelRows {
    size_t rows, row_stride, len;  // N, C * S, S
};

// Mean and biased variance (two passes, as naive).
void bn_moments(const float* src, ChannelRows r, double* mean, double* var);

// dst = (src - mean) * inv_std * scale + bias.
void bn_normalize(const float* src, float* dst, ChannelRows r, double mean, double inv_std,
                  double scale, double bias);

// dbias = sum(dy), dscale = sum(dy * (src - mean) * inv_std).
void bn_grad_sums(const float* dy, const float* src, ChannelRows r, double mean, double inv_std,
                  double* dbias, double* dscale);

// grad = scale * inv_std * g with g = dy - (dbias + xhat * dscale) / M in training (the batch
// statistics depend on every element), g = dy in inference.
void bn_grad(const float* dy, const float* src, float* grad, ChannelRows r, double mean,
             double inv_std, double scale, double dbias, double dscale, bool training);

}  // namespace neomeg::dnn::x86
