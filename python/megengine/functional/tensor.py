"""Tensor creation and manipulation (``F.zeros``, ``F.concat``, ``F.gather``, ...).

Creators run generator ops (Fill, Arange, Linspace, Eye) with ``apply_generator``; everything else
composes generated ops (views such as Reshape/Broadcast/Dimshuffle/AddAxis/RemoveAxis, and
Concat, Split, Gather, Scatter, CondTake, Cumsum, Diag, Elemwise COND), so the results are
differentiable through ``GradManager`` wherever the ops have backward rules.
"""

import itertools
import math as _math

import numpy as np

from ..core import _imperative_rt as _rt
from ..core._imperative_rt import MegEngineError, MegEngineTypeError
from ..core.ops import builtin
from ..core.tensor import array_method as _array_method
from ..core.tensor import symbolic_shape as _symbolic_shape
from ..core.tensor.array_method import (
    _QUANTIZED,
    Tensor,
    _cached_view_op,
    _dimshuffle_ops,
    _promote,
    _reshape_op,
    as_tensor,
    cached_op,
    is_symbolic,
    is_tensor,
    remember_op,
)
from ..core.tensor.array_method import reshape as _reshape
from ..core.tensor.shape_dim import INTEGER_TYPES, TracedDim
from ._complex import complex, imag, polar, real

__all__ = [
    "arange",
    "broadcast_to",
    "complex",
    "concat",
    "cond_take",
    "copy",
    "cumsum",
    "diag",
    "expand_dims",
    "eye",
    "flatten",
    "full",
    "full_like",
    "gather",
    "imag",
    "linspace",
    "meshgrid",
    "non_zero",
    "ones",
    "ones_like",
    "polar",
    "real",
    "repeat",
    "reshape",
    "roll",
    "scatter",
    "split",
    "squeeze",
    "stack",
    "swapaxes",
    "tile",
    "transpose",
    "where",
    "zeros",
    "zeros_like",
]

_apply = _rt.apply
_apply_joined = _rt.apply_joined
_is_tracing = _rt._is_tracing
_INT_DTYPES = ("bool", "uint8", "int8", "int16", "int32")
_MAX_NDIM = 7  # TensorShape::MAX_NDIM (dnn/include/neomeg/dnn/layout.h)


def _dtype_name(dtype):
    return dtype if isinstance(dtype, str) else np.dtype(dtype).name


def _device(device):
    # None is the default device (mge.set_default_device), as MegEngine's creators take it; the
    # automatic choice ("xpux") only where no default was set.
    if device is None:
        return _rt.get_default_device()
    return _rt.canonical_device(str(device))


def _shape_arg(fn, shape):
    """``shape`` (an int, a sequence of ints or a 1-D integer Tensor) as a tuple of ints."""
    if is_tensor(shape):
        shape = shape.numpy().tolist()
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        out = tuple(int(s) for s in shape)
        exact = all(o == s for o, s in zip(out, shape))
    except (TypeError, ValueError):
        exact = False
    if not exact:
        raise TypeError(f"{fn}: shape must be an int or a sequence of ints, got {shape!r}")
    if any(s < 0 for s in out):
        raise MegEngineError(f"{fn}: negative dimension in shape {out}")
    return out


def _fill_none_dims(fn, src, shape):
    """MegEngine's shape entries: None keeps ``src``'s size on that axis (axes aligned from the
    right), a 0-d Tensor gives its value."""
    lead = len(shape) - len(src)
    out = []
    for i, s in enumerate(shape):
        if s is None:
            if i < lead:
                raise MegEngineError(f"{fn}: size cannot be None for the new axis {i} of {shape}")
            s = src[i - lead]
        elif is_tensor(s):
            s = s.item()
        out.append(s)
    return out


def _axis(fn, axis, ndim):
    """``axis`` normalised into [0, ndim)."""
    axis = int(axis)
    if not -ndim <= axis < ndim:
        raise MegEngineError(f"{fn}: axis {axis} is out of range for a tensor of {ndim} dims")
    return axis + ndim if axis < 0 else axis


def _fill_op(value, dtype):
    """The Fill op writing ``value`` in ``dtype``, or None where Fill cannot carry the value."""
    dtype = _dtype_name(dtype)
    if dtype in _INT_DTYPES and not _exact_f32(value):
        return None  # Fill carries its value as float32
    value = float(value)
    if value == 0 and _math.copysign(1.0, value) < 0:
        # -0.0 == 0.0 would find +0.0's op in the cache
        return builtin.Fill(value=value, dtype=dtype)
    return cached_op(builtin.Fill, value=value, dtype=dtype)


def _fill(shape, value, dtype, device):
    op = _fill_op(value, dtype)
    if op is None:  # integers Fill cannot hold exactly go through numpy
        dtype = _dtype_name(dtype)
        return Tensor(np.full(list(shape), value, dtype=dtype), dtype=dtype, device=device)
    return _rt.apply_generator(op, [list(shape)], _device(device))[0]


# zeros/ones/full of plain ints and a Python number skip the general path's conversions: their
# Fill op is looked up by (value, dtype) here (5.0 -> 2.3 us per call for a 4x4 zeros, of which
# the op takes 1.3). Floats equal to 0 stay out of the key (-0.0 == 0 would find +0.0's op), and
# NaN (never equal to itself, so never found) too; bounded, as values such as a learning rate vary.
_FILL_OPS = {}
_FILL_OPS_LIMIT = 1024


def _fill_plain(shape, value, dtype, device):
    """``_fill`` where ``shape`` is an int or a list/tuple of non-negative ints and ``value`` an
    int, a bool or a nonzero float; None otherwise, for the caller's general path."""
    t = type(shape)
    if t is tuple or t is list:
        for s in shape:
            if type(s) is not int or s < 0:
                return None
        dims = list(shape)
    elif t is int and shape >= 0:
        dims = [shape]
    else:
        return None
    op = _plain_fill_op(value, dtype)
    if op is None:
        return None
    return _rt.apply_generator(op, [dims], _device(device))[0]


def _plain_fill_op(value, dtype):
    """``_fill_op`` through ``_FILL_OPS`` for an int, a bool or a nonzero float; None for other
    values and where Fill cannot carry the value."""
    t = type(value)
    if not (t is int or t is bool or (t is float and value and not _math.isnan(value))):
        return None
    key = (value, dtype)
    try:
        op = _FILL_OPS.get(key)
    except TypeError:  # an unhashable dtype: the general path says what it makes of it
        return None
    if op is None:
        op = _fill_op(value, dtype)
        if op is None:
            return None
        if len(_FILL_OPS) >= _FILL_OPS_LIMIT:
            _FILL_OPS.clear()
        _FILL_OPS[key] = op
    return op


def _fill_traced(fn, shape, value, dtype, device):
    """``_fill`` where a trace records and ``shape`` holds values (x.shape's dims, Tensors): a
    0-d fill broadcast to the shape as a value, so that a dumped model follows the shapes it
    came from. None where the shape is plain ints."""
    if not _symbolic_shape.active():
        return None
    values = _symbolic_shape.shape_values(shape)
    if values is None:
        return None
    shape_value, dims = values
    target = _shape_arg(fn, dims)
    return _symbolic_shape.broadcast_to(_fill((), value, dtype, device), shape_value, target)


def _exact_f32(v):
    return float(np.float32(v)) == v


def _relayout(x):
    return _apply(cached_op(builtin.Relayout), x)[0]


def _value_dtype(value):
    """The dtype a Tensor made from ``value`` has (MegEngine's rule for ``full``)."""
    if isinstance(value, bool):  # before int: bool is an int subclass
        return "bool"
    if isinstance(value, int):
        return "int32"
    if isinstance(value, float):
        return "float32"
    if isinstance(value, Tensor):
        return value._dtype_name
    return Tensor(np.asarray(value))._dtype_name


def full(shape, value, *, dtype=None, device=None):
    """A tensor of the given shape with every element equal to ``value``.

    Args:
        shape: an int or a sequence of ints.
        value: the value of every element.
        dtype: dtype of the result; when None, the dtype a Tensor of ``value`` has (an int gives
            int32, a float float32, a bool bool, a numpy scalar its own dtype).
        device: where the result lives; the default device when None.

    Returns:
        a Tensor of ``shape``.

    Examples:
        >>> import megengine.functional as F
        >>> F.full((2, 3), 7).numpy().tolist()
        [[7, 7, 7], [7, 7, 7]]
        >>> F.full(2, 7).dtype.name, F.full(2, 0.5).dtype.name, F.full(2, True).dtype.name
        ('int32', 'float32', 'bool')
    """
    if dtype is None:
        dtype = _value_dtype(value)
    out = _fill_plain(shape, value, dtype, device)
    if out is not None:
        return out
    out = _fill_traced("full", shape, value, dtype, device)
    if out is not None:
        return out
    return _fill(_shape_arg("full", shape), value, dtype, device)


def zeros(shape, *, dtype="float32", device=None):
    """A tensor of zeros.

    Args:
        shape: an int or a sequence of ints.
        dtype: dtype of the result.
        device: where the result lives; the default device when None.

    Returns:
        a Tensor of ``shape``.

    Examples:
        >>> import megengine.functional as F
        >>> F.zeros((2, 1)).numpy().tolist()
        [[0.0], [0.0]]
    """
    out = _fill_plain(shape, 0, dtype, device)
    if out is not None:
        return out
    out = _fill_traced("zeros", shape, 0, dtype, device)
    if out is not None:
        return out
    return _fill(_shape_arg("zeros", shape), 0, dtype, device)


def ones(shape, *, dtype="float32", device=None):
    """A tensor of ones.

    Args:
        shape: an int or a sequence of ints.
        dtype: dtype of the result.
        device: where the result lives; the default device when None.

    Returns:
        a Tensor of ``shape``.

    Examples:
        >>> import megengine.functional as F
        >>> F.ones(3, dtype="int32").numpy().tolist()
        [1, 1, 1]
    """
    out = _fill_plain(shape, 1, dtype, device)
    if out is not None:
        return out
    out = _fill_traced("ones", shape, 1, dtype, device)
    if out is not None:
        return out
    return _fill(_shape_arg("ones", shape), 1, dtype, device)


def full_like(inp, value):
    """A tensor of ``inp``'s shape, dtype and device filled with ``value``.

    Args:
        inp: the tensor whose shape, dtype and device the result takes.
        value: the value of every element.

    Returns:
        a Tensor like ``inp``.

    Examples:
        >>> import megengine.functional as F
        >>> F.full_like(F.zeros((1, 2), dtype="int32"), 5).numpy().tolist()
        [[5, 5]]
    """
    x = as_tensor(inp)
    if _symbolic_shape.active() and x.ndim and not is_symbolic(x):
        # x's shape as a value: a traced graph follows it.
        shape = _symbolic_shape.shape_of(x, range(x.ndim))
        filled = _fill((), value, x._dtype_name, x.device)
        return _symbolic_shape.broadcast_to(filled, shape, x.shape)
    op = _plain_fill_op(value, x._dtype_name)
    if op is None:
        return _fill(x.shape, value, x._dtype_name, x.device)
    return _rt.apply_generator(op, [list(x.shape)], _device(x.device))[0]


def zeros_like(inp):
    """A tensor of zeros with ``inp``'s shape, dtype and device.

    Args:
        inp: the tensor whose shape, dtype and device the result takes.

    Returns:
        a Tensor like ``inp``.

    Examples:
        >>> import megengine.functional as F
        >>> F.zeros_like(F.ones((2,))).numpy().tolist()
        [0.0, 0.0]
    """
    return full_like(inp, 0)


def ones_like(inp):
    """A tensor of ones with ``inp``'s shape, dtype and device.

    Args:
        inp: the tensor whose shape, dtype and device the result takes.

    Returns:
        a Tensor like ``inp``.

    Examples:
        >>> import megengine.functional as F
        >>> F.ones_like(F.zeros((2,), dtype="int32")).numpy().tolist()
        [1, 1]
    """
    return full_like(inp, 1)


def arange(start=0, stop=None, step=1, *, dtype="float32", device=None):
    """Evenly spaced values ``start, start + step, ...`` up to ``stop`` (excluded).

    With only ``start`` given, it is the stop and the values start at 0 (as ``numpy.arange``).
    The arguments may be one-element Tensors; while a trace records, those and the dims of
    ``x.shape`` stay values of the graph, so the traced (or dumped) function follows them.

    Args:
        start: first value (or the stop when ``stop`` is None): a number or a Tensor.
        stop: end of the interval, excluded.
        step: spacing between values; not 0.
        dtype: dtype of the result.
        device: where the result lives; the default device when None.

    Returns:
        a 1-D Tensor of ``ceil((stop - start) / step)`` elements.

    Examples:
        >>> import megengine.functional as F
        >>> F.arange(5).numpy().tolist()
        [0.0, 1.0, 2.0, 3.0, 4.0]
        >>> F.arange(1, 7, 2, dtype="int32").numpy().tolist()
        [1, 3, 5]
    """
    if stop is None:
        start, stop = 0, start
    if _follows_values(start, stop, step):
        return _arange_traced(start, stop, step, dtype, device)
    start, stop, step = float(start), float(stop), float(step)
    if step == 0:
        raise MegEngineError("arange: step must not be 0")
    n = max(0, _math.ceil((stop - start) / step))
    dtype = _dtype_name(dtype)
    if dtype in _INT_DTYPES and not (_exact_f32(start) and _exact_f32(step)):
        # Arange carries start and step as float32; integers it cannot hold exactly go via numpy.
        values = start + np.arange(n, dtype=np.float64) * step
        return Tensor(values.astype(dtype), dtype=dtype, device=_device(device))
    op = cached_op(builtin.Arange, start=start, step=step, dtype=dtype)
    return _rt.apply_generator(op, [[n]], _device(device))[0]


def linspace(start, stop, num, *, dtype="float32", device=None):
    """``num`` evenly spaced values from ``start`` to ``stop``, both included.

    The arguments may be one-element Tensors; while a trace records, those and the dims of
    ``x.shape`` stay values of the graph, so the traced (or dumped) function follows them.

    Args:
        start: first value: a number or a Tensor.
        stop: last value.
        num: number of values, >= 0: an int or an integer Tensor.
        dtype: dtype of the result; an integer dtype truncates the float32 values.
        device: where the result lives; the default device when None.

    Returns:
        a 1-D Tensor of ``num`` elements.

    Examples:
        >>> import megengine.functional as F
        >>> F.linspace(1, 2, 5).numpy().tolist()
        [1.0, 1.25, 1.5, 1.75, 2.0]
    """
    if _follows_values(start, stop, num):
        return _linspace_traced(start, stop, num, dtype, device)
    num = int(num)
    if num < 0:
        raise MegEngineError(f"linspace: num must be >= 0, got {num}")
    dtype = _dtype_name(dtype)
    is_float = dtype in ("float32", "float16", "bfloat16")
    op = cached_op(
        builtin.Linspace,
        start=float(start),
        stop=float(stop),
        endpoint=True,
        dtype=dtype if is_float else "float32",
    )
    out = _rt.apply_generator(op, [[num]], _device(device))[0]
    return out if is_float else out.astype(dtype)


# ---- arange and linspace of values a trace follows ---------------------------------------
# Eagerly the Arange and Linspace generators take their ends as params and their length as a
# preset shape, read from the arguments. While a trace records, arguments that are Tensors or
# dims of x.shape would freeze into those params, so the values are computed by graph ops
# instead: the length is a value (a BroadcastTo of a 0-d one to it, and an exclusive Cumsum
# numbers the entries), the ends are the arguments' own tensors.


def _follows_values(*args):
    return _symbolic_shape.active() and any(
        type(a) is TracedDim or isinstance(a, Tensor) for a in args
    )


def _float_scalar(fn, v, device):
    """``v`` (a one-element Tensor, a TracedDim or a number) as a float32 0-d Tensor."""
    if type(v) is TracedDim:
        v = v.as_tensor()
    elif not isinstance(v, Tensor):
        return Tensor(np.float32(v), device=_device(device))
    if v.size != 1:
        raise MegEngineError(f"{fn}: expected a scalar, got a Tensor of shape {v.shape}")
    return _reshape(v.astype("float32"), ())


def _elemwise(mode, *args):
    return _apply(cached_op(builtin.Elemwise, mode=mode), *args)[0]


def _ramp(start, step, count, dtype, device):
    """``start + i * step`` for i below the value of the int32 0-d ``count`` (0-d float32
    ``start`` and ``step``)."""
    n = int(count._numpy_untraced())
    if n < 0:
        raise MegEngineError(f"linspace: num must be >= 0, got {n}")
    ones = _symbolic_shape.broadcast_to(
        _fill((), 1, "float32", device), _reshape(count, (1,)), (n,)
    )
    index = _apply(cached_op(builtin.Cumsum, axis=0, exclusive=True, reverse=False), ones)[0]
    out = _elemwise("ADD", start, _elemwise("MUL", index, step))
    dtype = _dtype_name(dtype)
    return out if dtype == "float32" else out.astype(dtype)


def _linspace_traced(start, stop, num, dtype, device):
    start = _float_scalar("linspace", start, device)
    stop = _float_scalar("linspace", stop, device)
    count = num.as_tensor() if type(num) is TracedDim else num
    if not isinstance(count, Tensor):
        count = _symbolic_shape.int32(int(num))
    elif count._dtype_name not in _INT_DTYPES:
        value = float(count._numpy_untraced().reshape(-1)[0])
        if value != int(value):
            raise MegEngineError(f"linspace: num must be an integer, got {value}")
    if count.size != 1:
        raise MegEngineError(
            f"linspace: expected a scalar num, got a Tensor of shape {count.shape}"
        )
    count = _reshape(count.astype("int32"), ())
    # MegEngine's step: (stop - start) / (num - 1), num - 1 taken as at least 1
    gaps = _elemwise(
        "MAX",
        _elemwise("SUB", count.astype("float32"), _float_scalar("", 1, device)),
        _float_scalar("", 1, device),
    )
    step = _elemwise("TRUE_DIV", _elemwise("SUB", stop, start), gaps)
    return _ramp(start, step, count, dtype, device)


def _arange_traced(start, stop, step, dtype, device):
    start = _float_scalar("arange", start, device)
    stop = _float_scalar("arange", stop, device)
    step = _float_scalar("arange", step, device)
    if float(step._numpy_untraced()) == 0:
        raise MegEngineError("arange: step must not be 0")
    span = _elemwise("CEIL", _elemwise("TRUE_DIV", _elemwise("SUB", stop, start), step))
    count = _elemwise("MAX", span, _float_scalar("", 0, device)).astype("int32")
    return _ramp(start, step, count, dtype, device)


def eye(N, M=None, *, dtype="float32", device=None):
    """A 2-D tensor with ones on the main diagonal and zeros elsewhere.

    Args:
        N: number of rows, or the shape: a sequence or 1-D Tensor of one or two ints.
        M: number of columns; N when None.
        dtype: dtype of the result.
        device: where the result lives; the default device when None.

    Returns:
        a Tensor of shape (N, M).

    Examples:
        >>> import megengine.functional as F
        >>> F.eye(2, 3, dtype="int32").numpy().tolist()
        [[1, 0, 0], [0, 1, 0]]
    """
    if isinstance(N, Tensor) and N.ndim == 1:
        N = N.numpy().tolist()
    if isinstance(N, (tuple, list)):
        N, M = (N[0], N[1] if len(N) > 1 else None)
    M = N if M is None else M
    shape = _shape_arg("eye", (N, M))
    op = cached_op(builtin.Eye, k=0, dtype=_dtype_name(dtype))
    return _rt.apply_generator(op, [list(shape)], _device(device))[0]


def diag(inp, k=0):
    """The k-th diagonal of a matrix, or a square matrix with a vector on its k-th diagonal.

    Args:
        inp: a 1-D or 2-D tensor.
        k: diagonal offset: 0 main, > 0 above, < 0 below.

    Returns:
        a 2-D Tensor for 1-D ``inp``, a 1-D Tensor for 2-D ``inp``.

    Examples:
        >>> import megengine.functional as F
        >>> F.diag([1, 2]).numpy().tolist()
        [[1, 0], [0, 2]]
        >>> F.diag([[1, 2], [3, 4]], k=1).numpy().tolist()
        [2]
    """
    x = as_tensor(inp)
    if x.ndim not in (1, 2):
        raise MegEngineError(f"diag: input must be 1-D or 2-D, got shape {x.shape}")
    return _apply(cached_op(builtin.Diag, k=int(k)), x)[0]


def reshape(inp, target_shape):
    """The same values in a new shape; one dim may be -1 (inferred).

    Args:
        inp: input tensor.
        target_shape: the new shape (an int or a sequence of ints).

    Returns:
        a Tensor of ``target_shape``.

    Examples:
        >>> import megengine.functional as F
        >>> F.reshape(F.arange(6, dtype="int32"), (2, -1)).numpy().tolist()
        [[0, 1, 2], [3, 4, 5]]
    """
    return _array_method.reshape_checked(as_tensor(inp), target_shape)


def flatten(inp, start_axis=0, end_axis=-1):
    """Merges the axes ``start_axis..end_axis`` (both included) into one.

    Args:
        inp: input tensor.
        start_axis: first axis to merge.
        end_axis: last axis to merge.

    Returns:
        a Tensor with those axes merged.

    Examples:
        >>> import megengine.functional as F
        >>> F.flatten(F.zeros((2, 3, 4)), 1).shape
        (2, 12)
    """
    return _array_method.flatten(as_tensor(inp), start_axis, end_axis)


def transpose(inp, pattern):
    """Permutes the axes: output axis i is input axis ``pattern[i]``; an ``"x"`` in the
    pattern inserts a new axis of size 1.

    Args:
        inp: input tensor.
        pattern: a permutation of the input's axes, possibly with ``"x"`` entries.

    Returns:
        the permuted Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.transpose([[1, 2, 3]], (1, 0)).numpy().tolist()
        [[1], [2], [3]]
        >>> F.transpose([1, 2], (0, "x")).shape
        (2, 1)
    """
    x = as_tensor(inp)
    pattern = tuple(pattern)
    op = _cached_view_op(_dimshuffle_ops, pattern)
    if op is not None and len(pattern) == x.ndim:
        return _apply(op, x)[0]  # a permutation of x's axes: the cache holds no other
    perm = tuple(int(p) for p in pattern if p != "x")
    if sorted(perm) != list(range(x.ndim)):
        raise MegEngineError(
            f"transpose: pattern {pattern} is no permutation of the axes of {x.shape}"
        )
    out = _apply(cached_op(builtin.Dimshuffle, pattern=perm), x)[0]
    new = tuple(i for i, p in enumerate(pattern) if p == "x")
    if new:
        out = _apply(cached_op(builtin.AddAxis, axis=new), out)[0]
    return out


def swapaxes(inp, axis1, axis2):
    """Interchanges two axes.

    Args:
        inp: input tensor.
        axis1: first axis.
        axis2: second axis.

    Returns:
        the Tensor with the two axes swapped.

    Examples:
        >>> import megengine.functional as F
        >>> F.swapaxes(F.zeros((1, 2, 3)), 0, 2).shape
        (3, 2, 1)
    """
    x = as_tensor(inp)
    a, b = _axis("swapaxes", axis1, x.ndim), _axis("swapaxes", axis2, x.ndim)
    perm = list(range(x.ndim))
    perm[a], perm[b] = perm[b], perm[a]
    return _apply(cached_op(builtin.Dimshuffle, pattern=tuple(perm)), x)[0]


# Ops found by what a call was given rather than by their params (cached_op keys those): the
# input's shape for squeeze(), a shape argument for broadcast_to, (shape, count, axis) for stack.
# Bounded, being keyed by shapes (remember_op).
_squeeze_all_ops = {}  # by input shape: F.squeeze(x)'s op, False where no axis has size 1
_broadcast_ops = {}
_stack_ops = {}  # (shape, count, axis): the ops of _stack_same_shape
# What an op refuses its inputs with; a fast path that leaves the checks to the op then takes
# the general path, which raises the error of the call (its message, its type) or handles the
# case (0-d inputs to concat).
_OP_ERRORS = (MegEngineError, MegEngineTypeError)


def expand_dims(inp, axis):
    """Inserts axes of size 1.

    Args:
        inp: input tensor.
        axis: an int or a sequence of ints: positions of the new axes in the result.

    Returns:
        the Tensor with the new axes.

    Examples:
        >>> import megengine.functional as F
        >>> F.expand_dims([1, 2], 0).numpy().tolist()
        [[1, 2]]
        >>> F.expand_dims([1, 2], (0, -1)).shape
        (1, 2, 1)
    """
    x = as_tensor(inp)
    if type(axis) is int:
        nd = x.ndim + 1
        if -nd <= axis < nd:
            return _apply(cached_op(builtin.AddAxis, (axis + nd if axis < 0 else axis,)), x)[0]
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    nd = x.ndim + len(axes)
    norm = sorted(_axis("expand_dims", a, nd) for a in axes)
    if len(set(norm)) != len(norm):
        raise MegEngineError(f"expand_dims: repeated axis in {axis}")
    if not norm:
        return x
    return _apply(cached_op(builtin.AddAxis, axis=tuple(norm)), x)[0]


def squeeze(inp, axis=None):
    """Removes axes of size 1.

    Args:
        inp: input tensor.
        axis: an int or a sequence of ints (each of size 1); every size-1 axis when None.

    Returns:
        the Tensor without those axes.

    Examples:
        >>> import megengine.functional as F
        >>> F.squeeze(F.zeros((1, 2, 1)), 0).shape
        (2, 1)
        >>> F.squeeze(F.zeros((1, 2, 1))).shape
        (2,)
    """
    x = as_tensor(inp)
    if axis is None and isinstance(x, Tensor):
        shape = x.shape
        op = _squeeze_all_ops.get(shape)
        if op is None:
            axes = tuple([i for i, s in enumerate(shape) if s == 1])
            op = remember_op(
                _squeeze_all_ops, shape, cached_op(builtin.RemoveAxis, axes) if axes else False
            )
        return x if op is False else _apply(op, x)[0]
    if axis is None:
        axes = tuple([i for i, s in enumerate(x.shape) if s == 1])
    elif type(axis) is int and -x.ndim <= axis < x.ndim and x.shape[axis] == 1:
        axes = (axis + x.ndim if axis < 0 else axis,)
    else:
        axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
        axes = tuple(sorted({_axis("squeeze", a, x.ndim) for a in axes}))
        for a in axes:
            if x.shape[a] != 1:
                raise MegEngineError(
                    f"squeeze: axis {a} of a tensor of shape {x.shape} has size {x.shape[a]}, not 1"
                )
    if not axes:
        return x
    return _apply(cached_op(builtin.RemoveAxis, axes), x)[0]


def _broadcast_shape(fn, shape, target):
    if len(shape) > len(target):
        raise MegEngineError(f"{fn}: cannot broadcast shape {shape} to {target}")
    for s, t in zip(reversed(shape), reversed(target)):
        if s != t and s != 1:
            raise MegEngineError(f"{fn}: cannot broadcast shape {shape} to {target}")


def broadcast_to(inp, shape):
    """Repeats ``inp`` along axes of size 1 (and new leading axes) to reach ``shape``.

    Args:
        inp: input tensor.
        shape: the target shape; an entry may be a 0-d Tensor, or None to keep the input's
            size on that axis (axes aligned from the right; a new leading axis needs a size).

    Returns:
        a Tensor of ``shape``.

    Examples:
        >>> import megengine.functional as F
        >>> F.broadcast_to([1, 2], (2, 2)).numpy().tolist()
        [[1, 2], [1, 2]]
        >>> F.broadcast_to([[1], [2]], (3, None, 2)).shape
        (3, 2, 2)
    """
    x = as_tensor(inp)
    if type(shape) is tuple and isinstance(x, Tensor) and not _is_tracing():
        # A shape of ints seen before; the op checks that x broadcasts to it, and the general
        # path below gives the error.
        op = _cached_view_op(_broadcast_ops, shape)
        if op is not None:
            if x.shape == shape:
                return x
            try:
                return _apply(op, x)[0]
            except _OP_ERRORS:
                pass
    values = None
    if _symbolic_shape.active() and not is_symbolic(x):
        # A traced graph takes a shape that holds values (a Tensor, x.shape's dims) as a value,
        # so that a dumped model follows the shapes they came from.
        values = _symbolic_shape.shape_values(shape, x)
    if values is not None:
        shape_value, shape = values
    if isinstance(shape, (list, tuple)):
        shape = _fill_none_dims("broadcast_to", x.shape, shape)
    target = _shape_arg("broadcast_to", shape)
    _broadcast_shape("broadcast_to", x.shape, target)
    if values is not None:
        return _symbolic_shape.broadcast_to(x, shape_value, target)
    if x.shape == target:
        return x
    op = _broadcast_ops.get(target)
    if op is None:
        op = remember_op(_broadcast_ops, target, builtin.Broadcast(shape=target))
    return _apply(op, x)[0]


def concat(inps, axis=0, device=None):
    """Joins tensors along an existing axis.

    Args:
        inps: a sequence of tensors with equal shapes except along ``axis``; a 0-d tensor
            counts as a 1-element vector, as in MegEngine.
        axis: the axis to join along.
        device: where the result lives (inputs moved to another device carry no gradient, as
            in :func:`copy`); when None, the inputs' device, and inputs on different devices
            are an error, as in MegEngine.

    Returns:
        the joined Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.concat([[[1, 2]], [[3, 4]]], axis=1).numpy().tolist()
        [[1, 2, 3, 4]]
        >>> import megengine as mge
        >>> F.concat([mge.Tensor(2.0), mge.Tensor([3.0, 4.0])]).numpy().tolist()
        [2.0, 3.0, 4.0]
    """
    if device is None and type(axis) is int:
        # Two or more Tensors of one unquantized dtype, the first with dims, outside tracing
        # (_apply_joined's checks, in C++): the op checks the shapes, the axis and the devices;
        # the general path gives the error.
        try:
            out = _apply_joined(cached_op(builtin.Concat, axis), inps)
        except _OP_ERRORS:
            out = None
        if out is not None:
            return out
    inps = list(inps)
    if not inps:
        raise MegEngineError("concat: needs at least one tensor")
    _tensors_device("concat", inps, device)
    xs = _promote(inps)
    if device is not None:
        xs = [x if x.device == _device(device) else x._copy_to(_device(device)) for x in xs]
    else:
        xs = [x if x.device == xs[0].device else x._copy_to(xs[0].device) for x in xs]
    # MegEngine joins a 0-d tensor as one element (the zoo's detectors build their box scale as
    # F.concat([scale_w, scale_h, scale_w, scale_h])), where NumPy refuses it.
    xs = [expand_dims(x, 0) if x.ndim == 0 else x for x in xs]
    nd = xs[0].ndim
    shapes = [x.shape for x in xs]
    ax = _axis("concat", axis, nd)
    for s in shapes:
        if len(s) != nd or s[:ax] + s[ax + 1 :] != shapes[0][:ax] + shapes[0][ax + 1 :]:
            raise MegEngineError(f"concat: shapes {shapes} do not match except along axis {ax}")
    if len(xs) == 1:
        return _relayout(xs[0])
    return _apply(cached_op(builtin.Concat, axis=ax), *xs)[0]


def stack(inps, axis=0, device=None):
    """Joins tensors of one shape along a new axis.

    Args:
        inps: a sequence of tensors of the same shape; 0-d tensors are joined as 1-element
            vectors, as in MegEngine (so the result is (N, 1)).
        axis: position of the new axis in the result.
        device: where the result lives; when None, the inputs' device (inputs on different
            devices are an error, as in MegEngine).

    Returns:
        the stacked Tensor.

    Examples:
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> F.stack([[1, 2], [3, 4]], axis=1).numpy().tolist()
        [[1, 3], [2, 4]]
        >>> F.stack([mge.Tensor(1.0), mge.Tensor(2.0)]).shape  # 0-d: as 1-element vectors
        (2, 1)
    """
    if (
        device is None
        and type(axis) is int
        and (type(inps) is list or type(inps) is tuple)
        and len(inps) > 1
        and not _is_tracing()
    ):
        out = _stack_same_shape(inps, axis)
        if out is not None:
            return out
    inps = list(inps)
    on = _tensors_device("stack", inps, device)
    inps = [as_tensor(x, device=on) for x in inps]
    # MegEngine stacks 0-d tensors as 1-element vectors (it joins them as concat does), so
    # (N, 1) where NumPy gives (N,); scripts written for it index the result that way.
    if inps and all(x.ndim == 0 for x in inps):
        inps = [x.reshape(1) for x in inps]
    return _stack(inps, axis, device)


def _stack_same_shape(inps, axis):
    """``stack`` of two or more Tensors of one dtype and shape without the general path's
    conversions and checks: None where they are not that, are 0-d or on different devices,
    or ``axis`` is out of range (the general path decides)."""
    x0 = inps[0]
    if not isinstance(x0, Tensor):
        return None
    dtype, shape = x0._dtype_name, x0.shape
    if not shape or dtype in _QUANTIZED:
        return None
    key = (shape, len(inps), axis)
    ops = _stack_ops.get(key)
    if ops is None:
        nd = len(shape)
        if not -nd - 1 <= axis <= nd:
            return None
        ax = axis + nd + 1 if axis < 0 else axis
        if ax == nd:  # a new last axis: an AddAxis per input, then Concat
            ops = (cached_op(builtin.AddAxis, (nd,)), cached_op(builtin.Concat, nd), None)
        else:
            # Joined along ax, the inputs lie in memory as stacked along a new axis ax: one
            # Reshape (a view of the contiguous result) instead of an AddAxis per input.
            ops = (
                None,
                cached_op(builtin.Concat, ax),
                _reshape_op((*shape[:ax], len(inps), *shape[ax:])),
            )
        remember_op(_stack_ops, key, ops)
    add_axis, join, view = ops
    try:
        if add_axis is None:
            # None unless every input is a Tensor of x0's dtype and shape (checked in C++)
            out = _apply_joined(join, inps, True)
            return None if out is None else _apply(view, out)[0]
        for x in inps:
            if not isinstance(x, Tensor) or x._dtype_name != dtype or x.shape != shape:
                return None
        return _apply(join, *[_apply(add_axis, x)[0] for x in inps])[0]
    except _OP_ERRORS:  # inputs on different devices
        return None


def _tensors_device(name, inps, device):
    """The device the Tensors among ``inps`` share (None when there are none). Without an
    explicit ``device`` they must share one: MegEngine refuses to guess ("ambiguous device")."""
    devices = list(dict.fromkeys(x.device for x in inps if isinstance(x, Tensor)))
    if device is None and len(devices) > 1:
        raise MegEngineError(
            f"{name}: ambiguous device: the inputs are on {', '.join(devices)}; "
            "pass device= or copy them first"
        )
    return devices[0] if devices else None


def _stack(inps, axis, device=None):
    # NumPy's stack (a 0-d input gives a 1-D result): what F.cross needs.
    if not inps:
        raise MegEngineError("stack: needs at least one tensor")
    shapes = [x.shape for x in inps]
    if any(s != shapes[0] for s in shapes):
        raise MegEngineError(f"stack: all inputs must have the same shape, got {shapes}")
    ax = _axis("stack", axis, inps[0].ndim + 1)
    return concat([expand_dims(x, ax) for x in inps], ax, device)


def _split_sizes(x, axis, sizes):
    if len(sizes) == 1:
        return [x]
    return list(_apply(cached_op(builtin.Split, axis=axis, sizes=tuple(sizes)), x))


def split(inp, nsplits_or_sections, axis=0):
    """Splits a tensor into pieces along ``axis``.

    Args:
        inp: input tensor.
        nsplits_or_sections: an int N, 1 <= N <= inp.shape[axis], for N pieces whose sizes
            differ by at most one, the larger first (as ``numpy.array_split``); or a sequence
            of ascending indices at which to cut (as ``numpy.split``).
        axis: the axis to split.

    Returns:
        a tuple of Tensors (as MegEngine).

    Examples:
        >>> import megengine.functional as F
        >>> [t.numpy().tolist() for t in F.split(F.arange(7, dtype="int32"), 3)]
        [[0, 1, 2], [3, 4], [5, 6]]
        >>> [t.numpy().tolist() for t in F.split(F.arange(5, dtype="int32"), [1, 3])]
        [[0], [1, 2], [3, 4]]
    """
    x = as_tensor(inp)
    if x.ndim == 0:
        raise MegEngineError("split: cannot split a zero-dimensional tensor")
    ax = _axis("split", axis, x.ndim)
    n = x.shape[ax]
    # The messages are MegEngine 1.13's word for word (its tests compare them); ``axis`` as
    # given, the sections as their repr.
    if isinstance(nsplits_or_sections, INTEGER_TYPES):
        k = int(nsplits_or_sections)
        if k <= 0:
            raise MegEngineError("Number sections must be larger than 0")
        if k > n:
            raise MegEngineError(f"The size {n} at dim {axis} cannot be split into {k} sections")
        sizes = [(n + k - 1 - i) // k for i in range(k)]
    else:
        cuts = [int(c) for c in nsplits_or_sections]
        bounds = [0] + cuts + [n]
        if any(b < a for a, b in itertools.pairwise(bounds)):
            raise MegEngineError(f"Invalid nsplits_or_secions: {nsplits_or_sections!r}")
        sizes = [b - a for a, b in itertools.pairwise(bounds)]
    return tuple(_split_sizes(x, ax, sizes))


def cond_take(mask, x):
    """The elements of ``x`` where ``mask`` is true, and their flat indices.

    Args:
        mask: a bool tensor of ``x``'s shape.
        x: input tensor.

    Returns:
        a tuple (values, indices) of 1-D Tensors: the selected elements in row-major order and
        their int32 indices into the flattened ``x``.

    Examples:
        >>> import megengine.functional as F
        >>> v, i = F.cond_take(F.greater([[1.0, 5.0], [7.0, 2.0]], 3), [[1.0, 5.0], [7.0, 2.0]])
        >>> v.numpy().tolist(), i.numpy().tolist()
        ([5.0, 7.0], [1, 2])
    """
    m, v = as_tensor(mask), as_tensor(x)
    if m._dtype_name != "bool":
        # MegEngine raises ValueError here
        raise MegEngineError(f"cond_take: mask must be bool, got {m._dtype_name}")
    if m.shape != v.shape:
        raise MegEngineError(f"cond_take: mask shape {m.shape} differs from data shape {v.shape}")
    values, indices, count = _apply(cached_op(builtin.CondTake), v, m)
    cap = values.shape[0]
    if _symbolic_shape.active():
        cnt = int(count._numpy_untraced()[0])
        # The count as a value: a traced graph takes however many the data has.
        return (
            _symbolic_shape.take_prefix(values, count, cnt),
            _symbolic_shape.take_prefix(indices, count, cnt),
        )
    # Static-shape contract: keep the first `count` elements through Split, which autograd
    # records (a trace then holds the count as a constant: the read ends its recording).
    cnt = int(count.numpy()[0])
    values = _split_sizes(values, 0, [cnt, cap - cnt])[0]
    indices = _split_sizes(indices, 0, [cnt, cap - cnt])[0]
    return values, indices


def non_zero(condition, as_tuple=False):
    """Indices of the nonzero elements of ``condition``, in row-major order.

    Args:
        condition: input tensor of at least one dimension (any dtype; nonzero means true).
        as_tuple: return one 1-D index tensor per dimension (NumPy's ``nonzero`` form) instead
            of a single 2-D tensor.

    Returns:
        when ``as_tuple`` is False, an int32 Tensor of shape ``(count, ndim)`` whose rows are
        the coordinates of the nonzero elements; otherwise a tuple of ``ndim`` int32 Tensors of
        shape ``(count,)``.

    Examples:
        >>> import megengine.functional as F
        >>> F.non_zero([[0, 3], [4, 0]]).numpy().tolist()
        [[0, 1], [1, 0]]
        >>> [t.numpy().tolist() for t in F.non_zero([1, 0, 2], as_tuple=True)]
        [[0, 2]]
    """
    x = as_tensor(condition)
    if x.ndim == 0:
        raise MegEngineError("non_zero: condition must have at least one dimension, got a scalar")
    coords, count = _apply(cached_op(builtin.NonZero), x)
    cap = coords.shape[1]
    # Under symbolic shapes the graph follows the count; otherwise a trace would hold it as a
    # constant, so the read ends the recording.
    cnt = int((count._numpy_untraced() if _symbolic_shape.active() else count.numpy())[0])
    if _symbolic_shape.active():
        # The count as a value: a traced graph takes however many the data has.
        rows = _symbolic_shape.take_prefix(transpose(coords, (1, 0)), count, cnt)
        if as_tuple:
            cols = transpose(rows, (1, 0))
            return tuple(cols[i] for i in range(x.ndim))
        return rows
    # Static-shape contract: the first `count` columns hold the coordinates.
    coords = _split_sizes(coords, 1, [cnt, cap - cnt])[0]
    if as_tuple:
        return tuple(coords[i] for i in range(x.ndim))
    return transpose(coords, (1, 0))


def where(mask, x, y):
    """Elements of ``x`` where ``mask`` is true and of ``y`` elsewhere (broadcast together).

    Args:
        mask: a bool tensor.
        x: values where mask is true.
        y: values where mask is false.

    Returns:
        a Tensor of the broadcast shape and ``x``'s and ``y``'s promoted dtype.

    Examples:
        >>> import megengine.functional as F
        >>> F.where(F.less([1, 5, 3], 4), [1, 2, 3], 0).numpy().tolist()
        [1, 0, 3]
    """
    if (
        isinstance(mask, Tensor)
        and isinstance(x, Tensor)
        and isinstance(y, Tensor)
        and mask._dtype_name == "bool"
        and x._dtype_name == y._dtype_name
        and x._dtype_name not in _array_method._QUANTIZED
        and mask.shape == x.shape == y.shape
    ):
        # Tensors of one shape and dtype, the usual call: nothing to promote or broadcast.
        device = _array_method.device_name
        if device(x) == device(y) == device(mask):
            return _apply(cached_op(builtin.Elemwise, "COND"), mask, x, y)[0]
    if isinstance(mask, Tensor) and mask._dtype_name == "bool":
        # One operand a Python scalar (F.where(m, x, 0.0)): the scalar's kept 0-d tensor where
        # _promote would give it the other operand's dtype; broadcasting it is the op's.
        if type(y) in _PY_SCALARS and isinstance(x, Tensor):
            out = _where_scalar(mask, x, y, 2)
        elif type(x) in _PY_SCALARS and isinstance(y, Tensor):
            out = _where_scalar(mask, y, x, 1)
        else:
            out = None
        if out is not None:
            return out
    m = as_tensor(mask)
    if m._dtype_name != "bool":
        # MegEngine raises ValueError here
        raise MegEngineError(f"where: mask must be bool, got {m._dtype_name}")
    a, b = _promote([x, y])
    shapes = [m.shape, a.shape, b.shape]
    try:
        np.broadcast_shapes(*shapes)
    except ValueError:
        raise MegEngineError(f"where: shapes {shapes} cannot be broadcast together") from None
    if m.device != a.device:
        m = m._copy_to(a.device)
    if b.device != a.device:
        b = b._copy_to(a.device)
    return _apply(cached_op(builtin.Elemwise, mode="COND"), m, a, b)[0]


_PY_SCALARS = frozenset((int, float, bool))


def _where_scalar(mask, t, scalar, pos):
    """``where`` of bool ``mask`` and tensor ``t`` of its shape, on its device, with a Python
    ``scalar`` at operand ``pos`` (1: x, 2: y); None where the general path must run."""
    dt = t._dtype_name
    if dt in _array_method._QUANTIZED or mask.shape != t.shape or _is_tracing():
        return None
    device = _array_method.device_name(t)
    if _array_method.device_name(mask) != device:
        return None
    s = _array_method.kept_scalar(scalar, dt, device, promotes=True)
    if s is None:
        return None
    op = cached_op(builtin.Elemwise, "COND")
    return _apply(op, mask, t, s)[0] if pos == 2 else _apply(op, mask, s, t)[0]


def _index_tensor(fn, index, device):
    idx = as_tensor(index)
    if idx._dtype_name not in ("int8", "uint8", "int16", "int32"):
        raise MegEngineTypeError(f"{fn}: index must be an integer tensor, got {idx._dtype_name}")
    if idx._dtype_name != "int32":
        idx = idx.astype("int32")
    if idx.device != device:
        idx = idx._copy_to(device)
    return idx


def _check_gather_shapes(fn, data, ax, index):
    if index.ndim != data.ndim:
        raise MegEngineError(
            f"{fn}: index of shape {index.shape} must have the rank of the input {data.shape}"
        )
    for d in range(data.ndim):
        if d != ax and index.shape[d] > data.shape[d]:
            raise MegEngineError(
                f"{fn}: index shape {index.shape} exceeds input shape {data.shape} on axis {d}"
            )


def gather(inp, axis, index):
    """Picks values along ``axis`` by ``index``: ``out[i][j] = inp[index[i][j]][j]`` for axis 0.

    Args:
        inp: input tensor.
        axis: the axis to index along.
        index: an integer tensor of ``inp``'s rank; its values lie in [0, inp.shape[axis]).

    Returns:
        a Tensor of ``index``'s shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.gather([[1, 2], [3, 4]], 1, [[1], [0]]).numpy().tolist()
        [[2], [3]]
    """
    x = as_tensor(inp)
    ax = _axis("gather", axis, max(x.ndim, 1))
    idx = _index_tensor("gather", index, x.device)
    _check_gather_shapes("gather", x, ax, idx)
    return _apply(cached_op(builtin.Gather, axis=ax), x, idx)[0]


def scatter(inp, axis, index, source):
    """Writes ``source`` into ``inp`` at ``index`` along ``axis``:
    ``inp[index[i][j]][j] = source[i][j]`` for axis 0.

    As MegEngine's, it updates ``inp`` itself (an assignment, as ``inp[...] = v``: autograd sees
    ``inp`` stand for the result from then on) and returns it; an ``inp`` that is not a Tensor
    is converted and left unchanged.

    Args:
        inp: input tensor.
        axis: the axis to index along.
        index: an integer tensor of ``inp``'s rank; its values lie in [0, inp.shape[axis]).
        source: values to write, of ``index``'s shape (converted to ``inp``'s dtype).

    Returns:
        ``inp`` (a Tensor of its shape).

    Examples:
        >>> import megengine.functional as F
        >>> x = F.zeros((2, 2))
        >>> y = F.scatter(x, 0, [[1, 0]], [[5.0, 6.0]])
        >>> y is x, x.numpy().tolist()
        (True, [[0.0, 6.0], [5.0, 0.0]])
    """
    x = as_tensor(inp)
    ax = _axis("scatter", axis, max(x.ndim, 1))
    if (
        x is inp
        and isinstance(x, Tensor)
        and isinstance(index, Tensor)
        and isinstance(source, Tensor)
        and index._dtype_name == "int32"
        and source._dtype_name == x._dtype_name
    ):
        # The op checks the ranks, shapes and devices that the path below checks (2.2 us of
        # Python around a 1.1 us op); on its error that path runs and raises its own message,
        # or copies an index from another device.
        try:
            out = _apply(cached_op(builtin.Scatter, ax, "SET"), x, index, source)[0]
        except _OP_ERRORS:
            out = None
        if out is not None:
            x._assign(out)
            return x
    # Tensors of the right dtypes on x's device are taken as they are, without the general
    # conversions (each reads a CompNode, 0.3 us).
    device = _array_method.device_name(x) if isinstance(x, Tensor) else None
    if (
        device is not None
        and isinstance(index, Tensor)
        and index._dtype_name == "int32"
        and _array_method.device_name(index) == device
    ):
        idx = index
    else:
        idx = _index_tensor("scatter", index, x.device)
    if device is not None and isinstance(source, Tensor) and source._dtype_name == x._dtype_name:
        src = source
    else:
        src = as_tensor(source, device=x.device)
        if src._dtype_name != x._dtype_name:
            src = src.astype(x._dtype_name)
    _check_gather_shapes("scatter", x, ax, idx)
    if src.shape != idx.shape:
        raise MegEngineError(
            f"scatter: source shape {src.shape} differs from index shape {idx.shape}"
        )
    out = _apply(cached_op(builtin.Scatter, ax, "SET"), x, idx, src)[0]
    if x is not inp:
        return out
    x._assign(out)
    return x


def copy(inp, device=None):
    """A copy of ``inp``, on ``device`` if given.

    A copy on the same device is recorded by autograd; a copy to another device is not (the
    runtime has no differentiable cross-device op yet), so no gradient flows back through it.

    Args:
        inp: input tensor.
        device: where the copy lives; ``inp``'s device when None.

    Returns:
        a new Tensor with ``inp``'s values.

    Examples:
        >>> import megengine.functional as F
        >>> F.copy([1, 2], "cpu1").device == "cpu1"
        True
    """
    x = as_tensor(inp)
    if device is None or _device(device) == x.device:
        return _relayout(x)
    return x._copy_to(_device(device))


def cumsum(inp, axis):
    """Running sum along ``axis`` (bool inputs count as int32).

    Args:
        inp: input tensor.
        axis: the axis to scan.

    Returns:
        a Tensor of ``inp``'s shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.cumsum([[1, 2, 3], [4, 5, 6]], axis=1).numpy().tolist()
        [[1, 3, 6], [4, 9, 15]]
    """
    x = as_tensor(inp)
    if x._dtype_name == "bool":
        x = x.astype("int32")
    if x.ndim == 0:
        _axis("cumsum", axis, 1)
        return _relayout(x)
    ax = _axis("cumsum", axis, x.ndim)
    return _apply(cached_op(builtin.Cumsum, axis=ax, exclusive=False, reverse=False), x)[0]


def meshgrid(*inputs, indexing="xy"):
    """Coordinate grids from 1-D coordinate vectors (as ``numpy.meshgrid``).

    Args:
        inputs: 1-D tensors.
        indexing: ``"xy"`` (Cartesian: the first two output axes swapped) or ``"ij"`` (matrix).

    Returns:
        a tuple of Tensors (as MegEngine), one per input, all of the grid's shape.

    Examples:
        >>> import megengine.functional as F
        >>> x, y = F.meshgrid([1, 2, 3], [4, 5])
        >>> x.numpy().tolist(), y.numpy().tolist()
        ([[1, 2, 3], [1, 2, 3]], [[4, 4, 4], [5, 5, 5]])
    """
    if indexing not in ("xy", "ij"):
        raise MegEngineError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    xs = [as_tensor(x) for x in inputs]
    for x in xs:
        if x.ndim != 1:
            raise MegEngineError(f"meshgrid: inputs must be 1-D, got shape {x.shape}")
    n = len(xs)
    shape = [x.shape[0] for x in xs]
    if indexing == "xy" and n >= 2:
        shape[0], shape[1] = shape[1], shape[0]
    out = []
    for k, x in enumerate(xs):
        pos = k
        if indexing == "xy" and n >= 2 and k < 2:
            pos = 1 - k
        view = [1] * n
        view[pos] = x.shape[0]
        out.append(broadcast_to(_reshape(x, tuple(view)), tuple(shape)))
    return tuple(out)


def repeat(inp, repeats, axis=None):
    """Repeats each element ``repeats`` times along ``axis``.

    Args:
        inp: input tensor.
        repeats: number of repetitions of each element, >= 0.
        axis: the axis to repeat along; the input is flattened first when None.

    Returns:
        the repeated Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.repeat([[1, 2], [3, 4]], 2, axis=1).numpy().tolist()
        [[1, 1, 2, 2], [3, 3, 4, 4]]
    """
    x = as_tensor(inp)
    if not isinstance(repeats, INTEGER_TYPES):
        raise TypeError(f"repeat: repeats must be an int, got {type(repeats).__name__}")
    repeats = int(repeats)
    if repeats < 0:
        raise MegEngineError(f"repeat: repeats must be >= 0, got {repeats}")
    if axis is None:
        x, ax = _reshape(x, (-1,)) if x.ndim != 1 else x, 0
    else:
        ax = _axis("repeat", axis, x.ndim)
    shape = x.shape
    y = _apply(cached_op(builtin.AddAxis, axis=(ax + 1,)), x)[0]
    y = broadcast_to(y, shape[: ax + 1] + (repeats,) + shape[ax + 1 :])
    return _reshape(y, shape[:ax] + (shape[ax] * repeats,) + shape[ax + 1 :])


def tile(inp, reps):
    """Repeats the whole tensor ``reps[i]`` times along axis i (as ``numpy.tile``).

    Args:
        inp: input tensor.
        reps: an int or a sequence of ints, >= 0; the shorter of ``reps`` and the shape is
            padded with leading 1s.

    Returns:
        the tiled Tensor.

    Examples:
        >>> import megengine.functional as F
        >>> F.tile([[1, 2]], (2, 2)).numpy().tolist()
        [[1, 2, 1, 2], [1, 2, 1, 2]]
    """
    x = as_tensor(inp)
    reps = _shape_arg("tile", reps)
    nd = max(x.ndim, len(reps))
    shape = (1,) * (nd - x.ndim) + x.shape
    reps = (1,) * (nd - len(reps)) + reps
    x = _reshape(x, shape)
    # A new axis of reps[i] before each repeated axis, broadcast, then merged: as many new axes
    # at a time as a tensor's 7 dims leave room for; with none left, the axes around a repeated
    # one are merged first.
    tiled = [i for i in range(nd) if reps[i] != 1]
    step = _MAX_NDIM - nd
    if step < 1:
        for i in tiled:
            pre, post = int(np.prod(shape[:i])), int(np.prod(shape[i + 1 :]))
            y = broadcast_to(_reshape(x, (pre, 1, shape[i], post)), (pre, reps[i], shape[i], post))
            shape = shape[:i] + (shape[i] * reps[i],) + shape[i + 1 :]
            x = _reshape(y, shape)
        return x
    for first in range(0, len(tiled), step):
        group = set(tiled[first : first + step])
        inter, target = [], []
        for i, s in enumerate(shape):
            if i in group:
                inter.append(1)
                target.append(reps[i])
            inter.append(s)
            target.append(s)
        x = broadcast_to(_reshape(x, inter), target)
        shape = tuple(s * reps[i] if i in group else s for i, s in enumerate(shape))
        x = _reshape(x, shape)
    return x


def roll(inp, shift, axis=None):
    """Rolls elements along axes: element i moves to i + shift (wrapping around).

    Args:
        inp: input tensor.
        shift: an int or a sequence of ints, one per axis.
        axis: an int or a sequence of ints; the flattened input is rolled when None.

    Returns:
        a Tensor of ``inp``'s shape.

    Examples:
        >>> import megengine.functional as F
        >>> F.roll([1, 2, 3, 4], 1).numpy().tolist()
        [4, 1, 2, 3]
        >>> F.roll([[1, 2], [3, 4]], -1, axis=1).numpy().tolist()
        [[2, 1], [4, 3]]
    """
    x = as_tensor(inp)
    shape = x.shape
    if axis is None:
        out = roll(_reshape(x, (-1,)), shift, 0)
        return _reshape(out, shape)
    shifts = list(shift) if isinstance(shift, (tuple, list)) else [shift]
    axes = list(axis) if isinstance(axis, (tuple, list)) else [axis]
    if len(shifts) == 1 and len(axes) > 1:
        shifts = shifts * len(axes)
    if len(shifts) != len(axes):
        raise MegEngineError(f"roll: {len(shifts)} shifts given for {len(axes)} axes")
    # One Roll op for every axis, one pass over the data (Split then Concat per axis copied twice
    # per axis). Shifts are reduced here, where Python ints of any size are exact: a repeated axis
    # adds its shifts, and an axis whose total is a multiple of its size drops out.
    k = {}
    for s, a in zip(shifts, axes):
        ax = _axis("roll", a, max(x.ndim, 1))
        n = shape[ax] if x.ndim else 1
        if n:
            k[ax] = (k.get(ax, 0) + int(s)) % n
    k = {ax: v for ax, v in sorted(k.items()) if v}
    if not k:
        return _relayout(x)
    return _apply(cached_op(builtin.Roll, shift=tuple(k.values()), axis=tuple(k)), x)[0]
