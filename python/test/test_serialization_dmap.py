"""megengine.serialization.dmap: MegEngine's device map for tensors unpickled in a block."""

import io
import pickle

import pytest

import megengine as mge
from megengine.serialization import dmap


def _saved(obj):
    buf = io.BytesIO()
    mge.save(obj, buf)
    return buf.getvalue()


def test_plain_pickle_inside_dmap_moves_tensors_and_parameters():
    data = pickle.dumps([mge.Tensor([1.0], device="cpu0"), mge.Parameter([2.0], device="cpu2")])
    seen = []

    def to_cpu1(device):
        seen.append(device)
        return "cpu1"

    with dmap(to_cpu1) as dm:
        assert isinstance(dm, dmap) and dm.map_location is to_cpu1
        t, p = pickle.loads(data)
    assert seen == ["cpu0", "cpu2"]  # the callback gets the saved device names
    assert (t.device, p.device) == ("cpu1", "cpu1") and isinstance(p, mge.Parameter)
    assert p.numpy().tolist() == [2.0]
    t, p = pickle.loads(data)  # outside the block nothing is mapped
    assert (t.device, p.device) == ("cpu0", "cpu2")
    assert mge.Tensor.dmap_callback is None


def test_load_uses_dmap_unless_given_a_map_location():
    data = _saved({"w": mge.Parameter([1.0, 2.0], device="cpu0")})
    with dmap(lambda device: "cpu3"):
        assert mge.load(io.BytesIO(data))["w"].device == "cpu3"
        assert mge.load(io.BytesIO(data), map_location="cpu4")["w"].device == "cpu4"
        assert pickle.load(io.BytesIO(data))["w"].device == "cpu3"
    assert mge.load(io.BytesIO(data))["w"].device == "cpu0"


def test_nested_blocks_restore_the_outer_map_and_errors_restore_too():
    data = pickle.dumps(mge.Tensor([1.0], device="cpu0"))
    with dmap(lambda device: "cpu1"):
        with dmap(lambda device: "cpu2"):
            assert pickle.loads(data).device == "cpu2"
        assert pickle.loads(data).device == "cpu1"
    with pytest.raises(KeyError), dmap(lambda device: "cpu5"):
        raise KeyError("inside")
    assert mge.Tensor.dmap_callback is None


def test_bad_map_locations_raise():
    with pytest.raises(TypeError, match="dmap: map_location must be a callable"):
        dmap("cpu1")
    data = pickle.dumps(mge.Tensor([1.0]))
    with dmap(lambda device: "npu0"), pytest.raises(ValueError, match="invalid comp node name"):
        pickle.loads(data)
    with dmap(lambda device: 7), pytest.raises(TypeError, match="device string"):
        mge.load(io.BytesIO(_saved(mge.Tensor([1.0]))))
    assert mge.Tensor.dmap_callback is None
