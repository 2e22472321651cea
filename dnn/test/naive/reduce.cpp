#include <cmath>
#include <limits>

#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/reduce.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;
using Mode = param::Reduce::Mode;

namespace {

param::Reduce make_param(Mode mode, int32_t axis) {
    param::Reduce p;
    p.mode = mode;
    p.axis = axis;
    return p;
}

const Mode kAllModes[] = {Mode::SUM, Mode::SUM_SQR, Mode::PRODUCT,
                          Mode::MIN, Mode::MAX,     Mode::MEAN};

// Plain loops over the (outer, n, inner) view, in double.
std::vector<double> reference(const std::vector<double>& v, const TensorShape& shape, size_t axis,
                              Mode mode) {
    AxisSplit s(shape, axis);
    std::vector<double> out(s.outer * s.inner);
    for (size_t o = 0; o < s.outer; ++o) {
        for (size_t r = 0; r < s.inner; ++r) {
            double sum = 0, sq = 0, prod = 1;
            double mx = -std::numeric_limits<double>::infinity(), mn = -mx;
            for (size_t i = 0; i < s.n; ++i) {
                double x = v[s.at(o, i, r)];
                sum += x;
                sq += x * x;
                prod *= x;
                mx = std::max(mx, x);
                mn = std::min(mn, x);
            }
            double res = 0;
            switch (mode) {
                case Mode::SUM:
                    res = sum;
                    break;
                case Mode::SUM_SQR:
                    res = sq;
                    break;
                case Mode::PRODUCT:
                    res = prod;
                    break;
                case Mode::MIN:
                    res = mn;
                    break;
                case Mode::MAX:
                    res = mx;
                    break;
                case Mode::MEAN:
                    res = sum / static_cast<double>(s.n);
                    break;
            }
            out[o * s.inner + r] = res;
        }
    }
    return out;
}

TensorShape keep_axis(TensorShape s, size_t axis) {
    s[axis] = 1;
    return s;
}

}  // namespace

TEST(Reduce, HandComputedEveryMode) {
    auto x = HostTensor::from({2, 3}, {1, -2, 3, 4, 5, -6});
    struct Case {
        Mode mode;
        std::vector<double> axis0, axis1;
    };
    std::vector<Case> cases = {
            {Mode::SUM, {5, 3, -3}, {2, 3}},
            {Mode::SUM_SQR, {17, 29, 45}, {14, 77}},
            {Mode::PRODUCT, {4, -10, -18}, {-6, -120}},
            {Mode::MIN, {1, -2, -6}, {-2, -6}},
            {Mode::MAX, {4, 5, 3}, {3, 5}},
            {Mode::MEAN, {2.5, 1.5, -1.5}, {2.0 / 3, 1}},
    };
    for (auto& c : cases) {
        auto r0 = run1<Reduce>(make_param(c.mode, 0), {x});
        EXPECT_TRUE(tensors_near(r0, HostTensor::from({1, 3}, c.axis0), 1e-6)) << to_string(c.mode);
        auto r1 = run1<Reduce>(make_param(c.mode, -1), {x});
        EXPECT_TRUE(tensors_near(r1, HostTensor::from({2, 1}, c.axis1), 1e-6)) << to_string(c.mode);
    }
}

TEST(Reduce, MatchesPlainLoopsOnEveryAxis) {
    std::mt19937 rng(1);
    TensorShape shape{3, 4, 5};
    auto v = random_values(shape.total_nr_elems(), -1.5, 1.5, rng);
    auto x = HostTensor::from(shape, v);
    for (auto mode : kAllModes) {
        for (int32_t axis = -3; axis < 3; ++axis) {
            size_t a = static_cast<size_t>((axis + 3) % 3);
            auto got = run1<Reduce>(make_param(mode, axis), {x});
            auto want = HostTensor::from(keep_axis(shape, a), reference(v, shape, a, mode));
            EXPECT_TRUE(tensors_near(got, want, 1e-5)) << to_string(mode) << " axis " << axis;
        }
    }
}

TEST(Reduce, MeanIsSumOverCount) {
    std::mt19937 rng(2);
    auto x = HostTensor::from({7, 11}, random_values(77, -3, 3, rng));
    auto sum = run1<Reduce>(make_param(Mode::SUM, 1), {x}).values();
    auto mean = run1<Reduce>(make_param(Mode::MEAN, 1), {x}).values();
    for (size_t i = 0; i < 7; ++i)
        EXPECT_NEAR(mean[i] * 11, sum[i], 1e-4) << i;
}

TEST(Reduce, StridedBroadcastAndNegativeStrideInputs) {
    for (auto mode : kAllModes) {
        for (int32_t axis : {0, 1, 2}) {
            Checker<Reduce> c(naive_handle());
            c.set_param(make_param(mode, axis)).set_range(0, 0.5, 1.5);
            c.set_noncontiguous(true).execs({{3, 4, 5}}).execs({{2, 7, 13}});
            c.set_noncontiguous(false);
            TensorLayout base({3, 4, 5}, dtype::Float32);
            c.exec_layouts({base.dimshuffle({2, 0, 1})});
            c.exec_layouts({TensorLayout({3, 1, 5}, dtype::Float32).broadcast({3, 4, 5})});
            c.exec_layouts({TensorLayout({3, 4, 5}, {-20, 5, -1}, dtype::Float32)});
        }
    }
}

TEST(Reduce, WritesIntoStridedOutput) {
    std::mt19937 rng(3);
    auto x = HostTensor::from({4, 6}, random_values(24, -1, 1, rng));
    for (auto mode : kAllModes) {
        auto got = std::move(run_into_padded<Reduce>(make_param(mode, 1), {x})[0]);
        EXPECT_FALSE(got.layout().is_contiguous());
        EXPECT_TRUE(tensors_near(got, run1<Reduce>(make_param(mode, 1), {x}), 0));
    }
}

TEST(Reduce, EmptyAxisGivesIdentityOrNaN) {
    HostTensor x({0, 3}, dtype::Float32);
    auto sum = run1<Reduce>(make_param(Mode::SUM, 0), {x});
    EXPECT_EQ(sum.layout().to_string(), "{1(3),3(1)} float32");
    EXPECT_EQ(sum.values(), (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(run1<Reduce>(make_param(Mode::SUM_SQR, 0), {x}).values(),
              (std::vector<double>{0, 0, 0}));
    EXPECT_EQ(run1<Reduce>(make_param(Mode::PRODUCT, 0), {x}).values(),
              (std::vector<double>{1, 1, 1}));
    for (double m : run1<Reduce>(make_param(Mode::MEAN, 0), {x}).values())
        EXPECT_TRUE(std::isnan(m));
    for (double m :
         run1<Reduce>(make_param(Mode::MEAN, 0), {HostTensor({0, 2}, dtype::Int32)}).values())
        EXPECT_TRUE(std::isnan(m));
    for (auto mode : {Mode::MAX, Mode::MIN})
        expect_error<ParamError>(
                [&] { run1<Reduce>(make_param(mode, 0), {x}); },
                {"Reduce(mode=", to_string(mode), "{0(3),3(1)} float32", "empty axis 0"});
}

TEST(Reduce, EmptyOtherAxesGiveEmptyOutput) {
    for (auto mode : kAllModes) {
        auto y = run1<Reduce>(make_param(mode, 0), {HostTensor({3, 0}, dtype::Float32)});
        EXPECT_EQ(y.shape().to_string(), "{1,0}");
        auto z = run1<Reduce>(make_param(mode, 1), {HostTensor({0, 4, 2}, dtype::Int8)});
        EXPECT_EQ(z.shape().to_string(), "{0,1,2}");
    }
}

TEST(Reduce, SizeOnePrimesAndLargeShapes) {
    for (auto mode : kAllModes) {
        Checker<Reduce> c(naive_handle());
        c.set_param(make_param(mode, 0)).set_range(0, 0.9, 1.1);
        c.execs({{1}}).execs({{1, 1}}).execs({{13, 7}});
        c.set_param(make_param(mode, 1)).set_noncontiguous(true).execs({{37, 1031}});
    }
    // One large case against the plain loops: a 1031-long SUM and MAX per row.
    std::mt19937 rng(4);
    TensorShape shape{37, 1031};
    auto v = random_values(shape.total_nr_elems(), -1, 1, rng);
    for (auto mode : {Mode::SUM, Mode::MAX}) {
        auto got = run1<Reduce>(make_param(mode, 1), {HostTensor::from(shape, v)});
        EXPECT_TRUE(
                tensors_near(got, HostTensor::from({37, 1}, reference(v, shape, 1, mode)), 1e-5));
    }
}

TEST(Reduce, Float16AndBFloat16AccumulateWide) {
    // 4096 x 1000 overflows float16 (max 65504) and 4096 x 0.1 stalls a float16 accumulator near
    // 256; a wide accumulator gets both right.
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto big = HostTensor::from({4096}, std::vector<double>(4096, 1000), dt);
        auto mean = run1<Reduce>(make_param(Mode::MEAN, 0), {big});
        EXPECT_EQ(mean.dtype(), dt);
        EXPECT_EQ(mean.values()[0], 1000);
        auto small = HostTensor::from({4096}, std::vector<double>(4096, 0.1), dt);
        double one = small.values()[0];  // 0.1 as stored in dt
        auto sum = run1<Reduce>(make_param(Mode::SUM, 0), {small}).values()[0];
        EXPECT_NEAR(sum, 4096 * one, 4096 * one * default_epsilon(dt)) << dt.name();
    }
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        for (auto mode : kAllModes) {
            Checker<Reduce> c(naive_handle());
            c.set_param(make_param(mode, 1)).set_dtype(0, dt).set_range(0, 0.5, 1.5);
            c.set_noncontiguous(true).execs({{5, 17}});
        }
    }
}

TEST(Reduce, IntegerDtypes) {
    // int8 SUM wraps like int8 arithmetic: 100 + 100 = 200 = -56 (mod 256).
    auto i8 = HostTensor::from({2}, {100, 100}, dtype::Int8);
    auto s = run1<Reduce>(make_param(Mode::SUM, 0), {i8});
    EXPECT_EQ(s.dtype(), dtype::Int8);
    EXPECT_EQ(s.values()[0], -56);
    // Large int32 values, whose float32 sum would round, add exactly.
    auto i32 = HostTensor::from({3}, {16777217, 1, -2}, dtype::Int32);
    EXPECT_EQ(run1<Reduce>(make_param(Mode::SUM, 0), {i32}).values()[0], 16777216);
    EXPECT_EQ(run1<Reduce>(make_param(Mode::PRODUCT, 0), {i32}).values()[0],
              static_cast<double>(static_cast<int32_t>(16777217u * 2u * 0xFFFFFFFFu)));
    // MEAN of integers is float32, like MegEngine's mean.
    auto m = run1<Reduce>(make_param(Mode::MEAN, 0), {HostTensor::from({2}, {1, 2}, dtype::Int32)});
    EXPECT_EQ(m.dtype(), dtype::Float32);
    EXPECT_EQ(m.values()[0], 1.5);
    auto u8 = HostTensor::from({2, 2}, {200, 3, 250, 7}, dtype::Uint8);
    EXPECT_EQ(run1<Reduce>(make_param(Mode::MAX, 0), {u8}).values(), (std::vector<double>{250, 7}));
    EXPECT_EQ(run1<Reduce>(make_param(Mode::MIN, 1), {u8}).values(), (std::vector<double>{3, 7}));
    EXPECT_EQ(run1<Reduce>(make_param(Mode::SUM_SQR, 1), {u8}).values(),
              (std::vector<double>{static_cast<uint8_t>(40009), static_cast<uint8_t>(62549)}));
    // Every integer dtype against the plain loops, on values small enough not to wrap.
    std::mt19937 rng(5);
    TensorShape shape{3, 5};
    auto v = random_values(15, 0, 5, rng, true);
    for (DType dt : {dtype::Int8, dtype::Uint8, dtype::Int16, dtype::Int32}) {
        for (auto mode : kAllModes) {
            auto got = run1<Reduce>(make_param(mode, 1), {HostTensor::from(shape, v, dt)});
            auto want = reference(v, shape, 1, mode);
            EXPECT_EQ(got.dtype(), mode == Mode::MEAN ? dtype::Float32 : dt);
            auto gv = got.values();
            for (size_t i = 0; i < 3; ++i)
                EXPECT_NEAR(gv[i], want[i], 1e-6) << dt.name() << " " << to_string(mode);
        }
    }
}

TEST(Reduce, NaNPropagatesThroughMaxMinAndSum) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    auto x = HostTensor::from({2, 3}, {1, nan, 3, nan, -1, 2});
    for (auto mode : kAllModes)
        for (double r : run1<Reduce>(make_param(mode, 1), {x}).values())
            EXPECT_TRUE(std::isnan(r)) << to_string(mode);
    auto col = run1<Reduce>(make_param(Mode::MAX, 0), {x}).values();
    EXPECT_TRUE(std::isnan(col[0]) && std::isnan(col[1]));
    EXPECT_EQ(col[2], 3);
}

TEST(Reduce, RejectsBadAxisAndBool) {
    auto x = HostTensor({2, 3}, dtype::Float32);
    for (int32_t axis : {2, -3, 100})
        expect_error<ParamError>([&] { run1<Reduce>(make_param(Mode::SUM, axis), {x}); },
                                 {"Reduce(mode=SUM, axis=" + std::to_string(axis) + ")",
                                  "out of range", "{2(3),3(1)} float32"});
    expect_error<ParamError>(
            [&] {
                run1<Reduce>(make_param(Mode::SUM, 0), {HostTensor(TensorShape{}, dtype::Float32)});
            },
            {"Reduce(", "axis 0 is out of range"});
    expect_error<DTypeError>(
            [&] { run1<Reduce>(make_param(Mode::MAX, 0), {HostTensor({4}, dtype::Bool)}); },
            {"Reduce(mode=MAX, axis=0)", "bool", "{4(1)} bool"});
}

TEST(Reduce, RejectsMismatchedOutputShape) {
    auto op = naive_handle()->create_operator<Reduce>();
    op->param() = make_param(Mode::SUM, 1);
    HostTensor x({2, 3}, dtype::Float32), y({2, 3}, dtype::Float32);
    TensorND in = x.nd(), out = y.nd();
    expect_error<ShapeError>(
            [&] {
                op->exec({&in, 1}, {&out, 1});
            },
            {"Reduce(mode=SUM, axis=1)", "{2,3}", "expected {2,1}"});
}

TEST(Reduce, SumAndMeanGradientsBroadcastDy) {
    // The backward rule of SUM broadcasts dy along the axis (divided by n for MEAN); finite
    // differences of the forward op confirm it.
    std::mt19937 rng(6);
    auto x = HostTensor::from({3, 4}, random_values(12, -1, 1, rng));
    auto dy = HostTensor::from({3, 1}, {0.5, -1, 2});
    for (auto mode : {Mode::SUM, Mode::MEAN}) {
        auto num = numeric_grad(
                [&](const std::vector<HostTensor>& in) {
                    return run1<Reduce>(make_param(mode, 1), in);
                },
                {x}, 0, dy);
        double scale = mode == Mode::MEAN ? 0.25 : 1;
        std::vector<double> want;
        for (double d : dy.values())
            want.insert(want.end(), 4, d * scale);
        EXPECT_TRUE(tensors_near(num, HostTensor::from({3, 4}, want), 1e-3)) << to_string(mode);
    }
}
