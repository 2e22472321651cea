"""megengine.device's memory statistics (the caching allocator's) and its answers about
accelerator backends, which a build without them gives as MegEngine's CPU build does."""

import warnings

import numpy as np
import pytest

import megengine as mge
from megengine import device

# Size classes of the allocator (docs/architecture.md): multiples of 512 B up to 1 MiB, of 1 MiB
# above.
MiB = 1 << 20


def test_allocated_counts_rounded_blocks_per_queue():
    dev = "cpu11"  # no other test uses it, so nothing else is allocated there
    base = mge.get_allocated_memory(dev)
    a = mge.Tensor(np.zeros(1000, "float32"), device=dev)  # 4000 B -> 4096
    assert mge.get_allocated_memory(dev) - base == 4096
    b = mge.Tensor(np.zeros(300_000, "float32"), device=dev)  # 1.2 MB -> 2 MiB
    assert mge.get_allocated_memory(dev) - base == 4096 + 2 * MiB
    assert mge.get_allocated_memory("cpu11:1") == 0  # another queue, another allocator
    del a, b
    assert mge.get_allocated_memory(dev) == base


def test_peaks_and_reset():
    dev = "cpu12"
    mge.reset_max_memory_stats(dev)
    start = mge.get_allocated_memory(dev)
    x = mge.Tensor(np.zeros(256 * 1024, "float32"), device=dev)  # exactly 1 MiB
    y = mge.Tensor(np.zeros(1024, "float32"), device=dev)
    del x
    assert mge.get_max_allocated_memory(dev) == start + MiB + 4096
    assert mge.get_allocated_memory(dev) == start + 4096
    # the freed MiB stays cached: reserved does not drop, and its peak is at least the peak in use
    assert mge.get_reserved_memory(dev) >= start + MiB + 4096
    assert mge.get_max_reserved_memory(dev) >= mge.get_reserved_memory(dev)
    mge.reset_max_memory_stats(dev)
    assert mge.get_max_allocated_memory(dev) == mge.get_allocated_memory(dev)
    assert mge.get_max_reserved_memory(dev) == mge.get_reserved_memory(dev)
    del y


def test_coalesce_free_memory_returns_cached_blocks_but_keeps_peaks():
    dev = "cpu13"
    keep = mge.Tensor(np.zeros(100, "float32"), device=dev)
    gone = mge.Tensor(np.zeros(3 * 256 * 1024, "float32"), device=dev)  # 3 MiB
    peak = mge.get_max_reserved_memory(dev)
    del gone
    assert mge.get_reserved_memory(dev) - mge.get_allocated_memory(dev) >= 3 * MiB
    mge.coalesce_free_memory()
    assert mge.get_reserved_memory(dev) == mge.get_allocated_memory(dev) == 512
    assert mge.get_max_reserved_memory(dev) == peak
    assert keep.numpy().sum() == 0  # blocks in use are untouched


def test_default_device_and_aliases():
    auto = "gpu0" if mge.is_cuda_available() else "cpu0"  # what "xpux" means here
    x = mge.Tensor(np.zeros(64, "float32"))  # on the default device
    assert mge.get_allocated_memory() == mge.get_allocated_memory(auto)
    assert mge.get_allocated_memory("xpux") == mge.get_allocated_memory(auto)
    assert mge.get_allocated_memory("cpux") == mge.get_allocated_memory("cpu0")
    assert mge.get_reserved_memory() == mge.get_reserved_memory(auto)
    del x


@pytest.mark.parametrize(
    "fn",
    [
        mge.get_allocated_memory,
        mge.get_reserved_memory,
        mge.get_max_allocated_memory,
        mge.get_max_reserved_memory,
        mge.reset_max_memory_stats,
    ],
)
def test_memory_queries_reject_bad_devices(fn):
    with pytest.raises(TypeError, match="device name"):
        fn(3)
    with pytest.raises(ValueError, match="invalid comp node name"):
        fn("npu0")
    if not mge.is_cuda_available():
        with pytest.raises(RuntimeError, match=r"out of valid range \[0, 0\)"):
            fn("gpu0")


def test_accelerator_backends_other_than_cuda_are_absent():
    assert mge.is_rocm_available() is False
    assert mge.is_cambricon_available() is False
    assert mge.is_atlas_available() is False
    assert mge.get_tensorrt_version() == -1


@pytest.mark.skipif(mge.is_cuda_available(), reason="a CUDA device is present")
def test_cuda_device_queries_raise_without_a_device():
    with pytest.raises(RuntimeError, match=r"out of valid range \[0, 0\)"):
        mge.get_cuda_compute_capability(0)
    with pytest.raises(RuntimeError, match="out of valid range"):
        mge.get_cuda_device_property(0)
    with pytest.raises(RuntimeError, match="out of valid range"):
        mge.get_cuda_compute_capability(-1)
    with pytest.raises(TypeError, match="must be an int"):
        mge.get_cuda_compute_capability("gpu0")
    with pytest.raises(TypeError, match="DeviceType"):
        mge.get_cuda_compute_capability(0, "cuda")


def test_device_type_numbers_are_megengines():
    DT = device.DeviceType
    assert (DT.UNSPEC, DT.CUDA, DT.CPU, DT.CAMBRICON, DT.ROCM, DT.ATLAS) == (0, 1, 2, 3, 8, 9)
    assert (DT.MULTITHREAD, DT.MAX_DEVICE_ID) == (11, 12)


def test_set_prealloc_config_checks_and_warns_like_megengine():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        mge.set_prealloc_config()  # CUDA, the default: accepted silently
        mge.set_prealloc_config(512, 1 << 20, 1 << 20, 1.0, device.DeviceType.CUDA)
    with pytest.warns(UserWarning, match="unsupported device type CPU"):
        mge.set_prealloc_config(device_type=device.DeviceType.CPU)
    bad = [
        ({"alignment": 0}, ValueError),
        ({"min_req": 0}, ValueError),
        ({"max_overhead": -1}, ValueError),
        ({"growth_factor": 0.5}, ValueError),
        ({"growth_factor": float("nan")}, ValueError),
        ({"alignment": "a"}, TypeError),
        ({"min_req": 1.5}, TypeError),
        ({"alignment": True}, TypeError),
        ({"growth_factor": "2"}, TypeError),
        ({"device_type": "cuda"}, TypeError),
    ]
    for kwargs, exc in bad:
        with pytest.raises(exc, match="set_prealloc_config"):
            mge.set_prealloc_config(**kwargs)
