"""Fits the float polynomials of the x86 float32 ERF in float lanes (ErfF in
dnn/src/x86/elemwise_math_hwy.cpp): D(t) = erf(x) / x - c0 of degree 6 in t = x^2 on
|x| < 0.921875 (c0 = 2 / sqrt(pi) rounded to float, D's constant term its rounding error;
relative to erf(x) / x), and B(a) = -log(erfc(a)) of degree 6 in a on [0.921875, 4] (its error
weighted by erfc(a), which is how far it moves erf = 1 - exp(-B)). Each coefficient is rounded to
float in turn, lowest first, and the ones above it are refitted to what is left (near minimax by
Lawson's reweighted least squares on Chebyshev points, against mpmath). Prints the largest
weighted error (log2) and the coefficients. Needs numpy and mpmath (both are in the PyTorch
reference environment); not part of the build or of CI.

    python scripts/fit_erf_f32.py
"""

import math

import mpmath as mp
import numpy as np

mp.mp.dps = 30
SMALL_REACH, CLAMP = 0.921875, 4.0


def f32(v):
    return float(np.float32(v))


def nodes(lo, hi, n=2000):
    k = np.arange(n)
    return (lo + hi) / 2 + (hi - lo) / 2 * np.cos(np.pi * (k + 0.5) / n)


def fit_float(x, y, w, degree):
    """Float coefficients, lowest first, of the polynomial in x nearest y with weights w."""
    c = []
    while len(c) <= degree:
        rest = y - sum(ci * x**i for i, ci in enumerate(c))
        v = np.vander(x, degree + 1, increasing=True)[:, len(c) :]
        lw = np.ones_like(x)
        for _ in range(60):
            s = np.sqrt(lw) * w
            sol = np.linalg.lstsq(v * s[:, None], rest * s, rcond=None)[0]
            e = np.abs((v @ sol - rest) * w)
            lw = np.maximum(lw * e / e.sum(), 1e-30)
            lw /= lw.max()
        c.append(f32(sol[0]))
    err = np.max(np.abs(sum(ci * x**i for i, ci in enumerate(c)) - y) * w)
    return c, math.log2(err)


def show(name, c, err, kind):
    print(f"// {name}: 2^{err:.1f} {kind}")
    print(f"constexpr float {name}[] = {{{', '.join(repr(x) + 'f' for x in c)}}};")


def main():
    c0 = 2 / mp.sqrt(mp.pi)
    print(f"constexpr float kErfFC0 = {f32(c0)!r}f;")
    t = nodes(0, SMALL_REACH**2)
    g = np.array([float(mp.erf(mp.sqrt(v)) / mp.sqrt(v) if v > 0 else c0) for v in t])
    show("kErfFSmall", *fit_float(t, g - f32(c0), 1 / g, 6), "relative")
    a = nodes(SMALL_REACH, CLAMP)
    b = np.array([float(-mp.log(mp.erfc(v))) for v in a])
    w = np.array([float(mp.erfc(v)) for v in a])
    show("kErfFLogTail", *fit_float(a, b, w, 6), "times erfc")


if __name__ == "__main__":
    main()
