// Vectorised float32 group normalisation (Highway, the instruction set chosen at run time) over
// dense (N, C, spatial) data, each (sample, group) run while it sits in L1/L2. Sums run in float
// lanes in blocks of a few hundred elements, the blocks added in double (group_norm_hwy.cpp says
// the bound). The forward takes the mean in two steps (a first estimate m, then the mean of the
// distances from m, which also gives the variance) and writes y = (x - m) * a_c + t_c per channel
// c; the backward sums dy and dy * (x - mean) per channel, then writes
// dx = dy * p_c + (x - mean) * q + t per channel.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// Runs [begin, end) of `group` groups of `cpg` channels of `spatial` elements each: mean,
// rstd = 1 / sqrt(var + eps) (biased variance), y = (x - mean) * rstd, times weight[c] plus
// bias[c] where weight is not null (bias then is not either). With `stream`, y is written with
// non-temporal stores (the caller's choice for outputs too large to stay in the caches).
void group_norm_runs(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, size_t begin, size_t end, size_t group, size_t cpg,
                     size_t spatial, double eps, bool stream);

// Runs [begin, end): with xhat = (x - mean) * rstd and g = dy * weight (dy without weight),
// dx = rstd * (g - mean(g) - xhat * mean(g * xhat)). For channel c of sample n (run r), sums[2 *
// (n * C + c)] = sum(dy) and sums[2 * (n * C + c) + 1] = sum(dy * xhat) over its spatial elements:
// dbias's and dweight's parts. With `stream`, dx is written with non-temporal stores.
void group_norm_grad_runs(const float* dy, const float* x, const float* mean, const float* rstd,
                          const float* weight, float* dx, double* sums, size_t begin, size_t end,
                          size_t group, size_t cpg, size_t spatial, bool stream);

}  // namespace neomeg::dnn::x86
