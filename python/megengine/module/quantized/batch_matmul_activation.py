"""Quantized BatchMatMulActivation: per-batch integer matrix products as 1x1 batch
convolutions (:func:`~.functional.quantized.batch_conv_bias_activation`), as MegEngine's."""

import numpy as np

from ... import module as Float
from ...core.tensor import dtype
from ...functional import expand_dims, squeeze
from ...functional.quantized import batch_conv_bias_activation
from ...tensor import Parameter
from .module import QuantizedModule

__all__ = ["BatchMatMulActivation"]


class BatchMatMulActivation(Float.BatchMatMulActivation, QuantizedModule):
    """Quantized :class:`~.qat.BatchMatMulActivation`: ``weight[b] @ inp[b]`` plus a bias per
    output feature on the integers, requantised to ``dtype``. The weight is kept as
    (batch, out_features, in_features, 1, 1) and the bias as (1, out_features, 1, 1).

    Args:
        batch: number of weight matrices.
        in_features: size of each input sample.
        out_features: size of each output sample.
        bias: whether there is a bias.
        nonlinear_mode: ``"identity"`` or ``"relu"``.
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import BatchMatMulActivation
        >>> m = BatchMatMulActivation(1, 2, 1, dtype=qint8(1.0))
        >>> m.eval()
        >>> m.weight = mge.Parameter(np.array([1, 2], dtype=qint8(1.0)).reshape(1, 1, 2, 1, 1))
        >>> m.bias = mge.Parameter(np.zeros((1, 1, 1, 1), np.float32))
        >>> x = mge.Tensor(np.array([[[1.0], [3.0]]], np.float32)).astype(qint8(1.0))
        >>> m(x).numpy().tolist()
        [[[7]]]
    """

    def __init__(
        self,
        batch,
        in_features,
        out_features,
        bias=True,
        nonlinear_mode="identity",
        dtype=None,
        **kwargs,
    ):
        super().__init__(batch, in_features, out_features, bias, nonlinear_mode, **kwargs)
        self.output_dtype = dtype

    def calc_bmm_quantized(self, inp):
        """The quantized batched product of ``inp`` (batch, in_features, N).

        Args:
            inp: the quantized input.

        Returns:
            the output (batch, out_features, N), of ``output_dtype``.

        Examples:
            >>> import numpy as np
            >>> import megengine as mge
            >>> from megengine.core.tensor.dtype import qint8
            >>> from megengine.module.quantized import BatchMatMulActivation
            >>> m = BatchMatMulActivation(1, 1, 1, dtype=qint8(1.0))
            >>> m.eval()
            >>> m.weight = mge.Parameter(np.array([-2], dtype=qint8(1.0)).reshape(1, 1, 1, 1, 1))
            >>> m.bias = mge.Parameter(np.zeros((1, 1, 1, 1), np.float32))
            >>> x = mge.Tensor(np.array([[[3.0]]], np.float32)).astype(qint8(1.0))
            >>> m.calc_bmm_quantized(x).numpy().tolist()
            [[[-6]]]
        """
        bias_scale = dtype.get_scale(inp.dtype) * dtype.get_scale(self.weight.dtype)
        res = batch_conv_bias_activation(
            expand_dims(inp, [-1]),
            self.weight,
            self.bias.astype(dtype.qint32(bias_scale)),
            dtype=self.output_dtype,
            nonlinear_mode=self.nonlinear_mode,
        )
        return squeeze(res, -1)

    @classmethod
    def from_qat_module(cls, qat_module):
        """The quantized module of a :class:`~.qat.BatchMatMulActivation` (MegEngine's
        conversion: the nonlinearity is not carried over).

        Args:
            qat_module: the QAT module.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import BatchMatMulActivation
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.BatchMatMulActivation(2, 3, 4)
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> BatchMatMulActivation.from_qat_module(q).weight.shape
            (2, 4, 3, 1, 1)
        """
        qbmm = cls(
            qat_module.batch,
            qat_module.in_features,
            qat_module.out_features,
            qat_module.bias is not None,
            dtype=qat_module.get_activation_dtype(),
            name=qat_module.name,
        )
        weight = qat_module.weight.astype(qat_module.get_weight_dtype())
        weight = expand_dims(weight, [-1, -2])
        qbmm.weight = Parameter(weight.numpy(), name=qat_module.weight.name)
        if qat_module.bias is not None:
            bias = qat_module.bias.reshape((1, qbmm.out_features, 1, 1))
            qbmm.bias = Parameter(bias.numpy(), name=qat_module.bias.name)
        else:
            qbmm.bias = Parameter(np.zeros((1, qbmm.out_features, 1, 1), dtype=np.float32))
        return qbmm

    def forward(self, inp):
        return self.calc_bmm_quantized(inp)
