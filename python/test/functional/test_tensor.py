"""megengine.functional.tensor against NumPy: values on random inputs and edge shapes, gradients
against finite differences, and the errors bad input raises."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
from megengine.autodiff import GradManager

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


def eq(t, ref):
    """t's values and shape (and dtype, when ref is a numpy array of a dtype we keep) match ref."""
    got = t.numpy()
    ref = np.asarray(ref)
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- creation


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 4), (2, 3)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "float16", "bool", "int8"])
def test_full_zeros_ones(shape, dtype):
    for t, ref in [
        (F.zeros(shape, dtype=dtype), np.zeros(shape, dtype)),
        (F.ones(shape, dtype=dtype), np.ones(shape, dtype)),
        (F.full(shape, 1 if dtype == "bool" else 3, dtype=dtype), np.full(shape, 3, dtype)),
    ]:
        assert t.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(t.numpy(), ref)
        assert t.shape == shape


def test_full_defaults_and_large_ints():
    assert F.zeros(2).dtype == np.float32
    assert F.full([2], 2.5).numpy().tolist() == [2.5, 2.5]
    big = 2**31 - 1  # not exactly a float32
    assert F.full(2, big, dtype="int32").numpy().tolist() == [big, big]
    assert F.ones((2,), device="cpu1").device == "cpu1"
    assert F.zeros(mge.Tensor([2, 3])).shape == (2, 3)
    with pytest.raises(TypeError, match=r"zeros: shape must be an int or a sequence of ints"):
        F.zeros((2.5, 1))
    with pytest.raises(TypeError, match=r"full: shape must be an int or a sequence of ints"):
        F.full("ab", 1)
    with pytest.raises(ValueError, match=r"ones: negative dimension in shape \(2, -1\)"):
        F.ones((2, -1))


def test_full_infers_dtype_from_the_value():
    # MegEngine 1.13's dtypes for the same calls.
    cases = [
        (6, "int32"),
        (6.0, "float32"),
        (True, "bool"),
        (np.int64(3), "int32"),
        (np.float64(2.5), "float32"),
        (np.float16(1), "float16"),
        (np.int8(2), "int8"),
        (np.uint8(3), "uint8"),
        (np.array(3), "int32"),
    ]
    for value, dtype in cases:
        t = F.full((2, 1), value)
        assert t.dtype == np.dtype(dtype), (value, t.dtype)
        assert t.numpy().tolist() == [[value], [value]]
    assert F.full((), 3).shape == ()
    assert F.full(2, 6, dtype="float32").dtype == np.float32
    assert F.full(2, mge.Tensor(2, dtype="int16")).dtype == np.int16


def test_creators_take_dtype_and_device_by_keyword_only():
    # MegEngine's signatures: a positional dtype is an error, not a silent device.
    for call in (
        lambda: F.zeros((2,), "int32"),
        lambda: F.ones((2,), "int32"),
        lambda: F.full((2,), 1, "int32"),
        lambda: F.arange(0, 4, 1, "int32"),
        lambda: F.linspace(0, 1, 3, "float32"),
    ):
        with pytest.raises(TypeError):
            call()
    dev = F.zeros(1, device="cpu1").device  # a CompNode is accepted wherever a name is
    for t in (
        F.zeros(2, dtype="int32", device=dev),
        F.ones(2, device=dev),
        F.full(2, 1, device=dev),
        F.arange(3, device=dev),
        F.linspace(0, 1, 3, device=dev),
    ):
        assert t.device == "cpu1"


def test_like_functions_follow_the_input():
    x = mge.Tensor(np.arange(6, dtype=np.int16).reshape(2, 3), device="cpu1")
    for t, v in [(F.zeros_like(x), 0), (F.ones_like(x), 1), (F.full_like(x, 7), 7)]:
        assert t.dtype == np.int16 and t.shape == (2, 3) and t.device == "cpu1"
        np.testing.assert_array_equal(t.numpy(), np.full((2, 3), v, np.int16))
    assert F.zeros_like(mge.Tensor(1.5)).shape == ()
    assert F.ones_like(np.zeros((0, 2))).shape == (0, 2)
    np.testing.assert_array_equal(F.full_like(x.T, 2).numpy(), np.full((3, 2), 2))


@pytest.mark.parametrize(
    "args",
    [(5,), (0,), (1, 7, 2), (7, 1, -2), (0.5, 2.0, 0.25), (3, 1), (-3, 3), (0, 1, 0.1)],
)
def test_arange_matches_numpy(args):
    ref = np.arange(*args, dtype=np.float32)
    eq(F.arange(*args), ref)
    assert F.arange(*args).dtype == np.float32


def test_arange_dtype_and_errors():
    t = F.arange(2, 10, 3, dtype="int32")
    assert t.dtype == np.int32 and t.numpy().tolist() == [2, 5, 8]
    assert F.arange(stop=3).numpy().tolist() == [0.0, 1.0, 2.0]
    big = 2**24 + 1  # not exactly a float32
    assert F.arange(big, big + 6, 2, dtype="int32").numpy().tolist() == [big, big + 2, big + 4]
    with pytest.raises(ValueError, match="arange: step"):
        F.arange(0, 3, 0)


@pytest.mark.parametrize("args", [(0, 1, 5), (-2, 3, 1), (1, 1, 3), (0, 10, 0), (5, -5, 11)])
def test_linspace_matches_numpy(args):
    np.testing.assert_allclose(
        F.linspace(*args).numpy(), np.linspace(*args, dtype=np.float32), rtol=1e-6, atol=1e-6
    )


def test_linspace_int_dtype_truncates():
    t = F.linspace(0, 3, 4, dtype="int32")
    assert t.dtype == np.int32 and t.numpy().tolist() == [0, 1, 2, 3]
    assert F.linspace(0, 1, 3, dtype="int32").numpy().tolist() == [0, 0, 1]


def test_linspace_errors():
    with pytest.raises(ValueError, match="linspace: num"):
        F.linspace(0, 1, -1)


@pytest.mark.parametrize("nm", [(3, None), (2, 4), (4, 2), (0, 3), (1, 1)])
def test_eye(nm):
    n, m = nm
    t = F.eye(n, m)
    np.testing.assert_array_equal(t.numpy(), np.eye(n, m, dtype=np.float32))
    assert F.eye(n, m, dtype="int32").dtype == np.int32
    with pytest.raises(ValueError, match="eye: negative"):
        F.eye(-1)


# ---------------------------------------------------------------- shape manipulation


def test_reshape_flatten():
    a = randn(2, 3, 4)
    x = mge.Tensor(a)
    eq(F.reshape(x, (4, -1)), a.reshape(4, -1))
    eq(F.reshape(x, [24]), a.reshape(24))
    eq(F.reshape(x.T, (6, 4)), a.T.reshape(6, 4))  # a non-contiguous view
    eq(F.reshape(mge.Tensor(3.0), (1, 1)), np.ones((1, 1)) * 3)
    eq(F.reshape(np.zeros((0, 3)), (3, 0)), np.zeros((3, 0)))
    eq(F.reshape(x, mge.Tensor([6, 4])), a.reshape(6, 4))
    for s, e in [(0, -1), (1, 2), (0, 1), (2, 2), (-2, -1)]:
        ref = a.reshape(a.shape[: s % 3] + (-1,) + a.shape[e % 3 + 1 :])
        eq(F.flatten(x, s, e), ref)
    eq(F.flatten(x), a.reshape(-1))
    eq(F.flatten(mge.Tensor(2.0)), [2.0])
    eq(F.flatten(x.T, 1), a.T.reshape(4, -1))
    with pytest.raises(ValueError, match=r"reshape: cannot reshape \(2, 3, 4\) into \(5, 5\)"):
        F.reshape(x, (5, 5))
    with pytest.raises(ValueError, match="reshape: invalid target shape"):
        F.reshape(x, (-1, -1))
    with pytest.raises(ValueError, match="flatten: start_axis"):
        F.flatten(x, 2, 1)
    with pytest.raises(ValueError, match="flatten: axis 3 is out of range"):
        F.flatten(x, 3)


def test_reshape_flatten_grad():
    check_grad(lambda x: F.reshape(x, (3, 2)), randn(2, 3))
    check_grad(lambda x: F.flatten(x.T, 0), randn(2, 3))


def test_transpose_swapaxes():
    a = randn(2, 3, 4)
    x = mge.Tensor(a)
    for p in [(0, 1, 2), (2, 0, 1), (1, 2, 0)]:
        eq(F.transpose(x, p), a.transpose(p))
    eq(F.transpose(x.T, (1, 0, 2)), a.T.transpose(1, 0, 2))
    eq(F.transpose(x, (1, "x", 0, 2)), a.transpose(1, 0, 2)[:, None])
    eq(F.transpose(mge.Tensor(1.0), ()), np.float32(1.0))
    eq(F.transpose(np.zeros((0, 2)), (1, 0)), np.zeros((2, 0)))
    eq(F.swapaxes(x, 0, -1), np.swapaxes(a, 0, -1))
    eq(F.swapaxes(x, 1, 1), a)
    with pytest.raises(ValueError, match=r"transpose: pattern \(0, 0, 1\)"):
        F.transpose(x, (0, 0, 1))
    with pytest.raises(ValueError, match="swapaxes: axis 3"):
        F.swapaxes(x, 0, 3)
    check_grad(lambda t: F.transpose(t, (2, 0, 1)), randn(2, 3, 2))
    check_grad(lambda t: F.swapaxes(t, 0, 1), randn(2, 3))


def test_expand_dims_squeeze():
    a = randn(2, 3)
    x = mge.Tensor(a)
    for ax in [0, 1, 2, -1, -3, (0, 1), (0, -1), (3, 0)]:
        eq(F.expand_dims(x, ax), np.expand_dims(a, ax))
    eq(F.expand_dims(mge.Tensor(1.0), 0), [1.0])
    eq(F.expand_dims(x.T, 1), np.expand_dims(a.T, 1))
    b = randn(1, 2, 1, 1)
    y = mge.Tensor(b)
    for ax in [None, 0, 2, -1, (0, 3), (2, -1)]:
        eq(F.squeeze(y, ax), np.squeeze(b, ax))
    eq(F.squeeze(x), a)
    eq(F.squeeze(mge.Tensor(np.zeros((1, 0)))), np.zeros((0,)))
    with pytest.raises(ValueError, match=r"squeeze: axis 1 of a tensor of shape \(1, 2, 1, 1\)"):
        F.squeeze(y, 1)
    with pytest.raises(ValueError, match="expand_dims: axis 4"):
        F.expand_dims(x, 4)
    with pytest.raises(ValueError, match="expand_dims: repeated axis"):
        F.expand_dims(x, (0, 0))
    check_grad(lambda t: F.expand_dims(t, (0, 2)), randn(2, 3))
    check_grad(lambda t: F.squeeze(t, 0), randn(1, 3))


def test_broadcast_to():
    a = randn(3, 1)
    eq(F.broadcast_to(a, (2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))
    eq(F.broadcast_to(mge.Tensor(2.0), (2, 2)), np.full((2, 2), 2.0))
    eq(F.broadcast_to(a, (3, 1)), a)
    eq(F.broadcast_to(a, (3, 0)), np.zeros((3, 0)))
    t = mge.Tensor(a.T)  # (1, 3)
    eq(F.broadcast_to(t.T, (3, 5)), np.broadcast_to(a, (3, 5)))
    with pytest.raises(
        ValueError, match=r"broadcast_to: cannot broadcast shape \(3, 1\) to \(2, 4\)"
    ):
        F.broadcast_to(a, (2, 4))
    with pytest.raises(ValueError, match="broadcast_to: cannot broadcast"):
        F.broadcast_to(a, (1,))
    check_grad(lambda t: F.broadcast_to(t, (2, 3, 4)), randn(3, 1))


# ---------------------------------------------------------------- joining and splitting


def test_concat_stack():
    a, b, c = randn(2, 3), randn(4, 3), randn(2, 5)
    eq(F.concat([a, b]), np.concatenate([a, b]))
    eq(F.concat([a, c], axis=1), np.concatenate([a, c], axis=1))
    eq(F.concat([a, c], axis=-1), np.concatenate([a, c], axis=-1))
    eq(F.concat([a]), a)
    eq(F.concat([a, np.zeros((0, 3), np.float32)]), a)
    eq(F.concat([mge.Tensor(c).T, mge.Tensor(a).T]), np.concatenate([c.T, a.T]))
    t = F.concat([mge.Tensor([1, 2]), mge.Tensor([0.5])])  # promotion
    assert t.dtype == np.float32 and t.numpy().tolist() == [1.0, 2.0, 0.5]
    assert F.concat([a, a], device="cpu1").device == "cpu1"
    # Inputs on different devices need device=: MegEngine 1.13 raises "ambiguous device" too,
    # where the first input's device used to be taken silently.
    t0, t1 = mge.Tensor(a, device="cpu0"), mge.Tensor(a, device="cpu1")
    for join in (F.concat, F.stack):
        with pytest.raises(ValueError, match="ambiguous device"):
            join([t0, t1])
        assert join([t0, t1], device="cpu1").device == "cpu1"
        # arrays and lists go where the tensors are
        out = join([a, t1])
        assert out.device == "cpu1"
        eq(out, np.concatenate([a, a]) if join is F.concat else np.stack([a, a]))
    for ax in [0, 1, 2, -1]:
        eq(F.stack([a, a * 2, a * 3], ax), np.stack([a, a * 2, a * 3], ax))
    # 0-d tensors stack as 1-element vectors, as MegEngine 1.13 gives (N, 1) / (1, N).
    eq(F.stack([mge.Tensor(1.0), mge.Tensor(2.0)]), [[1.0], [2.0]])
    eq(F.stack([mge.Tensor(1.0), mge.Tensor(2.0)], axis=-1), [[1.0, 2.0]])
    eq(F.stack([mge.Tensor(a).T, mge.Tensor(a).T], 1), np.stack([a.T, a.T], 1))
    with pytest.raises(ValueError, match=r"concat: shapes \[\(2, 3\), \(2, 5\)\] do not match"):
        F.concat([a, c])
    with pytest.raises(ValueError, match="concat: needs at least one"):
        F.concat([])
    # MegEngine joins 0-d tensors as 1-element vectors (the zoo's detectors rely on it)
    eq(F.concat([mge.Tensor(1.0), mge.Tensor(2.0)]), [1.0, 2.0])
    eq(F.concat([mge.Tensor(1.0), mge.Tensor([2.0, 3.0])]), [1.0, 2.0, 3.0])
    eq(F.concat([mge.Tensor(4.0)]), [4.0])
    with pytest.raises(ValueError, match="concat: axis 1 is out of range"):
        F.concat([mge.Tensor(1.0), mge.Tensor(2.0)], axis=1)
    with pytest.raises(ValueError, match=r"concat: shapes \[\(1,\), \(1, 2\)\] do not match"):
        F.concat([mge.Tensor(1.0), mge.Tensor([[2.0, 3.0]])])
    with pytest.raises(ValueError, match=r"stack: all inputs must have the same shape"):
        F.stack([a, b])
    with pytest.raises(ValueError, match="stack: axis 3"):
        F.stack([a, a], 3)
    check_grad(lambda x, y: F.concat([x, y], 1), randn(2, 2), randn(2, 3))
    check_grad(lambda x, y: F.concat([x[0, 1], y, x[1, 0]]), randn(2, 2), randn(3))
    check_grad(lambda x, y: F.stack([x, y], 1), randn(2, 3), randn(2, 3))


def test_split():
    a = randn(6, 4)
    x = mge.Tensor(a)
    cases = [
        (3, 0),
        (4, 0),
        (6, 0),
        (3, 1),
        (1, 0),
        ([1, 4], 0),
        ([0, 2, 2], 1),
        ([], 0),
        ([4], -1),
    ]
    for arg, ax in cases:
        got = F.split(x, arg, ax)
        ref = np.array_split(a, arg, ax)
        assert len(got) == len(ref)
        for g, r in zip(got, ref):
            eq(g, r)
    for g, r in zip(F.split(x.T, 2), np.split(a.T, 2)):
        eq(g, r)
    assert [t.shape[0] for t in F.split(np.zeros(10), 4)] == [3, 3, 2, 2]
    # MegEngine 1.13's messages, word for word
    with pytest.raises(ValueError) as e:
        F.split(x, 7)
    assert str(e.value) == "The size 6 at dim 0 cannot be split into 7 sections"
    with pytest.raises(ValueError) as e:
        F.split(x, 5, axis=-1)
    assert str(e.value) == "The size 4 at dim -1 cannot be split into 5 sections"
    for k in (0, -2):
        with pytest.raises(ValueError) as e:
            F.split(x, k)
        assert str(e.value) == "Number sections must be larger than 0"
    with pytest.raises(ValueError) as e:
        F.split(x, [3, 1])
    assert str(e.value) == "Invalid nsplits_or_secions: [3, 1]"
    with pytest.raises(ValueError) as e:
        F.split(x, (7,))
    assert str(e.value) == "Invalid nsplits_or_secions: (7,)"
    with pytest.raises(ValueError, match="split: cannot split a zero-dimensional"):
        F.split(mge.Tensor(1.0), 1)
    check_grad(lambda t: F.split(t, [1, 3], 1)[1], randn(2, 4))


def test_cond_take():
    a = randn(3, 4)
    m = a > 0
    v, i = F.cond_take(mge.Tensor(m), mge.Tensor(a))
    eq(v, a[m])
    np.testing.assert_array_equal(i.numpy(), np.flatnonzero(m))
    assert i.dtype == np.int32
    for mask in [np.zeros((3, 4), bool), np.ones((3, 4), bool)]:
        v, i = F.cond_take(mask, a)
        eq(v, a[mask])
        np.testing.assert_array_equal(i.numpy(), np.flatnonzero(mask))
    v, i = F.cond_take(np.zeros((0, 2), bool), np.zeros((0, 2), np.float32))
    assert v.shape == (0,) and i.shape == (0,)
    v, i = F.cond_take(mge.Tensor(True), mge.Tensor(5.0))
    assert v.numpy().tolist() == [5.0] and i.numpy().tolist() == [0]
    xt = mge.Tensor(a).T
    v, _ = F.cond_take(mge.Tensor(m.T), xt)
    eq(v, a.T[m.T])
    # MegEngine 1.13 raises ValueError for a mask of another dtype (where too)
    with pytest.raises(ValueError, match="cond_take: mask must be bool, got float32"):
        F.cond_take(a, a)
    with pytest.raises(ValueError, match=r"cond_take: mask shape \(4,\) differs from data shape"):
        F.cond_take(np.ones(4, bool), a)


def test_cond_take_grad():
    a = randn(3, 4)
    a[np.abs(a) < 0.05] = 0.5  # keep every element off the mask boundary
    mask = mge.Tensor(a > 0)
    check_grad(lambda x: F.cond_take(mask, x)[0] ** 2, a)
    check_grad(lambda x: F.cond_take(mge.Tensor(np.zeros((3, 4), bool)), x)[0], a)


def test_where():
    a, b = randn(3, 4), randn(4)
    m = a > 0
    eq(F.where(m, a, b), np.where(m, a, b))
    eq(F.where(m, a, 0.0), np.where(m, a, 0.0))
    eq(F.where(mge.Tensor(m).T, mge.Tensor(a).T, 1.0), np.where(m.T, a.T, 1.0))
    eq(F.where(mge.Tensor(True), 1.0, 2.0), np.float32(1.0))
    eq(F.where(np.zeros((0, 4), bool), b, b), np.zeros((0, 4)))
    t = F.where(m, mge.Tensor(np.ones((3, 4), np.int32)), 0)
    assert t.dtype == np.int32
    assert F.where(m, mge.Tensor(np.ones((3, 4), np.int32)), 0.5).dtype == np.float32
    with pytest.raises(ValueError, match="where: mask must be bool, got int32"):
        F.where([1, 0], [1, 2], [3, 4])
    with pytest.raises(ValueError, match=r"where: shapes \[\(3, 4\), \(3, 4\), \(3,\)\]"):
        F.where(m, a, randn(3))
    mask = mge.Tensor(m)
    check_grad(lambda x, y: F.where(mask, x, y), a, randn(3, 4))
    check_grad(lambda x, y: F.where(mask, x, y), a, b)  # y broadcast: its gradient sums


# ---------------------------------------------------------------- indexing


def test_gather_scatter():
    a = randn(3, 4)
    idx0 = rng.integers(0, 3, size=(2, 4)).astype(np.int32)
    idx1 = rng.integers(0, 4, size=(3, 2)).astype(np.int32)
    eq(F.gather(a, 0, idx0), np.take_along_axis(a, idx0, 0))
    eq(F.gather(a, 1, idx1), np.take_along_axis(a, idx1, 1))
    eq(F.gather(a, -1, idx1), np.take_along_axis(a, idx1, 1))
    eq(F.gather(mge.Tensor(a).T, 0, idx1.T[:, :3]), np.take_along_axis(a.T, idx1.T[:, :3], 0))
    eq(F.gather(a, 1, idx1.astype(np.int16)), np.take_along_axis(a, idx1, 1))
    eq(F.gather(a, 1, np.zeros((3, 0), np.int32)), np.zeros((3, 0)))
    # scatter: unique indices per column so the result does not depend on write order
    perm = np.stack([rng.permutation(3) for _ in range(4)], 1).astype(np.int32)  # (3, 4)
    src = randn(3, 4)
    ref = a.copy()
    np.put_along_axis(ref, perm, src, 0)
    eq(F.scatter(a, 0, perm, src), ref)
    ref = a.copy()
    np.put_along_axis(ref, perm[:2], src[:2], 0)
    eq(F.scatter(a, 0, perm[:2], src[:2]), ref)
    ref = a.copy()
    idx = np.ascontiguousarray(perm.T[:3, :2])
    np.put_along_axis(ref, idx, src.T[:3, :2], 1)
    eq(F.scatter(mge.Tensor(a), 1, idx, mge.Tensor(src).T[:3, :2]), ref)
    ints = F.scatter(np.zeros((2, 2), np.int32), 1, [[1], [0]], [[5.0], [6.0]])
    assert ints.dtype == np.int32 and ints.numpy().tolist() == [[0, 5], [6, 0]]
    with pytest.raises(TypeError, match="gather: index must be an integer tensor, got float32"):
        F.gather(a, 0, idx0.astype(np.float32))
    with pytest.raises(ValueError, match=r"gather: index of shape \(4,\) must have the rank"):
        F.gather(a, 0, np.zeros(4, np.int32))
    with pytest.raises(ValueError, match=r"gather: index shape \(2, 5\) exceeds input shape"):
        F.gather(a, 0, np.zeros((2, 5), np.int32))
    with pytest.raises(ValueError, match="gather: axis 2"):
        F.gather(a, 2, idx0)
    with pytest.raises(IndexError):
        F.gather(a, 0, np.full((1, 1), 3, np.int32))
    with pytest.raises(ValueError, match=r"scatter: source shape \(2, 2\) differs from index"):
        F.scatter(a, 0, perm[:2], src[:2, :2])
    with pytest.raises(TypeError, match="scatter: index must be an integer tensor"):
        F.scatter(a, 0, perm.astype(np.float32), src)


def test_gather_scatter_grad():
    a = randn(3, 4)
    idx = mge.Tensor(rng.integers(0, 3, size=(3, 4)).astype(np.int32))  # repeats accumulate
    check_grad(lambda x: F.gather(x, 0, idx), a)
    perm = mge.Tensor(np.stack([rng.permutation(3) for _ in range(4)], 1)[:2].astype(np.int32))
    # scatter writes into its input (MegEngine's semantics): differentiate through a copy so
    # that the attached tensor itself stays the leaf.
    check_grad(lambda x, s: F.scatter(x + 0, 0, perm, s), a, randn(2, 4))


@pytest.mark.parametrize("shape,axis", [((1, 1), 0), ((5, 7), 1), ((64, 3000), 1), ((300, 40), 0)])
def test_gather_scatter_grads_match_numpy(shape, axis):
    # Above the kernels' threading grain too. Gather's gradient sums each element's picks in
    # index order onto zeros (np.add.at's order, so exactly); scatter (SET) passes dy to data
    # except where it wrote, and gives src the picked dy.
    n = shape[axis]
    ishape = list(shape)
    ishape[axis] = 2 * n  # every position picked about twice
    idx = rng.integers(0, n, ishape).astype(np.int32)
    a, dy = randn(*shape), randn(*ishape)
    x = mge.Parameter(a)
    gm = GradManager().attach(x)
    with gm:
        gm.backward(F.gather(x, axis, idx), mge.tensor(dy))
    want = np.zeros(shape, np.float32)
    pos = np.indices(ishape)
    pos[axis] = idx
    np.add.at(want, tuple(pos), dy)
    np.testing.assert_array_equal(x.grad.numpy(), want)

    # scatter: the first len along axis of a permutation, so each target is written once
    perm = np.argsort(rng.random(shape), axis).astype(np.int32)
    sel = np.take(perm, range(max(1, n // 2)), axis)
    src, dy = randn(*sel.shape), randn(*shape)
    x, s = mge.Parameter(a), mge.Parameter(src)
    gm = GradManager().attach([x, s])
    with gm:
        gm.backward(F.scatter(x + 0, axis, sel, s), mge.tensor(dy))
    written = np.zeros(shape, bool)
    np.put_along_axis(written, sel, True, axis)
    np.testing.assert_array_equal(x.grad.numpy(), np.where(written, 0, dy))
    np.testing.assert_array_equal(s.grad.numpy(), np.take_along_axis(dy, sel, axis))


def test_scatter_updates_its_input_as_megengine():
    x = mge.Tensor(np.zeros((2, 3), np.float32))
    y = F.scatter(x, 1, [[2], [0]], [[5.0], [6.0]])
    assert y is x
    eq(x, [[0, 0, 5], [6, 0, 0]])
    a = np.zeros((2, 3), np.float32)
    out = F.scatter(a, 1, [[2], [0]], [[5.0], [6.0]])
    eq(out, [[0, 0, 5], [6, 0, 0]])
    assert not a.any()  # a numpy input is converted, never written


def test_diag():
    v, m = randn(3), randn(3, 4)
    for k in [0, 1, -2, 3, -4]:
        eq(F.diag(v, k), np.diag(v, k))
        eq(F.diag(m, k), np.diag(m, k))
    eq(F.diag(mge.Tensor(m).T, 1), np.diag(m.T, 1))
    eq(F.diag(np.zeros(0, np.float32)), np.zeros((0, 0)))
    with pytest.raises(ValueError, match=r"diag: input must be 1-D or 2-D, got shape \(2, 2, 2\)"):
        F.diag(np.zeros((2, 2, 2)))
    with pytest.raises(ValueError, match=r"diag: input must be 1-D or 2-D, got shape \(\)"):
        F.diag(mge.Tensor(1.0))
    check_grad(lambda x: F.diag(x, 1), v)
    check_grad(lambda x: F.diag(x, -1), m)


# ---------------------------------------------------------------- repetition and scans


def test_repeat_tile():
    a = randn(2, 3)
    x = mge.Tensor(a)
    for r, ax in [(2, 0), (3, 1), (1, -1), (0, 0), (2, None)]:
        eq(F.repeat(x, r, ax), np.repeat(a, r, ax))
    eq(F.repeat(x.T, 2, 1), np.repeat(a.T, 2, 1))
    eq(F.repeat(mge.Tensor(2.0), 3), np.repeat(np.float32(2.0), 3))
    for reps in [2, (2, 1), (1, 3), (2, 2, 2), (0, 1), (1,)]:
        eq(F.tile(x, reps), np.tile(a, reps))
    eq(F.tile(x.T, (2, 1)), np.tile(a.T, (2, 1)))
    eq(F.tile(mge.Tensor(1.0), (2, 2)), np.ones((2, 2)))
    # More repeated axes than a 7-dim tensor has room for new axes beside: in groups, or (7 dims
    # already) an axis at a time.
    b = randn(2, 3, 2, 2)
    for reps in [(1, 2, 3, 2), (2, 2, 2, 2), (2, 1, 2, 1, 2, 1, 2)]:
        eq(F.tile(mge.Tensor(b), reps), np.tile(b, reps))
    c = randn(2, 1, 2, 1, 2, 1, 2)
    eq(F.tile(mge.Tensor(c), (2, 3, 1, 2, 1, 1, 2)), np.tile(c, (2, 3, 1, 2, 1, 1, 2)))
    with pytest.raises(ValueError, match="repeat: repeats must be >= 0"):
        F.repeat(x, -1)
    with pytest.raises(TypeError, match="repeat: repeats must be an int"):
        F.repeat(x, [1, 2])
    with pytest.raises(ValueError, match="repeat: axis 2"):
        F.repeat(x, 2, 2)
    with pytest.raises(ValueError, match=r"tile: negative dimension in shape \(-1, 2\)"):
        F.tile(x, (-1, 2))
    check_grad(lambda t: F.repeat(t, 2, 1), a)
    check_grad(lambda t: F.tile(t, (2, 3)), a)


def test_roll():
    a = randn(3, 4)
    x = mge.Tensor(a)
    for s, ax in [(1, None), (-5, None), (2, 0), (-1, 1), (4, 1), ((1, 2), (0, 1)), (1, (0, 1))]:
        eq(F.roll(x, s, ax), np.roll(a, s, ax))
    eq(F.roll(x.T, 1, 0), np.roll(a.T, 1, 0))
    eq(F.roll(mge.Tensor(1.0), 3), np.float32(1.0))
    eq(F.roll(np.zeros((0, 2), np.float32), 1, 0), np.zeros((0, 2)))
    with pytest.raises(ValueError, match="roll: 2 shifts given for 3 axes"):
        F.roll(x, (1, 2), (0, 1, 0))
    with pytest.raises(ValueError, match="roll: axis 2"):
        F.roll(x, 1, 2)
    check_grad(lambda t: F.roll(t, (1, -1), (0, 1)), a)
    # One Roll op: shifts of any size and sign (beyond int32 too), a repeated axis, every axis
    # at once, strided and broadcast inputs, the dtypes, and a tensor past the threading grain.
    b = randn(5, 1, 7, 3)
    y = mge.Tensor(b)
    for s, ax in [
        (2**40 + 3, 0),
        (-(2**33), 2),
        ((1, 2, 3), (0, 0, 2)),
        ((-1, 1, 2, -9), (0, 1, 2, 3)),
        ((5, 7), (0, 2)),
        (0, 3),
        (-3, -1),
    ]:
        eq(F.roll(y, s, ax), np.roll(b, s, ax))
    eq(
        F.roll(y.transpose(2, 0, 1, 3), (2, 1), (0, 1)),
        np.roll(b.transpose(2, 0, 1, 3), (2, 1), (0, 1)),
    )
    eq(
        F.roll(F.broadcast_to(mge.Tensor(a[:, :1]), (3, 6)), 2, 1),
        np.roll(np.repeat(a[:, :1], 6, 1), 2, 1),
    )
    for dt in ("float16", "int32", "int8", "bool", "bfloat16"):
        xt = mge.Tensor(a > 0).astype(dt)
        assert F.roll(xt, 1, 1).dtype == xt.dtype
        eq(
            F.roll(xt, (1, 2), (0, 1)).astype("float32"),
            np.roll((a > 0).astype(np.float32), (1, 2), (0, 1)),
        )
    big = rng.normal(size=(300, 1001)).astype(np.float32)
    eq(F.roll(mge.Tensor(big), (7, -3), (0, 1)), np.roll(big, (7, -3), (0, 1)))
    eq(F.roll(mge.Tensor(big), 12345), np.roll(big, 12345))
    check_grad(lambda t: F.roll(t, (2, -1, 3), (1, 0, 1)), randn(4, 5))


def test_cumsum():
    a = randn(3, 4)
    for ax in [0, 1, -1]:
        np.testing.assert_allclose(F.cumsum(a, ax).numpy(), np.cumsum(a, ax), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(
        F.cumsum(mge.Tensor(a).T, 1).numpy(), np.cumsum(a.T, 1), rtol=1e-5, atol=1e-5
    )
    ints = F.cumsum(np.arange(5, dtype=np.int32), 0)
    assert ints.dtype == np.int32 and ints.numpy().tolist() == [0, 1, 3, 6, 10]
    assert F.cumsum([True, True, False], 0).numpy().tolist() == [1, 2, 2]
    eq(F.cumsum(np.zeros((0, 3), np.float32), 0), np.zeros((0, 3)))
    eq(F.cumsum(mge.Tensor(2.0), 0), np.float32(2.0))
    with pytest.raises(ValueError, match="cumsum: axis 2"):
        F.cumsum(a, 2)
    check_grad(lambda t: F.cumsum(t, 1), a)


def test_meshgrid():
    x, y, z = randn(3), randn(2), randn(4)
    for indexing in ["xy", "ij"]:
        for args in [(x,), (x, y), (x, y, z)]:
            got = F.meshgrid(*args, indexing=indexing)
            ref = np.meshgrid(*args, indexing=indexing)
            assert len(got) == len(ref)
            for g, r in zip(got, ref):
                eq(g, r)
    with pytest.raises(ValueError, match="meshgrid: indexing"):
        F.meshgrid(x, indexing="yx")
    with pytest.raises(ValueError, match=r"meshgrid: inputs must be 1-D, got shape \(2, 2\)"):
        F.meshgrid(np.zeros((2, 2)))
    check_grad(lambda u, v: F.meshgrid(u, v)[0] * F.meshgrid(u, v)[1], x, y)


def test_copy():
    a = randn(2, 3)
    x = mge.Tensor(a)
    c = F.copy(x)
    assert c is not x and c.device == x.device
    eq(c, a)
    eq(F.copy(x.T), a.T)
    d = F.copy(x, "cpu1")
    assert d.device == "cpu1"
    eq(d, a)
    check_grad(F.copy, a)


@pytest.mark.parametrize("dtype", ["int32", "bool", "float16", "uint8"])
def test_manipulations_keep_dtype(dtype):
    a = (rng.integers(0, 3, size=(2, 3)) > 0) if dtype == "bool" else rng.integers(0, 9, (2, 3))
    a = a.astype(dtype)
    x = mge.Tensor(a, dtype=dtype)
    cases = [
        (F.reshape(x, (3, 2)), a.reshape(3, 2)),
        (F.transpose(x, (1, 0)), a.T),
        (F.broadcast_to(x, (2, 2, 3)), np.broadcast_to(a, (2, 2, 3))),
        (F.concat([x, x], 1), np.concatenate([a, a], 1)),
        (F.stack([x, x]), np.stack([a, a])),
        (F.split(x, 3, 1)[2], np.split(a, 3, 1)[2]),
        (F.repeat(x, 2, 0), np.repeat(a, 2, 0)),
        (F.tile(x, (1, 2)), np.tile(a, (1, 2))),
        (F.roll(x, 1), np.roll(a, 1)),
        (F.gather(x, 1, np.zeros((2, 1), np.int32)), a[:, :1]),
        (F.where(np.eye(2, 3, dtype=bool), x, x), a),
        (F.cond_take(np.eye(2, 3, dtype=bool), x)[0], a[np.eye(2, 3, dtype=bool)]),
        (F.diag(x), np.diag(a)),
        (F.copy(x.T), a.T),
    ]
    for got, ref in cases:
        assert got.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(got.numpy(), ref)


# ---------------------------------------------------------------- non_zero


@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 4), (0,), (2, 0, 3), (1,)])
def test_non_zero_matches_numpy(shape):
    x = (rng.random(shape) > 0.5).astype(np.float32) * randn(*shape)
    np.testing.assert_array_equal(F.non_zero(x).numpy(), np.argwhere(x))
    got = F.non_zero(mge.Tensor(x), as_tuple=True)
    assert len(got) == len(shape)
    for g, w in zip(got, np.nonzero(x)):
        assert g.dtype == np.int32
        np.testing.assert_array_equal(g.numpy(), w)


def test_non_zero_bool_and_views():
    x = rng.random((4, 5)) > 0.3
    np.testing.assert_array_equal(F.non_zero(mge.Tensor(x).T).numpy(), np.argwhere(x.T))
    np.testing.assert_array_equal(F.non_zero(np.zeros((3, 2), bool)).numpy().shape, (0, 2))


def test_non_zero_rejects_scalar():
    with pytest.raises(ValueError, match="at least one dimension"):
        F.non_zero(mge.Tensor(1.0))


def test_broadcast_to_none_keeps_the_input_size():
    x = np.arange(6, dtype=np.float32).reshape(1, 2, 3)
    out = F.broadcast_to(mge.Tensor(x), (4, 1, None, 3))
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(x, (4, 1, 2, 3)))
    out = F.broadcast_to(mge.Tensor(x), (mge.Tensor(2), None, 2, None))
    assert out.shape == (2, 1, 2, 3)


def test_broadcast_to_none_on_a_new_axis_and_negative_sizes_raise():
    x = mge.Tensor(np.zeros((1, 2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="None"):
        F.broadcast_to(x, (None, 1, 2, 3))
    with pytest.raises(ValueError):
        F.broadcast_to(x, (1, -1, 3))


def test_eye_takes_its_shape_as_a_tensor():
    np.testing.assert_array_equal(F.eye(mge.Tensor([3, 4])).numpy(), np.eye(3, 4))
    np.testing.assert_array_equal(F.eye(mge.Tensor([3])).numpy(), np.eye(3))


def test_shapes_too_large_to_hold_raise():
    # a byte count that would wrap around is an error, never a tensor smaller than its shape
    for make in (
        lambda: F.ones((2**62,)),
        lambda: F.zeros((2**31, 2**31, 4)),
        lambda: F.eye(2**31),
    ):
        with pytest.raises(ValueError, match="more than 2\\^56 elements"):
            make()
    assert F.zeros((0, 2**62)).shape == (0, 2**62)
