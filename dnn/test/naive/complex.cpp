// complex64: the dtype itself, the naive kernels that compute on it (CreateComplex, ComplexPart,
// Elemwise's ADD, SUB, MUL, NEGATE) against values worked out by hand, and the errors of the
// operators that refuse it.
#include "naive/complex_test_util.h"
#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/operators/reduce.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

Elemwise::Param mode(Elemwise::Param::Mode m) {
    Elemwise::Param p;
    p.mode = m;
    return p;
}

ComplexPart::Param part(ComplexPart::Param::Part which) {
    ComplexPart::Param p;
    p.part = which;
    return p;
}

}  // namespace

TEST(ComplexDType, IsTwoFloat32sAndItsOwnCategory) {
    DType c = dtype::Complex64;
    EXPECT_EQ(c.size(), 8u);
    EXPECT_EQ(sizeof(dt_complex64), 2 * sizeof(float));
    EXPECT_STREQ(c.name(), "complex64");
    EXPECT_EQ(c.full_name(), "complex64");
    EXPECT_EQ(DType::from_name("complex64"), c);  // the model file's round trip
    EXPECT_TRUE(c.is_complex());
    EXPECT_FALSE(c.is_quantized() || c.is_float() || c.is_int() || c.is_bool());
    EXPECT_EQ(c.storage(), c);
    EXPECT_EQ(static_cast<int>(c.enumv()), kNumDTypes - 1);  // appended after the quantized
    EXPECT_TRUE(DType::quantized_s32(1.f).is_quantized());
    EXPECT_EQ(DType::make(DTypeEnum::Complex64, 0, 0), c);
    EXPECT_THROW(DType::make(DTypeEnum::Complex64, 0.5f, 0), DTypeError);
}

TEST(CreateComplex, PairsPartsAndBroadcasts) {
    auto re = HostTensor::from({2, 2}, {1, 2, 3, 4});
    auto im = HostTensor::from({2}, {-0.5, 10});  // broadcast along rows
    HostTensor z = run1<CreateComplex>({}, {re, im});
    EXPECT_EQ(z.dtype(), dtype::Complex64);
    EXPECT_TRUE(z.shape().eq_shape(TensorShape{2, 2}));
    EXPECT_EQ(complex_values(z), (std::vector<cf>{{1, -0.5f}, {2, 10}, {3, -0.5f}, {4, 10}}));
    // Bytes as NumPy's complex64: real, then imaginary, per element.
    const float* f = static_cast<const float*>(z.nd().raw_ptr());
    EXPECT_EQ(std::vector<float>(f, f + 4), (std::vector<float>{1, -0.5f, 2, 10}));
}

TEST(CreateComplex, WritesStridedOutput) {
    auto re = HostTensor::from({2, 3}, {1, 2, 3, 4, 5, 6});
    auto im = HostTensor::from({}, {7});
    auto outs = run_into_padded<CreateComplex>({}, {re, im});
    EXPECT_EQ(complex_values(outs[0]),
              (std::vector<cf>{{1, 7}, {2, 7}, {3, 7}, {4, 7}, {5, 7}, {6, 7}}));
}

TEST(CreateComplex, RefusesOtherDTypesAndShapes) {
    auto f = HostTensor::from({2}, {1, 2});
    auto i = HostTensor::from({2}, {1, 2}, dtype::Int32);
    auto three = HostTensor::from({3}, {1, 2, 3});
    expect_error<DTypeError>(
            [&] {
                run1<CreateComplex>({}, {f, i});
            },
            {"CreateComplex", "float32", "int32"});
    expect_error<ShapeError>(
            [&] {
                run1<CreateComplex>({}, {f, three});
            },
            {"CreateComplex", "broadcast"});
}

TEST(ComplexPart, ReadsEitherPartThroughStrides) {
    // A transposed view: element (i, j) at offset j * 2 + i.
    TensorLayout l({2, 2}, {1, 2}, dtype::Complex64);
    HostTensor z = complex_tensor(l, {{1, 2}, {3, 4}, {5, 6}, {7, 8}});
    using Part = ComplexPart::Param::Part;
    EXPECT_EQ(run1<ComplexPart>(part(Part::REAL), {z}).values(), (std::vector<double>{1, 3, 5, 7}));
    HostTensor im = run1<ComplexPart>(part(Part::IMAG), {z});
    EXPECT_EQ(im.dtype(), dtype::Float32);
    EXPECT_EQ(im.values(), (std::vector<double>{2, 4, 6, 8}));
    auto empty = complex_tensor(TensorLayout({0, 3}, dtype::Complex64), {});
    EXPECT_EQ(run1<ComplexPart>(part(Part::REAL), {empty}).shape().total_nr_elems(), 0u);
}

TEST(ComplexPart, RefusesRealInput) {
    auto f = HostTensor::from({2}, {1, 2});
    expect_error<DTypeError>([&] { run1<ComplexPart>({}, {f}); },
                             {"ComplexPart(part=REAL)", "must be complex64", "float32"});
}

TEST(ElemwiseComplex, RingModesByHand) {
    HostTensor a =
            complex_tensor(TensorLayout({3}, dtype::Complex64), {{1, 2}, {-3, 0.5f}, {0, 0}});
    HostTensor b = complex_tensor(TensorLayout({3}, dtype::Complex64), {{3, -1}, {2, 2}, {-1, 4}});
    using M = Elemwise::Param::Mode;
    EXPECT_EQ(complex_values(run1<Elemwise>(mode(M::ADD), {a, b})),
              (std::vector<cf>{{4, 1}, {-1, 2.5f}, {-1, 4}}));
    EXPECT_EQ(complex_values(run1<Elemwise>(mode(M::SUB), {a, b})),
              (std::vector<cf>{{-2, 3}, {-5, -1.5f}, {1, -4}}));
    // (1+2i)(3-i) = 5+5i; (-3+0.5i)(2+2i) = -7-5i; 0 * anything = 0
    EXPECT_EQ(complex_values(run1<Elemwise>(mode(M::MUL), {a, b})),
              (std::vector<cf>{{5, 5}, {-7, -5}, {0, 0}}));
    EXPECT_EQ(complex_values(run1<Elemwise>(mode(M::NEGATE), {a})),
              (std::vector<cf>{{-1, -2}, {3, -0.5f}, {-0.f, -0.f}}));
}

TEST(ElemwiseComplex, BroadcastsAndRoundsOnce) {
    HostTensor a = complex_tensor(TensorLayout({2, 1}, dtype::Complex64), {{1, 1}, {0.1f, 0.3f}});
    HostTensor b = complex_tensor(TensorLayout({2}, dtype::Complex64), {{2, 0}, {0.7f, 0.2f}});
    auto out = complex_values(run1<Elemwise>(mode(Elemwise::Param::Mode::MUL), {a, b}));
    ASSERT_EQ(out.size(), 4u);
    EXPECT_EQ(out[0], cf(2, 2));
    EXPECT_EQ(out[2], cf(0.2f, 0.6f));
    // Each part is the double product rounded once to float.
    const double ar = 0.1f, ai = 0.3f, br = 0.7f, bi = 0.2f;
    EXPECT_EQ(out[3],
              cf(static_cast<float>(ar * br - ai * bi), static_cast<float>(ar * bi + ai * br)));
}

TEST(ElemwiseComplex, OtherModesAndMixedDTypesAreClearErrors) {
    HostTensor z = complex_tensor(TensorLayout({2}, dtype::Complex64), {{1, 2}, {3, 4}});
    auto f = HostTensor::from({2}, {1, 2});
    using M = Elemwise::Param::Mode;
    for (M m : {M::TRUE_DIV, M::MAX, M::EQ})
        expect_error<DTypeError>(
                [&] {
                    run1<Elemwise>(mode(m), {z, z});
                },
                {"Elemwise", param::to_string(m), "complex64", "NEGATE, ADD, SUB, MUL"});
    for (M m : {M::ABS, M::EXP, M::SQUARE})
        expect_error<DTypeError>([&] { run1<Elemwise>(mode(m), {z}); },
                                 {param::to_string(m), "complex64"});
    expect_error<DTypeError>(
            [&] {
                run1<Elemwise>(mode(M::MUL), {z, f});
            },
            {"one dtype", "complex64", "float32"});
}

TEST(ComplexDType, KernelsWithoutComplexCodeNameTheOperator) {
    HostTensor z = complex_tensor(TensorLayout({2, 2}, dtype::Complex64),
                                  {{1, 2}, {3, 4}, {5, 6}, {7, 8}});
    Reduce::Param sum;
    sum.mode = Reduce::Param::Mode::SUM;
    sum.axis = 0;
    expect_error<DTypeError>([&] { run1<Reduce>(sum, {z}); },
                             {"Reduce(", "complex dtype complex64 is not supported"});
    TypeCvt::Param to_f;
    to_f.dtype = DTypeEnum::Float32;
    expect_error<DTypeError>([&] { run1<TypeCvt>(to_f, {z}); }, {"TypeCvt(", "complex64"});
}

TEST(ComplexDType, ByteMovingKernelsKeepTheValues) {
    std::vector<cf> v{{1, 2}, {3, 4}, {5, 6}, {7, 8}, {9, 10}, {11, 12}};
    HostTensor z = complex_tensor(TensorLayout({2, 3}, dtype::Complex64), v);
    // Relayout into a transposed (strided) copy, read back through its strides.
    HostTensor t(TensorLayout({2, 3}, {1, 2}, dtype::Complex64));
    auto op = naive_handle()->create_operator<Relayout>();
    TensorND src = z.nd(), dst = t.nd();
    op->exec({&src, 1}, {&dst, 1});
    EXPECT_EQ(complex_values(t), v);
}

TEST(ComplexDType, FillWritesValuePlusZeroI) {
    Fill::Param p;
    p.value = 2.5f;
    p.dtype = DTypeEnum::Complex64;
    auto op = naive_handle()->create_operator<Fill>();
    op->param() = p;
    auto out = run_op(*op, {}, {{3}});
    EXPECT_EQ(complex_values(out[0]), (std::vector<cf>{{2.5f, 0}, {2.5f, 0}, {2.5f, 0}}));
}
