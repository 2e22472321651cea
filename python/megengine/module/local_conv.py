"""LocalConv2d: a locally connected layer (a convolution whose filter differs at every output
position), :func:`~.functional.local_conv2d` with a learned weight."""

import numpy as np

from .. import functional as F
from ..tensor import Parameter
from . import init
from .conv import _conv_info_string
from .module import Module

__all__ = ["LocalConv2d"]


def _pair(v):
    return tuple(int(a) for a in v) if isinstance(v, (list, tuple)) else (int(v), int(v))


class LocalConv2d(Module):
    """A convolution with one filter per output position, for inputs of a fixed
    ``input_height`` x ``input_width``; weight (groups, OH, OW, in/groups, kh, kw, out/groups)
    from N(0, 1 / (in * kh * kw)), no bias, as MegEngine's.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        input_height: H of the input.
        input_width: W of the input.
        kernel_size: window size, an int or (kh, kw).
        stride: step between windows, an int or (sh, sw).
        padding: zeros added on both sides, an int or (ph, pw).
        dilation: spacing of a window's elements, an int or (dh, dw). MegEngine sizes the
            weight for undilated windows; so does this module.
        groups: channel groups.
        conv_mode: only ``"cross_correlation"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.LocalConv2d(4, 6, 8, 8, 3, stride=2, padding=1, groups=2)
        >>> m.weight.shape, m(mge.Tensor(np.ones((2, 4, 8, 8), "float32"))).shape
        ((2, 4, 4, 2, 3, 3, 3), (2, 6, 4, 4))
    """

    def __init__(
        self,
        in_channels,
        out_channels,
        input_height,
        input_width,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        groups=1,
        conv_mode="cross_correlation",
        **kwargs,
    ):
        super().__init__(**kwargs)
        if in_channels % groups or out_channels % groups:
            raise ValueError(
                f"LocalConv2d: in_channels={in_channels} and out_channels={out_channels} must "
                f"be divisible by groups={groups}"
            )
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.input_height = input_height
        self.input_width = input_width
        self.kernel_size = _pair(kernel_size)
        self.stride = _pair(stride)
        self.padding = _pair(padding)
        self.dilation = _pair(dilation)
        self.groups = groups
        self.conv_mode = conv_mode
        size = (input_height, input_width)
        out = [
            (size[i] + 2 * self.padding[i] - self.kernel_size[i]) // self.stride[i] + 1
            for i in range(2)
        ]
        shape = (groups, *out, in_channels // groups, *self.kernel_size, out_channels // groups)
        self.weight = Parameter(np.zeros(shape, dtype=np.float32))
        self.bias = None
        self.reset_parameters()

    def reset_parameters(self):
        """Redraws the weight from N(0, 1 / (in_channels * kh * kw))."""
        fan_in = self.in_channels * self.kernel_size[0] * self.kernel_size[1]
        init.normal_(self.weight, 0.0, np.sqrt(1 / fan_in))

    def _module_info_string(self):
        return _conv_info_string(self)

    def forward(self, inp):
        return F.local_conv2d(
            inp, self.weight, None, self.stride, self.padding, self.dilation, self.conv_mode
        )
