"""QAT ConvBn2d and ConvBnRelu2d: Conv2d + BatchNorm2d (+ ReLU) with the BatchNorm folded into
the fake-quantized weight."""

from ...functional import relu
from .. import conv_bn as Float
from ._bn_fold import _BnFoldQAT

__all__ = ["ConvBn2d", "ConvBnRelu2d"]


class _ConvBnActivation2d(Float._ConvBnActivation2d, _BnFoldQAT):
    _inner_name = "conv"
    _stat_shape = (1, -1, 1, 1)
    _out_shape = (1, -1, 1, 1)

    def _weight_scale_shape(self):
        groups = self.conv.groups
        return (-1, 1, 1, 1) if groups == 1 else (groups, -1, 1, 1, 1)

    def _inner_calc(self, inp, weight, bias):
        return self.conv.calc_conv(inp, weight, bias)

    def _inner_bias_shape(self):
        return self.conv._infer_bias_shape()

    def calc_conv_bn_qat(self, inp, approx=True):
        """The convolution with the folded, fake-quantized weight (and, in eval, bias); in
        training it ends with the real BatchNorm.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.module.qat import ConvBn2d
            >>> m = ConvBn2d(1, 2, 3)
            >>> m.calc_conv_bn_qat(mge.Tensor(np.ones((2, 1, 3, 3), np.float32))).shape
            (2, 2, 1, 1)
        """
        return self._calc_bn_qat(inp, approx)

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT version of a float ConvBn2d/ConvBnRelu2d, sharing its conv's parameters and
        its BatchNorm.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import ConvBn2d
            >>> f = M.ConvBn2d(1, 2, 3)
            >>> q = ConvBn2d.from_float_module(f)
            >>> q.conv.weight is f.conv.weight, q.bn is f.bn
            (True, True)
        """
        return cls._of_float(float_module, **float_module.conv._float_kwargs())


class ConvBn2d(_ConvBnActivation2d):
    """The QAT version of :class:`~.module.ConvBn2d`.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to learn an additive bias.
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
        >>> from megengine.module.qat import ConvBn2d
        >>> ConvBn2d(1, 2, 3, padding=1)(mge.Tensor(np.ones((2, 1, 4, 4), np.float32))).shape
        (2, 2, 4, 4)
    """

    def forward(self, inp):
        return self.apply_quant_activation(self.calc_conv_bn_qat(inp))


class ConvBnRelu2d(_ConvBnActivation2d):
    """The QAT version of :class:`~.module.ConvBnRelu2d`.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to learn an additive bias.
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
        >>> from megengine.module.qat import ConvBnRelu2d
        >>> y = ConvBnRelu2d(1, 2, 3)(mge.Tensor(np.ones((2, 1, 3, 3), np.float32)))
        >>> float(y.min()) >= 0
        True
    """

    def forward(self, inp):
        return self.apply_quant_activation(relu(self.calc_conv_bn_qat(inp)))
