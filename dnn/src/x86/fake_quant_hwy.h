// Vectorised rows of FakeQuant, TQT and LSQ and their gradients (Highway, the instruction set
// chosen at run time): the formulas of src/common/fake_quant_math.h on float32 lanes, each
// operation rounded as the scalar one is (roundf's halves away from zero, fminf/fmaxf's NaN
// rule), so that a row gives the scalar formulas' bits.
#pragma once

#include <cstddef>

namespace neomeg::dnn::x86 {

enum class FqKind { FakeQuant, FakeQuantGrad, TQT, TQTGrad, LSQ, LSQGrad };

// One row of n elements. in[k] is the kind's k-th input (as its operator orders them; for TQT
// and TQTGrad, scale is replaced by the step t = 2^scale), read at in[k][i], or in[k][0] for
// every i where bcast[k]; out[j] are dense. qmin, qmax as fake_quant::Range.
void fake_quant_row(FqKind kind, const float* const* in, const bool* bcast, float* const* out,
                    size_t n, float qmin, float qmax);

}  // namespace neomeg::dnn::x86
