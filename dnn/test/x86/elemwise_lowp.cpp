// Elemwise on float16 and bfloat16 on the x86 handle (elemwise_lowp.cpp: widened to float32, the
// float32 kernel, rounded back) against naive (exactly, but for the modes whose float32 kernel is
// ULP-bounded): every mode the float32 kernels claim, sizes 0, 1, a chunk boundary, primes and
// above the threading grain, broadcasts (scalar, row, column, per-channel, outer product), padded,
// reversed and transposed views, and special values (NaN, infinities, signed zeros, subnormals,
// values that overflow the 16-bit range when rounded).
#include <limits>

#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/param_base.h"
#include "src/x86/elemwise_hwy.h"
#include "src/x86/elemwise_lowp.h"
#include "src/x86/elemwise_math_hwy.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

const DType kLowp[] = {dtype::Float16, dtype::BFloat16};

param::Elemwise mode_param(Mode m) {
    param::Elemwise p;
    p.mode = m;
    return p;
}

std::vector<Mode> claimed_modes(DType dt) {
    std::vector<Mode> r;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        if (x86::elemwise_lowp_supported(static_cast<Mode>(i), dt, dt))
            r.push_back(static_cast<Mode>(i));
    return r;
}

size_t arity(Mode m) {
    return static_cast<size_t>(param::Elemwise::arity(m));
}

// A checker of mode m on dtype dt, inputs inside the mode's domain: exact, except for the modes
// whose float32 kernel is only within a few ULPs of naive (elemwise_f32_max_ulp), where that
// difference can move the 16-bit rounding by one unit.
Checker<Elemwise> checker(Handle* h, Mode m, DType dt) {
    Checker<Elemwise> c(h);
    double one_unit = dt == dtype::BFloat16 ? 1.0 / 128 : 1.0 / 1024;
    c.set_param(mode_param(m)).set_epsilon(x86::elemwise_f32_max_ulp(m) > 0 ? one_unit : 0);
    for (size_t i = 0; i < arity(m); ++i)
        c.set_dtype(i, dt);
    double lo = -3, hi = 3;
    if (m == Mode::LOG || m == Mode::SQRT || m == Mode::RSQRT)
        lo = 0.01;
    if (m == Mode::LOG1P)
        lo = -0.99;
    if (m == Mode::ASIN || m == Mode::ACOS || m == Mode::ATANH)
        lo = -0.99, hi = 0.99;
    if (m == Mode::ACOSH)
        lo = 1, hi = 30;
    c.set_range(0, lo, hi);
    return c;
}

}  // namespace

TEST_F(X86, ElemwiseLowpClaimsTheFloatModes) {
    for (DType dt : kLowp) {
        for (Mode m : {Mode::ADD, Mode::SUB, Mode::MUL, Mode::RELU, Mode::SWITCH_GT0,
                       Mode::FUSE_MUL_ADD3, Mode::SIGMOID, Mode::TRUE_DIV, Mode::EXP})
            EXPECT_TRUE(x86::elemwise_lowp_supported(m, dt, dt)) << param::to_string(m);
        // Mixed dtypes, comparisons and COND's bool input are not (every float mode is, since
        // the float32 kernels claim them all).
        EXPECT_FALSE(x86::elemwise_lowp_supported(Mode::ADD, dt, dtype::Float32));
        EXPECT_FALSE(x86::elemwise_lowp_supported(Mode::LT, dt, dtype::Bool));
        EXPECT_FALSE(x86::elemwise_lowp_supported(Mode::COND, dt, dt));
    }
    EXPECT_FALSE(x86::elemwise_lowp_supported(Mode::ADD, dtype::Float32, dtype::Float32));
}

TEST_F(X86, ElemwiseLowpMatchesNaiveExactly) {
    const std::vector<TensorShape> shapes = {{0},    {1},      {7},           {1024},
                                             {1025}, {13, 17}, {3, 5, 7, 11}, {(1 << 17) + 3}};
    for (DType dt : kLowp)
        for (Mode m : claimed_modes(dt))
            for (const TensorShape& s : shapes) {
                auto c = checker(handle.get(), m, dt);
                std::vector<TensorShape> in(arity(m), s);
                c.execs(in);
                c.set_noncontiguous(true).execs(in);
            }
}

TEST_F(X86, ElemwiseLowpBroadcasts) {
    const std::vector<std::vector<TensorShape>> binary = {
            {{13, 17}, {1, 17}},
            {{13, 17}, {13, 1}},
            {{13, 17}, {1}},
            {{1}, {13, 17}},
            {{1, 17}, {13, 1}},
            {{32, 6, 24, 24}, {1, 6, 1, 1}},
            {{4, 6, 5, 5}, {4, 6, 1, 1}},
            {{32, 120}, {120}},
            {{3, 1, 7}, {1, 5, 1}},
    };
    for (DType dt : kLowp)
        for (Mode m : claimed_modes(dt)) {
            auto c = checker(handle.get(), m, dt);
            for (const auto& shapes : binary) {
                std::vector<TensorShape> in(arity(m), shapes[0]);
                for (size_t i = 1; i < in.size(); ++i)
                    in[i] = shapes[i % 2];
                if (arity(m) == 1)
                    in = {shapes[1]};
                c.execs(in);
            }
        }
}

TEST_F(X86, ElemwiseLowpStridedViews) {
    for (DType dt : kLowp)
        for (Mode m : {Mode::ADD, Mode::MUL, Mode::RELU, Mode::SWITCH_GT0, Mode::FUSE_MUL_ADD3}) {
            auto c = checker(handle.get(), m, dt);
            // Reversed rows (rows stay dense), reversed columns and a transposed view (naive).
            for (TensorLayout l :
                 {TensorLayout({5, 7}, {-7, 1}, dt), TensorLayout({5, 7}, {7, -1}, dt),
                  TensorLayout({7, 5}, dt).dimshuffle({1, 0})}) {
                std::vector<TensorLayout> in(arity(m), TensorLayout({5, 7}, dt));
                in[0] = l;
                c.exec_layouts(in);
            }
        }
}

TEST_F(X86, ElemwiseLowpSpecialValues) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    // 1e-7 and 6e-8 are float16 subnormals, 1e-40 a bfloat16 one; 65504 and 3e38 are near the
    // largest finite values, so sums and products round to infinity.
    std::vector<double> special = {nan,  inf,   -inf, 0.0,  -0.0, 1e-7, -6e-8, 1e-40, 65504, -65504,
                                   3e38, -3e38, 0.5,  -0.5, 1,    -1,   11.5,  6.0,   1000,  1e-3};
    std::vector<double> values;
    for (int rep = 0; rep < 4; ++rep)
        values.insert(values.end(), special.begin(), special.end());
    std::vector<double> rotated(values.rbegin(), values.rend());
    for (DType dt : kLowp)
        for (Mode m : claimed_modes(dt)) {
            auto c = checker(handle.get(), m, dt);
            c.set_values(0, values);
            for (size_t i = 1; i < arity(m); ++i)
                c.set_values(i, i % 2 ? rotated : values);
            c.execs(std::vector<TensorShape>(arity(m), TensorShape{values.size()}));
        }
}

TEST_F(X86, ElemwiseLowpRunsHighway) {
    for (DType dt : kLowp)
        for (Mode m : {Mode::ADD, Mode::RELU, Mode::SWITCH_GT0, Mode::MUL}) {
            std::vector<HostTensor> in;
            std::mt19937 rng(6);
            for (size_t i = 0; i < arity(m); ++i) {
                in.emplace_back(TensorShape{32, 6, 24, 24}, dt);
                fill_uniform(in.back(), -2, 2, rng);
            }
            EXPECT_TRUE(run_and_compare<Elemwise>(*handle, mode_param(m), in, {}, 0)
                                .starts_with("hwy:"))
                    << param::to_string(m) << " " << dt.name();
        }
}
