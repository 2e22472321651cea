"""``megengine.dtr``: dynamic tensor rematerialisation, MegEngine 1.13's way to train with less
memory by recomputing activations instead of keeping them.

.. code-block:: python

    import megengine as mge
    mge.dtr.eviction_threshold = "2GB"
    mge.dtr.enable()

While enabled, every output of at least ``evictee_minimum_size`` bytes that an op makes while a
``GradManager`` records remembers its op and inputs. When the memory allocated on the device
passes ``eviction_threshold``, the runtime frees such values, cheapest to recompute per byte and
least recently used first, and recomputes them when they are read again (by the backward pass,
or ``numpy()``). Results are bitwise those of a run without DTR: the same kernels run on the same
inputs. A threshold of 0 (the default) evicts nothing.

What a value costs to recompute is, as in MegEngine 1.13, an estimate: the bytes its op read and
wrote. It depends on the program alone, so a run evicts the same values and peaks at the same
memory however loaded the machine is. ``megengine.dtr._eviction_cost = "measured"`` (a NeoMeg
setting, not MegEngine's) counts the op's wall-clock time instead, as the DTR paper does: it tells
a convolution from an elementwise op of the same size, but what is evicted then varies from run to
run with the machine's load.

NeoMeg's scope (imperative/include/neomeg/imperative/dtr.h has the reasons): only values made
while a ``GradManager`` records become candidates (an optimizer step or inference keeps no
history); a value shared by a view or a zero-copy numpy array stays in memory; DTR works on the
thread that called :func:`enable`; ``jit.trace`` records as usual and evicts nothing.
"""

import re
import sys
import types

from ..core import _imperative_rt as _rt

__all__ = [
    "disable",
    "enable",
    "enable_sqrt_sampling",  # the three below are properties of the module's class
    "evictee_minimum_size",
    "eviction_threshold",
]

_state = {
    "enabled": False,
    "eviction_threshold": 0,
    "evictee_minimum_size": 1024**2,
    "enable_sqrt_sampling": False,
    "_eviction_cost": "estimate",
}


def _str2bytes(text):
    found = re.findall(r"(\d+(?:\.\d+)?)\s*([kmg]?b)", text, re.IGNORECASE)
    if len(found) != 1:
        raise ValueError(
            "Formatting of `value` only supports bytes(B), kilobyte(KB), megabyte(MB) and "
            f"gigabyte(GB) units, got {text!r}"
        )
    number, unit = found[0]
    return int(float(number) * 1024 ** ["b", "kb", "mb", "gb"].index(unit.lower()))


def _as_bytes(name, value):
    if isinstance(value, str):
        value = _str2bytes(value)
    elif not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"megengine.dtr.{name}: `value` should be a str or an int, got {value!r}")
    if value < 0:
        raise ValueError(f"megengine.dtr.{name} must not be negative, got {value}")
    return value


def _as_cost(value):
    if value not in ("estimate", "measured"):
        raise ValueError(
            f'megengine.dtr._eviction_cost must be "estimate" or "measured", got {value!r}'
        )
    return value


def _push():
    _rt.dtr_set_config(
        _state["enabled"],
        _state["eviction_threshold"],
        _state["evictee_minimum_size"],
        _state["enable_sqrt_sampling"],
        measured_cost=_state["_eviction_cost"] == "measured",
    )


def enable():
    r"""Starts recording how large activations were computed and evicting them by DTR's policy
    when the device's allocated memory passes :attr:`eviction_threshold`.

    Returns:
        None. The setting holds for the calling thread until :func:`disable`.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.functional as F
        >>> from megengine.autodiff import GradManager
        >>> mge.dtr.eviction_threshold = "1KB"
        >>> mge.dtr.evictee_minimum_size = 0
        >>> mge.dtr.enable()
        >>> w = mge.Parameter(np.ones((64, 64), "float32"))
        >>> gm = GradManager().attach([w])
        >>> with gm:
        ...     gm.backward(F.exp(F.exp(w * 0.01)).sum())
        >>> mge.dtr.disable()
        >>> round(float(w.grad[0, 0].item()), 4)
        0.0277
    """
    _state["enabled"] = True
    _push()


def disable():
    r"""Stops DTR: no new candidates, no more evictions. Values evicted already are recomputed
    when read.

    Returns:
        None.

    Examples:
        >>> import megengine as mge
        >>> mge.dtr.enable()
        >>> mge.dtr.disable()
    """
    _state["enabled"] = False
    _push()
    _rt.dtr_clear_candidates()


def _setting(name, check, doc):
    def get(module):
        return _state[name]

    def set(module, value):
        _state[name] = check(value)
        _push()

    return property(get, set, doc=doc)


class _DtrModule(types.ModuleType):
    # module attributes with checks on assignment, as megengine.config's
    eviction_threshold = _setting(
        "eviction_threshold",
        lambda v: _as_bytes("eviction_threshold", v),
        "Bytes of allocated device memory above which DTR evicts (an int, or a str such as "
        '"2GB", "512MB", "1.5KB"); 0 evicts nothing.',
    )
    evictee_minimum_size = _setting(
        "evictee_minimum_size",
        lambda v: _as_bytes("evictee_minimum_size", v),
        "Outputs smaller than this many bytes are never evicted (default 1 MiB); an int or a "
        "str with a unit.",
    )
    enable_sqrt_sampling = _setting(
        "enable_sqrt_sampling",
        bool,
        "Whether each eviction scans sqrt(N) random candidates rather than all N (faster with "
        "many tensors).",
    )
    _eviction_cost = _setting(
        "_eviction_cost",
        _as_cost,
        'What a value costs to recompute: "estimate" (the default, MegEngine\'s: bytes its op read '
        'and wrote; the same evictions on every run) or "measured" (its op\'s wall-clock time; '
        "evictions vary with the machine's load).",
    )


sys.modules[__name__].__class__ = _DtrModule
