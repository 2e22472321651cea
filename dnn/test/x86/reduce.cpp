// Reduce on the x86 handle (Highway kernels) against naive: SUM, SUM_SQR, MEAN, MAX, MIN and
// PRODUCT of float32 over every axis (negative too) of ranks 1 to 4, axes and rows of 1 and primes,
// shapes above the threading grain (several outer rows per thread), NaN propagation, float16 and
// bfloat16 (through float32, within the 16-bit dtype's tolerance), strided and broadcast views
// (reduced as contiguous copies), and the cases that go to naive (other modes and dtypes, an empty
// axis), and empty outputs.
#include <limits>
#include <random>

#include "neomeg/dnn/operators/reduce.h"
#include "neomeg/dnn/param_base.h"
#include "src/x86/reduce_hwy.h"
#include "x86/highway_targets.h"
#include "x86/omp_threads.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Reduce::Mode;

param::Reduce reduce_param(Mode m, int32_t axis) {
    param::Reduce p;
    p.mode = m;
    p.axis = axis;
    return p;
}

constexpr Mode kModes[] = {Mode::SUM, Mode::SUM_SQR, Mode::MEAN,
                           Mode::MAX, Mode::MIN,     Mode::PRODUCT};

const std::vector<TensorShape> kShapes = {{1},        {7},          {1000},     {13, 17},
                                          {3, 1, 5},  {2, 3, 5, 7}, {64, 1024}, {3, 257, 129},
                                          {1, 70001}, {300, 301},   {4, 70001}, {512, 300}};

}  // namespace

TEST_F(X86, ReduceClaimsItsModes) {
    for (Mode m : kModes)
        EXPECT_TRUE(x86::reduce_f32_supported(m)) << param::to_string(m);
}

// SUM, MEAN and SUM_SQR add rows in float blocks, within a bound of naive that a sum which
// cancels exceeds in relative terms (reduce_float_sum.cpp checks it): here they sum values of one
// sign, whose relative error the bound keeps below 1e-6.
TEST_F(X86, ReduceMatchesNaive) {
    for (Mode m : kModes)
        for (const TensorShape& s : kShapes)
            for (int32_t a = -int32_t(s.ndim); a < int32_t(s.ndim); ++a) {
                Checker<Reduce> c(handle.get());
                c.set_param(reduce_param(m, a)).set_epsilon(1e-6);
                if (m == Mode::SUM || m == Mode::MEAN || m == Mode::SUM_SQR)
                    c.set_range(0, 0.5, 1);
                c.execs({s});
                c.set_noncontiguous(true).execs({s});
            }
}

TEST_F(X86, ReduceRunsHighway) {
    std::mt19937 rng(8);
    HostTensor x({6, 50, 40}, dtype::Float32);
    fill_uniform(x, -1, 1, rng);
    for (Mode m : kModes)
        for (int32_t a : {0, 1, 2})
            EXPECT_EQ(run_and_compare<Reduce>(*handle, reduce_param(m, a), {x}, {}, 1e-6), "hwy")
                    << param::to_string(m) << " axis " << a;
}

TEST_F(X86, ReduceMaxMinPropagateNaN) {
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v(4 * 37, 1.0);
    v[5] = nan;        // row 0 (axis 1), column 5 of block 0 (axis 0)
    v[37 + 36] = nan;  // the last element of row 1
    v[2 * 37] = -nan;  // the first element of row 2
    for (Mode m : {Mode::MAX, Mode::MIN, Mode::SUM})
        for (int32_t a : {0, 1}) {
            Checker<Reduce> c(handle.get());
            c.set_param(reduce_param(m, a)).set_values(0, v).execs({{4, 37}});
        }
}

// Rows and columns long enough for the vector loops, at every Highway target: MAX and MIN run the
// plain instruction with a float sum beside it and go again under the NaN rule where the sum is
// NaN. A NaN first, in a middle block, in the tail or in every lane; infinities of both signs
// without a NaN (a NaN sum, yet no NaN result); one infinity; columns over a block of vectors and
// its remainder (axis 0 of 1031x300).
TEST_F(X86, ReduceMaxMinNaNInVectorLoops) {
#ifdef NEOMEG_WITH_DNNL
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const double inf = std::numeric_limits<double>::infinity();
    const size_t n = 1031;
    std::vector<double> rows(7 * n);
    std::mt19937 rng(4);
    std::uniform_real_distribution<double> u(-1, 1);
    for (double& x : rows)
        x = u(rng);
    rows[0] = nan;              // row 0: first
    rows[n + 517] = -nan;       // row 1: a middle block
    rows[2 * n + n - 2] = nan;  // row 2: the tail
    for (size_t k = 0; k < 64; ++k)
        rows[3 * n + 128 + k] = nan;  // row 3: every lane
    rows[4 * n + 5] = inf;            // row 4: both infinities, no NaN
    rows[4 * n + 700] = -inf;
    rows[5 * n + 300] = -inf;  // row 5: one infinity; row 6: none
    std::vector<double> cols(1031 * 300);
    for (double& x : cols)
        x = u(rng);
    cols[17] = nan;                // column 17, first row
    cols[500 * 300 + 130] = nan;   // column 130, a middle row
    cols[1030 * 300 + 299] = nan;  // the last column, the last row
    cols[3 * 300 + 40] = inf;      // column 40: both infinities
    cols[900 * 300 + 40] = -inf;
    size_t ran =
            for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128, HWY_SCALAR}, [&](int64_t) {
                for (Mode m : {Mode::MAX, Mode::MIN}) {
                    Checker<Reduce> c(handle.get());
                    c.set_param(reduce_param(m, 1))
                            .set_epsilon(0)
                            .set_values(0, rows)
                            .execs({{7, n}});
                    Checker<Reduce> d(handle.get());
                    d.set_param(reduce_param(m, 0))
                            .set_epsilon(0)
                            .set_values(0, cols)
                            .execs({{1031, 300}});
                }
            });
    EXPECT_GE(ran, 1u);
#endif
}

// Fewer rows than threads, each long enough to split along the row across threads (the chunks'
// accumulators combine, NaN anywhere in the row included).
TEST_F(X86, ReduceSplitsLongRows) {
    for (Mode m : kModes)
        for (const TensorShape& s : {TensorShape{300007}, TensorShape{1, 262147}})
            for (int32_t a : {-1}) {
                Checker<Reduce> c(handle.get());
                c.set_param(reduce_param(m, a)).set_epsilon(1e-6).execs({s});
            }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v(300007, 0.5);
    v[299000] = nan;  // in the last chunk
    v[10] = 2.0;
    for (Mode m : {Mode::MAX, Mode::MIN, Mode::SUM}) {
        Checker<Reduce> c(handle.get());
        c.set_param(reduce_param(m, 0)).set_values(0, v).execs({{v.size()}});
    }
    v[299000] = -1.0;
    for (Mode m : {Mode::MAX, Mode::MIN}) {
        Checker<Reduce> c(handle.get());
        c.set_param(reduce_param(m, 0)).set_epsilon(0).set_values(0, v).execs({{v.size()}});
    }
}

// Fewer outer rows than threads split their columns across the threads in chunks of 256: at 1, 2
// and 3 threads, one and two outer rows, chunks whole and partial, a NaN in the last chunk.
TEST_F(X86, ReduceColumnsSplitAcrossThreads) {
    const std::vector<std::pair<TensorShape, int32_t>> cases = {
            {{1031, 600}, 0}, {{1, 1031, 600}, 1}, {{2, 300, 1000}, 1}, {{3, 257, 129}, 0}};
    for (int threads : {1, 2, 3}) {
        ScopedOmpThreads scope(threads);
        for (Mode m : kModes)
            for (const auto& [s, a] : cases) {
                Checker<Reduce> c(handle.get());
                c.set_param(reduce_param(m, a)).set_epsilon(1e-6);
                if (m == Mode::PRODUCT)
                    c.set_range(0, 0.99, 1.01);
                c.execs({s});
            }
        std::vector<double> v(1031 * 600, 0.5);
        v[1030 * 600 + 599] = std::numeric_limits<double>::quiet_NaN();
        v[7 * 600 + 598] = 2.0;
        for (Mode m : {Mode::MAX, Mode::MIN, Mode::SUM}) {
            Checker<Reduce> c(handle.get());
            c.set_param(reduce_param(m, 0)).set_epsilon(0).set_values(0, v).execs({{1031, 600}});
        }
    }
}

// Products of values in [-1, 1] over long axes underflow to zero in either order, so the shapes
// above test PRODUCT only where an axis is short: here values near 1 (products of 70001 stay
// within e^+-15) over every shape and axis, and signs, zeros, infinities and NaN, whose rules
// (0 x inf is NaN, NaN stays) a reordered product keeps.
TEST_F(X86, ReduceProductMatchesNaive) {
    for (const TensorShape& s : kShapes)
        for (int32_t a = 0; a < int32_t(s.ndim); ++a) {
            Checker<Reduce> c(handle.get());
            c.set_param(reduce_param(Mode::PRODUCT, a)).set_epsilon(1e-6).set_range(0, 0.97, 1.03);
            c.execs({s});
            c.set_range(0, -1.03, -0.97).set_noncontiguous(true).execs({s});
        }
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> v(6 * 41, 1.25);
    v[3] = 0.0;            // row 0: zero
    v[41 + 7] = inf;       // row 1: inf
    v[2 * 41 + 1] = -inf;  // row 2: -inf and zero: NaN
    v[2 * 41 + 40] = -0.0;
    v[3 * 41 + 20] = nan;     // row 3: NaN
    v[4 * 41 + 2] = -2.0;     // row 4: one negative
    v[5 * 41 + 39] = 3.0e38;  // row 5: beyond float32's range
    for (int32_t a : {0, 1}) {
        Checker<Reduce> c(handle.get());
        c.set_param(reduce_param(Mode::PRODUCT, a)).set_epsilon(1e-6).set_values(0, v);
        c.execs({{6, 41}});
    }
}

TEST_F(X86, ReduceOtherCasesRunNaive) {
    HostTensor x({3, 4}, dtype::Float32), h({3, 4}, dtype::Int16), e({3, 0}, dtype::Float32);
    EXPECT_EQ(run_and_compare<Reduce>(*handle, reduce_param(Mode::PRODUCT, 1), {h}), "naive");
    EXPECT_EQ(run_and_compare<Reduce>(*handle, reduce_param(Mode::SUM, 1), {h}), "naive");
    EXPECT_EQ(run_and_compare<Reduce>(*handle, reduce_param(Mode::SUM, 1), {e}), "naive");
    EXPECT_EQ(run_and_compare<Reduce>(*handle, reduce_param(Mode::MEAN, 1), {e}), "naive");
    Checker<Reduce> c(handle.get());
    c.set_param(reduce_param(Mode::SUM, 0))
            .exec_layouts({TensorLayout({5, 7}, {1, 5}, dtype::Float32)});
}

// Views that no axis order makes dense: a broadcast (a mean's gradient, summed over the batch for a
// bias: what a traced step's bias gradient reduced), a column slice, a broadcast middle axis, a
// reversed axis; into contiguous and padded (strided) outputs.
TEST_F(X86, ReduceStridedViewsMatchNaive) {
    const std::vector<TensorLayout> layouts = {
            TensorLayout({4, 16, 16, 16}, {0, 256, 16, 1}, dtype::Float32),
            TensorLayout({6, 5}, {10, 2}, dtype::Float32),
            TensorLayout({3, 5, 7}, {7, 0, 1}, dtype::Float32),
            TensorLayout({9, 4}, {-4, 1}, dtype::Float32),
            TensorLayout({4, 16, 8}, {0, 8, 1}, dtype::BFloat16),
            TensorLayout({5, 6}, {12, 2}, dtype::Float16)};
    for (const TensorLayout& l : layouts)
        for (Mode m : kModes)
            for (int32_t a = 0; a < int32_t(l.ndim); ++a) {
                SCOPED_TRACE(testing::Message() << l.to_string() << " axis " << a);
                Checker<Reduce> c(handle.get());
                c.set_param(reduce_param(m, a)).set_noncontiguous(true);
                if (l.dtype != dtype::Float32)
                    c.set_dtype(0, l.dtype);
                else
                    c.set_epsilon(1e-6);
                c.exec_layouts({l});
            }
    std::mt19937 rng(3);
    HostTensor row({1, 16, 16, 16}, dtype::Float32);
    fill_uniform(row, -1, 1, rng);
    HostTensor batch(TensorLayout({4, 16, 16, 16}, {0, 256, 16, 1}, dtype::Float32));
    std::vector<double> repeated;
    for (int i = 0; i < 4; ++i)
        for (double x : row.values())
            repeated.push_back(x);
    batch.set_values(repeated);  // the broadcast's 4 rows share one row's memory
    EXPECT_EQ(run_and_compare<Reduce>(*handle, reduce_param(Mode::SUM, 0), {batch}, {}, 1e-6),
              "hwy:copied");
}

TEST_F(X86, ReduceLowpMatchesNaive) {
    // The shapes autocast's bias gradients reduce (batch, then the spatial axes), long rows, and
    // blocks of whole rows, of columns (a partial last one) and too long for a block.
    const std::vector<TensorShape> shapes = {
            {32, 10},      {32, 6, 24, 24}, {1, 6, 24, 24}, {1, 16, 1, 8}, {7},
            {3, 257, 129}, {2, 70001},      {300000},       {20000, 20}};
    for (DType dt : {DType(dtype::Float16), DType(dtype::BFloat16)})
        for (Mode m : kModes)
            for (const TensorShape& s : shapes)
                for (int32_t a = 0; a < int32_t(s.ndim); ++a) {
                    Checker<Reduce> c(handle.get());
                    // Positive values: sums of mixed signs cancel below the 16-bit tolerance.
                    c.set_param(reduce_param(m, a)).set_dtype(0, dt).set_range(0, 0.5, 1);
                    c.execs({s});
                }
    HostTensor h({32, 6, 24, 24}, dtype::BFloat16);
    std::mt19937 rng(2);
    fill_uniform(h, 0.5, 1, rng);
    EXPECT_EQ(run_and_compare<Reduce>(*handle, reduce_param(Mode::SUM, 0), {h}, {}, 2e-2), "hwy");
}

// An empty output (a zero-sized dim besides the reduced axis) writes nothing; the 16-bit path
// used to divide by its zero-length rows.
TEST_F(X86, ReduceEmptyOutputsMatchNaive) {
    const std::vector<TensorShape> shapes = {{3, 0}, {0, 4}, {2, 0, 1}, {3, 0, 3, 5, 0}};
    for (DType dt : {DType(dtype::Float32), DType(dtype::Float16), DType(dtype::BFloat16)})
        for (Mode m : {Mode::SUM, Mode::MEAN, Mode::PRODUCT})
            for (const TensorShape& s : shapes)
                for (int32_t a = 0; a < int32_t(s.ndim); ++a) {
                    if (s[a] == 0)
                        continue;  // a non-empty output: the empty-axis cases are above
                    Checker<Reduce> c(handle.get());
                    c.set_param(reduce_param(m, a)).set_dtype(0, dt).execs({s});
                }
}
