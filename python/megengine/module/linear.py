"""``Linear``: y = x W^T + b."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from . import init
from .module import Module

__all__ = ["Linear", "LinearRelu"]


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

    def calc_linear(self, x, weight, bias):
        """``x @ weight.T + bias`` under this module's compute mode.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> import megengine.module as M
            >>> m = M.Linear(2, 1)
            >>> w = mge.Tensor(np.array([[1.0, 2.0]], dtype=np.float32))
            >>> m.calc_linear(mge.Tensor(np.ones((1, 2), np.float32)), w, None).numpy().tolist()
            [[3.0]]
        """
        return F.linear(x, weight, bias, compute_mode=self.compute_mode)

    def forward(self, x):
        return self.calc_linear(x, self.weight, self.bias)

    def _module_info_string(self):
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, "
            f"bias={self.bias is not None}"
        )


class LinearRelu(Linear):
    """A Linear followed by ReLU (the fused module quantization-aware training converts).

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
        >>> m = M.LinearRelu(3, 4)
        >>> y = m(mge.Tensor(np.random.randn(2, 3).astype(np.float32)))
        >>> y.shape, bool((y.numpy() >= 0).all())
        ((2, 4), True)
    """

    def forward(self, inp):
        return F.relu(self.calc_linear(inp, self.weight, self.bias))
