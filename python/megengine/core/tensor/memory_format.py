"""Channels-last tensors: the layout behind ``Tensor.format == "nhwc"``.

A channels-last tensor keeps its logical NCHW (NCDHW) shape; its memory is NHWC (NDHWC), the
channel stride 1 (as PyTorch's ``channels_last``; ``dnn/include/neomeg/dnn/channels_last.h``).
Convolutions, pooling, batch norm, elementwise ops and dtype casts give channels-last outputs for
channels-last inputs (their definitions' ``layout_follows``), so the x86 backend's oneDNN kernels
run on nhwc memory without converting between them; every other op reads any layout.
"""

from .. import _imperative_rt as _rt
from ..ops import builtin
from .array_method import cached_op, transpose

_TO_LAST = {4: (0, 2, 3, 1), 5: (0, 2, 3, 4, 1)}
_FROM_LAST = {4: (0, 3, 1, 2), 5: (0, 4, 1, 2, 3)}


def _relayout(x):
    return _rt.apply(cached_op(builtin.Relayout), x)[0]


def to_channels_last(x):
    """A channels-last copy of the 4-D or 5-D tensor ``x`` (differentiable); ``x`` itself when
    it already is one. Raises ValueError for another rank. An (N, 1, 1, 1) tensor stays as it
    is: both layouts are the same memory, and its format stays ``"default"``.

    Args:
        x: the tensor.

    Returns:
        the channels-last tensor.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.memory_format import to_channels_last
        >>> x = mge.Tensor(np.arange(24, dtype="float32").reshape(1, 2, 3, 4))
        >>> y = to_channels_last(x)
        >>> y.format, y.shape, bool((y.numpy() == x.numpy()).all())
        ('nhwc', (1, 2, 3, 4), True)
    """
    if x.ndim not in _TO_LAST:
        raise ValueError(f"channels-last needs a 4-D or 5-D tensor, got shape {x.shape}")
    if x._channels_last:
        return x
    # The NHWC-ordered view made dense, seen again in NCHW order: channels-last strides.
    return transpose(_relayout(transpose(x, _TO_LAST[x.ndim])), _FROM_LAST[x.ndim])


def to_contiguous(x):
    """``x`` with its default (row-major) layout: a differentiable copy of a channels-last
    tensor, ``x`` itself otherwise.

    Args:
        x: the tensor.

    Returns:
        the row-major tensor.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.memory_format import to_channels_last, to_contiguous
        >>> x = to_channels_last(mge.Tensor(np.ones((1, 2, 3, 4), "float32")))
        >>> to_contiguous(x).format
        'default'
    """
    return _relayout(x) if x._channels_last else x
