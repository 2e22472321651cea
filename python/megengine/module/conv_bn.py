"""Fused Conv2d + BatchNorm2d (+ ReLU) modules: ConvBn2d and ConvBnRelu2d."""

from .. import functional as F
from .batchnorm import BatchNorm2d
from .conv import Conv2d
from .module import Module

__all__ = ["ConvBn2d", "ConvBnRelu2d"]


class _ConvBnActivation2d(Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        bias=True,
        conv_mode="cross_correlation",
        compute_mode="default",
        eps=1e-5,
        momentum=0.9,
        affine=True,
        track_running_stats=True,
        padding_mode="zeros",
        **kwargs,
    ):
        super().__init__(**kwargs)
        self.conv = Conv2d(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            groups,
            bias,
            conv_mode,
            compute_mode,
            padding_mode,
        )
        self.bn = BatchNorm2d(out_channels, eps, momentum, affine, track_running_stats)


class ConvBn2d(_ConvBnActivation2d):
    """A Conv2d followed by a BatchNorm2d, as one module (``conv`` and ``bn`` attributes).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether the conv adds a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        compute_mode: accepted for MegEngine compatibility.
        eps: the BatchNorm's eps.
        momentum: the BatchNorm's momentum.
        affine: whether the BatchNorm learns a weight and bias.
        track_running_stats: whether the BatchNorm keeps running statistics.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.ConvBn2d(3, 4, 3, padding=1)
        >>> m(mge.Tensor(np.ones((2, 3, 5, 5), dtype=np.float32))).shape
        (2, 4, 5, 5)
        >>> sorted(m.state_dict())
        ['bn.bias', 'bn.running_mean', 'bn.running_var', 'bn.weight', 'conv.bias', 'conv.weight']
    """

    def forward(self, inp):
        return self.bn(self.conv(inp))


class ConvBnRelu2d(_ConvBnActivation2d):
    """A Conv2d, a BatchNorm2d and a ReLU, as one module.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether the conv adds a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
        compute_mode: accepted for MegEngine compatibility.
        eps: the BatchNorm's eps.
        momentum: the BatchNorm's momentum.
        affine: whether the BatchNorm learns a weight and bias.
        track_running_stats: whether the BatchNorm keeps running statistics.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.ConvBnRelu2d(3, 4, 3)
        >>> y = m(mge.Tensor(np.random.rand(2, 3, 5, 5).astype(np.float32)))
        >>> y.shape, bool((y.numpy() >= 0).all())
        ((2, 4, 3, 3), True)
    """

    def forward(self, inp):
        return F.relu(self.bn(self.conv(inp)))
