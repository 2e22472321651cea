"""Loss functions (``F.nn.cross_entropy``, ``F.loss.l1_loss``, ...), built from Elemwise,
Reduce and the functions of ``nn.py``, so every one is differentiable."""

import numpy as np

from ..core._imperative_rt import MegEngineError, MegEngineTypeError
from ..core.ops import builtin
from ..core.tensor import amp as _amp
from ..core.tensor.array_method import (
    Tensor,
    _is_tracing,
    _rt_elemwise,
    apply,
    as_tensor,
    cached_op,
    device_name,
    elemwise,
    elemwise_op,
    kept_scalar,
    reduce,
)
from .elemwise import log, logaddexp, maximum
from .tensor import _axis, broadcast_to, concat, full, gather, stack, where

__all__ = [
    "binary_cross_entropy",
    "cross_entropy",
    "ctc_loss",
    "hinge_loss",
    "l1_loss",
    "square_loss",
]


def _reduce_output(loss, reduction, fname):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return reduce(loss, "sum")
    if reduction == "none":
        return loss
    raise MegEngineError(f"{fname}: reduction must be 'none', 'sum' or 'mean', got {reduction!r}")


def _pair(pred, label, fname):
    p, y = as_tensor(pred), as_tensor(label)
    if p._dtype_name not in ("float32", "float16", "bfloat16"):
        raise MegEngineTypeError(f"{fname}: pred must be a float tensor, got dtype {p._dtype_name}")
    if p.shape != y.shape:
        raise MegEngineError(
            f"{fname}: pred {p.shape} and label {y.shape} must have the same shape"
        )
    return p, y


def l1_loss(pred, label, reduction="mean"):
    """Mean absolute error: ``|pred - label|``, reduced.

    Args:
        pred: predicted values.
        label: target values, of pred's shape.
        reduction: "mean" (over all elements), "sum" or "none".

    Returns:
        the loss: a scalar Tensor, or one of pred's shape for "none".

    Examples:
        >>> import megengine.functional as F
        >>> F.nn.l1_loss([1.0, 2.0, 3.0], [2.0, 2.0, 5.0]).numpy().tolist()
        1.0
    """
    p, y = _pair(pred, label, "l1_loss")
    return _reduce_output(abs(p - y), reduction, "l1_loss")


def square_loss(pred, label, reduction="mean"):
    """Mean squared error: ``(pred - label) ** 2``, reduced.

    Args:
        pred: predicted values.
        label: target values, of pred's shape.
        reduction: "mean" (over all elements), "sum" or "none".

    Returns:
        the loss: a scalar Tensor, or one of pred's shape for "none".

    Examples:
        >>> import megengine.functional as F
        >>> F.nn.square_loss([1.0, 2.0, 3.0], [2.0, 2.0, 5.0], reduction="sum").numpy().tolist()
        5.0
    """
    p, y = _pair(pred, label, "square_loss")
    return _reduce_output(elemwise("SQUARE", p - y), reduction, "square_loss")


def binary_cross_entropy(pred, label, with_logits=True, reduction="mean"):
    """Binary cross entropy: ``-(label * log(p) + (1 - label) * log(1 - p))`` with
    ``p = sigmoid(pred)`` (computed stably) when with_logits, else ``p = pred``.

    Args:
        pred: logits, or probabilities in (0, 1) when with_logits is False.
        label: targets in [0, 1], of pred's shape.
        with_logits: whether pred holds logits.
        reduction: "mean" (over all elements), "sum" or "none".

    Returns:
        the loss: a scalar Tensor, or one of pred's shape for "none".

    Examples:
        >>> import megengine.functional as F
        >>> F.nn.binary_cross_entropy([0.0, 0.0], [1.0, 0.0]).numpy().tolist()
        0.6931471824645996
        >>> F.nn.binary_cross_entropy([0.5], [1.0], with_logits=False).numpy().tolist()
        0.6931471824645996
    """
    fname = "binary_cross_entropy"
    p, y = _pair(pred, label, fname)
    if y._dtype_name != p._dtype_name:  # a TypeCvt to the same dtype is a copy (1.2 us)
        y = y.astype(p._dtype_name)
    one = None
    if isinstance(p, Tensor) and isinstance(y, Tensor) and not _is_tracing():
        # as_tensor of the 1 per call is a copy to the device; None where promotion differs
        one = kept_scalar(1, y._dtype_name, device_name(y), promotes=True)
    not_y = 1 - y if one is None else _rt_elemwise(_SUB, one, y)
    # One FUSE_MUL_ADD4 (a * b + c * d in one pass; x86 and naive round once, from double) for
    # the two products and their sum: five ops with logits where eight were.
    if with_logits:
        # -log(sigmoid(p)) = softplus(-p) and -log(1 - sigmoid(p)) = softplus(p): the same bits
        # as -LOGSIGMOID(p) and -LOGSIGMOID(-p) (both kernels compute max(-x, 0) + log1p(e^-|x|),
        # one negated), stable for large |p|, and no negation of the sum.
        sp = elemwise_op("SOFTPLUS")
        loss = _rt_elemwise(_FMA4, y, _rt_elemwise(sp, -p), not_y, _rt_elemwise(sp, p))
    else:
        ln = elemwise_op("LOG")
        one_p = 1 - p if one is None else _rt_elemwise(_SUB, one, p)
        loss = -_rt_elemwise(_FMA4, y, _rt_elemwise(ln, p), not_y, _rt_elemwise(ln, one_p))
    return _reduce_output(loss, reduction, fname)


_SUB = elemwise_op("SUB")
_FMA4 = elemwise_op("FUSE_MUL_ADD4")


def cross_entropy(pred, label, axis=1, with_logits=True, label_smooth=0, reduction="mean"):
    """Cross entropy of class scores against integer labels:
    ``-logsoftmax(pred)[label]`` along ``axis`` when with_logits, ``-log(pred[label])`` for
    probabilities otherwise. With label smoothing ``s`` over ``C`` classes the target
    distribution is ``(1 - s) * one_hot(label) + s / C``.

    Args:
        pred: scores of shape (N, C, ...) with the classes along ``axis``.
        label: class labels of pred's shape without ``axis``, values in [0, C): integers, or
            floats, truncated toward zero as MegEngine does.
        axis: the class axis of pred.
        with_logits: whether pred holds logits (else probabilities).
        label_smooth: s in [0, 1] (None is 0).
        reduction: "mean" (over all labels), "sum" or "none".

    Returns:
        the loss: a scalar Tensor, or one of label's shape for "none".

    Examples:
        >>> import megengine.functional as F
        >>> F.nn.cross_entropy([[0.0, 0.0]], [1]).numpy().tolist()
        0.6931471824645996
        >>> F.nn.cross_entropy([[0.25, 0.75]], [0], with_logits=False).numpy().tolist()
        1.3862943649291992
    """
    fname = "cross_entropy"
    p = pred if isinstance(pred, Tensor) else as_tensor(pred)
    y = label if isinstance(label, Tensor) else as_tensor(label)
    if p._dtype_name not in _FLOATS:
        raise MegEngineTypeError(f"{fname}: pred must be a float tensor, got dtype {p._dtype_name}")
    if y._dtype_name != "int32":
        if y._dtype_name not in _FLOATS + ("int8", "uint8", "int16"):
            raise MegEngineTypeError(
                f"{fname}: label must be an integer or float tensor, got dtype {y._dtype_name}"
            )
        # the index IndexingOneHot takes; MegEngine's rule: a float label is truncated toward 0
        y = y.astype("int32")
    ndim = p.ndim
    if ndim < 1:
        raise MegEngineError(f"{fname}: pred must have a class axis, got shape {p.shape}")
    axis = _axis(fname, axis, ndim)
    shape = p.shape
    expect = shape[:axis] + shape[axis + 1 :]
    if y.shape != expect:
        raise MegEngineError(
            f"{fname}: label {y.shape} must have pred {shape} without axis {axis}: {expect}"
        )
    if label_smooth is None:
        label_smooth = 0
    if not 0 <= label_smooth <= 1:
        raise MegEngineError(f"{fname}: label_smooth must be in [0, 1], got {label_smooth}")
    # log-probabilities: LogSoftmax (one kernel, no overflow) for logits, log for probabilities
    if not with_logits:
        logp = elemwise("LOG", p)
    elif _amp._enabled:
        from . import nn  # here: nn imports this module

        logp = nn.logsoftmax(p, axis)  # in float32, as MegEngine's autocast computes it
    else:
        logp = apply(cached_op(builtin.LogSoftmaxForward, axis), p)[0]
    # each label's log-probability, the class axis kept with size 1
    picked = apply(cached_op(builtin.IndexingOneHot, axis), logp, y)[0]
    if not label_smooth and ndim == 2 and reduction in _REDUCE_2D and p._dtype_name == "float32":
        # (N, C) scores: reduce the (N, 1) picks over N and drop both axes (two ops, where the
        # general path removes the axis, reduces and removes it again); negated last, the same
        # values. A 16-bit pred takes the general path, whose mean is float32.
        out = apply(cached_op(builtin.Reduce, _REDUCE_2D[reduction], 1 - axis), picked)[0]
        return -apply(cached_op(builtin.RemoveAxis, (0, 1)), out)[0]
    loss = -apply(cached_op(builtin.RemoveAxis, (axis,)), picked)[0]
    if label_smooth:
        # -sum(target * logp) with target = (1 - s) * one_hot + s / C
        smooth = reduce(logp, "sum", axis) * (label_smooth / shape[axis])
        loss = loss * (1 - label_smooth) - smooth
    return _reduce_output(loss, reduction, fname)


_FLOATS = ("float32", "float16", "bfloat16")
_REDUCE_2D = {"mean": "MEAN", "sum": "SUM"}


def hinge_loss(pred, label, norm="L1", reduction="mean"):
    """Hinge loss of (N, C) scores against +-1 labels: ``max(0, 1 - pred * label)`` summed
    over C ("L1") or its square summed ("L2"), then reduced over N.

    Args:
        pred: scores of shape (N, C).
        label: labels in {-1, 1}, of pred's shape.
        norm: "L1" or "L2" (either case).
        reduction: "mean" (over N), "sum" or "none".

    Returns:
        the loss: a scalar Tensor, or one of shape (N,) for "none".

    Examples:
        >>> import megengine.functional as F
        >>> F.nn.hinge_loss([[0.5, -2.0]], [[1.0, 1.0]]).numpy().tolist()
        3.5
        >>> F.nn.hinge_loss([[0.5, -2.0]], [[1.0, 1.0]], norm="L2").numpy().tolist()
        9.25
    """
    fname = "hinge_loss"
    p, y = _pair(pred, label, fname)
    if p.ndim != 2:
        raise MegEngineError(f"{fname}: pred must be 2-D (N, C), got {p.shape}")
    if str(norm).upper() not in ("L1", "L2"):
        raise MegEngineError(f"{fname}: norm must be 'L1' or 'L2', got {norm!r}")
    margin = elemwise("RELU", 1 - p * y.astype(p._dtype_name))
    if str(norm).upper() == "L2":
        margin = elemwise("SQUARE", margin)
    return _reduce_output(reduce(margin, "sum", 1), reduction, fname)


def ctc_loss(pred, pred_lengths, label, label_lengths, blank=0, reduction="mean"):
    """Connectionist Temporal Classification loss of per-step class probabilities, as
    MegEngine's: the negative log-likelihood of each label sequence summed over its
    alignments, with probabilities floored at float32's smallest normal before the log (so an
    impossible alignment costs about 87 per step, not infinity).

    The lengths enter the loss through tensor ops, so a traced step follows them from call to
    call; a concatenated label is unpacked by its lengths' values, which a trace fixes at the
    first call (pass an (N, S) label to a traced function whose lengths change).

    Args:
        pred: probabilities (not log-probabilities) of shape (T, N, C), class ``blank``
            included.
        pred_lengths: the number of valid steps of each sequence, shape (N,), in [1, T].
        label: the labels without blanks, (N, S) padded, or (sum(label_lengths),)
            concatenated.
        label_lengths: the length of each label sequence, shape (N,), at least 1.
        blank: the blank class.
        reduction: "mean" (each loss divided by its label length, then averaged), "sum" or
            "none".

    Returns:
        the loss: a scalar Tensor, or one of shape (N,) for "none".

    Examples:
        >>> import numpy as np
        >>> import megengine.functional as F
        >>> pred = np.array([[[0.1, 0.9], [0.9, 0.1]], [[0.7, 0.3], [0.3, 0.7]]], "float32")
        >>> loss = F.loss.ctc_loss(pred, np.array([2, 2]), np.array([1, 1]), np.array([1, 1]))
        >>> # sample 0: -log(0.9 * 0.7 + 0.9 * 0.3 + 0.1 * 0.3); sample 1: -log(0.73); their mean
        >>> round(float(loss.numpy()), 4)
        0.1936
    """
    fname = "ctc_loss"
    p = as_tensor(pred)
    if p._dtype_name not in ("float32", "float16", "bfloat16"):
        raise MegEngineTypeError(f"{fname}: pred must be a float tensor, got dtype {p._dtype_name}")
    if p.ndim != 3:
        raise MegEngineError(f"{fname}: pred must be (T, N, C), got {p.shape}")
    steps, n, classes = p.shape
    pl_t = as_tensor(pred_lengths).astype("int32").reshape(-1)
    ll_t = as_tensor(label_lengths).astype("int32").reshape(-1)
    # Read to check them: the graph follows the tensors themselves (a concatenated label,
    # unpacked by these values, reads them again below, which a trace cannot follow).
    pl = pl_t._numpy_untraced().astype(np.int64)
    ll = ll_t._numpy_untraced().astype(np.int64)
    if pl.size != n or ll.size != n:
        raise MegEngineError(
            f"{fname}: pred_lengths {pl.size} and label_lengths {ll.size} entries must match the "
            f"batch size {n}"
        )
    if not 0 <= blank < classes:
        raise MegEngineError(f"{fname}: blank {blank} is not a class of pred's {classes}")
    if n and (pl.min() < 1 or pl.max() > steps):
        raise MegEngineError(f"{fname}: pred_lengths must lie in [1, {steps}], got {pl.tolist()}")
    if n and ll.min() < 1:
        raise MegEngineError(f"{fname}: label_lengths must be at least 1, got {ll.tolist()}")
    if reduction not in ("mean", "sum", "none"):
        raise MegEngineError(
            f"{fname}: reduction must be 'none', 'sum' or 'mean', got {reduction!r}"
        )
    lab = as_tensor(label).astype("int32")
    if lab.ndim == 1:  # concatenated: unpack into (N, max length), padded with blanks
        if lab.shape[0] != ll.sum():
            raise MegEngineError(
                f"{fname}: a concatenated label has {lab.shape[0]} entries, label_lengths sum "
                f"to {ll.sum()}"
            )
        ll = ll_t.numpy().astype(np.int64)
        width = int(ll.max())
        starts = np.concatenate([[0], np.cumsum(ll)[:-1]])
        cols = np.arange(width)
        idx = np.where(cols < ll[:, None], starts[:, None] + cols, lab.shape[0])
        padded = concat([lab, full((1,), blank, dtype="int32")])
        lab = padded[as_tensor(idx.astype(np.int32))]
    elif lab.ndim != 2 or lab.shape[0] != n:
        raise MegEngineError(f"{fname}: label must be (N, S) or concatenated, got {lab.shape}")
    elif ll.max() > lab.shape[1]:
        raise MegEngineError(
            f"{fname}: label_lengths {ll.tolist()} exceed the label's {lab.shape[1]}"
        )
    width = lab.shape[1]
    # The label with a blank before, between and after its symbols: (N, 2S + 1).
    blanks = full((n, width), blank, dtype="int32")
    ext = concat([stack([blanks, lab], axis=2).reshape(n, 2 * width), blanks[:, :1]], axis=1)
    size = 2 * width + 1
    tiny = np.finfo(np.float32).tiny
    floor = float(np.log(tiny))
    # log p of each extended symbol at each step: (T, N, L)
    index = broadcast_to(ext.reshape(1, n, size), (steps, n, size))
    logp = log(maximum(gather(p.astype("float32"), 2, index), tiny))
    # a symbol may follow the one two places back when the two differ (so not on blanks)
    skip = concat([full((n, 2), False, dtype="bool"), ext[:, 2:] != ext[:, :-2]], axis=1)
    first = as_tensor(np.broadcast_to(np.arange(size) < 2, (n, size)).copy())
    alpha = where(first, logp[0], floor)
    ends = stack([2 * ll_t, 2 * ll_t - 1], axis=1)
    last = pl_t - 1
    loss = None
    for t in range(steps):
        if t:
            # stay, or come from the previous symbol (the first position can only stay)
            moved = concat([alpha[:, :1], logaddexp(alpha[:, 1:], alpha[:, :-1])], axis=1)
            jumped = concat([moved[:, :2], logaddexp(moved[:, 2:], alpha[:, :-2])], axis=1)
            alpha = where(skip, jumped, moved) + logp[t]
        at_end = gather(alpha, 1, ends)
        step_loss = where(last == t, -logaddexp(at_end[:, 0], at_end[:, 1]), 0.0)
        loss = step_loss if loss is None else loss + step_loss
    if reduction == "none":
        return loss
    if reduction == "sum":
        return reduce(loss, "sum")
    return (loss / ll_t.astype("float32")).mean()
