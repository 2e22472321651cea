"""Quantized Concat: requantises every input to one dtype, then concatenates."""

from ...functional import concat
from .module import QuantizedModule

__all__ = ["Concat"]


class Concat(QuantizedModule):
    """Concatenates quantized tensors after converting each to ``dtype`` (MegEngine's
    requantisation: dequantize, round to the new scale).

    Args:
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import Concat
        >>> a = mge.Tensor(np.array([1.0], np.float32)).astype(qint8(0.5))
        >>> b = mge.Tensor(np.array([1.0], np.float32)).astype(qint8(0.25))
        >>> m = Concat(qint8(0.1))
        >>> m.eval()
        >>> m([a, b]).numpy().tolist()
        [10, 10]
    """

    def __init__(self, dtype=None, **kwargs):
        super().__init__(**kwargs)
        self.output_dtype = dtype

    def forward(self, inps, axis=0):
        return concat(tuple(x.astype(self.output_dtype) for x in inps), axis)

    @classmethod
    def from_qat_module(cls, qat_module):
        """A Concat with ``qat_module``'s activation dtype.

        Args:
            qat_module: a :class:`~.qat.Concat`.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import Concat
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.Concat()
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> Concat.from_qat_module(q).output_dtype.metadata["mgb_dtype"]["name"]
            'QuantizedS8'
        """
        return cls(qat_module.get_activation_dtype(), name=qat_module.name)
