"""NeoMeg's ``megengine`` package: a drop-in for MegEngine's Python API.

``Tensor`` and ``functional`` run on NeoMeg's C++ runtime (``megengine.core._imperative_rt``);
``megengine.data`` is pure Python and imported on first use.

``megengine.__version__`` is ``"1.13.0"``, the MegEngine release whose API NeoMeg follows, so
that scripts which compare or branch on it take MegEngine 1.13's path; NeoMeg's own version is
``megengine.__neomeg_version__`` (see ``megengine.version``).
"""

import importlib

from . import config as config
from . import dtr as dtr
from . import optimizer as optimizer
from . import random as random
from .device import _full_sync as _full_sync
from .device import _sync as _sync
from .device import (
    coalesce_free_memory,
    get_allocated_memory,
    get_cuda_compute_capability,
    get_cuda_device_property,
    get_cuda_driver_version,
    get_cuda_version,
    get_cudnn_version,
    get_default_device,
    get_device_count,
    get_max_allocated_memory,
    get_max_reserved_memory,
    get_mem_status_bytes,
    get_reserved_memory,
    get_tensorrt_version,
    is_atlas_available,
    is_cambricon_available,
    is_cuda_available,
    is_rocm_available,
    reset_max_memory_stats,
    set_default_device,
    set_prealloc_config,
)
from .logger import enable_debug_log, get_logger, set_log_file, set_log_level
from .serialization import load as load
from .serialization import save as save
from .tensor import Parameter, Tensor, tensor
from .version import __neomeg_version__ as __neomeg_version__
from .version import __version__ as __version__

__all__ = [
    "Parameter",
    "Tensor",
    "coalesce_free_memory",
    "enable_debug_log",
    "get_allocated_memory",
    "get_cuda_compute_capability",
    "get_cuda_device_property",
    "get_cuda_driver_version",
    "get_cuda_version",
    "get_cudnn_version",
    "get_default_device",
    "get_device_count",
    "get_logger",
    "get_max_allocated_memory",
    "get_max_reserved_memory",
    "get_mem_status_bytes",
    "get_reserved_memory",
    "get_tensorrt_version",
    "is_atlas_available",
    "is_cambricon_available",
    "is_cuda_available",
    "is_rocm_available",
    "load",
    "reset_max_memory_stats",
    "save",
    "set_default_device",
    "set_log_file",
    "set_log_level",
    "set_prealloc_config",
    "tensor",
]


def __getattr__(name):
    # Submodules load on first use, as `import megengine; megengine.data` expects: every
    # subpackage MegEngine 1.13 has after `import megengine` (test_package_attributes.py).
    if name in (
        "amp",
        "data",
        "functional",
        "autodiff",
        "module",
        "quantization",
        "distributed",
        "jit",
        "hub",
        "traced_module",
    ):
        return importlib.import_module("." + name, __name__)
    raise AttributeError(f"module 'megengine' has no attribute {name!r}")
