"""Loss functions (``F.nn.cross_entropy``, ``F.loss.l1_loss``, ...), built from Elemwise,
Reduce and the functions of ``nn.py``, so every one is differentiable."""

from ..core.tensor.array_method import as_tensor, elemwise, reduce

__all__ = ["binary_cross_entropy", "cross_entropy", "hinge_loss", "l1_loss", "square_loss"]


def _reduce_output(loss, reduction, fname):
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return reduce(loss, "sum")
    if reduction == "none":
        return loss
    raise ValueError(f"{fname}: reduction must be 'none', 'sum' or 'mean', got {reduction!r}")


def _pair(pred, label, fname):
    p, y = as_tensor(pred), as_tensor(label)
    if p._dtype_name not in ("float32", "float16", "bfloat16"):
        raise TypeError(f"{fname}: pred must be a float tensor, got dtype {p._dtype_name}")
    if p.shape != y.shape:
        raise ValueError(f"{fname}: pred {p.shape} and label {y.shape} must have the same shape")
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
    y = y.astype(p._dtype_name)
    if with_logits:
        loss = -(y * elemwise("LOGSIGMOID", p) + (1 - y) * elemwise("LOGSIGMOID", -p))
    else:
        loss = -(y * elemwise("LOG", p) + (1 - y) * elemwise("LOG", 1 - p))
    return _reduce_output(loss, reduction, fname)


def cross_entropy(pred, label, axis=1, with_logits=True, label_smooth=0, reduction="mean"):
    """Cross entropy of class scores against integer labels:
    ``-logsoftmax(pred)[label]`` along ``axis`` when with_logits, ``-log(pred[label])`` for
    probabilities otherwise. With label smoothing ``s`` over ``C`` classes the target
    distribution is ``(1 - s) * one_hot(label) + s / C``.

    Args:
        pred: scores of shape (N, C, ...) with the classes along ``axis``.
        label: integer labels of pred's shape without ``axis``, values in [0, C).
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
    from . import nn as _nn  # here: nn imports this module

    fname = "cross_entropy"
    p = as_tensor(pred)
    y = as_tensor(label)
    if p._dtype_name not in ("float32", "float16", "bfloat16"):
        raise TypeError(f"{fname}: pred must be a float tensor, got dtype {p._dtype_name}")
    if y._dtype_name not in ("int8", "uint8", "int16", "int32"):
        raise TypeError(f"{fname}: label must be an integer tensor, got dtype {y._dtype_name}")
    if p.ndim < 1:
        raise ValueError(f"{fname}: pred must have a class axis, got shape {p.shape}")
    axis = _nn._norm_axis(axis, p.ndim, fname)
    expect = p.shape[:axis] + p.shape[axis + 1 :]
    if y.shape != expect:
        raise ValueError(
            f"{fname}: label {y.shape} must have pred {p.shape} without axis {axis}: {expect}"
        )
    if label_smooth is None:
        label_smooth = 0
    if not 0 <= label_smooth <= 1:
        raise ValueError(f"{fname}: label_smooth must be in [0, 1], got {label_smooth}")
    num_classes = p.shape[axis]
    # log-probabilities: LogSoftmax (one kernel, no overflow) for logits, log for probabilities
    logp = _nn.logsoftmax(p, axis) if with_logits else elemwise("LOG", p)
    loss = -_nn.indexing_one_hot(logp, y, axis)
    if label_smooth:
        # -sum(target * logp) with target = (1 - s) * one_hot + s / C
        smooth = reduce(logp, "sum", axis) * (label_smooth / num_classes)
        loss = loss * (1 - label_smooth) - smooth
    return _reduce_output(loss, reduction, fname)


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
        raise ValueError(f"{fname}: pred must be 2-D (N, C), got {p.shape}")
    if str(norm).upper() not in ("L1", "L2"):
        raise ValueError(f"{fname}: norm must be 'L1' or 'L2', got {norm!r}")
    margin = elemwise("RELU", 1 - p * y.astype(p._dtype_name))
    if str(norm).upper() == "L2":
        margin = elemwise("SQUARE", margin)
    return _reduce_output(reduce(margin, "sum", 1), reduction, fname)
