"""``megengine.module.qat``: quantization-aware-training versions of the float modules, as
MegEngine 1.13's. Each is its float module plus the observers and fake quantizers of a
:class:`~.QConfig` (see :class:`QATModule`); :func:`~.quantize_qat` converts a network."""

from .batch_matmul_activation import BatchMatMulActivation
from .concat import Concat
from .conv import Conv2d, ConvRelu2d, ConvTranspose2d, ConvTransposeRelu2d
from .conv_bn import ConvBn2d, ConvBnRelu2d
from .conv_transpose_bn import ConvTransposeBn2d, ConvTransposeBnRelu2d
from .elemwise import Elemwise
from .linear import Linear, LinearRelu
from .linear_bn import LinearBn1d, LinearBnRelu1d
from .module import QATModule
from .quant_dequant import DequantStub, QuantStub

__all__ = [
    "BatchMatMulActivation",
    "Concat",
    "Conv2d",
    "ConvBn2d",
    "ConvBnRelu2d",
    "ConvRelu2d",
    "ConvTranspose2d",
    "ConvTransposeBn2d",
    "ConvTransposeBnRelu2d",
    "ConvTransposeRelu2d",
    "DequantStub",
    "Elemwise",
    "Linear",
    "LinearBn1d",
    "LinearBnRelu1d",
    "LinearRelu",
    "QATModule",
    "QuantStub",
]
