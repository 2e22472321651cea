// Special functions libm lacks: inverse error functions, for Elemwise's ERFINV and ERFCINV.
#pragma once

namespace neomeg::dnn::elemwise {

// x with erf(x) == y; +-inf at y == +-1, NaN outside [-1, 1].
double erfinv(double y);
// x with erfc(x) == y; +inf at 0, -inf at 2, NaN outside [0, 2]. Accurate for tiny y, where
// erfinv(1 - y) would lose every digit.
double erfcinv(double y);

}  // namespace neomeg::dnn::elemwise
