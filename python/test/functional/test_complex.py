"""complex64 tensors (F.complex, F.real, F.imag, F.polar) against NumPy: arithmetic, the NumPy
round trip, repr, the errors of unsupported ops and dtypes, and gradients against finite
differences and MegEngine 1.13's values."""

import pickle

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

RNG = np.random.default_rng(0)


def _c(shape):
    return (RNG.normal(size=shape) + 1j * RNG.normal(size=shape)).astype(np.complex64)


def _parts(z):
    return mge.Tensor(z.real.copy()), mge.Tensor(z.imag.copy())


def test_complex_real_imag_round_trip():
    re, im = RNG.normal(size=(2, 3)).astype(np.float32), RNG.normal(size=(2, 3)).astype(np.float32)
    z = F.complex(mge.Tensor(re), mge.Tensor(im))
    assert z.dtype == np.complex64 and z.shape == (2, 3)
    out = z.numpy()
    assert out.dtype == np.complex64
    np.testing.assert_array_equal(out, re + 1j * im)
    r, i = F.real(z), F.imag(z)
    assert r.dtype == np.float32 and i.dtype == np.float32
    np.testing.assert_array_equal(r.numpy(), re)
    np.testing.assert_array_equal(i.numpy(), im)


def test_complex_takes_data_and_broadcasts():
    np.testing.assert_array_equal(F.complex([1.0, 2.0], [3.0, 4.0]).numpy(), [1 + 3j, 2 + 4j])
    z = F.complex(mge.Tensor([[1.0], [2.0]]), mge.Tensor([0.5, -1.0, 2.0]))
    np.testing.assert_array_equal(
        z.numpy(), np.array([[1.0], [2.0]]) + 1j * np.array([0.5, -1.0, 2.0])
    )
    empty = F.complex(mge.Tensor(np.zeros((0, 3), np.float32)), mge.Tensor(0.0))
    assert empty.shape == (0, 3) and empty.numpy().dtype == np.complex64


def test_polar_is_abs_times_cis_angle():
    r = RNG.uniform(0, 3, size=5).astype(np.float32)
    a = RNG.uniform(-4, 4, size=5).astype(np.float32)
    z = F.polar(mge.Tensor(r), mge.Tensor(a))
    assert z.dtype == np.complex64
    np.testing.assert_allclose(
        z.numpy(), r * np.exp(1j * a.astype(np.float64)), rtol=1e-5, atol=1e-6
    )


def test_numpy_round_trip_of_complex64_arrays():
    a = _c((3, 4))
    t = mge.tensor(a)
    assert t.dtype == np.complex64 and t.shape == (3, 4)
    np.testing.assert_array_equal(t.numpy(), a)
    np.testing.assert_array_equal(F.real(t).numpy(), a.real)
    np.testing.assert_array_equal(F.imag(t).numpy(), a.imag)
    # Strided NumPy input (a transposed view) reads by value.
    np.testing.assert_array_equal(mge.tensor(a.T).numpy(), a.T)
    assert mge.tensor([1 + 2j], dtype="complex64").numpy().tolist() == [1 + 2j]
    assert mge.tensor([1.0, 2.0], dtype="complex64").numpy().tolist() == [1 + 0j, 2 + 0j]


def test_pickle_and_save_keep_complex_values(tmp_path):
    a = _c((2, 3))
    t = pickle.loads(pickle.dumps(mge.tensor(a)))
    assert t.dtype == np.complex64
    np.testing.assert_array_equal(t.numpy(), a)
    mge.save({"z": mge.tensor(a)}, tmp_path / "z.pkl")
    np.testing.assert_array_equal(mge.load(tmp_path / "z.pkl")["z"].numpy(), a)


def test_repr_is_megengines():
    z = F.complex(mge.Tensor([1.0, 2.0]), mge.Tensor([3.0, 4.0]))
    assert repr(z) == f"Tensor([1.+3.j 2.+4.j], dtype=complex64, device={z.device})"


@pytest.mark.parametrize(
    "op,ref",
    [
        (lambda a, b: a + b, np.add),
        (lambda a, b: a - b, np.subtract),
        (lambda a, b: a * b, np.multiply),
        (lambda a, b: -a, lambda a, b: -a),
    ],
    ids=["add", "sub", "mul", "neg"],
)
def test_ring_ops_match_numpy(op, ref):
    a, b = _c((4, 5)), _c((5,))  # b broadcasts along rows
    got = op(mge.tensor(a), mge.tensor(b))
    assert got.dtype == np.complex64
    np.testing.assert_allclose(got.numpy(), ref(a, b), rtol=1e-6, atol=1e-6)


def test_views_and_copies_keep_values():
    a = _c((2, 3))
    t = mge.tensor(a)
    np.testing.assert_array_equal(t.reshape(3, 2).numpy(), a.reshape(3, 2))
    np.testing.assert_array_equal(t[1:].numpy(), a[1:])
    np.testing.assert_array_equal(F.flatten(t).numpy(), a.flatten())
    np.testing.assert_array_equal(F.copy(t).numpy(), a)
    np.testing.assert_array_equal(t.transpose(1, 0).numpy(), a.T)
    np.testing.assert_array_equal(F.real(t.transpose(1, 0)).numpy(), a.T.real)


@pytest.mark.parametrize(
    "name,fn,needles",
    [
        ("div", lambda z: z / z, ["TRUE_DIV", "complex64"]),
        ("abs", lambda z: abs(z), ["ABS", "complex64"]),
        ("exp", lambda z: F.exp(z), ["EXP", "complex64"]),
        ("sqrt", lambda z: F.sqrt(z), ["SQRT", "complex64"]),
        ("eq", lambda z: z == -z, ["EQ", "complex64"]),
        ("sum", lambda z: z.sum(), ["Reduce", "complex64"]),
        ("mean", lambda z: F.mean(z), ["complex64"]),
        ("astype", lambda z: z.astype("float32"), ["TypeCvt", "complex64"]),
        ("matmul", lambda z: F.matmul(z, z), ["MatrixMul", "complex64"]),
        ("real_mix", lambda z: z * mge.Tensor(np.ones((2, 2), np.float32)), ["complex64"]),
        ("scalar", lambda z: z + 1, ["complex64"]),
        ("real_of_real", lambda z: F.real(F.real(z)), ["ComplexPart", "float32"]),
        ("complex_of_int", lambda z: F.complex([1, 2], [3, 4]), ["CreateComplex", "int32"]),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_unsupported_ops_raise_type_errors_naming_op_and_dtype(name, fn, needles):
    z = mge.tensor(_c((2, 2)))
    with pytest.raises(TypeError) as info:
        fn(z)
    for n in needles:
        assert n in str(info.value), f"{n!r} not in {info.value}"


def test_complex128_is_refused():
    with pytest.raises(TypeError, match="unsupported numpy dtype complex128"):
        mge.tensor(np.array([1 + 2j]))


def test_gradients_of_megengine_examples():
    x = mge.Parameter([1.5, -2.0])
    y = mge.Parameter([0.5, 3.0])
    gm = GradManager().attach([x, y])
    with gm:
        z = F.complex(x, y)
        w = F.real(z * z) + F.imag(z)
        gm.backward(w.sum())
    np.testing.assert_allclose(x.grad.numpy(), 2 * x.numpy(), rtol=1e-6)
    np.testing.assert_allclose(y.grad.numpy(), -2 * y.numpy() + 1, rtol=1e-6)

    x = mge.Parameter([1.5, 0.7])
    y = mge.Parameter([0.3, -2.0])
    gm = GradManager().attach([x, y])
    with gm:
        z = F.polar(x, y)
        w = F.real(z) + 2 * F.imag(z)
        gm.backward(w.sum())
    xv, yv = x.numpy(), y.numpy()
    np.testing.assert_allclose(x.grad.numpy(), np.cos(yv) + 2 * np.sin(yv), rtol=1e-5)
    np.testing.assert_allclose(y.grad.numpy(), -xv * np.sin(yv) + 2 * xv * np.cos(yv), rtol=1e-5)


def _through_complex(x, y, u, v):
    # Every complex op on the way: product (conjugate rule), sum, difference, negation,
    # broadcasting (u, v are rows), then both parts.
    z, c = F.complex(x, y), F.complex(u, v)
    q = -(z * c) + z * z - c
    return F.real(q) * 0.5 + F.imag(q) * F.imag(z)


def test_gradients_against_finite_differences():
    x, y = RNG.normal(size=(3, 4)), RNG.normal(size=(3, 4))
    u, v = RNG.normal(size=(4,)), RNG.normal(size=(4,))
    check_grad(_through_complex, x, y, u, v)
    check_grad(lambda r, a: F.real(F.polar(r, a)) - 3 * F.imag(F.polar(r, a)), x, y)


def test_second_order_gradient_flows_through_complex_ops():
    x = mge.Parameter([0.8, -1.2])
    gm_outer, gm_inner = GradManager().attach([x]), GradManager().attach([x])
    with gm_outer:
        with gm_inner:
            z = F.complex(x, x * 0.5)
            w = F.real(z * z * z)
            gm_inner.backward(w.sum())
        dx = x.grad
        x.grad = None
        gm_outer.backward(dx.sum())
    # (1 + 0.5i)^3 = 1 + 1.5i - 0.75 - 0.125i = 0.25 + 1.375i: w = 0.25 x^3, w'' = 1.5 x
    np.testing.assert_allclose(x.grad.numpy(), 1.5 * x.numpy(), rtol=1e-5)


def test_gradients_through_complex_views_and_copies():
    # Slicing's gradient scatters into complex zeros (Fill on complex64).
    x, y = mge.Parameter([1.0, 2.0, 3.0]), mge.Parameter([4.0, 5.0, 6.0])
    gm = GradManager().attach([x, y])
    with gm:
        z = F.complex(x, y)
        w = F.imag(z[1:]).sum() + 2 * F.real(F.concat([z, z])).sum()
        gm.backward(w)
    np.testing.assert_array_equal(x.grad.numpy(), [4.0, 4.0, 4.0])
    np.testing.assert_array_equal(y.grad.numpy(), [0.0, 1.0, 1.0])
