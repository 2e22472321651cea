"""QAT Elemwise."""

from .. import elemwise as Float
from .module import QATModule

__all__ = ["Elemwise"]


class Elemwise(Float.Elemwise, QATModule):
    """The QAT version of :class:`~.module.Elemwise`: the elementwise function, then the
    activation's observer and fake quantizer.

    Args:
        method: the elementwise method's name (``"add"``, ``"fuse_add_relu"``...).
        kwargs: ``name`` of the module.

    Examples:
        >>> import megengine as mge
        >>> from megengine.module.qat import Elemwise
        >>> Elemwise("add")(mge.Tensor([1.0]), mge.Tensor([2.0])).numpy().tolist()
        [3.0]
    """

    with_weight = False

    def forward(self, *inps):
        return self.apply_quant_activation(super().forward(*inps))

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT Elemwise of a float one.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import Elemwise
            >>> Elemwise.from_float_module(M.Elemwise("mul")).method
            'mul'
        """
        return cls(float_module.method, name=float_module.name)
