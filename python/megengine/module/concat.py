"""``Concat``."""

from .. import functional as F
from .module import Module

__all__ = ["Concat"]


class Concat(Module):
    """Concatenates a list of tensors (a module, so quantization can replace it).

    Args:
        name: the module's name (None by default).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.Concat()([mge.Tensor([1.0]), mge.Tensor([2.0, 3.0])]).numpy().tolist()
        [1.0, 2.0, 3.0]
    """

    def forward(self, inps, axis=0):
        return F.concat(inps, axis)
