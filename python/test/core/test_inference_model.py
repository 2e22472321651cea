"""_imperative_rt.InferenceModel: the C++ inference API from Python, on the committed format-1
model file (src/test/fixtures/classifier_v1.nmeg: softmax(relu(data @ W + b)), data (-1, 4))."""

import pathlib

import numpy as np
import pytest

from megengine.core import _imperative_rt as rt

FIXTURE = (
    pathlib.Path(__file__).resolve().parents[3] / "src" / "test" / "fixtures" / "classifier_v1.nmeg"
)
W = np.array([[1, 0, 0], [0, 1, 0], [0, 0, 1], [0.1, 0.1, 0.1]], dtype=np.float32)
B = np.array([0, 0, 0.5], dtype=np.float32)


def reference(x):
    logits = np.maximum(x.astype(np.float32) @ W + B, 0)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_describes_the_model():
    m = rt.InferenceModel(FIXTURE)
    assert m.input_names == ["data"]
    assert m.output_names == ["prob"]
    assert m.inputs == [("data", "float32", (-1, 4))]
    assert m.outputs == [("prob", "float32", (1, 3))]
    assert m.input_shape("data") == (1, 4)
    assert m.user_info == "example classifier"
    assert m.format_version == 1
    assert m.producer.startswith("NeoMeg ")


@pytest.mark.parametrize("source", ["path", "str", "bytes", "bytearray"])
def test_runs_from_a_path_or_bytes(source):
    data = FIXTURE.read_bytes()
    arg = {"path": FIXTURE, "str": str(FIXTURE), "bytes": data, "bytearray": bytearray(data)}
    m = rt.InferenceModel(arg[source])
    x = np.array([[1, 2, 3, 4], [4, 3, 2, 1], [0, 0, 0, 0]], dtype=np.float32)
    m.set_input("data", x)
    m.run()
    out = m.output("prob")
    assert out.dtype == np.float32 and out.shape == (3, 3)
    np.testing.assert_allclose(out, reference(x), rtol=1e-6)


def test_casts_inputs_and_changes_the_dynamic_batch():
    m = rt.InferenceModel(FIXTURE)
    x = np.arange(20, dtype=np.float64).reshape(5, 4)[:, ::-1]  # float64, not contiguous
    m.set_input("data", x)
    assert m.outputs == [("prob", "float32", (5, 3))]
    m.run()
    np.testing.assert_allclose(m.output("prob"), reference(x), rtol=1e-6)
    clone = m.clone()
    clone.set_input("data", x[:2])
    clone.run()
    np.testing.assert_allclose(clone.output("prob"), reference(x[:2]), rtol=1e-6)


def test_errors():
    m = rt.InferenceModel(FIXTURE)
    with pytest.raises(RuntimeError):
        m.output("prob")  # before a run
    with pytest.raises(ValueError, match="not set"):
        m.run()
    with pytest.raises(IndexError, match="no input named"):
        m.set_input("nope", np.zeros((1, 4), np.float32))
    with pytest.raises(ValueError, match="does not fit"):
        m.set_input("data", np.zeros((1, 5), np.float32))
    m.set_input("data", np.zeros((1, 4), np.float32))
    m.run()
    with pytest.raises(IndexError, match="no output named"):
        m.output("nope")
    data = FIXTURE.read_bytes()
    with pytest.raises(rt.ModelError, match="truncated or corrupted"):
        rt.InferenceModel(data[: len(data) // 2])
    with pytest.raises(ValueError, match="not a NeoMeg model"):
        rt.InferenceModel(b"definitely not a model")
    newer = bytearray(data)
    root = int.from_bytes(newer[0:4], "little")
    vtable = root - int.from_bytes(newer[root : root + 4], "little", signed=True)
    version_at = root + int.from_bytes(newer[vtable + 4 : vtable + 6], "little")
    newer[version_at : version_at + 4] = (2).to_bytes(4, "little")
    with pytest.raises(rt.ModelVersionError, match="format version 2 is newer"):
        rt.InferenceModel(bytes(newer))
    assert issubclass(rt.ModelVersionError, rt.ModelError)
    with pytest.raises(FileNotFoundError):
        rt.InferenceModel(FIXTURE.with_name("missing.nmeg"))
