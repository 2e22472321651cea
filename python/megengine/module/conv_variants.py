"""DeformableConv2d and RegionRestrictedConv: the layers of
:func:`~.functional.nn.deformable_conv2d` and :func:`~.functional.nn.region_restricted_conv`."""

from .. import functional as F
from .conv import _ConvNd

__all__ = ["DeformableConv2d", "RegionRestrictedConv"]


class DeformableConv2d(_ConvNd):
    """Deformable 2-D convolution over (N, C, H, W) inputs, the offsets and masks given to each
    call; weight (out, in, kh, kw) (or (groups, out/groups, in/groups, kh, kw) when grouped) from
    N(0, 1 / fan_in), bias (1, out, 1, 1) from zeros, as MegEngine's.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window, an int or (sh, sw).
        padding: zeros added on both sides, an int or (ph, pw).
        dilation: spacing between kernel taps, an int or (dh, dw).
        groups: channel groups.
        bias: whether to add a learned bias.
        conv_mode: only ``"cross_correlation"``.
        compute_mode: accepted for MegEngine compatibility.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.DeformableConv2d(2, 4, 3, padding=1)
        >>> x = mge.Tensor(np.ones((1, 2, 5, 5), dtype=np.float32))
        >>> offset = mge.Tensor(np.zeros((1, 18, 5, 5), dtype=np.float32))
        >>> mask = mge.Tensor(np.ones((1, 9, 5, 5), dtype=np.float32))
        >>> m(x, offset, mask).shape
        (1, 4, 5, 5)
    """

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
        **kwargs,
    ):
        super().__init__(
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
            **kwargs,
        )

    def reset_parameters(self):
        """Redraws the weight from N(0, 1 / fan_in), fan_in = in_channels * kh * kw, and zeros
        the bias, as MegEngine's.

        Examples:
            >>> import megengine.module as M
            >>> m = M.DeformableConv2d(2, 3, 3)
            >>> m.reset_parameters()
            >>> m.weight.shape, float(abs(m.bias).sum())
            ((3, 2, 3, 3), 0.0)
        """
        super().reset_parameters()

    def calc_conv(self, inp, weight, offset, mask, bias):
        """The deformable convolution of ``inp`` with ``weight``, ``offset``, ``mask`` and
        ``bias`` under this module's geometry.

        Examples:
            >>> import numpy as np
            >>> import megengine.module as M
            >>> m = M.DeformableConv2d(1, 1, 1, bias=False)
            >>> x = np.ones((1, 1, 2, 2), "float32")
            >>> off, mask = np.zeros((1, 2, 2, 2), "float32"), np.ones((1, 1, 2, 2), "float32")
            >>> m.calc_conv(x, 2 * np.ones((1, 1, 1, 1), "float32"), off, mask, None).numpy()
            array([[[[2., 2.],
                     [2., 2.]]]], dtype=float32)
        """
        return F.nn.deformable_conv2d(
            inp,
            weight,
            offset,
            mask,
            bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self.conv_mode,
            self.compute_mode,
        )

    def forward(self, inp, offset, mask):
        return self.calc_conv(inp, self.weight, offset, mask, self.bias)


class RegionRestrictedConv(_ConvNd):
    """Region-restricted 2-D convolution over (N, C, H, W) inputs, the region ids given to each
    call; weight always grouped, (groups, out/groups, in/groups, kh, kw), from N(0, 1 / fan_in),
    bias (1, out, 1, 1) from zeros, as MegEngine's.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        groups: channel groups.
        bias: whether to add a learned bias.
        stride: step of the window, an int or (sh, sw).
        padding: zeros added on both sides, an int or (ph, pw).
        dilation: spacing between kernel taps, an int or (dh, dw).
        conv_mode: only ``"cross_correlation"``.
        compute_mode: accepted for MegEngine compatibility.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``, checked but, as in
            MegEngine, the convolution pads with zeros (which contribute nothing).
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> m = M.RegionRestrictedConv(2, 2, 2, groups=2)
        >>> x = mge.Tensor(np.ones((1, 2, 2, 2), dtype=np.float32))
        >>> rin = mge.Tensor(np.zeros((1, 2, 2), dtype=np.int32))
        >>> rout = mge.Tensor(np.zeros((1, 1, 1), dtype=np.int32))
        >>> m(x, rin, rout).shape
        (1, 2, 1, 1)
    """

    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        groups=1,
        bias=True,
        stride=1,
        padding=0,
        dilation=1,
        conv_mode="cross_correlation",
        compute_mode="default",
        padding_mode="zeros",
        **kwargs,
    ):
        super().__init__(
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
            **kwargs,
        )

    def _weight_shape(self):
        g, ic, oc = self.groups, self.in_channels, self.out_channels
        return (g, oc // g, ic // g) + self.kernel_size

    def get_pad_width(self):
        """The padding as :func:`~.functional.pad` takes it, one (before, after) pair per dim of
        the input.

        Examples:
            >>> import megengine.module as M
            >>> M.RegionRestrictedConv(1, 1, 3, padding=(1, 2)).get_pad_width()
            ((0, 0), (0, 0), (1, 1), (2, 2))
        """
        return self.get_pad_witdth()

    def reset_parameters(self):
        """Redraws the weight from N(0, 1 / fan_in), fan_in = in_channels * kh * kw, and zeros
        the bias, as MegEngine's.

        Examples:
            >>> import megengine.module as M
            >>> m = M.RegionRestrictedConv(2, 2, 3, groups=2)
            >>> m.reset_parameters()
            >>> m.weight.shape, float(abs(m.bias).sum())
            ((2, 1, 1, 3, 3), 0.0)
        """
        super().reset_parameters()

    def calc_conv(self, inp, weight, rin, rout, bias):
        """The region-restricted convolution of ``inp`` with ``weight`` and ``bias`` under this
        module's geometry.

        Examples:
            >>> import numpy as np
            >>> import megengine.module as M
            >>> m = M.RegionRestrictedConv(1, 1, 1, bias=False)
            >>> x = np.ones((1, 1, 1, 2), "float32")
            >>> rin, rout = np.array([[[0, 1]]], "int32"), np.array([[[0, 0]]], "int32")
            >>> w = 3 * np.ones((1, 1, 1, 1, 1), "float32")
            >>> m.calc_conv(x, w, rin, rout, None).numpy()
            array([[[[3., 0.]]]], dtype=float32)
        """
        return F.nn.region_restricted_conv(
            inp,
            weight,
            rin,
            rout,
            bias,
            self.stride,
            self.padding,
            self.dilation,
            self.groups,
            self.conv_mode,
            self.compute_mode,
        )

    def forward(self, inp, rin, rout):
        return self.calc_conv(inp, self.weight, rin, rout, self.bias)
