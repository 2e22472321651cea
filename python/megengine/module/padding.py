"""``Pad``."""

from .. import functional as F
from .module import Module

__all__ = ["Pad"]


class Pad(Module):
    """Pads its input with ``F.pad``.

    Args:
        pad_width: ((before, after), ...) for the leading dims.
        mode: ``"constant"``, ``"edge"``/``"replicate"`` or ``"reflect"``.
        constant_val: the border value of ``"constant"`` mode.
        kwargs: ``name`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.Pad(((1, 2),), constant_val=9.0)(mge.Tensor([1.0])).numpy().tolist()
        [9.0, 1.0, 9.0, 9.0]
    """

    def __init__(self, pad_width, mode="constant", constant_val=0.0, **kwargs):
        super().__init__(**kwargs)
        self.pad_width = pad_width
        self.mode = mode
        self.pad_val = constant_val

    def forward(self, src):
        return F.pad(src, self.pad_width, self.mode, self.pad_val)

    def _module_info_string(self):
        return f"pad_width={self.pad_width}, mode={self.mode}, pad_val={self.pad_val}"
