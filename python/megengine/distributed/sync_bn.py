"""sync_batch_norm: batch normalisation whose statistics are those of the whole group's batch.

Each rank sums x and x*x per channel; one differentiable all-reduce (``all_reduce_sum``, whose
backward all-reduces the gradients) of the rank's element count and both sums (one vector of
2C + 1 values, as MegEngine's) gives the group's, so the output and its gradient are those of
batch normalisation on the ranks' batches concatenated. Every step is an op of the eager
runtime, the count included, and the running statistics are updated with ``Tensor._reset``: a
``jit.trace`` records the whole of it (the all-reduce as the graph's collective, the updates as
outputs written back on every call).
"""

import numpy as np

from ..tensor import Tensor
from .functional import _as_group, all_reduce_sum
from .group import is_distributed


def sync_batch_norm_impl(
    inp,
    running_mean,
    running_var,
    weight,
    bias,
    training,
    momentum,
    eps,
    eps_mode,
    group,
    batch_norm,
):
    """F.nn.sync_batch_norm's work (see its docstring); ``batch_norm`` is F.nn.batch_norm."""
    mode = eps_mode.lower() if isinstance(eps_mode, str) else eps_mode
    if mode not in ("max", "additive"):
        raise ValueError(f"sync_batch_norm: unknown eps_mode {eps_mode!r} (max or additive)")
    distributed = is_distributed() and training
    if mode == "additive" and not distributed:
        return batch_norm(
            inp,
            running_mean,
            running_var,
            weight,
            bias,
            training=training,
            momentum=momentum,
            eps=eps,
        )
    if not isinstance(inp, Tensor) or inp.ndim < 2:
        raise ValueError("sync_batch_norm: inp must be a Tensor of shape (N, C, ...)")
    c = inp.shape[1]
    cshape = (1, c) + (1,) * (inp.ndim - 2)
    axes = [0] + list(range(2, inp.ndim))
    if training:
        n = inp.size // c
        # 16-bit inputs sum in float32: float16 holds neither a count above 65504 nor the sums
        # of a large batch.
        low = inp._dtype_name in ("float16", "bfloat16")
        xs = inp.astype("float32") if low else inp
        stats = (xs.sum(axis=axes, keepdims=True), (xs * xs).sum(axis=axes, keepdims=True))
        if distributed:
            # The group's element count travels with the sums: ranks may hold batches of other
            # sizes, and the count stays an op's value (not a host number a trace would fix).
            both = all_reduce_sum(_stack(n, stats, c, xs), _as_group(group))
            n = both[0]
            stats = (both[1 : 1 + c].reshape(cshape), both[1 + c :].reshape(cshape))
        mean = stats[0] / n
        var = stats[1] / n - mean * mean
        if low:
            mean, var = mean.astype(inp._dtype_name), var.astype(inp._dtype_name)
    else:
        if running_mean is None or running_var is None:
            raise ValueError("sync_batch_norm: inference needs running_mean and running_var")
        mean, var = running_mean.reshape(cshape), running_var.reshape(cshape)
    denom = var + eps if mode == "additive" else _maximum(var, eps)
    out = (inp - mean) / denom**0.5
    if weight is not None:
        out = out * weight.reshape(cshape)
    if bias is not None:
        out = out + bias.reshape(cshape)
    if training and running_mean is not None and running_var is not None:
        unbiased = var.detach() * _unbias_factor(n)
        running_mean._reset(
            running_mean * momentum + mean.detach().reshape(running_mean.shape) * (1 - momentum)
        )
        running_var._reset(
            running_var * momentum + unbiased.reshape(running_var.shape) * (1 - momentum)
        )
    return out


def _stack(n, stats, c, like):
    """[n, sum x (C values), sum x*x (C values)] in ``like``'s dtype and device."""
    from ..functional.tensor import concat

    count = Tensor(np.array([n], dtype=like.dtype), device=like.device)
    return concat([count, stats[0].reshape(c), stats[1].reshape(c)])


def _unbias_factor(n):
    """n / (n - 1), Bessel's correction (1 for a single value), of an int or a count Tensor."""
    if isinstance(n, Tensor):
        return n / _maximum(n - 1, 1)
    return n / max(n - 1, 1)


def _maximum(var, eps):
    from ..functional.elemwise import maximum

    return maximum(var, eps)
