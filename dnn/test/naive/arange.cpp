#include <limits>

#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<double> arange(float start, float step, size_t n, DType dt = dtype::Float32) {
    auto h = Handle::make_naive();
    param::Arange p;
    p.start = start;
    p.step = step;
    p.dtype = dt.enumv();
    auto op = make_op<Arange>(h.get(), p);
    auto outs = run_op(*op, {}, {{n}});
    EXPECT_EQ(outs[0].dtype(), dt);
    return outs[0].values();
}

}  // namespace

TEST(Arange, HandComputed) {
    EXPECT_EQ(arange(0, 1, 5), (std::vector<double>{0, 1, 2, 3, 4}));
    EXPECT_EQ(arange(1.5f, 0.5f, 4), (std::vector<double>{1.5, 2, 2.5, 3}));
    EXPECT_EQ(arange(3, -2, 4), (std::vector<double>{3, 1, -1, -3}));
    EXPECT_EQ(arange(7, 1, 1), (std::vector<double>{7}));
    EXPECT_TRUE(arange(0, 1, 0).empty());
    EXPECT_EQ(arange(0, 0.25f, 4, dtype::Float16), (std::vector<double>{0, 0.25, 0.5, 0.75}));
}

TEST(Arange, ValuesBeyondTheDtypeRangeOverflowToInfinity) {
    const double inf = std::numeric_limits<double>::infinity();
    auto f = arange(3e38f, 3e38f, 2);
    EXPECT_EQ(f[0], static_cast<double>(3e38f));
    EXPECT_EQ(f[1], inf);
    EXPECT_EQ(arange(-3e38f, -3e38f, 2, dtype::BFloat16)[1], -inf);
    // FLT_MAX plus half an ulp is a tie that rounds to infinity; a quarter ulp rounds back
    const float fmax = std::numeric_limits<float>::max();
    EXPECT_EQ(arange(fmax, std::ldexp(1.0f, 103), 2)[1], inf);
    EXPECT_EQ(arange(fmax, std::ldexp(1.0f, 102), 2)[1], static_cast<double>(fmax));
    EXPECT_EQ(arange(60000, 10000, 2, dtype::Float16), (std::vector<double>{60000, inf}));
    EXPECT_EQ(arange(0.5f, 0.25f, 3, dtype::BFloat16), (std::vector<double>{0.5, 0.75, 1}));
}

TEST(Arange, IntegerDtypesTruncateEachValue) {
    // values 5, 3.5, 2, 0.5, -1, -2.5 truncated toward zero
    EXPECT_EQ(arange(5, -1.5f, 6, dtype::Int32), (std::vector<double>{5, 3, 2, 0, -1, -2}));
    EXPECT_EQ(arange(-2, 1, 5, dtype::Int8), (std::vector<double>{-2, -1, 0, 1, 2}));
    EXPECT_EQ(arange(250, 3, 3, dtype::Uint8), (std::vector<double>{250, 253, 255}));
    EXPECT_EQ(arange(0, 30000, 3, dtype::Int16), (std::vector<double>{0, 30000, 32767}));
}

TEST(Arange, LargeHasNoAccumulatedError) {
    const size_t n = 100003;
    auto v = arange(0.1f, 0.1f, n);
    // each value is one rounding of start + i * step, never a running sum
    for (size_t i = 0; i < n; i += 997)
        ASSERT_EQ(v[i], static_cast<double>(static_cast<float>(static_cast<double>(0.1f) +
                                                               i * static_cast<double>(0.1f))))
                << i;
    auto w = arange(-5, 1, n, dtype::Int32);
    for (size_t i = 0; i < n; ++i)
        ASSERT_EQ(w[i], -5.0 + static_cast<double>(i));
}

TEST(Arange, WritesIntoAStridedOutput) {
    auto h = Handle::make_naive();
    param::Arange p;
    p.start = 10;
    p.step = -1;
    p.dtype = DTypeEnum::Int32;
    auto op = make_op<Arange>(h.get(), p);
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({5}, {2}, dtype::Int32));
    exec_into(*op, {}, dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{10, 9, 8, 7, 6}));
    Checker<Arange>(h.get()).set_param(p).set_output_shapes({{17}}).execs({});
}

TEST(Arange, BadDtypeAndShapeAreClearErrors) {
    auto h = Handle::make_naive();
    param::Arange p;
    p.dtype = DTypeEnum::Bool;
    auto op = make_op<Arange>(h.get(), p);
    expect_error<DTypeError>([&] { run_op(*op, {}, {{4}}); }, {"Arange(", "bool"});
    op->param().dtype = DTypeEnum::Int32;
    expect_error<ShapeError>([&] { run_op(*op, {}, {{}}); }, {"Arange(", "{}"});
}
