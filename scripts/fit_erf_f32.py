"""Fits the float polynomials of the x86 float32 ERF and ERFC in float lanes (ErfF and ErfcF in
dnn/src/x86/elemwise_math_hwy.cpp). ERF: D(t) = erf(x) / x - c0 of degree 6 in t = x^2 on
|x| < 0.921875 (c0 = 2 / sqrt(pi) rounded to float, D's constant term its rounding error;
relative to erf(x) / x), and B(a) = -log(erfc(a)) of degree 6 in a on [0.921875, 4] (its error
weighted by erfc(a), which is how far it moves erf = 1 - exp(-B)). ERFC: erfcx(a) = exp(a^2)
erfc(a) as c0 + c0lo + u R(u), u = a - 1.234375, R of degree 10 on [0.46875, 2], and
G(z) = erfcx(1 / sqrt(z)) / sqrt(z) as c0 + c0lo + u R(u), u = z - 0.13, R of degree 8 on
z in [1 / 9.25^2, 1 / 4] (c0 + c0lo the function at u = 0 as a float pair; relative). Each
coefficient is rounded to float in turn, lowest first, and the ones above it are refitted to what
is left (near minimax by Lawson's reweighted least squares on Chebyshev points, against mpmath).
Prints the largest weighted error (log2) and the coefficients. Needs numpy and mpmath (both are in
the PyTorch reference environment); not part of the build or of CI.

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


def fit_float(x, y, w, degree, fixed=()):
    """Float coefficients, lowest first, of the polynomial in x nearest y with weights w (the
    first ones given)."""
    c = list(fixed)
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


def erfcx(v):
    return mp.erfc(v) * mp.exp(v * v)


def pair_fit(f, x, at, degree):
    """c0, c0lo (f(at) as a float pair) and R, lowest first, of f(x) = c0 + c0lo + u R(u),
    u = x - at, relative, and the error."""
    exact = f(mp.mpf(at))
    c0 = f32(exact)
    c0lo = f32(float(exact - c0))
    fx = [f(mp.mpf(v)) for v in x]
    y = np.array([float(v) for v in fx])
    rest = np.array([float(v - c0 - c0lo) for v in fx])
    c, err = fit_float(x - at, rest, 1 / y, degree + 1, fixed=(0.0,))
    return c0, c0lo, c[1:], err


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
    for name, f, lo, hi, at, degree in [
        ("kErfcxNear", erfcx, 0.46875, 2.0, 1.234375, 10),
        ("kErfcxFar", lambda z: erfcx(1 / mp.sqrt(z)) / mp.sqrt(z), 1 / 9.25**2, 0.25, 0.13, 8),
    ]:
        c0, c0lo, r, err = pair_fit(f, nodes(lo, hi, 1500), at, degree)
        print(f"// {name}: 2^{err:.1f} relative; at {at!r}, c0 {c0!r}f, c0lo {c0lo!r}f")
        print(f"{{{', '.join(repr(x) + 'f' for x in r)}}}")


if __name__ == "__main__":
    main()
