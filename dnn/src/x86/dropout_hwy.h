// Dropout's element loops (Highway, the instruction set chosen at run time), float32: the
// forward's keep decision from Philox words and scaled copy, the backward's masked scale. Both
// scale in double and round once, as naive.
#pragma once

#include <cstddef>
#include <cstdint>

namespace neomeg::dnn::x86 {

// For j in [0, n): keep = philox::unit_interval(words[j], 24) >= p; mask[j] = keep;
// y[j] = keep ? float(double(x[j]) * scale) : 0.
void dropout_keep(const uint32_t* words, const float* x, float p, double scale, uint8_t* mask,
                  float* y, size_t n);

// For j in [0, n): g[j] = mask[j] ? float(double(dy[j]) * scale) : 0.
void dropout_grad(const float* dy, const uint8_t* mask, double scale, float* g, size_t n);

}  // namespace neomeg::dnn::x86
