// UniformRNG and GaussianRNG on the x86 handle against naive, bit for bit (the same Philox stream,
// the same numbers for a seed): sizes 0, 1, not a multiple of the four-element Philox block and
// above the threading grain (so the threads' split must not change a value), several seeds,
// means and deviations; float16 and bfloat16 too, and strided dsts (element i of the stream in the
// i-th element in row-major order); float32 does not warn.
#include "neomeg/dnn/operators/random.h"
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
    // 16-bit dtypes: computed in float, then rounded once, as naive's.
    for (DTypeEnum dt : {DTypeEnum::Float16, DTypeEnum::BFloat16})
        for (const TensorShape& s : kShapes)
            EXPECT_EQ(run_and_compare<GaussianRNG>(*handle, gaussian(3, -0.25f, 3.0f, dt), {}, {s},
                                                   0),
                      "loop");
}

TEST_F(X86, UniformRNGMatchesNaiveBitForBit) {
    for (uint64_t seed : {0ull, 77ull, ~0ull})
        for (const TensorShape& s : kShapes)
            EXPECT_EQ(run_and_compare<UniformRNG>(*handle, uniform(seed, DTypeEnum::Float32), {},
                                                  {s}, 0),
                      "loop");
    // 16-bit dtypes keep as many random bits as their significands hold, so none rounds to 1.
    for (DTypeEnum dt : {DTypeEnum::Float16, DTypeEnum::BFloat16})
        for (uint64_t seed : {3ull, ~0ull})
            for (const TensorShape& s : kShapes)
                EXPECT_EQ(run_and_compare<UniformRNG>(*handle, uniform(seed, dt), {}, {s}, 0),
                          "loop");
}

namespace {

// Runs op into `padded` (a view of a buffer of `elems` elements, all -1 first; the workspace the
// op asks for) and returns the whole buffer, the gaps between the view's elements included.
template <class Op>
std::vector<uint16_t> run_into_view(Handle& handle, const typename Op::Param& p,
                                    const TensorLayout& padded, size_t elems) {
    std::vector<uint16_t> buf(elems * padded.dtype.size() / 2, 0xBFFF);
    auto op = handle.create_operator<Op>();
    op->param() = p;
    TensorND out(buf.data(), padded);
    std::vector<std::byte> ws(op->get_workspace_in_bytes({}, std::span(&padded, 1)));
    op->exec({}, std::span(&out, 1), {ws.data(), ws.size()});
    return buf;
}

}  // namespace

TEST_F(X86, RNGIntoStridedDst) {
    // Element i of the stream goes to dst's i-th element in row-major order, whatever its strides;
    // the gaps between its elements keep their values.
    auto naive = Handle::make_naive();
    for (DTypeEnum e : {DTypeEnum::Float32, DTypeEnum::Float16, DTypeEnum::BFloat16}) {
        DType dt(e);
        TensorLayout padded({3, 5}, {10, 2}, dt), transposed({40, 700}, {1, 40}, dt);
        for (auto [l, elems] :
             {std::pair{padded, size_t{30}}, std::pair{transposed, size_t{28000}}}) {
            auto g = gaussian(5, 1, 2, e);
            EXPECT_EQ(run_into_view<GaussianRNG>(*handle, g, l, elems),
                      run_into_view<GaussianRNG>(*naive, g, l, elems))
                    << l.to_string();
            auto u = uniform(8, e);
            EXPECT_EQ(run_into_view<UniformRNG>(*handle, u, l, elems),
                      run_into_view<UniformRNG>(*naive, u, l, elems))
                    << l.to_string();
        }
    }
}

TEST_F(X86, RNGFloat32DoesNotWarn) {
    x86::forget_naive_warnings();
    testing::internal::CaptureStderr();
    run_and_compare<GaussianRNG>(*handle, gaussian(1, 0, 1, DTypeEnum::Float32), {}, {{64}}, 0);
    run_and_compare<UniformRNG>(*handle, uniform(1, DTypeEnum::Float32), {}, {{64}}, 0);
    std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(err.find("warning"), std::string::npos) << err;
}
