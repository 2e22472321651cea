"""trace_module and TracedModule: outputs against the original module for new random inputs,
structures of arguments and results, queries, pickling, jit.trace, errors, and that eager
code is left exactly as it was."""

import collections
import io
import os
import pickle
import sys
import warnings

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.traced_module as tm
from megengine.jit import trace
from megengine.traced_module import tm_config, tracer
from megengine.traced_module.expr import CallFunction, CallMethod, GetAttr, Input
from megengine.traced_module.pytree import tree_flatten

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import traced_module_cases as cases

RNG = np.random.default_rng(7)


def rand(*shape):
    return mge.Tensor(RNG.standard_normal(shape).astype(np.float32))


def close(a, b, tol=1e-5):
    la, _ = tree_flatten(a)
    lb, _ = tree_flatten(b)
    assert len(la) == len(lb)
    for x, y in zip(la, lb):
        np.testing.assert_allclose(x.numpy(), y.numpy(), rtol=tol, atol=tol)


def traced_case(name):
    net = cases.NETS[name]()
    net.eval()
    args, kwargs = cases.inputs()[name]
    return net, tm.trace_module(net, *args, **kwargs)


# a module-level function: wrap must be called at a module's top level
def scaled_sum(x, y, k=2.0):
    return (x + y) * k


scaled_sum = tm.wrap(scaled_sum)


class UsesWrapped(M.Module):
    def forward(self, x, y):
        return F.relu(scaled_sum(x, y, k=3.0))


def test_outputs_match_original_for_new_inputs():
    net, traced = traced_case("resnet")
    for _ in range(3):
        x = rand(2, 3, 8, 8)
        close(traced(x), net(x))
    net, traced = traced_case("functional")
    x, y = rand(2, 4), rand(8)
    close(traced(x, y), net(x, y))
    net, traced = traced_case("kwargs")
    xs, bias = [rand(2, 3), rand(2, 3)], rand(3)
    close(traced(xs, bias=bias), net(xs, bias=bias))
    close(traced(xs, bias), net(xs, bias))  # keyword or positional: the same graph


def test_result_structure_is_kept():
    _, traced = traced_case("functional")
    out = traced(rand(2, 4), rand(8))
    assert set(out) == {"d", "pair"} and isinstance(out["pair"], tuple)


def test_namedtuple_and_registered_container():
    Pair = collections.namedtuple("Pair", "a b")

    class Box:
        def __init__(self, value):
            self.value = value

    tm.register_supported_type(Box, lambda b: ([b.value], None), lambda xs, _: Box(xs[0]))

    class Net(M.Module):
        def forward(self, p, box):
            return Pair(p.a * 2, box.value + p.b), Box(p.a - 1)

    x, y, z = rand(3), rand(3), rand(3)
    traced = tm.trace_module(Net(), Pair(x, y), Box(z))
    (pair, box) = traced(Pair(y, z), Box(x))
    assert isinstance(pair, Pair) and isinstance(box, Box)
    np.testing.assert_allclose(pair.a.numpy(), y.numpy() * 2, rtol=1e-6)
    np.testing.assert_allclose(pair.b.numpy(), x.numpy() + z.numpy(), rtol=1e-6)
    np.testing.assert_allclose(box.value.numpy(), y.numpy() - 1, rtol=1e-6)


def test_wrong_argument_structure_is_a_clear_error():
    _, traced = traced_case("functional")
    with pytest.raises(TypeError, match=r"missing required positional argument: y"):
        traced(rand(2, 4))
    with pytest.raises(TypeError, match=r"traced for the arguments"):
        traced([rand(2, 4)], rand(8))
    _, traced = traced_case("kwargs")
    with pytest.raises(TypeError, match=r"traced for the arguments"):
        traced([rand(2, 3)], bias=rand(3))  # a list of another length
    with pytest.raises(TypeError, match="unexpected keyword"):
        traced([rand(2, 3), rand(2, 3)], scale=rand(3))


def test_unsupported_values_are_clear_errors():
    class ReturnsObject(M.Module):
        def forward(self, x):
            return object()

    with pytest.raises(TypeError, match="register_supported_type"):
        tm.trace_module(ReturnsObject(), rand(2))
    with pytest.raises(TypeError, match="register_supported_type"):
        tm.trace_module(M.ReLU(), {1, 2})
    with pytest.raises(TypeError, match="traces a Module"):
        tm.trace_module(F.relu, rand(2))


def test_python_control_flow_on_values_warns():
    class Branches(M.Module):
        def forward(self, x):
            if x.sum() > 0:  # decided once, in Python
                return x + 1
            return x - 1

    x = mge.Tensor(np.ones(2, np.float32))
    with pytest.warns(UserWarning, match=r"Tensor.__bool__ reads the value"):
        traced = tm.trace_module(Branches(), x)
    # the graph holds the branch taken: MegEngine's behaviour, hence the warning
    np.testing.assert_allclose(traced(-x).numpy(), [0.0, 0.0])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        relu = tm.trace_module(M.ReLU(), x)  # a builtin top module is traced
        assert [type(e).__name__ for e in relu.graph.exprs()][-1] == "CallFunction"
        assert bool(x.sum() > 0)  # nor eager code after the trace


def test_graph_queries():
    _, traced = traced_case("resnet")
    graph = traced.graph
    assert graph.get_function_by_type(F.relu).as_count() == 5
    assert graph.get_function_by_type(F.relu, recursive=False).as_count() == 1
    assert graph.get_method_by_type("__add__").as_count() == 2
    convs = graph.get_module_by_type(M.Conv2d).as_list()
    assert len(convs) == 6 and all(isinstance(n.owner, M.Conv2d) for n in convs)
    fc_out = graph.get_node_by_name("ResNetLike_fc_out").as_unique()
    assert fc_out is graph.outputs[0]
    assert graph.get_node_by_name("resnetlike_FC*").as_count() == 2  # fc, fc_out
    expr = graph.get_expr_by_id(fc_out.expr._id).as_unique()
    assert expr is fc_out.expr and isinstance(expr, CallMethod)
    ids = [e._id for e in graph.exprs()]
    assert ids == list(range(len(ids)))
    nodes = graph.nodes().as_dict()
    assert list(nodes) == list(range(len(nodes)))
    kinds = {type(e) for e in graph.exprs()}
    assert kinds == {Input, GetAttr, CallMethod, CallFunction}
    assert graph.get_dep_exprs(graph.outputs[0])[0] is fc_out.expr
    assert traced.layer1.graph.top_graph is graph
    assert fc_out.qualname == "ResNetLike.fc.[out]"
    assert traced.layer1.graph.qualname == "ResNetLike.layer1"


def test_nodes_record_shapes_and_dtypes():
    _, traced = traced_case("resnet")
    graph = traced.graph
    assert graph.inputs[1].shape == (2, 3, 8, 8)
    assert graph.outputs[0].shape == (2, 10)
    assert np.dtype(graph.outputs[0].dtype) == np.float32


def test_state_dict_is_the_original():
    net, traced = traced_case("resnet")
    assert traced.state_dict().keys() == net.state_dict().keys()
    # a checkpoint of the original loads into the traced module
    other = cases.ResNetLike()
    traced.load_state_dict(other.state_dict())
    other.eval()
    x = rand(2, 3, 8, 8)
    close(traced(x), other(x))
    assert traced.conv1 is net.conv1  # builtin modules are shared, not copied


def test_constants_and_tensors_created_in_forward():
    captured = mge.Tensor([1.0, 2.0, 3.0])

    class Net(M.Module):
        def forward(self, x):
            return x * captured + F.ones((3,)) + mge.Tensor(np.full(3, 5, np.float32))

    traced = tm.trace_module(Net(), rand(3))
    kinds = [type(e).__name__ for e in traced.graph.exprs()]
    assert kinds.count("Constant") == 2 and "CallFunction" in kinds
    x = rand(3)
    close(traced(x), x * captured + 6)


def test_wrap_and_register_as_builtin():
    traced = tm.trace_module(UsesWrapped(), rand(2), rand(2))
    calls = traced.graph.get_function_by_type(scaled_sum).as_list()
    assert len(calls) == 1 and calls[0].kwargs == {} and calls[0].args[2] == 3.0
    x, y = rand(2), rand(2)
    close(traced(x, y), F.relu((x + y) * 3))

    class Twice(M.Module):
        def forward(self, x):
            return F.relu(x) * 2

    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.twice = Twice()

        def forward(self, x):
            return self.twice(x)

    nested = tm.trace_module(Net(), rand(2))
    assert isinstance(nested.twice, tm.TracedModule)
    tm.register_as_builtin(Twice)
    leaf = tm.trace_module(Net(), rand(2))
    assert type(leaf.twice) is Twice
    assert [type(e).__name__ for e in leaf.graph.exprs()] == [
        "Input",
        "Input",
        "GetAttr",
        "CallMethod",
    ]
    with pytest.raises(ValueError, match="top level"):
        tm.wrap(scaled_sum)


def test_module_lists_dicts_and_helpers():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.blocks = [M.Linear(3, 3), M.Linear(3, 3)]
            self.heads = {"a": M.Linear(3, 1)}

        def helper(self, x):
            return F.relu(x)

        def forward(self, x):
            for block in self.blocks:
                x = self.helper(block(x))
            return self.heads["a"](x)

    net = Net()
    traced = tm.trace_module(net, rand(2, 3))
    names = [e.name for e in traced.graph.exprs() if isinstance(e, GetAttr)]
    assert names == ["blocks.0", "blocks.1", "heads.a"]
    x = rand(2, 3)
    close(traced(x), net(x))
    assert traced.state_dict().keys() == net.state_dict().keys()


def test_watch_and_end_points():
    class Net(M.Module):
        def forward(self, x):
            return x + 1 + 2

    traced = tm.trace_module(Net(), mge.Tensor([0.0]))
    first = traced.graph.get_node_by_name("Net_add_out").as_unique()
    traced.set_watch_points(first)
    out = traced(mge.Tensor([1.0]))
    assert out.numpy().tolist() == [4.0]
    assert traced.watch_node_value[first].numpy().tolist() == [2.0]
    traced.clear_watch_points()
    traced(mge.Tensor([1.0]))
    assert traced.watch_node_value == {}
    traced.set_end_points([first])
    assert [t.numpy().tolist() for t in traced(mge.Tensor([1.0]))] == [[2.0]]
    traced.clear_end_points()
    assert traced(mge.Tensor([1.0])).numpy().tolist() == [4.0]


@pytest.mark.parametrize("name", sorted(cases.NETS))
def test_pickle_round_trip(name):
    net, traced = traced_case(name)
    args, kwargs = cases.inputs(np.random.default_rng(3))[name]
    f = io.BytesIO()
    mge.save(traced, f)
    f.seek(0)
    loaded = mge.load(f)
    assert str(loaded.graph) == str(traced.graph)
    close(loaded(*args, **kwargs), net(*args, **kwargs))
    close(pickle.loads(pickle.dumps(traced))(*args, **kwargs), net(*args, **kwargs))
    # the loaded graph is whole: its queries, edits and flatten work
    close(loaded.flatten()(*args, **kwargs), net(*args, **kwargs))
    assert loaded.graph.inputs[0].owner is loaded


def test_flatten_outputs_and_no_traced_calls():
    net, traced = traced_case("resnet")
    flat = traced.flatten()
    x = rand(2, 3, 8, 8)
    close(flat(x), net(x))
    for expr in flat.graph.get_method_by_type("__call__"):
        assert not isinstance(expr.inputs[0].owner, tm.TracedModule)
    assert str(traced.flatten().graph) == str(flat.graph)  # flatten copies


def test_jit_trace_and_dump_of_a_traced_module():
    from megengine.utils.comp_graph_tools import GraphInference

    net, traced = traced_case("resnet")

    @trace(symbolic=True, capture_as_const=True)
    def infer(x):
        return traced(x)

    x = rand(2, 3, 8, 8)
    close(infer(x), net(x))
    close(infer(x), net(x))
    buf = io.BytesIO()
    infer.dump(buf, arg_names=["x"])
    result = GraphInference(io.BytesIO(buf.getvalue())).run(x.numpy())
    np.testing.assert_allclose(next(iter(result.values())), net(x).numpy(), rtol=1e-5, atol=1e-5)


def test_expr_checker_passes_on_correct_records():
    tm_config.enable_expr_checker()
    try:
        net, traced = traced_case("functional")
    finally:
        tm_config._expr_checker = False
    args, _ = cases.inputs()["functional"]
    close(traced(*args), net(*args))


def test_default_checker_can_be_disabled():
    calls = []

    class Counting(M.Module):
        def forward(self, x):
            calls.append(1)
            return x * 2

    tm.trace_module(Counting(), rand(2))
    assert len(calls) == 1  # traced once; the check interprets the graph
    tm.disable_default_checker()
    try:
        assert not tm_config.default_checker_enabled()
    finally:
        tm_config._default_checker = True


def _python_frames(fn):
    frames = []

    def hook(frame, event, arg):
        if event == "call":
            frames.append(frame.f_code.co_name)

    sys.setprofile(hook)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return frames


def test_eager_code_is_restored_after_tracing():
    import megengine.functional.nn as Fnn

    a, p = rand(4), mge.Parameter(np.ones(4, np.float32))

    def ops():
        return a + p, p * a, a < p, -a, abs(a), a**2, a / p, a - p

    tensor_dict = dict(mge.Tensor.__dict__)
    f_dict, nn_dict = dict(F.__dict__), dict(Fnn.__dict__)
    before = _python_frames(ops)
    traced_case("resnet")
    with pytest.raises(TypeError):
        tm.trace_module(cases.Functional(), rand(2, 4))  # a failed trace restores too
    assert _python_frames(ops) == before == ["ops"]  # operators: C slots, no Python frame
    assert dict(mge.Tensor.__dict__) == tensor_dict
    assert dict(F.__dict__) == f_dict and dict(Fnn.__dict__) == nn_dict
    assert tracer.active_module_tracer() is None and not tracer.is_tracing_module()


def test_raw_apply_and_tensor_copies_are_recorded():
    from megengine.core._imperative_rt import apply

    from megengine.core.ops import builtin

    class Net(M.Module):
        def forward(self, x):
            y = apply(builtin.Elemwise(mode="mul"), x, x)[0]
            return mge.Tensor(y) + 1  # a copy that must follow x, not a constant

    traced = tm.trace_module(Net(), rand(3))
    assert any(c.cell_contents is apply for c in Net.forward.__closure__)  # restored
    # MegEngine 1.13 names them alike (it prints the op as "MUL")
    assert [n.name for n in traced.graph.nodes(False)][2:] == ["mul_out", "new_out", "add_out"]
    x = rand(3)
    np.testing.assert_allclose(traced(x).numpy(), x.numpy() ** 2 + 1, rtol=1e-6)
    f = io.BytesIO()
    mge.save(traced, f)
    f.seek(0)
    np.testing.assert_allclose(mge.load(f)(x).numpy(), x.numpy() ** 2 + 1, rtol=1e-6)


def test_one_tensor_passed_twice_and_super_forward():
    class Base(M.Module):
        def __init__(self):
            super().__init__()
            self.fc = M.Linear(3, 3)

        def forward(self, x):
            return self.fc(x)

    class Child(Base):
        def forward(self, x, *rest, **kw):
            y = super().forward(x)
            for r in rest:
                y = y + r
            return y * 2 + kw["b"]

    net = Child()
    x = rand(2, 3)
    traced = tm.trace_module(net, x, x, b=x)  # one object for three arguments
    assert [n.name for n in traced.graph.inputs] == ["self", "x", "rest_0", "kw_0"]
    a, b, c = rand(2, 3), rand(2, 3), rand(2, 3)
    # MegEngine's graph would read rest_0 for x here: each argument is its own input
    close(traced(a, b, b=c), net(a, b, b=c))


def test_tracing_a_module_that_holds_a_traced_module():
    # a TracedModule keeps its argspec (a namedtuple) in __dict__; wrapping it while the outer
    # module was traced rebuilt the namedtuple from one list and raised a TypeError
    class Inner(M.Module):
        def forward(self, x):
            return F.relu(x) + 1

    class Outer(M.Module):
        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, x):
            return self.inner(x - 1) * 2

    x = rand(2, 3)
    outer = Outer(tm.trace_module(Inner(), x))
    traced = tm.trace_module(outer, x)
    for _ in range(2):
        y = rand(2, 3)
        want = (np.maximum(y.numpy() - 1, 0) + 1) * 2
        np.testing.assert_allclose(traced(y).numpy(), want, rtol=1e-6)
    # MegEngine 1.13: a TracedModule traced inside another is no longer the top one
    assert traced.inner.argspec is None and not traced.inner._is_top
    np.testing.assert_allclose(pickle.loads(pickle.dumps(traced))(y).numpy(), want, rtol=1e-6)


def test_functions_kept_in_attributes_are_recorded():
    # self.act = F.relu is looked up before the trace patches F.relu: its calls recorded
    # nothing and the result became a constant of the graph
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.act = F.relu
            self.ops = [F.exp, F.neg]
            self.plain = len  # not a recorded function: left as it is

        def forward(self, x, y):
            z = self.act(x) + self.ops[1](y)
            return self.ops[0](z) * self.plain([1, 2])

    net = Net()
    traced = tm.trace_module(net, rand(2, 3), rand(2, 3))
    assert [e.func for e in traced.graph.get_function_by_type()] == [F.relu, F.neg, F.exp]
    for _ in range(2):
        x, y = rand(2, 3), rand(2, 3)
        want = np.exp(np.maximum(x.numpy(), 0) - y.numpy()) * 2
        np.testing.assert_allclose(traced(x, y).numpy(), want, rtol=1e-5)


def test_tensor_to_is_recorded():
    # Tensor.to ran unrecorded: its result became a constant of the graph (MegEngine records
    # its Copy)
    class Net(M.Module):
        def forward(self, x):
            return x.to(x.device) * 2 + x.to("cpu0")[0, 0]

    traced = tm.trace_module(Net(), rand(2, 3))
    assert [e.method for e in traced.graph.get_method_by_type("to")] == ["to", "to"]
    for model in (traced, pickle.loads(pickle.dumps(traced))):
        x = rand(2, 3)
        want = x.numpy() * 2 + x.numpy()[0, 0]
        np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-6)


def test_quantized_functional_calls_are_recorded():
    # F.quantized's functions were not patched: their results became constants of the graph
    from megengine.core.tensor import dtype as D

    class Net(M.Module):
        def forward(self, x, w):
            y = F.quantized.conv_bias_activation(x, w, None, D.qint8(0.1), nonlinear_mode="relu")
            return y.astype("float32")

    def qrand(*shape):
        return rand(*shape).astype(D.qint8(0.05))

    w = qrand(2, 2, 1, 1)
    traced = tm.trace_module(Net(), qrand(1, 2, 3, 3), w)
    funcs = [e.func for e in traced.graph.get_function_by_type()]
    assert funcs == [F.quantized.conv_bias_activation]
    for _ in range(2):
        x = qrand(1, 2, 3, 3)
        # the exact integer sums in units of the output step (0.05 * 0.05 / 0.1 = 1 / 40)
        sums = np.einsum("nchw,oc->nohw", x.numpy().astype(np.int64), w.numpy()[..., 0, 0])
        real = np.maximum(sums, 0) / 40
        want = np.minimum(np.floor(real + 0.5), 127)
        got = traced(x, w).numpy() / np.float32(0.1)
        tie = real % 1 == 0.5  # float rounding may take a tie either way
        np.testing.assert_allclose(got[~tie], want[~tie], atol=1e-4)
        assert np.all(np.abs(got[tie] - want[tie]) <= 1 + 1e-4)


def test_tracing_a_traced_module_keeps_its_signature():
    class Add(M.Module):
        def forward(self, x, y=None):
            return F.add(x, y)

    a, b = rand(3), rand(3)
    inner = tm.trace_module(Add(), a, y=b)
    for args, kwargs in (((a, b), {}), ((a,), {"y": b}), ((), {"x": a, "y": b})):
        outer = tm.trace_module(inner, *args, **kwargs)
        # MegEngine 1.13 names the inputs after the traced forward's parameters
        assert [n.name for n in outer.graph.inputs] == ["self", "x", "y"]
        assert outer.argspec.args == ["self", "x", "y"]
        c, d = rand(3), rand(3)
        want = c.numpy() + d.numpy()
        for call_args, call_kwargs in (((c, d), {}), ((c,), {"y": d}), ((), {"x": c, "y": d})):
            np.testing.assert_allclose(outer(*call_args, **call_kwargs).numpy(), want, rtol=1e-6)
    with pytest.raises(TypeError):
        outer(c, d, d)


def test_tensor_built_from_a_list_holding_traced_tensors_follows_them():
    # Tensor([1, x, 1]) was recorded as a constant holding the traced x; MegEngine 1.13 records
    # it as Tensor.__new__, so the replay follows a new x (and an in-place op on it is fresh)
    class Net(M.Module):
        def forward(self, x):
            y = mge.Tensor([1, x, 1])
            y += 1
            return x + 2, y

    traced = tm.trace_module(Net(), mge.Tensor(1))
    for v in (2, -5):
        a, b = traced(mge.Tensor(v))
        np.testing.assert_equal(a.numpy(), v + 2)
        np.testing.assert_equal(b.numpy(), [2, v + 1, 2])
    assert traced.graph.get_method_by_type("__new__").as_list()
    _, b = pickle.loads(pickle.dumps(traced))(mge.Tensor(7))
    np.testing.assert_equal(b.numpy(), [2, 8, 2])


def test_qat_modules_keep_their_quantizers():
    # MegEngine 1.13: a QAT module's observer or fake quantizer of a user class becomes a
    # traced_module FakeQuantize holding its qparams; the quantizer slots stay (None where
    # empty); flatten keeps the QAT module's call; a net whose second block fake-quantizes its
    # bias (a raw FakeQuant apply) pickles and flattens
    from functools import partial

    import megengine.module.qat as QM
    import megengine.quantization as Q
    from megengine.traced_module.fake_quant import FakeQuantize

    class MyConvBnRelu(M.ConvBnRelu2d):
        pass

    class MyQATConvBnRelu(QM.ConvBnRelu2d):
        pass

    class MyObserver(Q.MinMaxObserver):
        pass

    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.a = MyConvBnRelu(3, 3, 3, 1, 1)
            self.b = MyConvBnRelu(3, 3, 1)

        def forward(self, x):
            return self.b(self.a(x))

    for observer in (Q.MinMaxObserver, MyObserver):
        qconfig = Q.QConfig(
            weight_observer=partial(observer, dtype="qint8_narrow"),
            act_observer=partial(observer, dtype="qint8"),
            weight_fake_quant=None,
            act_fake_quant=None,
        )
        net = Q.quantize_qat(Net(), qconfig=qconfig, mapping={MyConvBnRelu: MyQATConvBnRelu})
        x = rand(2, 3, 6, 6)
        net.eval()
        net(x)
        Q.disable_observer(net)
        want_scale = net.a.act_observer.get_qparams().scale.numpy()
        traced = tm.trace_module(net, x)
        assert isinstance(traced.a, tm.TracedModule)
        if observer is MyObserver:
            fq = traced.a.act_fake_quant
            assert isinstance(fq, FakeQuantize) and traced.a.act_observer is None
            np.testing.assert_equal(fq.get_qparams().scale.numpy(), want_scale)
        else:
            assert traced.a.act_fake_quant is None
            assert isinstance(traced.a.act_observer, Q.MinMaxObserver)
        flat = traced.flatten()
        assert flat.graph.get_node_by_name("Net_a").as_count() == 1
        loaded = pickle.loads(pickle.dumps(traced))
        for _ in range(2):
            y = rand(2, 3, 6, 6)
            want = net(y).numpy()
            for m in (traced, flat, loaded):
                np.testing.assert_allclose(m(y).numpy(), want, rtol=1e-5, atol=1e-5)


def test_ops_pickle_and_copy_by_their_params():
    import copy

    from megengine.core.ops import builtin

    op = builtin.Elemwise(mode="mul")
    assert pickle.loads(pickle.dumps(op)) == op
    assert copy.deepcopy(op) == op
    op = builtin.FakeQuant(qmin=-3, qmax=5)
    back = pickle.loads(pickle.dumps(op))
    assert (back.qmin, back.qmax) == (-3, 5)
    assert back != builtin.FakeQuant(qmin=-3, qmax=6)


def test_traced_qat_subclass_follows_the_state_it_is_given():
    # a user subclass of a QAT ConvBn is traced: the BatchNorm folding (a base-class helper in
    # another file) was recorded as a constant, so loading new statistics left the old ones;
    # with observers on, its quantizers' QParams arguments raised a TypeError
    import megengine.module.qat as QM
    import megengine.quantization as Q

    class MyConvBn(M.ConvBn2d):
        pass

    class MyQATConvBn(QM.ConvBn2d):
        pass

    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.c = MyConvBn(3, 4, 1)

        def forward(self, x):
            return self.c(x)

    net = Q.quantize_qat(Net(), qconfig=Q.ema_fakequant_qconfig, mapping={MyConvBn: MyQATConvBn})
    Q.disable_fake_quant(net)
    Q.disable_observer(net)
    net.eval()
    traced = tm.trace_module(net, rand(1, 3, 4, 4))
    state = {k: v for k, v in net.state_dict().items()}
    state["c.bn.running_var"] = mge.Tensor(np.full((1, 4, 1, 1), 4.0, np.float32))
    state["c.bn.running_mean"] = mge.Tensor(np.full((1, 4, 1, 1), 0.5, np.float32))
    traced.load_state_dict(state)
    x = rand(1, 3, 4, 4)
    w, b = net.c.conv.weight.numpy(), net.c.conv.bias.numpy().reshape(1, 4, 1, 1)
    conv = np.einsum("oi,nihw->nohw", w[:, :, 0, 0], x.numpy()) + b
    gamma = net.c.bn.weight.numpy().reshape(1, 4, 1, 1)
    beta = net.c.bn.bias.numpy().reshape(1, 4, 1, 1)
    want = (conv - 0.5) / np.sqrt(4.0 + 1e-5) * gamma + beta
    np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-4, atol=1e-5)
