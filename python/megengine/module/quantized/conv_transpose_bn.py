"""Quantized ConvTransposeBn2d and ConvTransposeBnRelu2d: the BatchNorm folded in at conversion
(calling them raises NotImplementedError until NeoMeg has a quantized transposed kernel)."""

from .conv import ConvTranspose2d
from .conv_bn import _from_folded

__all__ = ["ConvTransposeBn2d", "ConvTransposeBnRelu2d"]


class _ConvTransposeBnActivation2d(ConvTranspose2d):
    @classmethod
    def from_qat_module(cls, qat_module):
        """The quantized module of a QAT ConvTransposeBn2d/ConvTransposeBnRelu2d: the weight
        and bias with the BatchNorm folded in, the weight quantized.

        Args:
            qat_module: the QAT module.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import ConvTransposeBn2d
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.ConvTransposeBn2d(1, 2, 3)
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> ConvTransposeBn2d.from_qat_module(q).weight.shape
            (1, 2, 3, 3)
        """
        return _from_folded(cls, qat_module, qat_module.conv_transpose2d)


class ConvTransposeBn2d(_ConvTransposeBnActivation2d):
    """Quantized :class:`~.qat.ConvTransposeBn2d`.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size.
        stride: stride of the matching Conv2d.
        padding: padding of the matching Conv2d.
        output_padding: extra rows/columns of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether there is a bias.
        conv_mode: ``"cross_correlation"``.
        compute_mode: ``"default"``.
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> from megengine.module.quantized import ConvTransposeBn2d
        >>> ConvTransposeBn2d(2, 1, 3).weight.shape
        (2, 1, 3, 3)
    """

    def forward(self, inp):
        return self.calc_conv_transpose2d_quantized(inp, nonlinear_mode="identity")


class ConvTransposeBnRelu2d(_ConvTransposeBnActivation2d):
    """Quantized :class:`~.qat.ConvTransposeBnRelu2d`.

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size.
        stride: stride of the matching Conv2d.
        padding: padding of the matching Conv2d.
        output_padding: extra rows/columns of the output.
        dilation: spacing between kernel taps.
        groups: channel groups.
        bias: whether there is a bias.
        conv_mode: ``"cross_correlation"``.
        compute_mode: ``"default"``.
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> from megengine.module.quantized import ConvTransposeBnRelu2d
        >>> ConvTransposeBnRelu2d(2, 1, 3).weight.shape
        (2, 1, 3, 3)
    """

    def forward(self, inp):
        return self.calc_conv_transpose2d_quantized(inp, nonlinear_mode="relu")
