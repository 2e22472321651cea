"""Graph edits (insert_exprs, replace_node, compile, reset_outputs, add_output_node,
add_input_node, set_args_kwargs, eval) and optimize's FuseConvBn: each edited module's
outputs against the same computation written eagerly."""

import os
import sys

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.traced_module as tm
from megengine.traced_module.expr import CallFunction, Constant

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures"))
import traced_module_cases as cases

RNG = np.random.default_rng(11)


def rand(*shape):
    return mge.Tensor(RNG.standard_normal(shape).astype(np.float32))


class Small(M.Module):
    def __init__(self):
        super().__init__()
        self.fc = M.Linear(3, 3)
        self.act = M.ReLU()

    def forward(self, x):
        return self.act(self.fc(x)) * 2


def small():
    net = Small()
    return net, tm.trace_module(net, rand(2, 3))


def test_insert_functional_and_operators_then_replace():
    net, traced = small()
    graph = traced.graph
    fc_out = graph.get_node_by_name("Small_fc_out").as_unique()
    with graph.insert_exprs():
        new = F.neg(fc_out) * 3 + 1
    exprs = graph._exprs
    at = exprs.index(fc_out.expr)
    assert isinstance(exprs[at + 1], CallFunction) and exprs[at + 3] is new.expr  # after fc_out
    graph.replace_node({fc_out: new})
    graph.compile()
    x = rand(2, 3)
    want = np.maximum(-net.fc(x).numpy() * 3 + 1, 0) * 2
    np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-5, atol=1e-6)
    names = [n.name for n in graph.nodes(False)]
    assert len(names) == len(set(names))
    assert new.name == "add_out" and new.top_graph is graph


def test_insert_module_call_and_outputs():
    net, traced = small()
    graph = traced.graph
    act_out = graph.get_node_by_name("Small_act_out").as_unique()
    with graph.insert_exprs(act_out.expr):
        extra = graph.inputs[0].fc(act_out)
    graph.add_output_node(extra)
    x = rand(2, 3)
    out, second = traced(x)
    h = net.act(net.fc(x))
    np.testing.assert_allclose(out.numpy(), h.numpy() * 2, rtol=1e-6)
    np.testing.assert_allclose(second.numpy(), net.fc(h).numpy(), rtol=1e-6)
    graph.reset_outputs({"a": extra, "b": [act_out]})
    got = traced(x)
    assert set(got) == {"a", "b"}
    np.testing.assert_allclose(got["b"][0].numpy(), h.numpy(), rtol=1e-6)
    graph.compile()
    assert graph.get_function_by_type().as_count() == 0
    assert graph.get_method_by_type("__mul__").as_count() == 0  # dead after reset_outputs


def test_insert_call_of_a_user_module_traces_it():
    # a user module called in insert_exprs: its forward's functional calls returned Nodes to
    # the forward (a TypeError); MegEngine 1.13 traces it and puts its TracedModule in place
    class Neg(M.Module):
        def __init__(self):
            super().__init__()
            self.identity = M.Identity()
            self.pair = [M.Identity(), M.Identity()]
            self.bias = mge.Tensor([0.5])

        def forward(self, x):
            x = self.identity(x)
            for m in self.pair:
                x = m(x)
            return F.neg(x) + self.bias

    net, traced = small()
    graph = traced.graph
    act_out = graph.get_node_by_name("Small_act_out").as_unique()
    traced.neg = Neg()
    with graph.insert_exprs():
        neg_out = graph.inputs[0].neg(act_out)
    graph.replace_node({act_out: neg_out})
    graph.compile()
    assert isinstance(traced.neg, tm.TracedModule)
    assert isinstance(traced.neg.identity, M.Identity)
    assert all(n.value is None for n in graph.nodes() if hasattr(n, "value"))
    for _ in range(2):
        x = rand(2, 3)
        want = (0.5 - np.maximum(net.fc(x).numpy(), 0)) * 2
        np.testing.assert_allclose(traced(x).numpy(), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(TypeError), graph.insert_exprs():
        graph.inputs[0].neg(act_out, act_out)


def test_renaming_graphs_and_nodes():
    net, traced = small()
    graph = traced.graph
    out = graph.outputs[0]
    taken = graph.get_node_by_name("Small_act_out").as_unique().name
    # MegEngine 1.13 asserts a free name: callers catch AssertionError
    with pytest.raises(AssertionError, match="already in use"):
        out.name = taken
    with pytest.raises(ValueError, match="already in use"):
        out.name = taken
    graph.name = "Top"
    assert graph.name == "Top"
    assert graph.get_node_by_name(f"Top_{out.name}").as_unique() is out
    assert graph.get_node_by_name(f"Small_{out.name}").as_count() == 0
    # a Node made in an insert_exprs block can be named before the block ends
    with graph.insert_exprs():
        y = out + 1
        y.name = "plus_one"
    graph.replace_node({out: y})
    graph.compile()
    assert graph.outputs[0].name == "plus_one"
    x = rand(2, 3)
    np.testing.assert_allclose(traced(x).numpy(), net(x).numpy() + 1, rtol=1e-6)


def test_naming_a_tensor_in_a_module_the_block_calls_names_its_node():
    class AddTwice(M.Module):
        def forward(self, x):
            x = x + 1
            x.name = "first_add"
            return x + 2

    net, traced = small()
    graph = traced.graph
    out = graph.outputs[0]
    traced.twice = AddTwice()
    with graph.insert_exprs():
        y = graph.inputs[0].twice(out)
    graph.replace_node({out: y})
    graph.compile()
    # MegEngine 1.13 prints this graph for the inserted module
    names = [n.name for n in traced.twice.graph.nodes()]
    assert names == ["self", "x", "first_add", "add_out"]
    x = rand(2, 3)
    np.testing.assert_allclose(traced(x).numpy(), net(x).numpy() + 3, rtol=1e-6)
    # outside a block a Tensor's name is only its attribute, and the class's default is back
    t = rand(1)
    t.name = "plain"
    assert t.name == "plain" and rand(1).name == ""
    assert isinstance(mge.Tensor.__dict__["name"], str)


def test_add_input_node_and_eval():
    _, traced = small()
    graph = traced.graph
    y = graph.add_input_node((2, 3), name="y")
    assert y.name == "y" and graph.inputs[-1] is y
    out = graph.outputs[0]
    with graph.insert_exprs():
        summed = out + y
    graph.reset_outputs(summed)
    x, yv = rand(2, 3), rand(2, 3)
    base = traced.graph.eval(x, yv)[0]
    np.testing.assert_allclose(traced(x, yv).numpy(), base.numpy())
    with pytest.raises(TypeError, match="traced for the arguments"):
        traced(x)
    with pytest.raises(ValueError, match="takes 2 inputs"):
        graph.eval(x)


def test_set_args_kwargs_and_set_arg():
    class Net(M.Module):
        def forward(self, x):
            return F.leaky_relu(x, 0.1)

    traced = tm.trace_module(Net(), rand(4))
    expr = traced.graph.get_function_by_type(F.leaky_relu).as_unique()
    assert expr.named_args["negative_slope"] == 0.1
    expr.set_arg("negative_slope", 0.5)
    x = mge.Tensor([-2.0, 2.0])
    np.testing.assert_allclose(traced(x).numpy(), [-1.0, 2.0])


def test_replace_node_type_mismatch_and_foreign_nodes():
    _, traced = small()
    _, other = small()
    graph = traced.graph
    with pytest.raises(TypeError, match="cannot replace"):
        graph.replace_node({graph.outputs[0]: graph.inputs[0]})
    with pytest.raises(ValueError, match="not in this graph"):
        graph.replace_node({graph.outputs[0]: other.graph.outputs[0]})
    with pytest.raises(ValueError, match="not in the graph"), graph.insert_exprs():
        F.relu(other.graph.outputs[0])
    # a failed block leaves no trace active and the graph unchanged
    assert [type(e).__name__ for e in graph.exprs()][-1] == "CallMethod"
    with graph.insert_exprs():
        F.relu(graph.outputs[0])


def test_edits_in_a_subgraph():
    net, traced = None, None
    net = cases.ResNetLike()
    net.eval()
    traced = tm.trace_module(net, rand(2, 3, 8, 8))
    sub = traced.layer1.graph
    add = sub.get_method_by_type("__add__").as_unique()
    with sub.insert_exprs(add):
        scaled = add.outputs[0] * 0.5
    sub.replace_node({add.outputs[0]: scaled})
    sub.compile()
    x = rand(2, 3, 8, 8)

    def reference(x):
        h = F.relu(net.bn1(net.conv1(x)))
        b = net.layer1
        y = b.bn2(b.conv2(F.relu(b.bn1(b.conv1(h)))))
        h = F.relu((y + b.downsample(h)) * 0.5)
        h = net.layer2(h)
        return net.fc(F.flatten(F.avg_pool2d(h, 4), 1))

    np.testing.assert_allclose(traced(x).numpy(), reference(x).numpy(), rtol=1e-5, atol=1e-5)


def _module_calls(traced):
    return [type(e.inputs[0].owner).__name__ for e in traced.graph.get_method_by_type("__call__")]


def test_fuse_conv_bn_modules():
    net = cases.ResNetLike()
    for bn in [m for m in net.modules() if isinstance(m, M.BatchNorm2d)]:
        c = bn.num_features
        bn.running_mean[...] = rand(1, c, 1, 1)
        bn.running_var[...] = F.abs(rand(1, c, 1, 1)) + 0.5
        bn.weight[...] = rand(*bn.weight.shape)
    net.eval()
    traced = tm.trace_module(net, rand(2, 3, 8, 8))
    fused = tm.optimize(traced, enabled_pass=["FuseConvBn"])
    calls = _module_calls(fused.flatten())
    assert "BatchNorm2d" not in calls and calls.count("Conv2d") == 6
    assert "BatchNorm2d" in _module_calls(traced.flatten())  # optimize works on a copy
    for _ in range(2):
        x = rand(2, 3, 8, 8)
        np.testing.assert_allclose(fused(x).numpy(), net(x).numpy(), rtol=1e-4, atol=1e-4)
    assert fused.conv1.bias is not None and fused.conv1 is not net.conv1


def test_fuse_conv_bn_functional_and_grouped():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.w = mge.Parameter(RNG.standard_normal((4, 3, 3, 3)).astype(np.float32))
            self.mean = rand(1, 4, 1, 1)
            self.var = F.abs(rand(1, 4, 1, 1)) + 0.5
            self.gamma = mge.Parameter(RNG.standard_normal((1, 4, 1, 1)).astype(np.float32))
            self.conv = M.Conv2d(4, 4, 3, groups=2, bias=False)
            self.bn = M.BatchNorm2d(4)

        def forward(self, x):
            y = F.conv2d(x, self.w, None, padding=1)
            y = F.batch_norm(y, self.mean, self.var, self.gamma, None, training=False)
            return self.bn(self.conv(y))

    net = Net()
    net.bn.running_var[...] = F.abs(rand(1, 4, 1, 1)) + 0.1
    net.eval()
    fused = tm.optimize(tm.trace_module(net, rand(2, 3, 6, 6)), "FuseConvBn")
    assert fused.graph.get_function_by_type(F.batch_norm).as_count() == 0
    assert _module_calls(fused) == ["Conv2d"]
    assert sum(isinstance(e, Constant) for e in fused.graph.exprs()) == 2  # folded w, b
    x = rand(2, 3, 6, 6)
    np.testing.assert_allclose(fused(x).numpy(), net(x).numpy(), rtol=1e-4, atol=1e-4)


def test_fuse_conv_bn_keeps_shared_or_training_patterns():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.conv = M.Conv2d(2, 2, 1)
            self.bn = M.BatchNorm2d(2)

        def forward(self, x):
            y = self.conv(x)
            return self.bn(y) + y  # the conv output has two readers: nothing to fold

    net = Net()
    net.eval()
    fused = tm.optimize(tm.trace_module(net, rand(1, 2, 3, 3)))
    assert _module_calls(fused) == ["Conv2d", "BatchNorm2d"]
    with pytest.raises(ValueError, match="no graph pass"):
        tm.optimize(tm.trace_module(net, rand(1, 2, 3, 3)), ["NoSuchPass"])
    assert isinstance(fused.graph.outputs[0].expr, CallFunction) is False


def _exprs_text(traced):
    return [str(e).split("\t", 1)[1] for e in traced.graph.exprs(False)][2:]


def test_fuse_add_mul_as_megengine_on_simple_chains():
    # the graphs MegEngine 1.13's optimize(..., ["FuseAddMul"]) gives for the same modules
    class Adds(M.Module):
        def forward(self, x):
            return (x + 1) + 2

    class Muls(M.Module):
        def forward(self, x):
            y = x * 2
            return F.relu(y * 3)

    x = rand(3)
    adds = tm.optimize(tm.trace_module(Adds(), x), ["FuseAddMul"])
    assert _exprs_text(adds) == ["add_out_2 = x.__add__(3, )"]
    muls = tm.optimize(tm.trace_module(Muls(), x), ["FuseAddMul"])
    assert _exprs_text(muls)[0] == "mul_out_2 = x.__mul__(6, )"
    np.testing.assert_allclose(muls(x).numpy(), np.maximum(x.numpy() * 6, 0), rtol=1e-6)


def test_fuse_add_mul_folds_subtractions_divisions_and_constants():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.k = mge.Parameter([2.0])

        def forward(self, x):
            y = 3 - ((x + 1) + 2)
            w = -((y * self.k) * 0.25 / 2 * 4)
            u = (w - 1) + 1  # cancels
            return F.relu(u) * 4 / 4 + self.k * 5  # the last term is constant

    net = Net()
    traced = tm.trace_module(net, rand(3))
    fused = tm.optimize(traced, ["FuseAddMul"])
    methods = [e.method for e in fused.graph.get_method_by_type()]
    assert methods.count("__mul__") == 0 and "__sub__" not in methods  # k * 0.25 * 0.5 * 4 == 1
    assert "__truediv__" not in methods
    last = fused.graph.outputs[0].expr
    assert isinstance(last.inputs[1].expr, Constant)  # k * 5 folded
    assert last.inputs[1].expr.value.numpy().tolist() == [10.0]
    for _ in range(3):
        x = rand(3)
        np.testing.assert_allclose(fused(x).numpy(), net(x).numpy(), rtol=1e-5, atol=1e-6)


class ConvScale(M.Module):
    def __init__(self):
        super().__init__()
        self.conv = M.Conv2d(2, 2, 1)
        self.bn = M.BatchNorm2d(2)

    def forward(self, x):
        y = F.relu(self.bn(self.conv(x)))
        z = (y + 1) * 3
        return F.max_pool2d(z, 2) * 0.5


def test_backward_fold_scale_as_megengine():
    net = ConvScale()
    net.bn.running_var[...] = F.abs(rand(1, 2, 1, 1)) + 0.5
    net.eval()
    x = rand(1, 2, 4, 4)
    folded = tm.optimize(tm.trace_module(net, x), ["BackwardFoldScale"])
    # MegEngine 1.13 prints this graph for the same module
    assert _exprs_text(folded) == [
        'conv = getattr(self, "conv") -> (Conv2d)',
        "conv_out = conv(x, )",
        "relu_out = elemwise.relu(conv_out, )",
        "add_out = relu_out.__add__(1.5, )",
        "max_pool2d_out = nn.max_pool2d(add_out, 2, None, 0, )",
    ]
    for _ in range(2):
        x = rand(1, 2, 4, 4)
        np.testing.assert_allclose(folded(x).numpy(), net(x).numpy(), rtol=1e-5, atol=1e-5)


def test_backward_fold_scale_keeps_what_cannot_move():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.conv = M.Conv2d(2, 2, 1)

        def forward(self, x):
            a = F.relu(self.conv(x)) * -2  # a negative scale does not pass a ReLU
            b = self.conv(x) * 3  # the conv module is called twice: a scaled copy
            return a + b, x * 3  # an input's scale has no conv to go to

    net = Net()
    x = rand(1, 2, 3, 3)
    folded = tm.optimize(tm.trace_module(net, x), ["BackwardFoldScale"])
    muls = [e for e in folded.graph.get_method_by_type("__mul__")]
    assert len(muls) == 2  # the ReLU's and the input's stay
    assert any(e.name == "conv_scaled" for e in folded.graph.exprs() if hasattr(e, "name"))
    for _ in range(2):
        x = rand(1, 2, 3, 3)
        got, want = folded(x), net(x)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-5)


def test_backward_fold_scale_through_joining_branches():
    class Block(M.Module):
        def __init__(self):
            super().__init__()
            self.conv1 = M.Conv2d(2, 2, 1)
            self.conv2 = M.Conv2d(2, 2, 1)
            self.scale = mge.Tensor([3.0, 4.0])

        def forward(self, x):
            a = F.relu(self.conv1(x)) * self.scale[0]
            b = F.relu(self.conv2(x)) * self.scale[1]
            y = self.scale[0] + (a + b + 4)  # a constant Tensor added: it is scaled too
            return F.relu(y) * 3

    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.b0, self.b1 = Block(), Block()

        def forward(self, x):
            return F.reshape(self.b0(x) + self.b1(x), -1) * 3

    net = Net()
    x = rand(1, 2, 3, 3)
    folded = tm.optimize(tm.trace_module(net, x).flatten(), ["BackwardFoldScale"])
    # MegEngine 1.13 moves every multiplication into the four convolutions too
    assert folded.graph.get_method_by_type("__mul__").as_list() == []
    convs = [e.inputs[0].owner for e in folded.graph.get_method_by_type("__call__")]
    want = [net.b0.conv1, net.b0.conv2, net.b1.conv1, net.b1.conv2]
    for conv, orig, scale in zip(convs, want, [27.0, 36.0, 27.0, 36.0]):
        np.testing.assert_allclose(conv.weight.numpy(), orig.weight.numpy() * scale, rtol=1e-6)
    for _ in range(2):
        x = rand(1, 2, 3, 3)
        np.testing.assert_allclose(folded(x).numpy(), net(x).numpy(), rtol=1e-5, atol=1e-4)


def test_backward_fold_scale_needs_a_conv_on_every_branch():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.conv = M.Conv2d(2, 2, 1)

        def forward(self, x):
            return (self.conv(x) + x) * 3  # the input's branch has no conv to take the 3

    net = Net()
    x = rand(1, 2, 3, 3)
    folded = tm.optimize(tm.trace_module(net, x), ["BackwardFoldScale"])
    assert len(folded.graph.get_method_by_type("__mul__").as_list()) == 1
    np.testing.assert_allclose(folded.conv.weight.numpy(), net.conv.weight.numpy())
    np.testing.assert_allclose(folded(x).numpy(), net(x).numpy(), rtol=1e-6)


def test_reset_inputs():
    net, traced = small()
    graph = traced.graph
    old = graph.inputs[1]
    (new,) = graph.reset_inputs(rand(2, 3))
    assert new.name == "args" and new.shape == (2, 3)
    graph.replace_node({old: new})
    x = rand(2, 3)
    np.testing.assert_allclose(traced(x).numpy(), net(x).numpy(), rtol=1e-6)
    with pytest.raises(TypeError, match="takes Tensors"):
        graph.reset_inputs(3)
