// Elemwise on the x86 handle (Highway kernels) against naive, exactly (or within the ULPs that
// elemwise_f32_max_ulp documents for a mode computed in float): every float32 mode the kernel
// claims, every int32 mode, comparisons into bool and logical bool modes, sizes 0, 1, primes and
// above the threading grain, same-shape, scalar, row, column, per-channel and outer-product
// broadcasts, padded, reversed and transposed views, padded outputs, special values (NaN,
// infinities, signed zeros, the edges of exp's and log's range, int32's wrap), and other dtypes,
// which go to naive.
#include <cmath>
#include <limits>
#include <random>

#include "neomeg/dnn/operators/elemwise.h"
#include "neomeg/dnn/param_base.h"
#include "src/x86/elemwise_hwy.h"
#include "src/x86/elemwise_math_hwy.h"
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

std::vector<Mode> claimed_modes() {
    std::vector<Mode> r;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        if (x86::elemwise_f32_supported(static_cast<Mode>(i)))
            r.push_back(static_cast<Mode>(i));
    return r;
}

size_t arity(Mode m) {
    return static_cast<size_t>(param::Elemwise::arity(m));
}

// Naive's result within the mode's documented ULPs (tensors_near's measure, relative above 1).
double eps_of(Mode m) {
    return x86::elemwise_f32_max_ulp(m) * std::ldexp(1.0, -23);
}

// Inputs inside each mode's domain, so that the comparison is of values, not of NaNs.
void set_domain(Checker<Elemwise>& c, Mode m) {
    double lo = -3, hi = 3;
    if (m == Mode::LOG || m == Mode::SQRT || m == Mode::RSQRT)
        lo = 0.01;
    if (m == Mode::LOG1P)
        lo = -0.99;
    if (m == Mode::ASIN || m == Mode::ACOS || m == Mode::ATANH)
        lo = -0.99, hi = 0.99;
    if (m == Mode::ACOSH)
        lo = 1, hi = 30;
    if (m == Mode::EXP || m == Mode::EXPM1 || m == Mode::SIGMOID || m == Mode::TANH ||
        m == Mode::SINH || m == Mode::COSH || m == Mode::SOFTPLUS || m == Mode::LOGSIGMOID)
        lo = -30, hi = 30;
    if (m == Mode::POW)
        lo = 0.01;
    if (m == Mode::ERF || m == Mode::ERFC || m == Mode::GELU || m == Mode::GELU_GRAD)
        lo = -7, hi = 7;
    if (m == Mode::ERFINV)
        lo = -0.999, hi = 0.999;
    if (m == Mode::ERFCINV)
        lo = 0.001, hi = 1.999;
    c.set_range(0, lo, hi);
}

// The same shape for every input.
std::vector<TensorShape> same(const TensorShape& s, Mode m) {
    return std::vector<TensorShape>(arity(m), s);
}

const std::vector<TensorShape> kShapes = {
        {0}, {1}, {7}, {13, 17}, {3, 5, 7, 11}, {(1 << 17) + 3}, {2, 300, 301}};

}  // namespace

TEST_F(X86, ElemwiseClaimsTheHotModes) {
    for (Mode m :
         {Mode::ADD,        Mode::SUB,           Mode::MUL,    Mode::TRUE_DIV,  Mode::RELU,
          Mode::SWITCH_GT0, Mode::EXP,           Mode::LOG,    Mode::TANH,      Mode::SIGMOID,
          Mode::MAX,        Mode::FUSE_MUL_ADD3, Mode::ROUND,  Mode::FLOOR_DIV, Mode::SILU_GRAD,
          Mode::SOFTPLUS,   Mode::SIN,           Mode::POW,    Mode::MOD,       Mode::TAN,
          Mode::ERF,        Mode::ERFC,          Mode::ERFINV, Mode::ERFCINV,   Mode::GELU,
          Mode::GELU_GRAD,  Mode::PRELU})
        EXPECT_TRUE(x86::elemwise_f32_supported(m)) << param::to_string(m);
    for (Mode m : {Mode::ADD, Mode::SUB, Mode::MUL, Mode::MAX, Mode::MIN, Mode::RELU})
        EXPECT_TRUE(x86::elemwise_supported(m, dtype::Int32, dtype::Int32)) << param::to_string(m);
    for (Mode m : {Mode::EQ, Mode::NE, Mode::LT, Mode::LEQ}) {
        EXPECT_TRUE(x86::elemwise_supported(m, dtype::Float32, dtype::Bool));
        EXPECT_TRUE(x86::elemwise_supported(m, dtype::Int32, dtype::Bool));
    }
    for (Mode m : {Mode::AND, Mode::OR, Mode::XOR, Mode::NOT})
        EXPECT_TRUE(x86::elemwise_supported(m, dtype::Bool, dtype::Bool));
    // TRUE_DIV of int32 gives float32; other mixed dtypes are not claimed.
    EXPECT_TRUE(x86::elemwise_supported(Mode::TRUE_DIV, dtype::Int32, dtype::Float32));
    EXPECT_FALSE(x86::elemwise_supported(Mode::ADD, dtype::Int32, dtype::Float32));
}

TEST_F(X86, ElemwiseMatchesNaiveExactly) {
    for (Mode m : claimed_modes())
        for (const TensorShape& s : kShapes) {
            Checker<Elemwise> c(handle.get());
            c.set_param(mode_param(m)).set_epsilon(eps_of(m));
            set_domain(c, m);
            c.execs(same(s, m));
            c.set_noncontiguous(true).execs(same(s, m));
        }
}

TEST_F(X86, ElemwiseBroadcasts) {
    const std::vector<std::vector<TensorShape>> binary = {
            {{13, 17}, {1, 17}},
            {{13, 17}, {13, 1}},
            {{13, 17}, {1}},
            {{1}, {13, 17}},
            {{1, 17}, {13, 1}},
            {{4, 6, 5, 5}, {1, 6, 1, 1}},
            {{4, 6, 5, 5}, {4, 6, 1, 1}},
            {{64, 10}, {10}},
            {{3, 1, 7}, {1, 5, 1}},
    };
    for (Mode m : claimed_modes()) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(eps_of(m));
        set_domain(c, m);
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

// Per-channel and other operands that repeat in a block along the outer axes: small and odd
// H*W (rows shorter than a vector), an operand that repeats over N only ({N, C, 1, 1} does not:
// it stays a broadcast run per (n, c)), every operand position, 5-D, padded views.
TEST_F(X86, ElemwisePerChannelBroadcasts) {
    const std::vector<std::vector<TensorShape>> pairs = {
            {{64, 16, 8, 8}, {1, 16, 1, 1}}, {{8, 6, 7, 7}, {1, 6, 1, 1}},
            {{9, 5, 3, 3}, {1, 5, 1, 1}},    {{6, 5, 1, 1}, {1, 5, 1, 1}},
            {{5, 3, 1, 3}, {1, 3, 1, 1}},    {{4, 3, 2, 5, 3}, {1, 3, 1, 1, 1}},
            {{8, 6, 7, 7}, {1, 6, 7, 7}},    {{8, 6, 7, 7}, {1, 6, 1, 7}},
            {{8, 6, 7, 7}, {8, 6, 1, 1}},    {{300, 9, 4}, {9, 1}},
    };
    for (Mode m : claimed_modes()) {
        if (arity(m) == 1)
            continue;
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(eps_of(m));
        set_domain(c, m);
        for (const auto& shapes : pairs)
            for (size_t big = 0; big < arity(m); ++big) {
                std::vector<TensorShape> in(arity(m), shapes[1]);
                in[big] = shapes[0];
                c.set_noncontiguous(false).execs(in);
                if (big == 0)
                    c.set_noncontiguous(true).execs(in);
            }
    }
}

TEST_F(X86, ElemwiseStridedViews) {
    for (Mode m : {Mode::ADD, Mode::MUL, Mode::EXP, Mode::RELU, Mode::SWITCH_GT0, Mode::CLIP}) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(eps_of(m));
        set_domain(c, m);
        std::vector<TensorLayout> in;
        // Reversed rows (fast: rows stay dense), reversed columns and a transposed view (naive).
        for (TensorLayout l : {TensorLayout({5, 7}, {-7, 1}, dtype::Float32),
                               TensorLayout({5, 7}, {7, -1}, dtype::Float32),
                               TensorLayout({7, 5}, dtype::Float32).dimshuffle({1, 0})}) {
            in.assign(arity(m), TensorLayout({5, 7}, dtype::Float32));
            in[0] = l;
            c.exec_layouts(in);
        }
    }
}

TEST_F(X86, ElemwiseSpecialValues) {
    const double inf = std::numeric_limits<double>::infinity();
    const double nan = std::numeric_limits<double>::quiet_NaN();
    std::vector<double> special = {nan,  inf,   -inf, 0.0,  -0.0, 1e-45, -1e-45, 88.7,
                                   89.0, -104,  710,  -710, 1e30, -1e30, 20.5,   -20.5,
                                   3e38, -3e38, 0.5,  -0.5, 1,    -1,    -0.99,  6.0};
    std::vector<double> values;
    for (int rep = 0; rep < 4; ++rep)
        values.insert(values.end(), special.begin(), special.end());
    std::vector<double> rotated(values.rbegin(), values.rend());
    TensorShape s{values.size()};
    for (Mode m : claimed_modes()) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m)).set_epsilon(eps_of(m)).set_values(0, values);
        for (size_t i = 1; i < arity(m); ++i)
            c.set_values(i, i % 2 ? rotated : values);
        c.execs(same(s, m));
    }
}

TEST_F(X86, ElemwiseRunsHighway) {
    for (Mode m : claimed_modes()) {
        std::vector<HostTensor> in;
        std::mt19937 rng(6);
        for (size_t i = 0; i < arity(m); ++i) {
            in.emplace_back(TensorShape{1000}, dtype::Float32);
            fill_uniform(in.back(), 0.1, 2, rng);
        }
        EXPECT_TRUE(run_and_compare<Elemwise>(*handle, mode_param(m), in, {}, eps_of(m))
                            .starts_with("hwy:"))
                << param::to_string(m);
    }
}

TEST_F(X86, ElemwiseOtherDtypesRunNaive) {
    for (Mode m : {Mode::ADD, Mode::MUL, Mode::RELU}) {
        Checker<Elemwise> c(handle.get());
        c.set_param(mode_param(m));
        for (DType dt : {dtype::Float16, dtype::Int16}) {
            for (size_t i = 0; i < arity(m); ++i)
                c.set_dtype(i, dt);
            c.execs(same({13, 17}, m));
        }
        std::vector<HostTensor> in(arity(m), HostTensor({3, 4}, dtype::Int16));
        EXPECT_EQ(run_and_compare<Elemwise>(*handle, mode_param(m), in), "naive");
    }
}

// Every mode that takes float32 data has a kernel: none falls back to naive.
TEST_F(X86, ElemwiseClaimsEveryFloat32Mode) {
    using Rule = elemwise::DTypeRule;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i) {
        auto m = static_cast<Mode>(i);
        Rule r = elemwise::dtype_rule(m);
        if (r == Rule::Float || r == Rule::Numeric || r == Rule::TrueDiv) {
            EXPECT_TRUE(x86::elemwise_f32_supported(m)) << param::to_string(m);
        }
    }
}

// One operator object across calls, as the eager runtime keeps one per op: the plan kept for the
// last layouts (elemwise.cpp, LastPlan) must be reused only for the same layouts and mode. Each
// call is checked against naive: repeats (new values, same layouts), another broadcast axis,
// a broadcast given as stride-0 view, strided inputs, another mode, size-1 axes whose strides
// differ (they address nothing), another dtype and a scalar operand.
TEST_F(X86, ElemwiseOneOperatorAcrossLayoutsMatchesNaive) {
    std::mt19937 rng(41);
    auto op = handle->create_operator<Elemwise>();
    auto naive_handle = Handle::make_naive();
    auto ref = naive_handle->create_operator<Elemwise>();
    auto check = [&](Mode mode, const TensorLayout& a, const TensorLayout& b) {
        op->param().mode = ref->param().mode = mode;
        HostTensor ha(a), hb(b);
        fill_uniform(ha, -3, 3, rng);
        fill_uniform(hb, -3, 3, rng);
        auto got = run_op(*op, {ha, hb});
        auto want = run_op(*ref, {ha.contiguous(), hb.contiguous()});
        EXPECT_TRUE(tensors_near(got[0], want[0], 0.0))
                << a.to_string() << " " << b.to_string() << " " << last_kernel(*op);
    };
    const DType f32 = dtype::Float32, i32 = dtype::Int32;
    const TensorLayout x({2, 4, 3, 3}, f32), chan({1, 4, 1, 1}, f32);
    check(Mode::ADD, x, chan);
    check(Mode::ADD, x, chan);  // the kept plan, new values
    check(Mode::ADD, x, TensorLayout({2, 1, 3, 3}, f32));
    check(Mode::ADD, x, TensorLayout({2, 4, 3, 3}, {0, 1, 0, 0}, f32));
    check(Mode::ADD, TensorLayout({2, 4, 3, 3}, {36, 1, 12, 4}, f32), chan);
    check(Mode::MUL, x, chan);
    check(Mode::SUB, x, TensorLayout({1, 4, 1, 1}, {100, 1, 7, 9}, f32));
    check(Mode::SUB, x, chan);
    check(Mode::ADD, TensorLayout({2, 4, 3, 3}, i32), TensorLayout({1, 4, 1, 1}, i32));
    // The same shapes right after the kept plan: strided, then 16-bit (another element size).
    check(Mode::ADD, x, chan);
    check(Mode::ADD, TensorLayout({2, 4, 3, 3}, {36, 1, 12, 4}, f32), chan);
    check(Mode::ADD, x, chan);
    check(Mode::ADD, TensorLayout({2, 4, 3, 3}, dtype::Float16),
          TensorLayout({1, 4, 1, 1}, dtype::Float16));
    check(Mode::ADD, x, TensorLayout(TensorShape{}, f32));
    check(Mode::ADD, TensorLayout({5, 7}, f32), TensorLayout(TensorShape{}, f32));
    check(Mode::ADD, x, chan);
}

// The workspace size is kept for the last layouts too (get_workspace_in_bytes' staging check):
// one operator asked across layouts whose staged copies differ in size, expanded blocks, scalars
// and plain operands must answer what a fresh operator answers for each, and compute what naive
// does with that workspace.
TEST_F(X86, ElemwiseOneOperatorWorkspaceFollowsLayouts) {
    std::mt19937 rng(43);
    auto op = handle->create_operator<Elemwise>();
    auto ref = Handle::make_naive()->create_operator<Elemwise>();
    const DType f32 = dtype::Float32;
    const TensorLayout t4({4, 4}, {1, 4}, f32), t8({8, 8}, {1, 8}, f32), r4({4, 4}, f32),
            r8({8, 8}, f32), x({2, 4, 3, 3}, f32), chan({1, 4, 1, 1}, f32),
            scalar(TensorShape{}, f32), col8({8, 1}, f32);
    const std::vector<std::pair<TensorLayout, TensorLayout>> calls = {
            {t4, r4},     {t8, r8}, {t4, r4}, {r8, t8},    {x, chan}, {t8, col8},
            {r4, scalar}, {r4, r4}, {t8, r8}, {x, scalar}, {t4, r4}};
    for (int round = 0; round < 2; ++round) {
        for (const auto& [a, b] : calls) {
            for (Mode mode : {Mode::ADD, Mode::MUL}) {
                op->param().mode = ref->param().mode = mode;
                auto fresh = handle->create_operator<Elemwise>();
                fresh->param().mode = mode;
                std::vector<TensorLayout> in{a, b}, out(1);
                fresh->deduce_layout(in, out);
                EXPECT_EQ(op->get_workspace_in_bytes(in, out),
                          fresh->get_workspace_in_bytes(in, out))
                        << a.to_string() << " " << b.to_string();
                HostTensor ha(a), hb(b);
                fill_uniform(ha, -3, 3, rng);
                fill_uniform(hb, -3, 3, rng);
                auto got = run_op(*op, {ha, hb});
                auto want = run_op(*ref, {ha.contiguous(), hb.contiguous()});
                EXPECT_TRUE(tensors_near(got[0], want[0], 0.0))
                        << a.to_string() << " " << b.to_string() << " " << last_kernel(*op);
            }
        }
    }
}
