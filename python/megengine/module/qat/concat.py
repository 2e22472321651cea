"""QAT Concat."""

from .. import concat as Float
from .module import QATModule

__all__ = ["Concat"]


class Concat(Float.Concat, QATModule):
    """The QAT version of :class:`~.module.Concat`: concatenation, then the activation's
    observer and fake quantizer.

    Examples:
        >>> import megengine as mge
        >>> from megengine.module.qat import Concat
        >>> Concat()([mge.Tensor([1.0]), mge.Tensor([2.0])]).numpy().tolist()
        [1.0, 2.0]
    """

    def forward(self, inps, axis=0):
        return self.apply_quant_activation(super().forward(inps, axis))

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT Concat of a float one.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import Concat
            >>> type(Concat.from_float_module(M.Concat())).__name__
            'Concat'
        """
        return cls(name=float_module.name)
