"""Fake-quantization modules, as MegEngine 1.13's: :class:`FakeQuantize` (by an observer's
qparams), :class:`TQT` (a learned log2 step) and :class:`LSQ` (a learned step size)."""

import math
from abc import ABCMeta, abstractmethod

from .. import functional as F
from ..logger import get_logger
from ..module import Module
from ..tensor import Parameter, Tensor
from .utils import (
    LSQParams,
    QParamsModuleMixin,
    QuantDtypeMeta,
    QuantMode,
    _builtin_quant_dtypes,
    create_qparams,
    fake_quant_tensor,
    lsq_forward,
    tqt_forward,
)

__all__ = ["LSQ", "TQT", "FakeQuantize"]

logger = get_logger(__name__)


def _dtype_meta(dtype):
    if isinstance(dtype, str):
        if dtype not in _builtin_quant_dtypes:
            raise ValueError(f"unknown dtype: {dtype}, only support {_builtin_quant_dtypes.keys()}")
        return _builtin_quant_dtypes[dtype]
    if not isinstance(dtype, QuantDtypeMeta):
        raise TypeError(f"dtype must be a name or a QuantDtypeMeta, got {dtype!r}")
    return dtype


def _drop_narrow_range(kwargs):
    if "narrow_range" in kwargs:
        del kwargs["narrow_range"]
        logger.warning(
            "FakeQuantize currently has no narrow_range param so it is ignored here",
            exc_info=DeprecationWarning,
        )


class _FakeQuantize(Module, metaclass=ABCMeta):
    # The base of FakeQuantize, TQT and LSQ: each defines fake_quant_forward.
    def __init__(self, dtype, enable=True, **kwargs):
        # MegEngine accepts and ignores other keyword arguments
        _drop_narrow_range(kwargs)
        super().__init__()
        self.dtype = _dtype_meta(dtype)
        self.qmin = self.dtype.qmin
        self.qmax = self.dtype.qmax
        self.enabled = enable

    def enable(self):
        """Makes :meth:`forward` fake-quantize.

        Examples:
            >>> from megengine.quantization import FakeQuantize
            >>> fq = FakeQuantize("qint8", enable=False)
            >>> fq.enable()
            >>> fq.enabled
            True
        """
        self.enabled = True

    def disable(self):
        """Makes :meth:`forward` return its input unchanged.

        Examples:
            >>> from megengine.quantization import FakeQuantize
            >>> fq = FakeQuantize("qint8")
            >>> fq.disable()
            >>> fq.enabled
            False
        """
        self.enabled = False

    @abstractmethod
    def fake_quant_forward(self, inp, qparams=None):
        """The enabled forward: ``inp`` fake-quantized with this quantizer's rule."""

    def normal_forward(self, inp, qparams=None):
        """The disabled forward: returns ``inp``.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import FakeQuantize
            >>> FakeQuantize("qint8").normal_forward(mge.Tensor([0.3])).numpy().tolist()
            [0.30000001192092896]
        """
        return inp

    def forward(self, inp, qparams=None):
        if self.enabled:
            return self.fake_quant_forward(inp, qparams=qparams)
        return self.normal_forward(inp, qparams=qparams)


class FakeQuantize(_FakeQuantize):
    """Quantizes and dequantizes its input by the qparams an observer gives it (see
    :func:`~.fake_quant_tensor`); the gradient passes straight through inside the range.

    Args:
        dtype: a built-in dtype's name (``"qint8"``, ``"qint8_narrow"``, ``"quint8"``,
            ``"qint4"``...) or a :class:`~.QuantDtypeMeta`.
        enable: whether :meth:`forward` fake-quantizes (else it returns its input).

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import FakeQuantize, create_qparams
        >>> fq = FakeQuantize("qint8")
        >>> q = create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.25))
        >>> fq(mge.Tensor([0.3, -40.0]), q).numpy().tolist()
        [0.25, -32.0]
    """

    def fake_quant_forward(self, inp, qparams=None):
        """Fake-quantizes ``inp`` by ``qparams``, whose dtype must be this module's.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import FakeQuantize, create_qparams
            >>> q = create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5))
            >>> FakeQuantize("qint8").fake_quant_forward(mge.Tensor([0.8]), q).numpy().tolist()
            [1.0]
        """
        assert qparams.dtype_meta is self.dtype, (
            "input qparams' dtype is not equal to self.dtype.\n"
            f"qparams.dtype_meta={qparams.dtype_meta}\nself.dtype={self.dtype}"
        )
        return fake_quant_tensor(inp, qparams)


class TQT(_FakeQuantize, QParamsModuleMixin):
    """TQT, trained quantization thresholds (https://arxiv.org/abs/1903.08066): symmetric fake
    quantization with step ``2 ** scale``, ``scale`` a learned Parameter (initially 0).

    Args:
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.
        enable: whether :meth:`forward` fake-quantizes (else it returns its input).

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import TQT
        >>> tqt = TQT("qint8")
        >>> tqt(mge.Tensor([0.4, 1.6, 300.0])).numpy().tolist()
        [0.0, 2.0, 127.0]
    """

    def __init__(self, dtype, enable=True, **kwargs):
        super().__init__(dtype, enable, **kwargs)
        self.scale = Parameter(0.0, dtype="float32")

    def fake_quant_forward(self, inp, qparams=None):
        """Fake-quantizes ``inp`` with the learned step (``qparams`` is ignored).

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import TQT
            >>> TQT("qint8").fake_quant_forward(mge.Tensor([0.6])).numpy().tolist()
            [1.0]
        """
        return tqt_forward(self.qmin, self.qmax, inp, self.scale)

    def set_qparams(self, qparams):
        """Sets the log2 step from a symmetric ``qparams``' scale.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import TQT, create_qparams
            >>> tqt = TQT("qint8")
            >>> tqt.set_qparams(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.25)))
            >>> float(tqt.scale)
            -2.0
        """
        assert qparams.mode == QuantMode.SYMMERTIC, (
            "only symmetric quantization is supported by TQT"
        )
        if qparams.scale is None:
            raise AssertionError("Can not get an initialized scale")
        self.scale[...] = F.log(qparams.scale) / math.log(2)

    def get_qparams(self):
        """Symmetric qparams with scale ``2 ** self.scale``.

        Examples:
            >>> from megengine.quantization import TQT
            >>> float(TQT("qint8").get_qparams().scale)
            1.0
        """
        return create_qparams(QuantMode.SYMMERTIC, self.dtype, scale=2**self.scale)


class LSQ(_FakeQuantize, QParamsModuleMixin):
    """LSQ, learned step size quantization (https://arxiv.org/abs/1902.08153): fake quantization
    whose step ``|step_size| + eps`` is a learned Parameter, its gradient scaled by
    ``grad_scale``.

    Args:
        dtype: a built-in dtype's name or a :class:`~.QuantDtypeMeta`.
        enable: whether :meth:`forward` fake-quantizes (else it returns its input).
        eps: added to ``|step_size|`` to keep the step above zero. Default: 1e-5

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import LSQ
        >>> lsq = LSQ("qint8")
        >>> [round(v, 3) for v in lsq(mge.Tensor([0.4, 1.6, 300.0])).numpy().tolist()]
        [0.0, 2.0, 127.001]
    """

    def __init__(self, dtype, enable=True, eps=1e-5, **kwargs):
        super().__init__(dtype=dtype, enable=enable, **kwargs)
        self.eps = Tensor(eps, dtype="float32")
        self.step_size = Parameter(1.0, dtype="float32")
        self.mode = None
        self.zero_point = Tensor(0.0, dtype="float32")
        self.grad_scale = Tensor(1.0, dtype="float32")

    def set_qparams(self, qparams):
        """Takes the mode, zero point and initial step from ``qparams`` (and its
        ``grad_scale`` when it is an LSQParams).

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import LSQ, create_qparams
            >>> lsq = LSQ("qint8")
            >>> lsq.set_qparams(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.25)))
            >>> round(float(lsq.step_size), 5)
            0.24999
        """
        self.mode = qparams.mode
        if qparams.mode == QuantMode.ASYMMERTIC:
            self.zero_point = qparams.zero_point
        else:
            self.zero_point = Tensor(0.0, dtype="float32")
        if qparams.scale is None:
            raise AssertionError("Can not get an initialized scale")
        init_step_size = qparams.scale
        if init_step_size < self.eps:
            init_step_size = Tensor(0.0, dtype="float32")
        else:
            init_step_size = Tensor(init_step_size - self.eps)
        self.step_size = Parameter(init_step_size.item(), dtype="float32")
        if isinstance(qparams, LSQParams):
            self.grad_scale = qparams.grad_scale

    def fake_quant_forward(self, inp, qparams=None):
        """Fake-quantizes ``inp`` with the learned step (``qparams`` is ignored).

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import LSQ
            >>> round(float(LSQ("qint8").fake_quant_forward(mge.Tensor([0.6]))[0]), 4)  # step 1 + eps
            1.0
        """
        step_size = F.abs(self.step_size) + self.eps
        return lsq_forward(self.qmin, self.qmax, inp, step_size, self.zero_point, self.grad_scale)

    def get_qparams(self):
        """An LSQParams with scale ``|step_size| + eps`` (no gradient).

        Examples:
            >>> from megengine.quantization import LSQ
            >>> round(float(LSQ("qint8").get_qparams().scale), 5)
            1.00001
        """
        return LSQParams(
            mode=self.mode,
            dtype_meta=self.dtype,
            scale=F.abs(self.step_size.detach()) + self.eps,
            zero_point=self.zero_point,
            grad_scale=self.grad_scale,
        )
