"""The fake quantizer a traced QAT module holds in place of an observer or fake quantizer of
a class that is not builtin (a user subclass): it keeps the qparams that one had, so that the
TracedModule quantizes as the module did without tracing user code."""

from ..quantization.fake_quant import _FakeQuantize
from ..quantization.utils import QParams, QParamsModuleMixin, fake_quant_tensor


class FakeQuantize(_FakeQuantize, QParamsModuleMixin):
    r"""Quantizes and dequantizes its input by fixed :attr:`qparams` (MegEngine 1.13's
    ``megengine.traced_module.fake_quant.FakeQuantize``).

    Args:
        dtype: a built-in quantized dtype's name (``"qint8"``...) or a ``QuantDtypeMeta``.
        enable: whether :meth:`forward` fake-quantizes (else it returns its input).

    Examples:
        >>> import megengine as mge
        >>> from megengine.quantization import create_qparams
        >>> from megengine.traced_module.fake_quant import FakeQuantize
        >>> fq = FakeQuantize("qint8")
        >>> fq.set_qparams(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.25)))
        >>> fq(mge.Tensor([0.3, -40.0])).numpy().tolist()
        [0.25, -32.0]
    """

    def __init__(self, dtype, enable=True, **kwargs):
        super().__init__(dtype, enable, **kwargs)
        self.qparams = None

    def fake_quant_forward(self, inp, qparams=None):
        """Fake-quantizes ``inp`` by ``qparams``, or by :attr:`qparams` when None.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import create_qparams
            >>> from megengine.traced_module.fake_quant import FakeQuantize
            >>> fq = FakeQuantize("qint8")
            >>> fq.set_qparams(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5)))
            >>> fq.fake_quant_forward(mge.Tensor([0.8])).numpy().tolist()
            [1.0]
        """
        if qparams is None:
            qparams = self.get_qparams()
        assert qparams.dtype_meta is self.dtype, (
            "input qparams' dtype is not equal to self.dtype.\n"
            f"qparams.dtype_meta={qparams.dtype_meta}\nself.dtype={self.dtype}"
        )
        return fake_quant_tensor(inp, qparams)

    def get_qparams(self):
        """The qparams :meth:`set_qparams` gave (None before).

        Examples:
            >>> from megengine.traced_module.fake_quant import FakeQuantize
            >>> FakeQuantize("qint8").get_qparams() is None
            True
        """
        return self.qparams

    def set_qparams(self, qparams):
        r"""Sets :attr:`qparams` from ``qparams`` (its scale is required; a missing dtype is
        this module's, a different one an AssertionError).

        Args:
            qparams: a ``QParams`` with the ``scale`` and ``zero_point`` to use.

        Examples:
            >>> import megengine as mge
            >>> from megengine.quantization import create_qparams
            >>> from megengine.traced_module.fake_quant import FakeQuantize
            >>> fq = FakeQuantize("quint8")
            >>> fq.set_qparams(create_qparams(scale=mge.Tensor(0.1), zero_point=mge.Tensor(3)))
            >>> fq.get_qparams().dtype_meta is fq.dtype
            True
        """
        self._check_qparams(qparams)
        self.qparams = QParams(qparams.mode, qparams.dtype_meta, qparams.scale, qparams.zero_point)
