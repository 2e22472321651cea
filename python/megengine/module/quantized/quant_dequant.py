"""Quantized QuantStub and DequantStub: where a quantized network starts and ends."""

from .module import QuantizedModule

__all__ = ["DequantStub", "QuantStub"]


class QuantStub(QuantizedModule):
    """Quantizes its float input to ``dtype`` (the QAT module's activation dtype).

    Args:
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import QuantStub
        >>> m = QuantStub(qint8(0.1))
        >>> m.eval()
        >>> m(mge.Tensor(np.array([0.25, -20.0], np.float32))).numpy().tolist()
        [3, -128]
    """

    def __init__(self, dtype=None, **kwargs):
        super().__init__(**kwargs)
        self.output_dtype = dtype

    def forward(self, inp):
        return inp.astype(self.output_dtype)

    @classmethod
    def from_qat_module(cls, qat_module):
        """A QuantStub with ``qat_module``'s activation dtype.

        Args:
            qat_module: a :class:`~.qat.QuantStub`.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import QuantStub
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.QuantStub()
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> QuantStub.from_qat_module(q).output_dtype.metadata["mgb_dtype"]["name"]
            'QuantizedS8'
        """
        return cls(qat_module.get_activation_dtype(), name=qat_module.name)


class DequantStub(QuantizedModule):
    """Dequantizes its input to float32.

    Args:
        name: the module's name.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import DequantStub
        >>> x = mge.Tensor(np.array([0.3], np.float32)).astype(qint8(0.25))
        >>> m = DequantStub()
        >>> m.eval()
        >>> m(x).numpy().tolist()
        [0.25]
    """

    def forward(self, inp):
        return inp.astype("float32")

    @classmethod
    def from_qat_module(cls, qat_module):
        """A DequantStub named as ``qat_module``.

        Args:
            qat_module: a :class:`~.qat.DequantStub`.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import DequantStub
            >>> DequantStub.from_qat_module(qat.DequantStub(name="out")).name
            'out'
        """
        return cls(name=qat_module.name)
