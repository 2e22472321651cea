"""``Linear``: y = x W^T + b."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from . import init
from .module import Module

__all__ = ["Linear"]


class Linear(Module):
    """Applies ``y = x @ weight.T + bias`` to the last axis of the input.

    The weight (out_features, in_features) starts from N(0, 1 / in_features), the bias from
    zeros, as MegEngine's.

    Args:
        in_features: size of each input sample's last axis.
        out_features: size of each output sample's last axis.
        bias: whether to add a learned bias.
        compute_mode: accepted for MegEngine compatibility (``"default"`` or ``"float32"``).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.Linear(3, 2)
        >>> m.weight.shape, m.bias.shape
        ((2, 3), (2,))
        >>> m(mge.Tensor(np.ones((4, 3), dtype=np.float32))).shape
        (4, 2)
    """

    def __init__(self, in_features, out_features, bias=True, compute_mode="default", **kwargs):
        super().__init__(**kwargs)
        self.in_features = in_features
        self.out_features = out_features
        self.compute_mode = compute_mode
        self.weight = Parameter(np.zeros((out_features, in_features), dtype=np.float32))
        self.bias = Parameter(np.zeros((out_features,), dtype=np.float32)) if bias else None
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws the weight from N(0, 1 / in_features) and zeros the bias."""
        init.normal_(self.weight, 0.0, np.sqrt(1 / max(self.in_features, 1)))
        if self.bias is not None:
            init.zeros_(self.bias)

    def forward(self, x):
        return F.linear(x, self.weight, self.bias, compute_mode=self.compute_mode)

    def _module_info_string(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )
