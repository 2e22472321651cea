// Elemwise binary, ternary and 4-ary modes against formulas written independently here, on every
// dtype each claims, plus hand-computed values where the semantics are the contract (Python's
// floor division and modulo with negative operands, division by zero on integers, shifts).
#include <cmath>
#include <functional>
#include <numbers>

#include "common/host_tensor.h"
#include "neomeg/dnn/operators/elemwise.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;
using Ref = std::function<double(const std::vector<double>&)>;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

HostTensor elemwise(Mode mode, const std::vector<HostTensor>& in) {
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = mode;
    return run_op(*op, in)[0];
}

std::vector<double> run_values(Mode mode, const std::vector<std::vector<double>>& xs,
                               DType dt = dtype::Float32) {
    std::vector<HostTensor> in;
    for (auto& x : xs)
        in.push_back(HostTensor::from({x.size()}, x, dt));
    return elemwise(mode, in).values();
}

// Two's complement wrap of an exact integer result into dt, as the kernel's store does.
double wrap(double v, DType dt) {
    if (dt.is_float() || dt.is_bool())
        return v;
    double span = std::ldexp(1.0, static_cast<int>(dt.size() * 8));
    double lo = dt.is_signed() ? -span / 2 : 0;
    return v - span * std::floor((v - lo) / span);
}

struct Case {
    Mode mode;
    Ref ref;
    std::vector<std::pair<double, double>> ranges;  // one per input
};

// Same-shape random inputs in the case's ranges; dst against ref on the (rounded) input values.
void check(const Case& c, DType dt, DType out_dt, uint32_t seed, double eps = -1) {
    std::mt19937 rng(seed);
    TensorShape shape{5, 13};
    std::vector<HostTensor> in;
    std::vector<std::vector<double>> vals;
    for (auto [lo, hi] : c.ranges) {
        in.emplace_back(shape, dt);
        fill_uniform(in.back(), lo, hi, rng);
        vals.push_back(in.back().values());
    }
    std::vector<double> want(shape.total_nr_elems());
    for (size_t i = 0; i < want.size(); ++i) {
        std::vector<double> x;
        for (auto& v : vals)
            x.push_back(v[i]);
        want[i] = wrap(c.ref(x), out_dt);
    }
    auto got = elemwise(c.mode, in);
    EXPECT_EQ(got.dtype(), out_dt) << to_string(c.mode);
    EXPECT_TRUE(tensors_near(got, HostTensor::from(shape, want, out_dt),
                             eps >= 0 ? eps : default_epsilon(out_dt)))
            << to_string(c.mode) << " on " << dt.name();
}

double py_floor_div(double a, double b) {
    return std::floor(a / b);
}
double py_mod(double a, double b) {
    return a - b * std::floor(a / b);
}

// Modes with the same meaning on floats and integers (MOD has the sign of the divisor on
// integers, of the dividend on floats, so each takes its own reference below).
std::vector<Case> numeric_cases(bool floats) {
    auto r2 = std::vector<std::pair<double, double>>{{-20, 20}, {-20, 20}};
    auto nz = std::vector<std::pair<double, double>>{{-20, 20}, {1, 7}};
    auto r3 = std::vector<std::pair<double, double>>{{-9, 9}, {-9, 9}, {-9, 9}};
    return {
            {Mode::ADD, [](auto& x) { return x[0] + x[1]; }, r2},
            {Mode::SUB, [](auto& x) { return x[0] - x[1]; }, r2},
            {Mode::MUL, [](auto& x) { return x[0] * x[1]; }, r2},
            {Mode::FLOOR_DIV, [](auto& x) { return py_floor_div(x[0], x[1]); }, nz},
            {Mode::FLOOR_DIV,
             [](auto& x) { return py_floor_div(x[0], x[1]); },
             {{-20, 20}, {-7, -1}}},
            {Mode::MOD,
             [floats](auto& x) { return floats ? std::fmod(x[0], x[1]) : py_mod(x[0], x[1]); }, nz},
            {Mode::MOD,
             [floats](auto& x) { return floats ? std::fmod(x[0], x[1]) : py_mod(x[0], x[1]); },
             {{-20, 20}, {-7, -1}}},
            {Mode::MAX, [](auto& x) { return x[0] < x[1] ? x[1] : x[0]; }, r2},
            {Mode::MIN, [](auto& x) { return x[0] < x[1] ? x[0] : x[1]; }, r2},
            {Mode::SWITCH_GT0, [](auto& x) { return x[0] > 0 ? x[1] : 0; }, r2},
            {Mode::ABS_GRAD, [](auto& x) { return x[0] > 0 ? x[1] : -x[1]; }, r2},
            {Mode::CLIP,
             [](auto& x) { return std::min(std::max(x[0], x[1]), x[2]); },
             {{-9, 9}, {-3, -2.99}, {4, 4.01}}},
            {Mode::FUSE_MUL_ADD3, [](auto& x) { return x[0] * x[1] + x[2]; }, r3},
            {Mode::FUSE_MUL_ADD4,
             [](auto& x) { return x[0] * x[1] + x[2] * x[3]; },
             {{-9, 9}, {-9, 9}, {-9, 9}, {-9, 9}}},
    };
}

std::vector<Case> float_only_cases() {
    using std::exp, std::log;
    return {
            {Mode::TRUE_DIV, [](auto& x) { return x[0] * (1 / x[1]); }, {{-5, 5}, {0.5, 3}}},
            {Mode::POW, [](auto& x) { return exp(x[1] * log(x[0])); }, {{0.1, 3}, {-2, 2}}},
            {Mode::ATAN2,
             [](auto& x) {
                 double t = std::atan(x[0] / x[1]);
                 return x[1] > 0 ? t : (x[0] >= 0 ? t + std::numbers::pi : t - std::numbers::pi);
             },
             {{-3, 3}, {-3, 3}}},
            {Mode::LOG_SUM_EXP,
             [](auto& x) { return log(exp(x[0]) + exp(x[1])); },
             {{-5, 5}, {-5, 5}}},
            {Mode::PRELU,
             [](auto& x) { return std::max(x[0], 0.0) + std::min(x[0], 0.0) * x[1]; },
             {{-5, 5}, {-2, 2}}},
    };
}

std::vector<Case> compare_cases() {
    // Narrow integer ranges so that equal pairs occur.
    auto r = std::vector<std::pair<double, double>>{{-2, 3}, {-2, 3}};
    return {
            {Mode::EQ, [](auto& x) { return double(x[0] == x[1]); }, r},
            {Mode::NE, [](auto& x) { return double(x[0] != x[1]); }, r},
            {Mode::LT, [](auto& x) { return double(x[0] < x[1]); }, r},
            {Mode::LEQ, [](auto& x) { return double(x[0] <= x[1]); }, r},
    };
}

const std::vector<DType> kFloats = {dtype::Float32, dtype::Float16, dtype::BFloat16};
const std::vector<DType> kInts = {dtype::Int8, dtype::Uint8, dtype::Int16, dtype::Int32};

}  // namespace

TEST(ElemwiseBinary, NumericModesOnFloats) {
    for (auto& c : numeric_cases(true))
        for (DType dt : kFloats)
            check(c, dt, dt, 11);
}

TEST(ElemwiseBinary, NumericModesOnIntegersWrap) {
    for (auto& c : numeric_cases(false))
        for (DType dt : kInts) {
            auto cc = c;
            if (!dt.is_signed()) {
                // uint8 data: non-negative operands (results such as 3 - 9 still wrap)
                if (cc.ranges[1].second <= 0)
                    continue;
                for (auto& [lo, hi] : cc.ranges)
                    lo = std::max(lo, 0.0);
            }
            check(cc, dt, dt, 12);
        }
    // int8 overflow wraps instead of saturating
    EXPECT_EQ(run_values(Mode::ADD, {{100, -100}, {100, -100}}, dtype::Int8),
              (std::vector<double>{-56, 56}));
    EXPECT_EQ(run_values(Mode::MUL, {{2147483647.0}, {2}}, dtype::Int32),
              (std::vector<double>{-2}));
}

TEST(ElemwiseBinary, FloatOnlyModes) {
    for (auto& c : float_only_cases())
        for (DType dt : kFloats)
            check(c, dt, dt, 13);
}

TEST(ElemwiseBinary, TrueDivOfIntegersIsFloat32) {
    for (DType dt : kInts) {
        auto v = elemwise(Mode::TRUE_DIV, {HostTensor::from({4}, {7, 6, 1, 0}, dt),
                                           HostTensor::from({4}, {2, 4, 3, 0}, dt)});
        EXPECT_EQ(v.dtype(), dtype::Float32);
        auto x = v.values();
        EXPECT_EQ(x[0], 3.5);
        EXPECT_EQ(x[1], 1.5);
        EXPECT_NEAR(x[2], 1.0 / 3, 1e-7);
        EXPECT_TRUE(std::isnan(x[3]));  // 0/0, as in float
    }
    auto x = run_values(Mode::TRUE_DIV, {{-7, 7}, {2, 0}}, dtype::Int32);
    EXPECT_EQ(x[0], -3.5);
    EXPECT_EQ(x[1], kInf);
}

TEST(ElemwiseBinary, ComparisonsGiveBoolOnEveryDtype) {
    for (auto& c : compare_cases()) {
        for (DType dt : kFloats)
            check(c, dt, dtype::Bool, 14);
        for (DType dt : kInts)
            check(c, dt, dtype::Bool, 15);
        Case b = c;
        b.ranges = {{0, 1}, {0, 1}};
        check(b, dtype::Bool, dtype::Bool, 16);
    }
    EXPECT_EQ(run_values(Mode::EQ, {{kNaN, 1}, {kNaN, 1}}), (std::vector<double>{0, 1}));
    EXPECT_EQ(run_values(Mode::NE, {{kNaN}, {kNaN}}), (std::vector<double>{1}));
    EXPECT_EQ(run_values(Mode::LT, {{-1, 200}, {1, 3}}, dtype::Uint8),  // 255 < 1 is false
              (std::vector<double>{0, 0}));
}

TEST(ElemwiseBinary, FloorDivFollowsPythonModAsMegDNN) {
    // Python: 7 // -2 == -4, 7 % -2 == -1, -7 // 2 == -4, -7 % 2 == 1, -7 // -2 == 3, -7 % -2 == -1
    // MegDNN's MOD is Python's on integers and C's fmod (the dividend's sign) on floats.
    std::vector<double> a{7, 7, -7, -7, -7, 6, 0};
    std::vector<double> b{2, -2, 2, -2, 3, -3, -5};
    std::vector<double> q{3, -4, -4, 3, -3, -2, 0};
    std::vector<double> r{1, -1, 1, -1, 2, 0, 0};
    std::vector<double> fr{1, 1, -1, -1, -1, 0, 0};
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Int16,
                     dtype::Int32}) {
        EXPECT_EQ(run_values(Mode::FLOOR_DIV, {a, b}, dt), q) << dt.name();
        EXPECT_EQ(run_values(Mode::MOD, {a, b}, dt), dt.is_float() ? fr : r) << dt.name();
    }
    EXPECT_EQ(run_values(Mode::MOD, {{5.5, -5.5, 5.5}, {-2, 2, 2}}),
              (std::vector<double>{1.5, -1.5, 1.5}));
    EXPECT_EQ(run_values(Mode::FLOOR_DIV, {{5.5, -5.5}, {-2, 2}}), (std::vector<double>{-3, -3}));
    // int8: -128 // -1 is 128, which wraps to -128; nothing traps
    EXPECT_EQ(run_values(Mode::FLOOR_DIV, {{-128}, {-1}}, dtype::Int8),
              (std::vector<double>{-128}));
}

TEST(ElemwiseBinary, IntegerDivisionByZeroGivesZero) {
    for (DType dt : kInts) {
        EXPECT_EQ(run_values(Mode::FLOOR_DIV, {{7, 0, 100}, {0, 0, 0}}, dt),
                  (std::vector<double>{0, 0, 0}))
                << dt.name();
        EXPECT_EQ(run_values(Mode::MOD, {{7, 0, 100}, {0, 0, 0}}, dt),
                  (std::vector<double>{0, 0, 0}))
                << dt.name();
    }
    auto f = run_values(Mode::MOD, {{1}, {0}});
    EXPECT_TRUE(std::isnan(f[0]));  // floats keep IEEE semantics
    EXPECT_EQ(run_values(Mode::FLOOR_DIV, {{1}, {0}})[0], kInf);
}

TEST(ElemwiseBinary, MaxMinPropagateNaN) {
    auto mx = run_values(Mode::MAX, {{kNaN, 1, 2}, {1, kNaN, -3}});
    auto mn = run_values(Mode::MIN, {{kNaN, 1, 2}, {1, kNaN, -3}});
    EXPECT_TRUE(std::isnan(mx[0]) && std::isnan(mx[1]));
    EXPECT_TRUE(std::isnan(mn[0]) && std::isnan(mn[1]));
    EXPECT_EQ(mx[2], 2);
    EXPECT_EQ(mn[2], -3);
}

TEST(ElemwiseBinary, LogSumExpDoesNotOverflow) {
    auto v = run_values(Mode::LOG_SUM_EXP,
                        {{0, 1000, -kInf, kInf, -1000}, {0, 1000, -kInf, 3, -1000}});
    EXPECT_NEAR(v[0], std::log(2.0), 1e-7);
    EXPECT_NEAR(v[1], 1000 + std::log(2.0), 1e-3);
    EXPECT_EQ(v[2], -kInf);
    EXPECT_EQ(v[3], kInf);
    EXPECT_NEAR(v[4], -1000 + std::log(2.0), 1e-3);
}

TEST(ElemwiseBinary, PowKnownValues) {
    auto v = run_values(Mode::POW, {{2, -8, 0, 4, 9}, {10, 1.0 / 3, 0, -0.5, 0.5}});
    EXPECT_EQ(v[0], 1024);
    EXPECT_TRUE(std::isnan(v[1]));  // negative base, fractional exponent
    EXPECT_EQ(v[2], 1);
    EXPECT_EQ(v[3], 0.5);
    EXPECT_EQ(v[4], 3);
}

TEST(ElemwiseBinary, LogicalOnBoolBitwiseOnIntegers) {
    std::vector<double> a{0, 0, 1, 1}, b{0, 1, 0, 1};
    EXPECT_EQ(run_values(Mode::AND, {a, b}, dtype::Bool), (std::vector<double>{0, 0, 0, 1}));
    EXPECT_EQ(run_values(Mode::OR, {a, b}, dtype::Bool), (std::vector<double>{0, 1, 1, 1}));
    EXPECT_EQ(run_values(Mode::XOR, {a, b}, dtype::Bool), (std::vector<double>{0, 1, 1, 0}));
    EXPECT_EQ(elemwise(Mode::AND, {HostTensor::from({1}, {1}, dtype::Bool),
                                   HostTensor::from({1}, {1}, dtype::Bool)})
                      .dtype(),
              dtype::Bool);
    std::vector<double> x{12, -1, 0b1010, 255}, y{10, 6, 0b0110, 15};
    EXPECT_EQ(run_values(Mode::AND, {x, y}, dtype::Int32), (std::vector<double>{8, 6, 2, 15}));
    EXPECT_EQ(run_values(Mode::OR, {x, y}, dtype::Int32), (std::vector<double>{14, -1, 14, 255}));
    EXPECT_EQ(run_values(Mode::XOR, {x, y}, dtype::Int32), (std::vector<double>{6, -7, 12, 240}));
    EXPECT_EQ(run_values(Mode::XOR, {{255, 0}, {15, 7}}, dtype::Uint8),
              (std::vector<double>{240, 7}));
    EXPECT_EQ(run_values(Mode::AND, {{-1, -128}, {127, -1}}, dtype::Int8),
              (std::vector<double>{127, -128}));
    EXPECT_EQ(run_values(Mode::OR, {{1, 256}, {2, -32768}}, dtype::Int16),
              (std::vector<double>{3, -32512}));
}

TEST(ElemwiseBinary, ShiftsOnIntegers) {
    EXPECT_EQ(run_values(Mode::SHL, {{1, 3, -1, 1, 5, 5}, {0, 4, 1, 31, 32, -1}}, dtype::Int32),
              (std::vector<double>{1, 48, -2, -2147483648.0, 0, 0}));
    EXPECT_EQ(
            run_values(Mode::SHR, {{48, -48, -1, 5, -5, 7}, {4, 4, 10, 32, 40, -1}}, dtype::Int32),
            (std::vector<double>{3, -3, -1, 0, -1, 0}));
    EXPECT_EQ(run_values(Mode::SHL, {{1, 3}, {7, 7}}, dtype::Int8),
              (std::vector<double>{-128, -128}));
    EXPECT_EQ(run_values(Mode::SHL, {{1, 255}, {7, 1}}, dtype::Uint8),
              (std::vector<double>{128, 254}));
    EXPECT_EQ(run_values(Mode::SHR, {{128, 255}, {7, 8}}, dtype::Uint8),
              (std::vector<double>{1, 0}));  // logical on unsigned
    EXPECT_EQ(run_values(Mode::SHR, {{-32768}, {15}}, dtype::Int16), (std::vector<double>{-1}));
}

TEST(ElemwiseTernary, CondSelectsByBool) {
    auto cond = HostTensor::from({4}, {1, 0, 0, 1}, dtype::Bool);
    for (DType dt : {dtype::Float32, dtype::Float16, dtype::BFloat16, dtype::Int8, dtype::Uint8,
                     dtype::Int16, dtype::Int32}) {
        auto a = HostTensor::from({4}, {1, 2, 3, 4}, dt);
        auto b = HostTensor::from({4}, {10, 20, 30, 40}, dt);
        auto r = elemwise(Mode::COND, {cond, a, b});
        EXPECT_EQ(r.dtype(), dt);
        EXPECT_EQ(r.values(), (std::vector<double>{1, 20, 30, 4})) << dt.name();
    }
    auto r = elemwise(Mode::COND, {cond, HostTensor::from({4}, {1, 1, 1, 1}, dtype::Bool),
                                   HostTensor::from({4}, {0, 0, 1, 0}, dtype::Bool)});
    EXPECT_EQ(r.dtype(), dtype::Bool);
    EXPECT_EQ(r.values(), (std::vector<double>{1, 0, 1, 1}));
    // NaN in the branch not taken does not leak
    EXPECT_EQ(elemwise(Mode::COND,
                       {HostTensor::from({2}, {1, 0}, dtype::Bool),
                        HostTensor::from({2}, {1, kNaN}), HostTensor::from({2}, {kNaN, 2})})
                      .values(),
              (std::vector<double>{1, 2}));
}

TEST(ElemwiseTernary, ClipKnownValues) {
    EXPECT_EQ(run_values(Mode::CLIP, {{-5, 0, 5}, {-1, -1, -1}, {2, 2, 2}}),
              (std::vector<double>{-1, 0, 2}));
    auto v = run_values(Mode::CLIP, {{kNaN}, {-1}, {2}});
    EXPECT_TRUE(std::isnan(v[0]));
    EXPECT_EQ(run_values(Mode::CLIP, {{-5, 0, 120}, {-1, -1, -1}, {100, 100, 100}}, dtype::Int8),
              (std::vector<double>{-1, 0, 100}));
}

TEST(ElemwiseBinary, PReluKnownValues) {
    // x < 0 ? x * slope : x: zeros keep their sign whatever the slope, NaN stays NaN, slopes
    // outside [0, 1] scale the negative side alone.
    auto v = run_values(Mode::PRELU, {{-2, 3, 0, -0.0, kNaN, -kInf, kInf, -4},
                                      {0.5, 0.5, -1, -1, 0.5, 0.25, -3, 2}});
    EXPECT_EQ(v[0], -1);
    EXPECT_EQ(v[1], 3);
    EXPECT_TRUE(v[2] == 0 && !std::signbit(v[2]));
    EXPECT_TRUE(v[3] == 0 && std::signbit(v[3]));
    EXPECT_TRUE(std::isnan(v[4]));
    EXPECT_EQ(v[5], -kInf);
    EXPECT_EQ(v[6], kInf);
    EXPECT_EQ(v[7], -8);
}
