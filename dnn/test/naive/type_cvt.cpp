#include <cmath>
#include <limits>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// Values exactly representable in each dtype, chosen to hit truncation, saturation, wrapping,
// rounding ties and the special floats.
std::vector<double> sample_values(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Float32:
            return {0,
                    -0.0,
                    1,
                    -1,
                    2.9,
                    -2.9,
                    0.5,
                    -0.5,
                    127.9,
                    128,
                    -129,
                    255.5,
                    256,
                    300.6,
                    -300.6,
                    32768,
                    -32769,
                    65504,
                    65520,
                    3e9,
                    -3e9,
                    kNaN,
                    kInf,
                    -kInf,
                    1 + std::ldexp(1, -11),
                    1 + 3 * std::ldexp(1, -11),
                    1 + std::ldexp(1, -8),
                    1 + 3 * std::ldexp(1, -8),
                    1e-3,
                    3e38};
        case DTypeEnum::Float16:
            return {0, 1, -1, 2.5, -2.5, 0.5, 300.5, -300.5, 65504, -65504, kNaN, kInf, -kInf};
        case DTypeEnum::BFloat16:
            return {0,     1,    -1,   2.5,  -2.5, 384, -384, 1.5 * std::ldexp(1, 127),
                    70144, kNaN, kInf, -kInf};
        case DTypeEnum::Int8:
            return {0, 1, -1, 127, -128, 100};
        case DTypeEnum::Uint8:
            return {0, 1, 255, 128, 200};
        case DTypeEnum::Int16:
            return {0, 1, -1, 300, -300, 32767, -32768, 256};
        case DTypeEnum::Int32:
            return {0,        1,        -1,    70000, -70000, 2147483647, -2147483648.0,
                    16777217, 16842753, 65519, 65520};
        case DTypeEnum::Bool:
            return {0, 1};
        default:  // quantized dtypes: naive/quantized.cpp
            break;
    }
    return {};
}

// Round to nearest even with `bits` significant bits; inf beyond max_finite. Written with frexp
// so that it does not share code with Eigen's conversions.
double round_to_bits(double v, int bits, double max_finite) {
    if (std::isnan(v) || std::isinf(v) || v == 0)
        return v;
    int e;
    double m = std::frexp(v, &e);
    double r = std::ldexp(std::nearbyint(std::ldexp(m, bits)), e - bits);
    return std::abs(r) > max_finite ? std::copysign(kInf, v) : r;
}

std::pair<double, double> int_range(DType dt) {
    switch (dt.enumv()) {
        case DTypeEnum::Int8:
            return {-128, 127};
        case DTypeEnum::Uint8:
            return {0, 255};
        case DTypeEnum::Int16:
            return {-32768, 32767};
        default:
            return {-2147483648.0, 2147483647.0};
    }
}

// The documented rules of TypeCvt, spelled out independently of the kernel.
double expected(double v, DType src, DType dst) {
    if (dst.is_bool())
        return v != 0 ? 1 : 0;
    if (dst.is_int()) {
        auto [lo, hi] = int_range(dst);
        if (src.is_float()) {
            if (std::isnan(v))
                return 0;
            return std::clamp(std::trunc(v), lo, hi);
        }
        double span = hi - lo + 1;
        double r = std::fmod(v - lo, span);
        return (r < 0 ? r + span : r) + lo;
    }
    switch (dst.enumv()) {
        case DTypeEnum::Float32:
            return round_to_bits(v, 24, std::numeric_limits<float>::max());
        case DTypeEnum::Float16:
            return round_to_bits(v, 11, 65504);
        default:
            return round_to_bits(v, 8, std::ldexp(255, 120));
    }
}

bool same(double a, double b) {
    return (std::isnan(a) && std::isnan(b)) || a == b;
}

HostTensor convert(const HostTensor& src, DType to) {
    auto h = Handle::make_naive();
    param::TypeCvt p;
    p.dtype = to.enumv();
    auto op = make_op<TypeCvt>(h.get(), p);
    auto outs = run_op(*op, {src});
    return std::move(outs[0]);  // a copy of a HostTensor would point into the original's buffer
}

double convert_one(double v, DType from, DType to) {
    return convert(HostTensor::from({1}, {v}, from), to).values()[0];
}

}  // namespace

TEST(TypeCvt, EveryDtypePairFollowsTheRules) {
    for (DType from : all_dtypes()) {
        auto samples = sample_values(from);
        auto src = HostTensor::from({samples.size()}, samples, from);
        // float32 samples such as 2.9 are stored rounded; every other sample is exact
        auto vals = src.values();
        for (size_t i = 0; i < vals.size(); ++i)
            ASSERT_TRUE(from == dtype::Float32 || same(vals[i], samples[i]))
                    << from.name() << " sample " << samples[i];
        for (DType to : all_dtypes()) {
            auto got = convert(src, to);
            ASSERT_EQ(got.dtype(), to);
            auto gv = got.values();
            for (size_t i = 0; i < vals.size(); ++i)
                EXPECT_TRUE(same(gv[i], expected(vals[i], from, to)))
                        << from.name() << " " << vals[i] << " -> " << to.name() << " gave " << gv[i]
                        << ", expected " << expected(vals[i], from, to);
        }
    }
}

TEST(TypeCvt, HandPickedValues) {
    using namespace dtype;
    // float -> int: truncation toward zero, saturation, NaN -> 0
    EXPECT_EQ(convert_one(2.9, Float32, Int32), 2);
    EXPECT_EQ(convert_one(-2.9, Float32, Int32), -2);
    EXPECT_EQ(convert_one(-1.5, Float32, Uint8), 0);
    EXPECT_EQ(convert_one(300.6, Float32, Uint8), 255);
    EXPECT_EQ(convert_one(kNaN, Float32, Int32), 0);
    EXPECT_EQ(convert_one(kInf, Float32, Int16), 32767);
    EXPECT_EQ(convert_one(-kInf, Float32, Int8), -128);
    EXPECT_EQ(convert_one(3e9, Float32, Int32), 2147483647);
    EXPECT_EQ(convert_one(-2.5, Float16, Int8), -2);
    // integer -> integer wraps
    EXPECT_EQ(convert_one(-1, Int8, Uint8), 255);
    EXPECT_EQ(convert_one(300, Int32, Int8), 44);
    EXPECT_EQ(convert_one(-70000, Int32, Int16), -4464);
    EXPECT_EQ(convert_one(200, Uint8, Int8), -56);
    // bool
    EXPECT_EQ(convert_one(0.5, Float32, Bool), 1);
    EXPECT_EQ(convert_one(kNaN, Float32, Bool), 1);
    EXPECT_EQ(convert_one(-0.0, Float32, Bool), 0);
    EXPECT_EQ(convert_one(256, Int16, Bool), 1);
    EXPECT_EQ(convert_one(1, Bool, Float16), 1);
    // round to nearest even: ties go to the even neighbour
    EXPECT_EQ(convert_one(1 + std::ldexp(1, -11), Float32, Float16), 1);
    EXPECT_EQ(convert_one(1 + 3 * std::ldexp(1, -11), Float32, Float16), 1 + std::ldexp(1, -9));
    EXPECT_EQ(convert_one(1 + std::ldexp(1, -8), Float32, BFloat16), 1);
    EXPECT_EQ(convert_one(65520, Float32, Float16), kInf);
    EXPECT_EQ(convert_one(300.5, Float16, BFloat16), 300);
    // int32 -> bfloat16 rounds once: via float32 2^24 + 2^16 + 1 would tie and round down
    EXPECT_EQ(convert_one(16842753, Int32, BFloat16), 16908288);
    EXPECT_EQ(convert_one(16777217, Int32, Float32), 16777216);
}

TEST(TypeCvt, StridedAndBroadcastInputs) {
    auto h = Handle::make_naive();
    for (DType from : all_dtypes())
        for (DType to : {dtype::Float32, dtype::Int8, dtype::Float16, dtype::Bool}) {
            param::TypeCvt p;
            p.dtype = to.enumv();
            Checker<TypeCvt> c(h.get());
            // set_values converts with static_cast, so keep samples inside every source range
            c.set_param(p).set_dtype(0, from).set_range(0, from == dtype::Uint8 ? 0 : -100, 100);
            c.set_noncontiguous(true).execs({{3, 5, 7}}).execs({{1}}).execs({{0, 4}});
            c.exec_layouts({TensorLayout({4, 3}, {0, 1}, from)});
            c.exec_layouts({TensorLayout({3, 4}, from).dimshuffle({1, 0})});
            c.exec_layouts({TensorLayout({5}, {-2}, from)});
        }
}

TEST(TypeCvt, WritesIntoAStridedOutput) {
    auto h = Handle::make_naive();
    param::TypeCvt p;
    p.dtype = DTypeEnum::Int16;
    auto op = make_op<TypeCvt>(h.get(), p);
    auto src = HostTensor::from({2, 3}, {1.5, -2.5, 3.5, 400.25, -7.75, 0});
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({2, 3}, {1, -2}, dtype::Int16));
    exec_into(*op, {src}, dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{1, -2, 3, 400, -7, 0}));
}

TEST(TypeCvt, LargeTensorMatchesRules) {
    std::mt19937 rng(7);
    HostTensor src(TensorLayout({997, 13}, dtype::Float32));
    fill_uniform(src, -400, 400, rng);
    auto got = convert(src, dtype::Int8).values();
    auto in = src.values();
    for (size_t i = 0; i < in.size(); ++i)
        ASSERT_EQ(got[i], expected(in[i], dtype::Float32, dtype::Int8)) << in[i];
}

TEST(TypeCvt, MismatchedOutputIsAClearError) {
    auto h = Handle::make_naive();
    param::TypeCvt p;
    p.dtype = DTypeEnum::Int32;
    auto op = make_op<TypeCvt>(h.get(), p);
    auto src = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    std::vector<HostTensor> bad_shape;
    bad_shape.emplace_back(TensorShape{3, 2}, dtype::Int32);
    expect_error<ShapeError>([&] { exec_into(*op, {src}, bad_shape); },
                             {"TypeCvt(dtype=int32, scale=0, zero_point=0)", "{3,2}", "{2,3}"});
    std::vector<HostTensor> bad_dtype;
    bad_dtype.emplace_back(TensorShape{2, 3}, dtype::Int16);
    expect_error<DTypeError>([&] { exec_into(*op, {src}, bad_dtype); },
                             {"TypeCvt(dtype=int32, scale=0, zero_point=0)", "int16"});
}
