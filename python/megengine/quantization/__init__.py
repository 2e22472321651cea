"""``megengine.quantization``: quantization parameters.

What exists so far is what every tensor carries: :class:`QParams` (``Tensor.qparams``), its
:class:`QuantMode`, and :func:`create_qparams`. MegEngine's observers, fake quantization,
QConfigs and the ``quantize``/``quantize_qat`` conversions are not part of NeoMeg yet.
"""

from .utils import QParams, QuantDtypeMeta, create_qparams
from .utils import QuantMode as QuantMode

# QuantMode is exported too, outside __all__: an Enum's signature is not its documentation
__all__ = ["QParams", "QuantDtypeMeta", "create_qparams"]
