"""``PixelShuffle``."""

from .. import functional as F
from .module import Module

__all__ = ["PixelShuffle"]


class PixelShuffle(Module):
    """Rearranges (..., C * r * r, H, W) into (..., C, H * r, W * r).

    Args:
        upscale_factor: r.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> x = mge.Tensor(np.arange(4, dtype=np.float32).reshape(1, 4, 1, 1))
        >>> M.PixelShuffle(2)(x).numpy().tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """

    def __init__(self, upscale_factor, **kwargs):
        super().__init__(**kwargs)
        self.upscale_factor = upscale_factor

    def forward(self, x):
        return F.pixel_shuffle(x, self.upscale_factor)

    def _module_info_string(self):
        return f"upscale_factor={self.upscale_factor}"
