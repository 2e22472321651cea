"""``Elemwise``: one elementwise mode as a module."""

from ..core.ops import builtin
from ..core.tensor.array_method import elemwise as _elemwise
from .module import Module

__all__ = ["Elemwise"]

# MegEngine's fused modes, composed: add, then the activation.
_FUSED = {
    "FUSE_ADD_RELU": "RELU",
    "FUSE_ADD_SIGMOID": "SIGMOID",
    "FUSE_ADD_TANH": "TANH",
    "FUSE_ADD_H_SWISH": "H_SWISH",
}


class Elemwise(Module):
    """Applies one elementwise mode of MegEngine's Elemwise (``"add"``, ``"mul"``,
    ``"relu"``, ``"fuse_add_relu"``, ``"true_div"``, ..., case-insensitive) to its inputs.

    Args:
        method: the mode name.
        kwargs: ``name`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.Elemwise("fuse_add_relu")(mge.Tensor([1.0, -3.0]), 1).numpy().tolist()
        [2.0, 0.0]
    """

    def __init__(self, method, **kwargs):
        super().__init__(**kwargs)
        mode = str(method).upper()
        if mode not in _FUSED and not hasattr(builtin.Elemwise.Mode, mode):
            raise ValueError(f"Elemwise: unknown method {method!r}")
        self.method = method
        self._mode = mode

    def forward(self, *inps):
        act = _FUSED.get(self._mode)
        if act is not None:
            return _elemwise(act, _elemwise("ADD", *inps))
        return _elemwise(self._mode, *inps)

    def _module_info_string(self):
        return f"method={self.method}"
