"""``megengine.module`` (``M``): layers as objects holding their Parameters, and ``init``."""

from . import init
from .activation import GELU, LeakyReLU, PReLU, ReLU, Sigmoid, SiLU, Softmax
from .batch_matmul_activation import BatchMatMulActivation
from .batchnorm import BatchNorm1d, BatchNorm2d, SyncBatchNorm
from .concat import Concat
from .conv import (
    Conv1d,
    Conv2d,
    Conv3d,
    ConvRelu2d,
    ConvTranspose2d,
    ConvTranspose3d,
    ConvTransposeRelu2d,
)
from .conv_bn import ConvBn2d, ConvBnRelu2d
from .conv_transpose_bn import ConvTransposeBn2d, ConvTransposeBnRelu2d
from .conv_variants import DeformableConv2d, RegionRestrictedConv
from .deformable_psroi_pooling import DeformablePSROIPooling
from .dropout import Dropout
from .elemwise import Elemwise
from .embedding import Embedding
from .identity import Identity
from .linear import Linear, LinearRelu
from .linear_bn import LinearBn1d, LinearBnRelu1d
from .local_conv import LocalConv2d
from .module import Module
from .multiheadattn import MultiHeadAttention
from .normalization import GeneralNorm, GroupNorm, InstanceNorm, LayerNorm, LocalResponseNorm
from .padding import Pad
from .pixel_shuffle import PixelShuffle
from .pooling import AdaptiveAvgPool2d, AdaptiveMaxPool2d, AvgPool2d, MaxPool2d
from .quant_dequant import DequantStub, QuantStub
from .rnn import LSTM, RNN, LSTMCell, RNNCell
from .sequential import Sequential
from .sliding_window import SlidingWindow, SlidingWindowTranspose

__all__ = [
    "GELU",
    "LSTM",
    "RNN",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "AvgPool2d",
    "BatchMatMulActivation",
    "BatchNorm1d",
    "BatchNorm2d",
    "Concat",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvBn2d",
    "ConvBnRelu2d",
    "ConvRelu2d",
    "ConvTranspose2d",
    "ConvTranspose3d",
    "ConvTransposeBn2d",
    "ConvTransposeBnRelu2d",
    "ConvTransposeRelu2d",
    "DeformableConv2d",
    "DeformablePSROIPooling",
    "DequantStub",
    "Dropout",
    "Elemwise",
    "Embedding",
    "GeneralNorm",
    "GroupNorm",
    "Identity",
    "InstanceNorm",
    "LSTMCell",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "LinearBn1d",
    "LinearBnRelu1d",
    "LinearRelu",
    "LocalConv2d",
    "LocalResponseNorm",
    "MaxPool2d",
    "Module",
    "MultiHeadAttention",
    "PReLU",
    "Pad",
    "PixelShuffle",
    "QuantStub",
    "RNNCell",
    "ReLU",
    "RegionRestrictedConv",
    "Sequential",
    "SiLU",
    "Sigmoid",
    "SlidingWindow",
    "SlidingWindowTranspose",
    "Softmax",
    "SyncBatchNorm",
    "init",
]


def __getattr__(name):
    # MegEngine's `import megengine` imports megengine.quantization, which leaves the qat and
    # quantized subpackages as attributes here (scripts write M.quantized.Elemwise after only
    # `import megengine.module as M`); NeoMeg imports them on first use instead.
    if name in ("qat", "quantized"):
        import importlib

        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
