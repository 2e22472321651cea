"""Quantized Conv2d, ConvRelu2d and the transposed ones: integer convolutions of quantized
tensors (:func:`~.functional.quantized.conv_bias_activation`)."""

import numpy as np

from ... import module as Float
from ...core.tensor import dtype
from ...functional.nn import pad
from ...functional.quantized import conv_bias_activation, conv_transpose2d
from ...tensor import Parameter
from .module import QuantizedModule, _float_bias, _quantized_weight

__all__ = ["Conv2d", "ConvRelu2d", "ConvTranspose2d", "ConvTransposeRelu2d"]


class Conv2d(Float.Conv2d, QuantizedModule):
    """Quantized :class:`~.qat.Conv2d`: a qint8 weight, a float bias quantized to qint32 of
    scale input scale x weight scale on each call, the output requantised to ``dtype``.

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
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import Conv2d
        >>> m = Conv2d(1, 1, 1, dtype=qint8(0.5))
        >>> m.eval()
        >>> m.weight = mge.Parameter(np.array([[[[2]]]], dtype=qint8(0.5)))
        >>> m.bias = mge.Parameter(np.full((1, 1, 1, 1), 1.0, np.float32))
        >>> x = mge.Tensor(np.array([[[[3.0]]]], np.float32)).astype(qint8(0.5))
        >>> m(x).numpy().ravel().tolist()  # (3 * 1 + 1) / 0.5
        [8]
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
        conv_mode="cross_correlation",
        compute_mode="default",
        dtype=None,
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
            True,
            conv_mode,
            compute_mode,
            padding_mode,
            **kwargs,
        )
        self.output_dtype = dtype

    def calc_conv_quantized(self, inp, nonlinear_mode="identity"):
        """The quantized convolution of ``inp`` with this module's weight and bias.

        Args:
            inp: the quantized input.
            nonlinear_mode: ``"identity"`` or ``"relu"``.

        Returns:
            the output, of ``output_dtype``.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.core.tensor.dtype import qint8
            >>> from megengine.module.quantized import Conv2d
            >>> m = Conv2d(1, 1, 1, dtype=qint8(1.0))
            >>> m.eval()
            >>> m.weight = mge.Parameter(np.array([[[[1]]]], dtype=qint8(1.0)))
            >>> x = mge.Tensor(np.array([[[[-3.0]]]], np.float32)).astype(qint8(1.0))
            >>> m.calc_conv_quantized(x, "relu").numpy().ravel().tolist()
            [0]
        """
        if self.padding_mode not in ("zeros", "reflect", "replicate"):
            raise ValueError(f"Conv2d: unknown padding_mode {self.padding_mode!r}")
        bias_scale = dtype.get_scale(inp.dtype) * dtype.get_scale(self.weight.dtype)
        padding = self.padding
        if self.padding_mode != "zeros":
            inp = pad(inp, self.get_pad_witdth(), self.padding_mode)
            padding = 0
        return conv_bias_activation(
            inp,
            self.weight,
            self.bias.astype(dtype.qint32(bias_scale)),
            self.output_dtype,
            self.stride,
            padding,
            self.dilation,
            self.groups,
            conv_mode=self.conv_mode,
            compute_mode=self.compute_mode,
            nonlinear_mode=nonlinear_mode,
        )

    @classmethod
    def from_qat_module(cls, qat_module):
        """The quantized Conv2d of a :class:`~.qat.Conv2d`: its weight quantized to the weight
        dtype, its bias kept in float, its activation dtype as output dtype.

        Args:
            qat_module: the QAT module.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import Conv2d
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.Conv2d(1, 2, 3)
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> Conv2d.from_qat_module(q).weight.dtype.metadata["mgb_dtype"]["name"]
            'QuantizedS8'
        """
        qconv = cls(
            **qat_module._geometry_kwargs(),
            dtype=qat_module.get_activation_dtype(),
            name=qat_module.name,
        )
        qconv.weight = _quantized_weight(qat_module, qat_module.weight, qat_module.weight.name)
        if qat_module.bias is not None:
            qconv.bias = _float_bias(qat_module.bias)
        else:
            qconv.bias = Parameter(np.zeros(qat_module._infer_bias_shape(), dtype=np.float32))
        return qconv

    def forward(self, inp):
        return self.calc_conv_quantized(inp, nonlinear_mode="identity")


class ConvRelu2d(Conv2d):
    """Quantized :class:`~.qat.ConvRelu2d`: :class:`Conv2d` with a ReLU on the int32 sums.

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
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import ConvRelu2d
        >>> m = ConvRelu2d(1, 1, 1, dtype=qint8(1.0))
        >>> m.eval()
        >>> m.weight = mge.Parameter(np.array([[[[1]]]], dtype=qint8(1.0)))
        >>> x = mge.Tensor(np.array([[[[-3.0, 2.0]]]], np.float32)).astype(qint8(1.0))
        >>> m(x).numpy().ravel().tolist()
        [0, 2]
    """

    def forward(self, inp):
        return self.calc_conv_quantized(inp, nonlinear_mode="relu")


class ConvTranspose2d(Float.ConvTranspose2d, QuantizedModule):
    """Quantized :class:`~.qat.ConvTranspose2d`, for inference. As in MegEngine 1.13, only a
    module without bias runs (``F.quantized.conv_transpose2d`` takes none): calling one with a
    bias raises NotImplementedError.

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
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import ConvTranspose2d
        >>> ConvTranspose2d(2, 1, 2, dtype=qint8(0.1)).output_dtype.metadata["mgb_dtype"]["name"]
        'QuantizedS8'
    """

    output_padding = 0

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
        dtype=None,
        **kwargs,
    ):
        super().__init__(
            in_channels=in_channels,
            out_channels=out_channels,
            kernel_size=kernel_size,
            stride=stride,
            padding=padding,
            output_padding=output_padding,
            dilation=dilation,
            groups=groups,
            bias=bias,
            conv_mode=conv_mode,
            compute_mode=compute_mode,
            **kwargs,
        )
        self.output_dtype = dtype

    @classmethod
    def from_qat_module(cls, qat_module):
        """The quantized ConvTranspose2d of a :class:`~.qat.ConvTranspose2d`.

        Args:
            qat_module: the QAT module.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import ConvTranspose2d
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.ConvTranspose2d(2, 1, 2)
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> ConvTranspose2d.from_qat_module(q).weight.shape
            (2, 1, 2, 2)
        """
        qconv = cls(
            **qat_module._float_kwargs(),
            dtype=qat_module.get_activation_dtype(),
            name=qat_module.name,
        )
        qconv.weight = _quantized_weight(qat_module, qat_module.weight, qat_module.weight.name)
        qconv.bias = _float_bias(qat_module.bias) if qat_module.bias is not None else None
        return qconv

    def calc_conv_transpose2d_quantized(self, inp, nonlinear_mode):
        """The quantized transposed convolution of ``inp``, requantised to ``output_dtype``
        (:func:`~.functional.quantized.conv_transpose2d`).

        Args:
            inp: the quantized input.
            nonlinear_mode: ``"identity"``.

        Returns:
            the quantized output.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.core.tensor.dtype import qint8
            >>> from megengine.module.quantized import ConvTranspose2d
            >>> m = ConvTranspose2d(1, 1, 2, bias=False, dtype=qint8(0.5))
            >>> ones = mge.Tensor(np.ones((1, 1, 2, 2), np.float32))
            >>> m.weight = mge.Parameter(ones.astype(qint8(0.25)))
            >>> m.calc_conv_transpose2d_quantized(ones.astype(qint8(0.5)), "identity").numpy()[0, 0]
            array([[2, 4, 2],
                   [4, 8, 4],
                   [2, 4, 2]], dtype=int8)
        """
        if nonlinear_mode != "identity":
            raise ValueError("nonlinear_mode shoule be 'identity'")
        return conv_transpose2d(
            inp=inp,
            weight=self.weight,
            bias=self.bias,
            dtype=self.output_dtype,
            stride=self.stride,
            padding=self.padding,
            output_padding=self.output_padding,
            dilation=self.dilation,
            groups=self.groups,
            conv_mode=self.conv_mode,
            compute_mode=self.compute_mode,
        )

    def forward(self, inp):
        return self.calc_conv_transpose2d_quantized(inp, nonlinear_mode="identity")


class ConvTransposeRelu2d(ConvTranspose2d):
    """Quantized :class:`~.qat.ConvTransposeRelu2d`. Calling it raises ValueError, as
    MegEngine's does: the transposed kernel has no ReLU.

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
        >>> from megengine.module.quantized import ConvTransposeRelu2d
        >>> ConvTransposeRelu2d(2, 1, 3).weight.shape
        (2, 1, 3, 3)
    """

    def forward(self, inp):
        return self.calc_conv_transpose2d_quantized(inp, nonlinear_mode="relu")
