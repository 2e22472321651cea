// LSTMForward and LSTMBackward on the x86 handle against naive, at each Highway target: one step
// and one row, hidden sizes below, at and past a vector (1, 7, 16, 17, 33), a batch split unevenly
// across threads, the benchmark's (35, 16, 64) -> 128, reverse, without bias, saturated gates, NaN,
// and strided and broadcast inputs (copied dense first). The backward's reserve is random (gates in
// (0, 1)): the formulas hold for any.
#include <cmath>
#include <limits>

#include "common/lstm_shapes.h"
#include "neomeg/dnn/operators/rnn.h"
#include "x86/highway_targets.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Dims = LstmDims;

std::vector<TensorShape> backward_shapes(const Dims& z) {
    return {{z.t, z.b, z.i}, {4 * z.h, z.i}, {4 * z.h, z.h}, {z.t, z.b, 7 * z.h},
            {z.t, z.b, z.h}, {z.b, z.h},     {z.b, z.h}};
}

// (5, 5, 16, 64) and the benchmark's shape are large enough to split the batch across two threads
// (3 + 2 rows and 8 + 8), where the machine has them.
const std::vector<Dims> kDims = {{1, 1, 1, 1},  {1, 3, 5, 7},   {4, 1, 3, 17},    {5, 2, 8, 16},
                                 {6, 3, 9, 33}, {5, 5, 16, 64}, {35, 16, 64, 128}};

// Weights in PyTorch's and MegEngine's initial range, U(-1 / sqrt(H), 1 / sqrt(H)): with W_hh in
// [-1, 1) the backward's dh grows by about sqrt(4H) / 4 a step, past 1e5 in 35 steps of H = 128,
// where float32's rounding alone differs from naive's double by more than the tolerance.
void check_all(Handle* handle, const Dims& z) {
    double w = 1 / std::sqrt(double(z.h));
    for (bool bias : {true, false})
        for (bool reverse : {false, true}) {
            Checker<LSTMForward> f(handle);
            f.set_param(lstm_param(bias, reverse)).set_range(3, -w, w).set_range(4, -w, w);
            f.execs(lstm_forward_shapes(z, bias));
            Checker<LSTMBackward> b(handle);
            b.set_param(lstm_param(bias, reverse)).set_range(1, -w, w).set_range(2, -w, w);
            b.set_range(3, 0, 1).execs(backward_shapes(z));
        }
}

}  // namespace

TEST_F(X86, LSTMMatchesNaiveAtEachHighwayTarget) {
    size_t ran = for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        for (const Dims& z : kDims)
            check_all(handle.get(), z);
    });
    EXPECT_GE(ran, 1u);
}

TEST_F(X86, LSTMSaturatedGatesAndNaN) {
    for_each_highway_target({HWY_AVX3, HWY_AVX2, HWY_EMU128}, [&](int64_t) {
        Dims z{4, 3, 8, 20};
        // pre-activations up to a few hundred: sigmoid and tanh at and past their clamps
        Checker<LSTMForward> f(handle.get());
        f.set_param(lstm_param(true, false))
                .set_range(0, -60, 60)
                .execs(lstm_forward_shapes(z, true));
        std::vector<double> x(z.t * z.b * z.i, 0.25);
        x[z.i + 3] = std::numeric_limits<double>::quiet_NaN();  // row 1 of step 0
        f.set_range(0, -1, 1).set_values(0, x).execs(lstm_forward_shapes(z, true));
    });
}

TEST_F(X86, LSTMStridedTensors) {
    Dims z{3, 2, 5, 9};
    Checker<LSTMForward> f(handle.get());
    f.set_param(lstm_param(true, true)).set_noncontiguous(true).execs(lstm_forward_shapes(z, true));
    Checker<LSTMBackward> b(handle.get());
    b.set_param(lstm_param(true, false)).set_range(3, 0, 1).set_noncontiguous(true);
    b.execs(backward_shapes(z));
    // dy broadcast along time (the gradient of out.sum()), x batch-first transposed
    b.set_noncontiguous(false).exec_layouts(
            {TensorLayout({2, 3, 5}, dtype::Float32).dimshuffle({1, 0, 2}), f32({36, 5}),
             f32({36, 9}), f32({3, 2, 63}), TensorLayout({3, 2, 9}, {0, 9, 1}, dtype::Float32),
             TensorLayout({2, 9}, {0, 1}, dtype::Float32), f32({2, 9})});
    f.set_noncontiguous(false).exec_layouts(
            {TensorLayout({2, 3, 5}, dtype::Float32).dimshuffle({1, 0, 2}), f32({2, 9}),
             TensorLayout({2, 9}, {0, 1}, dtype::Float32), f32({36, 5}), f32({36, 9}), f32({36})});
}
