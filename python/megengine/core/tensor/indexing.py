"""``Tensor.__getitem__``/``__setitem__``: NumPy indexing built from generated ops.

Ints and slices (basic indexing) are one Subtensor op: a view of the input, sharing its memory
(the op's layout rule resolves the bounds as Python does); ``None`` is AddAxis after it. Integer
arrays index all together with IndexingMultiAxisVec (so they broadcast together). Boolean masks
and scalars, and integer arrays mixed with ints, partial slices or ``None``, take one general
path: NumPy itself indexes an array of flat positions, whose result indexes the flattened tensor
(so every NumPy rule, such as where advanced-index dimensions land, holds by construction). Every
step is an op, so indexing and assignment are differentiable. Index tensors are read on the host
(``numpy()``), a network VarNode's too (``array_method.is_tensor``). Tensors are values: an
assignment makes ``x`` stand for a new tensor, so a view taken before keeps its elements.
"""

import operator

import numpy as np

from .. import _imperative_rt as _rt
from .._imperative_rt import MegEngineError, MegEngineIndexError
from ..ops import builtin
from .array_method import (
    _QUANTIZED,
    Tensor,
    as_tensor,
    cached_op,
    device_name,
    is_tensor,
    kept_scalar,
    remember_op,
    reshape,
)
from .shape_dim import TracedDim, follows_shapes

apply = _rt.apply
_is_tracing = _rt._is_tracing


def _expand(index, ndim):
    if not isinstance(index, tuple):
        index = (index,)
    n_ellipsis = sum(i is Ellipsis for i in index)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(i is not None and i is not Ellipsis for i in index)
    if used > ndim:
        raise MegEngineIndexError(
            f"too many indices: tensor is {ndim}-dimensional, but {used} were indexed"
        )
    out = []
    for i in index:
        if i is Ellipsis:
            out.extend([slice(None)] * (ndim - used))
        else:
            out.append(i)
    if not n_ellipsis:
        out.extend([slice(None)] * (ndim - used))
    return out


def _take(x, axis, idx):
    """x indexed along ``axis`` by the int32 numpy array ``idx`` (0-d removes the axis)."""
    op = cached_op(builtin.IndexingMultiAxisVec, axes=(axis,))
    return apply(op, x, Tensor(np.asarray(idx, np.int32), device=x.device))[0]


def _host_index(i):
    if is_tensor(i):
        return i.numpy() if i.ndim > 0 else i.item()
    return i


def _is_bool_array(a):
    # Tensors and arrays know their dtype: no host copy just to look at it.
    dtype = a.dtype if is_tensor(a) or isinstance(a, np.ndarray) else np.asarray(a).dtype
    return dtype == np.bool_


def _is_bool_scalar(i):
    # A bool is not the int 1 or 0 here: as in NumPy, True adds an axis of length 1 and False
    # one of length 0, which only the flat path gets right.
    if is_tensor(i):
        return i.ndim == 0 and i.dtype == np.bool_
    return isinstance(i, (bool, np.bool_))


def _needs_flat(index):
    """Whether ``index`` has a boolean mask or scalar, or integer arrays mixed with ints,
    partial slices or None: the cases the per-axis paths do not cover."""
    items = index if isinstance(index, tuple) else (index,)
    if any(_is_bool_scalar(i) for i in items):
        return True
    arrays = [i for i in items if _is_index_array(i)]
    if not arrays:
        return False
    if any(_is_bool_array(a) for a in arrays):
        return True
    return any(
        i is None
        or isinstance(i, (int, np.integer))
        or (is_tensor(i) and i.ndim == 0)
        or (isinstance(i, slice) and i != slice(None))
        for i in items
    )


def _flat_positions(x, index):
    """int32 positions into ``x`` flattened that ``x[index]`` selects, shaped like the result."""
    if x.size > np.iinfo(np.int32).max:
        raise IndexError(f"indexing of a tensor of {x.size} elements needs 64-bit indices")
    items = index if isinstance(index, tuple) else (index,)
    np_index = tuple(_host_index(i) for i in items)
    return np.arange(x.size, dtype=np.int32).reshape(x.shape)[np_index]


def _flatten(x):
    return apply(cached_op(builtin.Reshape, shape=(x.size,)), x)[0]


def _plain_dims(index):
    """A dim (a shape read while tracing) used as an index is its value: a constant. A tuple
    inside the index tuple is an integer array, as NumPy reads ``x[(0, 2), :]``."""
    if type(index) is TracedDim:
        return index.bake("use as an index")
    if isinstance(index, tuple) and any(type(i) in (TracedDim, tuple) for i in index):
        return tuple(list(i) if type(i) is tuple else _plain_dims(i) for i in index)
    return index


# Subtensor's None (kSubtensorNone) for a slice bound or step.
_NONE = -(2**31)
_INT32_MAX = 2**31 - 1
# The ops of basic indices (a Subtensor, and an AddAxis for Nones or None) by a key of the index
# and the tensor's ndim: they hold Python's values, not the shape, whose checks the layout rule
# does. Bounded, as a loop over rows would otherwise keep one op per row.
_basic_ops_cache = {}
# Slice bounds and index items a key may hold: bools and traced dims (whose use as an index is
# noted) are not among them.
_PLAIN_BOUND = frozenset((int, type(None)))
_PLAIN_ITEM = frozenset((int, type(None), type(Ellipsis)))


def _cached_basic_ops(key, ndim, index):
    ops = _basic_ops_cache.get(key)
    if ops is None:
        if len(_basic_ops_cache) >= 4096:
            _basic_ops_cache.clear()
        ops = _basic_ops_cache[key] = _basic_ops(_expand(index, ndim))
    return ops


def _slice_bound(v):
    if v is None:
        return _NONE
    v = operator.index(v)  # as NumPy reads a bound (a traced dim notes its use as an index)
    # Past int32 a bound clamps as Python's does (no axis has 2**31 elements).
    return min(max(v, _NONE + 1), _INT32_MAX)


def _basic_ops(items):
    """The ops of ``x[items]`` for ints, slices and None (items expanded to x's ndim): one
    Subtensor of the ints and slices, then AddAxis for the Nones (None when there are none)."""
    axis, begin, end, step, is_index, new_axes = [], [], [], [], [], []
    k = 0  # the axis of x the next item indexes
    out_axis = 0  # that item's axis in the result
    for i in items:
        if i is None:
            new_axes.append(out_axis)
            out_axis += 1
            continue
        if isinstance(i, slice):
            if i != slice(None):
                axis.append(k)
                begin.append(_slice_bound(i.start))
                end.append(_slice_bound(i.stop))
                step.append(_slice_bound(i.step))
                is_index.append(0)
            out_axis += 1
        elif isinstance(i, (int, np.integer)) or (is_tensor(i) and i.ndim == 0):
            pos = int(i)
            if not _NONE < pos <= _INT32_MAX:
                raise MegEngineIndexError(f"index {pos} is out of bounds for axis {k}")
            axis.append(k)
            begin.append(pos)
            end.append(_NONE)
            step.append(_NONE)
            is_index.append(1)
        else:
            raise IndexError(f"unsupported index {i!r}")
        k += 1
    sub = builtin.Subtensor(
        axis=tuple(axis),
        begin=tuple(begin),
        end=tuple(end),
        step=tuple(step),
        is_index=tuple(is_index),
    )
    return sub, (builtin.AddAxis(axis=tuple(new_axes)) if new_axes else None)


def _apply_basic(x, ops):
    out = apply(ops[0], x)[0]
    return out if ops[1] is None else apply(ops[1], out)[0]


def _basic_key(index):
    """A hashable key of a tuple index of ints, plain slices, None and Ellipsis; None for any
    other (NumPy ints, tensors, traced dims and bools take the general path)."""
    key = []
    for i in index:
        t = type(i)
        if t is slice:
            b, e, s = i.start, i.stop, i.step
            if type(b) in _PLAIN_BOUND and type(e) in _PLAIN_BOUND and type(s) in _PLAIN_BOUND:
                key.append((b, e, s))
                continue
            return None
        if t not in _PLAIN_ITEM:
            return None
        key.append(i)
    return tuple(key)


def getitem(x, index):
    # x[k], x[a:b:c] and tuples of ints, slices, None and Ellipsis, the commonest indices (a row:
    # `a + b[0]`), without the general parsing below: cached ops, whose layout rule checks the
    # bounds against x's shape.
    t = type(index)
    if t is int:
        if x.ndim:
            return _apply_basic(x, _cached_basic_ops(index, x.ndim, index))
    elif t is slice:
        b, e, s = index.start, index.stop, index.step
        if type(b) in _PLAIN_BOUND and type(e) in _PLAIN_BOUND and type(s) in _PLAIN_BOUND:
            return _apply_basic(x, _cached_basic_ops((b, e, s), x.ndim, index))
    elif t is tuple:
        key = _basic_key(index)
        if key is not None:
            return _apply_basic(x, _cached_basic_ops((x.ndim, key), x.ndim, index))
    elif t is Tensor:
        out = _tensor_index(x, index)
        if out is not None:
            return out
    index = _plain_dims(index)
    if _needs_flat(index):
        pos = _flat_positions(x, index)
        return _take(_flatten(x), 0, pos)
    items = _expand(index, x.ndim)
    arrays = [
        (k, i) for k, i in enumerate(items) if is_tensor(i) or isinstance(i, (np.ndarray, list))
    ]
    if arrays:
        idx = []
        for _, a in arrays:
            a = a.numpy() if is_tensor(a) else np.asarray(a)
            idx.append(Tensor(a.astype(np.int32), device=x.device))
        op = cached_op(builtin.IndexingMultiAxisVec, axes=tuple(k for k, _ in arrays))
        return apply(op, x, *idx)[0]
    return _apply_basic(x, _basic_ops(items))


_TAKE_AXIS0 = builtin.IndexingMultiAxisVec(axes=(0,))
_COND_TAKE = builtin.CondTake()


def _tensor_index(x, index):
    """``x[index]`` for an int32 index tensor (rows of x) or a bool mask of x's shape on x's
    device, without the general path's host round trip of the index; None for anything else.
    The int32 index goes to the op the general path applies to its host copy (the op checks
    the range as it does there); the mask's elements come from CondTake, in the row-major
    order of the general path's flat positions, and its count is read to cut the capacity
    off, as ``F.cond_take`` does. Traces keep the general path: it records the index as a
    constant."""
    if not index.ndim or not isinstance(x, Tensor) or not x.ndim or _is_tracing():
        return None
    if device_name(index) != device_name(x):
        return None
    dt = index._dtype_name
    if dt == "int32":
        return apply(_TAKE_AXIS0, x, index)[0]
    if (
        dt == "bool"
        and index.shape == x.shape
        and x._dtype_name not in _QUANTIZED
        and not follows_shapes()
    ):
        values, _, count = apply(_COND_TAKE, x, index)
        n = int(count.numpy()[0])
        return _apply_basic(values, _cached_basic_ops((None, n, None), 1, slice(n)))
    return None


def _basic_index_arrays(x, items):
    """Broadcastable int32 index arrays (numpy.ix_ style) for ints and slices on every axis."""
    arrays = []
    kept = 0  # position among the axes that survive (slices)
    n_kept = sum(isinstance(i, slice) for i in items)
    for axis, i in enumerate(items):
        n = x.shape[axis]
        if isinstance(i, slice):
            idx = np.arange(n)[i]
            shape = [1] * n_kept
            shape[kept] = len(idx)
            arrays.append(idx.reshape(shape))
            kept += 1
        elif isinstance(i, (int, np.integer)) or (is_tensor(i) and i.ndim == 0):
            k = int(i)
            if not -n <= k < n:
                raise MegEngineIndexError(
                    f"index {k} is out of bounds for axis {axis} with size {n}"
                )
            arrays.append(np.array(k % n))
        else:
            raise IndexError(f"unsupported index {i!r} in an assignment")
    return arrays


def _is_index_array(i):
    if is_tensor(i):
        return i.ndim > 0
    return isinstance(i, (np.ndarray, list))


# The plans of basic assignments by (index key, shape, device): the op and the index tensors,
# made once (each is a host-to-device copy, 3.5 us) and only ever read. Bounded as the op
# caches; index tensors of more elements in all than this are not kept (a full cache then holds
# at most 64 MiB of them).
_set_plans = {}
_PLAN_ELEMENTS_LIMIT = 4096
_SCALARS = frozenset((int, float, bool))


def _set_plan(x, index):
    """The op of ``x[index] = value`` for ints and plain slices, its index tensors and the
    ndim of ``x[index]``; None where the general path must run (None or no axis to index, an
    int out of range, which it reports). The general path indexes every axis (numpy.ix_
    style); the axes before the first and after the last non-full item are left out, which
    keeps the indexed axes adjacent, so the result's axes stay where NumPy puts them."""
    try:
        items = _expand(index, x.ndim)
    except IndexError:
        return None
    full = slice(None)
    partial = [k for k, i in enumerate(items) if i is None or i != full]
    if not partial or any(i is None for i in items):
        return None
    lo, hi = partial[0], partial[-1]
    part = items[lo : hi + 1]
    shape = x.shape[lo : hi + 1]
    n_kept = sum(type(i) is slice for i in part)
    arrays, kept = [], 0
    for i, n in zip(part, shape):
        if type(i) is slice:
            idx = np.arange(n, dtype=np.int32)[i]
            dims = [1] * n_kept
            dims[kept] = len(idx)
            arrays.append(idx.reshape(dims))
            kept += 1
        else:
            if not -n <= i < n:
                return None
            arrays.append(np.array(i, np.int32))  # the op counts a negative from the end
    if sum(a.size for a in arrays) > _PLAN_ELEMENTS_LIMIT:
        return None
    device = x.device
    op = cached_op(builtin.IndexingSetMultiAxisVec, tuple(range(lo, hi + 1)))
    idx = tuple(Tensor(a, device=device) for a in arrays)
    return op, idx, n_kept + x.ndim - len(part)


def _fast_setitem(x, index, value):
    """``x[index] = value`` for ints and plain slices on a row-major Tensor outside tracing,
    with the op and index tensors kept (``_set_plans``) and a Python scalar value kept too
    (``kept_scalar``); False where the general path must run. ``x`` is a Tensor."""
    t = type(index)
    if t is int:
        key = index
    elif t is tuple:
        key = _basic_key(index)
        if key is None:
            return False
    elif t is slice:
        b, e, s = index.start, index.stop, index.step
        if not (type(b) in _PLAIN_BOUND and type(e) in _PLAIN_BOUND and type(s) in _PLAIN_BOUND):
            return False
        key = ((b, e, s),)
    else:
        return False
    if x._dtype_name in _QUANTIZED or _is_tracing():
        return False
    device = device_name(x)
    plan_key = (key, x.shape, device)
    plan = _set_plans.get(plan_key, False)
    if plan is False:
        plan = remember_op(_set_plans, plan_key, _set_plan(x, index))
    if plan is None:
        return False
    op, idx, target_ndim = plan
    if type(value) in _SCALARS:
        value = kept_scalar(value, x._dtype_name, device)
    else:
        value = as_tensor(value, dtype=x._dtype_name, device=x.device)
        ndim = value.ndim
        if ndim > target_ndim and all(d == 1 for d in value.shape[: ndim - target_ndim]):
            value = reshape(value, value.shape[ndim - target_ndim :])
    try:
        out = apply(op, x, value, *idx)[0]
    except MegEngineError:
        # A value that does not broadcast: the general path raises its own error (its op
        # names every axis), x untouched.
        return False
    x._assign(out)
    return True


def tensor_setitem(x, index, value):
    """``Tensor.__setitem__``: the assignment, then MegEngine's format rule: ``x[...] = v``
    replaces the whole tensor, format too (an array's is "default"); a partial assignment keeps
    x's (its result is row-major: channels-last again)."""
    # A row-major x keeps its label through the fast path, whose result is row-major too.
    if isinstance(x, Tensor) and not x._channels_last and _fast_setitem(x, index, value):
        return
    before = x.format
    setitem(x, index, value)
    after = before
    if index is Ellipsis:
        after = value.format if isinstance(value, Tensor) else "default"
    if x.format != after:
        x.format = after


def setitem(x, index, value):
    """``x[index] = value`` for ints, slices (any step), Ellipsis and integer arrays: the
    assignment is one IndexingSetMultiAxisVec op, and ``x`` then stands for its result (so it is
    differentiable)."""
    from .array_method import as_tensor, reshape

    index = _plain_dims(index)
    value = as_tensor(value, dtype=x._dtype_name, device=x.device)
    items = index if isinstance(index, tuple) else (index,)
    if _needs_flat(index) or any(i is None for i in items):
        pos = _flat_positions(x, index)
        if value.ndim > pos.ndim and all(d == 1 for d in value.shape[: value.ndim - pos.ndim]):
            value = reshape(value, value.shape[value.ndim - pos.ndim :])
        op = cached_op(builtin.IndexingSetMultiAxisVec, axes=(0,))
        flat = apply(op, _flatten(x), value, Tensor(pos, device=x.device))[0]
        x._assign(reshape(flat, x.shape))
        return
    items = _expand(index, x.ndim)
    if x.ndim == 0:
        x._assign(reshape(value, ()))
        return
    if any(_is_index_array(i) for i in items):
        axes, arrays = [], []
        for k, i in enumerate(items):
            if not _is_index_array(i):
                continue
            a = i.numpy() if is_tensor(i) else np.asarray(i)
            axes.append(k)
            arrays.append(a.astype(np.int32))
    else:
        axes = list(range(x.ndim))
        arrays = [a.astype(np.int32) for a in _basic_index_arrays(x, items)]
    # NumPy lets value carry extra leading size-1 dims; the operator wants them gone.
    target_ndim = len(np.broadcast_shapes(*(a.shape for a in arrays))) + x.ndim - len(axes)
    if value.ndim > target_ndim and all(d == 1 for d in value.shape[: value.ndim - target_ndim]):
        value = reshape(value, value.shape[value.ndim - target_ndim :])
    op = cached_op(builtin.IndexingSetMultiAxisVec, axes=tuple(axes))
    idx = [Tensor(a, device=x.device) for a in arrays]
    x._assign(apply(op, x, value, *idx)[0])
