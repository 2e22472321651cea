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
    with pytest.raises(TypeError, match="cross_entropy: label must be an integer or float"):
        F.nn.cross_entropy(randn(4, 5), np.zeros(4, np.bool_))
    with pytest.raises(TypeError, match="cross_entropy: pred must be a float"):
        F.nn.cross_entropy(np.zeros((4, 5), np.int32), np.zeros(4, np.int32))
    with pytest.raises(ValueError, match="cross_entropy: reduction"):
        F.nn.cross_entropy(randn(4, 5), np.zeros(4, np.int32), reduction="avg")
    with pytest.raises(ValueError, match="cross_entropy: label_smooth"):
        F.nn.cross_entropy(randn(4, 5), np.zeros(4, np.int32), label_smooth=2)
    with pytest.raises(IndexError):
        F.nn.cross_entropy(randn(4, 5), np.full(4, 5, np.int32))


# MegEngine 1.13's results (its own cross_entropy examples give float labels): a float label
# or index is truncated toward zero; topk_accuracy counts a float target equal to a class.
PROBS = np.array([[0.1, 0.2, 0.7], [0.5, 0.3, 0.2]], np.float32)
FLOAT_LABELS = [
    ([1.0, 2.0], [1.609438, 1.609438]),
    ([1.7, 0.9], [1.609438, 0.6931471]),
    ([2.0, -0.5], [0.35667497, 0.6931471]),
]


@pytest.mark.parametrize("label, want", FLOAT_LABELS)
def test_float_labels_are_truncated_as_megengine_does(label, want):
    logp = mge.Tensor(np.log(PROBS))
    got = F.nn.cross_entropy(logp, mge.Tensor(label), reduction="none")
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
    picked = F.nn.indexing_one_hot(logp, mge.Tensor(label), 1)
    np.testing.assert_allclose(picked.numpy(), -np.float32(want), rtol=1e-6)
    # the same as the integer labels truncation gives, gradient included
    ints = np.trunc(label).astype(np.int32)
    check_grad(lambda p: F.nn.cross_entropy(p, mge.Tensor(label)), np.log(PROBS))
    ref = F.nn.cross_entropy(logp, ints, reduction="none")
    np.testing.assert_array_equal(got.numpy(), ref.numpy())


def test_topk_accuracy_of_float_targets():
    logp = mge.Tensor(np.log(PROBS))
    assert F.topk_accuracy(logp, mge.Tensor([2.0, 0.0])).numpy() == 1.0
    got = F.topk_accuracy(logp, mge.Tensor([1.5, 0.0]), topk=(1, 2, 3))
    assert [a.numpy().item() for a in got] == [0.5, 0.5, 0.5]
    with pytest.raises(TypeError, match="target must be an integer or float"):
        F.topk_accuracy(logp, mge.Tensor([True, False]))


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
        F.topk_accuracy(randn(3, 5), np.zeros(3, np.bool_))


# ----------------------------------------------------------------------------- CTC


def ctc_brute_force(p, steps, label, blank):
    """-log of the summed probability of every alignment of ``steps`` steps that collapses to
    ``label`` (repeats merged, then blanks dropped), by enumerating all C**steps paths."""
    total = 0.0
    for path in np.ndindex(*([p.shape[1]] * steps)):
        merged = [c for i, c in enumerate(path) if i == 0 or c != path[i - 1]]
        if [c for c in merged if c != blank] == list(label):
            total += np.prod([p[t, c] for t, c in enumerate(path)], dtype=np.float64)
    return -np.log(total)


def softmax_probs(*shape):
    e = np.exp(randn(*shape).astype(np.float64))
    return (e / e.sum(-1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("reduction", ["none", "sum", "mean"])
@pytest.mark.parametrize("blank", [0, 2])
def test_ctc_loss_is_the_sum_over_alignments(reduction, blank):
    p = softmax_probs(5, 4, 3)  # (T, N, C)
    pred_lengths = np.array([5, 3, 4, 5], np.int32)
    symbols = [c for c in range(3) if c != blank]
    label = np.array(
        [[symbols[0], symbols[1]], [symbols[1], 0], [symbols[0]] * 2, [symbols[1]] * 2]
    )
    label[1, 1] = symbols[0]  # padding beyond label_lengths is never read
    label_lengths = np.array([2, 1, 2, 1], np.int32)
    want = np.array(
        [
            ctc_brute_force(p[:, i], pred_lengths[i], label[i, : label_lengths[i]], blank)
            for i in range(4)
        ]
    )
    got = F.loss.ctc_loss(p, pred_lengths, label, label_lengths, blank, reduction)
    if reduction == "mean":
        want = (want / label_lengths).mean()
    np.testing.assert_allclose(got.numpy(), reduce_ref(want, reduction), rtol=1e-5)
    # the same labels concatenated
    flat = np.concatenate([label[i, : label_lengths[i]] for i in range(4)])
    again = F.nn.ctc_loss(p, pred_lengths, flat, label_lengths, blank, reduction)
    np.testing.assert_allclose(again.numpy(), got.numpy(), rtol=1e-6)


def test_ctc_loss_known_values():
    # MegEngine 1.13's docstring example, and what it gives when no alignment fits: the
    # probabilities are floored at float32's smallest normal before the log, not -inf.
    pred = [[[0.0614, 0.9386], [0.8812, 0.1188]], [[0.699, 0.301], [0.2572, 0.7428]]]
    loss = F.nn.ctc_loss(
        mge.Tensor(pred), mge.Tensor([2, 2]), mge.Tensor([1, 1]), mge.Tensor([1, 1])
    )
    np.testing.assert_allclose(loss.numpy(), 0.1504417, rtol=1e-6)
    p = np.full((2, 1, 3), 1 / 3, np.float32)  # "1 1" needs three steps, there are two
    loss = F.loss.ctc_loss(p, np.array([2]), np.array([[1, 1]]), np.array([2]), 2, "none")
    np.testing.assert_allclose(loss.numpy(), [87.04887], rtol=1e-6)
    assert not hasattr(F, "ctc_loss")  # F.nn and F.loss have it, F does not (as MegEngine)


def test_ctc_loss_errors():
    p = softmax_probs(3, 2, 4)
    ok = {
        "pred_lengths": np.array([3, 3]),
        "label": np.array([[1], [2]]),
        "label_lengths": np.array([1, 1]),
    }
    with pytest.raises(ValueError, match=r"pred must be \(T, N, C\)"):
        F.loss.ctc_loss(p[0], **ok)
    with pytest.raises(ValueError, match="batch size 2"):
        F.loss.ctc_loss(p, np.array([3]), ok["label"], ok["label_lengths"])
    with pytest.raises(ValueError, match=r"pred_lengths must lie in \[1, 3\]"):
        F.loss.ctc_loss(p, np.array([4, 3]), ok["label"], ok["label_lengths"])
    with pytest.raises(ValueError, match="label_lengths must be at least 1"):
        F.loss.ctc_loss(p, ok["pred_lengths"], ok["label"], np.array([0, 1]))
    with pytest.raises(ValueError, match="exceed"):
        F.loss.ctc_loss(p, ok["pred_lengths"], ok["label"], np.array([2, 1]))
    with pytest.raises(ValueError, match="concatenated label has 3 entries"):
        F.loss.ctc_loss(p, ok["pred_lengths"], np.array([1, 2, 3]), np.array([1, 1]))
    with pytest.raises(ValueError, match="blank 4"):
        F.loss.ctc_loss(p, **ok, blank=4)
    with pytest.raises(ValueError, match="reduction"):
        F.loss.ctc_loss(p, **ok, reduction="avg")
    with pytest.raises(TypeError, match="float"):
        F.loss.ctc_loss(np.ones((3, 2, 4), np.int32), **ok)


def test_ctc_loss_grad():
    lengths, label = np.array([4, 3]), np.array([[1, 2], [2, 2]])
    check_grad(
        lambda p: F.loss.ctc_loss(p, lengths, label, np.array([2, 2]), reduction="sum"),
        softmax_probs(4, 2, 3),
        rtol=5e-2,
        atol=5e-3,
    )


def test_ctc_loss_traced_follows_the_lengths():
    from megengine.jit import trace

    traced = trace(lambda p, pl, lab, ll: F.loss.ctc_loss(p, pl, lab, ll))
    p, label = softmax_probs(4, 2, 3), np.array([[1, 2], [2, 1]], np.int32)
    for pl, ll in (([4, 3], [2, 1]), ([4, 3], [2, 1]), ([2, 4], [1, 2]), ([1, 1], [1, 1])):
        args = (p, np.array(pl, np.int32), label, np.array(ll, np.int32))
        want = F.loss.ctc_loss(*args)
        got = traced(*(mge.Tensor(a) for a in args))
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    assert traced._mode == "graph"
