// Elemwise on the x86 handle for int32 data, comparisons into bool and logical bool modes
// (elemwise_int_hwy.cpp) against naive, exactly: every mode claimed for each dtype pair, sizes 0,
// 1, primes and above the threading grain, broadcasts, padded and reversed views, padded outputs,
// int32's wrap at its ends, shift counts outside [0, 32), and NaN and signed zeros in comparisons;
// and COND's selection between float32 or int32 operands.
#include <cmath>
#include <cstdint>
#include <limits>

#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/param_base.h"
#include "src/x86/elemwise_hwy.h"
#include "x86/x86_test.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

param::Elemwise mode_param(Mode m) {
    param::Elemwise p;
    p.mode = m;
    return p;
}

size_t arity(Mode m) {
    return static_cast<size_t>(param::Elemwise::arity(m));
}

// The modes the kernels claim with inputs of `data` and dst of `dst`, but COND, whose condition
// is bool (ElemwiseCondSelects).
std::vector<Mode> claimed(DType data, DType dst) {
    std::vector<Mode> r;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        if (static_cast<Mode>(i) != Mode::COND &&
            x86::elemwise_supported(static_cast<Mode>(i), data, dst))
            r.push_back(static_cast<Mode>(i));
    return r;
}

// Checks every claimed mode of (data -> dst) on these shape lists, also with padded inputs.
void check_modes(Handle* handle, DType data, DType dst,
                 const std::vector<std::vector<TensorShape>>& cases, double lo, double hi) {
    auto modes = claimed(data, dst);
    EXPECT_FALSE(modes.empty());
    for (Mode m : modes) {
        Checker<Elemwise> c(handle);
        c.set_param(mode_param(m)).set_epsilon(0);
        for (size_t i = 0; i < arity(m); ++i)
            c.set_dtype(i, data).set_range(i, lo, hi);
        // Shift counts cover both sides of [0, 32).
        if (m == Mode::SHL || m == Mode::SHR)
            c.set_range(1, -4, 36);
        for (const auto& shapes : cases) {
            std::vector<TensorShape> in(arity(m));
            for (size_t i = 0; i < in.size(); ++i)
                in[i] = shapes[i % shapes.size()];
            c.set_noncontiguous(false).execs(in);
            c.set_noncontiguous(true).execs(in);
        }
    }
}

const std::vector<std::vector<TensorShape>> kCases = {
        {{0}},
        {{1}},
        {{7}},
        {{13, 17}},
        {{(1 << 17) + 3}},
        {{2, 300, 301}},
        {{13, 17}, {1, 17}},
        {{13, 17}, {13, 1}},
        {{1}, {13, 17}},
        {{4, 6, 5, 5}, {1, 6, 1, 1}},
        {{3, 1, 7}, {1, 5, 1}},
};

}  // namespace

TEST_F(X86, ElemwiseInt32MatchesNaive) {
    check_modes(handle.get(), dtype::Int32, dtype::Int32, kCases, -1000, 1000);
}

TEST_F(X86, ElemwiseInt32Wraps) {
    const double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    std::vector<double> v = {lo, hi, lo + 1, hi - 1, -1, 0, 1, 65536, -65536, 46341, 3, -7};
    std::vector<double> w(v.rbegin(), v.rend());
    for (Mode m : claimed(dtype::Int32, dtype::Int32)) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(0);
        for (size_t i = 0; i < arity(m); ++i)
            c.set_dtype(i, dtype::Int32).set_values(i, i % 2 ? w : v);
        c.execs(std::vector<TensorShape>(arity(m), TensorShape{v.size()}));
    }
}

TEST_F(X86, ElemwiseComparesIntoBool) {
    // A narrow integer range makes equal pairs common.
    check_modes(handle.get(), dtype::Float32, dtype::Bool, kCases, -3, 3);
    check_modes(handle.get(), dtype::Int32, dtype::Bool, kCases, -3, 3);
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> a = {nan, 1, nan, inf, -inf, 0.0, -0.0, 2, 1, inf, -inf, 3, 5, -1, 0, 1};
    std::vector<double> b = {1, nan, nan, inf, -inf, -0.0, 0.0, 1, 2, -inf, inf, 3, 4, -1, 0, 7};
    for (Mode m : claimed(dtype::Float32, dtype::Bool)) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(0).set_values(0, a).set_values(1, b);
        c.execs(std::vector<TensorShape>(arity(m), TensorShape{a.size()}));
    }
}

TEST_F(X86, ElemwiseBoolLogic) {
    check_modes(handle.get(), dtype::Bool, dtype::Bool, kCases, 0, 1);
}

// COND(cond, a, b) with a bool condition: every operand broadcast or dense, float32 and int32
// data, NaN and signed zeros passing through untouched.
TEST_F(X86, ElemwiseCondSelects) {
    EXPECT_TRUE(x86::elemwise_supported(Mode::COND, dtype::Float32, dtype::Float32));
    EXPECT_TRUE(x86::elemwise_supported(Mode::COND, dtype::Int32, dtype::Int32));
    const std::vector<std::vector<TensorShape>> cases = {
            {{0}, {0}, {0}},
            {{1}, {1}, {1}},
            {{7}, {7}, {7}},
            {{(1 << 17) + 3}, {(1 << 17) + 3}, {(1 << 17) + 3}},
            {{13, 17}, {1}, {13, 17}},
            {{13, 1}, {13, 17}, {1, 17}},
            {{1}, {13, 17}, {13, 17}},
            {{4, 6, 5, 5}, {1, 6, 1, 1}, {4, 6, 5, 5}},
            {{8, 6, 7, 7}, {1, 6, 1, 1}, {1, 6, 1, 1}},
            {{1, 6, 1, 1}, {8, 6, 3, 3}, {1, 6, 1, 1}},
    };
    for (DType dt : {dtype::Float32, dtype::Int32}) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(Mode::COND)).set_epsilon(0).set_dtype(0, dtype::Bool);
        c.set_dtype(1, dt).set_dtype(2, dt).set_range(1, -100, 100).set_range(2, -100, 100);
        for (const auto& in : cases) {
            c.set_noncontiguous(false).execs(in);
            c.set_noncontiguous(true).execs(in);
        }
    }
    const double nan = std::numeric_limits<double>::quiet_NaN();
    Checker<Elemwise> c(handle.get());
    c.set_param(mode_param(Mode::COND)).set_epsilon(0).set_dtype(0, dtype::Bool);
    c.set_values(0, {1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 0, 1, 1});
    c.set_values(1, {nan, 1, -0.0, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    c.set_values(2, {0, nan, 1, 0.0, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
    c.execs({{18}, {18}, {18}});
    std::vector<HostTensor> in = {HostTensor({100}, dtype::Bool), HostTensor({100}, dtype::Float32),
                                  HostTensor({100}, dtype::Float32)};
    EXPECT_TRUE(run_and_compare<Elemwise>(*handle, mode_param(Mode::COND), in).starts_with("hwy:"));
}

TEST_F(X86, ElemwiseIntReversedRows) {
    Checker<Elemwise> c(handle.get());
    c.set_param(mode_param(Mode::ADD)).set_epsilon(0);
    c.exec_layouts(
            {TensorLayout({5, 7}, {-7, 1}, dtype::Int32), TensorLayout({5, 7}, dtype::Int32)});
    c.set_param(mode_param(Mode::LT));
    c.exec_layouts(
            {TensorLayout({5, 7}, {-7, 1}, dtype::Float32), TensorLayout({5, 7}, dtype::Float32)});
}

// Per-channel operands (copied once into a block the rows repeat) for int32 and into bool.
TEST_F(X86, ElemwiseIntPerChannel) {
    Checker<Elemwise> c(handle.get());
    c.set_epsilon(0).set_dtype(0, dtype::Int32).set_dtype(1, dtype::Int32);
    for (Mode m : {Mode::ADD, Mode::SUB, Mode::MAX}) {
        c.set_param(mode_param(m));
        c.execs({{8, 6, 7, 7}, {1, 6, 1, 1}});
        c.execs({{1, 6, 1, 1}, {8, 6, 3, 3}});
    }
    Checker<Elemwise> b(handle.get());
    b.set_param(mode_param(Mode::LT)).set_epsilon(0);
    b.execs({{8, 6, 7, 7}, {1, 6, 1, 1}});
    b.execs({{1, 6, 1, 1}, {8, 6, 3, 3}});
}

TEST_F(X86, ElemwiseIntRunsHighway) {
    const std::pair<DType, DType> pairs[] = {{dtype::Int32, dtype::Int32},
                                             {dtype::Float32, dtype::Bool},
                                             {dtype::Int32, dtype::Bool},
                                             {dtype::Bool, dtype::Bool}};
    for (auto [data, dst] : pairs)
        for (Mode m : claimed(data, dst)) {
            std::vector<HostTensor> in;
            std::mt19937 rng(6);
            for (size_t i = 0; i < arity(m); ++i) {
                in.emplace_back(TensorShape{1000}, data);
                fill_uniform(in.back(), 0, 4, rng);
            }
            EXPECT_TRUE(run_and_compare<Elemwise>(*handle, mode_param(m), in).starts_with("hwy:"))
                    << param::to_string(m) << " on " << data.name();
        }
}

// QuantizedS32 (a quantized Linear's bias addition) runs the int32 kernels on its storage in the
// modes the layout rule admits for quantized dtypes, and wraps as naive does.
TEST_F(X86, ElemwiseQuantizedS32RunsTheInt32KernelsAsNaive) {
    const DType q = DType::quantized_s32(0.25f);
    std::vector<Mode> want = {Mode::RELU, Mode::NEGATE, Mode::ADD, Mode::SUB, Mode::MAX, Mode::MIN};
    EXPECT_EQ(claimed(q, q), want);
    check_modes(handle.get(), q, q, kCases, -1000, 1000);
    const double lo = std::numeric_limits<int32_t>::min(), hi = std::numeric_limits<int32_t>::max();
    std::vector<double> v = {lo, hi, lo + 1, hi - 1, -1, 0, 1, 7};
    std::vector<double> w(v.rbegin(), v.rend());
    for (Mode m : want) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(0);
        for (size_t i = 0; i < arity(m); ++i)
            c.set_dtype(i, q).set_values(i, i % 2 ? w : v);
        c.execs(std::vector<TensorShape>(arity(m), TensorShape{v.size()}));
    }
}

// QuantizedS8 has no x86 kernel: naive computes it, wrapping at int8.
TEST_F(X86, ElemwiseQuantizedS8FallsBackToNaive) {
    const DType q = DType::quantized_s8(0.1f);
    for (Mode m : {Mode::RELU, Mode::NEGATE, Mode::ADD, Mode::SUB, Mode::MAX, Mode::MIN}) {
        EXPECT_FALSE(x86::elemwise_supported(m, q, q));
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(0);
        for (size_t i = 0; i < arity(m); ++i)
            c.set_dtype(i, q).set_range(i, -128, 128);
        c.execs(std::vector<TensorShape>(arity(m), TensorShape{13, 17}));
        if (arity(m) == 2)
            c.execs({{13, 17}, {1, 17}});
    }
}
