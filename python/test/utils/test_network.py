"""megengine.utils.network.Network on models NeoMeg's trace.dump wrote: queries, every edit
checked by running the dumped file (GraphInference, load_and_run) against eager computation,
dump/load round trips, and clear errors for bad input."""

import io
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.utils.network_node as N
from megengine.jit import trace
from megengine.utils.comp_graph_tools import GraphInference, ModelError
from megengine.utils.network import (
    Network,
    NodeFilter,
    as_oprnode,
    as_varnode,
    set_symbolic_shape,
)

ROOT = Path(__file__).resolve().parents[3]


class Net(M.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = M.Conv2d(3, 4, 3, padding=1)
        self.bn1 = M.BatchNorm2d(4)
        self.conv2 = M.Conv2d(4, 4, 3, stride=2, padding=1)
        self.fc = M.Linear(4 * 4 * 4, 3)

    def forward(self, x):
        x = F.relu(self.bn1(self.conv1(x)))
        x = F.relu(self.conv2(x))
        return self.fc(F.flatten(x, 1))


def randn(seed, *shape):
    return np.random.RandomState(seed).standard_normal(shape).astype("float32")


@pytest.fixture(scope="module")
def cnn():
    net = Net()
    for i, p in enumerate(net.parameters()):
        p._reset(mge.Tensor(randn(i, *p.shape) * 0.5))
    net.bn1.running_mean._reset(mge.Tensor(randn(50, 1, 4, 1, 1) * 0.2))
    net.bn1.running_var._reset(mge.Tensor(np.abs(randn(51, 1, 4, 1, 1)) + 0.5))
    net.eval()
    f = trace(lambda x: net(x), capture_as_const=True)
    f(mge.Tensor(randn(7, 2, 3, 8, 8)))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["data"], output_names=["out"], optimize_for_inference=False)
    return net, buf.getvalue()


def sum_model():
    """o = (a + b) * 2 on int32 vectors of 2."""
    f = trace(lambda a, b: (a + b) * 2, capture_as_const=True)
    f(mge.Tensor(np.array([1, 2], "int32")), mge.Tensor(np.array([3, 4], "int32")))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["a", "b"], output_names=["o"], optimize_for_inference=False)
    return buf.getvalue()


def run(net, *inputs, **dump_kwargs):
    buf = io.BytesIO()
    net.dump(buf, **dump_kwargs)
    return GraphInference(buf.getvalue()).run(*inputs)


def eager_trunk(net, x):
    """The CNN's first block, eagerly: relu(bn1(conv1(x)))."""
    return F.relu(net.bn1(net.conv1(mge.Tensor(x)))).numpy()


# ---- loading and queries -------------------------------------------------------------------


def test_loads_inputs_outputs_and_op_classes(cnn):
    _, data = cnn
    net = Network.load(io.BytesIO(data))
    assert [(v.name, v.shape, v.dtype) for v in net.input_vars] == [
        ("data", (2, 3, 8, 8), np.dtype("float32"))
    ]
    assert [(v.name, v.shape) for v in net.output_vars] == [("out", (2, 3))]
    assert net.opr_filter.type(N.ConvolutionForward).as_count() == 2
    # F.batch_norm in eval mode traces as elementwise ops, not BatchNormForward.
    assert net.opr_filter.type(N.BatchNormForward).as_count() == 0
    assert net.opr_filter.type(N.MatrixMul).as_count() == 1
    assert net.data_providers_filter.as_count() == 1
    assert isinstance(net.get_opr_by_type(N.Host2DeviceCopy), N.Host2DeviceCopy)
    conv = net.get_opr_by_type(N.ConvolutionForward, unique=False)[0]
    assert conv.type == "Convolution"
    total = net.opr_filter.as_count()
    assert net.opr_filter.not_type(N.ConvolutionForward).as_count() == total - 2
    # Every node is either an input, a constant or an op with inputs.
    assert all(o.inputs or isinstance(o, (N.Host2DeviceCopy, N.ConstOpBase)) for o in net.all_oprs)


def test_op_params_and_constant_values_are_readable(cnn):
    model, data = cnn
    net = Network.load(data)
    conv1, conv2 = net.opr_filter.type(N.ConvolutionForward)
    assert list(conv2.params["stride"]) == [2, 2] and list(conv2.params["padding"]) == [1, 1]
    assert conv1.params["mode"] == "CROSS_CORRELATION"
    # The filter is the constant the first convolution reads: the module's weight.
    weight = conv1.inputs[1].owner
    assert isinstance(weight, N.ImmutableTensor)
    np.testing.assert_array_equal(weight.numpy(), model.conv1.weight.numpy())
    assert weight.numpy().dtype == np.float32
    values = [c.numpy() for c in net.params_filter]
    assert any(np.array_equal(v, model.bn1.running_var.numpy()) for v in values)
    assert any(np.array_equal(v, model.fc.weight.numpy()) for v in values)


def test_name_queries_glob_and_case(cnn):
    _, data = cnn
    net = Network.load(data)
    assert net.get_var_by_name("data") is net.input_vars[0]
    assert net.get_var_by_name("DATA") is net.input_vars[0]
    assert net.var_filter.name("DATA", ignorecase=False).as_count() == 0
    assert net.get_opr_by_name("dat?").type == "Host2DeviceCopy"
    assert net.var_filter.name("ou*").as_unique() is net.output_vars[0]
    readers = net.get_var_receive_oprs(net.input_vars[0])
    assert [r.type for r in readers] == ["Convolution"]
    assert net.opr_filter.has_input(net.input_vars[0]).as_unique() is readers[0]
    assert set(net.all_vars_dict) >= {"data", "out"}
    assert "data" in net.all_oprs_dict


def test_node_filter_from_var_and_helpers():
    net = Network.load(sum_model())
    o = net.output_vars[0]
    deps = NodeFilter(o).as_list()  # what o depends on, its own op excluded
    assert o.owner not in deps and len(deps) == len(net.all_oprs) - 1
    assert NodeFilter.make_all_deps(o).as_count() == len(net.all_oprs)
    assert as_varnode(o.owner) is o and as_varnode([o]) is o
    assert as_oprnode(o) is o.owner and as_oprnode([o.owner]) is o.owner
    assert [n.type for n in net.get_dep_oprs(o)] == [n.type for n in net.all_oprs]


# ---- edits, checked by running the dumped model ---------------------------------------------


def test_add_output_of_an_intermediate_var_matches_eager(cnn):
    model, data = cnn
    net = Network.load(data)
    relu = next(o for o in net.opr_filter.type(N.Elemwise) if o.params["mode"] == "RELU")
    trunk = relu.outputs[0]
    trunk.name = "trunk"
    net.add_output(trunk)
    net.add_output(trunk)  # already an output: skipped
    assert [v.name for v in net.output_vars] == ["out", "trunk"]
    x = randn(3, 2, 3, 8, 8)
    out = run(net, x)
    np.testing.assert_allclose(out["trunk"], eager_trunk(model, x), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out["out"], model(mge.Tensor(x)).numpy(), rtol=1e-5, atol=1e-5)
    net.remove_output(net.output_vars[0])
    assert list(run(net, x)) == ["trunk"]


def test_replace_var_with_an_inserted_op_matches_eager(cnn):
    model, data = cnn
    net = Network.load(data)
    relu = next(o for o in net.opr_filter.type(N.Elemwise) if o.params["mode"] == "RELU")
    old = relu.outputs[0]
    new = F.sigmoid(old) * 0.5 - 1
    assert new.shape == old.shape and new.dtype == np.float32
    net.replace_vars({old: new})
    x = randn(4, 2, 3, 8, 8)
    got = run(net, x)["out"]
    t = mge.Tensor(F.sigmoid(mge.Tensor(eager_trunk(model, x))).numpy() * 0.5 - 1)
    t = F.relu(model.conv2(t))
    want = model.fc(F.flatten(t, 1)).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_megengines_replace_var_example():
    net = Network.load(sum_model())
    a, b = net.var_filter.name("a").as_unique(), net.var_filter.name("b").as_unique()
    out = F.relu(F.mul(a, b))
    add = net.opr_filter.has_input(a).as_list()[0]
    net.replace_vars({add.outputs[0]: out})
    np.testing.assert_array_equal(run(net, [1, 2], [3, 4])["o"], [6, 16])


def test_replace_opr_puts_the_new_node_in_place():
    net = Network.load(sum_model())
    a, b = net.input_vars
    new = F.relu(F.sub(a, b)).owner
    old = net.opr_filter.has_input(a).as_unique()
    net.replace_oprs({old: new})
    for k, var in enumerate(old.outputs):
        assert var.owner is new and new.outputs[k] is var
    np.testing.assert_array_equal(run(net, [5, 2], [3, 4])["o"], [4, 0])


def test_make_const_and_make_input_node():
    net = Network.load(sum_model())
    zero = net.make_const(np.array([0, 0]), name="zero")
    net.replace_vars({net.get_var_by_name("b"): zero})
    np.testing.assert_array_equal(run(net, [1, 2])["o"], [2, 4])

    net = Network.load(sum_model())
    c = net.make_input_node((2,), np.int32, name="c")
    o = net.get_var_by_name("o")
    o1 = F.add(o, c)
    o1.name = "o1"
    net.remove_output(o)
    net.add_output(o1)
    out = run(net, [1, 2], [3, 4], [10, 20])
    np.testing.assert_array_equal(out["o1"], [18, 32])


def test_replaced_var_of_another_dtype_promotes_the_elementwise_ops_using_it():
    # MegEngine 1.13's own test_make_const: the int32 input b of o = (a + b) * 2 replaced by a
    # float64 constant (which becomes float32). MegBrain's Elemwise converts mixed operands to
    # their common dtype when built, and MegEngine 1.13 runs the edited file to
    # [2.0, 4.0] float32 (printed by it); NeoMeg's graph takes one dtype per Elemwise, so the
    # rebuilt graph gets TypeCvt nodes instead of refusing the edit.
    net = Network.load(sum_model())
    zero = net.make_const(np.array([0.0, 0.0]), name="b")
    assert zero.dtype == np.float32
    net.replace_vars({net.var_filter.name("b").as_unique(): zero})
    out = run(net, [1, 2])["o"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [2.0, 4.0])
    # a bool constant for the int32 input: MegEngine 1.13 also gives [4.0, 4.0] float32
    net = Network.load(sum_model())
    net.replace_vars({net.get_var_by_name("b"): net.make_const(np.array([True, False]))})
    out = run(net, [1, 2])["o"]
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out, [4.0, 4.0])


def test_quantized_inputs_can_be_remade_and_dumped():
    # MegEngine 1.13's test_network_node recreates every input with
    # make_input_node(shape=v.shape, dtype=v.dtype, name=v.name): for a quantized input, dtype
    # is the numpy dtype with mgb_dtype metadata (or MegEngine's full name). The edited model
    # must compute what the traced function did; before, the quantized dtype was refused.
    from megengine.core.tensor import dtype as D

    rng = np.random.RandomState(3)
    inp = mge.Tensor(rng.random_sample((1, 3, 8, 8)) * 4, dtype=D.qint8(0.5))
    weight = mge.Tensor(rng.random_sample((4, 3, 3, 3)) * 4, dtype=D.qint8(0.25))
    bias = mge.Tensor(rng.random_sample((1, 4, 1, 1)), dtype=D.qint32(0.125))

    @trace(symbolic=True, capture_as_const=True)
    def f(i, w, b):
        return F.quantized.conv_bias_activation(i, w, b, dtype=D.qint8(1.0), nonlinear_mode="relu")

    want = f(inp, weight, bias)
    buf = io.BytesIO()
    f.dump(buf, arg_names=["i", "w", "b"], output_names=["o"], optimize_for_inference=False)
    net = Network.load(buf.getvalue())
    old = net.input_vars
    assert [v.dtype.metadata["mgb_dtype"]["scale"] for v in old] == [0.5, 0.25, 0.125]
    new = [net.make_input_node(shape=v.shape, dtype=v.dtype, name=v.name) for v in old]
    assert [v.dtype.metadata["mgb_dtype"] for v in new] == [
        v.dtype.metadata["mgb_dtype"] for v in old
    ]
    by_name = net.make_input_node((2,), "QuantizedS8(0.5)", name="q")
    assert by_name.dtype.metadata["mgb_dtype"] == {"name": "QuantizedS8", "scale": 0.5}
    net.replace_vars(dict(zip(old, new)))
    got = run(net, inp.numpy(), weight.numpy(), bias.numpy())["o"]
    assert got.dtype.metadata["mgb_dtype"]["scale"] == 1.0
    np.testing.assert_array_equal(got, want.numpy())


def test_param_set_value_and_params_edit():
    net = Network.load(sum_model())
    net.params_filter.as_unique().set_value(3)
    np.testing.assert_array_equal(run(net, [1, 2], [3, 4])["o"], [12, 18])
    mul = next(o for o in net.opr_filter.type(N.Elemwise) if o.params["mode"] == "MUL")
    mul.params["mode"] = "SUB"  # o = (a + b) - 3
    np.testing.assert_array_equal(run(net, [1, 2], [3, 4])["o"], [1, 3])


@pytest.mark.parametrize("value", [2.5, np.float64(2.5), np.array(2.5)])
def test_a_0d_float64_value_stays_0d(value):
    # float64 narrows to float32; the cast once made a 0-d value (a Python float) 1-d
    c = N.ImmutableTensor(np.zeros((), "float32"), "c")
    c.set_value(value)
    assert c.outputs[0].shape == ()
    assert c.numpy().shape == () and c.numpy().dtype == np.float32 and c.numpy() == 2.5


def test_symbolic_dtype_promotion_and_comparisons():
    net = Network.load(sum_model())
    a, b = net.input_vars
    half = a * 0.5  # int32 var and a float: float32, as eager
    assert half.dtype == np.float32 and half.owner.inputs[0].owner.type == "TypeCvt"
    mask = a > 1
    assert mask.dtype == np.bool_
    flipped = 10 - a
    net.remove_output(*net.output_vars)
    for v, name in ((half, "half"), (mask, "mask"), (flipped, "flipped"), (-b, "neg")):
        v.name = name
        net.add_output(v)
    out = run(net, [1, 2], [3, 4])
    np.testing.assert_array_equal(out["half"], np.array([0.5, 1.0], "float32"))
    np.testing.assert_array_equal(out["mask"], [False, True])
    np.testing.assert_array_equal(out["flipped"], [9, 8])
    np.testing.assert_array_equal(out["neg"], [-3, -4])


def test_modify_opr_names_renames_the_dumped_inputs():
    net = Network.load(sum_model())
    net.modify_opr_names("net")
    net.modify_opr_names(lambda x: "net1." + x)
    buf = io.BytesIO()
    net.dump(buf, optimize_for_inference=False)
    again = Network.load(io.BytesIO(buf.getvalue()))
    assert [o.name for o in again.data_providers_filter] == ["net1.net.a", "net1.net.b"]


def test_reset_batch_size_runs_at_the_new_batch(cnn):
    model, data = cnn
    net = Network.load(data)
    net.reset_batch_size(5)
    assert net.input_vars[0].shape == (5, 3, 8, 8)
    assert net.output_vars[0].shape == (5, 3)
    x = randn(8, 5, 3, 8, 8)
    got = run(net, x)["out"]
    np.testing.assert_allclose(got, model(mge.Tensor(x)).numpy(), rtol=1e-5, atol=1e-5)
    buf = io.BytesIO()
    net.dump(buf)
    assert Network.load(buf.getvalue()).data_providers_filter.as_unique().shape[0] == 5


def test_dump_and_load_round_trip(cnn, tmp_path):
    model, data = cnn
    net = Network.load(data)
    path = tmp_path / "m.nmeg"
    info = net.dump(str(path), optimize_for_inference=False, keep_var_name=2)
    assert info.inputs == ["data"] and info.outputs == ["out"]
    again = Network.load(str(path))
    assert [type(o).__name__ for o in again.all_oprs] == [type(o).__name__ for o in net.all_oprs]
    assert [v.name for v in again.all_vars] == [v.name for v in net.all_vars]
    x = randn(9, 2, 3, 8, 8)
    want = model(mge.Tensor(x)).numpy()
    np.testing.assert_allclose(GraphInference(str(path)).run(x)["out"], want, rtol=1e-5, atol=1e-5)
    # Dumping the loaded file again writes the same bytes.
    buf = io.BytesIO()
    again.dump(buf, optimize_for_inference=False, keep_var_name=2)
    assert buf.getvalue() == path.read_bytes()
    # The optimized dump folds BatchNorm into the convolution and still computes the model.
    buf = io.BytesIO()
    net.dump(buf)
    opt = Network.load(buf.getvalue())
    assert opt.opr_filter.type(N.BatchNormForward).as_count() == 0
    np.testing.assert_allclose(
        GraphInference(buf.getvalue()).run(x)["out"], want, rtol=1e-4, atol=1e-4
    )


def test_optimize_for_inference_returns_new_vars():
    net = Network.load(sum_model())
    (o,) = net.optimize_for_inference(net.output_vars)
    assert o is not net.output_vars[0] and o.shape == (2,)
    with pytest.raises(TypeError, match="unknown optimize_for_inference options"):
        net.optimize_for_inference(net.output_vars, enable_everything=True)


def test_dynamic_batch_stays_dynamic(cnn):
    model, _ = cnn
    f = trace(lambda x: model(x), capture_as_const=True, symbolic_shape=True)
    f(mge.Tensor(randn(1, 2, 3, 8, 8)))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"], input_shapes={"x": (-1, 3, 8, 8)})
    net = Network.load(buf.getvalue())
    g = GraphInference(run_bytes(net))
    for n in (1, 3):
        x = randn(n, n, 3, 8, 8)
        want = model(mge.Tensor(x)).numpy()
        np.testing.assert_allclose(g.run(x)["output_0"], want, rtol=1e-4, atol=1e-5)


def run_bytes(net):
    buf = io.BytesIO()
    net.dump(buf)
    return buf.getvalue()


def test_outspec_loads_a_subgraph(cnn):
    _, data = cnn
    net = Network.load(data, outspec=["data"])
    assert [v.name for v in net.output_vars] == ["data"]
    assert len(net.all_oprs) == 1
    with pytest.raises(ValueError, match="can not find"):
        Network.load(data, outspec=["nothing"])


def test_set_symbolic_shape():
    net = Network.load(sum_model())
    a = net.input_vars[0]
    saved = set_symbolic_shape(True)
    try:
        shape = a.shape
        assert isinstance(shape, N.VarNode) and shape.owner.type == "GetVarShape"
    finally:
        set_symbolic_shape(saved)
    assert a.shape == a.partial_shape == (2,)


def test_metadata():
    f = trace(lambda x: x * 2, capture_as_const=True)
    f(mge.Tensor(0.0))
    buf = io.BytesIO()
    f.dump(buf, user_info="test", optimize_for_inference=False)
    net = Network.load(buf.getvalue())
    assert net.metadata["user_info"] == "test"
    assert net.metadata["producer_name"] == "NeoMeg"
    out = io.BytesIO()
    net.dump(out, user_info="edited")
    assert Network.load(out.getvalue()).metadata["user_info"] == "edited"


def test_edited_model_runs_in_load_and_run(cnn, tmp_path):
    build = Path(os.environ.get("BUILD_DIR", "build"))
    exe = (build if build.is_absolute() else ROOT / build) / "src" / "load_and_run"
    if not exe.exists():
        pytest.skip(f"{exe} is not built")
    model, data = cnn
    net = Network.load(data)
    net.reset_batch_size(3)
    path = tmp_path / "m.nmeg"
    net.dump(str(path))
    x = randn(11, 3, 3, 8, 8)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    out.mkdir()
    cmd = [str(exe), str(path), "--input", f"data={tmp_path / 'x.npy'}"]
    cmd += ["--iters", "1", "--warmup", "0", "--output-dir", str(out)]
    subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)
    got = np.load(out / "out.npy")
    np.testing.assert_allclose(got, model(mge.Tensor(x)).numpy(), rtol=1e-4, atol=1e-4)


# ---- bad input -----------------------------------------------------------------------------


def test_bad_files_and_arguments_raise_clearly(tmp_path):
    with pytest.raises(ModelError):
        Network.load(b"not a model")
    with pytest.raises(TypeError, match="model_path"):
        Network.load(123)
    with pytest.raises(FileNotFoundError):
        Network.load(str(tmp_path / "missing.nmeg"))
    net = Network.load(sum_model())
    with pytest.raises(ValueError, match="0 vars named 'nope' found"):
        net.get_var_by_name("nope")
    with pytest.raises(ValueError, match="2 operators"):
        net.get_opr_by_type(N.Elemwise)
    with pytest.raises(TypeError, match="not an OpNode class"):
        net.get_opr_by_type(int)
    with pytest.raises(TypeError, match="bad node type"):
        net.opr_filter.type(str)
    with pytest.raises(TypeError, match="bad pattern"):
        net.var_filter.name(3).as_list()
    with pytest.raises(TypeError, match="map VarNodes"):
        net.replace_vars({1: 2})
    with pytest.raises(TypeError, match="map OpNodes"):
        net.replace_oprs({net.input_vars[0]: net.input_vars[1]})
    with pytest.raises(ValueError, match="not an output"):
        net.remove_output(net.input_vars[0])
    with pytest.raises(TypeError, match="modifier"):
        net.modify_opr_names(5)
    with pytest.raises(ValueError, match="batchsize"):
        net.reset_batch_size(0)
    with pytest.raises(ValueError, match="unused items in blacklist"):
        net.reset_batch_size(2, blacklist=["zzz"])
    with pytest.raises(TypeError, match="user_info must be a str"):
        net.dump(io.BytesIO(), user_info={"a": 1})
    with pytest.raises(TypeError, match="unknown optimize_for_inference options"):
        net.dump(io.BytesIO(), enable_magic=True)
    with pytest.raises(TypeError, match="add_dep_oprs"):
        net.add_dep_oprs(np.zeros(2))
    with pytest.raises(TypeError, match="compatible with VarNode"):
        as_varnode(5)
    with pytest.raises(ValueError, match="length 2"):
        as_varnode(net.input_vars)
    with pytest.raises(ValueError, match="as_unique: 2 nodes"):
        net.data_providers_filter.as_unique()


def test_bad_edits_name_the_node():
    net = Network.load(sum_model())
    a = net.input_vars[0]
    with pytest.raises(ValueError, match="Elemwise"):
        a + np.zeros(3, "int32")  # shapes (2,) and (3,) do not broadcast
    # Each replacement reads the other's old var: a cycle, refused where the graph is built.
    b = net.input_vars[1]
    with pytest.raises(ValueError, match="cyclic graph"):
        net.replace_vars({a: b * 3, b: a * 5})
    net = Network.load(sum_model())
    # A bad param value fails where the node is built again, naming the node.
    mul = next(o for o in net.opr_filter.type(N.Elemwise) if o.params["mode"] == "MUL")
    mul.params["mode"] = "NO_SUCH_MODE"
    with pytest.raises((TypeError, ValueError), match="Elemwise"):
        net.dump(io.BytesIO())
