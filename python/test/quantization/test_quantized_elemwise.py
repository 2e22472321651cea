"""Elementwise operators on quantized tensors, as MegEngine 1.13 computes them in eager mode:
RELU, NEGATE, ADD, SUB, MAX and MIN on qint8 and qint32 tensors of one scale, on the stored
integers (wrapping, not saturating), keeping the dtype; every other mode, quint8, mixed scales and
mixed quantized dtypes are refused. Operands beside a quantized tensor are converted as MegEngine
converts them. The expected integers are MegEngine 1.13's outputs for the same expressions
(megengine-venv, async_level 0), copied here as literals."""

import numpy as np
import pytest

import megengine as mge
import megengine.autodiff as ad
import megengine.functional as F
from megengine.core.tensor import dtype as D


def _q(values, dt):
    return mge.Tensor(np.array(values, np.float32)).astype(dt)


def _stored(t, dt):
    assert D.is_dtype_equal(t.dtype, dt), t.dtype.metadata
    return t.numpy().astype(np.int64).tolist()


# a and b stored as [-10, -5, 3, 12, 127, -128] and [5, 5, -5, 5, 5, -5] (scale 0.1)
_A = [-1.0, -0.5, 0.3, 1.2, 12.7, -12.8]
_B = [0.5, 0.5, -0.5, 0.5, 0.5, -0.5]


@pytest.mark.parametrize(
    "dt, want",
    [
        (
            D.qint8(0.1),
            {
                "relu": [0, 0, 3, 12, 127, 0],
                "neg": [10, 5, -3, -12, -127, -128],
                "add": [-5, 0, -2, 17, -124, 123],
                "sub": [-15, -10, 8, 7, 122, -123],
                "max": [5, 5, 3, 12, 127, -5],
                "min": [-10, -5, -5, 5, 5, -128],
            },
        ),
        (
            D.qint32(0.1),
            {
                "relu": [0, 0, 3, 12, 127, 0],
                "neg": [10, 5, -3, -12, -127, 128],
                "add": [-5, 0, -2, 17, 132, -133],
                "sub": [-15, -10, 8, 7, 122, -123],
                "max": [5, 5, 3, 12, 127, -5],
                "min": [-10, -5, -5, 5, 5, -128],
            },
        ),
    ],
)
def test_modes_on_the_stored_integers(dt, want):
    # MegEngine 1.13: F.relu(a), -a, a + b, a - b, F.maximum(a, b), F.minimum(a, b)
    a, b = _q(_A, dt), _q(_B, dt)
    assert _stored(a, dt) == [-10, -5, 3, 12, 127, -128]
    got = {
        "relu": F.relu(a),
        "neg": -a,
        "add": a + b,
        "sub": a - b,
        "max": F.maximum(a, b),
        "min": F.minimum(a, b),
    }
    for name, t in got.items():
        assert _stored(t, dt) == want[name], name
    assert _stored(F.add(a, a), dt) == (
        [-20, -10, 6, 24, -2, 0] if dt.itemsize == 1 else [-20, -10, 6, 24, 254, -256]
    )
    assert _stored(F.neg(a), dt) == want["neg"]
    assert _stored(F.sub(a, b), dt) == want["sub"]


def test_operands_beside_a_quantized_tensor():
    dt = D.qint8(0.1)
    a = _q([0.0, 1.0, -1.0], dt)  # stored [0, 10, -10]
    # float tensors and Python floats are quantized by value (0.26 / 0.1 -> 3, 0.25 -> 2.5 -> 3,
    # -0.25 -> -3, 12.8 -> saturates at 127 before the wrapping sum)
    assert _stored(a + mge.Tensor([0.26, 0.26, 0.26]), dt) == [3, 13, -7]
    assert _stored(mge.Tensor([0.26, 0.26, 0.26]) + a, dt) == [3, 13, -7]
    assert _stored(a + 0.26, dt) == [3, 13, -7]
    assert _stored(a + 0.25, dt) == [3, 13, -7]
    assert _stored(a + -0.25, dt) == [-3, 7, -13]
    assert _stored(a + 1.0, dt) == [10, 20, 0]
    assert _stored(a + 12.8, dt) == [127, -119, 117]
    assert _stored(0.5 - a, dt) == [5, -5, 15]
    assert _stored(mge.Tensor([1.0, 1.0, 1.0]) - a, dt) == [10, 0, 20]
    assert _stored(F.maximum(a, 0.25), dt) == [3, 10, 3]
    # integer tensors, NumPy arrays and NumPy numbers: by value too
    assert _stored(a + mge.Tensor([1, 2, 3], dtype="int32"), dt) == [10, 30, 20]
    assert _stored(a + np.array([1, 2, 3], np.int32), dt) == [10, 30, 20]
    assert _stored(a + np.array([0.5, 0.5, 0.5], np.float32), dt) == [5, 15, -5]
    assert _stored(a + np.int32(1), dt) == [10, 20, 0]
    assert _stored(a + np.float32(0.26), dt) == [3, 13, -7]
    # Python ints and bools, lists and bool arrays are the stored integers, cast as NumPy casts
    # (wrapping: 1000 -> -24, 300 -> 44)
    assert _stored(a + 1, dt) == [1, 11, -9]
    assert _stored(3 + a, dt) == [3, 13, -7]
    assert _stored(a - 1, dt) == [-1, 9, -11]
    assert _stored(a + True, dt) == [1, 11, -9]
    assert _stored(a + np.bool_(True), dt) == [1, 11, -9]
    assert _stored(a + 1000, dt) == [-24, -14, -34]
    assert _stored(a + 300, dt) == [44, 54, 34]
    assert _stored(F.maximum(a, 1), dt) == [1, 10, 1]
    assert _stored(a + [1, 2, 3], dt) == [1, 12, -7]
    assert _stored(a + [1, 0.5, 2], dt) == [1, 10, -8]
    assert _stored(a + np.array([True, False, True]), dt) == [1, 10, -9]
    c = _q([0.0, 1.0, -1.0], D.qint32(0.1))
    assert _stored(c + 2**31 - 1, D.qint32(0.1)) == [2147483647, -2147483639, 2147483637]
    assert _stored(c + 2**40, D.qint32(0.1)) == [0, 10, -10]
    # in place, as MegEngine's a += a
    a += a
    assert _stored(a, dt) == [0, 20, -20]


def test_refused_modes_dtypes_and_operands():
    a, b = _q([1.0, -1.0], D.qint8(0.1)), _q([0.5, 0.5], D.qint8(0.1))
    # MegEngine 1.13: "Only ADD, SUB, NEGATE, RELU, MAX and MIN is guaranteed to be supported on
    # Elemwise for quantized DType"
    for f in (
        lambda: a * a,
        lambda: a * 2,
        lambda: F.abs(a),
        lambda: a / a,
        lambda: a // a,
        lambda: a**a,
        lambda: F.exp(a),
        lambda: a == b,
        lambda: a < b,
        lambda: F.clip(a, 0, 1),
        lambda: F.relu6(a),
        lambda: F.where(mge.Tensor([True, False]), a, b),
    ):
        with pytest.raises(TypeError, match="QuantizedS8"):
            f().numpy()
    # another scale (MegEngine: "trying to promote two QuantizedS8 with different scale"), another
    # quantized dtype ("promoting unexpected quantized DType")
    with pytest.raises(TypeError, match="requantize"):
        a + _q([1.0, 1.0], D.qint8(0.2))
    with pytest.raises(TypeError, match="requantize"):
        a + _q([1.0, 1.0], D.qint32(0.1))
    with pytest.raises(TypeError, match="requantize"):
        a + _q([1.0, 1.0], D.quint8(0.1, 128))
    # MegEngine fails on a bool tensor beside a quantized one ("bad dtype")
    with pytest.raises(TypeError, match="bool"):
        a + mge.Tensor([True, False])
    # quint8 in every mode: "Unsupported Quantized Elemwise Mode Quantized8Asymm"
    u = _q([1.0, -1.0], D.quint8(0.1, 128))
    for f in (lambda: u + u, lambda: F.relu(u), lambda: -u, lambda: F.maximum(u, u), lambda: u + 1):
        with pytest.raises(TypeError, match="Quantized8Asymm"):
            f().numpy()


def test_no_gradient_through_quantized_tensors():
    # MegEngine 1.13: "Only tensors of floating point dtype can be attached to get gradients"
    q = _q([1.0, -1.0], D.qint8(0.1))
    with pytest.raises(Exception, match="float"):
        ad.GradManager().attach([q])
    x = mge.Tensor([1.0, -1.0])
    gm = ad.GradManager().attach([x])
    with gm:
        y = (x.astype(D.qint8(0.1)) + q).astype("float32") + x
        gm.backward(y.sum())
    # only the float path carries a gradient; the quantized sum is a constant to autodiff
    np.testing.assert_array_equal(x.grad.numpy(), [1.0, 1.0])


@pytest.mark.parametrize("symbolic", [False, True])
def test_traced_quantized_chain_matches_eager(symbolic):
    # A chain of quantized modes (which the graph's elemwise fusion may merge) computes the same
    # integers traced as eagerly.
    from megengine.jit import trace

    dt = D.qint8(0.1)
    a, b = _q(_A, dt), _q(_B, dt)

    def f(x, y):
        return F.relu(F.maximum(x + y, -x) - y)

    want = _stored(f(a, b), dt)
    traced = trace(symbolic=symbolic)(f)
    for _ in range(2):
        assert _stored(traced(a, b), dt) == want


def test_quantized_modules_are_attributes_of_megengine_module():
    # MegEngine 1.13 scripts reach them as M.quantized.X and M.qat.X after `import megengine.module
    # as M` only; a fresh interpreter, since this one has imported the subpackages already
    import os
    import subprocess
    import sys

    code = (
        "import megengine.module as M\n"
        "from megengine.module.quantized.elemwise import Elemwise\n"
        "assert M.quantized.Elemwise is Elemwise and M.qat.Linear.__name__ == 'Linear'\n"
        "try:\n    M.no_such_thing\nexcept AttributeError as e:\n    print(e)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert "no_such_thing" in out.stdout
