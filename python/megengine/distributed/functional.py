"""Collectives on tensors (``megengine.distributed.functional``, also ``F.distributed``).

Each is an op of the eager runtime, which ``jit.trace`` compiles into its graph (a traced function
runs the collective on every call), and whose backward runs the adjoint collective: all-reduce-sum
is its own adjoint, all-gather and reduce-scatter are each other's, so are broadcast and reduce,
gather and scatter, send and recv; all-to-all's adjoint is all-to-all. Max and min pass the
summed gradient to the ranks that hold the extreme value. A rank whose input is only a stand-in
(a broadcast's or scatter's non-root, a receiver) attaches it to the recording GradManagers, so
that its backward runs together with the other ranks'; a rank that gets no result (reduce_sum's
and gather's non-roots, a sender) adds the hidden output to the managers' backward roots.

The Gloo backend works on CPU tensors; inputs may be non-contiguous. Outputs stay on the
input's device (``device`` chooses a GPU stream in MegEngine and is accepted for that API).
"""

from typing import ClassVar

import numpy as np

from ..autodiff import grad_manager as _gm
from ..core import _imperative_rt as _rt
from ..device import get_default_device
from ..tensor import Tensor
from . import group as _group
from . import group_comm as _group_comm
from .group import WORLD, Group, get_client, get_rank, new_group

__all__ = [
    "all_gather",
    "all_reduce_max",
    "all_reduce_min",
    "all_reduce_sum",
    "all_to_all",
    "broadcast",
    "gather",
    "reduce_scatter_sum",
    "reduce_sum",
    "remote_recv",
    "remote_send",
    "scatter",
]


def _as_group(group):
    if group is None:
        return WORLD
    if isinstance(group, Group):
        return group
    if isinstance(group, (list, tuple)):
        return new_group(list(group))
    raise TypeError(f"expected a Group or a list of ranks, got {type(group).__name__}")


def _comm(group):
    # A collective called on the communicator directly (not through apply) would give a trace a
    # result with no op behind it, which the graph would keep as a constant: a recording that
    # meets one ends, and the traced function runs eagerly (the collective with it) on every
    # call. The collectives' ops (_graph_comm) are what a graph can hold.
    _rt._trace_fail(
        "this megengine.distributed call runs only eagerly (a traced graph holds the "
        "F.distributed collectives, bcast_list_, SyncBatchNorm and make_allreduce_cb's "
        "all-reduces, which go through their ops)"
    )
    return _group._communicator(group)


def _graph_comm(group):
    """The communicator, for its ops (all_reduce_op, collective_op, collective), which traced
    graphs hold and run."""
    return _group._communicator(group)


def _check_tensor(inp, fn):
    if not isinstance(inp, Tensor):
        raise TypeError(f"{fn}: expected a Tensor, got {type(inp).__name__}")


def _recording_keys():
    return [gm._key for gm in list(_gm._recording) if gm._key is not None]


def _is_tracked(t):
    return any(key.is_attached(t) for key in _recording_keys())


def _track(t):
    # A stand-in input: recorded like the root's real one, so this rank's backward runs too.
    for key in _recording_keys():
        key.attach(t)


def _keep_for_backward(out):
    # An output this rank does not get: backward starts from it with a zero gradient.
    if not _is_tracked(out):
        return
    zeros = Tensor(np.zeros(out.shape, dtype=out.dtype), device=out.device)
    for gm in list(_gm._recording):
        if gm._key is not None and gm._key.is_attached(out):
            gm._extra_roots.append((out, zeros))


def _zeros(shape, dtype, device):
    return Tensor(np.zeros(shape, dtype=dtype), device=device)


def _bcast_meta(group, inp, fn):
    """The root's shape, dtype and whether its input is tracked, sent to the group's members."""
    if group.rank == 0:
        _check_tensor(inp, fn)
        meta = {"shape": list(inp.shape), "dtype": np.dtype(inp.dtype).name}
        meta["grad"] = _is_tracked(inp)
        if group.size > 1:
            get_client().bcast_val(meta, "__meta/" + group.key, group.size)
        return meta
    return get_client().bcast_val(
        None, "__meta/" + group.key, group.size, source=group.proc_ranks[0]
    )


def _stand_in(meta, device):
    t = _zeros(tuple(meta["shape"]), meta["dtype"], device)
    if meta["grad"]:
        _track(t)
    return t


def _split_to_front(inp, axis, size):
    """Reorders ``inp`` so that the ``size`` parts of ``axis`` follow each other along axis 0."""
    shape = list(inp.shape)
    if shape[axis] % size:
        raise ValueError(f"current axis: {axis} can't devided by group size {size}")
    if axis == 0:
        return inp
    new_shape = shape[:axis] + [size, shape[axis] // size] + shape[axis + 1 :]
    order = [axis] + list(range(axis)) + list(range(axis + 1, len(shape) + 1))
    front = [size * shape[0]] + shape[1:]
    front[axis] //= size
    return inp.reshape(new_shape).transpose(order).reshape(front)


def _split_parts(inp, axis, size, name):
    """``inp`` reordered by :func:`_split_to_front`, and the shape of each of its ``size`` parts."""
    if inp.ndim == 0:
        raise ValueError(f"{name}: a scalar cannot be split")
    front = _split_to_front(inp, axis, size)
    part = list(inp.shape)
    part[axis] //= size
    return front, part


def _concat_from_front(out, axis, size, part_shape):
    """Undoes the stacking along axis 0: the ``size`` parts are concatenated along ``axis``."""
    if axis == 0:
        return out
    part = list(part_shape)
    order = list(range(1, axis + 1)) + [0] + list(range(axis + 1, len(part) + 1))
    final = list(part)
    final[axis] *= size
    return out.reshape([size] + part).transpose(order).reshape(final)


def _collective(group, inp, kind):
    # An op of the eager runtime with its adjoint as backward, which jit.trace compiles; the
    # group's first rank is the root.
    return _graph_comm(group).collective(inp, kind, 0)


def _all_reduce(inp, group, op, fn):
    _check_tensor(inp, fn)
    # An op of the eager runtime (differentiable: sum is its own adjoint; max and min pass the
    # summed gradient to the ranks that held the extreme), so that jit.trace compiles it.
    return _graph_comm(_as_group(group)).all_reduce_op(inp, op)


def all_reduce_sum(inp: Tensor, group: Group | None = WORLD, device: str | None = None) -> Tensor:
    r"""Reduce tensors with sum operation on each value across the specified group.

    Note:
        ``inp`` tensor must have identical shape in all processes across the group.

    Args:
        inp: tensor to be reduced.
        group: the process group (or a list of ranks) to work on. Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.

    Returns:
        A tensor with sum operation on each value across the group, identical on every rank.

    Examples:
        >>> # on ranks 0 and 1: input = F.arange(2) + 1 + 2 * rank
        >>> # F.distributed.all_reduce_sum(input) -> Tensor([4. 6.]) on both
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.all_reduce_sum)
        True
    """
    return _all_reduce(inp, group, "sum", "all_reduce_sum")


def all_reduce_max(inp: Tensor, group: Group | None = WORLD, device: str | None = None) -> Tensor:
    r"""Reduce tensors with max operation on each value across the specified group.

    Args:
        inp: tensor to be reduced (identical shape on every rank).
        group: the process group (or a list of ranks) to work on. Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.

    Returns:
        A tensor with max operation on each value across the group. The gradient reaches the
        ranks whose value is the maximum.

    Examples:
        >>> # on ranks 0 and 1: input = F.arange(2) + 1 + 2 * rank
        >>> # F.distributed.all_reduce_max(input) -> Tensor([3. 4.]) on both
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.all_reduce_max)
        True
    """
    return _all_reduce(inp, group, "max", "all_reduce_max")


def all_reduce_min(inp: Tensor, group: Group | None = WORLD, device: str | None = None) -> Tensor:
    r"""Reduce tensors with min operation on each value across the specified group.

    Args:
        inp: tensor to be reduced (identical shape on every rank).
        group: the process group (or a list of ranks) to work on. Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.

    Returns:
        A tensor with min operation on each value across the group.

    Examples:
        >>> # on ranks 0 and 1: input = F.arange(2) + 1 + 2 * rank
        >>> # F.distributed.all_reduce_min(input) -> Tensor([1. 2.]) on both
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.all_reduce_min)
        True
    """
    return _all_reduce(inp, group, "min", "all_reduce_min")


def reduce_sum(inp: Tensor, group: Group | None = WORLD, device: str | None = None) -> Tensor:
    r"""Reduce tensor data across the specified group by sum.
    Only root process will receive the final result.

    Args:
        inp: Input tensor.
        group: The process group to work on (the first rank is the root). Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.

    Returns:
        Reduced tensor if in root process, None in other processes.

    Examples:
        >>> # input = Tensor([rank]) on ranks 0 and 1
        >>> # reduce_sum(input) -> Tensor([1]) on rank 0, None on rank 1
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.reduce_sum)
        True
    """
    _check_tensor(inp, "reduce_sum")
    group = _as_group(group)
    # Every rank gets an output (zeros off the root), so every rank's traced graph holds the op.
    out = _collective(group, inp, "reduce_sum")
    if group.rank == 0:
        return out
    _keep_for_backward(out)
    return None


def broadcast(inp: Tensor, group: Group | None = WORLD, device: str | None = None) -> Tensor:
    r"""Broadcast tensor data from root process to others.

    Args:
        inp: Input tensor (read on the root only; other ranks may pass anything).
        group: The process group to work on (the first rank is the root). Default: ``WORLD``.
        device: the device of the other ranks' results (the root's stays on its input's);
            the default device when None. MegEngine puts every rank's result there.

    Returns:
        Result tensor.

    Examples:
        >>> # input = Tensor([rank]) on ranks 0 and 1
        >>> # broadcast(input) -> Tensor([0]) on both
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.broadcast)
        True
    """
    group = _as_group(group)
    meta = _bcast_meta(group, inp, "broadcast")
    if group.rank != 0:
        inp = _stand_in(meta, device)
    return _collective(group, inp, "broadcast")


def _bcast_param(inp: Tensor, group: Group | None = WORLD, device=None) -> Tensor:
    # The root's values without autograd (bcast_list_ and optimizers copy the root's
    # parameters), through the Broadcast op, so that a trace holds it and runs it on every call.
    _check_tensor(inp, "bcast_list_")
    return _collective(_as_group(group), inp.detach(), "broadcast")


def all_gather(
    inp: Tensor, group: Group | None = WORLD, device: str | None = None, axis=0
) -> Tensor:
    r"""Gather tensors across the specified group and concat them at ``axis``.

    Args:
        inp: Input tensor (identical shape on every rank).
        group: The process group to work on. Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.
        axis: The concat axis for collective_comm result. The default axis is 0.

    Returns:
        Result tensor.

    Examples:
        >>> # input = Tensor([rank]) on ranks 0 and 1
        >>> # all_gather(input) -> Tensor([0 1]) on both
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.all_gather)
        True
    """
    _check_tensor(inp, "all_gather")
    group = _as_group(group)
    if inp.ndim == 0 and axis != 0:
        raise ValueError("all_gather: a scalar gathers along axis 0 only")
    # An op of the eager runtime (its adjoint: reduce-scatter), so that jit.trace compiles it.
    out = _graph_comm(group).collective_op(inp, "all_gather")
    return _concat_from_front(out, axis, group.size, inp.shape) if inp.ndim else out


def reduce_scatter_sum(
    inp: Tensor, group: Group | None = WORLD, device: str | None = None, axis=0
) -> Tensor:
    r"""Reduce tensors across the specified group by sum and split them at ``axis``.

    Args:
        inp: Input tensor (identical shape on every rank; ``axis`` divisible by the group size).
        group: The process group to work on. Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.
        axis: The split axis for collective_comm result. The default axis is 0.

    Returns:
        Split tensor: this rank's part of the sum.

    Examples:
        >>> # input = Tensor([0 1]) on ranks 0 and 1
        >>> # reduce_scatter_sum(input) -> Tensor([0]) on rank 0, Tensor([2]) on rank 1
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.reduce_scatter_sum)
        True
    """
    _check_tensor(inp, "reduce_scatter_sum")
    group = _as_group(group)
    front, part = _split_parts(inp, axis, group.size, "reduce_scatter_sum")
    # An op of the eager runtime (its adjoint: all-gather), so that jit.trace compiles it.
    out = _graph_comm(group).collective_op(front, "reduce_scatter_sum")
    return out.reshape(part) if axis else out


def gather(inp: Tensor, group: Group | None = WORLD, device: str | None = None, axis=0) -> Tensor:
    r"""Gather tensors across the specified group.
    Only root process will receive the final result.

    Args:
        inp: Input tensor (identical shape on every rank).
        group: The process group to work on (the first rank is the root). Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.
        axis: The concat axis for collective_comm result.

    Returns:
        The concatenation on the root, None on the other ranks.

    Examples:
        >>> # input = Tensor([rank]) on ranks 0 and 1
        >>> # gather(input) -> Tensor([0 1]) on rank 0, None on rank 1
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.gather)
        True
    """
    _check_tensor(inp, "gather")
    group = _as_group(group)
    if inp.ndim == 0:
        inp = inp.reshape(1)
    if not 0 <= axis < inp.ndim:
        raise ValueError(
            f"your concat_axis exceeds the dim of the tensor, the tensor shape is {inp.shape}"
        )
    out = _collective(group, inp, "gather")
    if group.rank == 0:
        return _concat_from_front(out, axis, group.size, inp.shape)
    _keep_for_backward(out)
    return None


def scatter(inp: Tensor, group: Group | None = WORLD, device: str | None = None, axis=0) -> Tensor:
    r"""Split tensor in root process at ``axis``: rank r of the group receives part r.

    Args:
        inp: Input tensor (read on the root only).
        group: The process group to work on (the first rank is the root). Default: ``WORLD``.
        device: the device of the other ranks' results (the root's stays on its input's);
            the default device when None. MegEngine puts every rank's result there.
        axis: The split axis. The default axis is 0.

    Returns:
        Split tensor.

    Examples:
        >>> # input = Tensor([0 1]) + rank * 2 on ranks 0 and 1
        >>> # scatter(input) -> Tensor([0]) on rank 0, Tensor([1]) on rank 1
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.scatter)
        True
    """
    group = _as_group(group)
    meta = _bcast_meta(group, inp, "scatter")
    if group.rank != 0:
        inp = _stand_in(meta, device)
    front, part = _split_parts(inp, axis, group.size, "scatter")
    out = _collective(group, front, "scatter")
    return out.reshape(part) if axis else out


def all_to_all(
    inp: Tensor,
    group: Group | None = WORLD,
    device: str | None = None,
    split_axis: int = 0,
    concat_axis: int = 0,
) -> Tensor:
    r"""Each process scatter input tensor to all processes and return gathered tensor.

    Args:
        inp: Input tensor (identical shape on every rank).
        group: The process group to work on. Default: ``WORLD``.
        device: accepted for MegEngine's API; the result stays on ``inp``'s device.
        split_axis: The axis that collectivecomm will split data; the default axis is 0.
        concat_axis: The axis the received parts are concatenated along; 0 by default.

    Returns:
        Result tensor.

    Examples:
        >>> # input = Tensor([0 1]) + rank * 2 on ranks 0 and 1
        >>> # all_to_all(input) -> Tensor([0 2]) on rank 0, Tensor([1 3]) on rank 1
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.all_to_all)
        True
    """
    _check_tensor(inp, "all_to_all")
    group = _as_group(group)
    front, part = _split_parts(inp, split_axis, group.size, "all_to_all")
    out = _collective(group, front, "all_to_all")
    return _concat_from_front(out, concat_axis, group.size, part)


_BATCHED_TAG = 1 << 31


class _SendRecvGroup:
    """The pair of a send and its recv: its messages are numbered in call order."""

    counters: ClassVar[dict] = {}

    def __init__(self, rank_from, rank_to, batched=False):
        # MegEngine's keys: the batched pair (no backward, group_start/group_end) is "b0->1".
        self.key = f"{'b' if batched else ''}{rank_from}->{rank_to}"
        self.batched = batched
        self.rank_from = rank_from
        self.rank_to = rank_to
        self.size = 2

    def next_tag(self):
        tag = _SendRecvGroup.counters.get(self.key, 0)
        _SendRecvGroup.counters[self.key] = tag + 1
        if self.batched:  # a tag space of its own: never a differentiable pair's message
            return _BATCHED_TAG | (tag & (_BATCHED_TAG - 1))
        # Gradients travel back under the same number in the reverse direction's space.
        return tag * 2

    @property
    def rank(self):
        return 0 if get_rank() == self.rank_from else 1


def remote_send(inp: Tensor, dest_rank: int):
    r"""Send tensor to another process (sends pair with ``remote_recv`` calls in order).

    Args:
        inp: Tensor to send.
        dest_rank: Rank of destination process.

    Returns:
        None.

    Examples:
        >>> # rank 0: F.distributed.remote_send(mge.tensor(1), 1)
        >>> # rank 1: F.distributed.remote_recv(0) -> Tensor(1)
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.remote_send)
        True
    """
    _check_tensor(inp, "remote_send")
    if dest_rank == get_rank():
        raise ValueError("remote_send: a rank cannot send to itself")
    pair = _SendRecvGroup(get_rank(), dest_rank)
    meta = {"shape": list(inp.shape), "dtype": np.dtype(inp.dtype).name, "grad": _is_tracked(inp)}
    get_client().bcast_val(meta, "__p2p/" + pair.key, 2)
    # The op's output is a token (a zero scalar) that backward starts from, receiving the
    # gradient of what was sent.
    token = _graph_comm(WORLD).collective(inp, "send", dest_rank, pair.next_tag())
    _keep_for_backward(token)


def remote_recv(src_rank: int, device: str | None = None, inp=None) -> Tensor:
    r"""Receive a tensor from another process.

    Args:
        src_rank: Rank of source process.
        device: the device of the result; the default device when None.
        inp: Dummy input (MegEngine's API); unused.

    Returns:
        Received tensor, of the sender's shape and dtype.

    Examples:
        >>> # rank 0: F.distributed.remote_send(mge.tensor(1), 1)
        >>> # rank 1: F.distributed.remote_recv(0) -> Tensor(1)
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F.remote_recv)
        True
    """
    if src_rank == get_rank():
        raise ValueError("remote_recv: a rank cannot receive from itself")
    pair = _SendRecvGroup(src_rank, get_rank())
    meta = get_client().bcast_val(None, "__p2p/" + pair.key, 2, source=src_rank)
    dummy = _zeros((), "float32", device)
    if meta["grad"]:
        _track(dummy)
    return _graph_comm(WORLD).collective(
        dummy, "recv", src_rank, pair.next_tag(), list(meta["shape"]), meta["dtype"]
    )


def _check_peer(rank, fn):
    if not isinstance(rank, (int, np.integer)) or isinstance(rank, bool):
        raise TypeError(f"{fn}: the rank must be an int, got {type(rank).__name__}")
    if rank == get_rank():
        raise ValueError(f"{fn}: a rank cannot exchange with itself")
    return int(rank)


def _remote_send_nobackward(inp: Tensor, dest_rank: int):
    r"""Sends a tensor to another process, without autodiff (MegEngine's batched send).

    Inside :func:`~megengine.distributed.group_start` / ``group_end`` it is sent at
    ``group_end``, together with the group's other transfers; otherwise at once. The receiver
    calls :func:`_remote_recv_nobackward` with this tensor's shape and dtype.

    Args:
        inp: Tensor to send.
        dest_rank: Rank of destination process.

    Returns:
        None.

    Examples:
        >>> # rank 0: F.distributed._remote_send_nobackward(mge.tensor([1.0, 2.0]), 1)
        >>> # rank 1: F.distributed._remote_recv_nobackward(0, shape=(2,), dtype="float32")
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F._remote_send_nobackward)
        True
    """
    _check_tensor(inp, "_remote_send_nobackward")
    dest_rank = _check_peer(dest_rank, "_remote_send_nobackward")
    _comm(WORLD)  # eager only (a trace runs eagerly from here); needs init_process_group
    tag = _SendRecvGroup(get_rank(), dest_rank, batched=True).next_tag()
    _group_comm._send(inp, dest_rank, tag)


def _remote_recv_nobackward(
    src_rank: int, device: str | None = None, inp=None, shape=None, dtype=None
) -> Tensor:
    r"""Receives a tensor from another process, without autodiff (MegEngine's batched recv).

    Inside :func:`~megengine.distributed.group_start` / ``group_end`` it returns a placeholder
    (zeros) that receives its value at ``group_end``; otherwise it receives at once.

    Args:
        src_rank: Rank of source process.
        device: the device of the result; the default device when None.
        inp: Dummy input (MegEngine's API); unused.
        shape: the sent tensor's shape (required).
        dtype: the sent tensor's dtype (required).

    Returns:
        Received tensor.

    Examples:
        >>> # rank 0: F.distributed._remote_send_nobackward(mge.tensor([1.0, 2.0]), 1)
        >>> # rank 1: F.distributed._remote_recv_nobackward(0, shape=(2,), dtype="float32")
        >>> import megengine.distributed.functional as dist_F
        >>> callable(dist_F._remote_recv_nobackward)
        True
    """
    src_rank = _check_peer(src_rank, "_remote_recv_nobackward")
    if shape is None or dtype is None:
        raise ValueError("_remote_recv_nobackward: shape and dtype of the sent tensor are required")
    shape = tuple(int(d) for d in shape)
    if any(d < 0 for d in shape):
        raise ValueError(f"_remote_recv_nobackward: bad shape {shape}")
    dtype = np.dtype(dtype)
    device = str(get_default_device() if device is None else device)
    _comm(WORLD)
    tag = _SendRecvGroup(src_rank, get_rank(), batched=True).next_tag()
    return _group_comm._recv(shape, dtype, device, src_rank, tag)
