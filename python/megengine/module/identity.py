"""``Identity``."""

from .module import Module

__all__ = ["Identity"]


class Identity(Module):
    """Returns its input unchanged (a placeholder where a layer is optional).

    Args:
        name: the module's name (None by default).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.Identity()(mge.Tensor([1.0, 2.0])).numpy().tolist()
        [1.0, 2.0]
    """

    def forward(self, x):
        return x
