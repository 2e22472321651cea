// Quantized TypeCvt on the x86 handle (type_cvt_quant_hwy.h) against naive, bit for bit: float32
// to and from QuantizedS8, Quantized8Asymm (zero points 0, 3, 128, 255) and QuantizedS32, and
// requantising between them (QuantizedS32 sums to 8 bits, 8 bits to 8 bits), with scales that are
// and are not powers of two, the rounding ties (halves away from zero), values beyond the range
// (saturation), NaN and infinities, QuantizedS32 values beyond float32's 2^24, sizes around the
// vector width and above the threading grain, padded inputs and outputs. The dnn.x86.isa.*
// entries rerun these with Highway capped at AVX2.
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/tensor_basic.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::TypeCvt cvt_to(DType dt) {
    param::TypeCvt p;
    p.dtype = dt.enumv();
    p.scale = dt.scale();
    p.zero_point = dt.zero_point();
    return p;
}

std::vector<DType> quantized() {
    return {DType::quantized_s8(0.5f),          DType::quantized_s8(0.037f),
            DType::quantized_8asymm(0.1f, 0),   DType::quantized_8asymm(0.25f, 3),
            DType::quantized_8asymm(0.1f, 128), DType::quantized_8asymm(0.5f, 255),
            DType::quantized_s32(0.125f),       DType::quantized_s32(0.0013f)};
}

// The stored integers' range of a quantized dtype, for random sources.
std::pair<double, double> range_of(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::QuantizedS8:
            return {-128, 128};
        case DTypeEnum::Quantized8Asymm:
            return {0, 256};
        case DTypeEnum::QuantizedS32:
            return {-3e9, 3e9};  // clipped to int32 by the store
        default:
            return {-300, 300};
    }
}

const size_t kSizes[] = {1, 7, 8, 17, 64, 1000, 300001};

void check(Handle* h, DType from, DType to, std::pair<double, double> range) {
    for (size_t n : kSizes) {
        Checker<TypeCvt> c(h);
        c.set_param(cvt_to(to)).set_dtype(0, from).set_epsilon(0);
        c.set_range(0, range.first, range.second);
        c.execs({{n}});
        if (n == 17)
            c.set_noncontiguous(true).execs({{3, n}});
    }
}

}  // namespace

TEST_F(X86, QuantizedTypeCvtFromFloatMatchesNaive) {
    for (DType to : quantized()) {
        check(handle.get(), dtype::Float32, to, {-300, 300});
        check(handle.get(), dtype::Float32, to, {-3e9, 3e9});
    }
}

TEST_F(X86, QuantizedTypeCvtToFloatAndRequantiseMatchNaive) {
    for (DType from : quantized()) {
        check(handle.get(), from, dtype::Float32, range_of(from));
        for (DType to : quantized())
            check(handle.get(), from, to, range_of(from));
    }
}

// Ties, ends and non-finite values, bit for bit: x / 0.5 lands on every half in [-300, 300].
TEST_F(X86, QuantizedTypeCvtRoundsTiesAwayAndSaturatesAsNaive) {
    std::vector<double> v;
    for (int i = -1200; i <= 1200; ++i)
        v.push_back(i * 0.25);
    const double inf = std::numeric_limits<double>::infinity();
    for (double x : {inf, -inf, std::nan(""), -std::nan(""), 3e9, -3e9, 1e38, -0.0, 0.24999})
        v.push_back(x);
    for (DType to : quantized()) {
        Checker<TypeCvt> c(handle.get());
        c.set_param(cvt_to(to)).set_epsilon(0).set_values(0, v).execs({{v.size()}});
    }
    // QuantizedS32 sums around float32's exact range and int32's ends, requantised.
    std::vector<double> s;
    for (double x : {16777215.0, 16777217.0, 16777219.0, -16777217.0, 2147483647.0, -2147483648.0,
                     2147483583.0, 123456789.0, 0.0, -1.0})
        s.push_back(x);
    for (DType to : quantized()) {
        Checker<TypeCvt> c(handle.get());
        c.set_param(cvt_to(to)).set_dtype(0, DType::quantized_s32(0.0013f)).set_epsilon(0);
        c.set_values(0, s).execs({{s.size()}});
    }
}
