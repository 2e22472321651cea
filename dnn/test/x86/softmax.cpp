// SoftmaxForward/Backward and LogSoftmaxBackward on the x86 handle (oneDNN softmax), and
// LogSoftmaxForward (Highway along the last axis, naive otherwise), against naive: every axis
// (negative too) of ranks 1 to 4, sizes 1 and primes, a long axis, large inputs (the maximum is
// subtracted), padded, broadcast and reversed views, padded outputs, and the cases that go to
// naive.
#include <cmath>
#include <limits>

#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

param::Softmax axis(int32_t a) {
    param::Softmax p;
    p.axis = a;
    return p;
}

const std::vector<TensorShape> kShapes = {{1},        {7},       {3, 5},      {2, 1},
                                          {2, 3, 17}, {4, 1000}, {2, 3, 5, 7}};

template <class Fwd, class Bwd>
void check_all(Handle* handle) {
    for (const TensorShape& s : kShapes)
        for (int32_t a = -int32_t(s.ndim); a < int32_t(s.ndim); ++a) {
            Checker<Fwd> f(handle);
            f.set_param(axis(a)).execs({s});
            f.set_noncontiguous(true).execs({s});
            // Large logits: exp overflows unless the maximum is subtracted first.
            f.set_noncontiguous(false).set_range(0, -80, 80).execs({s});
            Checker<Bwd> b(handle);
            b.set_param(axis(a)).set_range(0, 0, 1).execs({s, s});
            b.set_noncontiguous(true).execs({s, s});
        }
}

}  // namespace

TEST_F(X86, SoftmaxMatchesNaive) {
    check_all<SoftmaxForward, SoftmaxBackward>(handle.get());
}

TEST_F(X86, LogSoftmaxMatchesNaive) {
    check_all<LogSoftmaxForward, LogSoftmaxBackward>(handle.get());
}

TEST_F(X86, SoftmaxBroadcastAndReversedViews) {
    Checker<SoftmaxForward> c(handle.get());
    c.set_param(axis(-1));
    c.exec_layouts({TensorLayout({4, 9}, {0, 1}, dtype::Float32)});
    c.exec_layouts({TensorLayout({4, 9}, {9, -1}, dtype::Float32)});
    Checker<LogSoftmaxBackward> b(handle.get());
    b.set_param(axis(0)).exec_layouts({TensorLayout({4, 9}, {-9, 1}, dtype::Float32),
                                       TensorLayout({4, 9}, {1, 0}, dtype::Float32)});
}

TEST_F(X86, SoftmaxRunsOneDnn) {
    std::mt19937 rng(2);
    HostTensor x({64, 10}, dtype::Float32), dy({64, 10}, dtype::Float32);
    fill_uniform(x, -3, 3, rng);
    fill_uniform(dy, -1, 1, rng);
    EXPECT_TRUE(run_and_compare<SoftmaxForward>(*handle, axis(1), {x}).starts_with("onednn:"));
    EXPECT_TRUE(run_and_compare<SoftmaxBackward>(*handle, axis(1), {x, dy}).starts_with("onednn:"));
    EXPECT_TRUE(
            run_and_compare<LogSoftmaxBackward>(*handle, axis(0), {x, dy}).starts_with("onednn:"));
}

// Along the last axis of contiguous tensors LogSoftmaxForward runs the Highway kernel, equal to
// naive: every length (vector tails), many rows (threads), large logits and non-finite rows.
TEST_F(X86, LogSoftmaxLastAxisMatchesNaiveExactly) {
    for (const TensorShape& s :
         std::vector<TensorShape>{{1}, {7}, {64, 10}, {3, 17}, {2, 3, 1000}, {1024, 130}, {5, 1}}) {
        Checker<LogSoftmaxForward> c(handle.get());
        c.set_param(axis(-1)).set_epsilon(0).execs({s});
        // With a dominant logit, log(sum) is about 1e-12: the summation order shows in its last
        // digits, relative to that tiny value, in either kernel.
        c.set_range(0, -80, 80).set_epsilon(1e-6).execs({s});
    }
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v(6 * 19, 0.5);
    v[3] = nan;
    v[19 + 18] = inf;
    v[2 * 19] = -inf;
    v[3 * 19 + 4] = 3e38;
    v[3 * 19 + 5] = -3e38;
    v[4 * 19 + 7] = inf;
    v[4 * 19 + 8] = -inf;
    Checker<LogSoftmaxForward> c(handle.get());
    c.set_param(axis(1)).set_epsilon(0).set_values(0, v).execs({{6, 19}});
}

TEST_F(X86, LogSoftmaxForwardRunsHighwayAlongTheLastAxis) {
    std::mt19937 rng(4);
    HostTensor x({64, 10}, dtype::Float32);
    fill_uniform(x, -3, 3, rng);
    EXPECT_EQ(run_and_compare<LogSoftmaxForward>(*handle, axis(1), {x}), "hwy");
    EXPECT_EQ(run_and_compare<LogSoftmaxForward>(*handle, axis(0), {x}), "naive");
}

// The printed loss of cross_entropy([[0, 0]], [1]) is log(2) rounded to float32, as in MegEngine.
TEST_F(X86, LogSoftmaxIsExactlyRounded) {
    auto op = handle->create_operator<LogSoftmaxForward>();
    op->param() = axis(1);
    HostTensor x({1, 2}, dtype::Float32);
    x.set_values({0, 0});
    auto y = run_op(*op, {x})[0].values();
    EXPECT_EQ(static_cast<float>(y[1]), static_cast<float>(-std::log(2.0)));
}

TEST_F(X86, SoftmaxOtherDtypesAndEmptyRunNaive) {
    HostTensor h({3, 5}, dtype::Float16), empty({0, 5}, dtype::Float32);
    EXPECT_EQ(run_and_compare<SoftmaxForward>(*handle, axis(1), {h}, {}, 1e-2), "naive");
    EXPECT_EQ(run_and_compare<SoftmaxForward>(*handle, axis(1), {empty}), "naive");
    Checker<LogSoftmaxForward> c(handle.get());
    c.set_param(axis(0)).set_dtype(0, dtype::BFloat16).execs({{3, 5}});
}
