"""The C++ apply paths' per-call shortcuts (docs/architecture.md, *Where a single op's call
goes*): ``apply_generator``'s CPython path (F.zeros, F.full) and its comp node remembered by
name, the kept 0-d operands of Python scalars in elemwise calls (``x + 1.0``, F.clip),
``apply_joined`` behind F.concat, and F.scatter trying its op before the Python checks. Each
against NumPy and against the forms left to the general paths, with errors, gradients and
jit.trace."""

import math

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager
from megengine.core import _imperative_rt as rt
from megengine.core.ops import builtin
from megengine.core.tensor import dtype as D
from megengine.jit import trace


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape and a.device == b.device
    assert a.numpy().tobytes() == b.numpy().tobytes()


def _error(fn, *args, **kwargs):
    with pytest.raises(Exception) as e:
        fn(*args, **kwargs)
    return type(e.value), str(e.value)


# ---- apply_generator ----------------------------------------------------------------------

_FILL = builtin.Fill(value=2.5, dtype="float32")


@pytest.mark.parametrize("dims", [[], [0], [4, 4], [2, 0, 3], [1] * 7])
def test_apply_generator_forms_agree(dims):
    (want,) = rt.apply_generator(_FILL, [dims], "cpu0")
    np.testing.assert_array_equal(want.numpy(), np.full(dims, 2.5, np.float32))
    # left to pybind11's conversions: tuples, numpy ints, keywords
    for shapes in ([tuple(dims)], ([*dims],), [[np.int64(d) for d in dims]]):
        _same(rt.apply_generator(_FILL, shapes, "cpu0")[0], want)
    _same(rt.apply_generator(op=_FILL, shapes=[dims], device="cpu0")[0], want)
    _same(rt.apply_generator(_FILL, [dims], device="cpu0")[0], want)


def test_apply_generator_errors_are_the_general_paths():
    for shapes in ([[-1, 2]], [[2.0]], "ab", [(2, None)]):
        kind, msg = _error(rt.apply_generator, _FILL, shapes, "cpu0")
        assert kind is TypeError and msg.startswith("apply_generator(): incompatible"), shapes
    # pybind11 takes a bool as an int
    assert rt.apply_generator(_FILL, [[True, 2]], "cpu0")[0].shape == (1, 2)
    kind, msg = _error(rt.apply_generator, _FILL, [[2]] * 5, "cpu0")
    assert issubclass(kind, ValueError) and "1 output shapes needed, got 5" in msg
    kind, msg = _error(rt.apply_generator, _FILL, [[1] * 8], "cpu0")
    assert issubclass(kind, ValueError) and "exceeds the maximum of 7" in msg
    kind, msg = _error(rt.apply_generator, _FILL, [[2]], "cpq0")
    assert issubclass(kind, ValueError) and "invalid comp node name 'cpq0'" in msg
    kind, msg = _error(rt.apply_generator, _FILL, [[2], [2]], "cpu0")
    assert "1 output shapes needed, got 2" in msg
    with pytest.raises(TypeError):
        rt.apply_generator(_FILL, [[2]])
    with pytest.raises(TypeError):
        rt.apply_generator("Fill", [[2]], "cpu0")
    # a failed name leaves the remembered node as it was
    assert rt.apply_generator(_FILL, [[2]], "cpu0")[0].device == "cpu0"


def test_apply_generator_follows_the_device_name():
    for name in ("cpu0", "cpu1", "cpu1", "cpu0", "cpux", "xpux", "cpu1:1", "cpu0"):
        (t,) = rt.apply_generator(_FILL, [[3]], name)
        assert t.device == rt.canonical_device(name), name
        assert t.numpy().tolist() == [2.5] * 3
    for device in ("cpu1", None, "cpu0"):
        z = F.zeros((2, 2), device=device)
        assert z.device == (device or rt.get_default_device())


def test_generators_in_a_trace():
    @trace(symbolic=True)
    def f(x):
        return x + F.zeros((2, 3)) + F.full((2, 3), 1.5)

    for _ in range(2):
        np.testing.assert_array_equal(f(mge.Tensor(np.ones((2, 3), np.float32))).numpy(), 2.5)


# ---- the 0-d operands of Python scalars -----------------------------------------------------


def test_scalar_operands_against_numpy():
    a = np.linspace(-2, 2, 12, dtype=np.float32).reshape(3, 4)
    x = mge.Tensor(a)
    for _ in range(2):  # the second time the operands are kept
        np.testing.assert_array_equal((x + 1.0).numpy(), a + np.float32(1.0))
        np.testing.assert_array_equal((x * 3).numpy(), a * np.float32(3))
        np.testing.assert_array_equal((2.5 - x).numpy(), np.float32(2.5) - a)
        np.testing.assert_array_equal(F.clip(x, 0, 1).numpy(), np.clip(a, 0, 1))
        np.testing.assert_array_equal(F.clip(x, -1.5, 0.25).numpy(), np.clip(a, -1.5, 0.25))
    xi = mge.Tensor(np.arange(6, dtype=np.int32))
    for _ in range(2):
        np.testing.assert_array_equal((xi * 7).numpy(), np.arange(6) * 7)
        assert (xi + 1).dtype == np.int32


def test_scalar_operands_keep_sign_dtype_and_nan():
    xf = mge.Tensor(np.ones(3, np.float32))
    xi = mge.Tensor(np.ones(3, np.int32))
    for _ in range(2):
        # -0.0 == 0.0 and int 0 has float 0.0's bits: each must stay its own operand
        assert np.signbit((xf * -0.0).numpy()).all()
        assert not np.signbit((xf * 0.0).numpy()).any()
        r = xi + 0
        assert r.dtype == np.int32 and r.numpy().tolist() == [1, 1, 1]
        r = xf + 0.0
        assert r.dtype == np.float32 and r.numpy().tolist() == [1.0, 1.0, 1.0]
        # 1065353216 is 1.0f's bit pattern as an int32
        assert (xi * 1065353216).numpy().tolist() == [1065353216] * 3
        assert (xf * 1.0).numpy().tolist() == [1.0] * 3
        assert np.isnan((xf + math.nan).numpy()).all()
        assert np.isinf((xf * math.inf).numpy()).all()


def test_kept_scalar_operands_are_never_written():
    x = mge.Tensor(np.zeros(4, np.float32))
    for i in range(1, 4):
        x += 1.0  # the kept 1.0 is an operand of an update of x
        y = x + 1.0
        assert x.numpy().tolist() == [float(i)] * 4
        assert y.numpy().tolist() == [float(i + 1)] * 4
    z = F.zeros((4,)) + 1.0
    assert z.numpy().tolist() == [1.0] * 4


def test_scalar_operand_gradients():
    a = np.array([0.5, -1.0, 2.0], np.float32)
    for _ in range(2):
        x = mge.Parameter(a)
        gm = GradManager().attach(x)
        with gm:
            gm.backward((x * 3.0 + 1.0).sum() + F.clip(x, 0, 1).sum())
        np.testing.assert_array_equal(x.grad.numpy(), 3.0 + ((a >= 0) & (a <= 1)))


@pytest.mark.parametrize("symbolic", [False, True])
def test_scalar_operands_in_a_trace(symbolic):
    @trace(symbolic=symbolic)
    def f(x):
        return F.clip(x * 2.0 + 1.0, 0, 3)

    a = np.array([-1.0, 0.25, 0.5, 2.0], np.float32)
    for _ in range(3):
        np.testing.assert_array_equal(f(mge.Tensor(a)).numpy(), np.clip(a * 2 + 1, 0, 3))


# ---- apply_joined (F.concat) ----------------------------------------------------------------

_CONCAT0 = builtin.Concat(axis=0)


def test_apply_joined_takes_tensors_of_one_dtype():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, y = mge.Tensor(a), mge.Tensor(a + 10)
    for seq in ([x, y], (x, y, x)):
        got = rt.apply_joined(_CONCAT0, seq)
        np.testing.assert_array_equal(got.numpy(), np.concatenate([t.numpy() for t in seq]))
    q = mge.Tensor(a, dtype=D.qint8(0.5))
    left = [
        [x],  # one tensor: concat relayouts it
        [],
        [x, a],  # an array
        [a, x],
        [x, mge.Tensor(a.astype(np.int32))],  # dtypes to promote
        [mge.Tensor(1.0), mge.Tensor(2.0)],  # 0-d: joined as vectors
        [q, q],  # quantized
        iter([x, y]),  # not a list or tuple
    ]
    for seq in left:
        assert rt.apply_joined(_CONCAT0, seq) is None
    with pytest.raises(TypeError):
        rt.apply_joined("Concat", [x, y])
    with pytest.raises(TypeError):
        rt.apply_joined(_CONCAT0)


def test_apply_joined_leaves_traces():
    a = np.ones((2, 2), np.float32)
    seen = []

    @trace(symbolic=True)
    def f(x, y):
        seen.append(rt.apply_joined(_CONCAT0, [x, y]))
        return F.concat([x, y], 1)

    for _ in range(2):
        np.testing.assert_array_equal(f(mge.Tensor(a), mge.Tensor(a)).numpy(), np.ones((2, 4)))
    assert seen and all(s is None for s in seen)


def test_concat_forms_against_numpy():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, y = mge.Tensor(a), mge.Tensor(a * 2)
    np.testing.assert_array_equal(F.concat((x, y), -1).numpy(), np.concatenate([a, a * 2], -1))
    got = F.concat([x, mge.Tensor(a.astype(np.int32))])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(F.concat([x, a]).numpy(), np.concatenate([a, a]))
    np.testing.assert_array_equal(F.concat([mge.Tensor(1.0), mge.Tensor(2.0)]).numpy(), [1, 2])
    kind, msg = _error(F.concat, [x, mge.Tensor(np.ones((2, 2), np.float32))])
    assert issubclass(kind, ValueError) and "concat: shapes [(2, 3), (2, 2)] do not match" in msg
    kind, msg = _error(F.concat, [x, mge.Tensor(a, device="cpu1")])
    assert "concat" in msg and "device" in msg


# ---- F.scatter ------------------------------------------------------------------------------


def _scatter_np(a, axis, idx, src):
    out = a.copy()
    np.put_along_axis(out, idx.astype(np.int64), src, axis)
    return out


def test_scatter_fast_path_against_numpy_and_errors():
    rng = np.random.default_rng(5)
    a = rng.normal(size=(4, 6)).astype(np.float32)
    idx = np.array([[0, 1], [2, 3], [1, 1], [5, 0]], np.int32)
    src = rng.normal(size=(4, 2)).astype(np.float32)
    for axis in (1, -1):
        for _ in range(2):
            x = mge.Tensor(a)
            assert F.scatter(x, axis, mge.Tensor(idx), mge.Tensor(src)) is x
            np.testing.assert_array_equal(x.numpy(), _scatter_np(a, 1, idx, src))
    idx0 = np.array([[3, 0, 1, 2, 0, 1]], np.int32)
    x = mge.Tensor(a)
    F.scatter(x, 0, mge.Tensor(idx0), mge.Tensor(src.reshape(-1)[None, :6].copy()))
    np.testing.assert_array_equal(x.numpy(), _scatter_np(a, 0, idx0, src.reshape(-1)[None, :6]))
    # the Python checks' messages, which the op's error hands over to
    cases = [
        (mge.Tensor(idx[0]), mge.Tensor(src[0]), "must have the rank of the input (4, 6)"),
        (
            mge.Tensor(np.zeros((5, 2), np.int32)),
            mge.Tensor(np.zeros((5, 2), np.float32)),
            "index shape (5, 2) exceeds input shape (4, 6) on axis 0",
        ),
        (mge.Tensor(idx), mge.Tensor(src[:, :1]), "source shape (4, 1) differs from index shape"),
    ]
    for i, s, message in cases:
        x = mge.Tensor(a)
        kind, msg = _error(F.scatter, x, 1, i, s)
        assert issubclass(kind, ValueError) and message in msg, msg
        np.testing.assert_array_equal(x.numpy(), a)  # untouched
    kind, msg = _error(F.scatter, mge.Tensor(a), 1, mge.Tensor(idx), mge.Tensor(src, device="cpu1"))
    assert "copy it first" in msg
    kind, msg = _error(F.scatter, mge.Tensor(a), 1, mge.Tensor(idx + 6), mge.Tensor(src))
    assert issubclass(kind, IndexError)
    # an index on another device is copied by the general path
    x = mge.Tensor(a)
    F.scatter(x, 1, mge.Tensor(idx, device="cpu1"), mge.Tensor(src))
    np.testing.assert_array_equal(x.numpy(), _scatter_np(a, 1, idx, src))


def test_scatter_gradients_and_trace():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    idx = np.array([[1], [3], [0]], np.int32)
    src = np.array([[10.0], [20.0], [30.0]], np.float32)
    x, s = mge.Parameter(a), mge.Parameter(src)
    gm = GradManager().attach([x, s])
    with gm:
        y = x * 1.0
        F.scatter(y, 1, mge.Tensor(idx), s)
        gm.backward((y * 2.0).sum())
    want = np.full_like(a, 2.0)
    np.put_along_axis(want, idx.astype(np.int64), 0.0, 1)
    np.testing.assert_array_equal(x.grad.numpy(), want)
    np.testing.assert_array_equal(s.grad.numpy(), np.full_like(src, 2.0))

    for symbolic in (False, True):

        @trace(symbolic=symbolic)
        def f(t, i, v):
            return F.scatter(t + 0.0, 1, i, v)

        for _ in range(2):
            got = f(mge.Tensor(a), mge.Tensor(idx), mge.Tensor(src))
            np.testing.assert_array_equal(got.numpy(), _scatter_np(a, 1, idx, src))


def test_apply_joined_same_shape_and_stack():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    x, y = mge.Tensor(a), mge.Tensor(a + 10)
    got = rt.apply_joined(_CONCAT0, [x, y], True)
    np.testing.assert_array_equal(got.numpy(), np.concatenate([a, a + 10]))
    # rows that sum to len * rows of the first: Concat and the Reshape would both succeed
    parts = [mge.Tensor(np.ones((n, 3), np.float32)) for n in (1, 2, 0)]
    assert rt.apply_joined(_CONCAT0, parts, True) is None
    assert rt.apply_joined(_CONCAT0, parts, False) is not None
    with pytest.raises(ValueError):
        F.stack(parts)
    for axis in (0, 1, 2, -1, -3):
        for seq in ([x, y], (x, y, x)):
            want = np.stack([t.numpy() for t in seq], axis)
            for _ in range(2):
                np.testing.assert_array_equal(F.stack(seq, axis).numpy(), want)
    got = F.stack([x, mge.Tensor(a.astype(np.int32))])
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.stack([a, a]))
    _, msg = _error(F.stack, [x, mge.Tensor(a, device="cpu1")])
    assert "device" in msg
