// Inverse error functions: a start, refined by Newton steps on std::erf / log(std::erfc) to double
// accuracy. The start is M. Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems, 2011) in w = -log((1-x)(1+x)) = -log(y (2-y)) for y = erfc(x),
// which holds while w is at most about 16 (1 - |x| down to float32's epsilon); further out, the
// asymptotic form of erfc takes over.
#include "src/common/elemwise_special.h"

#include <cmath>
#include <limits>
#include <numbers>

namespace neomeg::dnn::elemwise {

namespace {

// erfinv(t) ~ t * p(w) with w = -log(1 - t^2), for t in (-1, 1); ~1e-7 relative.
double giles_start(double t, double w) {
    double p;
    if (w < 5.0) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = std::sqrt(w) - 3.0;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    return p * t;
}

constexpr double kTwoOverSqrtPi = 2.0 * std::numbers::inv_sqrtpi;
constexpr double kGilesMaxW = 16;

// erfc(x) ~ exp(-x^2) / (x sqrt(pi)) for large x, solved for x by fixed-point steps.
double erfc_tail_start(double y) {
    double x = std::sqrt(-std::log(y));
    for (int it = 0; it < 3; ++it)
        x = std::sqrt(-std::log(y * std::sqrt(std::numbers::pi) * x));
    return x;
}

bool converged(double step, double x) {
    return std::abs(step) <= 1e-16 * std::abs(x);
}

// Newton on erf(x) = y.
double newton_erf(double x, double y) {
    for (int it = 0; it < 8; ++it) {
        double step = (std::erf(x) - y) / (kTwoOverSqrtPi * std::exp(-x * x));
        x -= step;
        if (converged(step, x))
            break;
    }
    return x;
}

// Newton on log(erfc(x)) = log(y): the log keeps the steps well scaled in the far tail, where
// erfc(x) - y spans many orders of magnitude.
double newton_log_erfc(double x, double y) {
    double log_y = std::log(y);
    for (int it = 0; it < 12; ++it) {
        double e = std::erfc(x);
        if (e == 0)
            break;
        double step = (std::log(e) - log_y) / (-kTwoOverSqrtPi * std::exp(-x * x) / e);
        x -= step;
        if (converged(step, x))
            break;
    }
    return x;
}

}  // namespace

double erfcinv(double y) {
    if (std::isnan(y) || y < 0 || y > 2)
        return std::numeric_limits<double>::quiet_NaN();
    if (y == 0)
        return std::numeric_limits<double>::infinity();
    if (y == 2)
        return -std::numeric_limits<double>::infinity();
    if (y > 1)
        return -erfcinv(2 - y);
    double w = -std::log(y * (2 - y));
    double x = w <= kGilesMaxW ? giles_start(1 - y, w) : erfc_tail_start(y);
    return newton_log_erfc(x, y);
}

double erfinv(double y) {
    if (std::isnan(y) || y < -1 || y > 1)
        return std::numeric_limits<double>::quiet_NaN();
    // Near +-1 the tail form is exact in 1 - |y|; near 0 erf itself keeps the relative accuracy.
    if (std::abs(y) > 0.5)
        return std::copysign(erfcinv(1 - std::abs(y)), y);
    double x = giles_start(y, -std::log1p(-y * y));
    return newton_erf(x, y);
}

}  // namespace neomeg::dnn::elemwise
