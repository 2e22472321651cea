"""QAT QuantStub and DequantStub."""

from .. import quant_dequant as Float
from .module import QATModule

__all__ = ["DequantStub", "QuantStub"]


class QuantStub(Float.QuantStub, QATModule):
    """The QAT QuantStub: observes and fake-quantizes its input (where a quantized model's input
    is quantized).

    Examples:
        >>> import megengine as mge
        >>> from megengine.module.qat import QuantStub
        >>> QuantStub()(mge.Tensor([1.0, 2.0])).numpy().tolist()
        [1.0, 2.0]
    """

    with_weight = False

    def forward(self, inp):
        return self.apply_quant_activation(inp)

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT QuantStub of a float one.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import QuantStub
            >>> QuantStub.from_float_module(M.QuantStub(name="q")).name
            'q'
        """
        return cls(name=float_module.name)


class DequantStub(Float.DequantStub, QATModule):
    """The QAT DequantStub: returns its input (a quantized model dequantizes here).

    Examples:
        >>> import megengine as mge
        >>> from megengine.module.qat import DequantStub
        >>> DequantStub()(mge.Tensor([1.0])).numpy().tolist()
        [1.0]
    """

    with_weight = False
    with_act = False

    def forward(self, inp):
        return inp

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT DequantStub of a float one.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import DequantStub
            >>> type(DequantStub.from_float_module(M.DequantStub())).__name__
            'DequantStub'
        """
        return cls(name=float_module.name)
