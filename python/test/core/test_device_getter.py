"""Tensor.device, _device_name, _channels_last and _assign as the extension's C getters and
method (docs/architecture.md, *Per-call cost of quantized tensors, devices and assignment*):
one CompNode per comp node, equal to one built from the name, for every tensor on that node
and no other; the uninitialised-tensor and wrong-argument errors."""

import pickle

import numpy as np
import pytest

import megengine as mge
from megengine.core import _imperative_rt as rt
from megengine.core.comp_node import CompNode
from megengine.core.tensor.array_method import device_name


def test_device_is_one_comp_node_per_node():
    a, b = mge.Tensor([1.0], device="cpu0"), mge.Tensor([2.0], device="cpu0")
    d = a.device
    assert type(d) is CompNode and d is a.device is b.device
    fresh = CompNode("cpu0")
    assert d == fresh and hash(d) == hash(fresh) and str(d) == str(fresh) == "cpu0:0"
    assert repr(d) == repr(fresh) and d.physical_locator == fresh.physical_locator
    assert pickle.loads(pickle.dumps(d)) == d


def test_each_node_reads_its_own_device():
    names = ["cpu3", "cpu0", "cpu1:1", "cpu3", "cpu1"]
    tensors = [mge.Tensor([1.0], device=n) for n in names]
    for n, t in zip(names, tensors):
        assert t.device == CompNode(n) and str(t.device) == CompNode(n)
    for n, t in reversed(list(zip(names, tensors))):
        assert t.device == CompNode(n)
    moved = tensors[1].to("cpu2")
    assert str(moved.device) == "cpu2:0" and str(tensors[1].device) == "cpu0:0"
    assert str(mge.Parameter([1.0], device="cpu4").device) == "cpu4:0"


def test_device_name_is_the_runtime_name():
    t = mge.Tensor([1.0], device="cpu1")
    assert type(t._device_name) is str and t._device_name == "cpu1" == device_name(t)
    assert mge.Tensor([1.0], device="cpu1:1")._device_name == "cpu1:1"


def test_device_type_is_the_registered_one():
    t = mge.Tensor([1.0], device="cpu0")
    try:
        rt._set_device_type(lambda name: ("made", name))
        assert t.device == ("made", "cpu0")
        rt._set_device_type(None)
        assert t.device == "cpu0" and type(t.device) is str
    finally:
        rt._set_device_type(CompNode)
    assert type(t.device) is CompNode and t.device == "cpu0:0"


def test_uninitialised_tensor_and_wrong_arguments():
    empty = mge.Tensor.__new__(mge.Tensor)
    for attr in ("device", "_device_name", "_channels_last"):
        with pytest.raises(ValueError, match="has no value"):
            getattr(empty, attr)
    x = mge.Tensor(np.zeros((2,), np.float32))
    with pytest.raises(ValueError, match="has no value"):
        x._assign(empty)
    with pytest.raises(ValueError, match="has no value"):
        empty._assign(x)
    with pytest.raises(TypeError, match="expected a Tensor, got int"):
        x._assign(3)
    np.testing.assert_array_equal(x.numpy(), [0, 0])


def test_assign_and_channels_last():
    x = mge.Tensor(np.zeros((2,), np.float32))
    y = mge.Tensor(np.array([1, 2], np.int32))
    assert x._assign(y) is None
    assert x.dtype == np.int32 and x.numpy().tolist() == [1, 2]
    a = np.arange(2 * 3 * 4 * 4, dtype=np.float32).reshape(2, 3, 4, 4)
    assert mge.Tensor(a, format="nhwc")._channels_last is True
    assert mge.Tensor(a)._channels_last is False
