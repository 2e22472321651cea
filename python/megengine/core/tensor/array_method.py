"""The Python half of ``megengine.Tensor``: operators and array methods.

They are installed on the C++ extension's ``Tensor`` class itself (see ``megengine/tensor.py``),
so every tensor, including those ``apply`` returns, has them without a wrapper object. Each one
builds a generated op (``megengine.core.ops.builtin``) and runs it with ``apply``.
"""

import copy
import copyreg
import functools
import math
import operator

import numpy as np

from .. import _imperative_rt as _rt
from .._imperative_rt import MegEngineError
from ..ops import builtin
from .dtype import is_dtype_equal, operand_dtype_for, promote_names, scalar_dtype_for
from .quant_dtype import _STORAGE_TYPES
from .shape_dim import TracedDim, follows_shapes

Tensor = _rt.Tensor
apply = _rt.apply
_is_tracing = _rt._is_tracing
# A tensor's device name (a str): a fast path compares devices as names in 0.1 us, CompNode's
# __eq__ takes 0.7.
device_name = operator.attrgetter("_device_name")


def _build_op(cls, *args, **params):
    """``cls(*args, **params)``, built once per distinct call: op objects are immutable, so
    every call with the same arguments shares one."""
    return cls(*args, **params)


# One op object per (class, arguments): building a generated op costs 1.4 us (pybind11's
# constructor), looking it up here 0.15 us positionally. functools' C cache keys the call
# without a Python frame; keyword arguments cost it a dict and a longer key (0.3-0.4 us), so the
# hot paths pass the params positionally, in the op's constructor order
# (``cached_op(builtin.Reduce, "SUM", 1)``). Positional and keyword calls, and keywords in
# another order, each build their own copy of the same op once. Bounded (least recently used
# out): ops keyed by shapes (a reduction's Reshape) would otherwise grow with every batch size a
# program sees; the bound costs a hit 3 ns.
_CACHED_OPS_LIMIT = 4096
cached_op = functools.lru_cache(maxsize=_CACHED_OPS_LIMIT)(_build_op)


# The symbolic var of the layer above (megengine.utils.network_node's VarNode: a var of a model
# being edited), which this layer must not import; it registers itself (register_symbolic).
# Functional code converts its inputs with as_tensor and _promote and computes with apply, so a
# var passing through those two reaches apply, which adds an op node instead of computing: every
# op works on vars without knowing of them. Where a value is read on the host (a shape, a count)
# the code asks is_tensor, and the var's numpy() computes it.
_symbolic_type = ()
_symbolic_promote = None
_symbolic_const = None


def register_symbolic(cls, apply_fn, promote_fn, const_fn):
    """Makes instances of ``cls`` symbolic vars: ``apply`` and elementwise ops with one among
    their inputs call ``apply_fn(op, *inputs)`` (returning the outputs), :func:`as_tensor` lets
    them through, :func:`_promote` calls ``promote_fn(args)``, and :func:`symbolic_const` makes
    a constant var with ``const_fn(value, dtype)``."""
    global _symbolic_type, _symbolic_promote, _symbolic_const
    _symbolic_type, _symbolic_promote, _symbolic_const = cls, promote_fn, const_fn
    _rt._set_symbolic_apply(cls, apply_fn)


def is_tensor(x):
    """Whether ``x`` is a Tensor or a symbolic var: a value computed by ops, with ``numpy()``,
    ``item()`` and ``tolist()``."""
    return isinstance(x, (Tensor, _symbolic_type))


def is_symbolic(x):
    """Whether ``x`` is a symbolic var (a registered class's instance)."""
    return isinstance(x, _symbolic_type)


def symbolic_const(value, dtype=None):
    """``value`` as a constant symbolic var of ``dtype``: what a value becomes next to vars."""
    return _symbolic_const(value, dtype)


def as_tensor(value, dtype=None, device=None):
    """``value`` as a Tensor (Tensors and symbolic vars pass through unless a dtype change is
    asked)."""
    if isinstance(value, Tensor):
        return value if dtype is None or value._dtype_name == dtype else value.astype(dtype)
    if isinstance(value, _symbolic_type):
        return value if dtype is None or value._dtype_name == dtype else value.astype(dtype)
    return Tensor(value, dtype=dtype, device=device)


def _promote(args):
    """Converts the Tensor/scalar/array arguments of one op to a common dtype and device."""
    if any(a is None for a in args):
        raise TypeError("the operand is None and is not supported.")  # MegEngine 1.13's words
    if _symbolic_promote is not None and any(isinstance(a, _symbolic_type) for a in args):
        return _symbolic_promote(args)
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not tensors:
        # No tensor whose dtype a list could take (MegEngine 1.13 raises for lists alone): each
        # list becomes a tensor of its own dtype, so F.dot([1, 2], [0.5, 0.5]) is 1.5.
        args = tuple(Tensor(a) if isinstance(a, (list, tuple)) else a for a in args)
        tensors = [a for a in args if isinstance(a, Tensor)]
    if not tensors:
        tensors = [Tensor(args[0])]
        args = (tensors[0],) + tuple(args[1:])
    for t in tensors:
        if t._dtype_name in _QUANTIZED:
            return _promote_quantized(args, t)
    dt = tensors[0]._dtype_name
    for t in tensors[1:]:
        dt = promote_names(dt, t._dtype_name)
    for a in args:
        if not isinstance(a, Tensor):
            if type(a) is TracedDim:  # a shape read while tracing: an int computed by the graph
                dt = promote_names(dt, scalar_dtype_for(dt, a._value))
            else:
                dt = promote_names(dt, operand_dtype_for(dt, a))
    device = tensors[0].device
    return [
        _traced_scalar(a, dt) if type(a) is TracedDim else as_tensor(a, dt, device) for a in args
    ]


_QUANTIZED = ("QuantizedS8", "Quantized8Asymm", "QuantizedS32")


def _promote_quantized(args, q):
    """The operands beside quantized tensor ``q`` as tensors of its dtype, as MegEngine 1.13
    converts them: quantized tensors must have q's dtype, scale and zero point included (nothing is
    requantised implicitly); float and integer tensors, NumPy arrays and numbers, and Python floats
    are quantized by value (``astype``: ``1.0`` at scale 0.1 is stored as 10); Python ints and
    bools, lists and tuples, and bool arrays are taken as the stored integers (``q + 1`` adds 1 to
    each stored integer, i.e. one scale step), cast as NumPy casts them (wrapping)."""
    qdt, device = q.dtype, q.device
    out = []
    for a in args:
        if isinstance(a, Tensor):
            if a._dtype_name in _QUANTIZED:
                if not is_dtype_equal(a.dtype, qdt):
                    raise TypeError(
                        f"quantized operands of two dtypes, {_quantized_name(qdt)} and "
                        f"{_quantized_name(a.dtype)}: requantize one with astype first"
                    )
            elif a._dtype_name == "bool":
                raise TypeError(
                    f"a bool tensor does not compute with a {_quantized_name(qdt)} tensor: "
                    "astype it first"
                )
            else:
                a = a.astype(qdt)
            out.append(a)
        elif type(a) is TracedDim:
            raise TypeError("a shape read while tracing does not compute with a quantized tensor")
        elif isinstance(a, (bool, int, np.bool_, list, tuple)) or (
            isinstance(a, np.ndarray) and a.dtype == np.bool_
        ):
            out.append(Tensor(a, dtype=qdt, device=device))
        else:
            out.append(Tensor(a, device=device).astype(qdt))
    return out


def _quantized_name(dt):
    info = dt.metadata["mgb_dtype"]
    zp = info.get("zero_point")
    return f"{info['name']}({info['scale']:g}{'' if zp is None else f', {zp}'})"


def _traced_scalar(dim, dtype):
    t = reshape(dim.as_tensor(), ())
    return t if dtype == "int32" else t.astype(dtype)


_elemwise_ops = {}


def elemwise_op(mode):
    """The Elemwise op of ``mode`` (``"ADD"``), one object per mode."""
    op = _elemwise_ops.get(mode)
    if op is None:
        op = _elemwise_ops[mode] = builtin.Elemwise(mode=mode)
    return op


def elemwise(mode, *args):
    """Runs Elemwise ``mode`` on the promoted arguments; returns one Tensor."""
    # _rt.elemwise (python/src/fast_apply.cpp) runs tensors of one dtype directly and calls
    # _promote for anything else; the Tensor operators are its type slots.
    return _rt_elemwise(elemwise_op(mode), *args)


_rt_elemwise = _rt.elemwise
_rt._set_promote(_promote)


def _normalize_axis(axis, ndim):
    if not -ndim <= axis < max(ndim, 1):
        raise MegEngineError(f"axis {axis} is out of range for a tensor of {ndim} dims")
    return axis + ndim if axis < 0 else axis


def reduce(x, mode, axis=None, keepdims=False):
    """Reduce ``x`` with ``mode`` over ``axis`` (None: all axes; an int or a sequence)."""
    if not isinstance(x, Tensor):
        x = as_tensor(x)
    dtype = x._dtype_name
    if dtype == "bool":
        if mode in ("min", "max"):
            # any/all of a bool tensor, which the kernels (no bool reductions) compute on int32.
            return reduce(x.astype("int32"), mode, axis, keepdims).astype("bool")
        if mode in ("sum", "mean", "product"):
            x = x.astype("int32")
    elif mode == "mean" and dtype in ("float16", "bfloat16"):
        # MegEngine's rule: a mean of 16-bit floats is computed and returned in float32.
        x = x.astype("float32")
    ndim = x.ndim
    mode = mode.upper()
    if type(axis) is int and ndim:
        # One axis, the common call: nothing to merge, one Reduce and the axis removed.
        a = axis + ndim if axis < 0 else axis
        if not 0 <= a < ndim:
            _normalize_axis(axis, ndim)  # raises MegEngine's error
        out = apply(cached_op(builtin.Reduce, mode, a), x)[0]
        return out if keepdims else apply(cached_op(builtin.RemoveAxis, (a,)), out)[0]
    if (
        axis is None
        and ndim > 1
        and not _rt._is_tracing()
        and getattr(x, "format", "default") == "default"
    ):
        # Every axis, F.sum(x): what _merge_reduced_axes gives below (the elements as one axis
        # of a view, one Reduce), without its general walk.
        out = apply(cached_op(builtin.Reshape, (x.size,)), x)[0]
        out = apply(cached_op(builtin.Reduce, mode, 0), out)[0]
        return apply(cached_op(builtin.Reshape, (1,) * ndim if keepdims else ()), out)[0]
    if axis is None:
        axes = list(range(ndim))
    elif isinstance(axis, (list, tuple)):
        axes = sorted({_normalize_axis(a, ndim) for a in axis})
        if len(axes) != len(axis):
            # MegEngine's error type for (-1, 1) on a 2-d tensor.
            raise AssertionError(f"axis {axis} contains duplicated indices")
    else:
        axes = [_normalize_axis(axis, ndim)]
    if ndim == 0:
        return x
    out, merged = _merge_reduced_axes(x, axes)
    # Innermost first: a reduction along rows is the cheapest, and it shrinks what the next reads.
    for a in reversed(merged):
        out = apply(cached_op(builtin.Reduce, mode, a), out)[0]
    if merged != axes:
        # Merged only outside tracing (plain int shapes): the Reshape op directly.
        if len(axes) == ndim:
            kept = (1,) * ndim if keepdims else ()
        else:
            shape = x.shape
            kept = tuple(
                (1 if d in axes else n) for d, n in enumerate(shape) if keepdims or d not in axes
            )
        out = apply(cached_op(builtin.Reshape, kept), out)[0]
    elif not keepdims and axes:
        out = apply(cached_op(builtin.RemoveAxis, tuple(axes)), out)[0]
    return out


def _merge_reduced_axes(x, axes):
    """``x`` reshaped so that each run of adjacent reduced axes is one axis (a view of a
    contiguous tensor: F.sum(x) reduces one axis of x.size elements, F.mean(x, (2, 3)) one of
    H*W), and the reduced axes of that shape; ``x`` and ``axes`` where no run has two axes, and
    while tracing, whose recorded reshape would fix the traced input's shape in the graph (a
    dumped model follows only the shapes the function itself read), and for a channels-last
    tensor, which Reduce reads in its own memory order where a reshape would copy it."""
    if len(axes) < 2 or _rt._is_tracing() or getattr(x, "format", "default") != "default":
        return x, axes
    shape = x.shape
    if len(axes) == len(shape):  # F.sum(x): one axis of every element
        return apply(cached_op(builtin.Reshape, (x.size,)), x)[0], [0]
    merged_shape, merged_axes = [], []
    for d, n in enumerate(shape):
        if d in axes and d - 1 in axes:
            merged_shape[-1] *= n
            continue
        if d in axes:
            merged_axes.append(len(merged_shape))
        merged_shape.append(n)
    if len(merged_axes) == len(axes):
        return x, axes
    return apply(cached_op(builtin.Reshape, tuple(merged_shape)), x)[0], merged_axes


# The view ops of the tensor-manipulation calls, by their param as the call site has it: one
# dict lookup per call, where normalising the argument (int() of each entry) and cached_op's
# keyword call cost more than the op's own apply (0.6 us). Only normalised params are stored,
# so a hit is an argument equal, entry by entry, to a valid one (16.0 and np.int64(16) hit
# (16,): what int() makes of them). Looked up outside tracing only: a TracedDim entry
# would be hashed (a constant of the graph) and a traced graph follows shapes its own way.
_reshape_ops = {}
_dimshuffle_ops = {}
_typecvt_ops = {}
# astype's quantizing TypeCvt by (runtime name, scale, zero point): cached_op's keyword key
# takes 0.7 us.
_quantize_ops = {}
_FLATTEN = builtin.Reshape(shape=(-1,))


def _cached_view_op(cache, key):
    """``cache[key]``, ``None`` where it is missing or ``key`` is unhashable (a list entry, an
    array): the caller's general path then builds the op."""
    try:
        return cache.get(key)
    except TypeError:
        return None


def reshape(x, shape):
    if type(shape) is not tuple:
        shape = tuple(shape)
    if not _is_tracing():
        op = _cached_view_op(_reshape_ops, shape)
        if op is not None:
            return apply(op, x)[0]
    elif any(type(s) is TracedDim for s in shape):
        from . import symbolic_shape  # imports this module

        return symbolic_shape.reshape_dims(x, shape)
    return apply(_reshape_op(tuple(int(s) for s in shape)), x)[0]


def _reshape_op(shape):
    """The Reshape op to ``shape``, a tuple of ints."""
    op = _reshape_ops.get(shape)
    if op is None:
        op = remember_op(_reshape_ops, shape, builtin.Reshape(shape=shape))
    return op


_SHAPE_KEYED_OPS_LIMIT = 4096


def remember_op(cache, key, op):
    """Stores ``op`` in ``cache``, a cache keyed by shapes, emptied when full (as indexing's):
    a program whose shapes keep changing (a batch of each length) does not grow it forever."""
    if len(cache) >= _SHAPE_KEYED_OPS_LIMIT:
        cache.clear()
    cache[key] = op
    return op


_kept_scalars = {}
_SCALAR_TYPES = (int, float, bool)


def kept_scalar(value, dtype, device, promotes=False):
    """A Python int, float or bool as the 0-d tensor of ``dtype`` on ``device`` that
    ``as_tensor(value, dtype, device)`` makes, kept for the next call with the same value: making
    one copies to the device (3.5 us), a small operand's whole op. Tensors are values, so a kept
    one is only ever read. With ``promotes``, None where ``_promote`` would give another dtype
    (an int tensor beside a float, bfloat16 beside any scalar). Keyed by type (1, 1.0 and True
    are equal keys) and, for a float zero, sign (-0.0 == 0.0); a NaN never equals its key, so it
    misses and is stored again, which the bound covers."""
    sign = math.copysign(1.0, value) if type(value) is float and not value else 0
    key = (type(value), value, dtype, device, promotes, sign)
    t = _kept_scalars.get(key, False)
    if t is False:
        t = None
        if not promotes or promote_names(dtype, scalar_dtype_for(dtype, value)) == dtype:
            t = as_tensor(value, dtype, device)
        remember_op(_kept_scalars, key, t)
    return t


def reshape_checked(x, target_shape):
    """``x`` in ``target_shape``: an int, a sequence of ints (one may be -1) or a 1-d integer
    Tensor or array of the dims, checked against ``x``'s size. Shared by ``Tensor.reshape``
    and ``F.reshape``."""
    from . import symbolic_shape  # imports this module

    shape_value = None
    if is_symbolic(target_shape):
        # A var's shape is fixed in the graph: the value is read now.
        target_shape = target_shape.numpy()
    elif isinstance(target_shape, Tensor):
        shape_value = target_shape
        # A traced graph under symbolic shapes reads the value itself (reshape_to below);
        # otherwise it would hold the value read here, so the read ends the recording.
        read = target_shape._numpy_untraced if symbolic_shape.active() else target_shape.numpy
        target_shape = read().tolist()
    elif isinstance(target_shape, np.ndarray):
        target_shape = target_shape.tolist()
    if isinstance(target_shape, (int, np.integer, TracedDim)):
        target_shape = (target_shape,)
    if symbolic_shape.active() and any(type(s) is TracedDim for s in target_shape):
        # Shapes the traced function read: the graph computes them from the tensors they
        # came from.
        return symbolic_shape.reshape_dims(x, target_shape)
    shape = tuple(int(s) for s in target_shape)
    if sum(s == -1 for s in shape) > 1 or any(s < -1 for s in shape):
        raise MegEngineError(f"reshape: invalid target shape {shape} for input of shape {x.shape}")
    known = math.prod(s for s in shape if s != -1)
    if -1 in shape:
        if known == 0 or x.size % known:
            raise MegEngineError(f"reshape: cannot reshape {x.shape} into {shape}")
    elif known != x.size:
        raise MegEngineError(f"reshape: cannot reshape {x.shape} into {shape}")
    if shape_value is not None and symbolic_shape.active():
        # A traced graph reads the shape from the tensor's value when it runs.
        target = tuple(x.size // known if s == -1 else s for s in shape)
        return symbolic_shape.reshape_to(x, shape_value.astype("int32").reshape(-1), target)
    return reshape(x, shape)


def flatten(x, start_axis=0, end_axis=-1):
    """``x`` with axes ``start_axis..end_axis`` (both included) merged into one; a 0-d tensor
    becomes 1-d. Shared by ``Tensor.flatten`` and ``F.flatten``."""
    if (
        type(start_axis) is int
        and type(end_axis) is int
        and start_axis == 0
        and end_axis == -1
        and isinstance(x, Tensor)
        and not _is_tracing()
    ):
        # Every axis: one Reshape to (-1,), whatever the shape (a 0-d tensor gives (1,)).
        return apply(_FLATTEN, x)[0]
    ndim = x.ndim
    if ndim == 0:
        return reshape(x, (1,))
    try:
        start = _normalize_axis(int(start_axis), ndim)
        end = _normalize_axis(int(end_axis), ndim)
    except ValueError as e:
        raise MegEngineError(f"flatten: {e}") from None
    if start > end:
        raise MegEngineError(f"flatten: start_axis {start_axis} is after end_axis {end_axis}")
    shape = x.shape
    target = (*shape[:start], math.prod(shape[start : end + 1]), *shape[end + 1 :])
    if follows_shapes():
        # The leading axes as values, so that a traced graph follows its inputs' shapes.
        if start == 0:
            return reshape(x, (-1, *shape[end + 1 :]))
        from . import symbolic_shape  # imports this module

        return symbolic_shape.flatten(x, start, end, target)
    return reshape(x, target)


def transpose(x, pattern):
    if type(pattern) is not tuple:
        pattern = tuple(pattern)
    op = _cached_view_op(_dimshuffle_ops, pattern)
    if op is None:
        pattern = tuple(int(p) for p in pattern)
        op = _dimshuffle_ops.get(pattern)
        if op is None:
            op = builtin.Dimshuffle(pattern=pattern)
            if sorted(pattern) == list(range(len(pattern))):
                # Only permutations are stored: F.transpose's hit needs no other check.
                _dimshuffle_ops[pattern] = op
    return apply(op, x)[0]


def _binary(mode, reflected=False):
    if reflected:
        return lambda self, other: elemwise(mode, other, self)
    return lambda self, other: elemwise(mode, self, other)


def _inplace(binary):
    # The Python face of the C slots' in-place operators (fast_apply.cpp), for explicit calls.
    def method(self, other):
        result = binary(self, other)
        if result is NotImplemented:
            return result
        self._inplace_update(result)
        return self

    return method


class ArrayMethodMixin:
    """Methods added to ``megengine.Tensor``."""

    __array_priority__ = 1000  # numpy defers to our reflected operators

    __add__ = _binary("ADD")
    __radd__ = _binary("ADD", True)
    __sub__ = _binary("SUB")
    __rsub__ = _binary("SUB", True)
    __mul__ = _binary("MUL")
    __rmul__ = _binary("MUL", True)
    __truediv__ = _binary("TRUE_DIV")
    __rtruediv__ = _binary("TRUE_DIV", True)
    __floordiv__ = _binary("FLOOR_DIV")
    __rfloordiv__ = _binary("FLOOR_DIV", True)
    __mod__ = _binary("MOD")
    __rmod__ = _binary("MOD", True)
    __pow__ = _binary("POW")
    __rpow__ = _binary("POW", True)
    __lshift__ = _binary("SHL")
    __rlshift__ = _binary("SHL", True)
    __rshift__ = _binary("SHR")
    __rrshift__ = _binary("SHR", True)
    __and__ = _binary("AND")
    __rand__ = _binary("AND", True)
    __or__ = _binary("OR")
    __ror__ = _binary("OR", True)
    __xor__ = _binary("XOR")
    __rxor__ = _binary("XOR", True)
    __eq__ = _binary("EQ")
    __ne__ = _binary("NE")
    __lt__ = _binary("LT")
    __le__ = _binary("LEQ")
    __gt__ = _binary("LT", True)
    __ge__ = _binary("LEQ", True)
    # In-place forms update the tensor object itself, as MegEngine's do (``b = a; b += 1``
    # changes ``a``; a Parameter updated by hand keeps its identity): Tensor._inplace_update.
    __iadd__ = _inplace(__add__)
    __isub__ = _inplace(__sub__)
    __imul__ = _inplace(__mul__)
    __itruediv__ = _inplace(__truediv__)
    __ifloordiv__ = _inplace(__floordiv__)
    __imod__ = _inplace(__mod__)
    __ipow__ = _inplace(__pow__)
    __ilshift__ = _inplace(__lshift__)
    __irshift__ = _inplace(__rshift__)
    __iand__ = _inplace(__and__)
    __ior__ = _inplace(__or__)
    __ixor__ = _inplace(__xor__)

    def __matmul__(self, other):
        return _matmul(self, other)

    def __rmatmul__(self, other):
        return _matmul(other, self)

    def __neg__(self):
        return elemwise("NEGATE", self)

    def __pos__(self):
        return self

    def __abs__(self):
        return elemwise("ABS", self)

    def __invert__(self):
        return elemwise("NOT", self)

    def __round__(self, ndigits=None):
        # Elemwise ROUND rounds half away from zero (MegEngine's F.round), not half to even.
        if not ndigits:
            return elemwise("ROUND", self)
        scale = 10.0**ndigits
        return elemwise("ROUND", self * scale) / scale

    __hash__ = object.__hash__  # __eq__ is elementwise; tensors hash by identity

    def __bool__(self):
        if self.size != 1:
            raise MegEngineError(
                f"the truth value of a tensor of {self.size} elements is ambiguous"
            )
        return bool(self.item())

    def __float__(self):
        return float(self.item())

    def __int__(self):
        return int(self.item())

    def __index__(self):
        if self._dtype_name not in ("int8", "uint8", "int16", "int32"):
            raise TypeError("only integer tensors can be used as an index")
        return int(self.item())

    def __len__(self):
        if self.ndim == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self):
        if self.ndim == 0:
            raise TypeError("iteration over a 0-d tensor")
        for i in range(self.shape[0]):
            yield self[i]

    def __getitem__(self, index):
        from .indexing import getitem

        return getitem(self, index)

    def __setitem__(self, index, value):
        from .indexing import tensor_setitem

        tensor_setitem(self, index, value)

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __repr__(self):
        # MegEngine's form: values as NumPy prints them (4 decimals), dtype unless float32.
        a = self.numpy()
        if self._dtype_name == "bfloat16":
            a = a.astype(np.float32)  # ml_dtypes' printing ignores printoptions
        with np.printoptions(precision=4, suppress=True):
            values = str(a)
        dtype = "" if self._dtype_name == "float32" else f", dtype={self._dtype_name}"
        return f"{type(self).__name__}({values}{dtype}, device={self.device})"

    def _value_state(self):
        # The values as MegEngine's Tensor.__setstate__ takes them: the device as its plain
        # canonical name ("cpu0", no CompNode class in a pickle), a quantized dtype as its NumPy
        # dtype with metadata (which pickles with the array).
        array = self.numpy()
        if self._dtype_name == "bfloat16":
            # as its float32 values (exact), as NeoMeg always saved it: a plain pickle.load
            # then needs no ml_dtypes
            array = array.astype(np.float32)
        dtype = array.dtype if array.dtype.metadata else self._dtype_name
        return {"data": array, "dtype": dtype, "device": _rt.canonical_device(self.device)}

    # MegEngine's pickling methods, which code copying tensors its own way calls: the values
    # as constructor arguments, and the state (the qparams once made, else nothing).
    def __getnewargs__(self):
        array = self.numpy()
        return (array, array.dtype, self.device.logical_name)

    def __getstate__(self):
        qparams = self.__dict__.get("_qparams")
        return {} if qparams is None else {"qparams": qparams}

    def __reduce__(self):
        # MegEngine's own form of a tensor pickle (the class, made without arguments, then a
        # state with the values: what MegEngine 1.0 wrote and every later MegEngine reads), so
        # that MegEngine loads what NeoMeg saves. type(self) keeps a Parameter a Parameter;
        # Tensor.__setstate__ (installed by megengine._checked_unpickling) reads the state.
        state = self._value_state()
        qparams = self.__dict__.get("_qparams")
        if qparams is not None:
            # MegEngine's state key: its Tensor.__setstate__ restores them too
            state["qparams"] = qparams
        return (copyreg.__newobj__, (type(self),), state)

    # copy.copy and copy.deepcopy copy the values, as pickle does, and (MegEngine's rule) keep
    # the quantization parameters once made: shared by a shallow copy, copied by a deep one.
    # The name is not kept.
    def _value_copy(self):
        st = self._value_state()
        return _rebuild_tensor(st["data"], st["dtype"], st["device"], type(self))

    def __copy__(self):
        out = self._value_copy()
        qparams = self.__dict__.get("_qparams")
        if qparams is not None:
            out._qparams = qparams
        return out

    def __deepcopy__(self, memo):
        out = self._value_copy()
        qparams = self.__dict__.get("_qparams")
        if qparams is not None:
            out._qparams = copy.deepcopy(qparams, memo)
        return out

    def __array_wrap__(self, array, context=None, return_scalar=False):
        # MegEngine's rule: a NumPy ufunc of a tensor (np.add(t, a)) computes in NumPy and
        # gives a Tensor on the tensor's device.
        return type(self)(array, device=self.device)

    def item(self, *args):
        """The value of a one-element tensor as a Python scalar."""
        return self.numpy().item(*args)

    def tolist(self):
        """The values as (nested) Python lists."""
        return self.numpy().tolist()

    def astype(self, dtype):
        """A copy converted to ``dtype`` (a numpy dtype or a name). A quantized dtype
        (``qint8(scale)``...) quantizes the values: round half away from zero, then saturate."""
        # A name or a NumPy type (np.float16) as the key: a np.dtype object is not one, as a
        # quantized dtype's equals its storage dtype whatever its scale.
        if type(dtype) is str or type(dtype) is type:
            op = _typecvt_ops.get(dtype)
            if op is None:
                op = _typecvt_ops[dtype] = builtin.TypeCvt(dtype=_dtype_name(dtype))
            return apply(op, self)[0]
        info = _quant_info(dtype)
        if info is not None:
            key = (info["name"], info["scale"], info.get("zero_point", 0))
            op = _quantize_ops.get(key)
            if op is None:
                op = cached_op(
                    builtin.TypeCvt,
                    dtype=getattr(_rt.ops._DTypeEnum, key[0]),
                    scale=key[1],
                    zero_point=key[2],
                )
                remember_op(_quantize_ops, key, op)
            return apply(op, self)[0]
        return apply(cached_op(builtin.TypeCvt, dtype=_dtype_name(dtype)), self)[0]

    def reshape(self, *shape):
        """The same values in a new shape (a tuple, the dims as arguments, or a 1-d integer
        Tensor of them; one may be -1)."""
        if len(shape) == 1:
            arg = shape[0]
            if type(arg) is tuple:
                shape = arg
            elif type(arg) is not int:
                if isinstance(arg, (tuple, list)):
                    shape = tuple(arg)
                elif is_tensor(arg) or isinstance(arg, np.ndarray):
                    return reshape_checked(self, arg)
        if not _is_tracing():
            # reshape()'s lookup, here: a frame less on the commonest call.
            try:
                op = _reshape_ops.get(shape)
            except TypeError:
                op = None
            if op is not None:
                return apply(op, self)[0]
        return reshape(self, shape)

    def transpose(self, *pattern):
        """Axes permuted by ``pattern`` (reversed when none is given)."""
        if len(pattern) == 1 and isinstance(pattern[0], (tuple, list)):
            pattern = pattern[0]
        elif pattern:
            op = _cached_view_op(_dimshuffle_ops, pattern)
            if op is not None:
                return apply(op, self)[0]
        if not pattern:
            pattern = tuple(reversed(range(self.ndim)))
        return transpose(self, pattern)

    @property
    def T(self):
        """The tensor with its axes reversed."""
        return self.transpose()

    def flatten(self):
        """The values as a 1-D tensor."""
        return reshape(self, (-1,))

    def sum(self, axis=None, keepdims=False):
        """Sum over ``axis`` (all axes when None)."""
        return reduce(self, "sum", axis, keepdims)

    def prod(self, axis=None, keepdims=False):
        """Product over ``axis`` (all axes when None)."""
        return reduce(self, "product", axis, keepdims)

    def mean(self, axis=None, keepdims=False):
        """Mean over ``axis`` (all axes when None)."""
        x = self if self._dtype_name.startswith(("float", "bfloat")) else self.astype("float32")
        return reduce(x, "mean", axis, keepdims)

    def max(self, axis=None, keepdims=False):
        """Maximum over ``axis`` (all axes when None)."""
        return reduce(self, "max", axis, keepdims)

    def min(self, axis=None, keepdims=False):
        """Minimum over ``axis`` (all axes when None)."""
        return reduce(self, "min", axis, keepdims)

    def detach(self):
        """The same values, cut from autograd."""
        return self._detach()

    def to(self, device):
        """A copy on ``device`` (e.g. ``"cpu0"``). On the tensor's own device the copy is an
        op, as MegEngine's ``Copy``: autograd differentiates it and a trace records it (a raw
        copy would drop the gradient and replay the recorded value); a copy to another device
        is not differentiated, as :func:`~.functional.copy`."""
        device = _rt.canonical_device(str(device))
        if device == _rt.canonical_device(self.device):
            return apply(cached_op(builtin.Relayout), self)[0]
        return self._copy_to(device)


def _dtype_name(dtype):
    if isinstance(dtype, str):
        return dtype
    return np.dtype(dtype).name


def _quant_info(dtype):
    # a quantized numpy dtype's {"name", "scale"[, "zero_point"]}, else None
    if type(dtype) in _STORAGE_TYPES or isinstance(dtype, np.dtype):
        meta = dtype.metadata
        if meta:
            return meta.get("mgb_dtype")
    return None


# What Tensor.__reduce__ named before it wrote MegEngine's form: pickles NeoMeg wrote then still
# load (and copy uses it).
def _rebuild_tensor(array, dtype, device, cls=None):
    cls = cls or Tensor
    # set by megengine.serialization.dmap: maps the devices of tensors unpickled in its block
    dmap_callback = getattr(cls, "dmap_callback", None)
    if dmap_callback is not None:
        device = dmap_callback(device)
    return cls(array, dtype=dtype, device=device)


def _matmul(a, b):
    raise RuntimeError("a @ b needs megengine.functional, which registers F.matmul here")


def set_matmul(fn):
    """Registers ``F.matmul`` as what ``a @ b`` runs: its rules (vectors, broadcast batches)
    live in ``functional``, which this layer must not import."""
    global _matmul
    _matmul = fn


def install(cls):
    """Adds ArrayMethodMixin's methods to the extension's Tensor class."""
    for name, value in vars(ArrayMethodMixin).items():
        if name in ("__dict__", "__weakref__", "__module__", "__doc__", "__qualname__"):
            continue
        setattr(cls, name, value)
    # The operators' Python methods above stay for explicit calls; `a + b` goes through the C
    # slots, which give the same results without a Python frame.
    _rt._install_operator_slots(cls)
    # x[k] straight into indexing.getitem: the mixin's method (which a network VarNode keeps)
    # adds a frame and an import statement per call, half of a 2 us row view. indexing imports
    # this module, so it is bound here rather than in the class body.
    from .indexing import getitem, tensor_setitem

    cls.__getitem__ = getitem
    cls.__setitem__ = tensor_setitem
