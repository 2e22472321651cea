"""Quantized ConvBn2d and ConvBnRelu2d: the BatchNorm folded into the quantized weight and the
float bias at conversion."""

from .conv import Conv2d
from .module import _load_folded

__all__ = ["ConvBn2d", "ConvBnRelu2d"]


def _from_folded(cls, qat_module, layer):
    # the quantized module of a QAT ConvBn2d/ConvTransposeBn2d family member, whose float
    # convolution is `layer`; shared with conv_transpose_bn.py
    qconv = cls(
        **layer._geometry_kwargs(), dtype=qat_module.get_activation_dtype(), name=qat_module.name
    )
    return _load_folded(qconv, qat_module, layer)


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
        return _from_folded(cls, qat_module, qat_module.conv)


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
