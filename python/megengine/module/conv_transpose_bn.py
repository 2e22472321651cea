"""Fused ConvTranspose2d + BatchNorm2d (+ ReLU) modules: ConvTransposeBn2d and
ConvTransposeBnRelu2d."""

from .. import functional as F
from .batchnorm import BatchNorm2d
from .conv import ConvTranspose2d
from .module import Module

__all__ = ["ConvTransposeBn2d", "ConvTransposeBnRelu2d"]


class _ConvTransposeBnActivation2d(Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        output_padding=0,
        dilation=1,
        groups=1,
        bias=True,
        conv_mode="cross_correlation",
        compute_mode="default",
        eps=1e-5,
        momentum=0.9,
        affine=True,
        track_running_stats=True,
        **kwargs,
    ):
        super().__init__(**kwargs)
        # MegEngine's attribute name: its checkpoints hold conv_transpose2d.weight.
        self.conv_transpose2d = ConvTranspose2d(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            output_padding,
            dilation,
            groups,
            bias,
            conv_mode,
            compute_mode,
        )
        self.bn = BatchNorm2d(out_channels, eps, momentum, affine, track_running_stats)


class ConvTransposeBn2d(_ConvTransposeBnActivation2d):
    """A ConvTranspose2d followed by a BatchNorm2d, as one module (``conv_transpose2d`` and
    ``bn`` attributes).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: stride of the matching Conv2d.
        padding: padding of the matching Conv2d.
        output_padding: extra rows/columns added at the bottom/right of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether the transposed convolution adds a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
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
        >>> m = M.ConvTransposeBn2d(3, 4, 2, stride=2)
        >>> m(mge.Tensor(np.ones((2, 3, 5, 5), dtype=np.float32))).shape
        (2, 4, 10, 10)
        >>> sorted(k for k in m.state_dict() if k.startswith("conv"))
        ['conv_transpose2d.bias', 'conv_transpose2d.weight']
    """

    def forward(self, inp):
        return self.bn(self.conv_transpose2d(inp))


class ConvTransposeBnRelu2d(_ConvTransposeBnActivation2d):
    """A ConvTranspose2d, a BatchNorm2d and a ReLU, as one module.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: stride of the matching Conv2d.
        padding: padding of the matching Conv2d.
        output_padding: extra rows/columns added at the bottom/right of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether the transposed convolution adds a learned bias.
        conv_mode: ``"cross_correlation"`` (the default) or ``"convolution"``.
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
        >>> m = M.ConvTransposeBnRelu2d(3, 4, 3, padding=1)
        >>> y = m(mge.Tensor(np.random.randn(2, 3, 5, 5).astype(np.float32)))
        >>> y.shape, bool((y.numpy() >= 0).all())
        ((2, 4, 5, 5), True)
    """

    def forward(self, inp):
        return F.relu(self.bn(self.conv_transpose2d(inp)))
