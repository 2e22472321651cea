"""Quantized Elemwise: MegEngine's ElemwiseMultiType "q" modes (QADD, QFUSE_ADD_RELU, QMUL,
...): the inputs' values (dequantized to float32), the float elementwise function, the result
quantized to the output dtype."""

from ...core.ops import builtin
from ...core.tensor.array_method import elemwise as _elemwise
from ..elemwise import _FUSED
from .module import QuantizedModule

__all__ = ["Elemwise"]


class Elemwise(QuantizedModule):
    """A quantized elementwise function: ``method`` (a float :class:`~.module.Elemwise` mode
    such as ``"add"`` or ``"fuse_add_relu"``) on the inputs' values, quantized to ``dtype``.

    Args:
        method: the float Elemwise mode; the module's ``method`` is ``"q" + method``.
        dtype: the quantized output dtype.
        kwargs: ``name`` of the module.

    Examples:
        >>> import numpy as np
        >>> import megengine as mge
        >>> from megengine.core.tensor.dtype import qint8
        >>> from megengine.module.quantized import Elemwise
        >>> a = mge.Tensor(np.array([1.0, -3.0], np.float32)).astype(qint8(0.5))
        >>> b = mge.Tensor(np.array([0.4, 1.0], np.float32)).astype(qint8(0.1))
        >>> m = Elemwise("fuse_add_relu", qint8(0.2))
        >>> m.eval()
        >>> m.method, m(a, b).numpy().tolist()
        ('qfuse_add_relu', [7, 0])
    """

    def __init__(self, method, dtype=None, **kwargs):
        super().__init__(**kwargs)
        mode = str(method).upper()
        if mode not in _FUSED and not hasattr(builtin.Elemwise.Mode, mode):
            raise ValueError(f"Elemwise: unknown method {method!r}")
        self.method = "q" + method
        self.output_dtype = dtype
        self._mode = mode

    def forward(self, *inps):
        if self.training:
            raise ValueError("quantized module only support inference.")
        values = [x.astype("float32") for x in inps]
        act = _FUSED.get(self._mode)
        if act is not None:
            out = _elemwise(act, _elemwise("ADD", *values))
        else:
            out = _elemwise(self._mode, *values)
        return out if self.output_dtype is None else out.astype(self.output_dtype)

    @classmethod
    def from_qat_module(cls, qat_module):
        """An Elemwise of ``qat_module``'s method and activation dtype.

        Args:
            qat_module: a :class:`~.qat.Elemwise`.

        Returns:
            the quantized module.

        Examples:
            >>> from megengine.module import qat
            >>> from megengine.module.quantized import Elemwise
            >>> from megengine.quantization import ema_fakequant_qconfig
            >>> q = qat.Elemwise("add")
            >>> q.set_qconfig(ema_fakequant_qconfig)
            >>> Elemwise.from_qat_module(q).method
            'qadd'
        """
        return cls(qat_module.method, qat_module.get_activation_dtype(), name=qat_module.name)
