"""MegEngine's parameter packing helpers (``megengine.distributed.helper``): many tensors as one
flat tensor at given offsets and back, and a packed all-reduce of gradients. MegEngine runs them
as its ParamPackConcat/ParamPackSplit ops; here they are reshapes, slices and a concat."""

import warnings

import numpy as np

from ..device import get_device_count
from ..tensor import Tensor
from .functional import all_reduce_sum

__all__ = [
    "get_device_count_by_fork",
    "get_offsets",
    "pack_allreduce_split",
    "param_pack_concat",
    "param_pack_split",
]


def _pairs(offsets, n, fn):
    offsets = [int(o) for o in offsets]
    if len(offsets) != 2 * n:
        raise ValueError(f"{fn}: {n} tensors need {2 * n} offsets, got {len(offsets)}")
    pairs = list(zip(offsets[0::2], offsets[1::2]))
    last = 0
    for begin, end in pairs:
        if begin < last or end < begin:
            raise ValueError(f"{fn}: offsets must not decrease, got {offsets}")
        last = end
    return pairs


def get_offsets(shapes):
    r"""The offsets of tensors of ``shapes`` packed one after the other.

    Args:
        shapes: the tensors' shapes.

    Returns:
        ``[begin0, end0, begin1, end1, ...]`` in elements.

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.helper.get_offsets([(), (3, 3), (2,)])
        [0, 1, 1, 10, 10, 12]
    """
    offsets = []
    offset = 0
    for shape in shapes:
        offsets.append(offset)
        offset += int(np.prod(shape))
        offsets.append(offset)
    return offsets


def param_pack_split(inp: Tensor, offsets: list, shapes: list):
    r"""Returns split tensor to list of tensors as offsets and shapes described,
    only used for ``parampack``.

    Args:
        inp: input tensor.
        offsets: offsets of outputs, length of ``2 * n``,
            where ``n`` is the number of tensor you want to split,
            format ``[begin0, end0, begin1, end1]``.
        shapes: tensor shapes of outputs (a scalar's ``()`` gives shape ``(1,)``, as in
            MegEngine).

    Returns:
        splitted tensors.

    Examples:
        >>> import megengine.functional as F
        >>> import megengine.distributed as dist
        >>> b, c = dist.helper.param_pack_split(F.arange(10), [0, 1, 1, 10], [(), (3, 3)])
        >>> b.numpy(), c.numpy()[2]
        (array([0.], dtype=float32), array([7., 8., 9.], dtype=float32))
    """
    shapes = [tuple(s) or (1,) for s in shapes]
    pairs = _pairs(offsets, len(shapes), "param_pack_split")
    flat = inp.reshape(-1)
    if pairs and pairs[-1][1] > flat.shape[0]:
        raise ValueError(
            f"param_pack_split: offsets reach {pairs[-1][1]}, the input has {flat.shape[0]}"
        )
    out = []
    for (begin, end), shape in zip(pairs, shapes):
        if end - begin != int(np.prod(shape)):
            raise ValueError(
                f"param_pack_split: [{begin}, {end}) holds {end - begin} elements, shape "
                f"{shape} needs {int(np.prod(shape))}"
            )
        out.append(flat[begin:end].reshape(shape))
    return out


def param_pack_concat(inps: list, offsets: Tensor, offsets_val: list):
    r"""Returns concated tensor, only used for ``parampack``.

    Args:
        inps: list of input tensors.
        offsets: device value of offsets (MegEngine's op reads it; here ``offsets_val`` says
            all).
        offsets_val: offsets of inputs, length of ``2 * n``, format
            ``[begin0, end0, begin1, end1]``; gaps between them are zeros.

    Returns:
        concated tensor.

    Examples:
        >>> import megengine.functional as F
        >>> import megengine.distributed as dist
        >>> from megengine import Tensor
        >>> c = dist.helper.param_pack_concat([F.ones(1), F.ones((3, 3)) * 2], Tensor([0, 1, 1, 10]), [0, 1, 1, 10])
        >>> c.numpy()
        array([1., 2., 2., 2., 2., 2., 2., 2., 2., 2.], dtype=float32)
    """
    from ..functional import concat, zeros  # not at import: functional imports this package

    if not inps:
        raise ValueError("param_pack_concat: no tensors to pack")
    pairs = _pairs(offsets_val, len(inps), "param_pack_concat")
    parts, last = [], 0
    for inp, (begin, end) in zip(inps, pairs):
        size = int(np.prod(inp.shape))
        if end - begin != size:
            raise ValueError(
                f"param_pack_concat: [{begin}, {end}) holds {end - begin} elements, a tensor of "
                f"shape {tuple(inp.shape)} has {size}"
            )
        if begin > last:
            parts.append(zeros((begin - last,), dtype=inp.dtype, device=inp.device))
        parts.append(inp.reshape(-1))
        last = end
    return concat(parts)


def pack_allreduce_split(pack_list, shapes, group, reduce_method):
    r"""All-reduces ``pack_list`` as one packed tensor and splits the result back.

    Args:
        pack_list: the tensors (one dtype), the same shapes on every rank.
        shapes: their shapes.
        group: the process group.
        reduce_method: ``"sum"`` or ``"mean"``.

    Returns:
        the reduced tensors, in ``shapes``.

    Examples:
        >>> import megengine.distributed as dist
        >>> callable(dist.helper.pack_allreduce_split)
        True
    """
    if reduce_method not in ("sum", "mean"):
        raise ValueError(f"pack_allreduce_split: reduce_method is sum or mean, got {reduce_method}")
    offsets_val = get_offsets(shapes)
    packed = param_pack_concat(pack_list, Tensor(offsets_val), offsets_val)
    packed = all_reduce_sum(packed, group)
    if reduce_method == "mean":
        packed = packed / group.size
    return param_pack_split(packed, offsets_val, shapes)


def get_device_count_by_fork(device_type: str):
    r"""Deprecated since MegEngine 1.5: use :func:`megengine.device.get_device_count`.

    Args:
        device_type: ``"gpu"`` or ``"cpu"``.

    Returns:
        the number of such devices.

    Examples:
        >>> import warnings
        >>> import megengine.distributed as dist
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     dist.helper.get_device_count_by_fork("cpu") >= 1
        True
    """
    warnings.warn(
        "Call to deprecated function get_device_count. (use megengine.device.get_device_count "
        "instead) -- Deprecated since version 1.5.",
        category=DeprecationWarning,
        stacklevel=2,
    )
    return get_device_count(device_type)
