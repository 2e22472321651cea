"""megenginelite, MegEngine Lite's Python API on NeoMeg's inference API, against MegEngine 1.13's
own megenginelite (fixtures/megenginelite/, written by fixtures/make_megenginelite_fixtures.py
under the real MegEngine: outputs, names, layouts, which calls raise, tensor operations,
signatures), on models MegEngine dumped (src/test/fixtures/mge and fixtures/megenginelite/
deploy.mge) and models NeoMeg's trace.dump writes (against NeoMeg eager)."""

import ast
import builtins
import enum
import inspect
import io
import json
import pathlib
import re
import threading

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megenginelite as lite
from megengine.core import _imperative_rt as _rt
from megengine.jit import trace
from megenginelite import (
    LiteConfig,
    LiteDataType,
    LiteDeviceType,
    LiteIO,
    LiteIOType,
    LiteLayout,
    LiteNetwork,
    LiteNetworkIO,
    LiteTensor,
    LiteTensorConcat,
    LiteTensorPhase,
    TensorBatchCollector,
)

HERE = pathlib.Path(__file__).resolve().parent
LITE = HERE / "fixtures" / "megenginelite"
MGE = HERE.parents[1] / "src" / "test" / "fixtures" / "mge"
FACTS = json.loads((LITE / "lite.json").read_text())
ARRAYS = np.load(LITE / "lite.npz")
DEPLOY = str(LITE / "deploy.mge")
MODELS = ["linear", "conv_bn_relu", "resnet_tiny", "shapes", "typecvt", "reduce", "pooling"]


def layout(t):
    return [list(t.layout.shapes), np.dtype(t.layout.dtype).name]


def run(net, inputs):
    for name, value in inputs.items():
        net.get_io_tensor(name).set_data_by_copy(value)
    net.forward()
    net.wait()
    return {name: net.get_io_tensor(name).to_numpy() for name in net.get_all_output_name()}


def assert_close(got, want, name):
    assert got.dtype == want.dtype, name
    assert got.shape == want.shape, name
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def stored(prefix):
    ins = {k[len(prefix) + 4 :]: ARRAYS[k] for k in ARRAYS.files if k.startswith(prefix + "/in_")}
    outs = {k[len(prefix) + 5 :]: ARRAYS[k] for k in ARRAYS.files if k.startswith(prefix + "/out_")}
    return ins, outs


# --- agreement with MegEngine's megenginelite --------------------------------------------------


@pytest.mark.parametrize("model", MODELS)
def test_mge_models_give_megengine_lites_outputs(model):
    facts = FACTS[model]
    net = LiteNetwork()
    net.load(str(MGE / f"{model}.mge"))
    # MegEngine lists inputs in a hash map's order; the set is what a script can rely on.
    assert sorted(net.get_all_input_name()) == facts["inputs"]
    assert net.get_all_output_name() == facts["outputs"]
    inputs, want = stored(model)
    got = run(net, inputs)
    assert sorted(got) == sorted(want)
    for k in want:
        assert_close(got[k], want[k], k)
        assert layout(net.get_io_tensor(k)) == facts["layouts"][k]


def test_deploy_model_across_batches_like_megengine_lite():
    facts = FACTS["deploy"]
    net = LiteNetwork()
    net.load(DEPLOY)
    assert sorted(net.get_all_input_name()) == facts["inputs"]
    assert net.get_all_output_name() == facts["outputs"]
    names = facts["inputs"] + facts["outputs"]
    assert {n: layout(net.get_io_tensor(n)) for n in names} == facts["layouts_loaded"]
    for batch in (2, 5):  # one network, the batch changing between forwards
        inputs, want = stored(f"deploy/b{batch}")
        got = run(net, inputs)
        for k in want:
            assert_close(got[k], want[k], k)
        assert {n: layout(net.get_io_tensor(n)) for n in facts["outputs"]} == facts[
            f"layouts_b{batch}"
        ]


def test_registered_outputs_first_and_shape_only_output():
    facts = FACTS["deploy"]
    ios = LiteNetworkIO()
    ios.add_output("feat", io_type=LiteIOType.LITE_IO_SHAPE)
    net = LiteNetwork(io=ios)
    net.load(DEPLOY)
    assert net.get_all_output_name() == facts["registered_order"]
    inputs, want = stored("deploy/b5")
    got = run(net, inputs)
    assert layout(net.get_io_tensor("feat")) == facts["shape_only_layout"]
    assert facts["shape_only_zero"] and not got["feat"].any()  # the layout, not the values
    assert_close(got["prob"], want["prob"], "prob")


def test_input_config_layout_until_data_is_set():
    ios = LiteNetworkIO([LiteIO("img", layout=LiteLayout([4, 3, 8, 8], "uint8"))])
    net = LiteNetwork(io=ios)
    net.load(DEPLOY)
    assert layout(net.get_io_tensor("img")) == FACTS["deploy"]["config_layout_input"]
    inputs, want = stored("deploy/b2")
    assert_close(run(net, inputs)["prob"], want["prob"], "prob")


def _bad_cases():
    net = LiteNetwork()
    net.load(DEPLOY)
    ok_scale = np.ones(1, "float32")

    def threads_after_load():
        n = LiteNetwork()
        n.load(DEPLOY)
        n.threads_number = 2

    return {
        "get_io_tensor_unknown": lambda: net.get_io_tensor("nope"),
        "get_input_name_out_of_range": lambda: net.get_input_name(2),
        "get_output_name_out_of_range": lambda: net.get_output_name(2),
        "forward_before_load": lambda: LiteNetwork().forward(),
        "wait_before_load": lambda: LiteNetwork().wait(),
        "load_garbage": lambda: LiteNetwork().load(b"not a model" * 8),
        "load_missing": lambda: LiteNetwork().load(str(LITE / "missing.mge")),
        "forward_wrong_shape": lambda: run(
            net, {"img": np.zeros((2, 4, 8, 8), "uint8"), "scale": ok_scale}
        ),
        "forward_wrong_dtype": lambda: run(
            net, {"img": np.zeros((2, 3, 8, 8), "int32"), "scale": ok_scale}
        ),
        "threads_after_load": threads_after_load,
        "share_weights_unloaded": lambda: LiteNetwork().share_weights_with(LiteNetwork()),
        "set_data_by_copy_not_contiguous": lambda: LiteTensor(LiteLayout([2, 2])).set_data_by_copy(
            np.ones((2, 4), "float32")[:, :2]
        ),
        "set_data_by_copy_list_too_long": lambda: LiteTensor(LiteLayout([2])).set_data_by_copy(
            [1.0, 2.0, 3.0]
        ),
        "reshape_wrong_count": lambda: LiteTensor(LiteLayout([2, 3])).reshape([4, 2]),
        "layout_8_dims": lambda: LiteLayout([1] * 8),
    }


@pytest.mark.parametrize("case", sorted(FACTS["bad_input"]))
def test_bad_input_raises_what_megengine_lite_raises(case):
    want = FACTS["bad_input"][case]
    assert want is not None
    with pytest.raises(getattr(builtins, want)):
        _bad_cases()[case]()


def test_bad_input_messages_name_the_problem():
    net = LiteNetwork()
    net.load(DEPLOY)
    with pytest.raises(
        RuntimeError,
        match=r"no tensor named 'nope' \(inputs \[.*'img'.*\], outputs \['prob', 'feat'\]",
    ):
        net.get_io_tensor("nope")
    with pytest.raises(RuntimeError, match="no output tensor named 'img'"):
        net.get_io_tensor("img", LiteTensorPhase.LITE_OUTPUT)
    net.get_io_tensor("scale").set_data_by_copy(np.ones(1, "float32"))
    net.get_io_tensor("img").set_data_by_copy(np.zeros((2, 3, 8, 8), "int32"))
    with pytest.raises(
        RuntimeError, match="input 'img' of the model is uint8, its tensor holds int32"
    ):
        net.forward()
    net.get_io_tensor("img").set_data_by_copy(np.zeros((2, 4, 8, 8), "uint8"))
    with pytest.raises(RuntimeError, match=r"input 'img' of shape \[2, 4, 8, 8\]: .*Convolution"):
        net.forward()
    # A float64 array has no Lite type (MegEngine fails with a KeyError from a dict).
    with pytest.raises(TypeError, match="float64 has no Lite data type"):
        net.get_io_tensor("img").set_data_by_copy(np.zeros((2, 3, 8, 8)))
    # The network is still usable after each error.
    inputs, want = stored("deploy/b2")
    assert_close(run(net, inputs)["prob"], want["prob"], "prob")
    with pytest.raises(RuntimeError, match="invalid model format: .*(NMEG|mgv2)"):
        LiteNetwork().load(b"\0" * 64)


@pytest.mark.parametrize(
    "case", sorted(k[len("tensor/") :] for k in ARRAYS.files if k.startswith("tensor/"))
)
def test_tensor_operations_match_megengine_lite(case):
    src = np.arange(20, dtype="float32").reshape(4, 5)
    t = LiteTensor(LiteLayout([4, 5], LiteDataType.LITE_FLOAT))
    t.set_data_by_copy(src)
    if case == "after_slice_fill_zero":
        t.slice([1, 1], [3, 4]).fill_zero()
        got = t.to_numpy()
    elif case.startswith("slice"):
        args = {"slice_rows": ([1], [3]), "slice_block": ([1, 1], [3, 4])}
        args["slice_step"] = ([0, 0], [4, 5], [2, 2])
        got = t.slice(*args[case]).to_numpy()
    elif case == "reshape":
        r = LiteTensor(LiteLayout([2, 3], "int32"))
        r.set_data_by_copy(np.arange(6, dtype="int32").reshape(2, 3))
        r.reshape([-1, 2])
        got = r.to_numpy()
    elif case == "list_copy":
        lst = LiteTensor(LiteLayout([2, 3], LiteDataType.LITE_FLOAT))
        lst.set_data_by_copy([1, 2, 3])
        got = lst.to_numpy()
    elif case == "copy_from_empty":
        t.slice([1, 1], [3, 4]).fill_zero()  # as the fixture script had done by then
        dst = LiteTensor()
        dst.copy_from(t)
        got = dst.to_numpy()
    elif case == "concat0":
        a = LiteTensor(LiteLayout([1, 3], "int16"))
        a.set_data_by_copy(np.array([[1, 2, 3]], "int16"))
        b = LiteTensor(LiteLayout([2, 3], "int16"))
        b.set_data_by_copy(np.array([[4, 5, 6], [7, 8, 9]], "int16"))
        got = LiteTensorConcat([a, b], 0).to_numpy()
    elif case == "share_keeps_layout":
        shared = np.arange(6, dtype="float32").reshape(2, 3)
        s = LiteTensor(LiteLayout([3, 2], LiteDataType.LITE_FLOAT))
        s.set_data_by_share(shared)
        shared[0, 0] = 42
        got = s.to_numpy()
    else:
        assert case == "empty"
        got = LiteTensor().to_numpy()
    want = ARRAYS[f"tensor/{case}"]
    assert got.dtype == want.dtype and got.shape == want.shape
    np.testing.assert_array_equal(got, want)


# Names of MegEngine's megenginelite that NeoMeg's leaves out (docs/cpp-inference.md says why).
NOT_COVERED = {
    "LiteAsyncCallback",  # ctypes function types of MegEngine's C API
    "LiteStartCallback",
    "LiteFinishCallback",
    "LiteDecryptionFunc",
    "LiteGlobal.register_decryption_and_key",
    "LiteGlobal.update_decryption_key",
    "LiteGlobal.set_loader_lib_path",
    "LiteGlobal.set_persistent_cache",
    "LiteGlobal.dump_persistent_cache",
    "LiteGlobal.set_tensorrt_cache",
    "LiteGlobal.dump_tensorrt_cache",
    "LiteGlobal.register_memory_pair",
    "LiteGlobal.clear_memory_pair",
    "LiteGlobal.lookup_physic_ptr",
    "LiteNetwork.use_tensorrt",
    "LiteNetwork.get_discrete_tensor",
    "LiteNetwork.share_runtime_memroy",
    "LiteNetwork.enable_profile_performance",
    "LiteNetwork.io_txt_dump",
    "LiteNetwork.io_bin_dump",
    "LiteNetwork.get_static_memory_alloc_info",
    "LiteNetwork.enable_global_layout_transform",
    "LiteNetwork.dump_layout_transform_model",
}


def _default_repr(value):
    if value is inspect.Parameter.empty:
        return None
    if isinstance(value, enum.Enum):
        return f"{type(value).__name__}.{value.name}"
    return re.sub(r" at 0x[0-9a-f]+", "", repr(value))


@pytest.mark.parametrize("name", sorted(FACTS["signatures"]))
def test_signatures_match_megengine_lite(name):
    obj = lite
    parts = name.split(".")
    if parts[0] in NOT_COVERED or name in NOT_COVERED:
        assert not hasattr(lite, parts[0]) or not hasattr(getattr(lite, parts[0]), parts[-1])
        return
    for p in parts:
        obj = getattr(obj, p)
    got = [
        [p.name, p.kind.name, _default_repr(p.default)]
        for p in inspect.signature(obj).parameters.values()
    ]
    assert got == FACTS["signatures"][name]


# --- NeoMeg's own models ---------------------------------------------------------------------


class Net(M.Module):
    def __init__(self):
        super().__init__()
        self.conv = M.Conv2d(3, 4, 3, padding=1)
        self.bn = M.BatchNorm2d(4)
        self.fc = M.Linear(4 * 4 * 4, 6)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        return F.softmax(self.fc(F.flatten(x, 1)), axis=1), F.argmax(x.sum(axis=(2, 3)), axis=1)


@pytest.fixture(scope="module")
def neomeg_model():
    np.random.seed(7)
    net = Net()
    for p in net.parameters():
        p._reset(mge.Tensor(np.random.standard_normal(p.shape).astype("float32") * 0.3))
    net.eval()

    @trace(symbolic=True, capture_as_const=True)
    def fn(x):
        return net(x)

    fn(mge.Tensor(np.zeros((2, 3, 8, 8), "float32")))
    f = io.BytesIO()
    fn.dump(f, arg_names=["x"], output_names=["prob", "cls"], input_shapes={"x": (-1, 3, 8, 8)})
    return net, f.getvalue()


@pytest.mark.parametrize("batch", [1, 3])
def test_neomeg_dump_runs_like_eager(neomeg_model, tmp_path, batch):
    net, data = neomeg_model
    path = tmp_path / "net.nmeg"
    path.write_bytes(data)
    x = np.random.RandomState(batch).standard_normal((batch, 3, 8, 8)).astype("float32")
    prob, cls = (v.numpy() for v in net(mge.Tensor(x)))
    for src in (str(path), path, data, "file"):
        lnet = LiteNetwork()
        if src == "file":
            with open(path, "rb") as f:
                lnet.load(f)
        else:
            lnet.load(src)
        assert lnet.get_all_input_name() == ["x"]
        assert lnet.get_all_output_name() == ["prob", "cls"]
        assert layout(lnet.get_io_tensor("x")) == [[2, 3, 8, 8], "float32"]  # the traced shape
        got = run(lnet, {"x": x})
        assert_close(got["prob"], prob, "prob")
        np.testing.assert_array_equal(got["cls"], cls.astype("int32"))
    # A fixed dim of another size is refused by the model.
    lnet.get_io_tensor("x").set_data_by_copy(np.zeros((batch, 3, 8, 9), "float32"))
    with pytest.raises(RuntimeError, match="does not fit its declared shape"):
        lnet.forward()


def test_share_weights_threads_inplace_and_fake_exec(neomeg_model):
    net, data = neomeg_model
    x = np.random.RandomState(0).standard_normal((4, 3, 8, 8)).astype("float32")
    want = net(mge.Tensor(x))[0].numpy()
    src = LiteNetwork()
    src.threads_number = 2
    src.load(data)
    before = _rt.x86_threads()
    assert_close(run(src, {"x": x})["prob"], want, "prob")
    assert _rt.x86_threads() == before  # the network's thread number is set only around a run
    other = LiteNetwork()
    other.enable_cpu_inplace_mode()
    other.share_weights_with(src)
    assert other.is_cpu_inplace_mode() and other.threads_number == 1
    assert other.get_io_tensor("x") is not src.get_io_tensor("x")
    assert_close(run(other, {"x": x[:1]})["prob"], want[:1], "prob")
    assert_close(src.get_io_tensor("prob").to_numpy(), want, "prob")  # src untouched
    # fake_next_exec: the next forward feeds the inputs only, then the flag goes back.
    config = LiteConfig()
    config.options.fake_next_exec = True
    fake = LiteNetwork(config)
    fake.load(data)
    before_out = fake.get_io_tensor("prob").to_numpy()
    fake.get_io_tensor("x").set_data_by_copy(x)
    fake.forward()
    np.testing.assert_array_equal(fake.get_io_tensor("prob").to_numpy(), before_out)
    assert not config.options.fake_next_exec
    fake.forward()
    assert_close(fake.get_io_tensor("prob").to_numpy(), want, "prob")


def test_shared_memory_in_and_out(neomeg_model):
    net, data = neomeg_model
    lnet = LiteNetwork()
    lnet.load(data)
    x = np.zeros((2, 3, 8, 8), "float32")
    lnet.get_io_tensor("x").set_data_by_share(x)
    out = np.full((2, 6), -1, "float32")
    lnet.get_io_tensor("prob").set_data_by_share(out)  # the output goes to the caller's memory
    view = lnet.get_io_tensor("cls").get_data_by_share()
    for seed in (1, 2):
        x[...] = np.random.RandomState(seed).standard_normal(x.shape)  # read at each forward
        lnet.forward()
        lnet.wait()
        prob, cls = (v.numpy() for v in net(mge.Tensor(x)))
        assert_close(out, prob, "prob")
        np.testing.assert_array_equal(view, cls.astype("int32"))  # overwritten in place
        assert lnet.get_io_tensor("prob").get_data_by_share().ctypes.data == out.ctypes.data


def test_async_forward_and_callbacks(neomeg_model):
    net, data = neomeg_model
    lnet = LiteNetwork()
    lnet.load(data)
    x = np.random.RandomState(3).standard_normal((2, 3, 8, 8)).astype("float32")
    events = []
    lnet.set_start_callback(lambda ios: events.append(("start", sorted(i.name for i in ios))))
    lnet.set_finish_callback(
        lambda ios: events.append(("finish", {i.name: t.to_numpy() for i, t in ios.items()}))
    )
    release = threading.Event()

    def on_done():
        release.wait(10)
        events.append(("async", threading.current_thread() is threading.main_thread()))
        return 0

    lnet.async_with_callback(on_done)
    lnet.get_io_tensor("x").set_data_by_copy(x)
    lnet.forward()
    assert events[0][0] == "start" and "async" not in [e[0] for e in events]  # still running
    release.set()
    lnet.wait()
    assert [e[0] for e in events] == ["start", "finish", "async"]
    assert events[0][1] == ["x"] and events[2][1] is False
    assert_close(events[1][1]["prob"], net(mge.Tensor(x))[0].numpy(), "prob")

    def failing():
        raise ValueError("callback failed")

    lnet.async_with_callback(failing)
    lnet.forward()
    with pytest.raises(ValueError, match="callback failed"):
        lnet.wait()
    lnet.wait()  # the error is raised once


def test_quantized_and_int_models_hold_their_integers():
    # MegEngine's Lite refuses quantized outputs; here they are their stored integers (the
    # values MegEngine's GraphInference gave, in src/test/fixtures/mge).
    data = np.load(MGE / "quant_cnn.npz")
    net = LiteNetwork()
    net.load(str(MGE / "quant_cnn.mge"))
    got = run(net, {"x": data["in_x"]})
    assert net.get_io_tensor("conv").layout.data_type == LiteDataType.LITE_INT8
    np.testing.assert_array_equal(got["conv"].view("int8"), data["out_conv"])
    np.testing.assert_allclose(got["out"], data["out_out"], rtol=1e-5, atol=1e-6)


def test_tensor_views_share_and_copies():
    t = LiteTensor(LiteLayout([4, 5], "int32"))
    t.set_data_by_copy(np.arange(20, dtype="int32").reshape(4, 5))
    s = t.slice([1, 1], [3, 4])
    assert not s.is_continue and s.nbytes == 24
    s.get_data_by_share()[...] = -1  # a view of the parent, strided
    assert (t.to_numpy()[1:3, 1:4] == -1).all()
    with pytest.raises(AssertionError, match="continue tensor"):
        s.set_data_by_share(np.zeros((2, 3), "int32"))
    with pytest.raises(RuntimeError, match="not contiguous"):
        s.reshape([6])
    rows = t.slice([2], [4])
    assert rows.is_continue
    rows.copy_from(t.slice([0], [2]))  # same shape: written in place into t
    np.testing.assert_array_equal(t.to_numpy()[2:], t.to_numpy()[:2])
    with pytest.raises(RuntimeError, match="holds int32, the source float32"):
        t.copy_from(LiteTensor(LiteLayout([2])))
    with pytest.raises(RuntimeError, match="dim 1 of size 5: start 2, end 9"):
        t.slice([0, 2], [1, 9])
    u = LiteTensor()
    u.share_memory_with(t)
    t.fill_zero()
    assert not u.to_numpy().any() and u.layout.shapes == [4, 5]
    # Edge shapes: a 0-dim array is one element, an empty dim has no bytes.
    e = LiteTensor()
    e.set_data_by_copy(np.array(3.5, "float32"))
    with pytest.raises(TypeError, match="takes a numpy.ndarray, a list or ctypes data"):
        e.set_data_by_copy(np.float32(3.5))
    assert e.layout.shapes == [1] and e.to_numpy()[0] == 3.5
    e.set_data_by_copy(np.zeros((0, 3), "float16"))
    assert e.nbytes == 0 and e.to_numpy().shape == (0, 3) and e.to_numpy().dtype == np.float16
    # Memory is kept when a new layout fits (the caller's array keeps being written).
    arr = np.zeros(6, "float32")
    k = LiteTensor(LiteLayout([6]))
    k.set_data_by_share(arr)
    k.set_data_by_copy(np.ones((2, 2), "float32"))
    np.testing.assert_array_equal(arr, [1, 1, 1, 1, 0, 0])


def test_tensor_batch_collector_feeds_a_network():
    batch = TensorBatchCollector([3, 3, 8, 8], LiteDataType.LITE_UINT8, LiteDeviceType.LITE_CPU)
    imgs = [np.full((3, 8, 8), i * 40, "uint8") for i in range(3)]
    for img in imgs:
        batch.collect(img)
    with pytest.warns(UserWarning, match="all batch has been collected"):
        assert batch.collect(imgs[0]) == -1
    net = LiteNetwork()
    net.load(DEPLOY)
    net.get_io_tensor("img").copy_from(batch.get())
    net.get_io_tensor("scale").set_data_by_copy(np.ones(1, "float32"))
    net.forward()
    net.wait()
    one = LiteNetwork()
    one.load(DEPLOY)
    for i, img in enumerate(imgs):
        got = run(one, {"img": img[None], "scale": np.ones(1, "float32")})["prob"]
        assert_close(net.get_io_tensor("prob").to_numpy()[i : i + 1], got, "prob")


def test_cuda_network_without_a_device_is_refused_clearly():
    if _rt.get_cuda_device_count():
        pytest.skip("a CUDA device is present: test_cuda_network runs")
    with pytest.raises(RuntimeError, match=r"LITE_CUDA: request gpu0 out of valid range \[0, 0\)"):
        LiteNetwork(LiteConfig(LiteDeviceType.LITE_CUDA)).load(DEPLOY)
    with pytest.raises(RuntimeError, match="NeoMeg has no LITE_NPU device"):
        LiteTensor(LiteLayout([2]), LiteDeviceType.LITE_NPU)
    assert lite.LiteGlobal.get_device_count(LiteDeviceType.LITE_CUDA) == 0


@pytest.mark.gpu
def test_cuda_network():
    if not _rt.get_cuda_device_count():
        pytest.skip("no CUDA device")
    net = LiteNetwork(LiteConfig(LiteDeviceType.LITE_CUDA), LiteNetworkIO([LiteIO("img", False)]))
    net.load(DEPLOY)
    assert net.get_io_tensor("img").device_type == LiteDeviceType.LITE_CUDA
    assert net.get_io_tensor("scale").is_pinned_host
    with pytest.raises(AssertionError, match="cpu tensor or pinned tensor"):
        net.get_io_tensor("img").set_data_by_share(np.zeros((2, 3, 8, 8), "uint8"))
    for batch in (2, 5):
        inputs, want = stored(f"deploy/b{batch}")
        got = run(net, inputs)
        for k in want:
            np.testing.assert_allclose(got[k], want[k], rtol=1e-4, atol=1e-5, err_msg=k)


# --- layering --------------------------------------------------------------------------------


def _imports(path, top_level_only):
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else ast.walk(tree)
    out = []
    for node in nodes:
        if isinstance(node, ast.Import):
            out += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0:
            out.append(node.module)
    return out


def test_layering():
    pkg = pathlib.Path(mge.__file__).parent
    for path in pkg.rglob("*.py"):
        assert not any(m.startswith("megenginelite") for m in _imports(path, False)), path
    # megenginelite runs on megengine's extension only (the examples' model is made with
    # megengine.jit inside network._doc_model, imported there).
    for path in pathlib.Path(lite.__file__).parent.glob("*.py"):
        for m in _imports(path, True):
            assert not m.startswith("megengine") or m == "megengine.core", (path, m)
