"""megengine.load on files written by the real MegEngine (fixtures/megengine_1_13, made by
fixtures/make_megengine_fixtures.py), on hand-built tensor states that lie, and on corrupted
copies of all of them. Never imports MegEngine: the expected values are in expected.npz/json.

Whatever the file, ``load`` returns objects or raises ``pickle.UnpicklingError`` (its instances
are also ValueErrors) or ``ValueError`` (a device that cannot be used); it never crashes. The
fuzzing runs in a subprocess so that a crash fails a test instead of killing pytest."""

import io
import json
import os
import pickle
import subprocess
import sys
import types

import numpy as np
import pytest

import megengine as mge
from megengine.core import _imperative_rt as _rt
from megengine.core.tensor.dtype import bfloat16

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "megengine_1_13")
with open(os.path.join(HERE, "expected.json")) as _f:
    EXPECTED = json.load(_f)
VALUES = dict(np.load(os.path.join(HERE, "expected.npz")))
FIXTURES = sorted(f[: -len(".mge")] for f in os.listdir(HERE) if f.endswith(".mge"))
LOADABLE = [f for f in FIXTURES if f != "tensor_qint8"]
# What load may raise for a file it cannot use (see its docstring).
CLEAN_ERRORS = (pickle.UnpicklingError, ValueError)


def fixture_path(name):
    return os.path.join(HERE, name + ".mge")


def check_like(out, spec, key):
    """``out`` is what MegEngine's own load gave (``spec``), with NeoMeg's classes."""
    cls = spec["class"]
    if cls in ("Tensor", "Parameter"):
        assert type(out) is getattr(mge, cls), key
        dtype = "bfloat16" if spec["dtype"] == "pybfloat16" else spec["dtype"]
        assert out._dtype_name == dtype, key
        assert out.shape == tuple(spec["shape"]), key
        # MegEngine writes no names: its own load and ours give the default, ""
        assert spec["name"] == "" and out.name == "", key
        assert out.device == _rt.canonical_device(spec["device"]), key
        got = out.numpy()
        if dtype == "bfloat16":
            # MegEngine's numpy() is of its pybfloat16, ours of ml_dtypes' bfloat16 (the same
            # bits); the npz holds the values as float32
            assert got.dtype == bfloat16, key
            got = got.astype(np.float32)
        np.testing.assert_array_equal(got, VALUES[key], err_msg=key)
        assert got.dtype == VALUES[key].dtype, key
    elif cls == "ndarray":
        assert type(out) is np.ndarray and out.dtype.name == spec["dtype"], key
        np.testing.assert_array_equal(out, VALUES[key], err_msg=key)
    elif cls == "dict":
        assert isinstance(out, dict) and sorted(map(str, out)) == sorted(spec["items"]), key
        for k, v in out.items():
            check_like(v, spec["items"][str(k)], f"{key}/{k}")
    elif cls in ("list", "tuple"):
        assert type(out).__name__ == cls and len(out) == len(spec["items"]), key
        for i, (v, s) in enumerate(zip(out, spec["items"])):
            check_like(v, s, f"{key}/{i}")
    else:
        assert type(out).__name__ == cls and out == spec["value"], key


def test_fixture_set_is_complete():
    assert set(FIXTURES) == set(EXPECTED)
    for name in ["tensor_int8", "tensor_0d", "tensor_empty", "parameter_named", "v1_1_tensor_int8"]:
        assert name in FIXTURES


@pytest.mark.parametrize("name", LOADABLE)
def test_megengine_files_load_with_classes_values_dtypes_devices(name):
    if "megengine_1_13_load_error" in EXPECTED[name]:  # a form MegEngine 1.13 cannot read
        assert name == "v1_1_tensor_int8_protocol0"
        spec = EXPECTED["v1_1_tensor_int8"]  # the same tensor at protocol 3
    else:
        spec = EXPECTED[name]
    check_like(mge.load(fixture_path(name)), spec, name)


def test_the_issue_case_int8_tensor():
    t = mge.load(fixture_path("tensor_int8"))
    assert type(t) is mge.Tensor and t._initialized
    assert t.numpy().tolist() == [1, 2, 3] and t.numpy().dtype == np.int8
    assert (t + 1).numpy().tolist() == [2, 3, 4]


def test_shared_tensor_comes_back_as_one_object():
    out = mge.load(fixture_path("list_of_tensors"))
    assert out[2] is out[3]


def params_for(state):
    """NeoMeg parameters shaped as the ones a MegEngine optimizer state dict was saved for."""
    rng = np.random.default_rng(0)
    shapes = [
        state["state"][i]["exp_avg" if "exp_avg" in state["state"][i] else "momentum_buffer"].shape
        for i in range(4)
    ]
    return [mge.Parameter(rng.normal(size=s).astype(np.float32)) for s in shapes]


def test_megengine_sgd_state_dict_resumes_training():
    state = mge.load(fixture_path("sgd_momentum_state_dict"))
    params = params_for(state)
    before = [p.numpy() for p in params]
    sgd = mge.optimizer.SGD(params, lr=0.5, momentum=0.1)
    sgd.load_state_dict(state)
    assert sgd.param_groups[0]["lr"] == 0.1 and sgd.param_groups[0]["momentum"] == 0.9
    for p in params:
        p.grad = mge.Tensor(np.ones(p.shape, np.float32))
    sgd.step()
    for i, (p, p0) in enumerate(zip(params, before)):
        buf = 0.9 * VALUES[f"sgd_momentum_state_dict/state/{i}/momentum_buffer"] + 1.0
        np.testing.assert_allclose(p.numpy(), p0 - 0.1 * buf, rtol=1e-6, atol=1e-7)


def test_megengine_adam_state_dict_resumes_training():
    state = mge.load(fixture_path("adam_state_dict"))
    params = params_for(state)
    before = [p.numpy() for p in params]
    adam = mge.optimizer.Adam(params, lr=0.5)
    adam.load_state_dict(state)
    assert adam.param_groups[0]["lr"] == 0.01
    for p in params:
        p.grad = mge.Tensor(np.full(p.shape, 0.5, np.float32))
    adam.step()
    for i, (p, p0) in enumerate(zip(params, before)):
        key = f"adam_state_dict/state/{i}"
        assert VALUES[f"{key}/step"] == 1.0
        m = 0.9 * VALUES[f"{key}/exp_avg"] + 0.1 * 0.5
        v = 0.999 * VALUES[f"{key}/exp_avg_sq"] + 0.001 * 0.25
        update = (m / (1 - 0.9**2)) / (np.sqrt(v / (1 - 0.999**2)) + 1e-8)
        np.testing.assert_allclose(p.numpy(), p0 - 0.01 * update, rtol=1e-5, atol=1e-6)


def test_megengine_module_state_dict_loads_into_a_module():
    state = mge.load(fixture_path("module_state_dict"))
    assert all(type(v) is np.ndarray for v in state.values())
    fc = mge.module.Linear(3, 2)
    fc.load_state_dict({k[2:]: v for k, v in state.items() if k.startswith("0.")})
    np.testing.assert_array_equal(fc.weight.numpy(), VALUES["module_state_dict/0.weight"])
    np.testing.assert_array_equal(fc.bias.numpy(), VALUES["module_state_dict/0.bias"])
    # the whole model, BatchNorm too: MegEngine saves its (1, C, 1, 1) tensors flattened
    net = mge.module.Sequential(mge.module.Linear(3, 2), mge.module.BatchNorm1d(2))
    net.load_state_dict(state)
    for key in ("1.weight", "1.bias", "1.running_mean", "1.running_var"):
        got = net.state_dict()[key]
        assert got.shape == (2,)  # and saved flattened again, as MegEngine does
        np.testing.assert_array_equal(got, VALUES["module_state_dict/" + key])
    assert net[1].running_var.shape == (1, 2, 1, 1)


def test_normalisation_state_is_flat_and_loads_from_either_shape():
    ln = mge.module.LayerNorm((2, 3))
    assert ln.state_dict()["weight"].shape == (6,)  # MegEngine's flattened form
    ln.load_state_dict({"weight": np.arange(6, dtype=np.float32), "bias": np.zeros((2, 3))})
    np.testing.assert_array_equal(ln.weight.numpy(), np.arange(6).reshape(2, 3))
    bn = mge.module.BatchNorm2d(3)
    bn.load_state_dict({k: np.full((1, 3, 1, 1), 2.0) for k in bn.state_dict()})
    np.testing.assert_array_equal(bn.state_dict()["running_mean"], [2.0, 2.0, 2.0])
    with pytest.raises(ValueError, match="shape"):
        bn.load_state_dict({k: np.ones(4) for k in bn.state_dict()})


class Recurrent(mge.module.Module):
    # the model make_megengine_fixtures.py saved
    def __init__(self):
        super().__init__()
        self.lstm = mge.module.LSTM(3, 4, 2, bidirectional=True)
        self.rnn = mge.module.RNN(3, 5, 1, bias=False)

    def forward(self, x):
        return self.lstm(x)[0], self.rnn(x)[0]


def test_megengine_rnn_checkpoint_computes_as_in_megengine():
    # MegEngine's RNNs compute with _flatten_weights (their cells keep initial values): the
    # loaded model must give MegEngine's outputs, not the stale cells' ones.
    net = Recurrent()
    net.load_state_dict(mge.load(fixture_path("recurrent_state_dict")))
    io = np.load(os.path.join(HERE, "recurrent_outputs.npz"))
    lstm, rnn = net(mge.Tensor(io["x"]))
    np.testing.assert_allclose(lstm.numpy(), io["lstm"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(rnn.numpy(), io["rnn"], rtol=1e-5, atol=1e-6)
    # and what we save holds the same _flatten_weights, for MegEngine to load
    again = net.state_dict()
    for key in ("lstm._flatten_weights", "rnn._flatten_weights"):
        np.testing.assert_array_equal(again[key], VALUES["recurrent_state_dict/" + key])
    fresh = Recurrent()
    fresh.load_state_dict(again)
    np.testing.assert_array_equal(fresh(mge.Tensor(io["x"]))[0].numpy(), lstm.numpy())
    bad = dict(again, **{"rnn._flatten_weights": np.zeros((5, 3), np.float32)})
    with pytest.raises(ValueError, match="rnn._flatten_weights has 15 values"):
        Recurrent().load_state_dict(bad)


@pytest.mark.parametrize(
    "name,saved", [("tensor_cpu1", "cpu1:0"), ("tensor_float32", "xpux:0")], ids=str
)
@pytest.mark.parametrize(
    "map_location,expected",
    [
        ("cpu2", lambda saved: "cpu2"),
        ({"cpu1": "cpu3"}, lambda saved: "cpu3" if saved == "cpu1:0" else None),
        ({"cpu1:0": "cpu2:1"}, lambda saved: "cpu2:1" if saved == "cpu1:0" else None),
        ({"xpux": "cpu3"}, lambda saved: "cpu3" if saved == "xpux:0" else None),
        ({"gpu0": "cpu2"}, lambda saved: None),
        (lambda dev: "cpu0", lambda saved: "cpu0"),
    ],
    ids=["str", "dict", "dict-exact", "dict-xpux", "dict-unmatched", "callable"],
)
def test_map_location_forms_on_megengine_files(name, saved, map_location, expected):
    out = mge.load(fixture_path(name), map_location=map_location)
    assert out.device == (expected(saved) or _rt.canonical_device(saved))
    np.testing.assert_array_equal(out.numpy(), VALUES[name])


@pytest.mark.parametrize("name", ["tensor_cpu1", "v1_1_list", "v1_2_dict", "dict_of_tensors"])
def test_callable_map_location_gets_megengine_device_strings(name):
    seen = []
    out = mge.load(fixture_path(name), map_location=lambda dev: seen.append(dev) or "cpu5")
    saved = {
        "tensor_cpu1": ["cpu1:0"],
        "v1_1_list": ["xpux:0", "cpu1:0"],
        "v1_2_dict": ["xpux:0"],
        "dict_of_tensors": ["xpux:0"] * 3,
    }[name]
    assert seen == saved
    tensors = out if isinstance(out, list) else [out] if isinstance(out, mge.Tensor) else []
    if isinstance(out, dict):
        tensors = [v for v in out.values() if isinstance(v, mge.Tensor)]
    assert tensors and all(t.device == "cpu5" for t in tensors)


def test_old_state_form_follows_map_location():
    # 1.0/1.1 files: the values come through Tensor.__setstate__, which load's map reaches
    out = mge.load(fixture_path("v1_1_list"), map_location={"cpu1": "cpu4"})
    assert out[1].device == "cpu4" and out[1].shape == (0,) and out[1]._dtype_name == "int32"
    out = mge.load(fixture_path("v1_1_tensor_int8_protocol0"), map_location="cpu2")
    assert out.device == "cpu2" and out.numpy().tolist() == [1, 2, 3]


def gpu_file():
    """tensor_cpu1.mge with its device renamed gpu0:0 (same length): a MegEngine GPU tensor."""
    with open(fixture_path("tensor_cpu1"), "rb") as f:
        data = f.read()
    assert data.count(b"cpu1:0") == 1
    return data.replace(b"cpu1:0", b"gpu0:0")


def test_gpu_tensor_maps_to_cpu():
    out = mge.load(io.BytesIO(gpu_file()), map_location={"gpu0": "cpu0"})
    assert out.device == "cpu0"
    np.testing.assert_array_equal(out.numpy(), VALUES["tensor_cpu1"])
    if mge.is_cuda_available():
        assert mge.load(io.BytesIO(gpu_file())).device == "gpu0"
    else:
        with pytest.raises(ValueError, match="cannot place a tensor saved on 'gpu0:0'"):
            mge.load(io.BytesIO(gpu_file()))


def test_quantized_tensor_loads():
    from megengine.core.tensor.dtype import is_dtype_equal, qint8

    out = mge.load(fixture_path("tensor_qint8"))
    # MegEngine stored [1.0, -0.5] cast into the int8 storage as NumPy casts: [1, 0]
    assert is_dtype_equal(out.dtype, qint8(0.5))
    np.testing.assert_array_equal(out.numpy(), [1, 0])


QPARAMS_FIXTURES = ["tensor_qint8_qparams", "tensor_float32_qparams", "tensor_default_qparams"]


def check_qparams(q, spec):
    """NeoMeg's QParams ``q`` holds what MegEngine's own load gave (``spec``)."""
    from megengine.quantization.utils import QParams

    assert type(q) is QParams and spec["class"] == "QParams"
    assert q.mode.name == spec["mode"]
    assert (q.dtype_meta and q.dtype_meta.name) == spec["dtype_meta"]
    for field in ("scale", "zero_point"):
        value = getattr(q, field)
        if spec[field] is None:
            assert value is None, field
        else:
            assert isinstance(value, mge.Tensor), field
            np.testing.assert_array_equal(value.numpy(), spec[field])


@pytest.mark.parametrize("key", QPARAMS_FIXTURES)
def test_tensor_qparams_load_as_megengine_pickled_them(key):
    out = mge.load(fixture_path(key))
    check_like(out, EXPECTED[key], key)
    check_qparams(out.qparams, EXPECTED[key]["qparams"])
    # and survive NeoMeg's own save and load, and pickle
    buf = io.BytesIO()
    mge.save(out, buf)
    buf.seek(0)
    for back in (mge.load(buf), pickle.loads(pickle.dumps(out))):
        check_like(back, EXPECTED[key], key)
        check_qparams(back.qparams, EXPECTED[key]["qparams"])


def test_a_tensor_whose_qparams_were_never_made_pickles_none():
    t = mge.Tensor([1.0])
    back = pickle.loads(pickle.dumps(t))
    assert back.__dict__.get("_qparams") is None
    assert b"qparams" not in pickle.dumps(t)


def test_qparams_pickle_with_megengines_class_names():
    # what MegEngine's Tensor.__setstate__ and unpickler look for
    from megengine.quantization.utils import create_qparams

    t = mge.Tensor([1, 2], dtype="int8")
    t.qparams.update(create_qparams(dtype_meta="qint8", scale=mge.Tensor(0.5)))
    data = pickle.dumps(t)
    for name in (b"qparams", b"megengine.quantization.utils", b"QParams", b"QuantMode"):
        assert name in data
    assert b"megengine.core.tensor.dtype" in data and b"QuantDtypeMeta" in data


def qint4_file():
    """tensor_qint8.mge with its dtype renamed QuantizedS4 (same length), which NeoMeg lacks."""
    with open(fixture_path("tensor_qint8"), "rb") as f:
        data = f.read()
    assert data.count(b"QuantizedS8") == 2  # the array's dtype and the tensor's
    return data.replace(b"QuantizedS8", b"QuantizedS4")


def test_unsupported_quantized_tensor_is_refused_clearly(tmp_path):
    path = str(tmp_path / "qint4.mge")
    with open(path, "wb") as f:
        f.write(qint4_file())
    with pytest.raises(pickle.UnpicklingError, match="quantized dtype QuantizedS4") as e:
        mge.load(path)
    assert isinstance(e.value, ValueError) and repr(path) in str(e.value)


def test_errors_name_the_file(tmp_path):
    data = qint4_file()
    with pytest.raises(ValueError, match="load: the file holds"):
        mge.load(io.BytesIO(data))
    path = tmp_path / "named.mge"
    path.write_bytes(data)
    with open(path, "rb") as f, pytest.raises(ValueError, match="named.mge' holds a tensor"):
        mge.load(f)


# ---- plain pickle.load ------------------------------------------------------------------


def test_plain_pickle_reads_the_old_state_form():
    with open(fixture_path("v1_1_tensor_int8"), "rb") as f:
        t = pickle.load(f)
    assert type(t) is mge.Tensor and t.numpy().tolist() == [1, 2, 3]


@pytest.mark.parametrize("name", ["tensor_int8", "v1_2_tensor_int8", "parameter_named"])
def test_plain_pickle_of_newer_megengine_files_raises_instead_of_crashing(name):
    with open(fixture_path(name), "rb") as f, pytest.raises(ValueError, match="megengine.load"):
        pickle.load(f)


def test_plain_pickle_of_neomeg_tensors_round_trips():
    t = mge.Parameter(np.arange(6, dtype=np.float32).reshape(2, 3))
    for out in (pickle.loads(pickle.dumps(t)), mge.load(io.BytesIO(pickle.dumps(t)))):
        assert type(out) is mge.Parameter
        np.testing.assert_array_equal(out.numpy(), t.numpy())


# ---- hand-built MegEngine states that lie -----------------------------------------------


class Raw:
    """Pickles as the given reduce tuple: states no real object has."""

    def __init__(self, reduce):
        self.reduce = reduce

    def __reduce__(self):
        return self.reduce


def body(obj):
    return pickle.dumps(obj, protocol=2)[2:-1]  # no PROTO header, no STOP


def megengine_pickle(newargs, state, cls=b"Tensor"):
    """A pickle as MegEngine writes a tensor: NEWOBJ megengine.tensor.<cls>(*newargs), then
    BUILD with ``state`` (none when None)."""
    out = b"\x80\x02cmegengine.tensor\n" + cls + b"\n" + body(tuple(newargs)) + pickle.NEWOBJ
    if state is not None:
        out += body(state) + pickle.BUILD
    return out + pickle.STOP


def raw_array(shape, dtype, data):
    """An ndarray pickle with the given (possibly inconsistent) state."""
    # The ndarray's own reconstructor: numpy._core.multiarray._reconstruct under NumPy 2,
    # numpy.core.multiarray._reconstruct under NumPy 1.
    reconstruct = np.ndarray((0,), np.int8).__reduce__()[0]
    return Raw((reconstruct, (np.ndarray, (0,), b"b"), (1, shape, dtype, False, data)))


I8 = np.array([1, 2, 3], np.int8)
OBJECT_I8 = Raw((np.dtype, ("i1", False, True), (3, "|", None, None, None, -1, -1, 1)))
LIES = {
    "dtype-vs-data": ((I8, np.dtype("float32"), "cpu0:0"), {}, "dtype float32 has data of dtype"),
    "bytes-vs-shape": (
        (raw_array((5,), np.dtype("int8"), b"\x01\x02\x03"), "int8", "cpu0"),
        {},
        "buffer size does not match array size",
    ),
    "negative-shape": (
        (raw_array((-3,), np.dtype("int8"), b"\x01\x02\x03"), "int8", "cpu0"),
        {},
        r"a numpy array of shape \(-3,\)",
    ),
    "object-flag-dtype": (
        (raw_array((3,), OBJECT_I8, b"\x01\x02\x03"), "int8", "cpu0"),
        {},
        "a numpy int8 dtype with the object flags 1",
    ),
    "float64": ((np.zeros(2), np.dtype("float64"), "cpu0"), {}, "unsupported tensor dtype"),
    "object-data": ((np.array([None]), np.dtype("O"), "cpu0"), {}, "unsupported tensor dtype"),
    "big-endian": ((I8.astype(">i4"), np.dtype(">i4"), "cpu0"), {}, "unsupported tensor dtype"),
    "9-dims": ((np.zeros((1,) * 9, np.int8), "int8", "cpu0"), {}, "9 dims"),
    "list-data": (([1, 2, 3], np.dtype("int8"), "cpu0"), {}, "must be a numpy array"),
    "int-device": ((I8, np.dtype("int8"), 0), {}, "device must be a string"),
    "bad-device-name": ((I8, np.dtype("int8"), "tpu0"), {}, "cannot place a tensor saved on"),
    "quantized": (
        (I8, np.dtype("int8", metadata={"mgb_dtype": {"name": "QuantizedS8"}}), "cpu0"),
        {},
        "quantized dtype QuantizedS8",
    ),
    "four-args": ((I8, np.dtype("int8"), "cpu0", 1), {}, "with 4 arguments"),
    "unknown-state-key": ((I8, np.dtype("int8"), "cpu0"), {"shape": (9,)}, "with keys"),
    "state-not-dict": ((I8, np.dtype("int8"), "cpu0"), [1], "must be a dict"),
    "data-twice": (
        (I8, np.dtype("int8"), "cpu0"),
        {"data": I8, "dtype": "int8", "device": "cpu0"},
        "has values already",
    ),
    "qparams": ((I8, np.dtype("int8"), "cpu0"), {"qdict": {"scale": 0.5}}, "quantization"),
    "qparams-not-qparams": ((I8, np.dtype("int8"), "cpu0"), {"qparams": 5}, "must be a QParams"),
    "old-form-no-dtype": ((), {"data": I8, "device": "cpu0"}, r"lacks \['dtype'\]"),
    "old-form-no-state": ((), None, "state never came"),
    "old-form-lying-dtype": (
        (),
        {"data": I8, "device": "cpu0", "dtype": np.dtype("bool")},
        "dtype bool has data of dtype int8",
    ),
}


# With pickle's C unpickler (any pickle_module but pickle itself) numpy checks these states
# itself, and the tensor checks see the object-flagged dtype.
C_UNPICKLER_MESSAGES = {
    "negative-shape": "impossible dimension",
    "object-flag-dtype": "a dtype int8 with the flags 1 of another kind",
}


# numpy reports the object-flagged int8 array it frees as an unraisable error
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
@pytest.mark.parametrize("unpickler", ["python", "C"])
@pytest.mark.parametrize("case", sorted(LIES))
def test_lying_tensor_states_are_value_errors(case, unpickler):
    newargs, state, message = LIES[case]
    module = pickle
    if unpickler == "C":
        module = types.SimpleNamespace(Unpickler=pickle.Unpickler)
        message = C_UNPICKLER_MESSAGES.get(case, message)
    data = megengine_pickle(newargs, state)
    f = io.BytesIO(data)
    f.name = "lie.mge"
    with pytest.raises(ValueError, match=message) as e:
        mge.load(f, pickle_module=module)
    if case != "bad-device-name":
        assert isinstance(e.value, pickle.UnpicklingError) and "'lie.mge'" in str(e.value)


def test_hand_built_pickles_are_faithful():
    # the same builder with honest arguments gives a tensor, in both state forms
    t = mge.load(io.BytesIO(megengine_pickle((I8, np.dtype("int8"), "cpu0:0"), {})))
    assert t.numpy().tolist() == [1, 2, 3] and t.device == "cpu0"
    state = {"data": I8, "device": "cpu1:0", "dtype": np.dtype("int8"), "qdict": {"mode": None}}
    p = mge.load(io.BytesIO(megengine_pickle((), state, cls=b"Parameter")))
    assert type(p) is mge.Parameter and p.device == "cpu1" and p.numpy().tolist() == [1, 2, 3]


def test_neomeg_records_with_lies_are_refused():
    from megengine.core.tensor.array_method import _rebuild_tensor
    from megengine.serialization import _rebuild

    cases = [
        (Raw((_rebuild, ("Tensor", I8, "float32", "cpu0"))), "dtype float32 has data"),
        (Raw((_rebuild, ("Buffer", I8, "int8", "cpu0"))), "kind 'Buffer'"),
        (Raw((_rebuild_tensor, (I8, "int8", "cpu0", dict))), "is not a Tensor class"),
        (Raw((_rebuild_tensor, (I8.astype(np.float64), "float64", "cpu0"))), "unsupported"),
    ]
    for obj, message in cases:
        with pytest.raises(ValueError, match=message):
            mge.load(io.BytesIO(pickle.dumps(obj)))


def test_a_stand_in_class_used_as_a_value_still_acts_as_the_class():
    out = mge.load(io.BytesIO(pickle.dumps({"cls": mge.Parameter})))
    cls = out["cls"]
    assert isinstance(mge.Parameter([1.0]), cls) and issubclass(mge.Parameter, cls)
    assert type(cls([2.0])) is mge.Parameter


# ---- crash safety, in subprocesses ------------------------------------------------------

UNINITIALISED = r"""
import copy, pickle, numpy as np, megengine as mge, megengine.functional as F
from megengine.core import _imperative_rt as rt
uses = [
    lambda t: t.numpy(), lambda t: t.shape, lambda t: t.dtype, lambda t: t._dtype_name,
    lambda t: t.ndim, lambda t: t.size, lambda t: t.device, lambda t: t + 1, lambda t: 1 - t,
    lambda t: -t, lambda t: t == t, lambda t: mge.Tensor(t), lambda t: repr(t),
    lambda t: F.exp(t), lambda t: t.reshape(-1), lambda t: t[0], lambda t: t.astype("int32"),
    lambda t: mge.Tensor([1.0])._reset(t), lambda t: t._reset(mge.Tensor([1.0])),
    lambda t: t._detach(), lambda t: copy.deepcopy(t), lambda t: pickle.dumps(t),
    lambda t: mge.save(t, "/dev/null"), lambda t: F.concat([t, t]), lambda t: t.sum(),
]
for cls in (mge.Tensor, mge.Parameter):
    t = cls.__new__(cls)
    assert t._initialized is False
    for i, use in enumerate(uses):
        try:
            use(t)
        except ValueError as e:
            assert "has no value" in str(e), (i, e)
        else:
            raise AssertionError(f"use {i} of an uninitialised {cls.__name__} did not raise")
print("ok")
"""


def run_python(code, *args, timeout=900):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path), PYTHONWARNINGS="ignore")
    return subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
        check=False,
    )


def test_uninitialised_tensor_raises_on_every_use():
    r = run_python(UNINITIALISED)
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stdout + r.stderr


FUZZ = r"""
import io, os, pickle, random, sys
import numpy as np, megengine as mge
from megengine.serialization import load

CLEAN = (pickle.UnpicklingError, ValueError)
status = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
counts = {"loaded": 0, "refused": 0}
bad = []

def use(obj, depth=0):
    # what a caller does with a loaded checkpoint: every tensor must be usable
    if isinstance(obj, mge.Tensor):
        assert obj._initialized and obj.numpy().shape == obj.shape
        if obj.dtype.metadata:  # quantized: dequantized, then computed on
            (obj.astype("float32") + 0).numpy()
        elif obj._dtype_name != "bool":
            (obj + 0).numpy()
    elif isinstance(obj, dict) and depth < 20:
        for v in list(obj.values()):
            use(v, depth + 1)
    elif isinstance(obj, (list, tuple)) and depth < 20:
        for v in obj:
            use(v, depth + 1)

def case(label, data):
    os.pwrite(status, (label + "\n").encode().ljust(200), 0)
    try:
        out = load(io.BytesIO(data))
    except CLEAN:
        counts["refused"] += 1
    except BaseException as e:
        bad.append(f"{label}: load raised {type(e).__name__}: {e}")
    else:
        counts["loaded"] += 1
        try:
            use(out)
        except BaseException as e:
            bad.append(f"{label}: a loaded object failed: {type(e).__name__}: {e}")

rng = random.Random(int(sys.argv[2]))
for path in sys.argv[3:]:
    data = open(path, "rb").read()
    name = os.path.basename(path)
    for n in range(len(data)):
        case(f"{name} prefix {n}", data[:n])
    for i in range(len(data)):
        for x in (0xFF, rng.randrange(1, 255)):
            flipped = bytearray(data)
            flipped[i] ^= x
            case(f"{name} byte {i} ^ {x:#x}", bytes(flipped))
    for k in range(10):
        junk = bytearray(rng.randrange(256) for _ in range(rng.randrange(1, 2 * len(data))))
        if k % 2:
            junk[:2] = data[:2]  # a pickle header, so more of it is parsed
        case(f"{name} random {k}", bytes(junk))
print(counts)
print("\n".join(bad[:20]))
sys.exit(1 if bad else 0)
"""


def neomeg_checkpoint(tmp_path):
    path = tmp_path / "neomeg.mge"
    t = mge.Tensor(np.arange(4, dtype=np.int32))
    mge.save({"p": mge.Parameter([1.0, 2.5], dtype="bfloat16"), "t": [t, t], "n": 1}, path)
    return str(path)


@pytest.mark.parametrize("group", range(3))
def test_fuzzed_files_load_or_raise_cleanly_never_crash(tmp_path, group):
    paths = [fixture_path(n) for n in FIXTURES] + [neomeg_checkpoint(tmp_path)]
    mine = paths[group::3]
    status = tmp_path / "status"
    r = run_python(FUZZ, str(status), str(group), *mine)
    where = status.read_text().strip() if status.exists() else "?"
    assert r.returncode == 0, f"rc {r.returncode} at [{where}]\n{r.stdout}\n{r.stderr[-3000:]}"
    counts = eval(r.stdout.splitlines()[0])  # our own child's dict repr
    assert counts["loaded"] > 0 and counts["refused"] > 0
