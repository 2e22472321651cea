"""``megenginelite``: MegEngine Lite's Python API, for running a dumped model in deployment
scripts (``LiteNetwork``, ``LiteTensor``, ``LiteConfig``, ...), on NeoMeg's C++ inference API.

It builds on megengine's extension only (``megengine.core._imperative_rt``); nothing in
``megengine`` imports it. docs/cpp-inference.md ("Python: megenginelite") says what of
MegEngine Lite it covers.
"""

from .base import get_log_level, set_log_level, version
from .global_setting import LiteGlobal
from .network import (
    LiteConfig,
    LiteExtraConfig,
    LiteIO,
    LiteNetwork,
    LiteNetworkIO,
    LiteOptions,
    get_model_io_info,
)
from .struct import (
    LiteAlgoSelectStrategy,
    LiteBackend,
    LiteDataType,
    LiteDeviceType,
    LiteIOType,
    LiteLogLevel,
    LiteTensorPhase,
)
from .tensor import LiteLayout, LiteTensor, LiteTensorConcat, lite_dtype_2_numpy
from .utils import TensorBatchCollector

__version__ = version

__all__ = [
    "LiteAlgoSelectStrategy",
    "LiteBackend",
    "LiteConfig",
    "LiteDataType",
    "LiteDeviceType",
    "LiteExtraConfig",
    "LiteGlobal",
    "LiteIO",
    "LiteIOType",
    "LiteLayout",
    "LiteLogLevel",
    "LiteNetwork",
    "LiteNetworkIO",
    "LiteOptions",
    "LiteTensor",
    "LiteTensorConcat",
    "LiteTensorPhase",
    "TensorBatchCollector",
    "get_log_level",
    "get_model_io_info",
    "lite_dtype_2_numpy",
    "set_log_level",
    "version",
]
