"""``megengine.module.quantized``: inference-only modules on quantized tensors, as MegEngine
1.13's, made from QAT modules by :func:`~.quantization.quantize` (``from_qat_module``)."""

from .batch_matmul_activation import BatchMatMulActivation
from .concat import Concat
from .conv import Conv2d, ConvRelu2d, ConvTranspose2d, ConvTransposeRelu2d
from .conv_bn import ConvBn2d, ConvBnRelu2d
from .conv_transpose_bn import ConvTransposeBn2d, ConvTransposeBnRelu2d
from .elemwise import Elemwise
from .linear import Linear, LinearRelu
from .linear_bn import LinearBn1d, LinearBnRelu1d
from .module import QuantizedModule
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
    "QuantStub",
    "QuantizedModule",
]
