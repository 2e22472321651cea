#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

std::vector<double> eye(size_t r, size_t c, int k, DType dt = dtype::Float32) {
    auto h = Handle::make_naive();
    param::Eye p;
    p.k = k;
    p.dtype = dt.enumv();
    auto op = make_op<Eye>(h.get(), p);
    auto outs = run_op(*op, {}, {{r, c}});
    EXPECT_EQ(outs[0].dtype(), dt);
    return outs[0].values();
}

}  // namespace

TEST(Eye, HandComputed) {
    EXPECT_EQ(eye(2, 2, 0), (std::vector<double>{1, 0, 0, 1}));
    EXPECT_EQ(eye(3, 4, 1), (std::vector<double>{0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1}));
    EXPECT_EQ(eye(3, 2, -1), (std::vector<double>{0, 0, 1, 0, 0, 1}));
    EXPECT_EQ(eye(2, 3, 5), std::vector<double>(6, 0));
    EXPECT_EQ(eye(2, 3, -2), std::vector<double>(6, 0));
    EXPECT_EQ(eye(1, 1, 0), (std::vector<double>{1}));
    EXPECT_TRUE(eye(0, 3, 0).empty());
}

TEST(Eye, EveryDtypeMatchesPlainLoops) {
    for (DType dt : all_dtypes())
        for (int k : {-6, -1, 0, 2}) {
            auto v = eye(13, 7, k, dt);
            for (size_t i = 0; i < 13; ++i)
                for (size_t j = 0; j < 7; ++j)
                    ASSERT_EQ(v[i * 7 + j], static_cast<int>(j) == static_cast<int>(i) + k ? 1 : 0)
                            << dt.name() << " k=" << k << " " << i << "," << j;
        }
    auto big = eye(300, 500, 17);
    size_t ones = 0;
    for (double x : big)
        ones += x == 1;
    EXPECT_EQ(ones, 300u);
}

TEST(Eye, WritesIntoAStridedOutput) {
    auto h = Handle::make_naive();
    param::Eye p;
    p.dtype = DTypeEnum::Int16;
    auto op = make_op<Eye>(h.get(), p);
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({3, 3}, {1, 3}, dtype::Int16));  // column-major
    dst[0].set_values(std::vector<double>(9, 5));
    exec_into(*op, {}, dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{1, 0, 0, 0, 1, 0, 0, 0, 1}));
    Checker<Eye>(h.get()).set_param(p).set_output_shapes({{5, 3}}).execs({});
}

TEST(Eye, NonMatrixShapeIsAClearError) {
    auto h = Handle::make_naive();
    auto op = make_op<Eye>(h.get());
    expect_error<ShapeError>([&] { run_op(*op, {}, {{4}}); }, {"Eye(k=0, dtype=float32)", "{4}"});
    expect_error<ShapeError>([&] { run_op(*op, {}, {{2, 2, 2}}); }, {"Eye(", "{2,2,2}"});
}
