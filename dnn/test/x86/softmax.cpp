// Softmax and log-softmax forward and backward on the x86 handle (our loops, softmax_hwy.h) against
// naive: every axis (negative too) of ranks 1 to 4, sizes 1 and primes, a long axis, large inputs
// (the maximum is subtracted), padded, broadcast and reversed views, padded outputs, the vector
// loops' edges, non-finite values, the 16-bit dtypes through float32, and the empty tensors that
// go to naive; log-softmax's forward also against an exact reference (1 ULP).
#include <cmath>
#include <cstring>
#include <limits>

#include "neomeg/dnn/operators/norm.h"
#include "x86/highway_targets.h"
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

// Views whose rows along the last axis are dense and evenly spaced run where they are (no
// staging copy): sliced (x[:, :1000]), reversed, with outer axes that merge and with ones that do
// not (staged), broadcast rows, trailing size-1 axes; padded outputs too (set_noncontiguous).
TEST_F(X86, SoftmaxEvenlySpacedRowViewsMatchNaive) {
    const std::vector<TensorLayout> views = {
            TensorLayout({64, 1000}, {2048, 1}, dtype::Float32),
            TensorLayout({5, 33}, {-40, 1}, dtype::Float32),
            TensorLayout({2, 3, 17}, {72, 24, 1}, dtype::Float32),
            TensorLayout({2, 3, 17}, {100, 24, 1}, dtype::Float32),
            TensorLayout({6, 17}, {0, 1}, dtype::Float32),
    };
    for (const TensorLayout& v : views) {
        Checker<SoftmaxForward>(handle.get()).set_param(axis(-1)).exec_layouts({v});
        Checker<LogSoftmaxForward>(handle.get())
                .set_param(axis(-1))
                .set_noncontiguous(true)
                .exec_layouts({v});
        Checker<SoftmaxBackward>(handle.get())
                .set_param(axis(-1))
                .set_range(0, 0, 1)
                .exec_layouts({v, TensorLayout(v, v.dtype)});
        Checker<LogSoftmaxBackward>(handle.get())
                .set_param(axis(-1))
                .set_range(0, 0, 1)
                .set_noncontiguous(true)
                .exec_layouts({TensorLayout(v, v.dtype), v});
    }
    Checker<LogSoftmaxForward>(handle.get())
            .set_param(axis(1))
            .exec_layouts({TensorLayout({4, 9, 1}, {12, 1, 1}, dtype::Float32)});
}

// No float32 call of these shapes runs naive.
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

// Non-finite lines take naive's double loop and equal it: NaN, +inf and -inf, and the float
// range's ends (-3e38 - 3e38 overflows to -inf in float and in naive's rounding alike).
TEST_F(X86, LogSoftmaxNonFiniteLinesMatchNaiveExactly) {
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
    // oneDNN's softmax JIT kernels gave a line holding a NaN or +inf 0 beside a NaN; our loops
    // give NaN throughout, as naive.
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

namespace {

// The distance in float32 steps between a and b (0 for two NaNs or equal values; -0 and 0 are
// one value, the smallest subnormals either side of it two steps apart).
int64_t ulps(float a, float b) {
    if ((std::isnan(a) && std::isnan(b)) || a == b)
        return 0;
    if (std::isnan(a) || std::isnan(b))
        return std::numeric_limits<int64_t>::max();
    auto ordered = [](float f) {
        int32_t i;
        std::memcpy(&i, &f, 4);
        return i < 0 ? -int64_t(i & 0x7fffffff) : int64_t(i);
    };
    return std::abs(ordered(a) - ordered(b));
}

// log_softmax along the middle axis of an (outer, len, inner) tensor in long double (64-bit
// significand), rounded once to float: an independent reference more exact than naive's double
// sum of exps.
std::vector<float> exact_log_softmax(const std::vector<float>& x, size_t outer, size_t len,
                                     size_t inner) {
    std::vector<float> y(x.size());
    for (size_t l = 0; l < outer * inner; ++l) {
        const size_t base = l / inner * len * inner + l % inner;
        auto at = [&](size_t k) { return base + k * inner; };
        long double m = -INFINITY, t = 0;
        for (size_t k = 0; k < len; ++k)
            m = std::max(m, (long double)x[at(k)]);
        bool one = false;  // the maximum's term, 1, left out of t: log1p keeps tiny sums
        for (size_t k = 0; k < len; ++k) {
            if (!one && x[at(k)] == m) {
                one = true;
                continue;
            }
            t += std::exp((long double)x[at(k)] - m);
        }
        long double ls = std::log1p(t);
        for (size_t k = 0; k < len; ++k)
            y[at(k)] = static_cast<float>((long double)x[at(k)] - m - ls);
    }
    return y;
}

}  // namespace

// LogSoftmaxForward computes in float32 (exp in float lanes, TwoSum sums, log1p of the sum less the
// maximum's 1) and stays within 1 ULP of the exact value, for every instruction set: rows (the
// last axis), columns of a matrix (axis 0) and of (outer, len, inner) tensors along axis 1 with
// inner around the vector widths (the column strips and their partial last one), lengths around
// the vector widths, logits from nearly equal to far past exp's range, all positive and all
// negative (ExpSum's cheaper splits of x - max), lines with -inf elements (its deep terms), and
// lines with one dominant logit, whose maximum's output -log(sum) is tiny (naive's double sum of
// exps is thousands of ULPs off there; MegEngine's float32 gives 0).
TEST_F(X86, LogSoftmaxWithinOneUlpOfExact) {
    struct Shape {
        size_t outer, inner;
        int32_t axis;  // of the tensor given to the operator
        size_t max_len;
    };
    const Shape shapes[] = {{17, 1, 1, 4097}, {1, 41, 0, 1000}, {2, 15, 1, 300},
                            {2, 16, 1, 300},  {2, 17, 1, 300},  {1, 64, 1, 300}};
    std::mt19937 rng(11);
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                auto op = handle->create_operator<LogSoftmaxForward>();
                for (const Shape& sh : shapes)
                    for (size_t len : {1, 2, 3, 5, 8, 15, 16, 17, 31, 33, 100, 300, 1000, 4097}) {
                        // Columns of 3-D tensors: the lengths around one and two vectors of
                        // rows and past the backward's long columns.
                        const bool cols3 = sh.inner > 1 && sh.axis == 1;
                        if (len > sh.max_len ||
                            (cols3 && len != 1 && len != 2 && len != 17 && len != 300))
                            continue;
                        for (float scale : {1e-3f, 0.5f, 3.0f, 20.0f, 80.0f, 1e4f})
                            for (int kind = 0; kind < 5; ++kind) {
                                const size_t lines = sh.outer * sh.inner;
                                std::uniform_real_distribution<float> u(-scale, scale);
                                std::vector<float> xf(sh.outer * len * sh.inner);
                                for (float& f : xf)
                                    f = kind == 1   ? 1.0f + 0.01f * u(rng)
                                        : kind == 3 ? -std::abs(u(rng)) - 0.25f
                                                    : u(rng);
                                auto at = [&](size_t line, size_t k) {
                                    return (line / sh.inner * len + k) * sh.inner + line % sh.inner;
                                };
                                for (size_t l = 0; l < lines; ++l) {
                                    if (kind == 2)  // one dominant logit
                                        xf[at(l, l % len)] += 30.0f;
                                    if (kind == 4)  // -inf beside finite logits
                                        for (size_t k = l % 3; k + 1 < len; k += 3)
                                            xf[at(l, k)] = -INFINITY;
                                }
                                std::vector<size_t> dims{sh.outer, len, sh.inner};
                                if (sh.axis == 0)
                                    dims = {len, sh.inner};
                                else if (sh.inner == 1)
                                    dims = {sh.outer, len};
                                TensorShape ts;
                                ts.ndim = dims.size();
                                for (size_t i = 0; i < dims.size(); ++i)
                                    ts[i] = dims[i];
                                HostTensor x = HostTensor::from(
                                        ts, std::vector<double>(xf.begin(), xf.end()));
                                op->param() = axis(sh.axis);
                                auto got = run_op(*op, {x})[0].values();
                                auto exact = exact_log_softmax(xf, sh.outer, len, sh.inner);
                                // Below 2^-124 the sum's terms are subnormal, each rounded to
                                // 2^-149.
                                for (size_t i = 0; i < got.size(); ++i)
                                    ASSERT_LE(ulps(float(got[i]), exact[i]),
                                              std::abs(exact[i]) < 0x1p-124f ? 3 : 1)
                                            << "outer " << sh.outer << " inner " << sh.inner
                                            << " len " << len << " scale " << scale << " kind "
                                            << kind << " element " << i << ": " << got[i] << " vs "
                                            << exact[i];
                            }
                    }
            });
    EXPECT_GE(ran, 1u);
}

// Log-softmax lines whose logits span at most 15 (rows: ExpSumWide's double sum, the maximum's
// ones among the terms) and the lines just past it (ExpSum), at every instruction set, rows and
// columns, within 1 ULP of the exact value: one maximum over terms near e^-15 (the span's edge,
// where log(sum) is smallest against the sum's rounding), spans from 15 to 35 (which only
// ExpSum's counted ones keep precise), ties at the maximum, lengths 1 to 17 around the vector
// widths and their tails, and maxima from 0 to 3e6 in magnitude (x - max's rounding, which the
// float pair carries, and max + log(sum) as the output's float pair). Lines holding a NaN, in a
// vector's body or its tail, still equal naive's loop.
TEST_F(X86, LogSoftmaxNarrowLinesWithinOneUlpOfExact) {
    std::mt19937 rng(5);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    const size_t lines = 9;  // a group of eight rows' log1p and one more
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                auto op = handle->create_operator<LogSoftmaxForward>();
                for (size_t len :
                     {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 31, 33, 100, 1000})
                    for (float base : {0.0f, 0.75f, -40.0f, 30.0f, 1e4f, -1e4f, 3e6f})
                        for (int kind = 0; kind < 5; ++kind)
                            for (bool rows : {true, false}) {
                                std::vector<float> xf(lines * len);
                                auto at = [&](size_t line, size_t k) {
                                    return rows ? line * len + k : k * lines + line;
                                };
                                for (size_t l = 0; l < lines; ++l)
                                    for (size_t k = 0; k < len; ++k) {
                                        const bool top = k == (l * 7) % len;
                                        float off;
                                        if (kind == 0)  // the span's edge
                                            off = top ? 0.0f : -14.9f + 0.05f * u(rng);
                                        else if (kind == 1)  // just past it, and far past
                                            off = top ? 0.0f : -15.05f - 20.0f * u(rng);
                                        else if (kind == 2)  // ties at the maximum
                                            off = top || k % 3 == 0 ? 0.0f : -15.0f * u(rng);
                                        else if (kind == 3)
                                            off = -14.99f * u(rng);
                                        else
                                            off = top ? 0.0f : -8.0f + 0.01f * u(rng);
                                        xf[at(l, k)] = base + off;
                                    }
                                const TensorShape ts =
                                        rows ? TensorShape{lines, len} : TensorShape{len, lines};
                                HostTensor x = HostTensor::from(
                                        ts, std::vector<double>(xf.begin(), xf.end()));
                                op->param() = axis(rows ? 1 : 0);
                                auto got = run_op(*op, {x})[0].values();
                                auto exact = rows ? exact_log_softmax(xf, lines, len, 1)
                                                  : exact_log_softmax(xf, 1, len, lines);
                                for (size_t i = 0; i < got.size(); ++i)
                                    ASSERT_LE(ulps(float(got[i]), exact[i]), 1)
                                            << (rows ? "rows" : "columns") << " len " << len
                                            << " base " << base << " kind " << kind << " element "
                                            << i << ": " << got[i] << " vs " << exact[i];
                            }
                // NaN in narrow rows: each row's at another place (the first vector, its last
                // lane, the second vector, the tail), the rest within the span.
                const size_t len = 19;
                std::vector<double> v(6 * len);
                for (size_t i = 0; i < v.size(); ++i)
                    v[i] = 2.0 + std::sin(double(i));
                const size_t at[] = {0, 7, 8, 15, 16, 18};
                for (size_t r = 0; r < 6; ++r)
                    v[r * len + at[r]] = std::numeric_limits<double>::quiet_NaN();
                Checker<LogSoftmaxForward> c(handle.get());
                c.set_param(axis(1)).set_epsilon(0).set_values(0, v).execs({{6, len}});
            });
    EXPECT_GE(ran, 1u);
}

// Softmax and log-softmax along an axis other than the last (the column strips: one, two and four
// vectors of columns side by side and the partial last one) against naive at every instruction
// set: column counts and lengths around the vector widths, one-long axes, one and several outer
// slices, padded (non-contiguous) inputs and outputs, and lines holding -inf, NaN, +inf and
// logits far below exp's range in the strips' vector lanes and partial tails.
TEST_F(X86, SoftmaxColumnsMatchNaiveAtEveryTarget) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                for (size_t outer : {1, 3})
                    for (size_t len : {1, 2, 17, 300})
                        for (size_t inner : {2, 15, 16, 17, 33, 64, 65, 100}) {
                            if (len == 300 && (outer > 1 || (inner != 17 && inner != 65)))
                                continue;  // long columns: the backward's four-vector strips
                            TensorShape s{outer, len, inner};
                            for (bool padded : {false, true}) {
                                Checker<SoftmaxForward> f(handle.get());
                                f.set_param(axis(1)).set_noncontiguous(padded);
                                f.set_range(0, -20, 20).execs({s});
                                Checker<LogSoftmaxForward> lf(handle.get());
                                lf.set_param(axis(1)).set_noncontiguous(padded);
                                lf.set_range(0, -20, 20).execs({s});
                                lf.set_range(0, 1, 9).execs({s});
                                lf.set_range(0, -9, -1).execs({s});
                                Checker<SoftmaxBackward> b(handle.get());
                                b.set_param(axis(1)).set_noncontiguous(padded);
                                b.set_range(0, 0, 1).execs({s, s});
                                Checker<LogSoftmaxBackward> lb(handle.get());
                                lb.set_param(axis(1)).set_noncontiguous(padded);
                                lb.set_range(0, -30, 0).execs({s, s});
                            }
                        }
                // Special lines, (2, 19, 17) axis 1: column j of slice o is line o * 17 + j.
                const size_t len = 19, inner = 17;
                std::vector<double> v(2 * len * inner);
                for (size_t i = 0; i < v.size(); ++i)
                    v[i] = std::sin(double(i));
                auto at = [&](size_t line, size_t k) {
                    return (line / inner * len + k) * inner + line % inner;
                };
                for (size_t k = 0; k < len; ++k) {
                    v[at(0, k)] = k % 3 ? -inf : double(k);  // some -inf
                    v[at(3, k)] = -inf;                      // all -inf
                    v[at(5, k)] = -100.0 * double(k);        // far below exp's range
                    v[at(16, k)] = 1e30;                     // all equal, large: the tail lane
                }
                v[at(7, 4)] = nan;
                v[at(18, 11)] = inf;
                v[at(33, 2)] = nan;  // the last line: the partial strip's tail
                v[at(20, 2)] = 3e38;
                v[at(20, 3)] = -3e38;
                for (bool padded : {false, true}) {
                    Checker<SoftmaxForward> f(handle.get());
                    f.set_param(axis(1)).set_values(0, v).set_noncontiguous(padded);
                    f.execs({{2, len, inner}});
                    Checker<LogSoftmaxForward> lf(handle.get());
                    lf.set_param(axis(1)).set_values(0, v).set_noncontiguous(padded);
                    lf.execs({{2, len, inner}});
                }
            });
    EXPECT_GE(ran, 1u);  // an ISA cap leaves fewer targets
}
