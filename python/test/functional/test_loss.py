"""Losses and topk_accuracy against NumPy: values, reductions, edge shapes, errors, gradients."""

import numpy as np
import pytest
from gradcheck import check_grad

import megengine as mge
import megengine.functional as F

rng = np.random.default_rng(1)


def randn(*shape):
    return rng.normal(size=shape).astype(np.float32)


def reduce_ref(loss, reduction):
    if reduction == "none":
        return loss
    if reduction == "sum":
        return loss.sum()
    return loss.mean() if loss.size else np.float64("nan")


def log_softmax(x, axis):
    x = x.astype(np.float64)
    m = x.max(axis=axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=axis, keepdims=True))


def ce_ref(pred, label, axis, smoothing, with_logits=True):
    logp = log_softmax(pred, axis) if with_logits else np.log(pred.astype(np.float64))
    c = pred.shape[axis]
    onehot = np.moveaxis(np.eye(c)[label], -1, axis)
    target = onehot * (1 - smoothing) + smoothing / c
    return -(target * logp).sum(axis=axis)


def test_losses_are_in_nn_and_loss_and_f():
    for name in ["cross_entropy", "binary_cross_entropy", "l1_loss", "square_loss", "hinge_loss"]:
        assert getattr(F.nn, name) is getattr(F.loss, name) is getattr(F, name)
    assert F.topk_accuracy is F.nn.topk_accuracy is F.metric.topk_accuracy


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize(
    "shape,axis,smoothing",
    [((4, 5), 1, 0.0), ((4, 5), 1, 0.1), ((2, 3, 4), 1, 0.0), ((2, 3, 4), -1, 0.2), ((6,), 0, 0)],
)
def test_cross_entropy_with_logits(shape, axis, smoothing, reduction):
    pred = randn(*shape) * 3
    lshape = list(shape)
    c = lshape.pop(axis)
    label = rng.integers(0, c, lshape).astype(np.int32)
    out = F.nn.cross_entropy(
        pred, label, axis=axis, label_smooth=smoothing, reduction=reduction
    ).numpy()
    ref = reduce_ref(ce_ref(pred, label, axis, smoothing), reduction)
    np.testing.assert_allclose(out, ref, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("smoothing", [0.0, 0.3])
def test_cross_entropy_probabilities(smoothing):
    prob = np.exp(log_softmax(randn(4, 3), 1)).astype(np.float32)
    label = np.array([0, 2, 1, 1], np.int32)
    out = F.nn.cross_entropy(prob, label, with_logits=False, label_smooth=smoothing).numpy()
    ref = ce_ref(prob, label, 1, smoothing, with_logits=False).mean()
    np.testing.assert_allclose(out, ref, rtol=1e-5)


def test_cross_entropy_large_logits_views_and_empty():
    pred = np.array([[1000.0, 0.0], [0.0, -1000.0]], np.float32)
    out = F.nn.cross_entropy(pred, np.array([1, 0], np.int32), reduction="none").numpy()
    np.testing.assert_allclose(out, [1000.0, 0.0], atol=1e-3)
    pt = mge.Tensor(randn(3, 4)).T  # (4, 3) view
    label = np.array([0, 1, 2, 0], np.int32)
    np.testing.assert_allclose(
        F.nn.cross_entropy(pt, label).numpy(), ce_ref(pt.numpy(), label, 1, 0).mean(), rtol=1e-5
    )
    empty = F.nn.cross_entropy(np.zeros((0, 3), np.float32), np.zeros(0, np.int32), reduction="sum")
    assert empty.numpy() == 0


def test_cross_entropy_label_smooth_positional_and_none():
    # MegEngine's order: (pred, label, axis, with_logits, label_smooth, reduction).
    pred = randn(4, 5)
    label = np.array([0, 4, 2, 1], np.int32)
    ref = reduce_ref(ce_ref(pred, label, 1, 0.2), "sum")
    out = F.nn.cross_entropy(pred, label, 1, True, 0.2, "sum").numpy()
    np.testing.assert_allclose(out, ref, rtol=1e-5)
    plain = F.nn.cross_entropy(pred, label).numpy()
    np.testing.assert_allclose(F.nn.cross_entropy(pred, label, label_smooth=None).numpy(), plain)
    with pytest.raises(TypeError):
        F.nn.cross_entropy(pred, label, label_smoothing=0.1)


def test_cross_entropy_errors():
    with pytest.raises(ValueError, match=r"cross_entropy: label \(3,\) must have pred \(4, 5\)"):
        F.nn.cross_entropy(randn(4, 5), np.zeros(3, np.int32))
    with pytest.raises(TypeError, match="cross_entropy: label must be an integer"):
        F.nn.cross_entropy(randn(4, 5), np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="cross_entropy: pred must be a float"):
        F.nn.cross_entropy(np.zeros((4, 5), np.int32), np.zeros(4, np.int32))
    with pytest.raises(ValueError, match="cross_entropy: reduction"):
        F.nn.cross_entropy(randn(4, 5), np.zeros(4, np.int32), reduction="avg")
    with pytest.raises(ValueError, match="cross_entropy: label_smooth"):
        F.nn.cross_entropy(randn(4, 5), np.zeros(4, np.int32), label_smooth=2)
    with pytest.raises(IndexError):
        F.nn.cross_entropy(randn(4, 5), np.full(4, 5, np.int32))


@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_grad(smoothing):
    label = np.array([0, 2, 1], np.int32)
    check_grad(lambda p: F.nn.cross_entropy(p, label, label_smooth=smoothing), randn(3, 4))
    prob = rng.uniform(0.2, 1, (3, 4)).astype(np.float32)
    check_grad(
        lambda p: F.nn.cross_entropy(p, label, with_logits=False, label_smooth=smoothing), prob
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4, 3), (5,), (), (0, 2)])
def test_binary_cross_entropy(shape, reduction):
    logits = randn(*shape) * 3
    label = rng.uniform(0, 1, shape).astype(np.float32)
    x = logits.astype(np.float64)
    ref = label * np.logaddexp(0, -x) + (1 - label) * np.logaddexp(0, x)
    out = F.nn.binary_cross_entropy(logits, label, reduction=reduction).numpy()
    np.testing.assert_allclose(out, reduce_ref(ref, reduction), rtol=1e-5, atol=1e-6)
    p = 1 / (1 + np.exp(-x))
    ref2 = -(label * np.log(p) + (1 - label) * np.log(1 - p))
    out2 = F.nn.binary_cross_entropy(p.astype(np.float32), label, False, reduction).numpy()
    np.testing.assert_allclose(out2, reduce_ref(ref2, reduction), rtol=1e-4, atol=1e-5)


def test_binary_cross_entropy_extremes_errors_grad():
    out = F.nn.binary_cross_entropy([200.0, -200.0], [0.0, 1.0], reduction="none").numpy()
    np.testing.assert_allclose(out, [200.0, 200.0])
    with pytest.raises(ValueError, match=r"binary_cross_entropy: pred \(2,\) and label \(3,\)"):
        F.nn.binary_cross_entropy(randn(2), randn(3))
    label = rng.uniform(0, 1, (3, 2)).astype(np.float32)
    check_grad(lambda p: F.nn.binary_cross_entropy(p, label), randn(3, 2))
    check_grad(
        lambda p: F.nn.binary_cross_entropy(p, label, with_logits=False),
        rng.uniform(0.2, 0.8, (3, 2)).astype(np.float32),
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
@pytest.mark.parametrize("shape", [(4, 3), (), (2, 3, 2)])
def test_l1_and_square_loss(shape, reduction):
    pred, label = randn(*shape), randn(*shape)
    d = pred.astype(np.float64) - label
    np.testing.assert_allclose(
        F.nn.l1_loss(pred, label, reduction).numpy(), reduce_ref(np.abs(d), reduction), rtol=1e-5
    )
    np.testing.assert_allclose(
        F.nn.square_loss(pred, label, reduction).numpy(), reduce_ref(d * d, reduction), rtol=1e-5
    )


def test_l1_square_views_errors_grad():
    p = mge.Tensor(randn(3, 2)).T
    label = randn(2, 3)
    ref = np.abs(p.numpy() - label).mean()
    np.testing.assert_allclose(F.nn.l1_loss(p, label).numpy(), ref, rtol=1e-5)
    with pytest.raises(ValueError, match=r"square_loss: pred \(2, 3\) and label \(3, 2\)"):
        F.nn.square_loss(randn(2, 3), randn(3, 2))
    with pytest.raises(ValueError, match="l1_loss: reduction"):
        F.nn.l1_loss(randn(2), randn(2), reduction="max")
    label = randn(3, 4)
    pred = label + rng.choice([-1, 1], (3, 4)).astype(np.float32) * 0.5
    check_grad(lambda x: F.nn.l1_loss(x, label), pred)
    check_grad(lambda x: F.nn.square_loss(x, label, "sum"), randn(3, 4))


@pytest.mark.parametrize("norm", ["L1", "L2"])
@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_hinge_loss(norm, reduction):
    pred = randn(5, 4)
    label = rng.choice([-1.0, 1.0], (5, 4)).astype(np.float32)
    m = np.maximum(0, 1 - pred.astype(np.float64) * label)
    ref = (m if norm == "L1" else m * m).sum(axis=1)
    out = F.nn.hinge_loss(pred, label, norm, reduction).numpy()
    np.testing.assert_allclose(out, reduce_ref(ref, reduction), rtol=1e-5)


def test_hinge_loss_errors_grad():
    with pytest.raises(ValueError, match=r"hinge_loss: pred must be 2-D"):
        F.nn.hinge_loss(randn(3), randn(3))
    with pytest.raises(ValueError, match="hinge_loss: norm"):
        F.nn.hinge_loss(randn(2, 3), randn(2, 3), norm="L3")
    label = rng.choice([-1.0, 1.0], (3, 4)).astype(np.float32)
    pred = label * rng.choice([0.5, 1.5, -0.5], (3, 4)).astype(np.float32)  # away from the kink
    check_grad(lambda x: F.nn.hinge_loss(x, label), pred)
    check_grad(lambda x: F.nn.hinge_loss(x, label, "L2"), pred)
    np.testing.assert_array_equal(
        F.nn.hinge_loss(pred, label, "l2").numpy(), F.nn.hinge_loss(pred, label, "L2").numpy()
    )


def topk_ref(logits, target, k):
    order = np.argsort(-logits, axis=1, kind="stable")[:, :k]
    return (order == target[:, None]).any(axis=1).mean()


@pytest.mark.parametrize("topk", [1, 3, (1, 2, 5)])
def test_topk_accuracy(topk):
    logits = randn(20, 5)
    target = rng.integers(0, 5, 20).astype(np.int32)
    out = F.topk_accuracy(logits, target, topk)
    if isinstance(topk, int):
        assert out.dtype == np.float32 and out.shape == ()
        np.testing.assert_allclose(out.numpy(), topk_ref(logits, target, topk), rtol=1e-6)
    else:
        assert len(out) == len(topk)
        for k, acc in zip(topk, out):
            np.testing.assert_allclose(acc.numpy(), topk_ref(logits, target, k), rtol=1e-6)


def test_topk_accuracy_errors():
    with pytest.raises(ValueError, match=r"topk_accuracy: topk 6 must be in \[1, 5\]"):
        F.topk_accuracy(randn(3, 5), np.zeros(3, np.int32), 6)
    with pytest.raises(ValueError, match=r"topk_accuracy: logits \(3, 5\) must be \(N, C\)"):
        F.topk_accuracy(randn(3, 5), np.zeros(4, np.int32))
    with pytest.raises(TypeError, match="topk_accuracy: target must be an integer"):
        F.topk_accuracy(randn(3, 5), np.zeros(3, np.float32))
