// PoolingForward and PoolingBackward on the x86 handle (oneDNN pooling) against naive: 1-D, 2-D
// and 3-D, every mode, windows with stride, padding and overlap, whole-plane windows, sizes 1 and
// primes, ties (MAX's
// gradient goes to the first maximum), padded inputs and outputs, bfloat16 and float16, and the
// cases that go to naive.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "neomeg/dnn/operators/pooling.h"
#include "neomeg/dnn/param_base.h"
#include "x86/pooling_case.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Pooling::Mode;

using Case = PoolCase;

std::vector<Case> cases() {
    return {
            {{1, 1, 1, 1}, {1, 1}, {1, 1}, {0, 0}},
            {{2, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0}},
            {{2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1}},
            {{1, 5, 13, 11}, {3, 2}, {1, 2}, {1, 0}},
            {{3, 2, 6, 9}, {3, 3}, {1, 1}, {2, 1}},
            {{4, 6, 24, 24}, {2, 2}, {2, 2}, {0, 0}},  // LeNet's first pooling
            {{2, 3, 17}, {3}, {2}, {1}},
            {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {1, 1, 0}},
            // Windows that tile the input (MAX's backward: a loop of its own), with leftover
            // rows and columns.
            {{2, 3, 17}, {3}, {3}, {0}},
            {{1, 2, 5, 7, 6}, {2, 3, 2}, {2, 3, 2}, {0, 0, 0}},
            {{2, 4, 9, 6}, {3, 1}, {3, 1}, {0, 0}},
            // 2x2 windows in vectors: rows of 35 windows (16 + 16 + 2 + 1 lanes) with a leftover
            // column, and depth slices of their own.
            {{1, 2, 5, 71}, {2, 2}, {2, 2}, {0, 0}},
            {{2, 3, 3, 6, 9}, {1, 2, 2}, {1, 2, 2}, {0, 0, 0}},
            // One window over the whole plane (the averages: a row mean of our Reduce), planes of
            // one element, under a vector, with a vector tail, a stride that never moves, and
            // enough planes to split across threads.
            {{2, 3, 7, 5}, {7, 5}, {1, 1}, {0, 0}},
            {{3, 4, 9}, {9}, {2}, {0}},
            {{1, 2, 3, 4, 5}, {3, 4, 5}, {1, 1, 1}, {0, 0, 0}},
            {{2, 5, 1, 1}, {1, 1}, {1, 1}, {0, 0}},
            {{8, 64, 28, 28}, {28, 28}, {3, 3}, {0, 0}},
    };
}

// Values from {-1, 0, 1}: windows full of ties.
std::vector<double> tied_values(const TensorShape& s, uint32_t seed) {
    std::mt19937 rng(seed);
    std::vector<double> v(s.total_nr_elems());
    for (double& x : v)
        x = double(rng() % 3) - 1;
    return v;
}

constexpr Mode kModes[] = {Mode::MAX, Mode::AVERAGE, Mode::AVERAGE_COUNT_EXCLUDE_PADDING};

}  // namespace

TEST_F(X86, PoolingForwardMatchesNaive) {
    for (Mode mode : kModes)
        for (const Case& k : cases()) {
            Checker<PoolingForward> c(handle.get());
            c.set_param(pool_param(mode, k)).execs({k.src});
            c.set_noncontiguous(true).execs({k.src});
        }
}

TEST_F(X86, PoolingBackwardMatchesNaive) {
    for (Mode mode : kModes)
        for (const Case& k : cases()) {
            Checker<PoolingBackward> c(handle.get());
            c.set_param(pool_param(mode, k)).execs({k.src, dst_shape(k), dst_shape(k)});
            c.set_noncontiguous(true).execs({k.src, dst_shape(k), dst_shape(k)});
        }
}

TEST_F(X86, PoolingMaxTiesGoToTheFirstMaximum) {
    for (const Case& k : cases()) {
        Checker<PoolingForward> f(handle.get());
        f.set_param(pool_param(Mode::MAX, k)).set_values(0, tied_values(k.src, 3)).execs({k.src});
        Checker<PoolingBackward> b(handle.get());
        b.set_param(pool_param(Mode::MAX, k))
                .set_values(0, tied_values(k.src, 4))
                .execs({k.src, dst_shape(k), dst_shape(k)});
    }
}

// The tiled MAX backward: a NaN is a window's maximum (the first NaN, as in naive) and gets its
// gradient; infinities and equal values go to the first of them. The 16-bit dtypes run the same
// loop on widened planes.
TEST_F(X86, PoolingTiledMaxBackwardNaNAndInfinities) {
    Case k{{1, 2, 4, 5}, {2, 2}, {2, 2}, {0, 0}};
    const double nan = std::numeric_limits<double>::quiet_NaN(),
                 inf = std::numeric_limits<double>::infinity();
    for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16), DType(dtype::Float16)}) {
        HostTensor x = HostTensor::from(k.src, {1,    nan,  3,   4,   5,  // plane 0
                                                nan,  2,    inf, 9,   5,  //
                                                -inf, -inf, 7,   7,   1,  //
                                                -inf, -inf, 7,   7,   1,  //
                                                0,    0,    nan, nan, 2,  // plane 1
                                                0,    0,    1,   nan, 2,  //
                                                5,    6,    -1,  -2,  3,  //
                                                8,    7,    -3,  -1,  3},
                                        dt);
        TensorShape d = dst_shape(k);
        HostTensor y = HostTensor::from(d, std::vector<double>(d.total_nr_elems(), 0), dt);
        std::vector<double> dyv(d.total_nr_elems());
        for (size_t i = 0; i < dyv.size(); ++i)
            dyv[i] = double(i + 1);
        HostTensor dy = HostTensor::from(d, dyv, dt);
        EXPECT_EQ(run_and_compare<PoolingBackward>(*handle, pool_param(Mode::MAX, k), {x, y, dy}),
                  "loop:tiled_max_backward")
                << dt.name();
    }
}

// NaNs in windows the vectors take: those blocks follow naive's rule window by window. The 16-bit
// planes widen in registers: rows of 40 windows (the widest vectors) and of 37 (every width, a
// scalar window and a column past the last window), an odd row past the last window.
TEST_F(X86, PoolingTiledMaxBackwardNaNInVectorBlocks) {
    std::mt19937 rng(71);
    for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16), DType(dtype::Float16)})
        for (const Case& k : {Case{{1, 1, 4, 80}, {2, 2}, {2, 2}, {0, 0}},
                              Case{{2, 3, 5, 75}, {2, 2}, {2, 2}, {0, 0}}}) {
            HostTensor x(k.src, dt), y(dst_shape(k), dt), dy(dst_shape(k), dt);
            for (HostTensor* t : {&x, &y, &dy})
                fill_uniform(*t, -1, 1, rng);
            std::vector<double> v = x.values();
            for (size_t i : {3, 82, 85, 200, 301})  // rows 0, 1 (twice, one window), 2, 3
                v[i] = std::numeric_limits<double>::quiet_NaN();
            x.set_values(v);
            EXPECT_EQ(
                    run_and_compare<PoolingBackward>(*handle, pool_param(Mode::MAX, k), {x, y, dy}),
                    "loop:tiled_max_backward")
                    << dt.name() << " " << k.src.to_string();
        }
}

// The 16-bit tiled backward against naive on tied values (the first maximum gets the gradient),
// non-contiguous operands (they take the other kernels) and a depth of windows of 1.
TEST_F(X86, PoolingTiledMaxBackwardLowPrecisionMatchesNaive) {
    for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float16)}) {
        for (const Case& k : {Case{{3, 5, 6, 70}, {2, 2}, {2, 2}, {0, 0}},
                              Case{{1, 1, 2, 2}, {2, 2}, {2, 2}, {0, 0}},
                              Case{{2, 2, 13, 33}, {2, 2}, {2, 2}, {0, 0}}}) {
            Checker<PoolingBackward> b(handle.get());
            b.set_param(pool_param(Mode::MAX, k))
                    .set_dtype(0, dt)
                    .set_dtype(1, dt)
                    .set_dtype(2, dt);
            b.set_values(0, tied_values(k.src, 4)).execs({k.src, dst_shape(k), dst_shape(k)});
            b.set_noncontiguous(true).execs({k.src, dst_shape(k), dst_shape(k)});
        }
        Case k3{{2, 3, 3, 6, 34}, {1, 2, 2}, {1, 2, 2}, {0, 0, 0}};
        Checker<PoolingBackward> b(handle.get());
        b.set_param(pool_param(Mode::MAX, k3)).set_dtype(0, dt).set_dtype(1, dt).set_dtype(2, dt);
        b.execs({k3.src, dst_shape(k3), dst_shape(k3)});
    }
}

TEST_F(X86, PoolingRunsOneDnn) {
    std::mt19937 rng(1);
    for (Mode mode : kModes)
        for (const Case& k : cases()) {
            HostTensor x(k.src, dtype::Float32), y(dst_shape(k), dtype::Float32),
                    dy(dst_shape(k), dtype::Float32);
            for (HostTensor* t : {&x, &y, &dy})
                fill_uniform(*t, -1, 1, rng);
            auto p = pool_param(mode, k);
            // MAX runs our loop (naive's NaN rule), the averages oneDNN.
            EXPECT_NE(run_and_compare<PoolingForward>(*handle, p, {x}), "naive")
                    << param::to_string(p) << " " << k.src.to_string();
            bool tiled = mode == Mode::MAX && k.window == k.stride &&
                         std::all_of(k.padding.begin(), k.padding.end(),
                                     [](int32_t v) { return v == 0; });
            // 3x3/2 pad 1 on planes: our row loop (max_pool_rows_backward_hwy.h).
            bool rows = mode == Mode::MAX && k.window == std::vector<int32_t>{3, 3} &&
                        k.stride == std::vector<int32_t>{2, 2} &&
                        k.padding == std::vector<int32_t>{1, 1};
            std::string kernel = run_and_compare<PoolingBackward>(*handle, p, {x, y, dy});
            if (tiled)
                EXPECT_EQ(kernel, "loop:tiled_max_backward") << k.src.to_string();
            else if (rows)
                EXPECT_EQ(kernel, "loop:max_pool_backward_rows") << k.src.to_string();
            else
                EXPECT_TRUE(kernel.starts_with("onednn:"))
                        << param::to_string(p) << " " << k.src.to_string();
        }
}

TEST_F(X86, PoolingBroadcastAndReversedViews) {
    Case k{{2, 3, 8, 8}, {3, 3}, {2, 2}, {1, 1}};
    for (Mode mode : kModes) {
        Checker<PoolingForward> c(handle.get());
        c.set_param(pool_param(mode, k));
        // Broadcast along the batch and channel axes; reversed rows.
        c.exec_layouts({TensorLayout({2, 3, 8, 8}, {0, 0, 8, 1}, dtype::Float32)});
        c.exec_layouts({TensorLayout({2, 3, 8, 8}, {192, 64, -8, 1}, dtype::Float32)});
    }
}

// bfloat16 and float16 against naive, which averages in double and rounds once (oneDNN averages in
// float32); where the CPU or oneDNN has no kernel for the dtype the x86 operator runs the float32
// kernels between conversions, which round once too.
TEST_F(X86, PoolingLowPrecisionMatchesNaive) {
    for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float16)})
        for (Mode mode : kModes)
            for (const Case& k : cases()) {
                Checker<PoolingForward> fwd(handle.get());
                fwd.set_param(pool_param(mode, k)).set_dtype(0, dt).execs({k.src});
                fwd.set_noncontiguous(true).execs({k.src});
                Checker<PoolingBackward> bwd(handle.get());
                bwd.set_param(pool_param(mode, k))
                        .set_dtype(0, dt)
                        .set_dtype(1, dt)
                        .set_dtype(2, dt);
                bwd.execs({k.src, dst_shape(k), dst_shape(k)});
            }
}

// 16-bit pooling never falls to naive, whichever kernel the CPU has for the dtype, with padded
// (strided) operands too.
TEST_F(X86, PoolingLowPrecisionRunsOurKernels) {
    std::mt19937 rng(67);
    Case k{{2, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0}};
    for (DType dt : {DType(dtype::BFloat16), DType(dtype::Float16)})
        for (Mode mode : kModes) {
            std::vector<HostTensor> in;
            for (const TensorShape& s : {k.src, dst_shape(k), dst_shape(k)}) {
                in.emplace_back(padded_layout(TensorLayout(s, dt)));
                fill_uniform(in.back(), -1, 1, rng);
            }
            double eps = default_epsilon(dt);
            EXPECT_NE(
                    run_and_compare<PoolingForward>(*handle, pool_param(mode, k), {in[0]}, {}, eps),
                    "naive")
                    << dt.name();
            EXPECT_NE(run_and_compare<PoolingBackward>(*handle, pool_param(mode, k), in, {}, eps),
                      "naive")
                    << dt.name();
        }
}

TEST_F(X86, PoolingEmptyRunsNaive) {
    Case k{{2, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0}};
    for (Mode mode : kModes) {
        HostTensor empty({0, 3, 7, 7}, dtype::Float32);
        EXPECT_EQ(run_and_compare<PoolingForward>(*handle, pool_param(mode, k), {empty}), "naive");
    }
}

// MAX's backward has no oneDNN implementation for a strided src: the kernel stages it dense rather
// than leaving the op to naive.
TEST_F(X86, PoolingBackwardPaddedRunsOneDnn) {
    std::mt19937 rng(61);
    Case k{{2, 3, 7, 7}, {2, 2}, {2, 2}, {0, 0}};
    for (Mode mode : kModes) {
        std::vector<HostTensor> in;
        for (const TensorShape& s : {k.src, dst_shape(k), dst_shape(k)}) {
            in.emplace_back(padded_layout(TensorLayout(s, dtype::Float32)));
            fill_uniform(in.back(), -1, 1, rng);
        }
        EXPECT_TRUE(run_and_compare<PoolingBackward>(*handle, pool_param(mode, k), in)
                            .starts_with("onednn:"));
    }
}

// Naive adds each window's gradient to a +0 grad, so a -0 gradient gives +0; the tiled 2x2 loop
// stored the incoming value and gave -0 (the Checker's tolerance does not see the sign of 0).
TEST_F(X86, PoolingTiledMaxBackwardTurnsMinusZeroIntoNaivesPlusZero) {
    Case k{{1, 2, 4, 70}, {2, 2}, {2, 2}, {0, 0}};  // rows of 35 windows: vectors and a scalar
    std::mt19937 rng(5);
    for (DType dt : {DType(dtype::Float32), DType(dtype::BFloat16), DType(dtype::Float16)}) {
        HostTensor x(k.src, dt), y(dst_shape(k), dt);
        fill_uniform(x, -1, 1, rng);
        TensorShape d = dst_shape(k);
        HostTensor dy = HostTensor::from(d, std::vector<double>(d.total_nr_elems(), -0.0), dt);
        auto op = handle->create_operator<PoolingBackward>();
        op->param() = pool_param(Mode::MAX, k);
        std::vector<double> grad = run_op(*op, {x, y, dy})[0].values();
        size_t negative = std::count_if(grad.begin(), grad.end(),
                                        [](double g) { return g != 0 || std::signbit(g); });
        EXPECT_EQ(negative, 0u) << dt.name() << ": elements that are not +0";
    }
}
