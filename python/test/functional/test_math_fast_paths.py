"""The per-call fast paths of the math calls (reductions over one axis or all of them, where of
same-shape tensors, cross_entropy of (N, C) scores, cached_op's positional form) against NumPy
and against the general paths they skip: edges, errors, devices, gradients, tracing, autocast."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F
from megengine import amp
from megengine.core.ops import builtin
from megengine.core.tensor.array_method import cached_op
from megengine.core.tensor.dtype import qint8
from megengine.jit import trace

rng = np.random.default_rng(5)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


def test_cached_op_shares_one_op_per_call_form():
    kw = cached_op(builtin.Reduce, mode="SUM", axis=1)
    assert cached_op(builtin.Reduce, mode="SUM", axis=1) is kw
    pos = cached_op(builtin.Reduce, "SUM", 1)
    assert cached_op(builtin.Reduce, "SUM", 1) is pos
    assert pos == kw and pos != cached_op(builtin.Reduce, "SUM", 0)
    assert cached_op(builtin.RemoveAxis, (0, 1)) == builtin.RemoveAxis(axis=(0, 1))
    with pytest.raises(TypeError):  # params are keys: a list is not hashable
        cached_op(builtin.RemoveAxis, axis=[0])


def test_cached_op_stays_bounded():
    # a reduction of every axis keys a Reshape by the input's size: one per batch size seen
    limit = cached_op.cache_info().maxsize
    for n in range(1, limit + 200):
        cached_op(builtin.Reshape, (n,))
    assert cached_op.cache_info().currsize == limit
    x = randn(3, 5)
    np.testing.assert_allclose(F.sum(mge.Tensor(x)).numpy(), x.sum(), rtol=1e-6)


@pytest.mark.parametrize("fn, ref", [(F.sum, np.sum), (F.max, np.max), (F.mean, np.mean)])
@pytest.mark.parametrize("axis", [0, 1, -1, -3, None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_reduce_one_axis_and_all(fn, ref, axis, keepdims):
    x = randn(2, 3, 4)
    out = fn(mge.Tensor(x), axis=axis, keepdims=keepdims)
    want = ref(x, axis=axis, keepdims=keepdims)
    assert out.shape == want.shape
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-6, atol=1e-6)


def test_reduce_edges():
    scalar = mge.Tensor(2.5)
    for axis in (None, 0):
        assert F.sum(scalar, axis=axis).numpy() == 2.5
    with pytest.raises(ValueError, match="axis 1 is out of range for a tensor of 0 dims"):
        F.sum(scalar, axis=1)
    x = mge.Tensor(randn(3, 4))
    with pytest.raises(ValueError, match="axis 2 is out of range for a tensor of 2 dims"):
        F.sum(x, axis=2)
    with pytest.raises(ValueError, match="axis -3 is out of range for a tensor of 2 dims"):
        F.max(x, axis=-3)
    b = mge.Tensor(np.array([[True, False], [True, True]]))
    assert F.sum(b, axis=1).numpy().tolist() == [1, 2]
    assert F.max(b).dtype == np.bool_ and F.min(b, axis=-1).numpy().tolist() == [False, True]
    half = mge.Tensor(randn(2, 3)).astype("float16")
    assert F.mean(half).dtype == np.float32 and F.mean(half, axis=1).dtype == np.float32
    assert F.sum(mge.Tensor(np.zeros((0, 3), np.float32)), axis=0).numpy().tolist() == [0] * 3
    np.testing.assert_array_equal(F.sum([[1, 2], [3, 4]], axis=-1).numpy(), [3, 7])


def test_reduce_gradients_and_trace():
    x = randn(3, 4)
    check_grad(lambda t: F.sum(t, axis=-1), x)
    check_grad(lambda t: F.mean(t, keepdims=True), x)
    check_grad(lambda t: F.max(t, axis=0), x)

    for symbolic in (False, True):

        @trace(symbolic=symbolic)
        def f(t):
            return F.sum(t, axis=1), F.mean(t), F.max(t, keepdims=True)

        for _ in range(3):
            a = randn(3, 4)
            s, m, k = f(mge.Tensor(a))
            np.testing.assert_allclose(s.numpy(), a.sum(1), rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(m.numpy(), a.mean(), rtol=1e-6, atol=1e-6)
            assert k.shape == (1, 1) and k.numpy().item() == a.max()


@pytest.mark.parametrize("axis", [0, 1, -1])
@pytest.mark.parametrize("keepdims", [False, True])
def test_argmax_argmin_one_axis(axis, keepdims):
    x = randn(4, 5)
    for fn, ref in ((F.argmax, np.argmax), (F.argmin, np.argmin)):
        out = fn(mge.Tensor(x), axis=axis, keepdims=keepdims)
        assert out.dtype == np.int32
        np.testing.assert_array_equal(out.numpy(), ref(x, axis=axis, keepdims=keepdims))


def test_softmax_axes():
    x = randn(3, 4)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    for axis in (None, 1, -1):
        np.testing.assert_allclose(F.softmax(mge.Tensor(x), axis).numpy(), want, rtol=1e-5)
    with pytest.raises(ValueError, match="softmax: axis 2 is out of range for a tensor of 2"):
        F.softmax(x, axis=2)
    assert F.softmax(mge.Tensor(3.0)).numpy() == 1.0
    with pytest.raises(TypeError, match="softmax: inp must be a float tensor"):
        F.softmax(mge.Tensor([1, 2]))


def test_clip_bounds():
    x = mge.Tensor([-2.0, 0.5, 3.0])
    assert F.clip(x, 0, 1).numpy().tolist() == [0.0, 0.5, 1.0]
    assert F.clip(x, upper=1).numpy().tolist() == [-2.0, 0.5, 1.0]
    assert F.clip(x, lower=0).numpy().tolist() == [0.0, 0.5, 3.0]
    assert F.clip(mge.Tensor([1, 7]), 2, 5).numpy().tolist() == [2, 5]
    with pytest.raises(ValueError, match="clip needs at least one of lower and upper"):
        F.clip(x)


def test_where_of_same_shape_tensors():
    a, b = randn(3, 4), randn(3, 4)
    m = a > 0
    out = F.where(mge.Tensor(m), mge.Tensor(a), mge.Tensor(b))
    np.testing.assert_array_equal(out.numpy(), np.where(m, a, b))
    ints = F.where(
        mge.Tensor(m), mge.Tensor(np.ones((3, 4), np.int32)), mge.Tensor(np.zeros((3, 4), np.int32))
    )
    assert ints.dtype == np.int32 and ints.numpy().sum() == m.sum()
    # the general path (arrays are promoted) gives the same bits
    np.testing.assert_array_equal(out.numpy(), F.where(m, a, b).numpy())
    mask = mge.Tensor(m)
    check_grad(lambda x, y: F.where(mask, x, y), a, b)


def test_where_same_shape_on_other_devices_and_dtypes():
    a, b = randn(2, 3), randn(2, 3)
    m = a > 0
    # a mask, or y, on another device is copied to x's, as the general path does
    for mask, y in (
        (mge.Tensor(m, device="cpu1"), mge.Tensor(b)),
        (mge.Tensor(m), mge.Tensor(b, device="cpu1")),
    ):
        out = F.where(mask, mge.Tensor(a), y)
        assert out.device == "cpu0"
        np.testing.assert_array_equal(out.numpy(), np.where(m, a, b))
    # different dtypes still promote
    out = F.where(mge.Tensor(m), mge.Tensor(a), mge.Tensor(np.ones((2, 3), np.int32)))
    assert out.dtype == np.float32
    # quantized operands of one dtype name but two scales are refused, as without the fast path
    qa = mge.Tensor(a).astype(qint8(0.1))
    qb = mge.Tensor(b).astype(qint8(0.2))
    with pytest.raises(TypeError, match="quantized operands of two dtypes"):
        F.where(mge.Tensor(m), qa, qb)
    with pytest.raises(ValueError, match="where: mask must be bool, got float32"):
        F.where(mge.Tensor(a), mge.Tensor(a), mge.Tensor(b))


def ce_ref(pred, label):
    x = pred.astype(np.float64)
    x = x - x.max(axis=1, keepdims=True)
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    return -logp[np.arange(len(label)), label]


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("label_dtype", [np.int32, np.int8, np.float32])
def test_cross_entropy_of_2d_scores(reduction, label_dtype):
    pred = randn(6, 5) * 3
    label = rng.integers(0, 5, 6)
    out = F.nn.cross_entropy(
        mge.Tensor(pred), mge.Tensor(label.astype(label_dtype)), reduction=reduction
    )
    want = ce_ref(pred, label)
    want = {"mean": want.mean(), "sum": want.sum(), "none": want}[reduction]
    assert out.dtype == np.float32 and out.shape == np.shape(want)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)
    out = F.nn.cross_entropy(
        mge.Tensor(pred.T), mge.Tensor(label.astype(np.int32)), axis=0, reduction=reduction
    )
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-5)


def test_cross_entropy_of_2d_scores_equals_the_general_path():
    pred, label = mge.Tensor(randn(7, 5) * 4), mge.Tensor(rng.integers(0, 5, 7).astype(np.int32))
    per_label = F.nn.cross_entropy(pred, label, reduction="none")
    np.testing.assert_array_equal(F.nn.cross_entropy(pred, label).numpy(), per_label.mean().numpy())
    np.testing.assert_array_equal(
        F.nn.cross_entropy(pred, label, reduction="sum").numpy(), F.sum(per_label).numpy()
    )


def test_cross_entropy_of_2d_scores_edges():
    label = np.array([0, 2, 1], np.int32)
    check_grad(lambda p: F.nn.cross_entropy(p, label), randn(3, 4))
    check_grad(lambda p: F.nn.cross_entropy(p, label, reduction="sum"), randn(3, 4))
    # float16 scores: the mean is float32, as Tensor.mean of float16 gives
    half = F.nn.cross_entropy(mge.Tensor(randn(3, 4)).astype("float16"), label)
    assert half.dtype == np.float32
    assert (
        F.nn.cross_entropy(mge.Tensor(randn(3, 4)).astype("float16"), label, reduction="sum").dtype
        == np.float16
    )
    empty = F.nn.cross_entropy(
        mge.Tensor(np.zeros((0, 3), np.float32)), mge.Tensor(np.zeros(0, np.int32))
    )
    assert empty.shape == () and np.isnan(empty.numpy())
    with pytest.raises(ValueError, match="cross_entropy: axis 2 is out of range for a tensor of 2"):
        F.nn.cross_entropy(randn(3, 4), label, axis=2)
    with pytest.raises(ValueError, match="cross_entropy: pred must have a class axis"):
        F.nn.cross_entropy(mge.Tensor(1.0), mge.Tensor(0))


def test_cross_entropy_traced_and_autocast():
    for symbolic in (False, True):

        @trace(symbolic=symbolic)
        def f(p, y):
            return F.nn.cross_entropy(p, y)

        for _ in range(3):
            pred, label = randn(4, 3), rng.integers(0, 3, 4).astype(np.int32)
            out = f(mge.Tensor(pred), mge.Tensor(label))
            np.testing.assert_allclose(out.numpy(), ce_ref(pred, label).mean(), rtol=1e-5)
    pred, label = randn(4, 3), rng.integers(0, 3, 4).astype(np.int32)
    with amp.autocast(enabled=True):
        out = F.nn.cross_entropy(mge.Tensor(pred).astype("float16"), mge.Tensor(label))
    assert out.dtype == np.float32
    np.testing.assert_allclose(out.numpy(), ce_ref(pred, label).mean(), rtol=2e-3)
