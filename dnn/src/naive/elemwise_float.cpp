// Elemwise formulas in double: float16/bfloat16/float32 data are widened, computed once, rounded
// once on store, so this is the most accurate reference we can give faster kernels.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "src/common/elemwise_special.h"
#include "src/naive/elemwise_scalar.h"

namespace neomeg::dnn::naive::elemwise {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double sigmoid(double x) {
    // Split by sign so exp never overflows into inf/inf.
    if (x >= 0)
        return 1 / (1 + std::exp(-x));
    double e = std::exp(x);
    return e / (1 + e);
}

double softplus(double x) {
    return std::max(x, 0.0) + std::log1p(std::exp(-std::abs(x)));
}

double normal_cdf(double x) {
    return 0.5 * std::erfc(-x * std::numbers::sqrt2 / 2);
}

double normal_pdf(double x) {
    return std::exp(-0.5 * x * x) * std::numbers::inv_sqrtpi / std::numbers::sqrt2;
}

double sign(double x) {
    if (std::isnan(x))
        return x;
    return (x > 0) - (x < 0);
}

double nan_max(double a, double b) {
    return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b);
}

double nan_min(double a, double b) {
    return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b);
}

double log_sum_exp(double a, double b) {
    double m = nan_max(a, b);
    // Infinite max: inf - inf would give NaN below, while the answer is the max itself.
    if (std::isnan(m) || std::isinf(m))
        return m;
    return m + std::log1p(std::exp(-std::abs(a - b)));
}

// MegEngine 1.13 computes these two in float, in this order; so do we, to give its results to
// the bit (the double formula differs in the last place for about one value in eight).
double hsigmoid(double x) {
    return std::clamp(static_cast<float>(x) + 3.f, 0.f, 6.f) / 6.f;
}

double hswish(double x) {
    float xf = static_cast<float>(x);
    return xf * std::clamp(xf + 3.f, 0.f, 6.f) * (1.f / 6.f);
}

}  // namespace

double eval_float(Mode mode, const double* x) {
    double a = x[0];
    switch (mode) {
        case Mode::RELU:
            return a > 0 ? a : 0;
        case Mode::ABS:
            return std::abs(a);
        case Mode::NEGATE:
            return -a;
        case Mode::SQUARE:
            return a * a;
        case Mode::ROUND:
            return std::round(a);
        case Mode::FLOOR:
            return std::floor(a);
        case Mode::CEIL:
            return std::ceil(a);
        case Mode::SIGN:
            return sign(a);
        case Mode::EXP:
            return std::exp(a);
        case Mode::EXPM1:
            return std::expm1(a);
        case Mode::LOG:
            return std::log(a);
        case Mode::LOG1P:
            return std::log1p(a);
        case Mode::SQRT:
            return std::sqrt(a);
        case Mode::RSQRT:
            return 1 / std::sqrt(a);
        case Mode::SIN:
            return std::sin(a);
        case Mode::COS:
            return std::cos(a);
        case Mode::TAN:
            return std::tan(a);
        case Mode::ASIN:
            return std::asin(a);
        case Mode::ACOS:
            return std::acos(a);
        case Mode::ATAN:
            return std::atan(a);
        case Mode::SINH:
            return std::sinh(a);
        case Mode::COSH:
            return std::cosh(a);
        case Mode::TANH:
            return std::tanh(a);
        case Mode::ASINH:
            return std::asinh(a);
        case Mode::ACOSH:
            return std::acosh(a);
        case Mode::ATANH:
            return std::atanh(a);
        case Mode::SIGMOID:
            return sigmoid(a);
        case Mode::ERF:
            return std::erf(a);
        case Mode::ERFINV:
            return dnn::elemwise::erfinv(a);
        case Mode::ERFC:
            return std::erfc(a);
        case Mode::ERFCINV:
            return dnn::elemwise::erfcinv(a);
        case Mode::GELU:
            return a * normal_cdf(a);
        case Mode::SILU:
            return a * sigmoid(a);
        case Mode::H_SWISH:
            return hswish(a);
        case Mode::HSIGMOID:
            return hsigmoid(a);
        case Mode::RELU6:
            return std::clamp(a, 0.0, 6.0);
        case Mode::SOFTPLUS:
            return softplus(a);
        case Mode::LOGSIGMOID:
            return -softplus(-a);
        case Mode::NOT:
            return a == 0;
        case Mode::ISNAN:
            return std::isnan(a);
        case Mode::ISINF:
            return std::isinf(a);
        default:
            break;
    }
    double b = x[1];
    switch (mode) {
        case Mode::ADD:
            return a + b;
        case Mode::SUB:
            return a - b;
        case Mode::MUL:
            return a * b;
        case Mode::TRUE_DIV:
            return a / b;
        case Mode::FLOOR_DIV:
            return std::floor(a / b);
        case Mode::MOD:
            return std::fmod(a, b);  // MegDNN's float MOD: the sign of a
        case Mode::POW:
            return std::pow(a, b);
        case Mode::MAX:
            return nan_max(a, b);
        case Mode::MIN:
            return nan_min(a, b);
        case Mode::EQ:
            return a == b;
        case Mode::NE:
            return a != b;
        case Mode::LT:
            return a < b;
        case Mode::LEQ:
            return a <= b;
        case Mode::AND:
            return a != 0 && b != 0;
        case Mode::OR:
            return a != 0 || b != 0;
        case Mode::XOR:
            return (a != 0) != (b != 0);
        case Mode::ATAN2:
            return std::atan2(a, b);
        case Mode::LOG_SUM_EXP:
            return log_sum_exp(a, b);
        case Mode::SWITCH_GT0:
            return a > 0 ? b : 0;
        case Mode::PRELU:
            return a < 0 ? a * b : a;
        case Mode::ABS_GRAD:
            return a > 0 ? b : -b;  // MegDNN's: -dy at 0 and NaN
        case Mode::SIGMOID_GRAD:
            return b * a * (1 - a);
        case Mode::TANH_GRAD:
            return b * (1 - a * a);
        case Mode::GELU_GRAD:
            return b * (normal_cdf(a) + a * normal_pdf(a));
        case Mode::SILU_GRAD: {
            double s = sigmoid(a);
            return b * s * (1 + a * (1 - s));
        }
        case Mode::H_SWISH_GRAD:
            return a < -3 ? 0 : (a > 3 ? b : b * (2 * a + 3) / 6);
        case Mode::HSIGMOID_GRAD:
            return a <= -3 || a >= 3 ? 0 : b / 6;
        case Mode::RELU6_GRAD:
            return a <= 0 || a >= 6 ? 0 : b;
        case Mode::SOFTPLUS_GRAD:
            return b * sigmoid(a);
        case Mode::LOGSIGMOID_GRAD:
            return b * sigmoid(-a);
        default:
            break;
    }
    double c = x[2];
    switch (mode) {
        case Mode::CLIP: {
            // NumPy's order: hi wins when lo > hi.
            double t = a < b ? b : a;
            return t > c ? c : t;
        }
        case Mode::FUSE_MUL_ADD3:
            return a * b + c;
        case Mode::COND:
            return a != 0 ? b : c;
        case Mode::FUSE_MUL_ADD4:
            return a * b + c * x[3];
        default:
            break;
    }
    throw NotSupportedError(str_cat("naive Elemwise: no float formula for mode ", to_string(mode)));
}

}  // namespace neomeg::dnn::naive::elemwise
