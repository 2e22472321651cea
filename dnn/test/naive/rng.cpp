// UniformRNG, GaussianRNG and PermutationRNG on the naive backend.
#include <algorithm>
#include <cmath>

#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/random.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

template <class Op>
HostTensor generate(const typename Op::Param& p, const TensorShape& shape) {
    auto op = make_op<Op>(p);
    return std::move(run_op(*op, {}, {shape})[0]);
}

param::UniformRNG uniform(uint64_t seed, DTypeEnum dt = DTypeEnum::Float32) {
    param::UniformRNG p;
    p.seed = seed;
    p.dtype = dt;
    return p;
}

param::GaussianRNG gaussian(uint64_t seed, float mean, float std,
                            DTypeEnum dt = DTypeEnum::Float32) {
    param::GaussianRNG p;
    p.seed = seed;
    p.mean = mean;
    p.std = std;
    p.dtype = dt;
    return p;
}

param::PermutationRNG permutation(uint64_t seed, DTypeEnum dt = DTypeEnum::Int32) {
    param::PermutationRNG p;
    p.seed = seed;
    p.dtype = dt;
    return p;
}

std::pair<double, double> mean_var(const std::vector<double>& v) {
    double m = 0, s = 0;
    for (double x : v)
        m += x;
    m /= double(v.size());
    for (double x : v)
        s += (x - m) * (x - m);
    return {m, s / double(v.size())};
}

}  // namespace

TEST(UniformRNG, FirstValuesComeFromTheKnownAnswerBlock) {
    // Seed 0: elements 0..3 are the top 24 bits of the Random123 zero block over 2^24.
    auto v = generate<UniformRNG>(uniform(0), {4}).values();
    uint32_t words[] = {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8};
    for (size_t i = 0; i < 4; ++i)
        EXPECT_EQ(v[i], double(words[i] >> 8) / 16777216.0) << i;
}

TEST(UniformRNG, StatisticsOfAHundredThousandDraws) {
    auto v = generate<UniformRNG>(uniform(123), {100000}).values();
    for (double x : v)
        ASSERT_TRUE(x >= 0 && x < 1) << x;
    auto [m, var] = mean_var(v);
    // Standard error of the mean is sqrt(1/12/1e5) ~ 9e-4; allow 5 of them.
    EXPECT_NEAR(m, 0.5, 5e-3);
    EXPECT_NEAR(var, 1.0 / 12, 3e-3);
    // Every tenth of the interval gets its share.
    std::vector<int> hist(10, 0);
    for (double x : v)
        ++hist[size_t(x * 10)];
    for (int h : hist)
        EXPECT_NEAR(h, 10000, 500);
}

TEST(UniformRNG, SameSeedSameValuesDifferentSeedDifferentValues) {
    auto a = generate<UniformRNG>(uniform(7), {3, 5, 7});
    auto b = generate<UniformRNG>(uniform(7), {3, 5, 7});
    auto c = generate<UniformRNG>(uniform(8), {3, 5, 7});
    EXPECT_EQ(a.values(), b.values());
    auto va = a.values(), vc = c.values();
    size_t same = 0;
    for (size_t i = 0; i < va.size(); ++i)
        same += va[i] == vc[i];
    EXPECT_LT(same, 3u);
    // A value depends on its index only, not on the shape around it.
    auto flat = generate<UniformRNG>(uniform(7), {105}).values();
    EXPECT_EQ(flat, va);
    auto prefix = generate<UniformRNG>(uniform(7), {10}).values();
    EXPECT_TRUE(std::equal(prefix.begin(), prefix.end(), va.begin()));
}

TEST(UniformRNG, LowPrecisionDtypesStayBelowOne) {
    for (auto dt : {DTypeEnum::Float16, DTypeEnum::BFloat16}) {
        auto t = generate<UniformRNG>(uniform(5, dt), {20000});
        EXPECT_EQ(t.dtype(), DType(dt));
        auto v = t.values();
        for (double x : v)
            ASSERT_TRUE(x >= 0 && x < 1) << x;
        EXPECT_NEAR(mean_var(v).first, 0.5, 0.02);
    }
}

TEST(UniformRNG, WritesIntoStridedOutputInLogicalOrder) {
    auto op = make_op<UniformRNG>(uniform(3));
    std::vector<float> buf(12, -1.f);
    // A transposed 3x2 view with a gap after every element.
    TensorND dst(buf.data(), TensorLayout({3, 2}, {2, 6}, dtype::Float32));
    op->exec({}, {&dst, 1});
    auto want = generate<UniformRNG>(uniform(3), {3, 2}).values();
    for (size_t i = 0; i < 3; ++i)
        for (size_t j = 0; j < 2; ++j)
            EXPECT_EQ(buf[i * 2 + j * 6], float(want[i * 2 + j]));
    EXPECT_EQ(buf[1], -1.f);
}

TEST(UniformRNG, EmptyAndCheckerRuns) {
    EXPECT_EQ(generate<UniformRNG>(uniform(1), {0, 3}).values().size(), 0u);
    EXPECT_EQ(generate<UniformRNG>(uniform(1), {1}).values().size(), 1u);
    Checker<UniformRNG>(naive_handle())
            .set_param(uniform(9))
            .set_output_shapes({{7, 13}})
            .execs({});
    Checker<GaussianRNG>(naive_handle())
            .set_param(gaussian(9, 1, 2))
            .set_output_shapes({{3, 0}})
            .execs({});
}

TEST(GaussianRNG, StatisticsOfAHundredThousandDraws) {
    auto v = generate<GaussianRNG>(gaussian(11, 2.5f, 3.f), {100000}).values();
    auto [m, var] = mean_var(v);
    // Standard error of the mean is 3 / sqrt(1e5) ~ 0.0095.
    EXPECT_NEAR(m, 2.5, 0.05);
    EXPECT_NEAR(var, 9.0, 0.15);
    size_t within_one_sd = 0;
    for (double x : v)
        within_one_sd += std::abs(x - 2.5) < 3.0;
    EXPECT_NEAR(double(within_one_sd) / 1e5, 0.6827, 0.01);
}

TEST(GaussianRNG, BoxMullerOfTheKnownAnswerBlock) {
    auto v = generate<GaussianRNG>(gaussian(0, 0, 1), {2}).values();
    double u1 = double((0x6627e8d5u >> 8) + 1) / 16777216.0;
    double u2 = double(0xe169c58du >> 8) / 16777216.0;
    double r = std::sqrt(-2 * std::log(u1)), th = 2 * M_PI * u2;
    EXPECT_NEAR(v[0], r * std::cos(th), 1e-5);
    EXPECT_NEAR(v[1], r * std::sin(th), 1e-5);
}

TEST(GaussianRNG, SeedsAndDtypes) {
    auto a = generate<GaussianRNG>(gaussian(1, 0, 1), {1000}).values();
    EXPECT_EQ(a, generate<GaussianRNG>(gaussian(1, 0, 1), {1000}).values());
    EXPECT_NE(a, generate<GaussianRNG>(gaussian(2, 0, 1), {1000}).values());
    auto zero_std = generate<GaussianRNG>(gaussian(1, 4, 0), {10}).values();
    EXPECT_EQ(zero_std, std::vector<double>(10, 4.0));
    for (auto dt : {DTypeEnum::Float16, DTypeEnum::BFloat16}) {
        auto t = generate<GaussianRNG>(gaussian(1, 0, 1, dt), {1000});
        EXPECT_TRUE(tensors_near(t, as_dtype(HostTensor::from({1000}, a), DType(dt)), 0))
                << DType(dt).name();
    }
}

TEST(PermutationRNG, IsAPermutation) {
    for (size_t n : {0, 1, 2, 7, 97, 10000}) {
        auto v = generate<PermutationRNG>(permutation(5), {n}).values();
        ASSERT_EQ(v.size(), n);
        std::vector<double> sorted = v;
        std::sort(sorted.begin(), sorted.end());
        for (size_t i = 0; i < n; ++i)
            ASSERT_EQ(sorted[i], double(i)) << n;
    }
    auto f = generate<PermutationRNG>(permutation(5, DTypeEnum::Float32), {97});
    EXPECT_EQ(f.dtype(), dtype::Float32);
    EXPECT_EQ(f.values(), generate<PermutationRNG>(permutation(5), {97}).values());
}

TEST(PermutationRNG, SeedsAndShuffling) {
    auto a = generate<PermutationRNG>(permutation(1), {1000}).values();
    EXPECT_EQ(a, generate<PermutationRNG>(permutation(1), {1000}).values());
    EXPECT_NE(a, generate<PermutationRNG>(permutation(2), {1000}).values());
    // A shuffle leaves about one element in place, never most of them.
    size_t fixed = 0;
    for (size_t i = 0; i < a.size(); ++i)
        fixed += a[i] == double(i);
    EXPECT_LT(fixed, 10u);
}

TEST(RNG, BadParamsNameOpAndShapes) {
    expect_error<DTypeError>([] { deduce<UniformRNG>(uniform(0, DTypeEnum::Int32), {}, {{3}}); },
                             {"UniformRNG(seed=0, dtype=int32)", "int32"});
    expect_error<ParamError>([] { deduce<GaussianRNG>(gaussian(0, 0, -1), {}, {{3}}); },
                             {"GaussianRNG(", "std -1"});
    expect_error<ParamError>([] { deduce<GaussianRNG>(gaussian(0, NAN, 1), {}, {{3}}); },
                             {"GaussianRNG(", "mean nan"});
    expect_error<DTypeError>(
            [] { deduce<GaussianRNG>(gaussian(0, 0, 1, DTypeEnum::Uint8), {}, {{3}}); },
            {"GaussianRNG(", "uint8"});
    expect_error<ShapeError>(
            [] {
                deduce<PermutationRNG>(permutation(0), {}, {{3, 4}});
            },
            {"PermutationRNG(seed=0, dtype=int32)", "{3,4}", "1-D"});
    expect_error<DTypeError>(
            [] { deduce<PermutationRNG>(permutation(0, DTypeEnum::Int8), {}, {{3}}); },
            {"PermutationRNG(", "int8"});
    expect_error<ParamError>(
            [] {
                deduce<PermutationRNG>(permutation(0, DTypeEnum::Float32), {}, {{(1u << 24) + 1}});
            },
            {"PermutationRNG(", "{16777217}"});
    expect_error<ShapeError>(
            [] { deduce<UniformRNG>(uniform(0), {TensorLayout({3}, dtype::Float32)}, {{3}}); },
            {"UniformRNG(", "expects 0 inputs"});
}

TEST(RNG, GeneratorsWriteIntoPaddedOutputs) {
    expect_padded_outputs_match<UniformRNG>(uniform(4), {}, {{5, 7}});
    expect_padded_outputs_match<GaussianRNG>(gaussian(4, 1, 2), {}, {{5, 7}});
    expect_padded_outputs_match<PermutationRNG>(permutation(4), {}, {{37}});
}
