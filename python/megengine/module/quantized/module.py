"""QuantizedModule: the base of ``megengine.module.quantized``, inference-only modules on
quantized tensors, each made from its QAT module by ``from_qat_module``."""

from abc import abstractmethod

from ..module import Module

__all__ = ["QuantizedModule"]


class QuantizedModule(Module):
    """Base class of the quantized modules: converted from a :class:`~.QATModule` by
    :func:`~.quantize`, and inference only (calling one in training mode raises ValueError).

    Args:
        name: the module's name.

    Examples:
        >>> from megengine.module.quantized import DequantStub
        >>> m = DequantStub()
        >>> m.eval()
        >>> repr(m).startswith("Quantized.")
        True
    """

    def __call__(self, *inputs, **kwargs):
        if self.training:
            raise ValueError("quantized module only support inference.")
        return super().__call__(*inputs, **kwargs)

    def __repr__(self):
        return "Quantized." + super().__repr__()

    @classmethod
    @abstractmethod
    def from_qat_module(cls, qat_module):
        """The quantized module made from ``qat_module``: weights quantized to its weight dtype,
        output in its activation dtype.

        Args:
            qat_module: the :class:`~.QATModule` to convert.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module.qat import DequantStub as QATDequant
            >>> from megengine.module.quantized import DequantStub
            >>> type(DequantStub.from_qat_module(QATDequant())).__name__
            'DequantStub'
        """
