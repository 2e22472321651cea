"""QAT Linear and LinearRelu."""

from ... import functional as F
from .. import linear as Float
from .module import QATModule

__all__ = ["Linear", "LinearRelu"]


class Linear(Float.Linear, QATModule):
    """The QAT version of :class:`~.module.Linear`: fake-quantized weight (and bias), observed
    and fake-quantized output.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.
        compute_mode: accepted for MegEngine compatibility.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import Linear
        >>> from megengine.quantization import ema_fakequant_qconfig
        >>> m = Linear(3, 2)
        >>> m.set_qconfig(ema_fakequant_qconfig)
        >>> m(mge.Tensor(np.ones((4, 3), dtype=np.float32))).shape
        (4, 2)
    """

    def calc_linear_qat(self, inp):
        """The linear map with the fake-quantized weight and bias (before the activation's
        quantization).

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.module.qat import Linear
            >>> m = Linear(3, 2)
            >>> m.calc_linear_qat(mge.Tensor(np.ones((1, 3), dtype=np.float32))).shape
            (1, 2)
        """
        w_qat = self.apply_quant_weight(self.weight)
        b_qat = self.apply_quant_bias(self.bias, inp, w_qat)
        return self.calc_linear(inp, w_qat, b_qat)

    def forward(self, inp):
        return self.apply_quant_activation(self.calc_linear_qat(inp))

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT Linear of a float one, sharing its weight and bias.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import Linear
            >>> f = M.Linear(2, 3, bias=False)
            >>> Linear.from_float_module(f).bias is None
            True
        """
        qmod = cls(float_module.in_features, float_module.out_features, name=float_module.name)
        qmod.weight = float_module.weight
        qmod.bias = float_module.bias
        return qmod


class LinearRelu(Linear):
    """The QAT version of :class:`~.module.LinearRelu`: :class:`Linear` then ReLU, quantized
    once at the end.

    Args:
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.
        compute_mode: accepted for MegEngine compatibility.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import LinearRelu
        >>> m = LinearRelu(3, 2)
        >>> float(m(mge.Tensor(np.ones((4, 3), dtype=np.float32))).min()) >= 0
        True
    """

    def forward(self, inp):
        return self.apply_quant_activation(F.relu(self.calc_linear_qat(inp)))
