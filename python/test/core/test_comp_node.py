"""Tensor.device as MegEngine's comp-node object: str, repr, equality, locator, and that a device
object goes wherever a device name does. Names, reprs and locators are MegEngine 1.13's for a
node asked for by its physical name; equality is by physical node here (MegEngine compares the
logical names, so there a "cpu0" tensor's device differs from "xpux")."""

import copy
import io
import pickle

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.core.comp_node import CompNode


def test_device_is_a_comp_node_with_megengine_names():
    d = mge.Tensor([1.0], device="cpu1").device
    assert isinstance(d, CompNode)
    assert str(d) == "cpu1:0" and f"{d}" == "cpu1:0"
    assert repr(d) == 'CompNode("cpu1:0" from "cpu1:0")'
    assert d.logical_name == d.physical_name == "cpu1:0"
    assert d.physical_locator == ["cpu", 1, 0]
    s = CompNode("cpu0:2")
    assert str(s) == "cpu0:2" and s.physical_locator == ["cpu", 0, 2]
    assert str(CompNode("cpu3")) == "cpu3:0"
    assert mge.Parameter([1.0], device="cpu2").device.physical_locator == ["cpu", 2, 0]


def test_equality_with_names_and_nodes():
    d = mge.Tensor([1.0], device="cpu0").device
    # xpux and cpux resolve to cpu0 on a machine without a GPU.
    for same in ("cpu0", "cpu0:0", "cpux", "xpux", "xpux:0", CompNode("cpu0")):
        assert d == same and same == d, same
        assert (d != same) is False, same
    for other in ("cpu1", "cpu0:1", "bogus", "", None, 3, 0.5):
        assert d != other, other
        assert (d == other) is False, other
    assert hash(d) == hash(CompNode("cpux")) == hash("cpu0:0")
    assert {d: 1}[CompNode("xpux")] == 1
    assert d in ["cpu2", "cpu0"] and "cpu0" in [d]


def test_megengine_locators():
    # What MegEngine 1.13 resolved each name to on a machine without a GPU (where there is one,
    # "xpu" names the GPU instead).
    if mge.is_cuda_available():
        pytest.skip("xpu<N> resolves to a GPU here")
    for name, want in [
        ("xpu0", "cpu0:0"),
        ("xpu2", "cpu2:0"),
        ("xpu0:2", "cpu0:2"),
        ("xpu", "cpu0:0"),
        ("xpu:1", "cpu0:1"),
        ("cpu:1", "cpu0:1"),
        ("cpux:1", "cpu0:1"),
        ("cpu00", "cpu0:0"),
    ]:
        assert str(mge.Tensor([1.0], device=name).device) == want, name
    mge.set_default_device("xpu1")
    try:
        assert mge.Tensor([1.0]).device == "cpu1"
    finally:
        mge.set_default_device("xpux")
    for bad in ("cpu", "gpu", "CPU0", "cpu 0", "xpu0:x"):
        with pytest.raises(ValueError, match="is not a device"):
            CompNode(bad)


def test_bad_names():
    with pytest.raises(ValueError, match="'bogus' is not a device"):
        CompNode("bogus")
    with pytest.raises(ValueError, match="'gpu0' is not a device"):
        CompNode("gpu0")  # no CUDA device on this machine
    with pytest.raises(TypeError, match="a device name is a str"):
        CompNode(0)


def test_device_object_goes_wherever_a_name_does():
    d = mge.Tensor([1.0], device="cpu1").device
    assert mge.Tensor([2.0], device=d).device == "cpu1"
    assert mge.Tensor([2.0]).to(d).device == "cpu1"
    assert F.copy(mge.Tensor([2.0]), d).device == "cpu1"
    assert F.zeros((2,), device=d).device == "cpu1"
    assert F.concat([mge.Tensor([1.0]), mge.Tensor([2.0])], device=d).device == "cpu1"
    total, free = mge.get_mem_status_bytes(d)
    assert 0 < free <= total
    assert d.get_mem_status_bytes[0] == total
    mge.set_default_device(d)
    try:
        assert mge.Tensor([1.0]).device == "cpu1"
    finally:
        mge.set_default_device("xpux")
    buf = io.BytesIO()
    mge.save({"w": mge.Tensor([1.0])}, buf)
    buf.seek(0)
    assert mge.load(buf, map_location=d)["w"].device == "cpu1"


def test_memory_properties_count_this_node():
    d = CompNode("cpu5")
    before = d.get_used_memory
    t = mge.Tensor(np.zeros(1 << 16, np.float32), device="cpu5")
    assert d.get_used_memory >= before + 4 * (1 << 16)
    assert d.get_max_used_memory >= d.get_used_memory
    assert d.get_reserved_memory >= d.get_used_memory
    del t


def test_pickles_hold_names_not_nodes():
    d = mge.Tensor([1.0]).device
    assert pickle.loads(pickle.dumps(d)) == d
    assert type(copy.deepcopy(d)) is CompNode
    # A tensor's pickle and a checkpoint name the device by a plain string.
    t = mge.Tensor([1.0, 2.0], device="cpu1")
    data = pickle.dumps(t)
    assert b"CompNode" not in data and b"comp_node" not in data
    assert pickle.loads(data).device == "cpu1"
    buf = io.BytesIO()
    mge.save(t, buf)
    assert b"CompNode" not in buf.getvalue()
