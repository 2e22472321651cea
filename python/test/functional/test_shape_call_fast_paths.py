"""The fast paths of the tensor-manipulation calls (docs/architecture.md, "Per-call cost of the
tensor-manipulation calls"): ops looked up by the argument as given, and ops left to check their
inputs with the general path giving the error. Each test first fills a cache with a valid call,
then calls again with arguments that hit it in ways the general path treats differently."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
from megengine.core.tensor import dtype as D
from megengine.core.tensor.array_method import MegEngineError

rng = np.random.default_rng(0)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


def eq(t, ref):
    ref = np.asarray(ref)
    got = t.numpy()
    assert got.shape == ref.shape, (got.shape, ref.shape)
    np.testing.assert_array_equal(got, ref)


def test_reshape_shape_forms_after_a_cached_one():
    a = randn(2, 8)
    x = mge.Tensor(a)
    eq(x.reshape(4, 4), a.reshape(4, 4))  # fills the cache with (4, 4)
    # entries equal to the cached ints hit it and mean what int() makes of them
    eq(x.reshape(4.0, np.int64(4)), a.reshape(4, 4))
    eq(x.reshape([4, 4]), a.reshape(4, 4))
    eq(x.reshape((4, 4)), a.reshape(4, 4))
    eq(x.reshape(mge.Tensor([4, 4])), a.reshape(4, 4))
    eq(x.reshape(np.array([4, 4])), a.reshape(4, 4))
    eq(x.reshape((np.array(4), 4)), a.reshape(4, 4))  # an unhashable entry: the general path
    eq(x.reshape(-1, 4), a.reshape(-1, 4))
    eq(x.reshape(-1, 4), a.reshape(-1, 4))
    eq(x.reshape(16), a.reshape(16))
    eq(mge.Tensor(np.zeros((0, 4), np.float32)).reshape(4, 0), np.zeros((4, 0)))
    eq(mge.Tensor(np.zeros((0, 4), np.float32)).reshape(-1, 4), np.zeros((0, 4)))
    # a cached shape that does not fit the tensor is refused by the op
    with pytest.raises(ValueError, match="cannot reshape"):
        mge.Tensor(randn(3, 4)).reshape(4, 4)
    with pytest.raises(ValueError, match="only one dim may be -1"):
        x.reshape(-1, -1)
    with pytest.raises(ValueError, match="cannot reshape"):
        x.reshape([5, 3])
    with pytest.raises(TypeError):
        x.reshape("4", None)
    eq(x.flatten(), a.reshape(-1))
    eq(F.flatten(x), a.reshape(-1))
    eq(F.flatten(mge.Tensor(2.0)), [2.0])
    eq(F.flatten(mge.Tensor(np.zeros((2, 0, 3), np.float32))), np.zeros((0,)))
    eq(F.flatten(x, 0, 1), a.reshape(-1))
    eq(F.reshape(x, (4, 4)), a.reshape(4, 4))
    with pytest.raises(ValueError, match="flatten: axis 2 is out of range"):
        F.flatten(x, 0, 2)


def test_transpose_patterns_after_a_cached_one():
    a = randn(2, 3)
    x = mge.Tensor(a)
    eq(x.transpose(1, 0), a.T)  # fills the cache with (1, 0)
    eq(x.transpose((1, 0)), a.T)
    eq(x.transpose([1, 0]), a.T)
    eq(F.transpose(x, (1, 0)), a.T)
    eq(F.transpose(x, [1, 0]), a.T)
    eq(F.transpose(x, (1, "x", 0)), a.T[:, None])
    # the cached permutation of 2 axes refused for a tensor of 3
    b = randn(2, 3, 4)
    with pytest.raises(ValueError, match=r"transpose: pattern \(1, 0\)"):
        F.transpose(mge.Tensor(b), (1, 0))
    with pytest.raises(ValueError):
        mge.Tensor(b).transpose(1, 0)
    with pytest.raises(ValueError, match=r"transpose: pattern \(0, 0\)"):
        F.transpose(x, (0, 0))
    with pytest.raises(ValueError):
        x.transpose(0, 0)


def test_expand_dims_squeeze_int_axes():
    a = randn(2, 3)
    x = mge.Tensor(a)
    for ax in (0, 1, 2, -1, -2, -3):
        eq(F.expand_dims(x, ax), np.expand_dims(a, ax))
        eq(F.expand_dims(x, ax), np.expand_dims(a, ax))
    eq(F.expand_dims(mge.Tensor(1.0), -1), [1.0])
    eq(F.expand_dims(x, np.int64(1)), np.expand_dims(a, 1))
    for ax in (3, -4):
        with pytest.raises(ValueError, match=f"expand_dims: axis {ax}"):
            F.expand_dims(x, ax)
    b = randn(1, 3, 1)
    y = mge.Tensor(b)
    for ax in (None, 0, 2, -1, -3):
        eq(F.squeeze(y, ax), np.squeeze(b, ax))
    assert F.squeeze(x) is x
    assert F.squeeze(x) is x  # the cached "no size-1 axis" of its shape
    eq(F.squeeze(mge.Tensor(np.zeros((1, 0, 1), np.float32))), np.zeros((0,)))
    eq(F.squeeze(mge.Tensor(np.ones((1,), np.float32))), np.float32(1))
    with pytest.raises(ValueError, match=r"squeeze: axis 1 of a tensor of shape \(1, 3, 1\)"):
        F.squeeze(y, 1)
    with pytest.raises(ValueError, match="squeeze: axis 3"):
        F.squeeze(y, 3)


def test_broadcast_to_cached_target():
    a = randn(3, 1)
    x = mge.Tensor(a)
    eq(F.broadcast_to(x, (2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))  # fills the cache
    eq(F.broadcast_to(x, (2, 3, 4)), np.broadcast_to(a, (2, 3, 4)))
    eq(F.broadcast_to(x, (2.0, 3, np.int32(4))), np.broadcast_to(a, (2, 3, 4)))
    eq(F.broadcast_to(x, (2, None, 4)), np.broadcast_to(a, (2, 3, 4)))
    eq(F.broadcast_to(x, (2, 3, mge.Tensor(4))), np.broadcast_to(a, (2, 3, 4)))
    target = mge.Tensor(randn(3, 4))
    assert F.broadcast_to(target, (3, 4)) is target  # the shape it has: the tensor itself
    assert F.broadcast_to(target, (3, 4)) is target
    # the cached target refused for a tensor that does not broadcast to it: the general message
    with pytest.raises(
        ValueError, match=r"broadcast_to: cannot broadcast shape \(2, 4\) to \(2, 3, 4\)"
    ):
        F.broadcast_to(mge.Tensor(randn(2, 4)), (2, 3, 4))
    with pytest.raises(ValueError, match="broadcast_to: cannot broadcast"):
        F.broadcast_to(mge.Tensor(randn(1, 2, 3, 4)), (2, 3, 4))
    with pytest.raises(ValueError, match="negative dimension"):
        F.broadcast_to(x, (-1, 3, 4))


def test_concat_stack_of_tensors():
    a, b, c = randn(2, 3), randn(2, 3), randn(2, 5)
    x, y, z = mge.Tensor(a), mge.Tensor(b), mge.Tensor(c)
    for ax in (0, 1, -1, -2):
        eq(F.concat([x, y], ax), np.concatenate([a, b], ax))
        eq(F.concat((x, y, x), ax), np.concatenate([a, b, a], ax))
    for ax in (0, 1, 2, -1, -2, -3):
        eq(F.stack([x, y], ax), np.stack([a, b], ax))
        eq(F.stack((x, y, x), ax), np.stack([a, b, a], ax))
    eq(F.concat([x, z], 1), np.concatenate([a, c], 1))
    # Tensors the fast paths pass to the general one: 0-d, other dtypes, a single one
    eq(F.concat([mge.Tensor(1.0), mge.Tensor(2.0)]), [1.0, 2.0])
    eq(F.stack([mge.Tensor(1.0), mge.Tensor(2.0)]), [[1.0], [2.0]])
    eq(F.concat([x]), a)
    eq(F.stack([x]), a[None])
    i = mge.Tensor(np.ones((2, 3), np.int32))
    assert F.concat([x, i]).dtype == np.float32
    assert F.stack([i, x]).dtype == np.float32
    e = mge.Tensor(np.zeros((0, 3), np.float32))
    eq(F.stack([e, e], 1), np.zeros((0, 2, 3)))
    eq(F.concat([x, e]), a)
    with pytest.raises(ValueError, match=r"concat: shapes \[\(2, 3\), \(2, 5\)\] do not match"):
        F.concat([x, z])
    with pytest.raises(ValueError, match="concat: axis 2 is out of range"):
        F.concat([x, y], 2)
    with pytest.raises(ValueError, match="stack: all inputs must have the same shape"):
        F.stack([x, z])
    with pytest.raises(ValueError, match="stack: axis 3"):
        F.stack([x, y], 3)
    with pytest.raises(ValueError, match="stack: axis -4"):
        F.stack([x, y], -4)
    x1 = mge.Tensor(a, device="cpu1")
    for join in (F.concat, F.stack):
        with pytest.raises(MegEngineError, match="ambiguous device"):
            join([x, x1])
    check_grad(lambda p, q: F.stack([p, q], 0), a, b)
    check_grad(lambda p, q: F.stack([p, q], 2), a, b)
    check_grad(lambda p, q: F.concat([p, q], 1), a, c)


def test_astype_names_types_and_dtypes():
    x = mge.Tensor(np.array([1.25, -2.5], np.float32))
    for dtype in ("float16", np.float16, np.dtype("float16"), "float16"):
        t = x.astype(dtype)
        assert t.dtype == np.float16
        eq(t, np.array([1.25, -2.5], np.float16))
    assert x.astype("int32").dtype == np.int32
    # a quantized dtype equals its storage dtype as a np.dtype: no op cached for int8 is taken
    assert x.astype("int8").dtype == np.int8
    q = x.astype(D.qint8(0.5))
    assert D.get_scale(q.dtype) == 0.5
    eq(q.astype("float32"), np.array([1.5, -2.5], np.float32))
    with pytest.raises((TypeError, ValueError)):
        x.astype("no_such_dtype")


def test_shape_keyed_caches_emptied_when_full(monkeypatch):
    from megengine.core.tensor import array_method

    monkeypatch.setattr(array_method, "_SHAPE_KEYED_OPS_LIMIT", 2)
    for n in range(1, 7):
        a = randn(n, 2)
        x = mge.Tensor(a)
        eq(x.reshape(2, n), a.reshape(2, n))
        eq(F.broadcast_to(x, (3, n, 2)), np.broadcast_to(a, (3, n, 2)))
        eq(F.stack([x, x], 1), np.stack([a, a], 1))
        eq(F.squeeze(F.expand_dims(x, 0)), np.squeeze(a[None]))
        assert len(array_method._reshape_ops) <= 2
