"""Fits the float polynomial of the x86 float32 ERFINV in float lanes (ErfInvF in
dnn/src/x86/elemwise_math_hwy.cpp): erfinv(y) / y = P(w) in M. Giles' variable w = -log(1 - y^2)
on [0, 5], as c0 + c0lo + w R(w) with c0 = sqrt(pi) / 2 rounded to 23 significant bits (so that
pair_sum's c0 - hi is exact up to P(5) = 2.07) and c0lo the float nearest the rest; R of degree 8,
relative (fit_float of fit_erf_f32.py: each coefficient rounded to float in turn, the ones above
it refitted). Prints the largest relative error (log2) and the constants. Needs numpy and mpmath;
not part of the build or of CI.

    cd scripts && python fit_erfinv_f32.py
"""

import mpmath as mp
import numpy as np
from fit_erf_f32 import f32, fit_float, nodes

mp.mp.dps = 30
SPLIT, DEGREE = 5.0, 8


def erfinv_over_y_of_w(w):
    y = mp.sqrt(-mp.expm1(-w))
    return mp.erfinv(y) / y if w > 0 else mp.sqrt(mp.pi) / 2


def main():
    exact = mp.sqrt(mp.pi) / 2
    c0 = float(mp.nint(exact * 2**23) / 2**23)
    c0lo = f32(float(exact - c0))
    w = nodes(0, SPLIT, 1500)
    fw = [erfinv_over_y_of_w(mp.mpf(v)) for v in w]
    g = np.array([float(v) for v in fw])
    rest = np.array([float(v - c0 - c0lo) for v in fw])
    c, err = fit_float(w, rest, 1 / g, DEGREE + 1, fixed=(0.0,))
    print(f"// 2^{err:.1f} relative")
    print(f"constexpr float kErfinvFC0 = {c0!r}f, kErfinvFC0Lo = {c0lo!r}f;")
    print(f"constexpr float kErfinvFR[] = {{{', '.join(repr(x) + 'f' for x in c[1:])}}};")


if __name__ == "__main__":
    main()
