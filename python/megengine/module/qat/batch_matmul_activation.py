"""QAT BatchMatMulActivation."""

from .. import batch_matmul_activation as Float
from .module import QATModule

__all__ = ["BatchMatMulActivation"]


class BatchMatMulActivation(Float.BatchMatMulActivation, QATModule):
    """The QAT version of :class:`~.module.BatchMatMulActivation`.

    Args:
        batch: number of weight matrices.
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether to learn an additive bias.
        nonlinear_mode: ``"identity"`` or ``"relu"``.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.module.qat import BatchMatMulActivation
        >>> m = BatchMatMulActivation(2, 3, 4, bias=False)
        >>> m(mge.Tensor(np.ones((2, 3, 5), np.float32))).shape
        (2, 4, 5)
    """

    def forward(self, inp):
        w_qat = self.apply_quant_weight(self.weight)
        b_qat = self.apply_quant_bias(self.bias, inp, w_qat)
        return self.apply_quant_activation(self._calc_linear(inp, w_qat, b_qat))

    @classmethod
    def from_float_module(cls, float_module):
        """The QAT version of a float BatchMatMulActivation, sharing its parameters.

        Examples:
            >>> import megengine.module as M
            >>> from megengine.module.qat import BatchMatMulActivation
            >>> f = M.BatchMatMulActivation(2, 3, 4)
            >>> BatchMatMulActivation.from_float_module(f).weight is f.weight
            True
        """
        qat_module = cls(
            float_module.batch,
            float_module.in_features,
            float_module.out_features,
            float_module.bias is not None,
            # MegEngine 1.13 drops the mode here, so its QAT version loses the ReLU
            float_module.nonlinear_mode,
            name=float_module.name,
        )
        qat_module.weight = float_module.weight
        qat_module.bias = float_module.bias
        return qat_module
