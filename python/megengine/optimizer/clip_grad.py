"""Gradient clipping: ``clip_grad_norm`` and ``clip_grad_value``."""

import math

from ..tensor import Tensor


def _with_grads(tensors, fn):
    if isinstance(tensors, Tensor):
        tensors = [tensors]
    out = []
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"{fn} expects Tensors, got {type(t).__name__}")
        if t.grad is not None:
            out.append(t)
    return out


def clip_grad_norm(tensors, max_norm, ord=2.0):
    r"""Scales the gradients of ``tensors`` so that their joint norm is at most ``max_norm``.

    The joint norm is the ``ord``-norm of all gradients flattened into one vector; when it
    exceeds ``max_norm`` every gradient is multiplied by ``max_norm / (norm + 1e-6)``.

    Args:
        tensors: a Tensor or an iterable of Tensors; those without a gradient are skipped.
        max_norm: the largest norm allowed.
        ord: order of the norm (a positive number or ``inf``).

    Returns:
        the joint norm of the gradients before clipping, as a 0-d Tensor.

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([0.0, 0.0])
        >>> w.grad = mge.Tensor([3.0, 4.0])
        >>> optim.clip_grad_norm(w, max_norm=1.0).item()
        5.0
        >>> [round(x, 4) for x in w.grad.numpy().tolist()]
        [0.6, 0.8]
    """
    if not isinstance(ord, (int, float)) or isinstance(ord, bool) or not ord > 0:
        raise ValueError(f"clip_grad_norm: ord must be a positive number or inf, got {ord!r}")
    if not isinstance(max_norm, (int, float)) or max_norm < 0:
        raise ValueError(f"clip_grad_norm: max_norm must be >= 0, got {max_norm!r}")
    from ..functional import maximum, minimum

    tensors = _with_grads(tensors, "clip_grad_norm")
    if not tensors:
        return Tensor(0.0)
    total = None
    for t in tensors:
        a = abs(t.grad.detach().astype("float32"))
        if math.isinf(ord):
            part = a.max() if a.size else Tensor(0.0, device=a.device)
            total = part if total is None else maximum(total, part)
        else:
            part = (a**ord).sum()
            total = part if total is None else total + part
    if not math.isinf(ord):
        total = total ** (1.0 / ord)
    scale = max_norm / (total + 1e-6)
    scale = minimum(scale, 1.0)
    for t in tensors:
        t.grad._reset(t.grad * scale.astype(t.grad._dtype_name))
    return total


def clip_grad_value(tensors, lower, upper):
    r"""Clips the gradients of ``tensors`` element by element into ``[lower, upper]``.

    Args:
        tensors: a Tensor or an iterable of Tensors; those without a gradient are skipped.
        lower: the smallest value allowed.
        upper: the largest value allowed.

    Returns:
        None

    Examples:
        >>> import megengine as mge
        >>> import megengine.optimizer as optim
        >>> w = mge.Parameter([0.0, 0.0, 0.0])
        >>> w.grad = mge.Tensor([-3.0, 0.5, 4.0])
        >>> optim.clip_grad_value(w, lower=-1.0, upper=1.0)
        >>> w.grad.numpy().tolist()
        [-1.0, 0.5, 1.0]
    """
    if lower > upper:
        raise ValueError(f"clip_grad_value: lower ({lower}) is greater than upper ({upper})")
    from ..functional import clip

    for t in _with_grads(tensors, "clip_grad_value"):
        t.grad._reset(clip(t.grad, lower, upper))
