"""``megengine.Tensor`` and ``megengine.Parameter``.

``Tensor`` is the C++ extension's tensor class (``megengine/core/_imperative_rt``, built from
``python/src/tensor.cpp``) with the array methods of ``core/tensor/array_method.py`` installed on
it: operators and methods build ops from ``megengine.core.ops.builtin`` and run them with
``apply``, which crosses into C++ (``imperative/src/apply.cpp``) once.
"""

import warnings

import numpy as np

from .core import _imperative_rt as _rt
from .core.comp_node import CompNode as _CompNode
from .core.tensor import array_method as _array_method
from .core.tensor import memory_format as _memory_format

Tensor = _rt.Tensor
Tensor.__module__ = "megengine"
Tensor.__doc__ = """A multi-dimensional array on a device.

Args:
    data: array-like values (or another Tensor); float64 becomes float32 and int64 int32.
    dtype: dtype to convert to (a numpy dtype or a name such as ``"float16"``).
    device: where the tensor lives (``"cpu0"``, ``"xpux"``); the default device when None.
    is_const: accepted for MegEngine's signature; eager tensors need no constant marking.
    no_cache: accepted for MegEngine's signature; NeoMeg keeps no per-tensor value cache.
    name: a name for the tensor (its ``name`` attribute, ``""`` by default, as MegEngine's).
    format: the memory format: ``"default"``, or ``"nchw"``/``"nhwc"`` for a 4-D or 5-D
        tensor; ``"nhwc"`` stores the values channels-last (see :attr:`format`).

Examples:
    >>> import megengine as mge
    >>> x = mge.Tensor([[1, 2], [3, 4]], dtype="float32")
    >>> (x * 2 + 1).numpy().tolist()
    [[3.0, 5.0], [7.0, 9.0]]
"""
_array_method.install(Tensor)
_rt_init = Tensor.__init__
Tensor.name = ""  # instances set their own


def _init(
    self,
    data=None,
    dtype=None,
    device=None,
    is_const=False,
    no_cache=False,
    name=None,
    format="default",
):
    # The extension's constructor takes the data arguments; MegEngine's extra keywords are
    # handled here so that tensors made by ops (which skip __init__) pay nothing for them.
    _check_format(format)
    _rt_init(self, data, dtype, device)
    # MegEngine's Tensor(tensor, dtype=...) takes the tensor as it is and refuses another dtype
    # (a RuntimeError) rather than converting: astype converts.
    if dtype is not None and isinstance(data, Tensor) and self._dtype_name != data._dtype_name:
        raise _rt.MegEngineError(
            f"Tensor(): dtype mismatch: {self._dtype_name} asked of a {data._dtype_name} tensor "
            "(convert it with astype)"
        )
    if name is not None:
        self.name = name
    if format != "default":
        _format_set(self, format)


Tensor.__init__ = _init

_rt_numpy = Tensor.numpy


def _numpy(self):
    r"""Returns a NumPy copy of the tensor's values (waiting for the ops that write them).

    Examples:
        >>> import megengine as mge
        >>> mge.Tensor([1.5, 2.0]).numpy()
        array([1.5, 2. ], dtype=float32)
    """
    # A Python function (not the extension's method) so that inspect.signature sees
    # MegEngine's ``numpy(self)``.
    return _rt_numpy(self)


Tensor.numpy = _numpy

# Tensor.device (a C getter) returns one CompNode per comp node, made on its first read.
_rt._set_device_type(_CompNode)


def _flatten(self, start_axis=0, end_axis=-1):
    """The axes ``start_axis..end_axis`` (both included) merged into one; all of them by
    default, giving a 1-D tensor (as ``F.flatten``)."""
    return _array_method.flatten(self, start_axis, end_axis)


Tensor.flatten = _flatten


_FORMATS = ("default", "nchw", "nhwc")
Tensor._format = "default"  # the label of a tensor that is not channels-last


def _check_format(format):
    if not isinstance(format, str):
        raise TypeError(f"Tensor.format must be a str, got {type(format).__name__}")
    if format not in _FORMATS:
        raise ValueError(f"Tensor.format: {format!r} is not one of {_FORMATS}")


def _format_get(self):
    # A layout the runtime chose (autocast's channels-last casts) keeps MegEngine's format.
    return "nhwc" if self._channels_last and not self._auto_layout else self._format


def _format_set(self, format):
    _check_format(format)
    if format != "default" and self.ndim not in (4, 5):
        raise ValueError(
            f"Tensor.format: {format!r} needs a 4-D or 5-D tensor, got shape {self.shape}"
        )
    if format == "nhwc":
        value = _memory_format.to_channels_last(self)
        self._auto_layout = False  # the program's choice now
    else:
        value = _memory_format.to_contiguous(self)
        self._format = format
    if value is not self:
        self._reset(value)


Tensor.format = property(
    _format_get,
    _format_set,
    doc="""The memory format: ``"default"``, ``"nchw"`` or ``"nhwc"`` (MegEngine's names).

``"nhwc"`` is a layout, not a label: the tensor keeps its logical NCHW (NCDHW) shape and
indexing, and its memory is channels-last (the channel stride 1, as PyTorch's
``channels_last``). The format is read from the strides, so it follows the data: convolutions,
pooling, batch norm, elementwise ops and casts of channels-last inputs give channels-last
outputs (on x86 their oneDNN and vector kernels run on that memory without converting), while
reshapes, reductions and other ops give ``"default"`` tensors, as in MegEngine. Setting
``"nhwc"`` copies the values into channels-last storage (``megengine.amp.convert_tensor_format``
does the same), and ``"default"`` or ``"nchw"`` back into row-major storage; the tensor keeps its
identity and autograd attachments. An (N, 1, 1, 1) tensor has one memory order in both formats
and reads ``"default"``. A channels-last layout that the runtime chose itself (autocast's 16-bit
casts for wide convolutions on the CPU, and what follows them) reads ``"default"``, as MegEngine
gives for the same program; setting ``"nhwc"`` makes it the program's. Any other value raises
ValueError (TypeError for a non-string), and so
does a format other than ``"default"`` on a tensor of another rank.""",
)
# MegEngine's internal name for the shape as a tuple of ints (its ``shape`` can be a Tensor
# under symbolic shapes); code written against MegEngine reads it.
Tensor._tuple_shape = property(lambda self: self.shape, doc="The shape as a tuple of ints.")
Tensor._qparams = None  # instances set their own on first use


def _qparams(self):
    from .quantization.utils import create_qparams

    if self._qparams is None:
        self._qparams = create_qparams()
    return self._qparams


Tensor.qparams = property(
    _qparams,
    doc="""The tensor's quantization parameters, a :class:`~.quantization.QParams`.

A float tensor's are MegEngine's default: symmetric mode, no dtype, scale or zero point. The
object is made on first use and then kept, so changes to it stay with the tensor; pickle,
``megengine.save`` and copies keep it (in MegEngine's pickled form, so either library loads it).""",
)


def _set_value(self, value):
    """Replaces the tensor's contents, keeping the Python object (deprecated: MegEngine
    recommends ``x[...] = value``).

    Args:
        value: a Tensor, whose values, shape, dtype and device the tensor takes, or array-like
            data, converted to the tensor's dtype and device.

    Returns:
        None

    Examples:
        >>> import warnings
        >>> import megengine as mge
        >>> x = mge.Tensor([1.0, 2.0])
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     x.set_value([5, 6])
        >>> x.numpy().tolist(), x.dtype.name
        ([5.0, 6.0], 'float32')
    """
    warnings.warn(
        "Tensor.set_value is deprecated since MegEngine 1.0: use tensor[...] = value",
        DeprecationWarning,
        stacklevel=2,
    )
    if not isinstance(value, Tensor):
        value = Tensor(value, dtype=self.dtype, device=self.device)
    self._reset(value)


def _reset_zero(self):
    """Sets every element to zero, keeping the Python object, shape, dtype and device
    (deprecated: MegEngine recommends ``x *= 0``).

    Unlike MegEngine's ``self *= 0``, an inf or NaN element becomes 0 too.

    Returns:
        None

    Examples:
        >>> import warnings
        >>> import megengine as mge
        >>> x = mge.Tensor([1, 2], dtype="int32")
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore", DeprecationWarning)
        ...     x.reset_zero()
        >>> x.numpy().tolist(), x.dtype.name
        ([0, 0], 'int32')
    """
    warnings.warn(
        "Tensor.reset_zero is deprecated since MegEngine 1.0: use tensor *= 0",
        DeprecationWarning,
        stacklevel=2,
    )
    self._reset(Tensor(np.zeros(self.shape, self.dtype), device=self.device))


Tensor.set_value = _set_value
Tensor.reset_zero = _reset_zero

tensor = Tensor


def _get_grad(self):
    return self.__dict__.get("grad")


def _set_grad(self, value):
    # A recording megengine.jit.trace notes every assignment (GradManager.backward, clear_grad,
    # a user's ``p.grad = None``) so that each replay assigns the replay's value too; it is told
    # before the assignment because it reads the old value.
    if _rt._trace_active():
        _rt._trace_note_setattr(self, "grad", value)
    self.__dict__["grad"] = value


def _del_grad(self):
    _set_grad(self, None)


Tensor.grad = property(
    _get_grad,
    _set_grad,
    _del_grad,
    doc="""The gradient that ``GradManager.backward`` left in this tensor; None before any
    backward and after ``clear_grad``. Assigning it (a Tensor or None) is allowed, also inside
    a traced function, whose replays then assign their own value.

    Examples:
        >>> import megengine as mge
        >>> from megengine.autodiff import GradManager
        >>> w = mge.Parameter([1.0, 2.0])
        >>> print(w.grad)
        None
        >>> gm = GradManager().attach([w])
        >>> with gm:
        ...     gm.backward((w * w).sum())
        >>> w.grad.numpy().tolist()
        [2.0, 4.0]
    """,
)


class Parameter(Tensor):
    """A Tensor that a module learns; GradManager attaches Parameters, optimizers update them.

    Args:
        data: initial values, as for :class:`Tensor`.
        dtype: dtype to convert to.
        device: where the parameter lives.
        is_const: as for :class:`Tensor`.
        no_cache: as for :class:`Tensor`.
        name: a name for the parameter.
        format: the memory format, as for :class:`Tensor`.

    Examples:
        >>> import megengine as mge
        >>> w = mge.Parameter([1.0, 2.0])
        >>> isinstance(w, mge.Tensor), w.shape
        (True, (2,))
    """

    def __init__(
        self,
        data,
        dtype=None,
        device=None,
        is_const=False,
        no_cache=False,
        name=None,
        format="default",
    ):
        super().__init__(data, dtype, device, is_const, no_cache, name, format)


_rt._install_operator_slots(Parameter)  # a subclass inherits the Python methods, not the slots
