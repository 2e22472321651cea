// SoftmaxForward/Backward and LogSoftmaxForward/Backward on the naive backend.
#include <cmath>

#include "naive/norm_test_util.h"
#include "neomeg/dnn/operators/norm.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Softmax axis_param(int32_t axis) {
    param::Softmax p;
    p.axis = axis;
    return p;
}

template <class Op>
HostTensor run1(int32_t axis, const std::vector<HostTensor>& in) {
    auto op = make_op<Op>(axis_param(axis));
    return run_op(*op, in)[0];
}

// Softmax written as the textbook formula, without the max shift, in double.
HostTensor reference(const HostTensor& x, size_t axis, bool log) {
    auto v = x.values();
    std::vector<double> r(v.size());
    for (auto& line : lines_along(x.shape(), axis)) {
        double sum = 0;
        for (size_t i : line)
            sum += std::exp(v[i]);
        for (size_t i : line)
            r[i] = log ? v[i] - std::log(sum) : std::exp(v[i]) / sum;
    }
    return HostTensor::from(x.shape(), r);
}

}  // namespace

TEST(SoftmaxForward, HandComputedValues) {
    auto x = HostTensor::from({2, 3}, {0, std::log(2.0), std::log(3.0), 1000, 1000, 1000});
    auto y = run1<SoftmaxForward>(-1, {x});
    EXPECT_TRUE(tensors_near(
            y, HostTensor::from({2, 3}, {1. / 6, 2. / 6, 3. / 6, 1. / 3, 1. / 3, 1. / 3}), 1e-6));
    auto ly = run1<LogSoftmaxForward>(1, {x});
    double l3 = std::log(3.0);
    EXPECT_TRUE(tensors_near(ly,
                             HostTensor::from({2, 3}, {std::log(1. / 6), std::log(2. / 6),
                                                       std::log(3. / 6), -l3, -l3, -l3}),
                             1e-6));
}

TEST(SoftmaxForward, MatchesTextbookFormulaOnEveryAxis) {
    auto x = random_tensor({2, 3, 5}, 1, -3, 3);
    for (int32_t axis : {0, 1, 2, -1, -3}) {
        size_t a = axis < 0 ? axis + 3 : axis;
        EXPECT_TRUE(tensors_near(run1<SoftmaxForward>(axis, {x}), reference(x, a, false), 1e-5))
                << axis;
        EXPECT_TRUE(tensors_near(run1<LogSoftmaxForward>(axis, {x}), reference(x, a, true), 1e-5))
                << axis;
    }
}

TEST(SoftmaxForward, RowsSumToOneAndLogSoftmaxIsItsLog) {
    auto x = random_tensor({7, 13}, 2, -20, 20);
    auto y = run1<SoftmaxForward>(1, {x}).values();
    auto ly = run1<LogSoftmaxForward>(1, {x}).values();
    for (size_t r = 0; r < 7; ++r) {
        double sum = 0;
        for (size_t k = 0; k < 13; ++k) {
            sum += y[r * 13 + k];
            EXPECT_NEAR(std::log(y[r * 13 + k]), ly[r * 13 + k], 1e-4);
        }
        EXPECT_NEAR(sum, 1.0, 1e-6) << r;
    }
}

TEST(SoftmaxForward, LargeInputsStayFinite) {
    auto x = HostTensor::from({4}, {3e38, 3e38, -3e38, 0});
    EXPECT_TRUE(tensors_near(run1<SoftmaxForward>(0, {x}), HostTensor::from({4}, {.5, .5, 0, 0}),
                             1e-6));
    auto ly = run1<LogSoftmaxForward>(0, {x}).values();
    EXPECT_NEAR(ly[0], -std::log(2.0), 1e-6);
    EXPECT_TRUE(std::isinf(ly[2]) || ly[2] < -1e38);
}

TEST(SoftmaxBackward, MatchesFiniteDifferences) {
    for (int32_t axis : {0, 1, -1}) {
        auto x = random_tensor({3, 4, 5}, 3, -2, 2);
        auto dy = random_tensor({3, 4, 5}, 4);
        for (bool log : {false, true}) {
            auto fwd = [&](const std::vector<HostTensor>& in) {
                return log ? run1<LogSoftmaxForward>(axis, in) : run1<SoftmaxForward>(axis, in);
            };
            auto y = fwd({x});
            auto grad = log ? run1<LogSoftmaxBackward>(axis, {y, dy})
                            : run1<SoftmaxBackward>(axis, {y, dy});
            EXPECT_TRUE(tensors_near(grad, numeric_grad(fwd, {x}, 0, dy), 5e-3))
                    << "axis " << axis << " log " << log;
        }
    }
}

TEST(SoftmaxForward, StridedAndBroadcastInputs) {
    auto check_all = [](auto tag, size_t nin) {
        using Op = typename decltype(tag)::type;
        for (int32_t axis : {0, 1, -1}) {
            Checker<Op> c(naive_handle());
            c.set_param(axis_param(axis)).set_range(0, 0.01, 1);
            std::vector<TensorShape> shapes(nin, TensorShape{4, 5, 6});
            c.set_noncontiguous(true).execs(shapes);
            std::vector<TensorLayout> transposed, broadcast;
            for (size_t i = 0; i < nin; ++i) {
                transposed.push_back(TensorLayout({6, 5, 4}, dtype::Float32).dimshuffle({2, 1, 0}));
                broadcast.push_back(TensorLayout({4, 5, 6}, {0, 6, 1}, dtype::Float32));
            }
            c.set_noncontiguous(false).exec_layouts(transposed).exec_layouts(broadcast);
            // Negative strides: a reversed view.
            std::vector<TensorLayout> reversed(
                    nin, TensorLayout({4, 5, 6}, {30, -6, -1}, dtype::Float32));
            c.exec_layouts(reversed);
        }
    };
    check_all(OpTag<SoftmaxForward>{}, 1);
    check_all(OpTag<LogSoftmaxForward>{}, 1);
    check_all(OpTag<SoftmaxBackward>{}, 2);
    check_all(OpTag<LogSoftmaxBackward>{}, 2);
}

TEST(SoftmaxForward, WritesIntoStridedOutput) {
    auto x = HostTensor::from({2, 2}, {0, 0, 0, std::log(3.0)});
    auto op = make_op<SoftmaxForward>(axis_param(1));
    std::vector<float> buf(8, -1.f);
    TensorND dst(buf.data(), TensorLayout({2, 2}, {4, 2}, dtype::Float32));
    TensorND src = x.nd();
    op->exec({&src, 1}, {&dst, 1});
    std::vector<float> want{.5f, -1, .5f, -1, .25f, -1, .75f, -1};
    for (size_t i = 0; i < 8; ++i)
        EXPECT_NEAR(buf[i], want[i], 1e-6) << i;
}

TEST(SoftmaxForward, EdgeShapes) {
    for (TensorShape s : {TensorShape{0, 5}, TensorShape{5, 0}, TensorShape{1}, TensorShape{1, 1},
                          TensorShape{7, 13}, TensorShape{3, 257}, TensorShape{64, 1000}}) {
        auto x = random_tensor(s, 5, -4, 4);
        auto y = run1<SoftmaxForward>(-1, {x});
        EXPECT_TRUE(tensors_near(y, reference(x, s.ndim - 1, false), 1e-5)) << s.to_string();
        auto dy = random_tensor(s, 6);
        auto g = run1<SoftmaxBackward>(-1, {y, dy});
        EXPECT_TRUE(g.shape().eq_shape(s));
    }
    // A single element: softmax is 1, log-softmax 0, gradients 0.
    auto one = HostTensor::from({1}, {42});
    EXPECT_EQ(run1<SoftmaxForward>(0, {one}).values(), std::vector<double>{1});
    EXPECT_EQ(run1<LogSoftmaxForward>(0, {one}).values(), std::vector<double>{0});
}

TEST(SoftmaxForward, LowPrecisionDtypes) {
    auto x32 = random_tensor({5, 17}, 7, -3, 3);
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        auto x = as_dtype(x32, dt);
        auto want = run1<SoftmaxForward>(1, {as_dtype(x, dtype::Float32)});
        auto got = run1<SoftmaxForward>(1, {x});
        EXPECT_EQ(got.dtype(), dt);
        EXPECT_TRUE(tensors_near(got, as_dtype(want, dt), default_epsilon(dt))) << dt.name();
        auto lwant = run1<LogSoftmaxForward>(1, {as_dtype(x, dtype::Float32)});
        EXPECT_TRUE(tensors_near(run1<LogSoftmaxForward>(1, {x}), as_dtype(lwant, dt),
                                 default_epsilon(dt)))
                << dt.name();
        auto dy = as_dtype(random_tensor({5, 17}, 8), dt);
        auto y = as_dtype(want, dt);
        auto gwant = run1<SoftmaxBackward>(
                1, {as_dtype(y, dtype::Float32), as_dtype(dy, dtype::Float32)});
        EXPECT_TRUE(tensors_near(run1<SoftmaxBackward>(1, {y, dy}), as_dtype(gwant, dt),
                                 default_epsilon(dt)))
                << dt.name();
    }
}

TEST(SoftmaxForward, BadInputsNameOpAndShapes) {
    expect_error<DTypeError>(
            [] {
                deduce<SoftmaxForward>(axis_param(-1), {TensorLayout({2, 3}, dtype::Int32)});
            },
            {"SoftmaxForward(axis=-1)", "{2(3),3(1)} int32"});
    expect_error<ParamError>(
            [] {
                deduce<LogSoftmaxForward>(axis_param(2), {TensorLayout({2, 3}, dtype::Float32)});
            },
            {"LogSoftmaxForward(axis=2)", "axis 2", "{2(3),3(1)}"});
    expect_error<ParamError>(
            [] {
                deduce<SoftmaxForward>(axis_param(-3), {TensorLayout({2, 3}, dtype::Float32)});
            },
            {"axis -3"});
    expect_error<ShapeError>(
            [] {
                deduce<SoftmaxBackward>(axis_param(0), {TensorLayout({2, 3}, dtype::Float32),
                                                        TensorLayout({3, 2}, dtype::Float32)});
            },
            {"SoftmaxBackward(axis=0)", "{2(3),3(1)}", "{3(2),2(1)}"});
    expect_error<DTypeError>(
            [] {
                deduce<LogSoftmaxBackward>(axis_param(0), {TensorLayout({2}, dtype::Float32),
                                                           TensorLayout({2}, dtype::Float16)});
            },
            {"LogSoftmaxBackward", "float16"});
    expect_error<ShapeError>([] { deduce<SoftmaxForward>(axis_param(0), {}); },
                             {"SoftmaxForward", "expects 1"});
}

TEST(SoftmaxForward, AllOpsWriteIntoPaddedOutputs) {
    auto x = random_tensor({3, 4, 5}, 9);
    auto dy = random_tensor({3, 4, 5}, 10);
    for (int32_t axis : {0, 1, 2}) {
        expect_padded_outputs_match<SoftmaxForward>(axis_param(axis), {x});
        expect_padded_outputs_match<LogSoftmaxForward>(axis_param(axis), {x});
        expect_padded_outputs_match<SoftmaxBackward>(axis_param(axis), {x, dy});
        expect_padded_outputs_match<LogSoftmaxBackward>(axis_param(axis), {x, dy});
    }
}

TEST(SoftmaxForward, LowPrecisionStridedInputs) {
    for (DType dt : {dtype::Float16, dtype::BFloat16}) {
        Checker<SoftmaxForward>(naive_handle())
                .set_param(axis_param(1))
                .set_dtype(0, dt)
                .set_noncontiguous(true)
                .execs({{3, 7, 5}});
        Checker<LogSoftmaxBackward>(naive_handle())
                .set_param(axis_param(0))
                .set_dtype(0, dt)
                .set_dtype(1, dt)
                .set_noncontiguous(true)
                .execs({{3, 7}, {3, 7}});
    }
}
