"""``megengine.amp``: automatic mixed precision (MegEngine 1.13's API).

* :class:`autocast` runs convolutions, matrix products and linear layers in a low-precision
  dtype (``"float16"`` or ``"bfloat16"``) and keeps what needs range or accuracy (exp, log,
  division, means, batch-norm statistics, log-softmax and the losses built on it) in float32.
* :class:`GradScaler` scales the loss so that float16 gradients do not underflow, unscales the
  gradients, and skips steps whose gradients are not finite.
* :func:`convert_module_format` and :func:`convert_tensor_format` mark 4-D/5-D tensors NHWC.

``amp.enabled``, ``amp.low_prec_dtype`` and ``amp.high_prec_dtype`` read and set the state
(``megengine.core.tensor.amp``) that :class:`autocast` sets for a block.
"""

import sys
import types

from ..core.tensor import amp as _state
from .autocast import autocast
from .convert_format import convert_module_format, convert_tensor_format
from .grad_scaler import GradScaler

__all__ = [
    "GradScaler",
    "autocast",
    "convert_module_format",
    "convert_tensor_format",
    "enabled",  # module properties, below
    "high_prec_dtype",
    "low_prec_dtype",
]


class _AmpModule(types.ModuleType):
    # MegEngine makes these module properties (mprop): `amp.enabled = True` switches autocast.
    enabled = type(_state).enabled
    high_prec_dtype = type(_state).high_prec_dtype
    low_prec_dtype = type(_state).low_prec_dtype


sys.modules[__name__].__class__ = _AmpModule
