"""NeoMeg's ``megengine`` package: a drop-in for MegEngine's Python API.

``Tensor`` and ``functional`` run on NeoMeg's C++ runtime (``megengine.core._imperative_rt``);
``megengine.data`` is pure Python and imported on first use.
"""

import importlib

from . import optimizer as optimizer
from . import random as random
from .device import (
    get_default_device,
    get_device_count,
    get_mem_status_bytes,
    is_cuda_available,
    set_default_device,
)
from .logger import enable_debug_log, get_logger, set_log_file, set_log_level
from .serialization import load as load
from .serialization import save as save
from .tensor import Parameter, Tensor, tensor

__all__ = [
    "Parameter",
    "Tensor",
    "enable_debug_log",
    "get_default_device",
    "get_device_count",
    "get_logger",
    "get_mem_status_bytes",
    "is_cuda_available",
    "load",
    "save",
    "set_default_device",
    "set_log_file",
    "set_log_level",
    "tensor",
]


def __getattr__(name):
    # Submodules load on first use, as `import megengine; megengine.data` expects.
    if name in ("data", "functional", "autodiff", "module", "distributed"):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'megengine' has no attribute {name!r}")
