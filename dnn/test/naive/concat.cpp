#include "naive/tensor_ops_test.h"
#include "neomeg/dnn/operators/tensor_shape.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

HostTensor concat(const std::vector<HostTensor>& srcs, int axis) {
    auto h = Handle::make_naive();
    param::Concat p;
    p.axis = axis;
    auto op = make_op<Concat>(h.get(), p);
    auto outs = run_op(*op, srcs);
    return std::move(outs[0]);
}

}  // namespace

TEST(Concat, HandComputed) {
    std::vector<HostTensor> in;
    in.push_back(HostTensor::from({2, 2}, {1, 2, 3, 4}));
    in.push_back(HostTensor::from({2, 1}, {5, 6}));
    in.push_back(HostTensor::from({2, 0}, {}));
    auto r = concat(in, 1);
    EXPECT_EQ(r.shape().to_string(), "{2,3}");
    EXPECT_EQ(r.values(), (std::vector<double>{1, 2, 5, 3, 4, 6}));
    EXPECT_EQ(concat(in, -1).values(), r.values());
    std::vector<HostTensor> rows;
    rows.push_back(HostTensor::from({1, 2}, {1, 2}));
    rows.push_back(HostTensor::from({2, 2}, {3, 4, 5, 6}));
    EXPECT_EQ(concat(rows, 0).values(), (std::vector<double>{1, 2, 3, 4, 5, 6}));
    std::vector<HostTensor> one;
    one.push_back(HostTensor::from({3}, {7, 8, 9}));
    EXPECT_EQ(concat(one, 0).values(), (std::vector<double>{7, 8, 9}));
}

TEST(Concat, EveryDtypeAndAxisMatchesPlainLoops) {
    std::mt19937 rng(11);
    for (DType dt : all_dtypes())
        for (int axis = 0; axis < 3; ++axis) {
            std::vector<HostTensor> in;
            std::vector<size_t> lens = {2, 0, 5, 1};
            for (size_t len : lens) {
                TensorShape s{3, 4, 5};
                s[axis] = len;
                in.emplace_back(s, dt);
                fill_uniform(in.back(), 0, 50, rng);
            }
            auto r = concat(in, axis);
            TensorShape want{3, 4, 5};
            want[axis] = 8;
            ASSERT_TRUE(r.shape().eq_shape(want)) << r.shape().to_string();
            auto rv = r.values();
            size_t idx = 0;
            for (size_t a = 0; a < want[0]; ++a)
                for (size_t b = 0; b < want[1]; ++b)
                    for (size_t c = 0; c < want[2]; ++c, ++idx) {
                        size_t pos[3] = {a, b, c};
                        size_t k = 0;
                        while (pos[axis] >= lens[k]) {
                            pos[axis] -= lens[k];
                            ++k;
                        }
                        ASSERT_EQ(rv[idx], in[k].at({pos[0], pos[1], pos[2]}))
                                << dt.name() << " axis " << axis;
                    }
        }
}

TEST(Concat, StridedAndBroadcastInputsThroughChecker) {
    auto h = Handle::make_naive();
    param::Concat p;
    p.axis = 1;
    Checker<Concat> c(h.get());
    c.set_param(p).set_noncontiguous(true);
    c.execs({{3, 2, 5}, {3, 7, 5}}).execs({{1, 1}, {1, 0}, {1, 3}}).execs({{0, 2}, {0, 3}});
    c.execs({{13, 17}, {13, 1}, {13, 31}});
    c.exec_layouts({TensorLayout({3, 4}, {0, 1}, dtype::Float32),
                    TensorLayout({4, 3}, dtype::Float32).dimshuffle({1, 0}),
                    TensorLayout({3, 2}, {-2, -1}, dtype::Float32)});
    c.set_noncontiguous(false).set_dtype(0, dtype::Int8).set_dtype(1, dtype::Int8);
    c.execs({{64, 100, 3}, {64, 33, 3}});
}

TEST(Concat, WritesIntoAStridedOutput) {
    auto h = Handle::make_naive();
    auto op = make_op<Concat>(h.get());
    std::vector<HostTensor> dst;
    dst.emplace_back(TensorLayout({3}, {-1}, dtype::Float32));
    exec_into(*op, {HostTensor::from({1}, {1}), HostTensor::from({2}, {2, 3})}, dst);
    EXPECT_EQ(dst[0].values(), (std::vector<double>{1, 2, 3}));
}

TEST(Concat, MismatchesAreClearErrors) {
    auto h = Handle::make_naive();
    param::Concat p;
    p.axis = 1;
    auto op = make_op<Concat>(h.get(), p);
    HostTensor a({2, 3}, dtype::Float32), b({4, 3}, dtype::Float32), c({2, 3}, dtype::Int32),
            d({2, 3, 1}, dtype::Float32);
    expect_error<ShapeError>(
            [&] {
                run_op(*op, {a, b});
            },
            {"Concat(axis=1)", "{2(3),3(1)}", "{4(3),3(1)}"});
    expect_error<ShapeError>([&] { run_op(*op, {a, d}); }, {"Concat(axis=1)", "{2(3),3(1),1(1)}"});
    expect_error<DTypeError>([&] { run_op(*op, {a, c}); }, {"Concat(axis=1)", "int32"});
    expect_error<ShapeError>([&] { run_op(*op, {}); }, {"Concat(axis=1)", "at least one"});
    op->param().axis = 2;
    expect_error<ParamError>([&] { run_op(*op, {a, a}); }, {"Concat(axis=2)", "{2(3),3(1)}"});
    op->param().axis = -3;
    expect_error<ParamError>([&] { run_op(*op, {a, a}); }, {"Concat(axis=-3)", "{2(3),3(1)}"});
}
