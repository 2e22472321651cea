#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<double> linspace(float start, float stop, bool endpoint, size_t n,
                             DType dt = dtype::Float32) {
    auto h = Handle::make_naive();
    param::Linspace p;
    p.start = start;
    p.stop = stop;
    p.endpoint = endpoint;
    p.dtype = dt.enumv();
    auto op = make_op<Linspace>(h.get(), p);
    auto outs = run_op(*op, {}, {{n}});
    EXPECT_EQ(outs[0].dtype(), dt);
    return outs[0].values();
}

}  // namespace

TEST(Linspace, HandComputedLikeNumpy) {
    EXPECT_EQ(linspace(0, 1, true, 5), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
    EXPECT_EQ(linspace(0, 1, false, 5), (std::vector<double>{0, 0.2f, 0.4f, 0.6f, 0.8f}));
    EXPECT_EQ(linspace(2, -4, true, 4), (std::vector<double>{2, 0, -2, -4}));
    EXPECT_EQ(linspace(1, 0, true, 1), (std::vector<double>{1}));
    EXPECT_EQ(linspace(1, 0, false, 1), (std::vector<double>{1}));
    EXPECT_EQ(linspace(3, 3, true, 3), (std::vector<double>{3, 3, 3}));
    EXPECT_TRUE(linspace(0, 1, true, 0).empty());
    EXPECT_EQ(linspace(0, 1, true, 3, dtype::Float16), (std::vector<double>{0, 0.5, 1}));
    EXPECT_EQ(linspace(-1, 1, true, 5, dtype::BFloat16),
              (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
}

TEST(Linspace, LargeMatchesFormulaAndEndsExactly) {
    const size_t n = 10007;
    auto v = linspace(-3.5f, 1e4f, true, n);
    ASSERT_EQ(v.size(), n);
    EXPECT_EQ(v.front(), -3.5);
    EXPECT_EQ(v.back(), 1e4);
    double step = (1e4 + 3.5) / (n - 1);
    for (size_t i = 0; i < n; ++i)
        ASSERT_NEAR(v[i], -3.5 + step * static_cast<double>(i), 1e-3) << i;
    // evenly spaced: consecutive differences agree within float32 rounding
    for (size_t i = 1; i < n; ++i)
        ASSERT_NEAR(v[i] - v[i - 1], step, 2e-3) << i;
}

TEST(Linspace, WritesIntoAStridedOutput) {
    auto h = Handle::make_naive();
    param::Linspace p;
    p.start = 1;
    p.stop = 4;
    auto op = make_op<Linspace>(h.get(), p);
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({4}, {-3}, dtype::Float32));
    exec_into(*op, {}, dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{1, 2, 3, 4}));
    Checker<Linspace>(h.get()).set_param(p).set_output_shapes({{31}}).execs({});
}

TEST(Linspace, BadDtypeAndShapeAreClearErrors) {
    auto h = Handle::make_naive();
    param::Linspace p;
    p.dtype = DTypeEnum::Int32;
    auto op = make_op<Linspace>(h.get(), p);
    expect_error<DTypeError>([&] { run_op(*op, {}, {{4}}); }, {"Linspace(", "int32"});
    op->param().dtype = DTypeEnum::Float32;
    expect_error<ShapeError>([&] { run_op(*op, {}, {{2, 3}}); }, {"Linspace(", "{2,3}"});
}
