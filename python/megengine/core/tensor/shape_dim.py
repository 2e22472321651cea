"""Shapes read by the traced function itself while a trace records with ``symbolic_shape=True``.

MegEngine's ``x.shape`` is then a Tensor (a ``GetVarShape`` op), so ``x.reshape(x.shape[0], -1)``
follows the input's batch in the graph. Here ``x.shape`` (and ``x.size``) read by code outside
the ``megengine`` package give :class:`TracedDim` values instead: each knows its value and how to
compute it with ops (``GetVarShape`` of the tensor, and ``+ - * //`` between dims and ints), and
a reshape to them (``Tensor.reshape``, ``F.reshape``) or arithmetic with a Tensor records those
ops, so a dumped graph follows its inputs' shapes. The library's own code keeps reading plain
tuples (it follows shapes itself where it must, as ``flatten`` does).

Any other use (``int()``, indexing, comparisons, ``bool``, hashing, numpy, ...) gives the plain
value, and the recording notes where: the graph then holds the traced value as a constant, so
``trace.dump`` refuses to give that model dynamic input dimensions (``TraceError`` naming the
line) instead of writing one that would be wrong at another shape.
"""

import contextlib
import os
import sys
import threading

import numpy as np

from .. import _imperative_rt as _rt

# Frames in this directory are the library's own; the first frame outside it is the user's.


def _package_prefixes(module_file):
    # A code object's co_filename keeps the path the module was imported by (``bench/../python``
    # when sys.path held that), so the package is matched by that spelling and the normalised one.
    prefixes = []
    for path in (module_file, os.path.abspath(module_file), os.path.realpath(module_file)):
        prefix = os.path.dirname(os.path.dirname(os.path.dirname(path))) + os.sep
        if prefix not in prefixes:
            prefixes.append(prefix)
    return tuple(prefixes)


_PACKAGE_DIRS = _package_prefixes(__file__)

_state = threading.local()
_install_lock = threading.Lock()
_install_count = 0
_c_getters = {}


def _notes():
    return getattr(_state, "notes", None)


def follows_shapes():
    """Whether shapes read while tracing should follow the inputs (a trace records or checks on
    this thread with ``symbolic_shape=True``)."""
    return _rt._is_tracing() and getattr(_state, "follow", True)


# numpy's Python code converts a dim for the caller (np.ones(x.shape)): the caller is meant.
_LIBRARY_DIRS = (*_PACKAGE_DIRS, os.path.dirname(os.path.abspath(np.__file__)) + os.sep)


def _user_location():
    f = sys._getframe(1)
    while f is not None and f.f_code.co_filename.startswith(_LIBRARY_DIRS):
        f = f.f_back
    return "<unknown>" if f is None else f"{f.f_code.co_filename}:{f.f_lineno}"


_FLOAT_OPS = {
    "ADD": lambda a, b: a + b,
    "SUB": lambda a, b: a - b,
    "MUL": lambda a, b: a * b,
    "FLOOR_DIV": lambda a, b: a // b,
}


class TracedDim:
    """One dimension (or a product, sum, ... of dimensions) read while a trace records: a value
    that a reshape turns into shape ops of the graph. Prints as its int value.

    Args:
        value: the dimension's value in this call.
        build: a function returning it as an int32 tensor of shape ``(1,)`` (graph ops).
        what: how it was made, for messages (``"shape[0] of a (4, 3) tensor"``).

    Examples:
        >>> import megengine as mge
        >>> from megengine.jit import trace
        >>> @trace(capture_as_const=True)
        ... def f(x):
        ...     return x.reshape(x.shape[0], -1)
        >>> f(mge.Tensor([[[1.0], [2.0]]])).shape
        (1, 2)
    """

    __slots__ = ("_build", "_value", "_what")

    def __init__(self, value, build, what):
        self._value = int(value)
        self._build = build
        self._what = what

    @classmethod
    def of(cls, tensor, axis, value):
        """``tensor.shape[axis]`` (``value``) as a TracedDim."""

        def build():
            from . import symbolic_shape

            return symbolic_shape.shape_of(tensor, (axis,))

        # The C getter: a plain tuple, whatever the caller's path looks like.
        shape = _c_getters["shape"].__get__(tensor)
        return cls(value, build, f"shape[{axis}] of a {shape} tensor")

    def as_tensor(self):
        """The value as an int32 tensor of shape ``(1,)``, computed by graph ops while tracing."""
        return self._build()

    def bake(self, how):
        """The plain value; a recording notes that the graph holds it as a constant."""
        notes = _notes()
        if notes is not None:
            notes.append(f"{how} of {self._what} at {_user_location()}")
        return self._value

    # ---- arithmetic that stays symbolic -------------------------------------------------

    def _combine(self, other, mode, symbol, reflected):
        if isinstance(other, TracedDim):
            other_value, other_tensor, other_what = other._value, other.as_tensor, other._what
        elif isinstance(other, (int, np.integer)) and not isinstance(other, (bool, np.bool_)):
            other_value, other_what = int(other), str(int(other))

            def other_tensor():
                from . import symbolic_shape

                return symbolic_shape.int32([other_value])

        elif isinstance(other, (float, np.floating)):
            # A float result is no shape: the dim's value, noted as a constant (the zoo's anchor
            # grids compute F.arange(shift, size * stride + shift) with a float shift).
            value = self.bake(f"{symbol} with a float")
            return _FLOAT_OPS[mode](*((other, value) if reflected else (value, other)))
        else:
            return NotImplemented
        a, b = (other_value, self._value) if reflected else (self._value, other_value)
        if mode == "ADD":
            value = a + b
        elif mode == "SUB":
            value = a - b
        elif mode == "MUL":
            value = a * b
        else:
            value = a // b  # ZeroDivisionError for b == 0, as with ints

        def build():
            from .array_method import elemwise

            x, y = self.as_tensor(), other_tensor()
            return elemwise(mode, y, x) if reflected else elemwise(mode, x, y)

        left, right = (other_what, self._what) if reflected else (self._what, other_what)
        return TracedDim(value, build, f"({left} {symbol} {right})")

    def __add__(self, other):
        return self._combine(other, "ADD", "+", False)

    def __radd__(self, other):
        return self._combine(other, "ADD", "+", True)

    def __sub__(self, other):
        return self._combine(other, "SUB", "-", False)

    def __rsub__(self, other):
        return self._combine(other, "SUB", "-", True)

    def __mul__(self, other):
        return self._combine(other, "MUL", "*", False)

    def __rmul__(self, other):
        return self._combine(other, "MUL", "*", True)

    def __floordiv__(self, other):
        return self._combine(other, "FLOOR_DIV", "//", False)

    def __rfloordiv__(self, other):
        return self._combine(other, "FLOOR_DIV", "//", True)

    def __neg__(self):
        return self._combine(0, "SUB", "-", True)

    def __pos__(self):
        return self

    # ---- uses that need the value: it becomes a constant of the graph --------------------

    def __int__(self):
        return self.bake("int()")

    def __index__(self):
        return self.bake("use as an index")

    def __float__(self):
        return float(self.bake("float()"))

    def __bool__(self):
        return bool(self.bake("truth test"))

    def __hash__(self):
        return hash(self.bake("hash"))

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self.bake("conversion to numpy"), dtype=dtype)

    def _value_of(self, other):
        return other._value if isinstance(other, TracedDim) else other

    def _compare(name, op):
        def method(self, other):
            if not isinstance(other, (TracedDim, int, float, np.number)):
                return NotImplemented
            if isinstance(other, TracedDim):
                other = other.bake(f"comparison ({name})")
            return op(self.bake(f"comparison ({name})"), other)

        return method

    __eq__ = _compare("==", lambda a, b: a == b)
    __ne__ = _compare("!=", lambda a, b: a != b)
    __lt__ = _compare("<", lambda a, b: a < b)
    __le__ = _compare("<=", lambda a, b: a <= b)
    __gt__ = _compare(">", lambda a, b: a > b)
    __ge__ = _compare(">=", lambda a, b: a >= b)
    del _compare

    def _baked_binary(name, op, reflected=False):
        def method(self, other):
            if not isinstance(other, (TracedDim, int, float, np.number)):
                return NotImplemented
            if isinstance(other, TracedDim):
                other = other.bake(name)
            value = self.bake(name)
            return op(other, value) if reflected else op(value, other)

        return method

    __truediv__ = _baked_binary("/", lambda a, b: a / b)
    __rtruediv__ = _baked_binary("/", lambda a, b: a / b, True)
    __mod__ = _baked_binary("%", lambda a, b: a % b)
    __rmod__ = _baked_binary("%", lambda a, b: a % b, True)
    __pow__ = _baked_binary("**", lambda a, b: a**b)
    __rpow__ = _baked_binary("**", lambda a, b: a**b, True)
    del _baked_binary

    def __abs__(self):
        return abs(self.bake("abs()"))

    def __round__(self, ndigits=None):
        return round(self.bake("round()"), ndigits)

    def __repr__(self):
        return repr(self._value)

    __str__ = __repr__

    def __format__(self, spec):
        return format(self._value, spec)


# What functions that take an int accept: a TracedDim becomes its value there (a constant).
INTEGER_TYPES = (int, np.integer, TracedDim)


def is_traced(dims):
    """Whether any entry of the sequence ``dims`` is a :class:`TracedDim`."""
    return any(type(d) is TracedDim for d in dims)


# ---- Tensor.shape and Tensor.size while such a trace runs --------------------------------


def _shape(self):
    shape = _c_getters["shape"].__get__(self)
    if not shape or not follows_shapes():
        return shape
    if sys._getframe(1).f_code.co_filename.startswith(_PACKAGE_DIRS):
        return shape
    return tuple(TracedDim.of(self, i, d) for i, d in enumerate(shape))


def _size(self):
    size = _c_getters["size"].__get__(self)
    if not follows_shapes() or sys._getframe(1).f_code.co_filename.startswith(_PACKAGE_DIRS):
        return size
    shape = _c_getters["shape"].__get__(self)
    if not shape:
        return size
    dim = TracedDim.of(self, 0, shape[0])
    for i in range(1, len(shape)):
        dim = dim * TracedDim.of(self, i, shape[i])
    return dim


def _install(tensor_type):
    global _install_count
    with _install_lock:
        if _install_count == 0:
            for name in ("shape", "size"):
                _c_getters.setdefault(name, tensor_type.__dict__[name])
            tensor_type.shape = property(_shape, doc=_c_getters["shape"].__doc__)
            tensor_type.size = property(_size, doc=_c_getters["size"].__doc__)
        _install_count += 1


def _uninstall(tensor_type):
    global _install_count
    with _install_lock:
        _install_count -= 1
        if _install_count == 0:
            tensor_type.shape = _c_getters["shape"]
            tensor_type.size = _c_getters["size"]


@contextlib.contextmanager
def tracing(follow, notes=None):
    """While a trace runs the function: with ``follow``, ``Tensor.shape`` and ``Tensor.size`` read
    by the user's code give :class:`TracedDim` values, and the uses that make one a constant
    are appended to ``notes`` (a list, when recording); without, shapes are plain ints."""
    from .array_method import Tensor

    saved = (getattr(_state, "follow", True), _notes())
    _state.follow, _state.notes = bool(follow), notes if follow else None
    if follow:
        _install(Tensor)
    try:
        yield
    finally:
        if follow:
            _uninstall(Tensor)
        _state.follow, _state.notes = saved
