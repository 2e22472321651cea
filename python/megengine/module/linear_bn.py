"""Fused Linear + BatchNorm1d (+ ReLU) modules: LinearBn1d and LinearBnRelu1d."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from .batchnorm import BatchNorm1d
from .linear import Linear
from .module import Module

__all__ = ["LinearBn1d", "LinearBnRelu1d"]


class _LinearBnActivation1d(Module):
    def __init__(
        self,
        in_features,
        out_features,
        bias=True,
        compute_mode="default",
        eps=1e-5,
        momentum=0.9,
        affine=True,
        track_running_stats=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.out_features = out_features
        self.in_features = in_features
        # MegEngine's module holds a zero ``bias`` of its own beside the Linear's (its QAT
        # version folds into it); kept so that its checkpoints load here with the same keys.
        self.bias = Parameter(np.zeros((out_features,), dtype=np.float32)) if bias else None
        self.linear = Linear(in_features, out_features, bias, compute_mode)
        self.bn = BatchNorm1d(out_features, eps, momentum, affine, track_running_stats)


class LinearBn1d(_LinearBnActivation1d):
    """A Linear followed by a BatchNorm1d, as one module (``linear`` and ``bn`` attributes).

    Args:
        in_features: size of each input sample's last axis.
        out_features: size of each output sample's last axis.
        bias: whether the Linear adds a learned bias.
        compute_mode: accepted for MegEngine compatibility.
        eps: the BatchNorm's eps.
        momentum: the BatchNorm's momentum.
        affine: whether the BatchNorm learns a weight and bias.
        track_running_stats: whether the BatchNorm keeps running statistics.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.LinearBn1d(3, 4)
        >>> m(mge.Tensor(np.random.randn(8, 3).astype(np.float32))).shape
        (8, 4)
        >>> sorted(m.state_dict())[:3]
        ['bias', 'bn.bias', 'bn.running_mean']
    """

    def forward(self, inp):
        return self.bn(self.linear(inp))


class LinearBnRelu1d(_LinearBnActivation1d):
    """A Linear, a BatchNorm1d and a ReLU, as one module.

    Args:
        in_features: size of each input sample's last axis.
        out_features: size of each output sample's last axis.
        bias: whether the Linear adds a learned bias.
        compute_mode: accepted for MegEngine compatibility.
        eps: the BatchNorm's eps.
        momentum: the BatchNorm's momentum.
        affine: whether the BatchNorm learns a weight and bias.
        track_running_stats: whether the BatchNorm keeps running statistics.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.LinearBnRelu1d(3, 4)
        >>> y = m(mge.Tensor(np.random.randn(8, 3).astype(np.float32)))
        >>> y.shape, bool((y.numpy() >= 0).all())
        ((8, 4), True)
    """

    def forward(self, inp):
        return F.relu(self.bn(self.linear(inp)))
