"""MOD as MegEngine 1.13 computes it: integers take the divisor's sign (Python's %), floats the
dividend's (C's fmod, as MegDNN's float kernel). Both checked against NumPy, which has both."""

import numpy as np

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

A = np.array([-7, -3, 3, 7, 0, 5], dtype=np.int32)
B = np.array([2, -2, -2, 3, 4, -5], dtype=np.int32)


def test_integer_mod_has_the_divisor_sign():
    np.testing.assert_array_equal(F.mod(mge.tensor(A), mge.tensor(B)).numpy(), np.mod(A, B))
    np.testing.assert_array_equal((mge.tensor(A) % 3).numpy(), A % 3)


def test_float_mod_is_fmod():
    a = np.array([-7, -3, 3, 7, 5.5, -5.5, 1e10, 3, -3, 0.0, -0.0], dtype=np.float32)
    b = np.array([2, -2, -2, 3, 2, 2, 3, -np.inf, 0.7, 1, -1], dtype=np.float32)
    got = F.mod(mge.tensor(a), mge.tensor(b)).numpy()
    want = np.fmod(a, b)
    np.testing.assert_array_equal(got, want)
    # the sign of a zero result is the dividend's, as fmod's
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))
    np.testing.assert_array_equal((mge.tensor(a) % 2).numpy(), np.fmod(a, np.float32(2)))


def test_float_mod_special_values():
    a = np.array([np.inf, 1.0, np.nan, 5.0], dtype=np.float32)
    b = np.array([2.0, 0.0, 1.0, np.inf], dtype=np.float32)
    got = F.mod(mge.tensor(a), mge.tensor(b)).numpy()
    with np.errstate(invalid="ignore"):  # inf % 2 and 1 % 0 are NaN
        want = np.fmod(a, b)
    np.testing.assert_array_equal(got, want)


def test_float16_mod_is_fmod():
    a = np.array([-7.5, 3.25, -1.0], dtype=np.float16)
    got = F.mod(mge.tensor(a), mge.tensor(np.float16(2))).numpy()
    np.testing.assert_array_equal(got, np.fmod(a, np.float16(2)))


def test_float_mod_gradients_against_finite_differences():
    a = np.array([-7.3, -3.1, 3.2, 7.9, 5.5], dtype=np.float32)
    b = np.array([2.0, -2.0, -2.5, 3.0, 2.0], dtype=np.float32)
    x, y = mge.Parameter(a), mge.Parameter(b)
    gm = GradManager().attach([x, y])
    with gm:
        gm.backward(F.mod(x, y).sum())
    h = 1e-3
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    dx = (np.fmod(a64 + h, b64) - np.fmod(a64 - h, b64)) / (2 * h)
    dy = (np.fmod(a64, b64 + h) - np.fmod(a64, b64 - h)) / (2 * h)
    np.testing.assert_allclose(x.grad.numpy(), dx, atol=1e-3)
    np.testing.assert_allclose(y.grad.numpy(), dy, atol=1e-3)
