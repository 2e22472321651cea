// Softmax and log-softmax forward and backward on the x86 handle (oneDNN where it has a JIT
// kernel, our loops elsewhere; log-softmax forward always ours) against naive: every axis (negative
// too) of ranks 1 to 4, sizes 1 and primes, a long axis, large inputs (the maximum is subtracted),
// padded, broadcast and reversed views, padded outputs, the vector loops' edges, non-finite
// values, the 16-bit dtypes through float32, and the empty tensors that go to naive.
#include <cmath>
#include <limits>

#include "neomeg/dnn/operators/norm.h"
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

// Whichever kernel the CPU gets (oneDNN's JIT one, or our loops where oneDNN 2.6 has only its
// reference kernel), no float32 call of these shapes runs naive.
TEST_F(X86, SoftmaxFloat32NeverRunsNaive) {
    std::mt19937 rng(2);
    HostTensor x({64, 10}, dtype::Float32), dy({64, 10}, dtype::Float32);
    fill_uniform(x, -3, 3, rng);
    fill_uniform(dy, -1, 1, rng);
    for (int32_t a : {0, 1}) {
        EXPECT_NE(run_and_compare<SoftmaxForward>(*handle, axis(a), {x}), "naive");
        EXPECT_NE(run_and_compare<SoftmaxBackward>(*handle, axis(a), {x, dy}), "naive");
        EXPECT_NE(run_and_compare<LogSoftmaxForward>(*handle, axis(a), {x}), "naive");
        EXPECT_NE(run_and_compare<LogSoftmaxBackward>(*handle, axis(a), {x, dy}), "naive");
    }
}

// LogSoftmaxForward computes in double like naive and equals it: along the last axis (every
// length: vector tails; many rows: threads) and across columns (axis 0 and 1 of 3-D tensors,
// column counts around the vector widths and the 256-column block), large logits and non-finite
// rows.
TEST_F(X86, LogSoftmaxMatchesNaiveExactly) {
    for (const TensorShape& s :
         std::vector<TensorShape>{{2, 2}, {5, 3, 9}, {3, 7, 300}, {9, 2, 17}})
        for (int32_t a : {0, 1}) {
            Checker<LogSoftmaxForward> c(handle.get());
            c.set_param(axis(a)).set_epsilon(0).execs({s});
        }
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

// The printed loss of cross_entropy([[0, 0]], [1]) is log(2) rounded to float32, as in MegEngine.
TEST_F(X86, LogSoftmaxIsExactlyRounded) {
    auto op = handle->create_operator<LogSoftmaxForward>();
    op->param() = axis(1);
    HostTensor x({1, 2}, dtype::Float32);
    x.set_values({0, 0});
    auto y = run_op(*op, {x})[0].values();
    EXPECT_EQ(static_cast<float>(y[1]), static_cast<float>(-std::log(2.0)));
}

TEST_F(X86, SoftmaxEmptyRunsNaive) {
    HostTensor empty({0, 5}, dtype::Float32);
    EXPECT_EQ(run_and_compare<SoftmaxForward>(*handle, axis(1), {empty}), "naive");
    EXPECT_EQ(run_and_compare<LogSoftmaxBackward>(*handle, axis(0), {empty, empty}), "naive");
}

// float16 and bfloat16 compute in float32 between conversions: against naive, which computes in
// double, within the 16-bit dtype's rounding; along the last axis and across columns.
TEST_F(X86, SoftmaxSixteenBitFloats) {
    for (DType dt : {dtype::Float16, dtype::BFloat16})
        for (int32_t a : {0, 1, 2}) {
            Checker<SoftmaxForward> f(handle.get());
            f.set_param(axis(a)).set_dtype(0, dt).execs({{3, 17, 5}});
            Checker<LogSoftmaxForward> lf(handle.get());
            lf.set_param(axis(a)).set_dtype(0, dt).execs({{3, 17, 5}});
            Checker<SoftmaxBackward> b(handle.get());
            b.set_param(axis(a)).set_dtype(0, dt).set_dtype(1, dt).set_range(0, 0, 1);
            b.execs({{3, 17, 5}, {3, 17, 5}});
            Checker<LogSoftmaxBackward> lb(handle.get());
            lb.set_param(axis(a)).set_dtype(0, dt).set_dtype(1, dt).set_range(0, -3, 0);
            lb.execs({{3, 17, 5}, {3, 17, 5}});
        }
}

// The vector loops' edges: one-element rows and columns, lengths and column counts around the
// vector width (8 on AVX2, 16 on AVX-512) and the column block (256), long rows, several threads.
TEST_F(X86, SoftmaxVectorEdges) {
    std::vector<TensorShape> shapes;
    for (size_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 33})
        shapes.push_back({3, n});
    for (TensorShape s : std::vector<TensorShape>{{1, 1},
                                                  {5, 1, 3},
                                                  {2, 9, 255},
                                                  {2, 3, 257},
                                                  {1, 4, 520},
                                                  {2, 100000},
                                                  {300, 1000}})
        shapes.push_back(s);
    for (const TensorShape& s : shapes)
        for (int32_t a : {-1, -2}) {
            if (s.ndim == 2 && a == -2 && s[0] == 300)
                continue;  // the same columns as {2, 100000}'s rows, slower in naive
            Checker<SoftmaxForward> f(handle.get());
            f.set_param(axis(a)).set_range(0, -20, 20).execs({s});
            Checker<LogSoftmaxForward> lf(handle.get());
            lf.set_param(axis(a)).set_range(0, -20, 20).execs({s});
            Checker<SoftmaxBackward> b(handle.get());
            b.set_param(axis(a)).set_range(0, 0, 1).execs({s, s});
            Checker<LogSoftmaxBackward> lb(handle.get());
            lb.set_param(axis(a)).set_range(0, -30, 0).execs({s, s});
        }
}

// Lines with -inf (exp gives 0), all -inf (0 / 0: NaN, as naive), all equal, a NaN, +inf (a NaN
// line, as naive and PyTorch give them, on every CPU), and
// logits below exp's float range (-87), laid out once as rows (axis 1) and once as columns (axis 0)
// of a 19 x 19 matrix.
TEST_F(X86, SoftmaxSpecialValues) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v(19 * 19, 0.25);
    for (size_t k = 0; k < 19; ++k) {
        v[1 * 19 + k] = k % 3 ? -inf : double(k);  // some -inf
        v[2 * 19 + k] = -inf;                      // all -inf
        v[3 * 19 + k] = -100.0 * double(k);        // far below exp's range
        v[4 * 19 + k] = 1e30;                      // all equal, large
    }
    v[5 * 19 + 4] = nan;
    v[6 * 19 + 11] = inf;
    v[7 * 19 + 2] = 3e38;
    v[7 * 19 + 3] = -3e38;
    // oneDNN's softmax JIT kernels give a line holding a NaN or +inf 0 beside a NaN; the x86
    // softmax forward then takes our loops' NaN throughout, as naive.
    for (int32_t a : {0, 1})
        for (bool strided : {false, true}) {
            Checker<SoftmaxForward> f(handle.get());
            f.set_param(axis(a)).set_values(0, v).set_noncontiguous(strided).execs({{19, 19}});
            Checker<LogSoftmaxForward> lf(handle.get());
            lf.set_param(axis(a)).set_values(0, v).set_noncontiguous(strided).execs({{19, 19}});
        }
    // The backward of log-softmax takes exp(y): y = -inf gives 0, y below -87 a subnormal.
    std::vector<double> y(19 * 19, -0.5);
    for (size_t k = 0; k < 19; ++k) {
        y[k * 19 + 1] = -inf;
        y[k * 19 + 2] = -90.0 - double(k);
    }
    for (int32_t a : {0, 1}) {
        Checker<LogSoftmaxBackward> lb(handle.get());
        lb.set_param(axis(a)).set_values(0, y).execs({{19, 19}, {19, 19}});
        Checker<SoftmaxBackward> b(handle.get());
        b.set_param(axis(a)).set_range(0, 0, 1).execs({{19, 19}, {19, 19}});
    }
}

// One NaN in a long row (oneDNN's vector body and its tail) makes that row NaN and leaves the
// other rows as they were.
TEST_F(X86, SoftmaxNaNRowAmongFiniteRows) {
    std::vector<double> v(6 * 1001);
    for (size_t i = 0; i < v.size(); ++i)
        v[i] = std::sin(double(i));
    v[2 * 1001 + 500] = std::numeric_limits<double>::quiet_NaN();
    v[4 * 1001 + 1000] = std::numeric_limits<double>::quiet_NaN();
    Checker<SoftmaxForward> f(handle.get());
    f.set_param(axis(1)).set_values(0, v).execs({{6, 1001}});
    f.set_noncontiguous(true).execs({{6, 1001}});
}
