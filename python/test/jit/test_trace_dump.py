"""trace.dump writes a model file that GraphInference (the C++ loader) runs with the traced
function's results: names, constants captured from parameters, in-place-updated tensors, dict
results, the optimization passes, atomic writes, and MegEngine's errors."""

import inspect
import io
import os

import numpy as np
import pytest
from megengine.core._imperative_rt import InferenceModel, ModelError

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.jit import trace
from megengine.utils.comp_graph_tools import GraphInference


def dumped(fn, *args, **dump_kwargs):
    f = trace(fn, capture_as_const=True)
    result = f(*args)
    buf = io.BytesIO()
    f.dump(buf, **dump_kwargs)
    return result, buf.getvalue()


def test_signature_has_megengine_keywords():
    params = inspect.signature(trace.dump).parameters
    for name in (
        "arg_names", "output_names", "append", "keep_var_name", "keep_opr_name",
        "keep_param_name", "optimize_for_inference", "user_info", "enable_metadata",
        "input_data", "dump_format", "model_version",
    ):  # fmt: skip
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
    assert params["optimize_for_inference"].default is True
    assert params["keep_var_name"].default == 1


def test_module_in_eval_mode_round_trips():
    rng = np.random.default_rng(0)
    net = M.Sequential(M.Conv2d(2, 4, 3, padding=1), M.BatchNorm2d(4), M.ReLU())
    # Non-trivial running statistics so eval-mode BatchNorm matters.
    net[1].running_mean[...] = mge.Tensor(rng.standard_normal((1, 4, 1, 1)).astype("float32"))
    net[1].running_var[...] = mge.Tensor(rng.uniform(0.5, 2, (1, 4, 1, 1)).astype("float32"))
    net.eval()
    x = rng.standard_normal((3, 2, 5, 5)).astype("float32")
    expect = net(mge.Tensor(x)).numpy()
    result, data = dumped(lambda t: F.softmax(F.flatten(net(t), 1)), mge.Tensor(x), arg_names=["data"],
                          output_names="prob")  # fmt: skip
    g = GraphInference(data)
    assert g.input_names == ["data"] and g.output_names == ["prob"]
    out = g.run(x)["prob"]
    np.testing.assert_allclose(out, result.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(
        out, F.softmax(F.flatten(mge.Tensor(expect), 1)).numpy(), rtol=1e-5, atol=1e-6
    )
    # Other input values: the parameters are constants, the input is not.
    x2 = rng.standard_normal((3, 2, 5, 5)).astype("float32")
    np.testing.assert_allclose(
        g.run(inp_dict={"data": x2})["prob"],
        F.softmax(F.flatten(net(mge.Tensor(x2)), 1)).numpy(),
        rtol=1e-5,
        atol=1e-6,
    )


def test_default_names_dict_results_and_kwargs():
    a, b = mge.Tensor([1.0, 2.0]), mge.Tensor([3.0, 5.0])
    _, data = dumped(lambda x, y: (x + y, x * y), a, b)
    g = GraphInference(data)
    assert g.input_names == ["arg_0", "arg_1"]
    out = g.run(np.array([1.0, 2.0], "float32"), np.array([3.0, 5.0], "float32"))
    assert list(out) == ["output_0", "output_1"]
    np.testing.assert_array_equal(out["output_1"], [3.0, 10.0])

    f = trace(lambda x, *, scale: {"s": x * scale, "d": x - scale}, capture_as_const=True)
    f(a, scale=b)
    buf = io.BytesIO()
    f.dump(buf)
    g = GraphInference(buf.getvalue())
    assert sorted(g.input_names) == ["arg_0", "scale"]
    out = g.run(inp_dict={"arg_0": np.ones(2, "float32"), "scale": np.full(2, 2.0, "float32")})
    assert list(out) == ["s", "d"]
    np.testing.assert_array_equal(out["d"], [-1.0, -1.0])
    with pytest.raises(TypeError, match="dict format"):
        f.dump(io.BytesIO(), output_names=["p", "q"])


def test_outputs_subset_and_bad_inputs():
    _, data = dumped(lambda x: (x + 1, x * 3), mge.Tensor([1.0]), output_names=["p", "q"])
    g = GraphInference(io.BytesIO(data), outputs=["q"])
    assert dict(g.run(np.array([2.0], "float32"))) == {"q": np.array([6.0], "float32")}
    with pytest.raises(ValueError, match="no outputs named"):
        GraphInference(data, outputs=["r"])
    with pytest.raises(ValueError, match="expects 1 inputs"):
        g.run(np.ones(1, "float32"), np.ones(1, "float32"))
    with pytest.raises(ValueError, match="expects inputs"):
        g.run(inp_dict={"y": np.ones(1, "float32")})
    with pytest.raises(ValueError):  # a shape other than the dumped one
        g.run(np.ones(3, "float32"))


def test_in_place_updated_tensor_is_written_with_its_current_value():
    state = mge.Tensor([1.0, 1.0])

    def step(x):
        state[...] = state + x
        return state * 2

    f = trace(step, capture_as_const=True)
    f(mge.Tensor([1.0, 2.0]))
    f(mge.Tensor([1.0, 2.0]))  # state is now [3, 5]
    buf = io.BytesIO()
    f.dump(buf)
    out = GraphInference(buf.getvalue()).run(np.array([0.0, 1.0], "float32"))["output_0"]
    np.testing.assert_array_equal(out, [6.0, 12.0])


def test_optimize_for_inference_folds_constant_work():
    w = mge.Tensor(np.arange(6, dtype="float32").reshape(2, 3))

    def fn(x):
        return x + F.exp(w) * 2 + F.exp(w) * 2  # the w branch is constant, twice

    _, plain = dumped(fn, mge.Tensor(np.ones((2, 3), "float32")), optimize_for_inference=False)
    _, opt = dumped(fn, mge.Tensor(np.ones((2, 3), "float32")))
    assert len(opt) < len(plain)
    x = np.full((2, 3), 0.5, "float32")
    want = x + 4 * np.exp(np.arange(6, dtype="float32").reshape(2, 3))
    for data in (plain, opt):
        np.testing.assert_allclose(GraphInference(data).run(x)["output_0"], want, rtol=1e-6)


def test_user_info_and_metadata():
    _, data = dumped(lambda x: x * 2, mge.Tensor([1.0]), user_info="lenet v1")
    assert InferenceModel(data).user_info == "lenet v1"
    _, data = dumped(lambda x: x * 2, mge.Tensor([1.0]), user_info="x", enable_metadata=False)
    assert InferenceModel(data).user_info == ""
    f = trace(lambda x: x * 2, capture_as_const=True)
    f(mge.Tensor([1.0]))
    with pytest.raises(TypeError, match="user_info"):
        f.dump(io.BytesIO(), user_info={"a": 1})


def test_path_is_written_atomically(tmp_path):
    f = trace(lambda x: x - 1, capture_as_const=True)
    f(mge.Tensor([1.0]))
    path = tmp_path / "m.nmeg"
    path.write_bytes(b"old")
    f.dump(str(path), arg_names=["x"])
    assert GraphInference(str(path)).run(np.array([5.0], "float32"))["output_0"] == 4.0
    assert os.listdir(tmp_path) == ["m.nmeg"]  # no temporary file left
    with pytest.raises(OSError):
        f.dump(str(tmp_path / "missing_dir" / "m.nmeg"))
    assert os.listdir(tmp_path) == ["m.nmeg"]


def test_errors_as_megengine_raises_them():
    f = trace(lambda x: x * 2)
    f(mge.Tensor([1.0]))
    with pytest.raises(ValueError, match="capture_as_const=True"):
        f.dump(io.BytesIO())
    g = trace(lambda x: x * 2, capture_as_const=True)
    with pytest.raises(ValueError, match="call the traced function once"):
        g.dump(io.BytesIO())
    g(mge.Tensor([1.0]))
    with pytest.raises(ValueError, match="wrong number of arg_names"):
        g.dump(io.BytesIO(), arg_names=["a", "b"])
    with pytest.raises(ValueError, match="wrong number of output_names"):
        g.dump(io.BytesIO(), output_names=["a", "b"])
    with pytest.raises(ValueError, match="keep_var_name"):
        g.dump(io.BytesIO(), keep_var_name=3)
    h = trace(lambda x: None, capture_as_const=True)
    with pytest.warns(RuntimeWarning, match="no outputs"):
        h(mge.Tensor([1.0]))
    with pytest.raises(ValueError, match="without return values"):
        h.dump(io.BytesIO())


def test_a_batch_norm_in_training_mode_is_not_dumped():
    # MegEngine 1.13 raises RuntimeError "can not dump BatchNorm in training mode, maybe you
    # forget to do model.eval()?" (its integration/test_trace_dump.py), eager or symbolic.
    x = mge.Tensor(np.random.RandomState(0).rand(4, 3, 2, 2).astype("float32"))
    for symbolic in (False, True):
        bn = M.BatchNorm2d(3)
        f = trace(lambda x, bn=bn: bn(x).sum(), symbolic=symbolic, capture_as_const=True)
        f(x)
        with pytest.raises(RuntimeError, match="can not dump BatchNorm in training mode"):
            f.dump(io.BytesIO())
    # The same layer after eval() dumps and runs as the eager layer does.
    bn.eval()
    want = bn(x).numpy()
    _, data = dumped(lambda x: bn(x), x, arg_names=["x"])
    got = next(iter(GraphInference(io.BytesIO(data)).run(x.numpy()).values()))
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_broken_model_files_raise_model_error(tmp_path):
    _, data = dumped(lambda x: F.relu(x) * 2, mge.Tensor([1.0, -1.0]))
    for cut in (0, 8, len(data) // 2, len(data) - 1):
        with pytest.raises(ValueError):
            GraphInference(data[:cut])
    flipped = bytearray(data)
    rng = np.random.default_rng(1)
    raised = 0
    for pos in rng.integers(0, len(data), 40):
        flipped = bytearray(data)
        flipped[pos] ^= 0xFF
        try:
            GraphInference(bytes(flipped)).run(np.array([1.0, -1.0], "float32"))
        except ModelError:
            raised += 1
    assert raised > 0
    with pytest.raises(ModelError):
        GraphInference(b"not a model at all")
    # A name that is not UTF-8: an error, not a UnicodeDecodeError from Python's str.
    _, named = dumped(lambda x: x * 2, mge.Tensor([1.0]), arg_names=["inpQ"])
    assert named.count(b"inpQ") == 1
    with pytest.raises(ModelError, match="UTF-8"):
        GraphInference(named.replace(b"inpQ", b"inp\xff"))
    with pytest.raises(OSError):
        GraphInference(str(tmp_path / "nothing.nmeg"))
    with pytest.raises(TypeError):
        GraphInference(42)


def test_dynamic_batch_input():
    w = mge.Tensor(np.arange(12, dtype="float32").reshape(4, 3))
    _, data = dumped(
        lambda x: F.matmul(x, w), mge.Tensor(np.ones((2, 4), "float32")),
        arg_names=["x"], input_shapes={"x": (-1, 4)},
    )  # fmt: skip
    g = GraphInference(data)
    for batch in (1, 5, 2):
        x = np.random.default_rng(batch).standard_normal((batch, 4)).astype("float32")
        np.testing.assert_allclose(g.run(x)["output_0"], x @ w.numpy(), rtol=1e-5, atol=1e-5)
    assert InferenceModel(data).inputs == [("x", "float32", (-1, 4))]
    with pytest.raises(ValueError):  # a fixed dimension other than the recorded one
        dumped(
            lambda x: x * 2, mge.Tensor(np.ones((2, 4), "float32")), input_shapes={"arg_0": (-1, 5)}
        )
    # F.flatten reads the batch from the input's shape (test_trace_dynamic_shape.py); a reshape
    # to Python ints holds the traced batch: another batch is a clear error.
    _, fixed = dumped(
        lambda x: x.reshape(2, 6), mge.Tensor(np.ones((2, 3, 2), "float32")),
        arg_names=["x"], input_shapes={"x": (-1, 3, 2)},
    )  # fmt: skip
    g = GraphInference(fixed)
    assert g.run(np.ones((2, 3, 2), "float32"))["output_0"].shape == (2, 6)
    with pytest.raises(ModelError, match="Reshape"):
        g.run(np.ones((4, 3, 2), "float32"))
    with pytest.raises(TypeError, match="input_shapes"):
        dumped(lambda x: x * 2, mge.Tensor([1.0]), input_shapes={"arg_0": "batch"})


def test_dumped_file_and_checkpoint_get_the_umask_permissions(tmp_path):
    # Both go through utils.atomic_file: a temporary file (mkstemp makes it 0o600) renamed over
    # the target must end with what open(path, "wb") would have given it.
    @trace(capture_as_const=True)
    def double(x):
        return x * 2

    double(mge.Tensor([1.0, 2.0]))
    mask = os.umask(0o022)
    try:
        double.dump(str(tmp_path / "model.nmeg"))
        mge.save({"a": 1}, tmp_path / "ckpt.mge")
    finally:
        os.umask(mask)
    for name in ("model.nmeg", "ckpt.mge"):
        assert (tmp_path / name).stat().st_mode & 0o777 == 0o644, name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ckpt.mge", "model.nmeg"]


def test_batch_norm_folds_into_the_convolution_and_conv_bias_fuses_when_asked():
    rng = np.random.default_rng(2)
    net = M.Sequential(M.Conv2d(2, 4, 3, padding=1), M.BatchNorm2d(4), M.ReLU())
    net[1].running_mean[...] = mge.Tensor(rng.standard_normal((1, 4, 1, 1)).astype("float32"))
    net[1].running_var[...] = mge.Tensor(rng.uniform(0.5, 2, (1, 4, 1, 1)).astype("float32"))
    net.eval()
    x = rng.standard_normal((2, 2, 5, 5)).astype("float32")
    want = net(mge.Tensor(x)).numpy()
    _, plain = dumped(net, mge.Tensor(x), optimize_for_inference=False)
    _, folded = dumped(net, mge.Tensor(x))
    _, fused = dumped(net, mge.Tensor(x), enable_fuse_conv_bias_nonlinearity=True)
    # BatchNorm's per-channel SUB and MUL, and their constants, are gone from the file
    assert len(folded) < len(plain)
    assert b"ConvBias" not in folded and b"ConvBias" in fused
    for data in (plain, folded, fused):
        np.testing.assert_allclose(
            GraphInference(data).run(x)["output_0"], want, rtol=1e-5, atol=1e-5
        )


def test_dump_returns_megengine_dump_info():
    # MegEngine's CompGraphDumpResult: callers read the file's input names at index 4.
    w = mge.Tensor([2.0, 3.0])
    f = trace(lambda x, unused: x * w + 1, capture_as_const=True)
    f(mge.Tensor([1.0, 1.0]), mge.Tensor([5.0]))
    buf = io.BytesIO()
    info = f.dump(buf)
    data = buf.getvalue()
    assert info._fields == (
        "nr_opr",
        "tot_bytes",
        "tensor_value_bytes",
        "content_hash",
        "inputs",
        "outputs",
        "params",
    )
    assert info.tot_bytes == len(data)
    assert info[4] == ["arg_0"]  # the unused argument is not in the file
    assert info.outputs == ["output_0"] == GraphInference(data).output_names
    # MegEngine 1.13 counts 5 for this function: the input, the constants w and 1, MUL, ADD
    assert info.nr_opr == 5
    assert f.dump(io.BytesIO(), optimize_for_inference=False).nr_opr == 5
    # The same graph dumps to the same bytes, hence the same hash; another graph differs.
    again = f.dump(io.BytesIO())
    assert again.content_hash == info.content_hash
    g = trace(lambda x: x - 1, capture_as_const=True)
    g(mge.Tensor([1.0, 1.0]))
    assert g.dump(io.BytesIO()).content_hash != info.content_hash
