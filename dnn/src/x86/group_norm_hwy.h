// Vectorised float32 group normalisation forward (Highway, the instruction set chosen at run
// time) over dense (N, C, spatial) data: each (sample, group) run's moments in double lanes, two
// passes (mean, then the squared distances from it) while the run sits in L1/L2, then each
// element by naive's double formula.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

// Runs [begin, end) of `group` groups of `cpg` channels of `spatial` elements each: mean,
// rstd = 1 / sqrt(var + eps) (biased variance), y = (x - mean) * rstd, times weight[c] plus
// bias[c] where weight is not null (bias then is not either).
void group_norm_runs(const float* x, const float* weight, const float* bias, float* y, float* mean,
                     float* rstd, size_t begin, size_t end, size_t group, size_t cpg,
                     size_t spatial, double eps);

}  // namespace neomeg::dnn::x86
