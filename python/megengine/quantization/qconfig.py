"""QConfig, which observers and fake quantizers a :class:`~.QATModule` makes for its weight and
activation, and MegEngine 1.13's presets."""

from collections import namedtuple
from functools import partial

from ..module import Module
from .fake_quant import TQT, FakeQuantize
from .observer import (
    ExponentialMovingAverageObserver,
    HistogramObserver,
    MinMaxObserver,
    PassiveObserver,
    SyncExponentialMovingAverageObserver,
    SyncMinMaxObserver,
)

__all__ = [
    "QConfig",
    "calibration_qconfig",
    "easyquant_qconfig",
    "ema_fakequant_qconfig",
    "ema_lowbit_fakequant_qconfig",
    "min_max_fakequant_qconfig",
    "passive_qconfig",
    "sync_ema_fakequant_qconfig",
    "tqt_qconfig",
]


# a namedtuple: immutable, comparable and printable
class QConfig(
    namedtuple(
        "QConfig", ["weight_observer", "act_observer", "weight_fake_quant", "act_fake_quant"]
    )
):
    """How a :class:`~.QATModule` quantizes its weight and activation: each field is a class (or
    ``functools.partial`` of one) that makes an :class:`~.Observer` or fake quantizer, or None.
    Weights usually take the narrow dtype (``qint8_narrow``, [-127, 127]) so that sums of
    products cannot overflow.

    Args:
        weight_observer: makes the weight's observer.
        act_observer: makes the activation's observer.
        weight_fake_quant: makes the weight's fake quantizer.
        act_fake_quant: makes the activation's fake quantizer.

    Examples:
        >>> from functools import partial
        >>> from megengine.quantization import (
        ...     ExponentialMovingAverageObserver, FakeQuantize, MinMaxObserver, QConfig)
        >>> qconfig = QConfig(
        ...     weight_observer=partial(MinMaxObserver, dtype="qint8_narrow"),
        ...     act_observer=partial(ExponentialMovingAverageObserver, dtype="qint8"),
        ...     weight_fake_quant=partial(FakeQuantize, dtype="qint8_narrow"),
        ...     act_fake_quant=partial(FakeQuantize, dtype="qint8"),
        ... )
        >>> qconfig.act_observer().qmax
        127
    """

    def __new__(cls, weight_observer, act_observer, weight_fake_quant, act_fake_quant):
        if isinstance(act_observer, Module) or isinstance(weight_observer, Module):
            # ValueError, as MegEngine raises
            raise ValueError(  # noqa: TRY004
                "QConfig must not receive observer instance, please pass observer"
                " class generator using `partial(Observer, ...)` instead. Use"
                " partial(MyObserver, x=1) to override arguments to constructor if needed"
            )
        return super().__new__(
            cls, weight_observer, act_observer, weight_fake_quant, act_fake_quant
        )


min_max_fakequant_qconfig = QConfig(
    weight_observer=partial(MinMaxObserver, dtype="qint8_narrow"),
    act_observer=partial(MinMaxObserver, dtype="qint8"),
    weight_fake_quant=partial(FakeQuantize, dtype="qint8_narrow"),
    act_fake_quant=partial(FakeQuantize, dtype="qint8"),
)

ema_fakequant_qconfig = QConfig(
    weight_observer=partial(MinMaxObserver, dtype="qint8_narrow"),
    act_observer=partial(ExponentialMovingAverageObserver, dtype="qint8"),
    weight_fake_quant=partial(FakeQuantize, dtype="qint8_narrow"),
    act_fake_quant=partial(FakeQuantize, dtype="qint8"),
)

sync_ema_fakequant_qconfig = QConfig(
    weight_observer=partial(SyncMinMaxObserver, dtype="qint8_narrow"),
    act_observer=partial(SyncExponentialMovingAverageObserver, dtype="qint8"),
    weight_fake_quant=partial(FakeQuantize, dtype="qint8_narrow"),
    act_fake_quant=partial(FakeQuantize, dtype="qint8"),
)

ema_lowbit_fakequant_qconfig = QConfig(
    weight_observer=partial(MinMaxObserver, dtype="qint4"),
    act_observer=partial(ExponentialMovingAverageObserver, dtype="qint4"),
    weight_fake_quant=partial(FakeQuantize, dtype="qint4"),
    act_fake_quant=partial(FakeQuantize, dtype="qint4"),
)

calibration_qconfig = QConfig(
    weight_observer=partial(MinMaxObserver, dtype="qint8_narrow"),
    act_observer=partial(HistogramObserver, dtype="qint8"),
    weight_fake_quant=None,
    act_fake_quant=None,
)

tqt_qconfig = QConfig(
    weight_observer=None,
    act_observer=None,
    weight_fake_quant=partial(TQT, dtype="qint8_narrow"),
    act_fake_quant=partial(TQT, dtype="qint8"),
)

passive_qconfig = QConfig(
    weight_observer=partial(PassiveObserver, dtype="qint8_narrow"),
    act_observer=partial(PassiveObserver, dtype="qint8"),
    weight_fake_quant=partial(FakeQuantize, dtype="qint8_narrow"),
    act_fake_quant=partial(FakeQuantize, dtype="qint8"),
)

easyquant_qconfig = passive_qconfig
