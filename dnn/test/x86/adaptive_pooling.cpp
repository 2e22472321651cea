// AdaptivePoolingForward/Backward on the x86 handle against naive: outputs no larger than their
// inputs (MegEngine's windows are then of one length: run as fixed-window x86 pooling, within
// rounding, sizes that divide and sizes that do not, whose windows overlap) and outputs larger
// than their inputs (our loop, exactly naive's bits), 1-D to 3-D, the float dtypes, strided
// tensors, empty batches, ties and NaNs for MAX; and which kernel each case ran (never naive).
#include <limits>

#include "neomeg/dnn/operators/pooling.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::AdaptivePooling::Mode;

param::AdaptivePooling ap_param(Mode mode, std::vector<int32_t> shape) {
    param::AdaptivePooling p;
    p.mode = mode;
    p.shape = std::move(shape);
    return p;
}

struct Case {
    TensorShape src;
    std::vector<int32_t> shape;
};

TensorShape out_shape(const Case& c) {
    TensorShape s = c.src;
    for (size_t d = 0; d < c.shape.size(); ++d)
        s[2 + d] = size_t(c.shape[d]);
    return s;
}

// Some output larger than its input: windows of two lengths, our loop.
const std::vector<Case> kLoop = {
        {{1, 2, 2}, {3}},       {{3, 1, 1, 1}, {2, 3}},       {{2, 2, 7, 5}, {9, 2}},
        {{1, 3, 5, 9}, {7, 4}}, {{1, 2, 5, 3, 7}, {2, 4, 3}},
};
// Every output no larger than its input: fixed-window pooling, dividing or not.
const std::vector<Case> kPooled = {
        {{2, 3, 10}, {3}},         {{2, 2, 7, 5}, {3, 2}},
        {{1, 3, 5, 9}, {5, 4}},    {{1, 2, 5, 3, 7}, {2, 3, 3}},
        {{4, 16, 57, 57}, {7, 7}}, {{2, 3, 12}, {4}},
        {{2, 4, 8, 8}, {1, 1}},    {{2, 4, 14, 14}, {7, 7}},
        {{1, 1, 4, 4}, {4, 4}},    {{1, 2, 4, 6, 8}, {2, 3, 4}},
        {{4, 16, 56, 56}, {7, 7}},
};

void check(Handle* handle, const Case& c, Mode mode, DType dt, double eps, bool noncontig) {
    Checker<AdaptivePoolingForward> f(handle);
    f.set_param(ap_param(mode, c.shape)).set_dtype(0, dt).set_noncontiguous(noncontig);
    f.set_epsilon(eps).execs({c.src});
    Checker<AdaptivePoolingBackward> b(handle);
    b.set_param(ap_param(mode, c.shape)).set_noncontiguous(noncontig).set_epsilon(eps);
    for (size_t i = 0; i < 3; ++i)
        b.set_dtype(i, dt);
    b.execs({c.src, out_shape(c), out_shape(c)});
}

}  // namespace

TEST_F(X86, AdaptivePoolingLargerOutputsMatchNaiveExactly) {
    for (const Case& c : kLoop)
        for (Mode mode : {Mode::MAX, Mode::AVERAGE})
            for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
                for (bool noncontig : {false, true})
                    check(handle.get(), c, mode, dt, 0, noncontig);
}

TEST_F(X86, AdaptivePoolingSmallerOutputsMatchNaive) {
    for (const Case& c : kPooled)
        for (Mode mode : {Mode::MAX, Mode::AVERAGE})
            for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16})
                for (bool noncontig : {false, true})
                    check(handle.get(), c, mode, dt, dt == dtype::Float32 ? 1e-5 : 1e-2, noncontig);
}

TEST_F(X86, AdaptivePoolingTiesNaNsAndEmpty) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // Ties: the first maximum of a window (row-major) takes the gradient, in the loop (9 x 4 of
    // 7 x 9) and in fixed-window pooling (overlapping 3 x 4, disjoint 7 x 3). NaNs win their
    // window in the loop, as in naive; the oneDNN pooling drops them, so they are checked on the
    // loop's sizes only.
    std::vector<double> v(2 * 7 * 9);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = double((i * 7919) % 3);
    std::vector<double> with_nan = v;
    with_nan[20] = nan;
    with_nan[77] = -nan;
    for (auto [shape, values] :
         {std::pair{std::vector<int32_t>{9, 4}, v}, std::pair{std::vector<int32_t>{9, 4}, with_nan},
          std::pair{std::vector<int32_t>{3, 4}, v}, std::pair{std::vector<int32_t>{7, 3}, v}}) {
        Checker<AdaptivePoolingForward> f(handle.get());
        f.set_param(ap_param(Mode::MAX, shape)).set_epsilon(0).set_values(0, values);
        f.execs({{1, 2, 7, 9}});
        Checker<AdaptivePoolingBackward> b(handle.get());
        b.set_param(ap_param(Mode::MAX, shape)).set_epsilon(0).set_values(0, values);
        TensorShape o{1, 2, size_t(shape[0]), size_t(shape[1])};
        b.execs({{1, 2, 7, 9}, o, o});
    }
    for (Mode mode : {Mode::MAX, Mode::AVERAGE}) {
        Checker<AdaptivePoolingForward> f(handle.get());
        f.set_param(ap_param(mode, {3, 2})).execs({{0, 3, 7, 5}});
        f.set_param(ap_param(mode, {2, 2})).execs({{2, 0, 4, 4}});
        Checker<AdaptivePoolingBackward> b(handle.get());
        b.set_param(ap_param(mode, {3, 2})).execs({{0, 3, 7, 5}, {0, 3, 3, 2}, {0, 3, 3, 2}});
    }
}

TEST_F(X86, AdaptivePoolingRunsPoolingOrItsLoop) {
    std::mt19937 rng(7);
    HostTensor x({2, 3, 14, 14}, dtype::Float32), dy7({2, 3, 7, 7}, dtype::Float32),
            dy5({2, 3, 5, 5}, dtype::Float32), dy_up({2, 3, 16, 5}, dtype::Float32);
    for (HostTensor* t : {&x, &dy7, &dy5, &dy_up})
        fill_uniform(*t, -1, 1, rng);
    for (Mode mode : {Mode::MAX, Mode::AVERAGE}) {
        for (auto [shape, dy] : {std::pair{std::vector<int32_t>{7, 7}, &dy7},
                                 std::pair{std::vector<int32_t>{5, 5}, &dy5}}) {
            std::string k = run_and_compare<AdaptivePoolingForward>(*handle, ap_param(mode, shape),
                                                                    {x}, {}, 1e-5);
            EXPECT_TRUE(k.starts_with("pooling/") && k != "pooling/naive") << k;
            k = run_and_compare<AdaptivePoolingBackward>(*handle, ap_param(mode, shape),
                                                         {x, *dy, *dy}, {}, 1e-5);
            EXPECT_TRUE(k.starts_with("pooling/") && k != "pooling/naive") << k;
        }
        EXPECT_EQ(run_and_compare<AdaptivePoolingForward>(*handle, ap_param(mode, {16, 5}), {x}, {},
                                                          0),
                  "loop");
        EXPECT_EQ(run_and_compare<AdaptivePoolingBackward>(*handle, ap_param(mode, {16, 5}),
                                                           {x, dy_up, dy_up}, {}, 0),
                  "loop");
    }
}
