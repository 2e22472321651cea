"""Data-parallel helpers: the gradient all-reduce callback, parameter broadcast, synchronized."""

import functools
from collections import defaultdict
from collections.abc import Callable
from weakref import WeakSet

import numpy as np

from ..autodiff.grad_manager import GradManager, get_backwarding_grad_manager
from ..core import _imperative_rt as _rt
from ..utils.future import Future
from . import group as _group
from .functional import _bcast_param, _comm, _graph_comm
from .group import WORLD, Group, group_barrier, is_distributed

__all__ = ["AllreduceCallback", "bcast_list_", "make_allreduce_cb", "synchronized"]


def synchronized(func: Callable):
    r"""Decorator. Decorated function will synchronize when finished.
    Specifically, we use this to prevent data race during hub.load

    Args:
        func: the function; every rank calls it, and each returns once all have finished it.

    Returns:
        the wrapped function.

    Examples:
        >>> import megengine.distributed as dist
        >>> @dist.synchronized
        ... def f():
        ...     return 1
        >>> f()
        1
    """

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if not is_distributed():
            return func(*args, **kwargs)
        ret = func(*args, **kwargs)
        group_barrier()
        return ret

    return wrapper


def bcast_list_(inps: list, group: Group = WORLD):
    r"""Broadcast tensors between given group: every rank's tensors take the root's values.

    Args:
        inps: input tensors (Parameters keep their identity and attachments).
        group: communication group.

    Returns:
        None: the tensors are updated in place.

    Examples:
        >>> import megengine.distributed as dist
        >>> callable(dist.bcast_list_)
        True
    """
    for inp in inps:
        inp._reset(_bcast_param(inp, group))


class TensorFuture(Future):
    """A gradient that its bucket's all-reduce will deliver (resolved after backward)."""


class _Bucket:
    """One flat all-reduce in flight: which gradients it carries and how to split it back."""

    __slots__ = ("dtype", "params", "shapes", "work")

    def __init__(self, params, grads, dtype, work):
        self.params = params
        self.shapes = [g.shape for g in grads]
        self.dtype = dtype
        self.work = work


class AllreduceCallback:
    r"""Allreduce Callback with tensor fusion optimization.

    Gradients are packed per dtype into buckets of about 10 MB (``_param_pack_thd`` bytes). A
    full bucket's all-reduce starts at once, on the group's communication thread, while backward
    goes on computing the other gradients (GradManager calls this callback as each gradient
    becomes final); the last buckets start when backward ends, and GradManager waits for all of
    them before it sets ``.grad``. Inside ``jit.trace`` the buckets are ops of the traced graph
    that run on every call, with the same overlap: a start op where the bucket fills and a wait
    op when backward ends, so the compiled step computes the remaining gradients while the
    bucket's all-reduce runs. Every rank must attach the same parameters in the same order.

    Args:
        reduce_method: the method to reduce gradiants: ``"sum"`` or ``"mean"``.
        group: communication group.
        backend: override distributed backend in allreduce (``"gloo"`` for CPU tensors).

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.make_allreduce_cb is dist.helper.AllreduceCallback
        True
    """

    def __init__(self, reduce_method: str, group: Group = WORLD, backend: str | None = None):
        reduce_method = reduce_method.lower()
        if reduce_method not in ("sum", "mean"):
            raise ValueError("reduce_method should be sum or mean")
        self._reduce_method = reduce_method
        self._group = group
        self._marked_gm = WeakSet()
        self._param_pack_thd = 10 * 1024 * 1024
        self._reset()
        if backend is None:
            _group._require_init()
            backend = _group._sd.backend
        self._backend = backend

    def _reset(self):
        self._params = []
        self._gradients_dict = {}
        self._futures_dict = {}
        self._packing_list = defaultdict(list)
        self._packing_size = defaultdict(int)
        self._in_flight = []  # _Buckets whose all-reduce runs, in the order they started
        self._traced_in_flight = []  # (params, grads, bucket, pending) under jit.trace

    def _pack(self, dtype):
        params = self._packing_list[dtype]
        if not params:
            return
        grads = [self._gradients_dict[p] for p in params]
        self._packing_list[dtype] = []
        self._packing_size[dtype] = 0
        if _rt._is_tracing():
            self._pack_as_ops(params, grads)
            return
        comm = _comm(self._group)
        if len(grads) == 1:
            # All-reduced from where it lies into a new buffer (the all-reduce reads its input
            # where it reduces): no copy into a bucket.
            work = comm.all_reduce_async(grads[0].reshape(-1), "sum")
        else:
            # One flat buffer per bucket (each gradient copied in once), a single all-reduce in
            # place in it; _unpack hands out views of it.
            from ..functional import concat  # not at import: functional imports this package

            flat = concat([g.reshape(-1) for g in grads])
            work = comm.all_reduce_async(flat, "sum", in_place=True)
        self._in_flight.append(_Bucket(params, grads, dtype, work))

    def _pack_as_ops(self, params, grads):
        # Under jit.trace: the bucket as ops that the graph holds and runs on every call;
        # _unpack_ops adds the wait op when backward ends, so the ops recorded in between
        # overlap the communication.
        comm = _graph_comm(self._group)
        if str(grads[0].device).startswith("gpu"):
            # NCCL runs on the bucket's stream, after the kernels that computed it and
            # asynchronously to the host already: a concat and one all-reduce op, no wait op.
            from ..functional import concat  # not at import: functional imports this package

            reduced = comm.all_reduce_op(concat([g.reshape(-1) for g in grads]), "sum")
            self._traced_in_flight.append((params, grads, reduced, None))
            return
        # The start op copies the gradients into its own output and all-reduces that in place:
        # no concat buffer beside the result, and never a reduction in a graph input or a
        # folded constant (a bucket of constant gradients), which a replay would read again.
        index = len(self._traced_in_flight)
        started, pending = comm.all_reduce_start_op(grads, "sum", index)
        self._traced_in_flight.append((params, grads, started, pending))

    def _unpack_ops(self, params, grads, started, pending):
        mean = self._reduce_method == "mean"
        if pending is not None:
            # One op waits, splits the bucket into the gradients and divides them for a mean,
            # in one pass (a float bucket; another divides after, as the eager path does).
            divide = mean and np.dtype(started.dtype).kind == "f"
            shapes = [list(g.shape) for g in grads]
            divisor = self._group.size if divide else 1
            comm = _graph_comm(self._group)
            outs = comm.all_reduce_wait_op(pending, started, shapes, divisor)
            for param, out in zip(params, outs):
                self._gradients_dict[param] = out / self._group.size if mean and not divide else out
            return
        reduced = started / self._group.size if mean else started
        offset = 0
        for param, grad in zip(params, grads):
            n = int(np.prod(grad.shape))
            self._gradients_dict[param] = reduced[offset : offset + n].reshape(grad.shape)
            offset += n

    def _unpack(self, bucket):
        reduced = bucket.work.wait()
        if self._reduce_method == "mean":
            reduced = reduced / self._group.size
            if np.dtype(reduced.dtype) != np.dtype(bucket.dtype):  # an integer gradient
                reduced = reduced.astype(bucket.dtype)
        offset = 0
        for param, shape in zip(bucket.params, bucket.shapes):
            n = int(np.prod(shape))
            self._gradients_dict[param] = reduced[offset : offset + n].reshape(shape)
            offset += n

    def __call__(self, param, grad):
        gm = get_backwarding_grad_manager()
        if not isinstance(gm, GradManager):
            raise RuntimeError(  # noqa: TRY004 - a misuse, not a bad argument
                "make_allreduce_cb: call it as a GradManager callback"
            )
        if gm not in self._marked_gm:
            gm._register_after_backward_callback(self._flush)
            self._marked_gm.add(gm)
        self._params.append(param)
        self._futures_dict[param] = TensorFuture(ack=False)
        self._gradients_dict[param] = grad
        dtype_str = str(np.dtype(param.dtype))
        self._packing_list[dtype_str].append(param)
        self._packing_size[dtype_str] += int(np.prod(grad.shape)) * np.dtype(param.dtype).itemsize
        if self._packing_size[dtype_str] > self._param_pack_thd:
            self._pack(dtype_str)
        return self._futures_dict[param]

    def _flush(self):
        try:
            for dtype in sorted(self._packing_list.keys()):
                self._pack(dtype)
            for bucket in self._in_flight:
                self._unpack(bucket)
            for bucket in self._traced_in_flight:
                self._unpack_ops(*bucket)
            for param in self._params:
                self._futures_dict[param].set(self._gradients_dict[param])
        finally:
            self._reset()


make_allreduce_cb = AllreduceCallback
