"""Fits the polynomial of the x86 float32 TANH (dnn/src/x86/elemwise_math_hwy.cpp, TanhF) below
its split at 0.75: tanh(a) = a + a^3 P(a^2), P of degree 5 in s = a^2 on [0, 0.75^2], a
least-squares fit of (tanh(a) - a) / a^3 on Chebyshev points, relative, against mpmath at 40
digits. Prints the float32 coefficients, lowest degree first, and log2 of the fit's largest
relative error on a dense grid (the correction a^3 P is at most 0.18 of tanh(a) there, so P's
relative error reaches the result at most 0.18 times as large). Needs numpy and mpmath (both are in the PyTorch reference
environment); not part of the build or of CI.

    python scripts/fit_tanh.py [--split 0.75] [--degree 5]
"""

import argparse
import math

import mpmath as mp
import numpy as np

mp.mp.dps = 40


def correction(s):
    """(tanh(a) - a) / a^3 for s = a^2."""
    if s == 0:
        return -mp.mpf(1) / 3
    a = mp.sqrt(s)
    return (mp.tanh(a) - a) / a**3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--split", type=float, default=0.75)
    ap.add_argument("--degree", type=int, default=5)
    ap.add_argument("--points", type=int, default=3000)
    args = ap.parse_args()
    hi = args.split**2
    k = np.arange(args.points)
    s = hi / 2 + hi / 2 * np.cos(np.pi * (k + 0.5) / args.points)
    y = np.array([float(correction(mp.mpf(v))) for v in s])
    v = np.vander(s, args.degree + 1, increasing=True)
    c = np.linalg.lstsq(v / np.abs(y)[:, None], np.sign(y), rcond=None)[0]
    c = c.astype(np.float32)
    grid = np.linspace(0, hi, 20001)
    want = np.array([float(correction(mp.mpf(g))) for g in grid])
    got = np.polyval(c[::-1].astype(np.float64), grid)
    print(f"// P: 2^{math.log2(np.max(np.abs(got / want - 1))):.1f} relative")
    print("constexpr float kTanhP[] = {" + ", ".join(f"{x:.9e}f" for x in c) + "};")


if __name__ == "__main__":
    main()
