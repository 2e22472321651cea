// The Elemwise kernels of elemwise_math_hwy.cpp: the float32 modes whose formulas Highway's math
// library lacks (POW, MOD, ATAN2, TAN, ERF, ERFC, ERFINV, ERFCINV, GELU, GELU_GRAD), SIN and COS of
// float accuracy, EXP, ERF, ERFC, GELU, GELU_GRAD, SIGMOID, SILU, TANH, LOG, LOG1P, EXPM1, ATANH,
// SOFTPLUS and LOGSIGMOID computed in float, and TRUE_DIV of int32 into float32. Called through
// elemwise_run (elemwise_hwy.h).
#pragma once

#include <cstddef>

#include "src/x86/elemwise_hwy.h"

namespace neomeg::dnn::x86 {

// Computes the run as elemwise_run does and returns true, or returns false (touching nothing) for
// a mode and dtypes it does not cover; with n = 0 it only answers.
bool elemwise_math_run(elemwise::Mode mode, DType data, DType dst_dtype, const ElemwiseSrc* srcs,
                       void* dst, size_t n);

// The largest distance, in units in the last place of float32, between a float32 -> float32 result
// of the x86 kernels and naive's (computed in double, rounded once): 0 where they are equal, as for
// every mode but these. 1 for EXP, POW, ATAN2, TAN, SIN, COS and the erf family: naive's result is
// one of the two floats around the exact value (its double formulas are far more accurate than a
// float's ULP), and so is each of ours that is less than one float ULP from the exact value, so the
// two are equal or neighbours. EXP runs in float (exp_f32_hwy-inl.h: Highway's float exp's steps,
// within 1 ULP of the exact value), which keeps it at memory speed. TAN, SIN, COS, POW, ERFCINV
// (and ERFINV on targets without FMA) run in double lanes with polynomials of 2^-26.6 to 2^-31
// error, rounded once (below 0.65 ULP of the exact value): measured on every float32 input for the
// unary ones and 5.3 10^8 operand pairs for POW, at most 1 from naive's
// (dnn/bench/elemwise_ulp.cpp), and in X86.ElemwiseOneUlpModesAtEachTarget at each Highway target.
// ERFINV runs in float lanes where the target has FMA (ErfInvF: 0.66x -> 1.1-1.3x PyTorch's speed
// on Zen 3), its roundings carried in float pairs: faithful, below 0.9999 ULP of the exact value
// (0.963 for |y| > 1e-30, where y c0lo does not underflow), measured on every float32 input at the
// AVX2 and AVX-512 targets, and in X86.ElemwiseErfinvInFloatIsFaithfulAtEachTarget. ERF and ERFC
// run in float lanes where the target has FMA (on AVX2, ERF 0.56x -> 1.5x PyTorch's speed, ERFC
// 0.65x -> 0.9x): one ULP from naive is anything below 1.5 ULPs from the exact value, and their
// float formulas keep 1.08 and 1.39 (ERFC's tail carries exp's and erfcx's roundings in float
// pairs), measured on every float32 input at the AVX2 and AVX-512 targets (max 1 from naive);
// without FMA they run in double lanes.
// ATAN2 runs in double with Highway's atan, a few double ULPs. GELU and GELU_GRAD run in float too,
// 16 lanes of AVX-512 instead of 8 of double (issue 12: 4.3 ms against PyTorch's 0.57 for 2M
// floats): an exponential, a rational function with a division and a few products, each off by a
// rounding or two, for 7 ULPs at most. That is a relative bound, 4.2e-7 of the result, and it holds
// everywhere, the negative tails included (where PyTorch's float erf, 1 + erf(x / sqrt(2)), loses
// the result's every digit), and, for the gradient, next to its root at x = -0.7518: measured on
// every float32 x (with dy 1, and -0.7 on a seventh of them), and in X86.ElemwiseGelu* at each
// Highway target. SIGMOID and SILU run in float as well (exp of -|x| and one quotient: 0.29x
// -> 1.3x PyTorch's speed), 2 and 3 ULPs at most, measured on every float32 input at the AVX2 and
// AVX-512 targets (the saturated lanes' double-lane redo included), and in
// X86.ElemwiseSigmoidAndSiluAtTheirBordersAtEachTarget at each Highway target. LOG, LOG1P, EXPM1,
// ATANH, SOFTPLUS and LOGSIGMOID run in float too (log_f32_hwy-inl.h: a logarithm by Cephes'
// polynomial that carries 1 + x's rounding error, exp_f32's reduction less its 1; issue 12,
// 0.5x-0.9x PyTorch's speed in double lanes): LOG, LOG1P, EXPM1 and ATANH within 1 ULP of naive,
// SOFTPLUS and LOGSIGMOID within 2 (exp's ULP and the logarithm's), measured on every float32 input
// at the AVX-512 and AVX2 targets, and in X86.ElemwiseLogFamilyInFloatAtEachTarget at each Highway
// target. TANH runs in float as well (an odd polynomial below |x| = 0.75, (1 - e) / (1 + e) with e
// = exp(-2|x|) and the quotient's roundings carried above; 0.9x -> 2.9x PyTorch's speed on Zen 3):
// within 1 ULP of naive, since every result is within 0.83 ULP of the exact value (measured on
// every float32 input at the AVX2 and AVX-512 targets, and in X86.ElemwiseTanhInFloatAtEachTarget
// at each Highway target).
int elemwise_f32_max_ulp(elemwise::Mode mode);

}  // namespace neomeg::dnn::x86
