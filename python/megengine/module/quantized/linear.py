"""Quantized Linear and LinearRelu: qint8 x qint8 products summed in int32 with a qint32 bias,
requantised to the output dtype."""

from ...core.tensor import dtype
from ...functional.quantized import conv_bias_activation
from .module import QuantizedModule, _float_bias, _quantized_weight

__all__ = ["Linear", "LinearRelu"]


class Linear(QuantizedModule):
    """Quantized :class:`~.qat.Linear`: ``inp @ weight.T + bias`` on the integers (the float
    bias quantized to qint32 of scale input scale x weight scale), requantised to ``dtype``.

    Args:
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import Linear
        >>> m = Linear(qint8(0.5))
        >>> m.eval()
        >>> m.weight = mge.Parameter(np.array([[1, 2]], dtype=qint8(1.0)))
        >>> m.bias = mge.Parameter(np.array([1.0], np.float32))
        >>> x = mge.Tensor(np.array([[1.0, -2.0]], np.float32)).astype(qint8(1.0))
        >>> m(x).numpy().tolist()  # (1 - 4 + 1) / 0.5
        [[-4]]
    """

    def __init__(self, dtype=None, **kwargs):
        super().__init__(**kwargs)
        self.weight = None
        self.bias = None
        self.output_dtype = dtype

    def calc_linear_quantized(self, inp, nonlinear_mode="identity"):
        """The quantized linear map of ``inp`` (..., in_features).

        Args:
            inp: the quantized input.
            nonlinear_mode: ``"identity"`` or ``"relu"``.

        Returns:
            the output (..., out_features), of ``output_dtype``.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.core.tensor.dtype import qint8
            >>> from megengine.module.quantized import Linear
            >>> m = Linear(qint8(1.0))
            >>> m.eval()
            >>> m.weight = mge.Parameter(np.array([[1], [-1]], dtype=qint8(1.0)))
            >>> x = mge.Tensor(np.array([[3.0]], np.float32)).astype(qint8(1.0))
            >>> m.calc_linear_quantized(x, "relu").numpy().tolist()
            [[3, 0]]
        """
        if self.training:
            raise ValueError("quantized module only support inference.")
        if nonlinear_mode not in ("identity", "relu"):
            raise ValueError(
                f"Linear: nonlinear_mode must be identity or relu, got {nonlinear_mode}"
            )
        weight, bias = self.weight, None
        if self.bias is not None:
            scale = dtype.get_scale(inp.dtype) * dtype.get_scale(weight.dtype)
            bias = self.bias.astype(dtype.qint32(scale))
        # the products as a 1x1 convolution: rows of inp are images of in_features channels
        in_shape, w_shape = inp.shape, weight.shape
        x = inp.reshape(-1, in_shape[-1], 1, 1)
        w = weight.reshape(w_shape[0], w_shape[1], 1, 1)
        out = conv_bias_activation(x, w, bias, self.output_dtype, nonlinear_mode=nonlinear_mode)
        return out.reshape(*in_shape[:-1], w_shape[0])

    def forward(self, inp):
        return self.calc_linear_quantized(inp)

    @classmethod
    def from_qat_module(cls, qat_module):
        """The quantized Linear of a :class:`~.qat.Linear`: its weight quantized to the weight
        dtype, its bias kept in float, its activation dtype as output dtype.

        Args:
            qat_module: the QAT module.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import Linear
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.Linear(3, 2)
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> Linear.from_qat_module(q).weight.shape
            (2, 3)
        """
        qmod = cls(dtype=qat_module.get_activation_dtype(), name=qat_module.name)
        qmod.weight = _quantized_weight(qat_module, qat_module.weight, qat_module.weight.name)
        if qat_module.bias is not None:
            qmod.bias = _float_bias(qat_module.bias)
        return qmod


class LinearRelu(Linear):
    """Quantized :class:`~.qat.LinearRelu`: :class:`Linear` with a ReLU on the int32 sums.

    Args:
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import LinearRelu
        >>> m = LinearRelu(qint8(1.0))
        >>> m.eval()
        >>> m.weight = mge.Parameter(np.array([[1], [-1]], dtype=qint8(1.0)))
        >>> m(mge.Tensor(np.array([[3.0]], np.float32)).astype(qint8(1.0))).numpy().tolist()
        [[3, 0]]
    """

    def forward(self, inp):
        return self.calc_linear_quantized(inp, nonlinear_mode="relu")
