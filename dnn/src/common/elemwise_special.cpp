// Inverse error functions: M. Giles' single-precision approximation ("Approximating the erfinv
// function", GPU Computing Gems, 2011) as the start, refined by Newton steps on std::erf/std::erfc
// to double accuracy. The approximation is written in w = -log((1-x)(1+x)) = -log(y (2-y)) for
// y = erfc(x), which keeps full relative accuracy near the tails.
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

// Newton on f(x) = g(x) - y where g' = sign * 2/sqrt(pi) exp(-x^2).
template <class G>
double newton(double x, double y, G g, double sign) {
    for (int it = 0; it < 6; ++it) {
        double d = sign * kTwoOverSqrtPi * std::exp(-x * x);
        if (d == 0)
            break;
        double step = (g(x) - y) / d;
        x -= step;
        if (std::abs(step) <= 1e-16 * std::abs(x))
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
    double x = giles_start(1 - y, -std::log(y * (2 - y)));
    return newton(x, y, [](double v) { return std::erfc(v); }, -1.0);
}

double erfinv(double y) {
    if (std::isnan(y) || y < -1 || y > 1)
        return std::numeric_limits<double>::quiet_NaN();
    // Near +-1 the tail form is exact in 1 - |y|; near 0 erf itself keeps the relative accuracy.
    if (std::abs(y) > 0.5)
        return std::copysign(erfcinv(1 - std::abs(y)), y);
    double x = giles_start(y, -std::log1p(-y * y));
    return newton(x, y, [](double v) { return std::erf(v); }, 1.0);
}

}  // namespace neomeg::dnn::elemwise
