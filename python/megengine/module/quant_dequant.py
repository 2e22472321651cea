"""QuantStub and DequantStub: where a quantized model's input is quantized and its output
dequantized; in a float model both pass their input through, as MegEngine's do."""

from .module import Module

__all__ = ["DequantStub", "QuantStub"]


class QuantStub(Module):
    """Marks where quantization starts; in float it returns its input.

    Args:
        name: an optional name, shown by ``repr`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.QuantStub()(mge.Tensor([1.0, 2.0])).numpy().tolist()
        [1.0, 2.0]
    """

    def forward(self, inp):
        return inp


class DequantStub(Module):
    """Marks where quantization ends; in float it returns its input.

    Args:
        name: an optional name, shown by ``repr`` of the module.

    Examples:
        >>> import megengine as mge
        >>> import megengine.module as M
        >>> M.DequantStub()(mge.Tensor([1.0, 2.0])).numpy().tolist()
        [1.0, 2.0]
    """

    def forward(self, inp):
        return inp
