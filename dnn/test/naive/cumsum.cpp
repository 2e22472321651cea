#include <cmath>

#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/reduce.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Cumsum make_param(int32_t axis, bool exclusive, bool reverse) {
    param::Cumsum p;
    p.axis = axis;
    p.exclusive = exclusive;
    p.reverse = reverse;
    return p;
}

// Plain loops: dst[i] sums src[j] over j <= i (j < i when exclusive), mirrored when reverse.
std::vector<double> reference(const std::vector<double>& v, const TensorShape& shape, size_t axis,
                              bool exclusive, bool reverse) {
    AxisSplit s(shape, axis);
    std::vector<double> out(v.size());
    for (size_t o = 0; o < s.outer; ++o)
        for (size_t r = 0; r < s.inner; ++r)
            for (size_t i = 0; i < s.n; ++i) {
                double acc = 0;
                for (size_t j = 0; j < s.n; ++j) {
                    bool before = reverse ? j > i : j < i;
                    if (before || (j == i && !exclusive))
                        acc += v[s.at(o, j, r)];
                }
                out[s.at(o, i, r)] = acc;
            }
    return out;
}

}  // namespace

TEST(Cumsum, HandComputedFlags) {
    auto x = HostTensor::from({4}, {1, 2, 3, 4});
    EXPECT_EQ(run1<Cumsum>(make_param(0, false, false), {x}).values(),
              (std::vector<double>{1, 3, 6, 10}));
    EXPECT_EQ(run1<Cumsum>(make_param(0, true, false), {x}).values(),
              (std::vector<double>{0, 1, 3, 6}));
    EXPECT_EQ(run1<Cumsum>(make_param(0, false, true), {x}).values(),
              (std::vector<double>{10, 9, 7, 4}));
    EXPECT_EQ(run1<Cumsum>(make_param(-1, true, true), {x}).values(),
              (std::vector<double>{9, 7, 4, 0}));
}

TEST(Cumsum, MatchesPlainLoopsOnEveryAxis) {
    std::mt19937 rng(21);
    TensorShape shape{3, 4, 5};
    auto v = random_values(shape.total_nr_elems(), -2, 2, rng);
    auto x = HostTensor::from(shape, v);
    for (size_t axis = 0; axis < 3; ++axis)
        for (bool exclusive : {false, true})
            for (bool reverse : {false, true}) {
                auto got = run1<Cumsum>(make_param(static_cast<int32_t>(axis), exclusive, reverse),
                                        {x});
                auto want = HostTensor::from(shape, reference(v, shape, axis, exclusive, reverse));
                EXPECT_TRUE(tensors_near(got, want, 1e-5))
                        << "axis " << axis << " exclusive " << exclusive << " reverse " << reverse;
            }
}

TEST(Cumsum, LastElementIsTheSum) {
    std::mt19937 rng(22);
    auto x = HostTensor::from({6, 17}, random_values(102, -1, 1, rng));
    param::Reduce rp;
    rp.axis = 1;
    auto sum = run1<Reduce>(rp, {x}).values();
    auto fwd = run1<Cumsum>(make_param(1, false, false), {x}).values();
    auto bwd = run1<Cumsum>(make_param(1, false, true), {x}).values();
    for (size_t i = 0; i < 6; ++i) {
        EXPECT_NEAR(fwd[i * 17 + 16], sum[i], 1e-5);
        EXPECT_NEAR(bwd[i * 17], sum[i], 1e-5);
    }
}

TEST(Cumsum, StridedInputsAndOutputs) {
    for (int32_t axis : {0, 1, 2})
        for (bool exclusive : {false, true})
            for (bool reverse : {false, true}) {
                Checker<Cumsum> c(naive_handle());
                c.set_param(make_param(axis, exclusive, reverse));
                c.set_noncontiguous(true).execs({{3, 4, 5}}).set_noncontiguous(false);
                c.exec_layouts({TensorLayout({5, 4, 3}, dtype::Float32).dimshuffle({2, 1, 0})});
                c.exec_layouts({TensorLayout({3, 1, 5}, dtype::Float32).broadcast({3, 4, 5})});
                c.exec_layouts({TensorLayout({3, 4, 5}, {-1, -15, 3}, dtype::Float32)});
            }
    std::mt19937 rng(23);
    auto x = HostTensor::from({5, 7}, random_values(35, -1, 1, rng));
    for (bool reverse : {false, true}) {
        auto p = make_param(0, false, reverse);
        auto got = std::move(run_into_padded<Cumsum>(p, {x})[0]);
        EXPECT_FALSE(got.layout().is_contiguous());
        EXPECT_TRUE(tensors_near(got, run1<Cumsum>(p, {x}), 0));
    }
}

TEST(Cumsum, EdgeShapes) {
    for (auto shape : std::vector<TensorShape>{{0}, {3, 0}, {0, 4}}) {
        auto y = run1<Cumsum>(make_param(0, true, false), {HostTensor(shape, dtype::Float32)});
        EXPECT_EQ(y.shape().to_string(), shape.to_string());
    }
    EXPECT_EQ(run1<Cumsum>(make_param(0, true, false), {HostTensor::from({1}, {5})}).values()[0],
              0);
    Checker<Cumsum> c(naive_handle());
    c.set_param(make_param(1, false, true)).execs({{7, 13}}).execs({{2, 2039}});
    std::mt19937 rng(24);
    TensorShape shape{2, 2039};
    auto v = random_values(shape.total_nr_elems(), -1, 1, rng);
    EXPECT_TRUE(
            tensors_near(run1<Cumsum>(make_param(1, false, false), {HostTensor::from(shape, v)}),
                         HostTensor::from(shape, reference(v, shape, 1, false, false)), 1e-4));
}

TEST(Cumsum, EveryDtype) {
    // A float16 accumulator adding 0.5 stalls at 1024, where float16's spacing reaches 1; the
    // running total reaches 2000 only when accumulated wider.
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto x = HostTensor::from({4000}, std::vector<double>(4000, 0.5), dt);
        auto y = run1<Cumsum>(make_param(0, false, false), {x});
        EXPECT_EQ(y.dtype(), dt);
        EXPECT_NEAR(y.values()[3999], 2000, 2000 * default_epsilon(dt));
        Checker<Cumsum>(naive_handle())
                .set_param(make_param(1, true, false))
                .set_dtype(0, dt)
                .set_noncontiguous(true)
                .execs({{4, 9}});
    }
    // int8 wraps like int8 arithmetic.
    auto i8 = HostTensor::from({3}, {100, 100, -100}, dtype::Int8);
    EXPECT_EQ(run1<Cumsum>(make_param(0, false, false), {i8}).values(),
              (std::vector<double>{100, -56, 100}));
    std::mt19937 rng(25);
    TensorShape shape{3, 6};
    auto v = random_values(18, -20, 20, rng, true);
    for (DType dt : {dtype::Int16, dtype::Int32}) {
        auto got = run1<Cumsum>(make_param(1, true, true), {HostTensor::from(shape, v, dt)});
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_EQ(got.values(), reference(v, shape, 1, true, true)) << dt.name();
    }
    auto u8 = HostTensor::from({3}, {200, 50, 10}, dtype::Uint8);
    EXPECT_EQ(run1<Cumsum>(make_param(0, false, false), {u8}).values(),
              (std::vector<double>{200, 250, 4}));
}

TEST(Cumsum, RejectsBadAxisAndBool) {
    expect_error<ParamError>(
            [] {
                run1<Cumsum>(make_param(2, false, false), {HostTensor({2, 3}, dtype::Float32)});
            },
            {"Cumsum(axis=2, exclusive=false, reverse=false)", "out of range",
             "{2(3),3(1)} float32"});
    expect_error<DTypeError>(
            [] { run1<Cumsum>(make_param(0, true, false), {HostTensor({2}, dtype::Bool)}); },
            {"Cumsum(axis=0, exclusive=true", "bool"});
}

TEST(Cumsum, GradientIsTheScanInTheOtherDirection) {
    // The backward rule of cumsum is a cumsum of dy with `reverse` flipped; finite differences of
    // the forward op confirm it.
    std::mt19937 rng(26);
    auto x = HostTensor::from({3, 5}, random_values(15, -1, 1, rng));
    auto dy = HostTensor::from({3, 5}, random_values(15, -1, 1, rng));
    for (bool exclusive : {false, true})
        for (bool reverse : {false, true}) {
            auto p = make_param(1, exclusive, reverse);
            auto num = numeric_grad(
                    [&](const std::vector<HostTensor>& in) { return run1<Cumsum>(p, in); }, {x}, 0,
                    dy);
            auto rule = run1<Cumsum>(make_param(1, exclusive, !reverse), {dy});
            EXPECT_TRUE(tensors_near(num, rule, 1e-3))
                    << "exclusive " << exclusive << " reverse " << reverse;
        }
}
