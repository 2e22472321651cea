"""QAT Conv2d, ConvRelu2d, ConvTranspose2d and ConvTransposeRelu2d."""

from ... import functional as F
from .. import conv as Float
from .module import QATModule

__all__ = ["Conv2d", "ConvRelu2d", "ConvTranspose2d", "ConvTransposeRelu2d"]


def _from_float(cls, float_module):
    # the QAT module of a float (transposed) convolution, sharing its weight and bias
    qat_module = cls(**float_module._float_kwargs(), name=float_module.name)
    qat_module.weight = float_module.weight
    qat_module.bias = float_module.bias
    return qat_module


class Conv2d(Float.Conv2d, QATModule):
    """The QAT version of :class:`~.module.Conv2d`: fake-quantized weight (and bias), observed
    and fake-quantized output.

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
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import Conv2d
        >>> from megengine.quantization import ema_fakequant_qconfig
        >>> m = Conv2d(1, 2, 3, padding=1)
        >>> m.set_qconfig(ema_fakequant_qconfig)
        >>> m(mge.Tensor(np.ones((1, 1, 4, 4), dtype=np.float32))).shape
        (1, 2, 4, 4)
    """

    def calc_conv_qat(self, inp):
        """The convolution with the fake-quantized weight and bias.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.module.qat import Conv2d
            >>> Conv2d(1, 2, 3).calc_conv_qat(mge.Tensor(np.ones((1, 1, 3, 3), np.float32))).shape
            (1, 2, 1, 1)
        """
        w_qat = self.apply_quant_weight(self.weight)
        b_qat = self.apply_quant_bias(self.bias, inp, w_qat)
        return self.calc_conv(inp, w_qat, b_qat)

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT Conv2d of a float one (or ConvRelu2d), sharing its weight and bias.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import Conv2d
            >>> f = M.Conv2d(2, 4, 3, stride=2, groups=2)
            >>> q = Conv2d.from_float_module(f)
            >>> q.weight is f.weight, q.stride, q.groups
            (True, (2, 2), 2)
        """
        return _from_float(cls, float_module)

    def forward(self, inp):
        return self.apply_quant_activation(self.calc_conv_qat(inp))


class ConvRelu2d(Conv2d):
    """The QAT version of :class:`~.module.ConvRelu2d`: :class:`Conv2d` then ReLU, quantized
    once at the end.

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
        padding_mode: ``"zeros"``, ``"reflect"`` or ``"replicate"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import ConvRelu2d
        >>> y = ConvRelu2d(1, 2, 3)(mge.Tensor(np.ones((1, 1, 3, 3), dtype=np.float32)))
        >>> y.shape, float(y.min()) >= 0
        ((1, 2, 1, 1), True)
    """

    def forward(self, inp):
        return self.apply_quant_activation(F.relu(self.calc_conv_qat(inp)))


class ConvTranspose2d(Float.ConvTranspose2d, QATModule):
    """The QAT version of :class:`~.module.ConvTranspose2d`.

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
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import ConvTranspose2d
        >>> ConvTranspose2d(1, 2, 2)(mge.Tensor(np.ones((1, 1, 3, 3), dtype=np.float32))).shape
        (1, 2, 4, 4)
    """

    def calc_conv_transpose2d_qat(self, inp):
        """The transposed convolution with the fake-quantized weight and bias.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.module.qat import ConvTranspose2d
            >>> m = ConvTranspose2d(1, 1, 2)
            >>> m.calc_conv_transpose2d_qat(mge.Tensor(np.ones((1, 1, 1, 1), np.float32))).shape
            (1, 1, 2, 2)
        """
        w_qat = self.apply_quant_weight(self.weight)
        b_qat = self.apply_quant_bias(self.bias, inp, w_qat)
        return self.calc_conv_transpose2d(inp, w_qat, b_qat)

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT ConvTranspose2d of a float one, sharing its weight and bias.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import ConvTranspose2d
            >>> f = M.ConvTranspose2d(2, 3, 3, output_padding=1, stride=2)
            >>> q = ConvTranspose2d.from_float_module(f)
            >>> q.weight is f.weight, q.output_padding
            (True, (1, 1))
        """
        return _from_float(cls, float_module)

    def forward(self, inp):
        return self.apply_quant_activation(self.calc_conv_transpose2d_qat(inp))


class ConvTransposeRelu2d(ConvTranspose2d):
    """The QAT version of :class:`~.module.ConvTransposeRelu2d`: :class:`ConvTranspose2d` then
    ReLU, quantized once at the end.

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
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import ConvTransposeRelu2d
        >>> y = ConvTransposeRelu2d(1, 2, 2)(mge.Tensor(np.ones((1, 1, 3, 3), dtype=np.float32)))
        >>> float(y.min()) >= 0
        True
    """

    def forward(self, inp):
        return self.apply_quant_activation(F.relu(self.calc_conv_transpose2d_qat(inp)))
