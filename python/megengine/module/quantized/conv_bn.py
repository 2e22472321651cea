"""Quantized ConvBn2d and ConvBnRelu2d: the BatchNorm folded into the quantized weight and the
float bias at conversion."""

from ...tensor import Parameter
from .conv import Conv2d

__all__ = ["ConvBn2d", "ConvBnRelu2d"]


def load_folded(qconv, qat_module, conv):
    # qconv's weight and bias from the QAT module's BatchNorm-folded ones (running statistics),
    # the weight quantized; names kept from the float layer `conv`. Shared with the transposed
    # family (conv_transpose_bn.py).
    w_fold, b_fold = qat_module.fold_weight_bias(
        qat_module.bn.running_mean, qat_module.bn.running_var
    )
    weight = w_fold.astype(qat_module.get_weight_dtype())
    qconv.weight = Parameter(weight.numpy(), name=conv.weight.name)
    qconv.bias = Parameter(b_fold.numpy())
    if conv.bias is not None:
        qconv.bias.name = conv.bias.name
    return qconv


class _ConvBnActivation2d(Conv2d):
    @classmethod
    def from_qat_module(cls, qat_module):
        """The quantized module of a QAT ConvBn2d/ConvBnRelu2d: the weight and bias with the
        BatchNorm's running statistics folded in, the weight quantized.

        Args:
            qat_module: the QAT module.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import ConvBn2d
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.ConvBn2d(1, 2, 3)
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> ConvBn2d.from_qat_module(q).bias.shape
            (1, 2, 1, 1)
        """
        conv = qat_module.conv
        qconv = cls(
            conv.in_channels,
            conv.out_channels,
            conv.kernel_size,
            conv.stride,
            conv.padding,
            conv.dilation,
            conv.groups,
            dtype=qat_module.get_activation_dtype(),
            name=qat_module.name,
            padding_mode=conv.padding_mode,
        )
        return load_folded(qconv, qat_module, conv)


class ConvBn2d(_ConvBnActivation2d):
    """Quantized :class:`~.qat.ConvBn2d` (a :class:`~.quantized.Conv2d` after folding).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size.
        stride: step of the window.
        padding: padding on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        conv_mode: ``"cross_correlation"`` or ``"convolution"``.
        compute_mode: ``"default"``.
        dtype: the quantized output dtype.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> from megengine.module.quantized import ConvBn2d
        >>> ConvBn2d(1, 2, 3).weight.shape
        (2, 1, 3, 3)
    """

    def forward(self, inp):
        return self.calc_conv_quantized(inp, nonlinear_mode="identity")


class ConvBnRelu2d(_ConvBnActivation2d):
    """Quantized :class:`~.qat.ConvBnRelu2d` (a :class:`~.quantized.ConvRelu2d` after
    folding).

    Args:
        in_channels: channels of the input.
        out_channels: channels of the output.
        kernel_size: window size.
        stride: step of the window.
        padding: padding on both sides.
        dilation: spacing between kernel taps.
        groups: channel groups.
        conv_mode: ``"cross_correlation"`` or ``"convolution"``.
        compute_mode: ``"default"``.
        dtype: the quantized output dtype.
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> from megengine.module.quantized import ConvBnRelu2d
        >>> ConvBnRelu2d(1, 2, 3).weight.shape
        (2, 1, 3, 3)
    """

    def forward(self, inp):
        return self.calc_conv_quantized(inp, nonlinear_mode="relu")
