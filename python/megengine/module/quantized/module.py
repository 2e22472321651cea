"""QuantizedModule: the base of ``megengine.module.quantized``, inference-only modules on
quantized tensors, each made from its QAT module by ``from_qat_module``."""

from abc import abstractmethod

from ...tensor import Parameter
from ..module import Module

__all__ = ["QuantizedModule"]


def _quantized_weight(qat_module, weight, name):
    # `weight` (the QAT module's, or its BatchNorm-folded one) in the QAT module's weight dtype
    return Parameter(weight.astype(qat_module.get_weight_dtype()).numpy(), name=name)


def _float_bias(bias):
    # quantized modules keep the bias in float; it is quantized on each call
    return Parameter(bias.numpy(), name=bias.name)


def _load_folded(qmod, qat_module, layer):
    # qmod's weight and bias from the QAT module's BatchNorm-folded ones (running statistics),
    # the weight quantized; names kept from its float `layer` (conv, transposed conv, linear).
    w_fold, b_fold = qat_module.fold_weight_bias(
        qat_module.bn.running_mean, qat_module.bn.running_var
    )
    qmod.weight = _quantized_weight(qat_module, w_fold, layer.weight.name)
    qmod.bias = Parameter(b_fold.numpy())
    if layer.bias is not None:
        qmod.bias.name = layer.bias.name
    return qmod


class QuantizedModule(Module):
    """Base class of the quantized modules: converted from a :class:`~.QATModule` by
    :func:`~.quantize`, and inference only (calling one in training mode raises ValueError).

    Args:
        name: the module's name.

    Examples:
        >>> from megengine.module.quantized import DequantStub
        >>> m = DequantStub()
        >>> m.eval()
        >>> repr(m).startswith("Quantized.")
        True
    """

    def __call__(self, *inputs, **kwargs):
        if self.training:
            raise ValueError("quantized module only support inference.")
        return super().__call__(*inputs, **kwargs)

    def __repr__(self):
        return "Quantized." + super().__repr__()

    @classmethod
    @abstractmethod
    def from_qat_module(cls, qat_module):
        """The quantized module made from ``qat_module``: weights quantized to its weight dtype,
        output in its activation dtype.

        Args:
            qat_module: the :class:`~.QATModule` to convert.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module.qat import DequantStub as QATDequant
            >>> from megengine.module.quantized import DequantStub
            >>> type(DequantStub.from_qat_module(QATDequant())).__name__
            'DequantStub'
        """
