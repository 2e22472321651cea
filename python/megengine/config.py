"""``megengine.config``: process-wide execution settings, read and set as module attributes.

.. code-block:: python

    import megengine as mge
    mge.config.async_level = 0
    mge.config.benchmark_kernel = True

Every setting has MegEngine 1.13's name and default, and a value of the wrong type or range
raises TypeError or ValueError when it is set (MegEngine asserts for ``async_level`` and takes
anything for the others). What NeoMeg does with each:

* ``async_level`` (0, 1 or 2; default 2): how late MegEngine may report an error. NeoMeg's
  CPU queues run each op when it is called, so an error always surfaces at the call that caused
  it (level 0's behaviour) whatever the value; the value is stored for scripts that read it.
* ``benchmark_kernel`` (default False): MegEngine times every algorithm of an op on first use
  (fastrun). On a GPU, NeoMeg's cuDNN convolutions (forward, both backward passes, ConvBias) then
  measure every algorithm cuDNN offers the first time a shape is run and keep the fastest for
  that shape and params; off, cuDNN's heuristics choose. On the CPU, the oneDNN convolutions
  (eager and traced, forward, both backward passes, ConvBias) then time oneDNN's direct and
  Winograd algorithms for each shape and keep the faster (Winograd exists for 3x3 stride-1
  convolutions on AVX-512); off, a rule on the shape chooses, as MegEngine's and cuDNN's
  heuristics do: Winograd for 3x3 stride-1 float32 convolutions of 32 to 1024 channels on
  batches of enough pixels (where it measured 1.3-2.5x faster), direct elsewhere. Winograd's
  float32 rounding error is several times the direct method's (about 1e-6 of the output's scale
  against 3e-7; docs/x86-backend-log.md, "Convolution algorithms: direct or Winograd"); the
  environment variable ``NEOMEG_CONV_WINOGRAD=0`` keeps it out altogether, with or without this
  setting.
  Either way the choice is made when an op first plans a shape, so set this before the first
  step.
* ``deterministic_kernel`` (default False): MegEngine then picks only reproducible algorithms.
  NeoMeg's kernel choice does not depend on it; the value is stored.
* ``disable_memory_forwarding`` (default False): MegEngine then gives every op output storage
  of its own. NeoMeg's view ops still share storage; the value is stored (as a bool).
* ``benchmark_with_subprocess`` (default False): MegEngine then times kernels in a subprocess.
  Stored (MegEngine 1.13's getter forgets it and always says False; NeoMeg's remembers).
* ``_compute_mode`` (``"default"`` or ``"float32"``; default ``"default"``): MegEngine's
  override of the ``compute_mode`` argument of matmul and convolution. Stored; NeoMeg's
  functional ops take their ``compute_mode`` argument and do not read this setting yet.
* ``allow_tf32`` (default False; NeoMeg's, not MegEngine's): whether float32 matrix products
  and convolutions on a GPU may round their inputs to TF32 on tensor cores, as PyTorch's
  ``allow_tf32``. Off, float32 means float32; CPU kernels never read it.
* ``_auto_format_convert`` (default True, MegEngine 1.13's value; its docstring says False):
  whether a tensor of format ``"nhwc"`` presents NCHW order (shape, indices, values) while its
  storage is channels-last. NeoMeg's channels-last tensors always do (they are NCHW tensors
  with channels-last strides, ``Tensor.format``); False, which MegEngine's optimizer and
  GradManager set around their own steps to see the physical NHWC tensor, is stored and
  changes nothing here.

``_override(...)`` sets some of them for a ``with`` block (or a decorated function) and restores
them after.
"""

import contextlib
import numbers
import sys
import types

import numpy as np

from .core import _imperative_rt as _rt

_COMPUTE_MODES = ("default", "float32")

_values = {
    "async_level": 2,
    "benchmark_kernel": False,
    "deterministic_kernel": False,
    "disable_memory_forwarding": False,
    "benchmark_with_subprocess": False,
    "_compute_mode": "default",
    "_auto_format_convert": True,
    "allow_tf32": False,
}
# The settings are properties of the module's class (below), so `from megengine.config import *`
# reads their current values.
__all__ = [
    "_auto_format_convert",  # noqa: F822 (a property of the module's class)
    "_compute_mode",  # noqa: F822
    "_override",
    "allow_tf32",  # noqa: F822
    "async_level",  # noqa: F822
    "benchmark_kernel",  # noqa: F822
    "benchmark_with_subprocess",  # noqa: F822
    "deterministic_kernel",  # noqa: F822
    "disable_memory_forwarding",  # noqa: F822
]


def _as_bool(name, value):
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, numbers.Integral) and value in (0, 1):
        return bool(value)
    raise TypeError(f"megengine.config.{name} must be a bool, got {value!r}")


def _check_async_level(value):
    if not isinstance(value, numbers.Integral) or isinstance(value, (bool, np.bool_)):
        raise TypeError(f"megengine.config.async_level must be an int, got {value!r}")
    if not 0 <= value <= 2:
        raise ValueError(f"megengine.config.async_level should be 0, 1 or 2, got {value}")
    return int(value)


def _check_compute_mode(value):
    if not isinstance(value, str) or value not in _COMPUTE_MODES:
        raise ValueError(
            f"megengine.config._compute_mode must be one of {_COMPUTE_MODES}, got {value!r}"
        )
    return value


def _check_memory_forwarding(value):
    # MegEngine stores an int option and reads it back as bool(option)
    if isinstance(value, (bool, np.bool_, numbers.Integral)):
        return bool(value)
    raise TypeError(f"megengine.config.disable_memory_forwarding must be a bool, got {value!r}")


_checks = {
    "async_level": _check_async_level,
    "benchmark_kernel": lambda v: _as_bool("benchmark_kernel", v),
    "deterministic_kernel": lambda v: _as_bool("deterministic_kernel", v),
    "disable_memory_forwarding": _check_memory_forwarding,
    "benchmark_with_subprocess": lambda v: _as_bool("benchmark_with_subprocess", v),
    "_compute_mode": _check_compute_mode,
    "_auto_format_convert": lambda v: _as_bool("_auto_format_convert", v),
    "allow_tf32": lambda v: _as_bool("allow_tf32", v),
}


# Settings whose new value must also reach C++ (the CUDA and x86 kernels read them from the dnn
# handle).
_appliers = {
    "allow_tf32": _rt.set_cuda_allow_tf32,
    "benchmark_kernel": lambda on: (
        _rt.set_cuda_benchmark_kernel(on),
        _rt.set_x86_benchmark_kernel(on),
    ),
}


def _apply(values):
    for name, value in values.items():
        if name in _appliers:
            _appliers[name](value)
    _values.update(values)


def _setting(name):
    def get(module):
        return _values[name]

    def set(module, value):
        _apply({name: _checks[name](value)})

    return property(get, set, doc=f"megengine.config.{name} (see the module docstring)")


class _ConfigModule(types.ModuleType):
    # Module attributes with checks on assignment: a module's class may be a ModuleType
    # subclass, whose properties then serve `megengine.config.name` and its assignment.
    async_level = _setting("async_level")
    benchmark_kernel = _setting("benchmark_kernel")
    deterministic_kernel = _setting("deterministic_kernel")
    disable_memory_forwarding = _setting("disable_memory_forwarding")
    benchmark_with_subprocess = _setting("benchmark_with_subprocess")
    _compute_mode = _setting("_compute_mode")
    _auto_format_convert = _setting("_auto_format_convert")
    allow_tf32 = _setting("allow_tf32")


@contextlib.contextmanager
def _override(
    benchmark_kernel=None,
    deterministic_kernel=None,
    async_level=None,
    compute_mode=None,
):
    """Sets execution settings for a ``with`` block (or a decorated function), then restores
    them, even when the block raises.

    Args:
        benchmark_kernel: the value of ``benchmark_kernel`` inside; None leaves it.
        deterministic_kernel: the value of ``deterministic_kernel`` inside; None leaves it.
        async_level: the value of ``async_level`` inside; None leaves it.
        compute_mode: the value of ``_compute_mode`` inside; None leaves it.

    Returns:
        a context manager, usable as a decorator too. Every value is checked before any is set.

    Examples:
        >>> import megengine as mge
        >>> with mge.config._override(async_level=0, compute_mode="float32"):
        ...     print(mge.config.async_level, mge.config._compute_mode)
        0 float32
        >>> mge.config.async_level, mge.config._compute_mode
        (2, 'default')
    """
    wanted = {
        "benchmark_kernel": benchmark_kernel,
        "deterministic_kernel": deterministic_kernel,
        "async_level": async_level,
        "_compute_mode": compute_mode,
    }
    new = {k: _checks[k](v) for k, v in wanted.items() if v is not None}
    saved = {k: _values[k] for k in new}
    _apply(new)
    try:
        yield
    finally:
        _apply(saved)


sys.modules[__name__].__class__ = _ConfigModule
