"""``import megengine`` alone gives every name MegEngine 1.13's package has after it (recorded
from the real MegEngine with ``dir(megengine)``), so a script that writes ``mge.jit.trace`` or
``mge.hub.load`` without importing the submodule runs unchanged. The check runs in a fresh
interpreter: another test's import of a submodule would make it pass."""

import os
import subprocess
import sys

import pytest

# dir(megengine) under MegEngine 1.13.0 right after `import megengine`, less its private names
# and the modules its __init__ imported for itself (atexit, re, sys, cgtools' alias).
MEGENGINE_1_13 = [
    "Parameter", "Tensor", "amp", "autodiff", "check_misc", "coalesce_free_memory", "config",
    "core", "data", "device", "distributed", "dtr", "enable_debug_log", "functional",
    "get_allocated_memory", "get_cuda_compute_capability", "get_cuda_device_property",
    "get_cuda_driver_version", "get_cuda_version", "get_cudnn_version", "get_default_device",
    "get_device_count", "get_logger", "get_max_allocated_memory", "get_max_reserved_memory",
    "get_mem_status_bytes", "get_reserved_memory", "get_tensorrt_version", "hub",
    "is_atlas_available", "is_cambricon_available", "is_cuda_available", "is_rocm_available",
    "jit", "load", "logger", "module", "optimizer", "quantization", "random",
    "reset_max_memory_stats", "save", "serialization", "set_default_device", "set_log_file",
    "set_log_level", "set_prealloc_config", "tensor", "traced_module", "utils", "version",
]  # fmt: skip

# MegEngine's own environment check, which NeoMeg has no counterpart of.
NOT_IN_NEOMEG = {"check_misc"}

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_name_is_there_after_import_megengine():
    names = sorted(set(MEGENGINE_1_13) - NOT_IN_NEOMEG)
    code = (
        "import megengine\n"
        f"missing = [n for n in {names!r} if not hasattr(megengine, n)]\n"
        "print(' '.join(missing))\n"
    )
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = subprocess.run(
        [sys.executable, "-c", code], check=False, env=env, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr[-800:]
    assert run.stdout.split() == []


def test_an_unknown_name_is_an_attribute_error():
    import megengine

    with pytest.raises(AttributeError, match="module 'megengine' has no attribute 'nosuch'"):
        _ = megengine.nosuch
