"""group_start/group_end: point-to-point transfers issued between them run together.

MegEngine 1.13's semantics (its GroupCommTransformation): between ``group_start()`` and
``group_end()`` the batched point-to-point pair, ``F.distributed._remote_send_nobackward`` and
``_remote_recv_nobackward``, is only recorded; a recv returns a placeholder tensor. ``group_end``
runs the recorded transfers as one batch and gives each placeholder its received value. The
differentiable ``remote_send``/``remote_recv`` and the collectives are not part of a group: they
run at once, as in MegEngine.

A batch runs on the backend of its tensors: on GPU tensors NCCL's ``ncclGroupStart``/
``ncclGroupEnd`` around the sends and recvs, on CPU tensors Gloo with every send and recv posted
before any is waited for. Either way, transfers that one by one would wait for each other (two
ranks that each send to the other first) complete. Groups do not nest.
"""

import numpy as np

from ..tensor import Tensor
from . import group as _group

__all__ = ["group_end", "group_start"]


class _Batch:
    """The transfers recorded by an open group, in issue order."""

    def __init__(self):
        self.sends = []  # (tensor, dst, tag)
        self.recvs = []  # (shape, dtype, device, src, tag)
        self.placeholders = []  # the recvs' tensors, given their values by group_end


_open = None  # the open group's _Batch, or None


def _run(batch):
    if not batch.sends and not batch.recvs:
        return []
    comm = _group._communicator(_group.WORLD)
    return comm.send_recv(batch.sends, batch.recvs)


def _send(inp, dest_rank, tag):
    """Sends ``inp`` now, or at group_end inside a group."""
    batch = _open if _open is not None else _Batch()
    batch.sends.append((inp, dest_rank, tag))
    if batch is not _open:
        _run(batch)


def _recv(shape, dtype, device, src_rank, tag):
    """The tensor received from ``src_rank``: now, or a placeholder filled at group_end."""
    batch = _open if _open is not None else _Batch()
    batch.recvs.append((list(shape), np.dtype(dtype).name, device, src_rank, tag))
    if batch is not _open:
        return _run(batch)[0]
    placeholder = Tensor(np.zeros(shape, dtype=dtype), device=device)
    batch.placeholders.append(placeholder)
    return placeholder


def group_start() -> None:
    r"""Starts a group: the batched point-to-point transfers issued until :func:`group_end` run
    together at ``group_end``.

    Inside a group, ``F.distributed._remote_send_nobackward`` and ``_remote_recv_nobackward``
    are recorded instead of run; a recv returns a placeholder tensor (zeros of the given shape
    and dtype) that receives its value at ``group_end``. So two ranks can each send to the other
    and receive in either order without waiting for each other. Other calls run at once.

    Returns:
        None. Raises RuntimeError when a group is already open (groups do not nest).

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.group_start()
        >>> dist.group_end()  # nothing was recorded: nothing to run
    """
    global _open
    if _open is not None:
        raise RuntimeError(
            "group_start: a group is already open (groups do not nest); call group_end first"
        )
    _open = _Batch()


def group_end() -> None:
    r"""Ends the group opened by :func:`group_start`: runs the sends and recvs recorded since,
    together (NCCL's group calls on GPU tensors, Gloo on CPU tensors), and gives each recv's
    placeholder its received value.

    Returns:
        None. Raises RuntimeError without an open group; a failed transfer raises
        ``CommError`` (the group is closed either way).

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.group_start()
        >>> dist.group_end()
        >>> try:
        ...     dist.group_end()
        ... except RuntimeError as e:
        ...     print(e)
        group_end: no group is open (call group_start first)
    """
    global _open
    if _open is None:
        raise RuntimeError("group_end: no group is open (call group_start first)")
    batch, _open = _open, None
    for placeholder, value in zip(batch.placeholders, _run(batch)):
        placeholder._reset(value)
