"""Autocast state and casts (MegEngine's ``megengine.core.tensor.amp``).

``megengine.amp.autocast`` sets this state; the layers above read it (``functional`` casts the
inputs of convolutions, matrix products and batch normalisation) and this layer applies
MegEngine's elementwise rule itself: while autocast is on, the Elemwise modes in
``HIGH_PREC_MODES`` (exp, log, division, power, ...) compute in the high-precision dtype,
through a hook in ``_imperative_rt.elemwise`` that costs nothing when autocast is off.

Casts made while autocast is on are cached per (tensor, dtype): a parameter used by several ops
is cast once. A cached cast is reused only while it is still what casting would give now: the
tensor holds the same value (an optimizer step or ``x[...] = v`` gives it a new one) and every
active ``GradManager`` recording the tensor recorded the cast in a graph it still holds
(``_imperative_rt._still_derived``). The cache empties whenever autocast is switched, and is
bypassed while ``jit.trace`` records (the graph must read parameters, not eager casts of them).

On the CPU (x86: oneDNN), the cast of a 4-D activation into a 16-bit dtype for a wide
convolution (``AUTO_CHANNELS_LAST_MIN_CHANNELS`` output channels or more) writes it
channels-last: the convolutions, batch norms, pooling and elementwise ops after it keep that
layout (their ``layout_follows``), so oneDNN runs its nhwc kernels without converting the
activations between ops. The layout is marked as the runtime's choice (``Tensor._auto_layout``),
so ``Tensor.format`` stays ``"default"`` as in MegEngine, and gradients of row-major tensors
come back row-major. In float32 (outside autocast) the input of a wide depthwise convolution is
made channels-last the same way (``AUTO_CHANNELS_LAST_FLOAT32``).
"""

import sys
import types
import weakref

import numpy as np

from .. import _imperative_rt as _rt
from .array_method import Tensor, _promote
from .memory_format import to_channels_last

__all__ = ["enabled", "high_prec_dtype", "low_prec_dtype"]  # noqa: F822 (module properties)

_FLOATS = ("float16", "bfloat16", "float32")

# MegEngine's high-precision Elemwise modes under autocast (its dtype-promote rules in 1.13);
# the modes NeoMeg's Elemwise lacks are dropped when the hook is installed.
HIGH_PREC_MODES = (
    "ACOS",
    "ACOSH",
    "ASIN",
    "ASINH",
    "ATAN2",
    "ATANH",
    "COS",
    "COSH",
    "EXP",
    "EXPM1",
    "HSIGMOID",
    "LOG",
    "LOG1P",
    "LOGSIGMOID",
    "LOG_SUM_EXP",
    "POW",
    "SIN",
    "SINH",
    "SOFTPLUS",
    "SQRT",
    "TAN",
    "TRUE_DIV",
)

_enabled = False
_low_prec_dtype = "float16"
_high_prec_dtype = "float32"
# (id(tensor), dtype, channels_last) -> (weakref to the tensor, its value when cast, the cast),
# while enabled
_cache = {}
# The narrowest convolution whose 16-bit input autocast makes channels-last. Measured on x86
# (docs/x86-backend-log.md, "Automatic under 16-bit autocast"): ResNet-18 (64 channels and up)
# and a MobileNet (32 and up) gain; LeNet (6 and 16) loses 1.6x, its max-pool backward being
# oneDNN's slow nhwc kernel for few channels.
AUTO_CHANNELS_LAST_MIN_CHANNELS = 32
_LOW_PREC = ("float16", "bfloat16")
# Outside 16-bit autocast, the float32 input of a depthwise convolution with
# AUTO_CHANNELS_LAST_MIN_CHANNELS channels or more is made channels-last the same way (and the ops
# after it follow). Measured on x86 (docs/x86-backend-log.md, "Automatic in float32 (depthwise
# convolutions)"): a MobileNet step gains 1.13-1.17x; other float32 convolutions stay row-major,
# since ResNet-18 channels-last lost 1.3x (its 3x3 convolutions run Winograd on blocked memory,
# which oneDNN's nhwc kernels do not).
AUTO_CHANNELS_LAST_FLOAT32 = True


def _dtype_name(dtype, what):
    if isinstance(dtype, str):
        name = dtype
    else:
        try:
            name = np.dtype(dtype).name
        except TypeError:
            raise TypeError(f"amp.{what} must be a dtype name, got {dtype!r}") from None
    if name not in _FLOATS:
        raise ValueError(f"amp.{what} must be one of {_FLOATS}, got {dtype!r}")
    return name


def _existing_modes():
    # Read once: the enum's member table is rebuilt on every access (tens of microseconds, on
    # each entry of an autocast region, so each training step).
    global _modes
    if _modes is None:
        names = set(_rt.ops.Elemwise.Mode.__members__)
        _modes = [getattr(_rt.ops.Elemwise.Mode, m) for m in HIGH_PREC_MODES if m in names]
    return _modes


_modes = None


def _high_prec_operands(args):
    """The operands of a HIGH_PREC_MODES op: promoted as usual, floats then cast high."""
    args = _promote(args)
    if args[0]._dtype_name in _FLOATS and args[0]._dtype_name != _high_prec_dtype:
        return [cast(a, _high_prec_dtype) for a in args]
    return args


def _get_amp_dtype_autocast():
    return _enabled


def _set_amp_dtype_autocast(enabled):
    global _enabled
    _enabled = bool(enabled)
    _cache.clear()
    if _enabled:
        _rt._set_amp_elemwise(_high_prec_operands, _existing_modes())
    else:
        _rt._set_amp_elemwise(None, [])


def _get_amp_high_prec_dtype():
    return _high_prec_dtype


def _set_amp_high_prec_dtype(dtype):
    global _high_prec_dtype
    _high_prec_dtype = _dtype_name(dtype, "high_prec_dtype")


def _get_amp_low_prec_dtype():
    return _low_prec_dtype


def _set_amp_low_prec_dtype(dtype):
    global _low_prec_dtype
    _low_prec_dtype = _dtype_name(dtype, "low_prec_dtype")


def _forget(key, ref):
    entry = _cache.get(key)
    if entry is not None and entry[0] is ref:
        del _cache[key]


def _auto_channels_last_float32(x, groups):
    """Whether the float32 input ``x`` of a 2-D convolution with ``groups`` groups is made
    channels-last outside autocast: for depthwise convolutions of
    ``AUTO_CHANNELS_LAST_MIN_CHANNELS`` channels or more (see ``AUTO_CHANNELS_LAST_FLOAT32``)."""
    return (
        AUTO_CHANNELS_LAST_FLOAT32
        and x._dtype_name == "float32"
        and x.ndim == 4
        and groups == x.shape[1] >= AUTO_CHANNELS_LAST_MIN_CHANNELS
        and not x._channels_last
        and not _rt._trace_active()
        and str(x.device).startswith("cpu")
    )


def _auto_channels_last(x, dtype, out_channels):
    """Whether autocast's cast of ``x`` into ``dtype`` for a 2-D convolution with
    ``out_channels`` outputs writes it channels-last (see the module docstring)."""
    return (
        _enabled
        and dtype in _LOW_PREC
        and out_channels >= AUTO_CHANNELS_LAST_MIN_CHANNELS
        and x.ndim == 4
        and not x._channels_last
        and not _rt._trace_active()
        and str(x.device).startswith("cpu")
    )


def _auto_layout_copy(y):
    """``y`` channels-last, marked as the runtime's layout choice (``Tensor.format`` stays)."""
    y = to_channels_last(y)
    y._auto_layout = y._channels_last
    return y


def _cast_value(x, dtype, channels_last):
    y = x.astype(dtype)
    return _auto_layout_copy(y) if channels_last else y


def cast(x, dtype, channels_last=False):
    """``x`` in ``dtype`` when it is a float Tensor of another float dtype, else ``x`` itself;
    while autocast is on, the cast is made once per tensor value (see the module docstring).
    ``channels_last`` writes a 4-D cast channels-last, as the runtime's layout choice."""
    if x is None or not isinstance(x, Tensor):
        return x
    name = x._dtype_name
    if name == dtype or name not in _FLOATS:
        return x
    if not _enabled or _rt._trace_active():
        return x.astype(dtype)
    key = (id(x), dtype, channels_last)
    entry = _cache.get(key)
    if entry is not None:
        ref, then, derived = entry
        if ref() is x and _rt._still_derived(x, then, derived):
            return derived
    derived = _cast_value(x, dtype, channels_last)
    ref = weakref.ref(x, lambda r, key=key: _forget(key, r))
    _cache[key] = (ref, x._detach(), derived)
    return derived


def cast_tensors(*args, promote=False):
    """Casts each Tensor of ``args`` (None passes) to the low-precision dtype, or to the
    high-precision one with ``promote``: MegEngine's ``cast_tensors``.

    Args:
        args: tensors (or None).
        promote: cast to ``high_prec_dtype`` instead of ``low_prec_dtype``.

    Returns:
        a tuple of the cast tensors, in order.

    Examples:
        >>> import megengine as mge
        >>> from megengine.core.tensor import amp
        >>> x, none = amp.cast_tensors(mge.Tensor([1.0]), None)
        >>> x._dtype_name, none
        ('float16', None)
    """
    dtype = _high_prec_dtype if promote else _low_prec_dtype
    return tuple(cast(a, dtype) for a in args)


def _property(get, set, doc):
    return property(lambda module: get(), lambda module, value: set(value), doc=doc)


_ENABLED_DOC = """Get or set amp autocast mode enabled or not.

Examples:
    >>> import megengine as mge
    >>> mge.amp.enabled = True
    >>> mge.amp.enabled
    True
    >>> mge.amp.enabled = False
"""
_HIGH_DOC = """Get or set amp autocast mode's higher precision dtype. It will change the target dtype
in tensor casting for better precision. Default: float32.

Examples:
    >>> import megengine as mge
    >>> mge.amp.high_prec_dtype = "float32"
"""
_LOW_DOC = """Get or set amp autocast mode's lower precision dtype. It will change the target dtype
in tensor casting for better speed and memory. Default: float16.

Examples:
    >>> import megengine as mge
    >>> mge.amp.low_prec_dtype = "float16"
"""


class _AmpModule(types.ModuleType):
    # `amp.enabled = True` must reach the setter: properties of the module's class do that.
    enabled = _property(_get_amp_dtype_autocast, _set_amp_dtype_autocast, _ENABLED_DOC)
    high_prec_dtype = _property(_get_amp_high_prec_dtype, _set_amp_high_prec_dtype, _HIGH_DOC)
    low_prec_dtype = _property(_get_amp_low_prec_dtype, _set_amp_low_prec_dtype, _LOW_DOC)


sys.modules[__name__].__class__ = _AmpModule
