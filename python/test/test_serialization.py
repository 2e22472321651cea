"""megengine.save / megengine.load: round trips, map_location, atomic saves, bad files."""

import copyreg
import io
import os
import pickle
import pickletools

import numpy as np
import pytest

import megengine as mge
import megengine.optimizer as optim

DTYPES = ["float32", "float16", "bfloat16", "int32", "int16", "int8", "uint8", "bool"]


def roundtrip(obj, **kw):
    buf = io.BytesIO()
    mge.save(obj, buf)
    buf.seek(0)
    return mge.load(buf, **kw)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 0, 3), (4, 5)], ids=str)
def test_tensor_roundtrip_keeps_values_dtype_device(dtype, shape):
    rng = np.random.default_rng(0)
    a = (rng.normal(size=shape) * 5).astype("float32")
    t = mge.Tensor(a, dtype=dtype)
    out = roundtrip(t)
    assert type(out) is mge.Tensor
    assert out._dtype_name == dtype and out.shape == shape and out.device == t.device
    np.testing.assert_array_equal(out.numpy(), t.numpy())


def test_parameters_nested_structures_and_views():
    rng = np.random.default_rng(1)
    w = mge.Parameter(rng.normal(size=(3, 4)).astype(np.float32))
    view = mge.Tensor(rng.normal(size=(4, 3)).astype(np.float32)).T
    obj = {"model": {"w": w, "views": [view, (view, 2)]}, "epoch": 7, "arr": np.arange(3)}
    out = roundtrip(obj)
    assert type(out["model"]["w"]) is mge.Parameter
    np.testing.assert_array_equal(out["model"]["w"].numpy(), w.numpy())
    np.testing.assert_array_equal(out["model"]["views"][0].numpy(), view.numpy())
    assert out["model"]["views"][1][1] == 2 and out["epoch"] == 7
    np.testing.assert_array_equal(out["arr"], np.arange(3))
    assert out["model"]["views"][1][0] is out["model"]["views"][0]  # saved once, shared


def test_optimizer_state_dict_checkpoint_resumes():
    w = mge.Parameter([1.0, -1.0])
    opt = optim.Adam([w], lr=0.1)
    w.grad = mge.Tensor([0.5, 0.25])
    opt.step()
    ckpt = roundtrip({"w": w, "opt": opt.state_dict()})
    w2 = ckpt["w"]
    opt2 = optim.Adam([w2], lr=0.1)
    opt2.load_state_dict(ckpt["opt"])
    for p, o in ((w, opt), (w2, opt2)):
        p.grad = mge.Tensor([0.5, 0.25])
        o.step()
    np.testing.assert_array_equal(w2.numpy(), w.numpy())


@pytest.mark.parametrize(
    "map_location,expected",
    [
        (None, "cpu0"),
        ("cpu1", "cpu1"),
        ({"cpu0": "cpu2"}, "cpu2"),
        ({"gpu0": "cpu2"}, "cpu0"),
        ({"cpu0": "cpu2", "cpu0:1": "cpu1"}, "cpu2"),
        (lambda dev: dev.replace("0", "3"), "cpu3"),
    ],
    ids=["none", "str", "dict", "dict-unmatched", "dict-exact-first", "callable"],
)
def test_map_location(map_location, expected):
    out = roundtrip({"a": mge.Tensor([1.0], device="cpu0")}, map_location=map_location)
    assert out["a"].device == expected
    np.testing.assert_array_equal(out["a"].numpy(), [1.0])


def test_map_location_errors():
    with pytest.raises(TypeError, match="map_location must be None, a device string"):
        roundtrip(mge.Tensor([1.0]), map_location=3)
    with pytest.raises(TypeError, match="map_location must return a device string"):
        roundtrip(mge.Tensor([1.0]), map_location=lambda d: 0)
    with pytest.raises(ValueError, match="cannot place a tensor saved on 'cpu0' .*invalid comp"):
        roundtrip(mge.Tensor([1.0]), map_location="tpu0")


def test_save_to_path_and_pathlike(tmp_path):
    path = tmp_path / "ckpt.mge"
    mge.save({"x": mge.Tensor([1, 2])}, path)
    assert mge.load(path)["x"].numpy().tolist() == [1, 2]
    mge.save([3], str(path))
    assert mge.load(str(path)) == [3]
    assert os.listdir(tmp_path) == ["ckpt.mge"]  # no temporary file is left


class Exploding:
    def __reduce__(self):
        raise RuntimeError("crash in the middle of the save")


def test_interrupted_save_keeps_the_old_checkpoint(tmp_path):
    path = tmp_path / "ckpt.mge"
    mge.save({"w": mge.Tensor(np.arange(1000, dtype=np.float32))}, path)
    before = path.read_bytes()
    big = {"w": mge.Tensor(np.zeros(100000, np.float32)), "z": Exploding()}
    with pytest.raises(RuntimeError, match="crash in the middle"):
        mge.save(big, path)
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["ckpt.mge"]
    np.testing.assert_array_equal(mge.load(path)["w"].numpy(), np.arange(1000))


def test_truncated_checkpoints_raise_clear_errors(tmp_path):
    path = tmp_path / "ckpt.mge"
    mge.save({"w": mge.Parameter(np.ones((16, 16), np.float32)), "n": 1}, path)
    data = path.read_bytes()
    for cut in (0, 1, 10, len(data) // 2, len(data) - 1):
        path.write_bytes(data[:cut])
        with pytest.raises(pickle.UnpicklingError, match="truncated or is not a checkpoint"):
            mge.load(path)


@pytest.mark.parametrize(
    "payload",
    [b"hello, this is a text file\n", b"PK\x03\x04" + bytes(60), bytes(range(256)), b"\x80\x05"],
    ids=["text", "zip", "binary", "header-only"],
)
def test_foreign_files_raise_clear_errors(tmp_path, payload):
    path = tmp_path / "foreign.bin"
    path.write_bytes(payload)
    with pytest.raises(pickle.UnpicklingError, match=r"'.*foreign.bin' is truncated or is not"):
        mge.load(path)


def test_bad_arguments():
    with pytest.raises(TypeError, match="save: f must be a path or a writable file"):
        mge.save({}, 3)
    with pytest.raises(TypeError, match="load: f must be a path or a readable file"):
        mge.load(3)
    with pytest.raises(FileNotFoundError):
        mge.load("/nonexistent/ckpt.mge")


def test_plain_pickles_of_tensors_load_too():
    buf = io.BytesIO(pickle.dumps({"t": mge.Tensor([1.5, 2.5])}))
    assert mge.load(buf)["t"].numpy().tolist() == [1.5, 2.5]
    buf = io.BytesIO()
    mge.save({"p": mge.Parameter([1.0], dtype="float16")}, buf)
    p = pickle.loads(buf.getvalue())["p"]  # and plain pickle reads megengine.save's files
    assert type(p) is mge.Parameter and p._dtype_name == "float16"


def _globals_and_opcodes(data):
    ops = list(pickletools.genops(data))
    names = [str(arg) for op, arg, _ in ops if op.name in ("SHORT_BINUNICODE", "BINUNICODE")]
    return names, {op.name for op, _, _ in ops}


def test_files_are_in_megengine_form():
    # What MegEngine 1.13 reads (its Tensor.__setstate__ takes the state form MegEngine 1.0
    # wrote): the class made without arguments (NEWOBJ), then {"data", "dtype", "device"}.
    # Checked against MegEngine itself when this was written: it loads every dtype but bfloat16
    # (whose NumPy dtype is MegEngine's own type) with values, dtypes, Parameter kinds and
    # quantization scales intact.
    buf = io.BytesIO()
    mge.save({"t": mge.Tensor([1.0]), "p": mge.Parameter([2.0])}, buf)
    names, opcodes = _globals_and_opcodes(buf.getvalue())
    assert "NEWOBJ" in opcodes and "BUILD" in opcodes
    assert {"megengine", "Tensor", "megengine.tensor", "Parameter"} <= set(names)
    assert "_rebuild" not in names and "_rebuild_tensor" not in names
    assert {"data", "dtype", "device"} <= set(names)
    t = mge.Tensor([1.5, 2.5])
    cls_new, args, state = t.__reduce__()
    assert cls_new is copyreg.__newobj__ and args == (mge.Tensor,)
    assert state["dtype"] == "float32" and state["device"] == "cpu0"
    np.testing.assert_array_equal(state["data"], [1.5, 2.5])


def test_megengine_pickling_methods():
    # MegEngine 1.13's own test_serialization: the values as constructor arguments (array,
    # dtype, the device's logical name) and a state that holds the qparams once made
    x = mge.Tensor([1, 2, 3], dtype=np.float32)
    array, dtype, device = x.__getnewargs__()
    np.testing.assert_array_equal(array, [1, 2, 3])
    assert dtype == x.dtype == np.float32 and device == x.device.logical_name
    assert x.__getstate__() == {}
    q = x.qparams
    assert x.__getstate__() == {"qparams": q} and x.__getstate__()["qparams"] is q
    # they rebuild the tensor as MegEngine's unpickler does
    y = mge.Tensor(*x.__getnewargs__())
    y.__setstate__(x.__getstate__())
    np.testing.assert_array_equal(y.numpy(), x.numpy())
    assert y.qparams is q
    i8 = mge.Tensor([1, -2], dtype="int8")
    assert i8.__getnewargs__()[1] == np.int8


def test_files_of_earlier_neomeg_versions_still_load():
    # Earlier NeoMeg wrote a tensor as a call of serialization._rebuild (megengine.save) or of
    # array_method._rebuild_tensor (a plain pickle).
    from megengine.core.tensor import array_method
    from megengine.serialization import _rebuild

    def old_pickle(obj, plain):
        class OldPickler(pickle.Pickler):
            def reducer_override(self, t):
                if not isinstance(t, mge.Tensor):
                    return NotImplemented
                if plain:
                    return (
                        array_method._rebuild_tensor,
                        (t.numpy(), t._dtype_name, "cpu0", type(t)),
                    )
                kind = "Parameter" if isinstance(t, mge.Parameter) else "Tensor"
                return (_rebuild, (kind, t.numpy(), t._dtype_name, "cpu0"))

        buf = io.BytesIO()
        OldPickler(buf).dump(obj)
        return buf.getvalue()

    obj = {"w": mge.Parameter([1.0, 2.0]), "t": mge.Tensor([3], dtype="int8")}
    for plain in (False, True):
        for load in (lambda b: mge.load(io.BytesIO(b)), pickle.loads):
            out = load(old_pickle(obj, plain))
            assert type(out["w"]) is mge.Parameter and out["w"].numpy().tolist() == [1.0, 2.0]
            assert out["t"]._dtype_name == "int8" and out["t"].numpy().tolist() == [3]


def test_killed_process_mid_save_keeps_the_old_checkpoint(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "ckpt.mge"
    mge.save({"w": mge.Tensor(np.arange(10, dtype=np.float32))}, path)
    before = path.read_bytes()
    child = f"""
import os, numpy as np, megengine as mge
class Die:
    def __reduce__(self):
        os._exit(3)  # the process dies with the checkpoint half written
mge.save({{"w": mge.Tensor(np.zeros(1 << 20, np.float32)), "z": Die()}}, {str(path)!r})
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    assert subprocess.run([sys.executable, "-c", child], check=False, env=env).returncode == 3
    assert path.read_bytes() == before
    leftovers = [p for p in os.listdir(tmp_path) if p != "ckpt.mge"]
    assert len(leftovers) == 1 and leftovers[0].startswith(".ckpt.mge.")  # the hidden temporary
    assert os.path.getsize(tmp_path / leftovers[0]) > (1 << 20)  # which was half written
    np.testing.assert_array_equal(mge.load(path)["w"].numpy(), np.arange(10))


@pytest.mark.parametrize("protocol", range(pickle.HIGHEST_PROTOCOL + 1))
def test_every_pickle_protocol(protocol):
    t = mge.Parameter([1.0, 2.5], dtype="bfloat16")
    buf = io.BytesIO()
    mge.save({"a": t, "b": [t]}, buf, pickle_protocol=protocol)
    buf.seek(0)
    out = mge.load(buf, pickle_module=pickle)
    assert type(out["a"]) is mge.Parameter and out["a"]._dtype_name == "bfloat16"
    assert out["b"][0] is out["a"]
    assert out["a"].numpy().tolist() == [1.0, 2.5]
