"""Quantized LinearBn1d and LinearBnRelu1d: the BatchNorm folded into the quantized weight and
the float bias at conversion."""

from .linear import Linear
from .module import _load_folded

__all__ = ["LinearBn1d", "LinearBnRelu1d"]


class _LinearBnActivation1d(Linear):
    @classmethod
    def from_qat_module(cls, qat_module):
        """The quantized module of a QAT LinearBn1d/LinearBnRelu1d: weight and bias with the
        BatchNorm's running statistics folded in, the weight quantized.

        Args:
            qat_module: the QAT module.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import LinearBn1d
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.LinearBn1d(3, 2)
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> LinearBn1d.from_qat_module(q).weight.shape
            (2, 3)
        """
        qlinear = cls(dtype=qat_module.get_activation_dtype(), name=qat_module.name)
        return _load_folded(qlinear, qat_module, qat_module.linear)


class LinearBn1d(_LinearBnActivation1d):
    """Quantized :class:`~.qat.LinearBn1d` (a :class:`~.quantized.Linear` after folding).

    Args:
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> from megengine.module.quantized import LinearBn1d
        >>> LinearBn1d().weight is None
        True
    """

    def forward(self, inp):
        return self.calc_linear_quantized(inp, nonlinear_mode="identity")


class LinearBnRelu1d(_LinearBnActivation1d):
    """Quantized :class:`~.qat.LinearBnRelu1d` (a :class:`~.quantized.LinearRelu` after
    folding).

    Args:
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> from megengine.module.quantized import LinearBnRelu1d
        >>> LinearBnRelu1d().weight is None
        True
    """

    def forward(self, inp):
        return self.calc_linear_quantized(inp, nonlinear_mode="relu")
