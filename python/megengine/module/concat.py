"""``Concat``."""

from .. import functional as F
from .module import Module

__all__ = ["Concat"]


class Concat(Module):
    """Concatenates a list of tensors (a module, so quantization can replace it).

    Args:
        kwargs: ``name`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.Concat()([mge.Tensor([1.0]), mge.Tensor([2.0, 3.0])]).numpy().tolist()
        [1.0, 2.0, 3.0]
    """

    def __init__(self, **kwargs):
        super().__init__(**kwargs)

    def forward(self, inps, axis=0):
        return F.concat(inps, axis)
