"""Activations as modules: ReLU, LeakyReLU, PReLU, GELU, SiLU, Sigmoid and Softmax."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from .module import Module

__all__ = ["GELU", "LeakyReLU", "PReLU", "ReLU", "SiLU", "Sigmoid", "Softmax"]


class ReLU(Module):
    """max(x, 0).

    Args:
        name: the module's name (None by default).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.ReLU()(mge.Tensor([-1.0, 2.0])).numpy().tolist()
        [0.0, 2.0]
    """

    def forward(self, x):
        return F.relu(x)


class Sigmoid(Module):
    """1 / (1 + exp(-x)).

    Args:
        name: the module's name (None by default).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.Sigmoid()(mge.Tensor([0.0])).numpy().tolist()
        [0.5]
    """

    def forward(self, inputs):
        return F.sigmoid(inputs)


class GELU(Module):
    """x * Phi(x), Phi the standard normal CDF (the exact erf form).

    Args:
        name: the module's name (None by default).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.GELU()(mge.Tensor([0.0])).numpy().tolist()
        [0.0]
    """

    def forward(self, inputs):
        return F.gelu(inputs)


class SiLU(Module):
    """x * sigmoid(x).

    Args:
        name: the module's name (None by default).

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.SiLU()(mge.Tensor([0.0])).numpy().tolist()
        [0.0]
    """

    def forward(self, inputs):
        return F.silu(inputs)


class LeakyReLU(Module):
    """x where x > 0, negative_slope * x elsewhere.

    Args:
        negative_slope: slope of the negative part.
        kwargs: ``name`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.LeakyReLU(0.5)(mge.Tensor([-2.0, 3.0])).numpy().tolist()
        [-1.0, 3.0]
    """

    def __init__(self, negative_slope=0.01, **kwargs):
        super().__init__(**kwargs)
        self.negative_slope = negative_slope

    def forward(self, inputs):
        return F.leaky_relu(inputs, self.negative_slope)

    def _module_info_string(self):
        return f"negative_slope={self.negative_slope}"


class PReLU(Module):
    """max(x, 0) + weight * min(x, 0) with a learned weight: one slope shared by all channels,
    or one per channel (axis 1) when ``num_parameters`` > 1.

    Args:
        num_parameters: 1, or the number of channels.
        init: initial value of the slopes.
        kwargs: ``name`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.PReLU()(mge.Tensor([-4.0, 3.0])).numpy().tolist()
        [-1.0, 3.0]
    """

    def __init__(self, num_parameters=1, init=0.25, **kwargs):
        super().__init__(**kwargs)
        self.num_parameters = num_parameters
        if num_parameters > 1:
            # Assumes the channel is axis 1, as MegEngine's.
            self.weight = Parameter(np.full((1, num_parameters, 1, 1), init, dtype=np.float32))
        else:
            self.weight = Parameter(np.array([init], dtype=np.float32))

    def forward(self, inputs):
        weight = self.weight
        if self.num_parameters > 1:
            if inputs.ndim < 2 or inputs.shape[1] != self.num_parameters:
                raise ValueError(
                    f"PReLU: input {tuple(inputs.shape)} does not have "
                    f"{self.num_parameters} channels on axis 1"
                )
            weight = weight.reshape((1, self.num_parameters) + (1,) * (inputs.ndim - 2))
        return F.maximum(inputs, 0) + weight * F.minimum(inputs, 0)

    def _module_info_string(self):
        return f"num_parameters={self.num_parameters}"


class Softmax(Module):
    """exp(x) / sum(exp(x)) along ``axis``.

    Args:
        axis: the axis; None picks MegEngine's default (0 for 0-, 1- and 3-D inputs, else 1).
        kwargs: ``name`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.Softmax(axis=-1)(mge.Tensor([[1.0, 1.0]])).numpy().tolist()
        [[0.5, 0.5]]
    """

    def __init__(self, axis=None, **kwargs):
        super().__init__(**kwargs)
        self.axis = axis

    def forward(self, inputs):
        return F.softmax(inputs, self.axis)

    def _module_info_string(self):
        return f"axis={self.axis}"
