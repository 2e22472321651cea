"""QAT ConvTransposeBn2d and ConvTransposeBnRelu2d: ConvTranspose2d + BatchNorm2d (+ ReLU) with
the BatchNorm folded into the fake-quantized weight."""

from ...functional import relu
from .. import conv_transpose_bn as Float
from ._bn_fold import _BnFoldQAT

__all__ = ["ConvTransposeBn2d", "ConvTransposeBnRelu2d"]


class _ConvTransposeBnActivation2d(Float._ConvTransposeBnActivation2d, _BnFoldQAT):
    _inner_name = "conv_transpose2d"
    _stat_shape = (1, -1, 1, 1)
    _out_shape = (1, -1, 1, 1)

    def _weight_scale_shape(self):
        # a transposed weight is (in, out, kh, kw): the output channel is axis 1
        groups = self.conv_transpose2d.groups
        return (1, -1, 1, 1) if groups == 1 else (groups, 1, -1, 1, 1)

    def _inner_calc(self, inp, weight, bias):
        return self.conv_transpose2d.calc_conv_transpose2d(inp, weight, bias)

    def _inner_bias_shape(self):
        return self.conv_transpose2d._infer_bias_shape()

    def calc_conv_transpose2d_bn_qat(self, inp, approx=True):
        """The transposed convolution with the folded, fake-quantized weight (and, in eval,
        bias); in training it ends with the real BatchNorm.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.module.qat import ConvTransposeBn2d
            >>> m = ConvTransposeBn2d(1, 2, 2)
            >>> m.calc_conv_transpose2d_bn_qat(mge.Tensor(np.ones((2, 1, 1, 1), np.float32))).shape
            (2, 2, 2, 2)
        """
        return self._calc_bn_qat(inp, approx)

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT version of a float ConvTransposeBn2d/ConvTransposeBnRelu2d, sharing its
        parameters and its BatchNorm.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import ConvTransposeBn2d
            >>> f = M.ConvTransposeBn2d(1, 2, 3)
            >>> ConvTransposeBn2d.from_float_module(f).bn is f.bn
            True
        """
        return cls._of_float(float_module, **float_module.conv_transpose2d._float_kwargs())


class ConvTransposeBn2d(_ConvTransposeBnActivation2d):
    """The QAT version of :class:`~.module.ConvTransposeBn2d`.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        output_padding: extra rows/columns on one side of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to learn an additive bias.
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
        >>> from megengine.module.qat import ConvTransposeBn2d
        >>> ConvTransposeBn2d(1, 2, 2)(mge.Tensor(np.ones((2, 1, 3, 3), np.float32))).shape
        (2, 2, 4, 4)
    """

    def forward(self, inp):
        return self.apply_quant_activation(self.calc_conv_transpose2d_bn_qat(inp))


class ConvTransposeBnRelu2d(_ConvTransposeBnActivation2d):
    """The QAT version of :class:`~.module.ConvTransposeBnRelu2d`.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size, an int or (kh, kw).
        stride: step of the window.
        padding: zeros added on both sides.
        output_padding: extra rows/columns on one side of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether to learn an additive bias.
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
        >>> from megengine.module.qat import ConvTransposeBnRelu2d
        >>> y = ConvTransposeBnRelu2d(1, 2, 2)(mge.Tensor(np.ones((2, 1, 3, 3), np.float32)))
        >>> float(y.min()) >= 0
        True
    """

    def forward(self, inp):
        return self.apply_quant_activation(relu(self.calc_conv_transpose2d_bn_qat(inp)))
