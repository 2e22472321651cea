#include <cmath>
#include <limits>

#include "naive/reduce_test_util.h"
#include "neomeg/dnn/operators/reduce.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::ArgReduce axis_param(int32_t axis) {
    param::ArgReduce p;
    p.axis = axis;
    return p;
}

// Plain loops: first index of the extreme value, or of the first NaN.
std::vector<double> reference(const std::vector<double>& v, const TensorShape& shape, size_t axis,
                              bool find_max) {
    AxisSplit s(shape, axis);
    std::vector<double> out(s.outer * s.inner);
    for (size_t o = 0; o < s.outer; ++o) {
        for (size_t r = 0; r < s.inner; ++r) {
            size_t best = 0;
            for (size_t i = 0; i < s.n; ++i) {
                double x = v[s.at(o, i, r)], b = v[s.at(o, best, r)];
                if (std::isnan(b))
                    break;
                if (std::isnan(x) || (find_max ? x > b : x < b))
                    best = i;
            }
            out[o * s.inner + r] = static_cast<double>(best);
        }
    }
    return out;
}

}  // namespace

TEST(Argmax, HandComputedWithTies) {
    auto x = HostTensor::from({2, 3}, {1, 5, 5, 7, 2, 7});
    auto a1 = run1<Argmax>(axis_param(1), {x});
    EXPECT_EQ(a1.layout().to_string(), "{2(1),1(1)} int32");
    EXPECT_EQ(a1.values(), (std::vector<double>{1, 0}));
    EXPECT_EQ(run1<Argmin>(axis_param(-1), {x}).values(), (std::vector<double>{0, 1}));
    EXPECT_EQ(run1<Argmax>(axis_param(0), {x}).values(), (std::vector<double>{1, 0, 1}));
    EXPECT_EQ(run1<Argmin>(axis_param(0), {x}).values(), (std::vector<double>{0, 1, 0}));
}

TEST(Argmax, FirstNaNWinsForBoth) {
    double nan = std::numeric_limits<double>::quiet_NaN();
    auto x = HostTensor::from({5}, {1, 9, nan, -3, nan});
    EXPECT_EQ(run1<Argmax>(axis_param(0), {x}).values()[0], 2);
    EXPECT_EQ(run1<Argmin>(axis_param(0), {x}).values()[0], 2);
    auto first = HostTensor::from({3}, {nan, 5, -5}, dtype::Float16);
    EXPECT_EQ(run1<Argmax>(axis_param(0), {first}).values()[0], 0);
    EXPECT_EQ(run1<Argmin>(axis_param(0), {first}).values()[0], 0);
}

TEST(Argmax, MatchesPlainLoopsOnEveryAxisAndDtype) {
    std::mt19937 rng(11);
    TensorShape shape{4, 5, 6};
    // Few distinct values, so ties are common and first-occurrence matters.
    auto v = random_values(shape.total_nr_elems(), 0, 4, rng, true);
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Uint8,
                     dtype::Int16, dtype::Int32}) {
        auto x = HostTensor::from(shape, v, dt);
        for (size_t axis = 0; axis < 3; ++axis) {
            auto ai = static_cast<int32_t>(axis);
            TensorShape out = shape;
            out[axis] = 1;
            EXPECT_TRUE(tensors_near(
                    run1<Argmax>(axis_param(ai), {x}),
                    HostTensor::from(out, reference(v, shape, axis, true), dtype::Int32), 0))
                    << dt.name() << " axis " << axis;
            EXPECT_TRUE(tensors_near(
                    run1<Argmin>(axis_param(ai), {x}),
                    HostTensor::from(out, reference(v, shape, axis, false), dtype::Int32), 0))
                    << dt.name() << " axis " << axis;
        }
    }
}

TEST(Argmax, PicksTheExtremeValue) {
    // Invariant against Reduce: src at the returned index equals the line's MAX/MIN.
    std::mt19937 rng(12);
    auto x = HostTensor::from({9, 13}, random_values(117, -5, 5, rng));
    auto v = x.values();
    param::Reduce rp;
    rp.axis = 1;
    rp.mode = param::Reduce::Mode::MAX;
    auto mx = run1<Reduce>(rp, {x}).values();
    rp.mode = param::Reduce::Mode::MIN;
    auto mn = run1<Reduce>(rp, {x}).values();
    auto amx = run1<Argmax>(axis_param(1), {x}).values();
    auto amn = run1<Argmin>(axis_param(1), {x}).values();
    for (size_t i = 0; i < 9; ++i) {
        EXPECT_EQ(v[i * 13 + static_cast<size_t>(amx[i])], mx[i]);
        EXPECT_EQ(v[i * 13 + static_cast<size_t>(amn[i])], mn[i]);
    }
}

TEST(Argmax, StridedBroadcastAndNegativeStrideInputs) {
    for (int32_t axis : {0, 1, 2}) {
        Checker<Argmax> cmax(naive_handle());
        Checker<Argmin> cmin(naive_handle());
        cmax.set_param(axis_param(axis)).set_noncontiguous(true).execs({{3, 4, 5}});
        cmin.set_param(axis_param(axis)).set_noncontiguous(true).execs({{3, 4, 5}});
        cmax.set_noncontiguous(false);
        cmin.set_noncontiguous(false);
        std::vector<TensorLayout> layouts = {
                TensorLayout({3, 4, 5}, dtype::Float32).dimshuffle({1, 2, 0}),
                TensorLayout({1, 4, 5}, dtype::Float32).broadcast({3, 4, 5}),
                TensorLayout({3, 4, 5}, {-20, -5, 1}, dtype::Float32)};
        for (auto& l : layouts) {
            cmax.exec_layouts({l});
            cmin.exec_layouts({l});
        }
    }
}

TEST(Argmax, EdgeShapes) {
    EXPECT_EQ(run1<Argmax>(axis_param(0), {HostTensor::from({1}, {4})}).values()[0], 0);
    auto empty = run1<Argmin>(axis_param(1), {HostTensor({0, 3}, dtype::Float32)});
    EXPECT_EQ(empty.shape().to_string(), "{0,1}");
    for (auto shape : std::vector<TensorShape>{{7, 11, 13}, {3, 1031}}) {
        Checker<Argmax>(naive_handle())
                .set_param(axis_param(-1))
                .set_noncontiguous(true)
                .execs({shape});
        Checker<Argmin>(naive_handle()).set_param(axis_param(0)).execs({shape});
    }
    // The large case against the plain loops.
    std::mt19937 rng(13);
    TensorShape shape{3, 1031};
    auto v = random_values(shape.total_nr_elems(), -1, 1, rng);
    EXPECT_EQ(run1<Argmax>(axis_param(1), {HostTensor::from(shape, v)}).values(),
              reference(v, shape, 1, true));
}

TEST(Argmax, RejectsEmptyAxisBadAxisAndBool) {
    expect_error<ParamError>(
            [] {
                run1<Argmax>(axis_param(1), {HostTensor({3, 0}, dtype::Float32)});
            },
            {"Argmax(axis=1)", "empty axis 1", "{3(1),0(1)} float32"});
    expect_error<ParamError>(
            [] {
                run1<Argmin>(axis_param(-3), {HostTensor({3, 2}, dtype::Int8)});
            },
            {"Argmin(axis=-3)", "out of range", "{3(2),2(1)} int8"});
    expect_error<DTypeError>([] { run1<Argmax>(axis_param(0), {HostTensor({3}, dtype::Bool)}); },
                             {"Argmax(axis=0)", "bool"});
}
