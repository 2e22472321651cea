"""Shapes as values while a trace records: the ops that let a traced (and dumped) graph follow
its inputs' shapes instead of fixing the ones seen when it was recorded.

Eagerly, ``F.flatten(x, 1)`` reshapes to Python ints read from ``x.shape``; a trace would record
them as constants, and a dumped model would refuse another batch size. While a trace records
(or checks), the functions here compute the target shape with ops instead (``GetVarShape``,
``Concat``) and reshape with ``ReshapeTo``, whose output shape the graph reads from that value:
static when it follows from the inputs' shapes, dynamic when it depends on data (``TakePrefix``
after ``CondTake``). Eager results are the same either way.
"""

import numpy as np

from .. import _imperative_rt as _rt
from .._imperative_rt import MegEngineError
from ..ops import builtin
from .array_method import Tensor, apply, cached_op
from .shape_dim import TracedDim


def active():
    """Whether shapes should be recorded as values: a trace records or checks on this thread."""
    return _rt._is_tracing()


def int32(values):
    # Made inside the traced call: a constant of the graph.
    return Tensor(np.asarray(values, dtype=np.int32), dtype="int32")


def shape_of(x, axes):
    """``x.shape`` at ``axes`` as an int32 tensor (a GetVarShape op)."""
    return apply(cached_op(builtin.GetVarShape, axes=tuple(int(a) for a in axes)), x)[0]


def reshape_to(x, shape, target):
    """``x`` reshaped to the int32 tensor ``shape``, whose value is ``target`` (-1 resolved)."""
    return _rt.apply_with_shapes(cached_op(builtin.ReshapeTo), [tuple(target)], x, shape)[0]


def flatten(x, start, end, target):
    """``x`` with axes ``start..end`` merged, the other axes taken from ``x``'s shape as values."""
    parts = [shape_of(x, range(start)), int32([-1])]
    if end + 1 < x.ndim:
        parts.append(shape_of(x, range(end + 1, x.ndim)))
    shape = apply(cached_op(builtin.Concat, axis=0), *parts)[0]
    return reshape_to(x, shape, target)


def take_prefix(x, count, n):
    """The first ``n`` entries of ``x`` along axis 0, ``n`` being the value of ``count``."""
    return _rt.apply_with_shapes(cached_op(builtin.TakePrefix), [(n, *x.shape[1:])], x, count)[0]


def reshape_dims(x, dims):
    """``x`` reshaped to ``dims``: ints (one may be -1) and :class:`~.shape_dim.TracedDim`
    values, whose graph ops give the shape, so that the graph follows the shapes they came from.
    """
    values = [d._value if type(d) is TracedDim else int(d) for d in dims]
    if sum(v == -1 for v in values) > 1 or any(v < -1 for v in values):
        raise MegEngineError(
            f"reshape: invalid target shape {tuple(values)} for input of shape {x.shape}"
        )
    known = int(np.prod([v for v in values if v != -1]))
    if (known == 0 or x.size % known) if -1 in values else known != x.size:
        raise MegEngineError(f"reshape: cannot reshape {x.shape} into {tuple(values)}")
    target = tuple(x.size // known if v == -1 else v for v in values)
    parts, run = [], []
    for d, v in zip(dims, values):
        if type(d) is TracedDim:
            if run:
                parts.append(int32(run))
                run = []
            parts.append(d.as_tensor())
        else:
            run.append(v)
    if run:
        parts.append(int32(run))
    shape = parts[0] if len(parts) == 1 else apply(cached_op(builtin.Concat, axis=0), *parts)[0]
    return reshape_to(x, shape, target)


def shape_values(shape, src=None):
    """A target shape that holds values as an int32 tensor of its dims and their ints, or None
    where it is plain ints. ``shape`` is a 1-D integer Tensor, or a sequence of ints,
    :class:`~.shape_dim.TracedDim` values, 0-d or 1-element integer Tensors and, where ``src``
    is given, None (``src``'s size on that axis, axes aligned from the right, as MegEngine's
    broadcast_to takes it)."""
    if isinstance(shape, Tensor):
        values = shape._numpy_untraced().reshape(-1).tolist()
        return shape.astype("int32").reshape(-1), values
    if not isinstance(shape, (list, tuple)) or not any(
        d is None or type(d) is TracedDim or isinstance(d, Tensor) for d in shape
    ):
        return None
    lead = len(shape) - len(src.shape) if src is not None else len(shape)
    if any(d is None for d in shape[: max(lead, 0)]):
        return None  # a new axis needs a size: the caller's check says so
    parts, run, values = [], [], []
    for i, d in enumerate(shape):
        if d is None and i >= lead:
            part, value = shape_of(src, (i - lead,)), src.shape[i - lead]
        elif type(d) is TracedDim:
            part, value = d.as_tensor(), d._value
        elif isinstance(d, Tensor):
            part, value = d.astype("int32").reshape(1), int(d._numpy_untraced().reshape(-1)[0])
        else:
            run.append(d)
            values.append(d)
            continue
        if run:
            parts.append(int32(run))
            run = []
        parts.append(part)
        values.append(value)
    if run:
        parts.append(int32(run))
    if len(parts) == 1:
        return parts[0], values
    return apply(cached_op(builtin.Concat, axis=0), *parts)[0], values


def broadcast_to(x, shape, target):
    """``x`` broadcast to the int32 tensor ``shape``, whose value is ``target``."""
    return _rt.apply_with_shapes(cached_op(builtin.BroadcastTo), [tuple(target)], x, shape)[0]
