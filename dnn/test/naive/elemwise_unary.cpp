// Elemwise unary modes against formulas written independently here (different formulations from
// the kernel's where one exists), on every float dtype, plus hand-computed values for the modes
// whose edge cases are the contract (ROUND halves, SIGN of zero and NaN, ISNAN/ISINF, NOT).
#include <cmath>
#include <functional>
#include <numbers>

#include "common/host_tensor.h"
#include "neomeg/dnn/operators/elemwise.h"

using namespace neomeg::dnn;
using namespace neomeg::dnn::test;

namespace {

using Mode = param::Elemwise::Mode;

HostTensor elemwise(Mode mode, const std::vector<HostTensor>& in) {
    auto handle = Handle::make_naive();
    auto op = handle->create_operator<Elemwise>();
    op->param().mode = mode;
    return run_op(*op, in)[0];
}

// x with f(x) == y for increasing f, by bisection: slow, but shares nothing with Newton.
double bisect(const std::function<double(double)>& f, double y, double lo, double hi) {
    for (int i = 0; i < 200; ++i) {
        double mid = 0.5 * (lo + hi);
        (f(mid) < y ? lo : hi) = mid;
    }
    return 0.5 * (lo + hi);
}

struct UnaryCase {
    Mode mode;
    std::function<double(double)> ref;
    double lo, hi;
};

std::vector<UnaryCase> float_cases() {
    using std::exp, std::log, std::sqrt;
    auto sigmoid = [](double x) { return 1 / (1 + exp(-x)); };
    auto relu6 = [](double x) { return x < 0 ? 0 : (x > 6 ? 6 : x); };
    return {
            {Mode::RELU, [](double x) { return x > 0 ? x : 0.0; }, -3, 3},
            {Mode::ABS, [](double x) { return x < 0 ? -x : x; }, -3, 3},
            {Mode::NEGATE, [](double x) { return 0 - x; }, -3, 3},
            {Mode::SQUARE, [](double x) { return x * x; }, -3, 3},
            {Mode::ROUND,
             [](double x) { return x < 0 ? -std::floor(-x + 0.5) : std::floor(x + 0.5); }, -5, 5},
            {Mode::FLOOR,
             [](double x) { return x - std::fmod(x, 1.0) - (std::fmod(x, 1.0) < 0 ? 1 : 0); }, -5,
             5},
            {Mode::CEIL, [](double x) { return -std::floor(-x); }, -5, 5},
            {Mode::SIGN, [](double x) { return x > 0 ? 1.0 : (x < 0 ? -1.0 : 0.0); }, -3, 3},
            {Mode::EXP, [](double x) { return std::pow(std::numbers::e, x); }, -5, 5},
            {Mode::EXPM1, [](double x) { return exp(x) - 1; }, -2, 2},
            {Mode::LOG, [](double x) { return std::log2(x) / std::log2(std::numbers::e); }, 0.1,
             10},
            {Mode::LOG1P, [](double x) { return log(1 + x); }, -0.9, 5},
            {Mode::SQRT, [](double x) { return std::pow(x, 0.5); }, 0, 10},
            {Mode::RSQRT, [](double x) { return std::pow(x, -0.5); }, 0.1, 10},
            {Mode::SIN, [](double x) { return std::cos(x - std::numbers::pi / 2); }, -5, 5},
            {Mode::COS, [](double x) { return std::sin(x + std::numbers::pi / 2); }, -5, 5},
            {Mode::TAN, [](double x) { return std::sin(x) / std::cos(x); }, -1.3, 1.3},
            {Mode::ASIN, [](double x) { return std::atan(x / sqrt(1 - x * x)); }, -0.95, 0.95},
            {Mode::ACOS,
             [](double x) { return std::numbers::pi / 2 - std::atan(x / sqrt(1 - x * x)); }, -0.95,
             0.95},
            {Mode::ATAN, [](double x) { return std::asin(x / sqrt(1 + x * x)); }, -5, 5},
            {Mode::SINH, [](double x) { return (exp(x) - exp(-x)) / 2; }, -3, 3},
            {Mode::COSH, [](double x) { return (exp(x) + exp(-x)) / 2; }, -3, 3},
            {Mode::TANH, [](double x) { return (exp(2 * x) - 1) / (exp(2 * x) + 1); }, -3, 3},
            {Mode::ASINH,
             [](double x) { return x < 0 ? -log(-x + sqrt(x * x + 1)) : log(x + sqrt(x * x + 1)); },
             -5, 5},
            {Mode::ACOSH, [](double x) { return log(x + sqrt(x * x - 1)); }, 1, 10},
            {Mode::ATANH, [](double x) { return 0.5 * log((1 + x) / (1 - x)); }, -0.9, 0.9},
            {Mode::SIGMOID, sigmoid, -8, 8},
            {Mode::ERF, [](double x) { return 1 - std::erfc(x); }, -3, 3},
            {Mode::ERFC, [](double x) { return 1 - std::erf(x); }, -3, 3},
            {Mode::ERFINV,
             [](double y) { return bisect([](double v) { return std::erf(v); }, y, -6, 6); },
             -0.999, 0.999},
            {Mode::ERFCINV,
             [](double y) { return bisect([](double v) { return -std::erfc(v); }, -y, -6, 6); },
             0.001, 1.999},
            {Mode::GELU, [](double x) { return 0.5 * x * (1 + std::erf(x / std::numbers::sqrt2)); },
             -4, 4},
            {Mode::SILU, [](double x) { return x / (1 + exp(-x)); }, -6, 6},
            {Mode::H_SWISH, [relu6](double x) { return x * relu6(x + 3) / 6; }, -5, 5},
            {Mode::HSIGMOID, [relu6](double x) { return relu6(x + 3) / 6; }, -5, 5},
            {Mode::RELU6, relu6, -2, 8},
            {Mode::SOFTPLUS, [](double x) { return log(1 + exp(x)); }, -10, 10},
            {Mode::LOGSIGMOID, [sigmoid](double x) { return log(sigmoid(x)); }, -10, 10},
    };
}

void check_unary(const UnaryCase& c, DType dt, const TensorShape& shape, uint32_t seed) {
    std::mt19937 rng(seed);
    HostTensor x(shape, dt);
    fill_uniform(x, c.lo, c.hi, rng);
    auto xs = x.values();  // after rounding to dt, so only the output rounding differs
    std::vector<double> want(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
        want[i] = c.ref(xs[i]);
    auto got = elemwise(c.mode, {x});
    EXPECT_TRUE(tensors_near(got, HostTensor::from(shape, want, dt), default_epsilon(dt)))
            << to_string(c.mode) << " on " << dt.name();
}

std::vector<double> run_values(Mode mode, const std::vector<double>& x, DType dt = dtype::Float32) {
    return elemwise(mode, {HostTensor::from({x.size()}, x, dt)}).values();
}

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

}  // namespace

TEST(ElemwiseUnary, EveryFloatModeMatchesItsFormulaOnFloat32) {
    for (auto& c : float_cases())
        check_unary(c, dtype::Float32, {7, 13}, 1);
}

TEST(ElemwiseUnary, EveryFloatModeOnFloat16AndBFloat16) {
    for (auto& c : float_cases()) {
        check_unary(c, dtype::Float16, {5, 11}, 2);
        check_unary(c, dtype::BFloat16, {5, 11}, 3);
    }
}

TEST(ElemwiseUnary, EveryUnaryModeIsCovered) {
    // A mode added to the definition without a test here fails this count.
    size_t unary = 0;
    for (size_t i = 0; i < param::Elemwise::kModeCount; ++i)
        unary += param::Elemwise::arity(static_cast<Mode>(i)) == 1;
    EXPECT_EQ(unary, float_cases().size() + 3);  // + NOT, ISNAN, ISINF below
}

TEST(ElemwiseUnary, RoundHalvesAwayFromZero) {
    EXPECT_EQ(run_values(Mode::ROUND, {-2.5, -1.5, -0.5, 0.5, 1.5, 2.5, 0.49999997, -0.4}),
              (std::vector<double>{-3, -2, -1, 1, 2, 3, 0, 0}));
    EXPECT_EQ(run_values(Mode::FLOOR, {-2.5, -0.0, 2.5}), (std::vector<double>{-3, 0, 2}));
    EXPECT_EQ(run_values(Mode::CEIL, {-2.5, 0.0, 2.5}), (std::vector<double>{-2, 0, 3}));
}

TEST(ElemwiseUnary, SignOfZeroIsZeroAndOfNaNIsNaN) {
    auto v = run_values(Mode::SIGN, {-3, -0.0, 0, 2e-30, kNaN, -kInf});
    EXPECT_EQ(v[0], -1);
    EXPECT_EQ(v[1], 0);
    EXPECT_EQ(v[2], 0);
    EXPECT_EQ(v[3], 1);
    EXPECT_TRUE(std::isnan(v[4]));
    EXPECT_EQ(v[5], -1);
}

TEST(ElemwiseUnary, KnownValues) {
    auto near = [](Mode m, double x, double want) {
        EXPECT_NEAR(run_values(m, {x})[0], want, 1e-6 * std::max(1.0, std::abs(want)))
                << to_string(m) << "(" << x << ")";
    };
    near(Mode::GELU, 1, 0.8413447460685429);
    near(Mode::GELU, -1, -0.15865525393145707);
    near(Mode::ERFINV, 0.5, 0.4769362762044699);
    near(Mode::ERFINV, -0.9, -1.1630871536766743);
    near(Mode::ERFCINV, 0.5, 0.4769362762044699);
    near(Mode::ERFCINV, 1.5, -0.4769362762044699);
    near(Mode::SOFTPLUS, 0, std::log(2.0));
    near(Mode::SOFTPLUS, 100, 100);  // no overflow in exp
    near(Mode::LOGSIGMOID, -100, -100);
    near(Mode::SIGMOID, -1000, 0);
    near(Mode::SIGMOID, 1000, 1);
    near(Mode::H_SWISH, 1, 4.0 / 6);
    near(Mode::HSIGMOID, 0, 0.5);
    near(Mode::RELU6, 7, 6);
    near(Mode::SILU, 1, 0.7310585786300049);
    near(Mode::RSQRT, 4, 0.5);
    EXPECT_EQ(run_values(Mode::ERFINV, {1, -1, 0})[0], kInf);
    EXPECT_EQ(run_values(Mode::ERFINV, {1, -1, 0})[1], -kInf);
    EXPECT_TRUE(std::isnan(run_values(Mode::ERFINV, {1.5})[0]));
    EXPECT_EQ(run_values(Mode::ERFCINV, {0, 2})[0], kInf);
    EXPECT_EQ(run_values(Mode::ERFCINV, {0, 2})[1], -kInf);
    EXPECT_TRUE(std::isnan(run_values(Mode::ERFCINV, {-0.5})[0]));
}

TEST(ElemwiseUnary, InverseErrorFunctionsRoundTripThroughLibm) {
    // Across the float32 range, tails included, where erfinv(1 - y) would lose every digit.
    std::vector<double> ys;
    for (double y = -0.999999; y < 1; y += 0.0173)
        ys.push_back(y);
    for (double t : {1e-3, 1e-7, 1e-12, 1e-20, 1e-30, 1e-37})
        ys.push_back(t);
    auto x = HostTensor::from({ys.size()}, ys);
    auto ys32 = x.values();
    auto inv = elemwise(Mode::ERFINV, {x}).values();
    for (size_t i = 0; i < ys32.size(); ++i)
        EXPECT_NEAR(std::erf(inv[i]), ys32[i], 1e-6 * std::abs(ys32[i]) + 1e-7) << ys32[i];
    std::vector<double> cs;
    for (double y = 0.0001; y < 2; y += 0.0173)
        cs.push_back(y);
    for (double t : {1e-10, 1e-20, 1e-30, 1e-37, 1e-44})
        cs.push_back(t);
    auto c = HostTensor::from({cs.size()}, cs);
    auto cs32 = c.values();
    auto cinv = elemwise(Mode::ERFCINV, {c}).values();
    for (size_t i = 0; i < cs32.size(); ++i)
        EXPECT_NEAR(std::erfc(cinv[i]), cs32[i], 1e-5 * cs32[i]) << cs32[i];
}

TEST(ElemwiseUnary, IsNanIsInfGiveBool) {
    auto x = HostTensor::from({5}, {1, kNaN, kInf, -kInf, -0.0});
    auto nan = elemwise(Mode::ISNAN, {x});
    auto inf = elemwise(Mode::ISINF, {x});
    EXPECT_EQ(nan.dtype(), dtype::Bool);
    EXPECT_EQ(nan.values(), (std::vector<double>{0, 1, 0, 0, 0}));
    EXPECT_EQ(inf.values(), (std::vector<double>{0, 0, 1, 1, 0}));
    auto h = HostTensor::from({3}, {1, kNaN, kInf}, dtype::Float16);
    EXPECT_EQ(elemwise(Mode::ISNAN, {h}).values(), (std::vector<double>{0, 1, 0}));
    // Integers are never NaN nor infinite.
    auto i = HostTensor::from({2}, {0, -5}, dtype::Int32);
    EXPECT_EQ(elemwise(Mode::ISNAN, {i}).values(), (std::vector<double>{0, 0}));
    EXPECT_EQ(elemwise(Mode::ISINF, {i}).values(), (std::vector<double>{0, 0}));
}

TEST(ElemwiseUnary, NotIsLogicalOnBool) {
    auto b = HostTensor::from({3}, {1, 0, 1}, dtype::Bool);
    auto r = elemwise(Mode::NOT, {b});
    EXPECT_EQ(r.dtype(), dtype::Bool);
    EXPECT_EQ(r.values(), (std::vector<double>{0, 1, 0}));
}

TEST(ElemwiseUnary, IntegerModesWrapLikeTwosComplement) {
    auto i8 = HostTensor::from({5}, {-128, -3, 0, 5, 127}, dtype::Int8);
    EXPECT_EQ(elemwise(Mode::NEGATE, {i8}).values(), (std::vector<double>{-128, 3, 0, -5, -127}));
    EXPECT_EQ(elemwise(Mode::ABS, {i8}).values(), (std::vector<double>{-128, 3, 0, 5, 127}));
    EXPECT_EQ(elemwise(Mode::RELU, {i8}).values(), (std::vector<double>{0, 0, 0, 5, 127}));
    EXPECT_EQ(elemwise(Mode::SIGN, {i8}).values(), (std::vector<double>{-1, -1, 0, 1, 1}));
    EXPECT_EQ(elemwise(Mode::SQUARE, {i8}).values(), (std::vector<double>{0, 9, 0, 25, 1}));
    EXPECT_EQ(elemwise(Mode::ROUND, {i8}).values(), i8.values());
    EXPECT_EQ(elemwise(Mode::FLOOR, {i8}).values(), i8.values());
    EXPECT_EQ(elemwise(Mode::CEIL, {i8}).values(), i8.values());
    auto u8 = HostTensor::from({3}, {0, 1, 200}, dtype::Uint8);
    EXPECT_EQ(elemwise(Mode::NEGATE, {u8}).values(), (std::vector<double>{0, 255, 56}));
    EXPECT_EQ(elemwise(Mode::SIGN, {u8}).values(), (std::vector<double>{0, 1, 1}));
    auto i32 = HostTensor::from({3}, {-2147483648.0, -7, 46341}, dtype::Int32);
    EXPECT_EQ(elemwise(Mode::ABS, {i32}).values(), (std::vector<double>{-2147483648.0, 7, 46341}));
    EXPECT_EQ(elemwise(Mode::SQUARE, {i32}).values(),
              (std::vector<double>{0, 49, -2147479015.0}));  // 46341^2 - 2^32
}
