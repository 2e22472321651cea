// UniformRNG and GaussianRNG on the x86 handle against naive, bit for bit (the same Philox stream,
// the same numbers for a seed): sizes 0, 1, not a multiple of the four-element Philox block and
// above the threading grain (so the threads' split must not change a value), several seeds,
// means and deviations; other dtypes and strided dsts go to naive, and float32 does not warn.
#include "src/x86/exec_report.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::GaussianRNG gaussian(uint64_t seed, float mean, float std_dev, DTypeEnum dt) {
    param::GaussianRNG p;
    p.seed = seed;
    p.mean = mean;
    p.std = std_dev;
    p.dtype = dt;
    return p;
}

param::UniformRNG uniform(uint64_t seed, DTypeEnum dt) {
    param::UniformRNG p;
    p.seed = seed;
    p.dtype = dt;
    return p;
}

const std::vector<TensorShape> kShapes = {{0}, {1}, {7}, {13, 17}, {3, 100003}};

}  // namespace

TEST_F(X86, GaussianRNGMatchesNaiveBitForBit) {
    for (uint64_t seed : {0ull, 1ull, 1234567890123ull, ~0ull})
        for (const TensorShape& s : kShapes) {
            auto p = gaussian(seed, 0.5f, 2.5f, DTypeEnum::Float32);
            EXPECT_EQ(run_and_compare<GaussianRNG>(*handle, p, {}, {s}, 0), "loop");
        }
    // A mean and deviation whose product and sum round in double, as naive's do.
    for (auto [mean, std_dev] :
         {std::pair{-3.7f, 0.1f}, std::pair{1e6f, 1e-3f}, std::pair{0.0f, 0.0f}})
        run_and_compare<GaussianRNG>(*handle, gaussian(9, mean, std_dev, DTypeEnum::Float32), {},
                                     {{1001}}, 0);
    // Other dtypes and strided dsts: naive.
    EXPECT_EQ(run_and_compare<GaussianRNG>(*handle, gaussian(3, 0, 1, DTypeEnum::Float16), {},
                                           {{33}}, 0),
              "naive");
}

TEST_F(X86, UniformRNGMatchesNaiveBitForBit) {
    for (uint64_t seed : {0ull, 77ull, ~0ull})
        for (const TensorShape& s : kShapes)
            EXPECT_EQ(run_and_compare<UniformRNG>(*handle, uniform(seed, DTypeEnum::Float32), {},
                                                  {s}, 0),
                      "loop");
    EXPECT_EQ(run_and_compare<UniformRNG>(*handle, uniform(3, DTypeEnum::BFloat16), {}, {{33}}, 0),
              "naive");
}

TEST_F(X86, RNGIntoStridedDstRunsNaive) {
    // Element i of the stream goes to dst's i-th element in row-major order, whatever its strides.
    std::vector<float> got(2 * 15, -1), want(2 * 15, -1);
    TensorLayout padded({3, 5}, {10, 2}, dtype::Float32);
    auto p = gaussian(5, 1, 2, DTypeEnum::Float32);
    auto op = handle->create_operator<GaussianRNG>();
    op->param() = p;
    TensorND out(got.data(), padded);
    op->exec({}, std::span(&out, 1), {});
    EXPECT_EQ(last_kernel(*op), "naive");
    auto ref = Handle::make_naive()->create_operator<GaussianRNG>();
    ref->param() = p;
    TensorND ref_out(want.data(), padded);
    ref->exec({}, std::span(&ref_out, 1), {});
    EXPECT_EQ(got, want);
}

TEST_F(X86, RNGFloat32DoesNotWarn) {
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    run_and_compare<GaussianRNG>(*handle, gaussian(1, 0, 1, DTypeEnum::Float32), {}, {{64}}, 0);
    run_and_compare<UniformRNG>(*handle, uniform(1, DTypeEnum::Float32), {}, {{64}}, 0);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
}
