"""LayerNorm, GroupNorm, InstanceNorm, GeneralNorm and LocalResponseNorm."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from . import init
from .module import Module

__all__ = ["GeneralNorm", "GroupNorm", "InstanceNorm", "LayerNorm", "LocalResponseNorm"]


class _AffineNorm(Module):
    """A normalisation whose optional affine weight starts at ones and bias at zeros."""

    def reset_parameters(self):
        """Sets the weight to ones and the bias to zeros (when the module is affine)."""
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)


class GroupNorm(_AffineNorm):
    """Group normalisation: the channels split into ``num_groups`` groups, each normalised per
    sample together with the spatial axes; weight (C,) starts at ones, bias (C,) at zeros.

    Args:
        num_groups: number of groups; must divide num_channels.
        num_channels: C, the channels of the (N, C, ...) input.
        eps: added to the variance before the square root.
        affine: whether to learn a per-channel weight and bias.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.GroupNorm(1, 2)
        >>> x = mge.Tensor(np.array([[[1.0], [3.0]]], dtype=np.float32))
        >>> np.round(m(x).numpy(), 3).tolist()
        [[[-1.0], [1.0]]]
    """

    _flat_state = True  # see Module._flat_state

    def __init__(self, num_groups, num_channels, eps=1e-5, affine=True, **kwargs):
        super().__init__(**kwargs)
        if num_groups <= 0 or num_channels % num_groups != 0:
            raise ValueError(
                f"GroupNorm: num_channels={num_channels} is not divisible by "
                f"num_groups={num_groups}"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self.weight = Parameter(np.ones(num_channels, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(num_channels, dtype=np.float32)) if affine else None

    def forward(self, x):
        return F.group_norm(x, self.num_groups, self.affine, self.weight, self.bias, self.eps)

    def _module_info_string(self):
        return (
            f"groups={self.num_groups}, channels={self.num_channels}, eps={self.eps}, "
            f"affine={self.affine}"
        )


class InstanceNorm(_AffineNorm):
    """Instance normalisation: every (sample, channel) normalised over its spatial axes;
    weight (C,) starts at ones, bias (C,) at zeros.

    Args:
        num_channels: C, the channels of the (N, C, ...) input.
        eps: added to the variance before the square root.
        affine: whether to learn a per-channel weight and bias.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.InstanceNorm(1)
        >>> x = mge.Tensor(np.array([[[2.0, 4.0]]], dtype=np.float32))
        >>> np.round(m(x).numpy(), 3).tolist()
        [[[-1.0, 1.0]]]
    """

    _flat_state = True  # see Module._flat_state

    def __init__(self, num_channels, eps=1e-5, affine=True, **kwargs):
        super().__init__(**kwargs)
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        self.weight = Parameter(np.ones(num_channels, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(num_channels, dtype=np.float32)) if affine else None

    def forward(self, x):
        return F.instance_norm(x, self.affine, self.weight, self.bias, self.eps)

    def _module_info_string(self):
        return f"channels={self.num_channels}, eps={self.eps}, affine={self.affine}"


class LayerNorm(_AffineNorm):
    """Layer normalisation over the trailing axes given by ``normalized_shape``; weight and bias
    of that shape start at ones and zeros.

    Args:
        normalized_shape: an int or a tuple, the trailing shape normalised together.
        eps: added to the variance before the square root.
        affine: whether to learn an elementwise weight and bias.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.LayerNorm(2)
        >>> x = mge.Tensor(np.array([[1.0, 3.0], [10.0, 0.0]], dtype=np.float32))
        >>> np.round(m(x).numpy(), 3).tolist()
        [[-1.0, 1.0], [1.0, -1.0]]
    """

    _flat_state = True  # see Module._flat_state

    def __init__(self, normalized_shape, eps=1e-5, affine=True, **kwargs):
        super().__init__(**kwargs)
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        self.eps = eps
        self.affine = affine
        shape = self.normalized_shape
        self.weight = Parameter(np.ones(shape, dtype=np.float32)) if affine else None
        self.bias = Parameter(np.zeros(shape, dtype=np.float32)) if affine else None

    def forward(self, x):
        return F.layer_norm(x, self.normalized_shape, self.affine, self.weight, self.bias, self.eps)

    def _module_info_string(self):
        return f"normalized_shape={self.normalized_shape}, eps={self.eps}, affine={self.affine}"


class LocalResponseNorm(Module):
    """Local response normalisation across channels: :func:`~.functional.nn.local_response_norm`
    with this module's settings.

    Args:
        kernel_size: the number of channels summed, odd.
        k: added to the scaled sum.
        alpha: scale of the sum of squares.
        beta: exponent of the denominator.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.LocalResponseNorm(kernel_size=3, k=1.0, alpha=0.25, beta=1.0)
        >>> y = m(mge.Tensor(np.full((1, 3, 1, 1), 2.0, np.float32)))
        >>> [round(float(v), 4) for v in y.numpy().ravel()]
        [0.6667, 0.5, 0.6667]
    """

    def __init__(self, kernel_size=5, k=2.0, alpha=1e-4, beta=0.75, **kwargs):
        super().__init__(**kwargs)
        self.kernel_size = kernel_size
        self.k = k
        self.alpha = alpha
        self.beta = beta

    def forward(self, inp):
        return F.nn.local_response_norm(inp, self.kernel_size, self.k, self.alpha, self.beta)

    def _module_info_string(self):
        return f"kernel_size={self.kernel_size}, k={self.k}, alpha={self.alpha}, beta={self.beta}"


class GeneralNorm(_AffineNorm):
    """Normalisation over any axes: :func:`~.functional.nn.general_norm` with a learned
    weight and bias of the normalised axes' shape (ones and zeros at first).

    Args:
        normalized_shape: the sizes of the normalised axes, in their order; required when
            ``affine``.
        normalized_axis: the axes normalised together, ascending (negative counts from the
            end).
        eps: added to the variance before the square root.
        affine: whether to learn the weight and bias.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.GeneralNorm((2, 4), (0, 2))
        >>> y = m(mge.Tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4)))
        >>> y.shape, m.weight.shape
        ((2, 3, 4), (2, 4))
        >>> float(np.round(y.numpy()[:, 0].mean(), 6))
        0.0
    """

    def __init__(self, normalized_shape=None, normalized_axis=0, eps=1e-05, affine=True, **kwargs):
        super().__init__(**kwargs)
        if isinstance(normalized_axis, (int, np.integer)):
            normalized_axis = (int(normalized_axis),)
        if isinstance(normalized_shape, (int, np.integer)):
            normalized_shape = (int(normalized_shape),)
        self.eps = eps
        self.affine = affine
        self.normalized_axis = tuple(normalized_axis)
        self.normalized_shape = None if normalized_shape is None else tuple(normalized_shape)
        if len(set(self.normalized_axis)) != len(self.normalized_axis):
            raise ValueError(f"GeneralNorm: normalized_axis {self.normalized_axis} repeats an axis")
        if affine:
            if self.normalized_shape is None:
                raise ValueError("GeneralNorm: affine=True needs normalized_shape")
            if len(self.normalized_shape) != len(self.normalized_axis):
                raise ValueError(
                    f"GeneralNorm: normalized_shape {self.normalized_shape} and normalized_axis "
                    f"{self.normalized_axis} must have as many entries"
                )
            self.weight = Parameter(np.ones(self.normalized_shape, dtype=np.float32))
            self.bias = Parameter(np.zeros(self.normalized_shape, dtype=np.float32))
        else:
            self.weight = self.bias = None

    def forward(self, x):
        axes = [a + x.ndim if a < 0 else a for a in self.normalized_axis]
        if self.normalized_shape is not None:
            sizes = tuple(x.shape[a] for a in axes if 0 <= a < x.ndim)
            if sizes != self.normalized_shape:
                raise ValueError(
                    f"GeneralNorm: input {tuple(x.shape)} has sizes {sizes} on axes {tuple(axes)}, "
                    f"the module was made for {self.normalized_shape}"
                )
        return F.nn.general_norm(x, axes, self.affine, self.weight, self.bias, self.eps)

    def _module_info_string(self):
        return (
            f"normalized_shape={self.normalized_shape}, normalized_axis={self.normalized_axis}, "
            f"eps={self.eps}, affine={self.affine}"
        )
