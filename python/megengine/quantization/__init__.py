"""``megengine.quantization``: quantization-aware training, as MegEngine 1.13's.

Tensors carry :class:`QParams` (``Tensor.qparams``). Observers (:class:`MinMaxObserver`,
:class:`ExponentialMovingAverageObserver`, :class:`HistogramObserver`, ...) record statistics
and give scales; :class:`FakeQuantize`, :class:`TQT` and :class:`LSQ` fake-quantize (the
FakeQuant, TQT and LSQ operators, with their gradients); a :class:`QConfig` names which of them
a QAT module uses, and :func:`quantize_qat` converts a float network to
``megengine.module.qat`` modules. :func:`quantize` then converts the QAT network to
``megengine.module.quantized`` modules, which compute on quantized dtypes (qint8, quint8,
qint32 of ``megengine.core.tensor.dtype``) with integer kernels.
"""

from .fake_quant import LSQ, TQT, FakeQuantize
from .observer import (
    ExponentialMovingAverageObserver,
    HistogramObserver,
    MinMaxObserver,
    Observer,
    PassiveObserver,
    SyncExponentialMovingAverageObserver,
    SyncMinMaxObserver,
)
from .qconfig import (
    QConfig,
    calibration_qconfig,
    easyquant_qconfig,
    ema_fakequant_qconfig,
    ema_lowbit_fakequant_qconfig,
    min_max_fakequant_qconfig,
    passive_qconfig,
    sync_ema_fakequant_qconfig,
    tqt_qconfig,
)
from .quantize import (
    apply_easy_quant,
    disable_fake_quant,
    disable_observer,
    enable_fake_quant,
    enable_observer,
    propagate_qconfig,
    quantize,
    quantize_qat,
    reset_qconfig,
)
from .utils import (
    QParams,
    QuantDtypeMeta,
    create_qparams,
    fake_quant_bias,
    fake_quant_tensor,
)
from .utils import QuantMode as QuantMode

# QuantMode is exported too, outside __all__: an Enum's signature is not its documentation
__all__ = [
    "LSQ",
    "TQT",
    "ExponentialMovingAverageObserver",
    "FakeQuantize",
    "HistogramObserver",
    "MinMaxObserver",
    "Observer",
    "PassiveObserver",
    "QConfig",
    "QParams",
    "QuantDtypeMeta",
    "SyncExponentialMovingAverageObserver",
    "SyncMinMaxObserver",
    "apply_easy_quant",
    "calibration_qconfig",
    "create_qparams",
    "disable_fake_quant",
    "disable_observer",
    "easyquant_qconfig",
    "ema_fakequant_qconfig",
    "ema_lowbit_fakequant_qconfig",
    "enable_fake_quant",
    "enable_observer",
    "fake_quant_bias",
    "fake_quant_tensor",
    "min_max_fakequant_qconfig",
    "passive_qconfig",
    "propagate_qconfig",
    "quantize",
    "quantize_qat",
    "reset_qconfig",
    "sync_ema_fakequant_qconfig",
    "tqt_qconfig",
]
