#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_basic.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

HostTensor diag(const HostTensor& src, int k) {
    auto h = Handle::make_naive();
    param::Diag p;
    p.k = k;
    auto op = make_op<Diag>(h.get(), p);
    auto outs = run_op(*op, {src});
    return std::move(outs[0]);
}

std::vector<double> iota(size_t n) {
    std::vector<double> v(n);
    for (size_t i = 0; i < n; ++i)
        v[i] = static_cast<double>(i);
    return v;
}

}  // namespace

TEST(Diag, HandComputedLikeNumpy) {
    auto m = HostTensor::from({3, 4}, iota(12));
    EXPECT_EQ(diag(m, 0).values(), (std::vector<double>{0, 5, 10}));
    EXPECT_EQ(diag(m, 1).values(), (std::vector<double>{1, 6, 11}));
    EXPECT_EQ(diag(m, -2).values(), (std::vector<double>{8}));
    EXPECT_EQ(diag(m, 4).shape().to_string(), "{0}");
    EXPECT_EQ(diag(m, -3).shape().to_string(), "{0}");
    auto v = HostTensor::from({2}, {1, 2});
    auto d = diag(v, -1);
    EXPECT_EQ(d.shape().to_string(), "{3,3}");
    EXPECT_EQ(d.values(), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
    EXPECT_EQ(diag(v, 2).values(),
              (std::vector<double>{0, 0, 1, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0}));
    EXPECT_EQ(diag(HostTensor::from({0}, {}), 1).shape().to_string(), "{1,1}");
    EXPECT_EQ(diag(HostTensor::from({0}, {}), 1).values(), (std::vector<double>{0}));
}

TEST(Diag, RoundTripAndPlainLoopsForEveryDtype) {
    std::mt19937 rng(5);
    for (DType dt : all_dtypes())
        for (int k : {-3, 0, 2}) {
            HostTensor v({7}, dt);
            fill_uniform(v, 0, 100, rng);
            auto m = diag(v, k);
            ASSERT_EQ(m.shape().to_string(),
                      str_cat("{", 7 + std::abs(k), ",", 7 + std::abs(k), "}"));
            auto mv = m.values(), vv = v.values();
            size_t n = 7 + std::abs(k);
            for (size_t i = 0; i < n; ++i)
                for (size_t j = 0; j < n; ++j) {
                    bool on = static_cast<int>(j) - static_cast<int>(i) == k;
                    double want = on ? vv[k >= 0 ? i : j] : 0;
                    ASSERT_EQ(mv[i * n + j], want) << dt.name() << " k=" << k;
                }
            // numpy.diag(numpy.diag(v, k), k) == v
            EXPECT_EQ(diag(m, k).values(), vv) << dt.name() << " k=" << k;
        }
}

TEST(Diag, StridedInputsThroughChecker) {
    auto h = Handle::make_naive();
    for (int k : {-2, 0, 3}) {
        param::Diag p;
        p.k = k;
        Checker<Diag> c(h.get());
        c.set_param(p).set_noncontiguous(true);
        c.execs({{5}}).execs({{4, 6}}).execs({{1}}).execs({{0}}).execs({{0, 3}}).execs({{13, 11}});
        c.exec_layouts({TensorLayout({5, 4}, dtype::Float32).dimshuffle({1, 0})});
        c.exec_layouts({TensorLayout({5}, {-1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({3, 4}, {0, 1}, dtype::Float32)});
        c.set_dtype(0, dtype::Int16).set_noncontiguous(false).execs({{200, 300}});
    }
}

TEST(Diag, WritesIntoStridedOutputs) {
    auto h = Handle::make_naive();
    param::Diag p;
    p.k = -1;
    auto op = make_op<Diag>(h.get(), p);
    std::vector<HostTensor> m;
    m.emplace_back(TensorLayout({3, 3}, {1, -3}, dtype::Float16));
    m[0].set_values(std::vector<double>(9, 7));
    exec_into(*op, {HostTensor::from({2}, {1, 2}, dtype::Float16)}, m);
    EXPECT_EQ(m[0].values(), (std::vector<double>{0, 0, 0, 1, 0, 0, 0, 2, 0}));
    std::vector<HostTensor> v;
    v.emplace_back(TensorLayout({2}, {-2}, dtype::Float16));
    exec_into(*op, {HostTensor::from({3, 3}, {0, 1, 2, 3, 4, 5, 6, 7, 8}, dtype::Float16)}, v);
    EXPECT_EQ(v[0].values(), (std::vector<double>{3, 7}));
}

TEST(Diag, BadRankIsAClearError) {
    auto h = Handle::make_naive();
    param::Diag p;
    p.k = 1;
    auto op = make_op<Diag>(h.get(), p);
    HostTensor s({2, 2, 2}, dtype::Float32), scalar(TensorShape{}, dtype::Float32);
    expect_error<ShapeError>([&] { run_op(*op, {s}); }, {"Diag(k=1)", "{2(4),2(2),2(1)}"});
    expect_error<ShapeError>([&] { run_op(*op, {scalar}); }, {"Diag(k=1)", "{}"});
}
