"""Fits the polynomials of the x86 float32 ERF, ERFC, TAN, POW, ERFINV and ERFCINV (dnn/src/x86/
elemwise_math_hwy.cpp), which run in double lanes to float accuracy: erf(x) / x as a polynomial
of degree 6 in x^2 on |x| < 1, erf(x) of degree 14 in x - 2.5 on [1, 4] (absolute error: erf is
near 1 there), erfcx(x) = exp(x^2) erfc(x) of degree 12 in x - 2.5 on [1, 4], exp(r) of degree 6
on [-ln 2 / 2, ln 2 / 2], sin(r) / r of degree 4 and cos(r) of degree 5 in r^2 on [0, pi / 4],
pi / 2 in three parts (33, 33 and 53 bits), and erfinv(y) in M. Giles' variable w = -log(1 - y^2):
erfinv(y) / y of degree 11 in w - 2.5 on [0, 5], and erfinv(y) of degree 9 in sqrt(w) - 3 on
[sqrt(5), sqrt(16.3)] (float's 1 - 2^-24 is w = 15.9). Each fit is a least-squares fit on Chebyshev
points (near minimax: its largest error, printed, is what the bound in the C++ comments quotes),
relative unless said, against mpmath at 40 digits. POW's logarithm uses atanh's
series, 1 / (2k + 1), which needs no fit. Needs numpy and mpmath (both are in the PyTorch
reference environment); not part of the build or of CI.

    python scripts/fit_double_modes.py
"""

import math

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def fit(f, lo, hi, degree, shift=0.0, relative=True, points=3000):
    """Coefficients, lowest first, of the polynomial in (t - shift) closest to f on [lo, hi] in
    least squares (relative or absolute), and log2 of its largest error of that kind on a dense
    grid."""
    k = np.arange(points)
    t = (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / points)
    y = np.array([float(f(mp.mpf(v))) for v in t])
    w = 1 / np.abs(y) if relative else np.ones_like(y)
    v = np.vander(t - shift, degree + 1, increasing=True)
    c = np.linalg.lstsq(v * w[:, None], y * w, rcond=None)[0]
    grid = np.linspace(lo, hi, 20001)
    want = np.array([float(f(mp.mpf(v))) for v in grid])
    err = np.abs(np.polyval(c[::-1], grid - shift) - want)
    return c, math.log2(np.max(err / np.abs(want) if relative else err))


def show(name, c, err, kind="relative"):
    print(f"// {name}: 2^{err:.1f} {kind}")
    print(f"constexpr double {name}[] = {{{', '.join(repr(float(x)) for x in c)}}};")


def erf_over_x(s):
    return mp.erf(mp.sqrt(s)) / mp.sqrt(s) if s > 0 else 2 / mp.sqrt(mp.pi)


def sin_over_r(u):
    return mp.sin(mp.sqrt(u)) / mp.sqrt(u) if u > 0 else mp.mpf(1)


def erfinv_of_w(w):
    """erfinv(y) for the y >= 0 with -log(1 - y^2) = w."""
    return mp.erfinv(mp.sqrt(-mp.expm1(-w)))


def erfinv_over_y_of_w(w):
    return erfinv_of_w(w) / mp.sqrt(-mp.expm1(-w)) if w > 0 else mp.sqrt(mp.pi) / 2


def pi_over_2_parts():
    def top33(v):
        m, e = mp.frexp(v)
        return mp.ldexp(mp.nint(mp.ldexp(m, 33)), e - 33)

    h = mp.pi / 2
    p1 = top33(h)
    p2 = top33(h - p1)
    return float(p1), float(p2), float(h - p1 - p2)


def main():
    show("kErfSmall", *fit(erf_over_x, 0, 1.0, 6))
    show("kErfMid", *fit(mp.erf, 1.0, 4.0, 14, shift=2.5, relative=False), "absolute")
    show("kErfcxMid", *fit(lambda x: mp.erfc(x) * mp.exp(x * x), 1.0, 4.0, 12, shift=2.5))
    show("kExpR", *fit(mp.exp, -math.log(2) / 2, math.log(2) / 2, 6))
    q = (math.pi / 4) ** 2
    show("kSinR", *fit(sin_over_r, 0, q, 4))
    show("kCosR", *fit(lambda u: mp.cos(mp.sqrt(u)), 0, q, 5))
    print("pi / 2 in parts:", ", ".join(repr(p) for p in pi_over_2_parts()))
    show("kErfinvNear", *fit(erfinv_over_y_of_w, 0, 5.0, 11, shift=2.5))
    far = lambda s: erfinv_of_w(s * s)
    show("kErfinvFar", *fit(far, math.sqrt(5.0), math.sqrt(16.3), 9, shift=3.0))


if __name__ == "__main__":
    main()
