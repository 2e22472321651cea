"""GPU devices from Python: the answers without a GPU (always run) and tensors on a GPU (marked
``gpu``; they skip with "no CUDA device" where there is none)."""

import ctypes.util
import os
import subprocess
import sys

import numpy as np
import pytest

import megengine as mge
from megengine.core import _imperative_rt as _rt

HAS_GPU = mge.is_cuda_available()


def on_gpu(test):
    """Marks a test ``gpu`` and skips it, saying so in one line, where there is no GPU."""
    return pytest.mark.gpu(pytest.mark.skipif(not HAS_GPU, reason="no CUDA device")(test))


no_gpu = pytest.mark.skipif(HAS_GPU, reason="a CUDA device is present")
needs_kernels = pytest.mark.skipif(
    not _rt.cuda_kernels_available(), reason="CUDA kernels are not built"
)


def test_import_prints_nothing():
    # MegEngine prints a banner (and "failed to load cuda func") on a machine without a GPU.
    code = (
        "import megengine as m; m.is_cuda_available(); m.Tensor([1.0]).numpy(); "
        "m.get_cuda_version(); m.get_cuda_driver_version()"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    r = subprocess.run(
        [sys.executable, "-c", code], check=False, capture_output=True, text=True, env=env
    )
    assert r.returncode == 0, r.stderr
    assert (r.stdout, r.stderr) == ("", "")


def test_versions_are_the_builds():
    cuda, cudnn = mge.get_cuda_version(), mge.get_cudnn_version()
    assert (cuda == -1) == (cudnn == -1)  # both from one build switch
    if cuda == -1:
        assert mge.get_cuda_driver_version() == -1
        return
    assert cuda >= 12000 and cuda % 10 == 0
    assert cudnn >= 90000
    assert _rt.get_cuda_runtime_version() // 1000 == cuda // 1000
    if ctypes.util.find_library("cuda") is None:  # no driver on this machine
        assert mge.get_cuda_driver_version() == 0
    else:
        assert mge.get_cuda_driver_version() >= 0


@no_gpu
def test_no_gpu_answers():
    assert mge.is_cuda_available() is False
    assert mge.get_device_count("gpu") == 0
    reason = _rt.cuda_unavailable_reason()
    assert reason
    for make in (
        lambda: mge.Tensor([1.0], device="gpu0"),
        lambda: mge.Tensor([1.0]).to("gpu0"),
        lambda: mge.Tensor([1.0]).to("gpu0:1"),
        lambda: mge.get_mem_status_bytes("gpu0"),
        lambda: mge.get_cuda_compute_capability(0),
    ):
        with pytest.raises(RuntimeError, match=r"out of valid range \[0, 0\)") as e:
            make()
        assert reason in str(e.value)
    assert mge.get_default_device() == "cpu0"


@pytest.mark.parametrize("bad", ["gpu", "gpuA", "gpu0:", "gpu0:x", "gpu-1"])
def test_bad_gpu_names_are_value_errors(bad):
    with pytest.raises(ValueError, match="invalid comp node name"):
        mge.Tensor([1.0], device=bad)


def test_to_between_cpu_nodes_keeps_values():
    a = np.arange(24, dtype="float32").reshape(2, 3, 4)
    x = mge.Tensor(a, device="cpu0")
    y = x.to("cpu1")
    assert y.device == "cpu1:0" and x.device == "cpu0:0"
    np.testing.assert_array_equal(y.numpy(), a)
    t = x.transpose(2, 0, 1).to("cpu2:1")  # strided: gathered on the way
    np.testing.assert_array_equal(t.numpy(), a.transpose(2, 0, 1))
    assert t.device == "cpu2:1"


def test_mem_status_of_a_cpu():
    total, free = mge.get_mem_status_bytes("cpu0")
    assert total == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    assert 0 < free <= total


# ---- on a GPU ----


@pytest.mark.parametrize("dtype", ["float32", "float16", "int32", "uint8", "bool", "int8"])
@pytest.mark.parametrize("shape", [(), (0,), (3, 5), (1000, 1000)])
@on_gpu
def test_values_round_trip_through_a_gpu(dtype, shape):
    rng = np.random.default_rng(0)
    a = (rng.standard_normal(shape) * 50).astype(dtype)
    x = mge.Tensor(a, device="gpu0")
    assert x.device == "gpu0:0"
    got = x.numpy()
    assert got.dtype == a.dtype and got.shape == a.shape
    np.testing.assert_array_equal(got, a)


@on_gpu
def test_to_moves_between_cpu_and_gpu_streams():
    a = np.random.default_rng(1).standard_normal((64, 1024, 160)).astype("float32")  # 40 MiB
    x = mge.Tensor(a)
    g = x.to("gpu0")
    g1 = g.to("gpu0:1")  # another stream: waits for the upload
    back = g1.to("cpu0")
    assert (g.device, g1.device, back.device) == ("gpu0:0", "gpu0:1", "cpu0:0")
    np.testing.assert_array_equal(back.numpy(), a)
    np.testing.assert_array_equal(g1.numpy(), a)
    # a strided CPU tensor is gathered on the CPU before the upload
    t = x[:, :3].to("gpu0")
    np.testing.assert_array_equal(t.numpy(), a[:, :3])


@on_gpu
def test_default_device_and_properties():
    assert mge.get_device_count("gpu") >= 1
    assert mge.get_default_device().startswith(("gpu0", "cpu")) is True
    try:
        mge.set_default_device("gpu0")
        assert mge.Tensor([1.0, 2.0]).device == "gpu0:0"
        np.testing.assert_array_equal(mge.Tensor([1.0, 2.0]).numpy(), [1.0, 2.0])
    finally:
        mge.set_default_device("xpux")
    prop = mge.get_cuda_device_property(0)
    assert prop.major >= 7 and prop.name
    assert mge.get_cuda_compute_capability(0) == prop.major * 10 + prop.minor
    total, free = mge.get_mem_status_bytes("gpu0")
    assert abs(total - prop.total_memory) <= prop.total_memory // 100 and 0 < free <= total
    assert mge.get_cuda_driver_version() >= mge.get_cuda_version() // 1000 * 1000
    with pytest.raises(RuntimeError, match="out of valid range"):
        mge.get_cuda_compute_capability(mge.get_device_count("gpu"))


@on_gpu
def test_gpu_memory_statistics():
    dev = "gpu0:7"  # a queue of its own: nothing else allocates there
    mge.reset_max_memory_stats(dev)
    before = mge.get_allocated_memory(dev)
    x = mge.Tensor(np.zeros(1024, "float32"), device=dev)
    assert mge.get_allocated_memory(dev) - before == 4096
    del x
    mge._full_sync()
    assert mge.get_allocated_memory(dev) == before
    assert mge.get_max_allocated_memory(dev) - before == 4096
    assert mge.get_reserved_memory(dev) >= before + 4096  # cached for reuse
    mge.coalesce_free_memory()
    assert mge.get_reserved_memory(dev) == mge.get_allocated_memory(dev)


@on_gpu
@needs_kernels
def test_out_of_memory_is_a_runtime_error_naming_the_request():
    import megengine.functional as F

    total, _ = mge.get_mem_status_bytes("gpu0")
    n = total // 4 + (1 << 28)
    with pytest.raises(RuntimeError, match=r"out of memory on gpu0(:0)?: tried to allocate") as e:
        F.full((n,), 0.0, device="gpu0")
    assert f"({n * 4} bytes" in str(e.value)
    assert "reserved" in str(e.value) and "bytes free" in str(e.value)
    # the device still works
    np.testing.assert_array_equal(mge.Tensor([3.0], device="gpu0").numpy(), [3.0])


@on_gpu
@needs_kernels
def test_strided_gpu_tensor_reads_back():
    a = np.arange(60, dtype="float32").reshape(3, 4, 5)
    g = mge.Tensor(a, device="gpu0")
    np.testing.assert_array_equal(g.transpose(2, 0, 1).numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal(g.transpose(2, 0, 1).to("cpu0").numpy(), a.transpose(2, 0, 1))
    np.testing.assert_array_equal((g * 2).numpy(), a * 2)
