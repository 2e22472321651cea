"""Fits the approximations of the x86 float32 GELU and its gradient (dnn/src/x86/
elemwise_math_hwy.cpp): R(a) = Phi(-a) exp(a^2 / 2), with Phi the standard normal cdf, and
S(a) = (R(a) - a / sqrt(2 pi)) / (a0 - a), where a0 is the root of R(a) = a / sqrt(2 pi) (the
gradient's zero at x = -a0), each as P(a) / Q(a) over [0, cap], printed with Q monic (its leading
1 left out); and exp(-r / 2) on [-ln 2, ln 2] as a polynomial of degree 6. Each fit minimises the
largest relative error (Loeb's linearisation with Lawson's reweighting, on Chebyshev points,
against mpmath at 40 digits). Prints the float32 coefficients, lowest degree first, the largest
relative error of the double fit, and a0 split into two floats. Needs numpy and mpmath (both are in
the PyTorch reference environment); not part of the build or of CI.

    python scripts/fit_gelu.py [--cap 13] [--points 3000]
"""

import argparse

import mpmath as mp
import numpy as np

mp.mp.dps = 40
INV_SQRT_2PI = 1 / mp.sqrt(2 * mp.pi)


def mills(a):
    """R(a) = Phi(-a) exp(a^2 / 2)."""
    a = mp.mpf(a)
    return mp.erfc(a / mp.sqrt(2)) / 2 * mp.exp(a * a / 2)


def gradient_root():
    return mp.findroot(lambda a: mills(a) - a * INV_SQRT_2PI, 0.75)


def fit(f, lo, hi, n, m, points):
    """P (degree n) and Q (degree m, Q(0) = 1) of the relative minimax fit of f on [lo, hi], and
    the fit's largest relative error on the points."""
    k = np.arange(points)
    a = lo + (1 - np.cos(np.pi * (k + 0.5) / points)) / 2 * (hi - lo)
    fa = np.array([float(f(v)) for v in a])
    cap = max(abs(lo), abs(hi))
    s = a / cap  # the fit runs in [-1, 1], which keeps the least-squares problem well conditioned
    w = np.ones(points)
    q_prev = np.ones(points)
    best = None
    for _ in range(300):
        cols = [s**i for i in range(n + 1)] + [-fa * s**j for j in range(1, m + 1)]
        lhs = np.stack(cols, 1) / (fa * q_prev)[:, None]
        rhs = 1 / q_prev
        sw = np.sqrt(w)
        c = np.linalg.lstsq(lhs * sw[:, None], rhs * sw, rcond=None)[0]
        p, q = c[: n + 1], np.concatenate([[1.0], c[n + 1 :]])
        q_prev = np.polyval(q[::-1], s)
        err = (np.polyval(p[::-1], s) / q_prev - fa) / fa
        e = np.abs(err).max()
        if best is None or e < best[0]:
            best = (e, p.copy(), q.copy())
        w = w * np.sqrt(np.abs(err) / e) + 1e-30
        w /= w.sum()
    e, p, q = best
    return [p[i] / cap**i for i in range(n + 1)], [q[j] / cap**j for j in range(m + 1)], e


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cap", type=float, default=13.0)
    parser.add_argument("--points", type=int, default=3000)
    args = parser.parse_args()
    a0 = gradient_root()

    def shifted(a):
        a = mp.mpf(a)
        if abs(a - a0) < mp.mpf(10) ** -25:  # the removable singularity: minus the slope
            return -mp.diff(lambda t: mills(t) - t * INV_SQRT_2PI, a0)
        return (mills(a) - a * INV_SQRT_2PI) / (a0 - a)

    for name, f, n, m in (("R", mills, 4, 5), ("S", shifted, 4, 4)):
        p, q, e = fit(f, 0, args.cap, n, m, args.points)
        print(f"{name}: largest relative error {e:.3g}")
        lead = q[-1]
        for label, c in (("P", p), ("Q", q[:-1])):
            print(f"  {label}: " + ", ".join(f"{np.float32(v / lead):.9e}f" for v in c))
    ln2 = float(mp.log(2))
    p, _, e = fit(lambda r: mp.exp(-mp.mpf(r) / 2), -ln2, ln2, 6, 0, args.points)
    print(f"exp(-r / 2): largest relative error {e:.3g}")
    print("  " + ", ".join(f"{np.float32(v):.9e}f" for v in p))
    hi = np.float32(float(a0))
    lo = np.float32(float(a0 - mp.mpf(float(hi))))
    print(f"a0 = {mp.nstr(a0, 20)}: {hi:.9e}f + {lo:.9e}f")


if __name__ == "__main__":
    main()
