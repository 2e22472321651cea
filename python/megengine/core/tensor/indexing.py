"""``Tensor.__getitem__``: NumPy basic and integer-array indexing built from generated ops.

Ints, slices (any step) and integer arrays become index tensors for IndexingMultiAxisVec, one
axis at a time for basic indices (so slices combine as an outer product, as NumPy's do) and all
together for integer arrays (so they broadcast together); ``None`` is AddAxis. Every step is an
op, so indexing is differentiable.
"""

import numpy as np

from .. import _imperative_rt as _rt
from ..ops import builtin
from .array_method import Tensor, cached_op

apply = _rt.apply


def _expand(index, ndim):
    if not isinstance(index, tuple):
        index = (index,)
    n_ellipsis = sum(i is Ellipsis for i in index)
    if n_ellipsis > 1:
        raise IndexError("an index can only have a single ellipsis ('...')")
    used = sum(i is not None and i is not Ellipsis for i in index)
    if used > ndim:
        raise IndexError(f"too many indices: tensor is {ndim}-dimensional, but {used} were indexed")
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


def getitem(x, index):
    items = _expand(index, x.ndim)
    arrays = [
        (k, i)
        for k, i in enumerate(items)
        if isinstance(i, (Tensor, np.ndarray, list)) and not isinstance(i, bool)
    ]
    if arrays:
        if any(isinstance(i, slice) and i != slice(None) for i in items) or any(
            isinstance(i, int) for i in items
        ):
            raise IndexError("mixing integer arrays with ints or partial slices is not supported")
        if any(i is None for i in items):
            raise IndexError("mixing integer arrays with None is not supported")
        idx = []
        for _, a in arrays:
            a = a.numpy() if isinstance(a, Tensor) else np.asarray(a)
            if a.dtype == np.bool_:
                raise IndexError("boolean mask indexing is not supported yet; use F.cond_take")
            idx.append(Tensor(a.astype(np.int32), device=x.device))
        op = cached_op(builtin.IndexingMultiAxisVec, axes=tuple(k for k, _ in arrays))
        return apply(op, x, *idx)[0]
    out = x
    axis = 0  # the axis of `out` the next item applies to
    for i in items:
        if i is None:
            out = apply(cached_op(builtin.AddAxis, axis=(axis,)), out)[0]
            axis += 1
        elif isinstance(i, slice):
            n = out.shape[axis]
            if i != slice(None):
                out = _take(out, axis, np.arange(n)[i])
            axis += 1
        elif isinstance(i, (int, np.integer)) or (isinstance(i, Tensor) and i.ndim == 0):
            n = out.shape[axis]
            k = int(i)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            out = _take(out, axis, np.int32(k % n))
        else:
            raise IndexError(f"unsupported index {i!r}")
    return out


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
        elif isinstance(i, (int, np.integer)) or (isinstance(i, Tensor) and i.ndim == 0):
            k = int(i)
            if not -n <= k < n:
                raise IndexError(f"index {k} is out of bounds for axis {axis} with size {n}")
            arrays.append(np.array(k % n))
        else:
            raise IndexError(f"unsupported index {i!r} in an assignment")
    return arrays


def _is_index_array(i):
    if isinstance(i, Tensor):
        return i.ndim > 0
    return isinstance(i, (np.ndarray, list))


def setitem(x, index, value):
    """``x[index] = value`` for ints, slices (any step), Ellipsis and integer arrays: the
    assignment is one IndexingSetMultiAxisVec op, and ``x`` then stands for its result (so it is
    differentiable)."""
    from .array_method import as_tensor, reshape

    value = as_tensor(value, dtype=x._dtype_name, device=x.device)
    items = _expand(index, x.ndim)
    if x.ndim == 0:
        x._assign(reshape(value, ()))
        return
    if any(i is None for i in items):
        raise IndexError("None (a new axis) cannot be used in an assignment")
    if any(_is_index_array(i) for i in items):
        if any(not _is_index_array(i) and i != slice(None) for i in items):
            raise IndexError("mixing integer arrays with ints or partial slices is not supported")
        axes, arrays = [], []
        for k, i in enumerate(items):
            if not _is_index_array(i):
                continue
            a = i.numpy() if isinstance(i, Tensor) else np.asarray(i)
            if a.dtype == np.bool_:
                raise IndexError("boolean mask assignment is not supported yet")
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
