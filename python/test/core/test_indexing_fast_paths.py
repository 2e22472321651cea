"""The per-call fast paths of indexing and of F.where (docs/architecture.md, *Per-call cost of
indexing, assignment and where*): ``x[t]`` of an int32 index tensor, ``x[m]`` of a bool mask of
x's shape, ``x[ints and slices] = value`` with kept ops and index tensors, and ``F.where`` with a
Python scalar operand. Each against NumPy and against the general path (the fast path switched
off) bit for bit, for the forms it takes and the ones it leaves to the general path, with
errors, gradients through GradManager and jit.trace in both modes."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager
from megengine.core.tensor import array_method, indexing
from megengine.jit import trace

A = np.arange(60, dtype=np.float32).reshape(3, 4, 5) - 20.5


def _general(monkeypatch):
    """Switches every fast path of this file off."""
    monkeypatch.setattr(indexing, "_tensor_index", lambda x, index: None)
    monkeypatch.setattr(indexing, "_fast_setitem", lambda x, index, value: False)
    monkeypatch.setattr(array_method, "kept_scalar", lambda *a, **k: None)
    monkeypatch.setattr(F.tensor, "_where_scalar", lambda *a: None)


def _same(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    np.testing.assert_array_equal(a.reshape(-1).view(np.uint8), b.reshape(-1).view(np.uint8))


def _error(fn, *args):
    with pytest.raises(Exception) as e:
        fn(*args)
    return type(e.value), str(e.value)


# ---- x[t]: an int32 index tensor ----------------------------------------------------------


@pytest.mark.parametrize(
    "idx",
    [[1, 0, 2, 2], [-1, -3, 0], [[0, 2], [-1, 1]], [2], np.zeros((0,), np.int32)],
)
def test_int32_index_tensor_matches_numpy_and_general_path(idx, monkeypatch):
    idx = np.asarray(idx, np.int32)
    x = mge.Tensor(A)
    fast = x[mge.Tensor(idx)].numpy()
    _same(fast, A[idx])
    _general(monkeypatch)
    _same(fast, x[mge.Tensor(idx)].numpy())


def test_index_tensors_the_fast_path_leaves(monkeypatch):
    x = mge.Tensor(A)
    i8 = np.array([2, -1, 0], np.int8)
    _same(x[mge.Tensor(i8)].numpy(), A[i8])
    # a tensor among other items, a 0-d tensor (an int), a 1-d tensor into a 1-d input
    lab = mge.Tensor(np.array([3, 1], np.int32))
    _same(x[:, lab].numpy(), A[:, [3, 1]])
    _same(x[1, lab].numpy(), A[1, [3, 1]])
    _same(x[mge.Tensor(np.int32(2))].numpy(), A[2])
    v = mge.Tensor(np.arange(5, dtype=np.float32))
    _same(v[lab].numpy(), np.arange(5, dtype=np.float32)[[3, 1]])
    # an index on another device is copied to x's by the general path
    other = mge.Tensor(np.array([1, 0], np.int32), device="cpu1")
    _same(x[other].numpy(), A[[1, 0]])


def test_out_of_range_index_tensor_raises_as_the_general_path(monkeypatch):
    x = mge.Tensor(A)
    bad = mge.Tensor(np.array([0, 3], np.int32))
    fast = _error(lambda: x[bad].numpy())
    _general(monkeypatch)
    assert fast == _error(lambda: x[bad].numpy())
    assert issubclass(fast[0], IndexError)


# ---- x[m]: a bool mask of x's shape ---------------------------------------------------------


@pytest.mark.parametrize("fill", ["random", "none", "all"])
def test_mask_of_the_input_shape(fill, monkeypatch):
    rng = np.random.default_rng(1)
    m = {"random": rng.random(A.shape) > 0.5, "none": np.zeros(A.shape, bool)}.get(
        fill, np.ones(A.shape, bool)
    )
    x = mge.Tensor(A)
    fast = x[mge.Tensor(m)].numpy()
    _same(fast, A[m])
    _general(monkeypatch)
    _same(fast, x[mge.Tensor(m)].numpy())


def test_masks_the_fast_path_leaves():
    x = mge.Tensor(A)
    rows = np.array([True, False, True])
    _same(x[mge.Tensor(rows)].numpy(), A[rows])
    m2 = A[0] > 0
    _same(x[1][mge.Tensor(m2)].numpy(), A[1][m2])
    _same(x[:, mge.Tensor(m2)].numpy(), A[:, m2])
    xi = mge.Tensor(A.astype(np.int32))
    m = A > 3
    _same(xi[mge.Tensor(m)].numpy(), A.astype(np.int32)[m])


def test_gradients_of_tensor_indices():
    rng = np.random.default_rng(2)
    m = rng.random(A.shape) > 0.4
    idx = np.array([2, 0, 2], np.int32)
    x = mge.Parameter(A)
    gm = GradManager().attach(x)
    with gm:
        a = x[mge.Tensor(m)]
        b = x[mge.Tensor(idx)]
        wa = np.arange(a.size, dtype=np.float32) + 1
        wb = np.arange(b.size, dtype=np.float32).reshape(b.shape) * 0.5
        gm.backward((a * mge.Tensor(wa)).sum() + (b * mge.Tensor(wb)).sum())
    want = np.zeros_like(A)
    want[m] = wa
    np.add.at(want, idx, wb)
    np.testing.assert_array_equal(x.grad.numpy(), want)


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.filterwarnings("ignore:trace")  # the general path reads the index on the host
def test_tensor_indices_in_a_trace(symbolic):
    def f(t, i, m):
        return t[i] * 2, t[m] + 1

    fn = trace(f, symbolic=symbolic)
    rng = np.random.default_rng(3)
    m = rng.random(A.shape) > 0.5
    for i in ([1, 2, 0], [1, 2, 0]):
        i = np.array(i, np.int32)
        got_i, got_m = fn(mge.Tensor(A), mge.Tensor(i), mge.Tensor(m))
        np.testing.assert_array_equal(got_i.numpy(), A[i] * 2)
        np.testing.assert_array_equal(got_m.numpy(), A[m] + 1)


# ---- x[index] = value -------------------------------------------------------------------------

_SET_INDICES = [
    0,
    -1,
    2,
    slice(1, 3),
    slice(None, None, -2),
    slice(5, 1),
    (1, 2),
    (-1, slice(None), 3),
    (slice(None), 1),
    (slice(None), slice(1, 3), -2),
    (0, slice(None), slice(None, None, 2)),
    (slice(None), slice(None), 4),
    (Ellipsis, 1),
    (1, Ellipsis),
    (2, -4, 0),
    (slice(0, 2), slice(None, None, -1)),
]


@pytest.mark.parametrize("index", _SET_INDICES)
@pytest.mark.parametrize("value", [7.5, -2, True, "row", "full", "leading_ones"])
def test_setitem_matches_numpy_and_general_path(index, value, monkeypatch):
    want = A.copy()
    shape = want[index].shape
    if value == "leading_ones" and not shape:
        pytest.skip("NumPy refuses an array into one element")
    if value == "row":
        value = np.arange(shape[-1] if shape else 1, dtype=np.float32).reshape(shape[-1:]) + 0.25
    elif value == "full":
        value = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) * 3
    elif value == "leading_ones":
        value = np.full((1, 1) + shape, 9.0, np.float32)
    want[index] = value
    arg = mge.Tensor(value) if isinstance(value, np.ndarray) else value
    x = mge.Tensor(A)
    for _ in range(2):  # the second call runs from the kept plan and scalar
        x[index] = arg
    _same(x.numpy(), want)
    _general(monkeypatch)
    y = mge.Tensor(A)
    y[index] = arg
    _same(x.numpy(), y.numpy())


def test_setitem_plan_is_per_shape():
    # the same index on a tensor of another shape: the kept ints and slices resolve again
    for shape in [(3, 4, 5), (6, 2), (9,)]:
        a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
        x = mge.Tensor(a)
        x[-1] = 1.0
        x[1:-1] = 2.0
        a[-1] = 1.0
        a[1:-1] = 2.0
        _same(x.numpy(), a)


def test_setitem_value_dtypes_and_kept_scalars():
    xi = mge.Tensor(np.arange(6, dtype=np.int32).reshape(2, 3))
    xi[0] = 2.9  # cast as the general path's as_tensor casts: truncated
    xi[1, 1] = True
    np.testing.assert_array_equal(xi.numpy(), [[2, 2, 2], [3, 1, 5]])
    xf = mge.Tensor(np.ones((2, 3), np.float32))
    xf[0] = 0.0
    xf[1] = -0.0  # a kept +0.0 must not stand for -0.0
    assert not np.signbit(xf.numpy()[0]).any() and np.signbit(xf.numpy()[1]).all()
    xf[0, 1] = float("nan")
    xf[0, 2] = float("inf")
    assert np.isnan(xf.numpy()[0, 1]) and xf.numpy()[0, 2] == np.inf
    # 1, 1.0 and True are equal keys; each value keeps its own tensor
    xb = mge.Tensor(np.zeros((2,), np.float16))
    xb[0] = 1
    xb[1] = 1.5
    assert xb.dtype == np.float16
    np.testing.assert_array_equal(xb.numpy(), np.array([1, 1.5], np.float16))
    # a value of another dtype is converted; a kept scalar is never the tensor x becomes
    xf[1] = mge.Tensor(np.array([1, 2, 3], np.int32))
    np.testing.assert_array_equal(xf.numpy()[1], [1, 2, 3])
    z = mge.Tensor(np.zeros((3,), np.float32))
    z[0] = 5.0
    z += 1
    w = mge.Tensor(np.zeros((3,), np.float32))
    w[0] = 5.0
    np.testing.assert_array_equal(w.numpy(), [5, 0, 0])


def test_setitem_errors_are_the_general_paths(monkeypatch):
    cases = [
        (3, 1.0),
        (-4, 1.0),
        ((0, 4), 1.0),
        ((0, 0, 0, 0), 1.0),
        (0, np.ones((3,), np.float32)),
        (slice(0, 2), np.ones((3, 4, 2), np.float32)),
    ]
    fast = []
    for index, value in cases:
        x = mge.Tensor(A)
        fast.append(_error(x.__setitem__, index, value))
        np.testing.assert_array_equal(x.numpy(), A)
    assert "out of bounds for axis 0 with size 3" in fast[0][1]
    assert "out of bounds for axis 1 with size 4" in fast[2][1]
    _general(monkeypatch)
    for (index, value), err in zip(cases, fast):
        x = mge.Tensor(A)
        assert _error(x.__setitem__, index, value) == err


def test_setitem_forms_the_fast_path_leaves():
    want = A.copy()
    x = mge.Tensor(A)
    for index, value in [
        (Ellipsis, 3.0),
        (slice(None), 4.0),
        ((None, 1), 5.0),
        (np.int64(1), 6.0),
        ((1, np.int32(2)), 7.0),
        (mge.Tensor(np.array([0, 2], np.int32)), 8.0),
        (A > 0, 9.0),
        (True, 1.5),
    ]:
        want[index] = value
        x[index] = value
        _same(x.numpy(), want)
    q = mge.Tensor(np.float32(1.0))
    q[...] = 2.0
    assert q.numpy() == 2.0


def test_setitem_gradients():
    x = mge.Parameter(A)
    v = mge.Parameter(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    gm = GradManager().attach([x, v])
    w = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    with gm:
        y = x * 1
        y[1, :, 2] = v
        y[0] = 0.5
        gm.backward((y * mge.Tensor(w)).sum())
    gx = w.copy()
    gx[1, :, 2] = 0
    gx[0] = 0
    np.testing.assert_array_equal(x.grad.numpy(), gx)
    np.testing.assert_array_equal(v.grad.numpy(), w[1, :, 2])


@pytest.mark.parametrize("symbolic", [False, True])
def test_setitem_in_a_trace(symbolic):
    def f(t, v):
        t = t * 1
        t[0] = 1.5
        t[1:, ::-1, 2] = v
        return t

    fn = trace(f, symbolic=symbolic)
    for k in range(3):
        v = np.full((2, 4), k, np.float32)
        want = A.copy()
        want[0] = 1.5
        want[1:, ::-1, 2] = v
        np.testing.assert_array_equal(fn(mge.Tensor(A), mge.Tensor(v)).numpy(), want)


def test_setitem_keeps_the_format():
    a = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    x = mge.Tensor(a, format="nhwc")
    x[0, 1] = 2.0
    a[0, 1] = 2.0
    assert x.format == "nhwc"
    np.testing.assert_array_equal(x.numpy(), a)
    y = mge.Tensor(a, format="nchw")  # a label on row-major values: the fast path's
    y[1] = 3.0
    a[1] = 3.0
    assert y.format == "nchw"
    np.testing.assert_array_equal(y.numpy(), a)


def test_set_plans_are_bounded(monkeypatch):
    monkeypatch.setattr(array_method, "_SHAPE_KEYED_OPS_LIMIT", 8)
    x = mge.Tensor(np.zeros((40,), np.float32))
    for i in range(40):
        x[i] = float(i)
    assert len(indexing._set_plans) <= 8
    assert len(array_method._kept_scalars) <= 8
    np.testing.assert_array_equal(x.numpy(), np.arange(40, dtype=np.float32))


# ---- F.where with a Python scalar -----------------------------------------------------------


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "bfloat16", "int32", "int8", "uint8", "bool"]
)
@pytest.mark.parametrize("scalar", [0.0, -0.0, 2, True, 1.5, float("nan")])
def test_where_with_a_scalar_is_the_general_path(dtype, scalar, monkeypatch):
    rng = np.random.default_rng(4)
    a = (rng.standard_normal((3, 4)) * 4).astype(np.float32)
    m = mge.Tensor(a > 0)
    t = mge.Tensor(a).astype(dtype)
    fast = [F.where(m, t, scalar), F.where(m, scalar, t)]
    _general(monkeypatch)
    slow = [F.where(m, t, scalar), F.where(m, scalar, t)]
    for f, s in zip(fast, slow):
        assert f.dtype == s.dtype
        np.testing.assert_array_equal(f.numpy().view(np.uint8), s.numpy().view(np.uint8))


def test_where_with_a_scalar_against_numpy():
    a = np.array([[1.0, -2.0, 3.0], [-0.5, 0.0, 2.0]], np.float32)
    m = a > 0
    got = F.where(mge.Tensor(m), mge.Tensor(a), 0.0)
    np.testing.assert_array_equal(got.numpy(), np.where(m, a, 0.0).astype(np.float32))
    got = F.where(mge.Tensor(m), -1, mge.Tensor(a))
    np.testing.assert_array_equal(got.numpy(), np.where(m, -1, a).astype(np.float32))
    # an int tensor beside a float scalar computes in float32 (the general path's promotion)
    ai = mge.Tensor(np.array([[1, 2, 3], [4, 5, 6]], np.int32))
    got = F.where(mge.Tensor(m), ai, 0.5)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got.numpy(), np.where(m, ai.numpy(), 0.5))
    # a mask of another shape broadcasts on the general path
    got = F.where(mge.Tensor(m[0]), mge.Tensor(a), 9.0)
    np.testing.assert_array_equal(got.numpy(), np.where(m[0], a, 9.0))
    # a non-bool mask is refused as before
    with pytest.raises(Exception, match="mask must be bool"):
        F.where(mge.Tensor(a), mge.Tensor(a), 0.0)


def test_where_with_a_scalar_gradient_and_trace():
    a = np.array([[1.0, -2.0, 3.0], [-0.5, 0.0, 2.0]], np.float32)
    x = mge.Parameter(a)
    gm = GradManager().attach(x)
    with gm:
        gm.backward((F.where(x > 0, x, 0.0) * 3).sum())
    np.testing.assert_array_equal(x.grad.numpy(), np.where(a > 0, 3.0, 0.0))
    for symbolic in (False, True):
        fn = trace(lambda t: F.where(t > 0, t, 0.25), symbolic=symbolic)
        for _ in range(2):
            np.testing.assert_array_equal(fn(mge.Tensor(a)).numpy(), np.where(a > 0, a, 0.25))


# ---- one_hot, logsumexp and scatter: kept scalars and Tensors taken as they are -------------


def _untraced_general(monkeypatch):
    """one_hot's and logsumexp's fills as a trace makes them (the path before the kept zero
    and one)."""
    monkeypatch.setattr(F.nn, "_is_tracing", lambda: True)


@pytest.mark.parametrize("shape", [(4,), (2, 3), (0,), ()])
def test_one_hot_against_numpy_and_fills(shape, monkeypatch):
    rng = np.random.default_rng(5)
    lab = rng.integers(0, 5, shape).astype(np.int32)
    fast = [F.one_hot(mge.Tensor(lab), 5).numpy() for _ in range(2)]
    want = (lab[..., None] == np.arange(5)).astype(np.int32)
    for f in fast:
        _same(f, want)
    _untraced_general(monkeypatch)
    _same(fast[0], F.one_hot(mge.Tensor(lab), 5).numpy())


def test_one_hot_errors_and_trace():
    with pytest.raises(Exception, match="outside"):
        F.one_hot(mge.Tensor(np.array([0, 5], np.int32)), 5).numpy()
    # the kept zero and one are never the result
    a = F.one_hot(mge.Tensor(np.array([1], np.int32)), 1 + 1)
    b = F.one_hot(mge.Tensor(np.array([0], np.int32)), 2)
    np.testing.assert_array_equal(a.numpy(), [[0, 1]])
    np.testing.assert_array_equal(b.numpy(), [[1, 0]])
    for symbolic in (False, True):
        fn = trace(lambda t: F.one_hot(t, 3), symbolic=symbolic)
        for v in ([0, 2], [1, 1]):
            got = fn(mge.Tensor(np.array(v, np.int32))).numpy()
            np.testing.assert_array_equal(got, np.eye(3, dtype=np.int32)[v])


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16"])
def test_logsumexp_against_numpy_and_fills(dtype, monkeypatch):
    a = np.array(
        [[1.0, 2.0, 3.0], [-np.inf, -np.inf, -np.inf], [1000.0, 1000.0, 0.0], [np.inf, 1, 2]],
        np.float32,
    )
    x = mge.Tensor(a).astype(dtype)
    fast = [F.logsumexp(x, 1), F.logsumexp(x, 0, keepdims=True)]
    m = a.max(1, keepdims=True)
    with np.errstate(all="ignore"):  # the rows of infinities, checked below
        want = np.log(np.exp(a - m).sum(1)) + m[:, 0]
    np.testing.assert_allclose(fast[0].numpy().astype(np.float32)[[0, 2]], want[[0, 2]], rtol=1e-2)
    assert fast[0].numpy()[1] == -np.inf and fast[0].numpy()[3] == np.inf
    _untraced_general(monkeypatch)
    for f, s in zip(fast, [F.logsumexp(x, 1), F.logsumexp(x, 0, keepdims=True)]):
        assert f.dtype == s.dtype and f.shape == s.shape
        np.testing.assert_array_equal(f.numpy().view(np.uint8), s.numpy().view(np.uint8))


def test_logsumexp_gradient():
    a = np.array([[1.0, 2.0, 3.0], [0.5, -1.0, 4.0]], np.float32)
    x = mge.Parameter(a)
    gm = GradManager().attach(x)
    with gm:
        gm.backward(F.logsumexp(x, 1).sum())
    e = np.exp(a - a.max(1, keepdims=True))
    np.testing.assert_allclose(x.grad.numpy(), e / e.sum(1, keepdims=True), rtol=1e-6)


def test_scatter_tensors_as_they_are_and_the_general_forms():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    idx = np.array([[0, 1], [2, 3], [1, 1], [5, 0]], np.int32)
    src = np.arange(8, dtype=np.float32).reshape(4, 2) + 100
    want = a.copy()
    for i in range(4):
        for j in range(2):
            want[i, idx[i, j]] = src[i, j]
    forms = [
        (mge.Tensor(idx), mge.Tensor(src)),  # taken as they are
        (mge.Tensor(idx.astype(np.int8)), mge.Tensor(src)),  # converted index
        (mge.Tensor(idx), mge.Tensor(src.astype(np.int32))),  # converted source
        (idx, src),  # arrays
        (mge.Tensor(idx, device="cpu1"), mge.Tensor(src)),  # an index on another device
    ]
    for i, s in forms:
        x = mge.Tensor(a)
        out = F.scatter(x, -1, i, s)
        assert out is x
        _same(x.numpy(), want)
    with pytest.raises(Exception, match="differs from index shape"):
        F.scatter(mge.Tensor(a), 1, mge.Tensor(idx), mge.Tensor(src[:, :1]))
    with pytest.raises(Exception, match="out of range"):
        F.scatter(mge.Tensor(a), 2, mge.Tensor(idx), mge.Tensor(src))
    with pytest.raises(Exception, match="must be an integer tensor"):
        F.scatter(mge.Tensor(a), 1, mge.Tensor(idx.astype(np.float32)), mge.Tensor(src))


@pytest.mark.parametrize("with_logits", [False, True])
@pytest.mark.parametrize("label_dtype", ["float32", "float16", "int32"])
def test_binary_cross_entropy_label_conversion(with_logits, label_dtype):
    # a label of pred's dtype is taken without its TypeCvt copy: same bits and gradients
    rng = np.random.default_rng(6)
    a = rng.random((4, 6)).astype(np.float32) * 0.9 + 0.05
    t = (rng.random((4, 6)) > 0.5).astype(np.float32)
    p, y = mge.Parameter(a), mge.Parameter(t.astype(label_dtype))
    gm = GradManager().attach([p, y] if label_dtype != "int32" else [p])
    with gm:
        loss = F.nn.binary_cross_entropy(p, y, with_logits=with_logits)
        gm.backward(loss)
    yf = mge.Tensor(t).astype("float32")
    if with_logits:
        ref = -(yf * F.logsigmoid(mge.Tensor(a)) + (1 - yf) * F.logsigmoid(-mge.Tensor(a)))
    else:
        ref = -(yf * F.log(mge.Tensor(a)) + (1 - yf) * F.log(1 - mge.Tensor(a)))
    _same(loss.numpy(), ref.mean().numpy())
    s = 1 / (1 + np.exp(-a.astype(np.float64))) if with_logits else a.astype(np.float64)
    gp = (s - t) / a.size if with_logits else (s - t) / (s * (1 - s)) / a.size
    np.testing.assert_allclose(p.grad.numpy(), gp, rtol=1e-4, atol=1e-7)
    if label_dtype != "int32":
        z = a.astype(np.float64)
        gy = (-z if with_logits else -np.log(z / (1 - z))) / a.size
        assert y.grad.dtype == np.dtype(label_dtype)
        np.testing.assert_allclose(y.grad.numpy(), gy, rtol=2e-3, atol=1e-6)


def test_large_assignments_are_not_kept():
    x = mge.Tensor(np.zeros((3, 5000), np.float32))
    x[:, 1:] = 2.0  # 4999 positions: the general path, every call
    x[1, 7] = 3.0
    want = np.zeros((3, 5000), np.float32)
    want[:, 1:] = 2.0
    want[1, 7] = 3.0
    _same(x.numpy(), want)
    kept = [p for p in indexing._set_plans.values() if p is not None]
    assert all(sum(t.size for t in p[1]) <= indexing._PLAN_ELEMENTS_LIMIT for p in kept)
    key = (((None, None, None), (1, None, None)), (3, 5000), array_method.device_name(x))
    assert indexing._set_plans[key] is None
