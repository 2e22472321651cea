// Quantized dtypes and the naive kernels that compute on them (TypeCvt, ConvBias, MatrixMul,
// BatchedMatrixMul, MAX pooling, Elemwise's integer modes), against integer arithmetic worked out
// by hand; and the clear errors for what they refuse. HostTensor values of a quantized tensor are
// its stored integers.
#include <unordered_set>

#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/convolution.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/linalg.h"
#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/operators/tensor_basic.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

TypeCvt::Param cvt_to(DType dt) {
    TypeCvt::Param p;
    p.dtype = dt.enumv();
    p.scale = dt.scale();
    p.zero_point = dt.zero_point();
    return p;
}

HostTensor cvt(const HostTensor& src, DType to) {
    return run1<TypeCvt>(cvt_to(to), {src});
}

const HostTensor kAbsent;  // ndim 0: ConvBias's absent bias or z

}  // namespace

TEST(QuantizedDType, ParamsArePartOfEqualityAndHash) {
    DType a = DType::quantized_s8(0.1f), b = DType::quantized_s8(0.1f);
    DType c = DType::quantized_s8(0.2f), u = DType::quantized_8asymm(0.1f, 128);
    EXPECT_EQ(a, b);
    EXPECT_EQ(a.hash(), b.hash());
    EXPECT_NE(a, c);
    EXPECT_NE(a.hash(), c.hash());
    EXPECT_NE(u, DType::quantized_8asymm(0.1f, 127));
    EXPECT_NE(a, DType(dtype::Int8));
    EXPECT_EQ(DType(dtype::Int8).hash(), static_cast<size_t>(DTypeEnum::Int8));
    std::unordered_set<size_t> hashes{a.hash(), c.hash(), u.hash()};
    EXPECT_EQ(hashes.size(), 3u);
}

TEST(QuantizedDType, StorageSizeAndNames) {
    DType q32 = DType::quantized_s32(0.5f), u = DType::quantized_8asymm(0.25f, 3);
    EXPECT_EQ(q32.size(), 4u);
    EXPECT_EQ(q32.storage(), dtype::Int32);
    EXPECT_EQ(u.storage(), dtype::Uint8);
    EXPECT_EQ(u.size(), 1u);
    EXPECT_TRUE(u.is_quantized());
    EXPECT_FALSE(u.is_int());
    EXPECT_FALSE(u.is_signed());
    EXPECT_FALSE(DType(dtype::Float32).is_quantized());
    EXPECT_STREQ(q32.name(), "QuantizedS32");
    EXPECT_EQ(q32.full_name(), "QuantizedS32(0.5)");
    EXPECT_EQ(u.full_name(), "Quantized8Asymm(0.25, 3)");
    EXPECT_EQ(u.zero_point(), 3);
    EXPECT_EQ(TensorLayout({2}, u).to_string(), "{2(1)} Quantized8Asymm(0.25, 3)");
}

TEST(QuantizedDType, BadParamsAreErrors) {
    EXPECT_THROW(DType::quantized_s8(0), DTypeError);
    EXPECT_THROW(DType::quantized_s8(-1), DTypeError);
    EXPECT_THROW(DType::quantized_s8(std::numeric_limits<float>::infinity()), DTypeError);
    EXPECT_THROW(DType::make(DTypeEnum::QuantizedS8, 1, 3), DTypeError);
    EXPECT_THROW(DType::make(DTypeEnum::Quantized8Asymm, 1, 256), DTypeError);
    EXPECT_THROW(DType::make(DTypeEnum::Int8, 1, 0), DTypeError);
    EXPECT_EQ(DType::make(DTypeEnum::Int8, 0, 0), dtype::Int8);
}

TEST(QuantizedTypeCvt, FloatToQuantizedRoundsHalfAwayAndSaturates) {
    // x / 0.5: 0.25 -> 0.5 -> 1, -0.25 -> -1, 0.75 -> 1.5 -> 2, -0.75 -> -2, 1.2 -> 2.4 -> 2,
    // 100 -> 200 -> 127, -100 -> -128, NaN -> 0
    auto x = HostTensor::from({8}, {0.25, -0.25, 0.75, -0.75, 1.2, 100, -100, std::nan("")});
    auto q = cvt(x, DType::quantized_s8(0.5f));
    EXPECT_EQ(q.dtype(), DType::quantized_s8(0.5f));
    EXPECT_EQ(q.values(), (std::vector<double>{1, -1, 2, -2, 2, 127, -128, 0}));
    // uint8 with zero point 100: round(x / 0.5) + 100, saturated to [0, 255]
    auto u = cvt(x, DType::quantized_8asymm(0.5f, 100));
    EXPECT_EQ(u.values(), (std::vector<double>{101, 99, 102, 98, 102, 255, 0, 100}));
}

TEST(QuantizedTypeCvt, MultipliesByTheFloat32Reciprocal) {
    // MegEngine quantizes x as round(x * float(1 / scale)), not round(x / scale); they differ
    // where x / scale lies within float32 rounding of a half. float(1 / 0.1f) is exactly 10:
    // -10.65f * 10 rounds to -106.5 -> -107 (x / 0.1f is -106.49999 -> -106); 0.35f * 10 rounds
    // to 3.5 -> 4 (0.35f / 0.1f is 3.4999998 -> 3). MegEngine 1.13 gives -107, 4, 107 and 3 for
    // Tensor([-10.65, 0.35, 10.65, 0.25]).astype(qint8(0.1)).
    auto x = HostTensor::from({4}, {-10.65f, 0.35f, 10.65f, 0.25f});
    EXPECT_EQ(cvt(x, DType::quantized_s8(0.1f)).values(), (std::vector<double>{-107, 4, 107, 3}));
    // Quantized8Asymm rounds before adding the zero point: -107 + 128 = 21, not round(21.5) = 22.
    EXPECT_EQ(cvt(x, DType::quantized_8asymm(0.1f, 128)).values(),
              (std::vector<double>{21, 132, 235, 131}));
}

TEST(QuantizedTypeCvt, QuantizedToFloatAndInt) {
    auto q = HostTensor::from({4}, {3, -3, 127, -128}, DType::quantized_s8(0.25f));
    EXPECT_EQ(cvt(q, dtype::Float32).values(), (std::vector<double>{0.75, -0.75, 31.75, -32}));
    // to int8: the value truncated toward zero, as MegEngine's astype("int8")
    EXPECT_EQ(cvt(q, dtype::Int8).values(), (std::vector<double>{0, 0, 31, -32}));
    auto u = HostTensor::from({3}, {0, 100, 255}, DType::quantized_8asymm(0.5f, 100));
    EXPECT_EQ(cvt(u, dtype::Float32).values(), (std::vector<double>{-50, 0, 77.5}));
    // an integer source is its value: int8 5 at scale 2 -> round(2.5) = 3
    auto i = HostTensor::from({2}, {5, -5}, dtype::Int8);
    EXPECT_EQ(cvt(i, DType::quantized_s8(2)).values(), (std::vector<double>{3, -3}));
}

TEST(QuantizedTypeCvt, RequantisesBetweenScales) {
    // qint32 at scale 1 -> qint8 at scale 10: 5 -> 0.5 -> 1, 15 -> 2, -25 -> -3, 2000 -> 127
    auto acc = HostTensor::from({5}, {5, 15, 25, -25, 2000}, DType::quantized_s32(1));
    EXPECT_EQ(cvt(acc, DType::quantized_s8(10)).values(), (std::vector<double>{1, 2, 3, -3, 127}));
    // qint8 -> quint8 of the same scale shifts by the zero point, saturating at 0
    auto q = HostTensor::from({3}, {5, -5, -128}, DType::quantized_s8(1));
    EXPECT_EQ(cvt(q, DType::quantized_8asymm(1, 3)).values(), (std::vector<double>{8, 0, 0}));
}

TEST(QuantizedConvBias, IntegerSumsWithBiasAndRelu) {
    // src (1, 1, 2, 2) qint8 scale 0.5, filter (2, 1, 1, 1) qint8 scale 0.25: dst is qint32 of
    // scale 0.125 holding src * filter + bias exactly.
    auto src = HostTensor::from({1, 1, 2, 2}, {1, -2, 3, 127}, DType::quantized_s8(0.5f));
    auto filter = HostTensor::from({2, 1, 1, 1}, {2, -3}, DType::quantized_s8(0.25f));
    auto bias = HostTensor::from({1, 2, 1, 1}, {10, -1}, DType::quantized_s32(0.125f));
    ConvBias::Param p;
    p.stride = {1, 1};
    p.padding = {0, 0};
    p.dilation = {1, 1};
    auto dst = run1<ConvBias>(p, {src, filter, bias, kAbsent});
    EXPECT_EQ(dst.dtype(), DType::quantized_s32(0.125f));
    EXPECT_EQ(dst.values(), (std::vector<double>{12, 6, 16, 264, -4, 5, -10, -382}));
    p.nonlineMode = ConvBias::Param::NonlineMode::RELU;
    EXPECT_EQ(run1<ConvBias>(p, {src, filter, bias, kAbsent}).values(),
              (std::vector<double>{12, 6, 16, 264, 0, 5, 0, 0}));
}

TEST(QuantizedConvBias, Asymmetric3x3WithPaddingSubtractsTheZeroPoint) {
    // quint8 zero point 10: the values are v - 10; the padding adds value 0.
    auto src = HostTensor::from({1, 1, 2, 2}, {11, 12, 13, 14}, DType::quantized_8asymm(1, 10));
    auto filter =
            HostTensor::from({1, 1, 3, 3}, {1, 1, 1, 1, 2, 1, 1, 1, 1}, DType::quantized_s8(1));
    ConvBias::Param p;
    p.stride = {1, 1};
    p.padding = {1, 1};
    p.dilation = {1, 1};
    auto dst = run1<ConvBias>(p, {src, filter, kAbsent, kAbsent});
    // values 1 2 / 3 4; the window sum is 10 everywhere plus the centre once more
    EXPECT_EQ(dst.values(), (std::vector<double>{11, 12, 13, 14}));
    EXPECT_EQ(dst.dtype(), DType::quantized_s32(1));
}

TEST(QuantizedConvBias, BadDtypesAreClearErrors) {
    auto src = HostTensor::from({1, 1, 1, 1}, {1}, DType::quantized_s8(0.5f));
    auto filter = HostTensor::from({1, 1, 1, 1}, {1}, DType::quantized_s8(0.25f));
    ConvBias::Param p;
    p.stride = {1, 1};
    p.padding = {0, 0};
    p.dilation = {1, 1};
    auto wrong_scale = HostTensor::from({1, 1, 1, 1}, {1}, DType::quantized_s32(0.5f));
    expect_error<DTypeError>(
            [&] {
                run1<ConvBias>(p, {src, filter, wrong_scale, kAbsent});
            },
            {"bias must be QuantizedS32(0.125)", "QuantizedS32(0.5)"});
    auto float_filter = HostTensor::from({1, 1, 1, 1}, {1});
    expect_error<DTypeError>(
            [&] {
                run1<ConvBias>(p, {src, float_filter, kAbsent, kAbsent});
            },
            {"QuantizedS8 filter", "float32"});
    auto plain_int = HostTensor::from({1, 1, 1, 1}, {1}, dtype::Int8);
    expect_error<DTypeError>(
            [&] {
                run1<ConvBias>(p, {plain_int, filter, kAbsent, kAbsent});
            },
            {"QuantizedS8 or Quantized8Asymm", "int8"});
    auto z = HostTensor::from({1, 1, 1, 1}, {1}, DType::quantized_s32(0.125f));
    expect_error<NotSupportedError>(
            [&] {
                run1<ConvBias>(p, {src, filter, kAbsent, z});
            },
            {"z is not supported"});
    p.nonlineMode = ConvBias::Param::NonlineMode::H_SWISH;
    expect_error<NotSupportedError>(
            [&] {
                run1<ConvBias>(p, {src, filter, kAbsent, kAbsent});
            },
            {"IDENTITY or RELU"});
}

TEST(QuantizedMatrixMul, ProductOfScalesAndExactInt32Sums) {
    auto a = HostTensor::from({2, 2}, {127, -128, 3, 4}, DType::quantized_s8(0.5f));
    auto b = HostTensor::from({2, 1}, {127, 127}, DType::quantized_s8(0.25f));
    auto c = run1<MatrixMul>(MatrixMul::Param{}, {a, b});
    EXPECT_EQ(c.dtype(), DType::quantized_s32(0.125f));
    EXPECT_EQ(c.values(), (std::vector<double>{-127, 889}));
    auto ba = HostTensor::from({2, 1, 1}, {-3, 5}, DType::quantized_s8(1));
    auto bb = HostTensor::from({2, 1, 1}, {7, 9}, DType::quantized_s8(2));
    auto bc = run1<BatchedMatrixMul>(BatchedMatrixMul::Param{}, {ba, bb});
    EXPECT_EQ(bc.dtype(), DType::quantized_s32(2));
    EXPECT_EQ(bc.values(), (std::vector<double>{-21, 45}));
    // a quantized operand with a plain one is refused
    auto plain = HostTensor::from({2, 1}, {1, 1}, dtype::Int8);
    EXPECT_THROW(run1<MatrixMul>(MatrixMul::Param{}, {a, plain}), DTypeError);
}

TEST(QuantizedPooling, MaxAndAverageKeepTheDtype) {
    DType q = DType::quantized_8asymm(0.5f, 128);
    auto src = HostTensor::from({1, 1, 2, 2}, {3, 200, 128, 0}, q);
    PoolingForward::Param p;
    p.window = {2, 2};
    p.stride = {2, 2};
    p.padding = {0, 0};
    auto dst = run1<PoolingForward>(p, {src});
    EXPECT_EQ(dst.dtype(), q);
    EXPECT_EQ(dst.values(), (std::vector<double>{200}));
    p.mode = PoolingForward::Param::Mode::AVERAGE;
    dst = run1<PoolingForward>(p, {src});
    EXPECT_EQ(dst.dtype(), q);
    EXPECT_EQ(dst.values(), (std::vector<double>{83}));  // 331 / 4 = 82.75
}

// MegEngine 1.13's F.avg_pool2d on these quantized tensors (2x2 windows): the stored integers'
// mean rounded half away from zero; with padding 1 and stride 2 each window holds one element,
// and AVERAGE counts the padding as the zero point.
TEST(QuantizedPooling, AverageRoundsAsMegEngine) {
    PoolingForward::Param p;
    p.mode = PoolingForward::Param::Mode::AVERAGE;
    p.window = {2, 2};
    p.stride = {2, 2};
    p.padding = {0, 0};
    auto s8 = HostTensor::from({6, 1, 2, 2}, {1, 1, 0, 0, -1, -1, 0, 0,  3,   0,   0,   0,
                                              1, 2, 0, 0, 5,  5,  5, -9, 127, 127, 127, 126},
                               DType::quantized_s8(0.1f));
    EXPECT_EQ(run1<PoolingForward>(p, {s8}).values(), (std::vector<double>{1, -1, 1, 1, 2, 127}));
    auto u8 = HostTensor::from(
            {4, 1, 2, 2}, {101, 101, 100, 100, 99, 99, 100, 100, 0, 0, 0, 1, 255, 255, 255, 254},
            DType::quantized_8asymm(0.1f, 100));
    EXPECT_EQ(run1<PoolingForward>(p, {u8}).values(), (std::vector<double>{101, 100, 0, 255}));
    p.padding = {1, 1};
    EXPECT_EQ(run1<PoolingForward>(p, {u8}).values(),
              (std::vector<double>{100, 100, 100, 100, 100, 100, 100, 100, 75, 75, 75, 75, 139, 139,
                                   139, 139}));
    p.mode = PoolingForward::Param::Mode::AVERAGE_COUNT_EXCLUDE_PADDING;
    EXPECT_EQ(run1<PoolingForward>(p, {u8}).values(),
              (std::vector<double>{101, 101, 100, 100, 99, 99, 100, 100, 0, 0, 0, 1, 255, 255, 255,
                                   254}));
}

namespace {

using EMode = Elemwise::Param::Mode;

HostTensor elemwise(EMode m, const std::vector<HostTensor>& in) {
    Elemwise::Param p;
    p.mode = m;
    return run1<Elemwise>(p, in);
}

}  // namespace

// MegEngine's quantized Elemwise works on the stored integers of one scale and keeps the dtype:
// exact while the integers stay in range, wrapping (not saturating) beyond it.
TEST(QuantizedElemwise, ModesComputeOnTheStoredIntegersAndWrap) {
    const DType q = DType::quantized_s8(0.1f);
    auto a = HostTensor::from({6}, {-10, -5, 3, 12, 127, -128}, q);
    auto b = HostTensor::from({6}, {5, 5, -5, 5, 5, -5}, q);
    struct Case {
        EMode mode;
        std::vector<double> want;
    };
    // 127 + 5 = 132 wraps to -124, -128 - 5 = -133 to 123, -(-128) = 128 to -128.
    for (const Case& k :
         {Case{EMode::ADD, {-5, 0, -2, 17, -124, 123}},
          Case{EMode::SUB, {-15, -10, 8, 7, 122, -123}}, Case{EMode::MAX, {5, 5, 3, 12, 127, -5}},
          Case{EMode::MIN, {-10, -5, -5, 5, 5, -128}}, Case{EMode::RELU, {0, 0, 3, 12, 127, 0}},
          Case{EMode::NEGATE, {10, 5, -3, -12, -127, -128}}}) {
        SCOPED_TRACE(param::to_string(k.mode));
        bool unary = param::Elemwise::arity(k.mode) == 1;
        auto out = unary ? elemwise(k.mode, {a}) : elemwise(k.mode, {a, b});
        EXPECT_EQ(out.dtype(), q);
        EXPECT_EQ(out.values(), k.want);
    }
    // A broadcast operand, as a scalar of the same dtype: 3 added to every integer.
    auto three = HostTensor::from({1}, {3}, q);
    EXPECT_EQ(elemwise(EMode::ADD, {three, a}).values(),
              (std::vector<double>{-7, -2, 6, 15, -126, -125}));
}

TEST(QuantizedElemwise, QuantizedS32WrapsAtInt32) {
    const DType q = DType::quantized_s32(0.5f);
    const double lo = -2147483648.0, hi = 2147483647.0;
    auto a = HostTensor::from({4}, {hi, lo, 127, -128}, q);
    auto b = HostTensor::from({4}, {1, -1, 5, -5}, q);
    EXPECT_EQ(elemwise(EMode::ADD, {a, b}).values(), (std::vector<double>{lo, hi, 132, -133}));
    EXPECT_EQ(elemwise(EMode::SUB, {a, b}).values(),
              (std::vector<double>{hi - 1, lo + 1, 122, -123}));
    EXPECT_EQ(elemwise(EMode::NEGATE, {a}).values(), (std::vector<double>{lo + 1, lo, -127, 128}));
    EXPECT_EQ(elemwise(EMode::ADD, {a, b}).dtype(), q);
}

TEST(QuantizedElemwise, OtherModesMixedDtypesAndAsymmetricAreRefused) {
    const DType q = DType::quantized_s8(0.5f);
    auto a = HostTensor::from({2}, {1, 2}, q);
    // Modes not exact on the integers of one scale (MegEngine 1.13 refuses them too).
    for (EMode m : {EMode::MUL, EMode::ABS, EMode::TRUE_DIV, EMode::EQ, EMode::EXP})
        expect_error<DTypeError>(
                [&] {
                    return param::Elemwise::arity(m) == 1 ? elemwise(m, {a}) : elemwise(m, {a, a});
                },
                {param::to_string(m), "does not take QuantizedS8",
                 "only RELU, NEGATE, ADD, SUB, MAX, MIN do"});
    // Another scale, another quantized dtype, a plain integer: no implicit requantisation.
    for (const HostTensor& other : {HostTensor::from({2}, {1, 2}, DType::quantized_s8(0.25f)),
                                    HostTensor::from({2}, {1, 2}, DType::quantized_s32(0.5f)),
                                    HostTensor::from({2}, {1, 2}, dtype::Int8)})
        expect_error<DTypeError>(
                [&] {
                    return elemwise(EMode::ADD, {a, other});
                },
                {"needs inputs of one dtype", "requantize with TypeCvt"});
    // Quantized8Asymm in every mode: a sum of stored integers would count the zero point twice.
    auto u = HostTensor::from({2}, {1, 2}, DType::quantized_8asymm(0.5f, 128));
    for (EMode m : {EMode::ADD, EMode::RELU, EMode::MAX})
        expect_error<DTypeError>(
                [&] {
                    return param::Elemwise::arity(m) == 1 ? elemwise(m, {u}) : elemwise(m, {u, u});
                },
                {"takes no Quantized8Asymm"});
}

TEST(QuantizedBytes, RelayoutAndConcatMoveQuantizedElements) {
    DType q = DType::quantized_s8(0.5f);
    auto a = HostTensor::from({2}, {1, -2}, q), b = HostTensor::from({1}, {3}, q);
    Concat::Param p;
    p.axis = 0;
    auto c = run1<Concat>(p, {a, b});
    EXPECT_EQ(c.dtype(), q);
    EXPECT_EQ(c.values(), (std::vector<double>{1, -2, 3}));
    auto other = HostTensor::from({1}, {3}, DType::quantized_s8(0.25f));
    EXPECT_THROW(run1<Concat>(p, {a, other}), DTypeError);
}
