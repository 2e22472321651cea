"""Module mechanics: discovery, names, hooks, train/eval, state_dict round trips and errors,
repr. The modules here are built from Parameters and F.matmul only."""

import logging
from collections import OrderedDict

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager
from megengine.logger import get_logger

rng = np.random.default_rng(0)


def _param(*shape):
    return mge.Parameter(rng.normal(size=shape).astype(np.float32))


class Dense(M.Module):
    def __init__(self, n_in, n_out):
        super().__init__()
        self.w = _param(n_in, n_out)
        self.b = _param(n_out)

    def forward(self, x):
        return F.matmul(x, self.w) + self.b


class Stats(M.Module):
    """A parameter and a buffer, like BatchNorm's weight and running mean."""

    def __init__(self, n):
        super().__init__()
        self.scale = mge.Parameter(np.ones(n, dtype=np.float32))
        self.count = mge.Tensor(np.zeros(n, dtype=np.float32))

    def forward(self, x):
        if self.training:
            self.count._reset(self.count + 1)
        return x * self.scale


class Net(M.Module):
    def __init__(self):
        super().__init__()
        self.first = Dense(3, 4)
        self.blocks = [Dense(4, 4), (Dense(4, 4), Stats(4))]
        self.heads = {"b": Dense(4, 2), "a": Dense(4, 1)}
        self.extra = _param(2)
        self.not_a_tensor = [1, "x", None]

    def forward(self, x):
        x = F.relu(self.first(x))
        x = self.blocks[0](x)
        x = self.blocks[1][1](self.blocks[1][0](x))
        return self.heads["b"](x), self.heads["a"](x)


def test_discovery_in_attributes_lists_tuples_and_dicts():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == [
        "blocks.0.b",
        "blocks.0.w",
        "blocks.1.0.b",
        "blocks.1.0.w",
        "blocks.1.1.scale",
        "extra",
        "first.b",
        "first.w",
        "heads.a.b",
        "heads.a.w",
        "heads.b.b",
        "heads.b.w",
    ]
    assert [n for n, _ in net.named_buffers()] == ["blocks.1.1.count"]
    assert len(list(net.tensors())) == 13
    assert all(isinstance(p, mge.Parameter) for p in net.parameters())
    assert not any(isinstance(b, mge.Parameter) for b in net.buffers())
    assert [n for n, _ in net.named_children()] == [
        "blocks.0",
        "blocks.1.0",
        "blocks.1.1",
        "first",
        "heads.a",
        "heads.b",
    ]
    assert [n for n, _ in net.named_modules()][:3] == ["", "blocks.0", "blocks.1.0"]
    assert len(list(net.modules())) == 7
    assert next(n for n, _ in net.named_parameters(prefix="net")) == "net.blocks.0.b"
    assert [n for n, _ in net.named_parameters(recursive=False)] == ["extra"]
    assert len(list(net.parameters(requires_grad=True))) == 12
    with pytest.raises(TypeError, match="unexpected keyword"):
        list(net.parameters(bogus=1))


def test_shared_parameters_and_modules_are_listed_once():
    class Shared(M.Module):
        def __init__(self):
            super().__init__()
            self.a = Dense(2, 2)
            self.b = self.a
            self.w = self.a.w

    m = Shared()
    assert [n for n, _ in m.named_parameters()] == ["a.b", "a.w"]
    assert len(list(m.modules())) == 2


def test_cycles_and_tensors_shared_between_children():
    class Child(M.Module):
        def __init__(self, w):
            super().__init__()
            self.w = w
            self.parent = None

    class Parent(M.Module):
        def __init__(self):
            super().__init__()
            shared = _param(2)
            self.a, self.b = Child(shared), Child(shared)
            self.a.parent = self  # a reference back up the tree

    m = Parent()
    assert [n for n, _ in m.named_parameters()] == ["a.w"]
    assert [n for n, _ in m.named_modules()] == ["", "a", "b"]
    sd = m.state_dict()
    assert list(sd) == ["a.w", "b.w"]  # as MegEngine: each child lists its own tensors
    other = Parent()
    other.load_state_dict(sd)
    np.testing.assert_array_equal(other.b.w.numpy(), sd["b.w"])


def test_parameters_train_with_grad_manager():
    net = Net()
    x = mge.Tensor(rng.normal(size=(5, 3)).astype(np.float32))
    params = list(net.parameters())
    gm = GradManager().attach(params)
    with gm:
        y1, y2 = net(x)
        gm.backward((y1**2).mean() + (y2**2).mean())
    assert all(p.grad is not None for p in params if p is not net.extra)
    assert net.extra.grad is None
    net.zero_grad()
    assert all(p.grad is None for p in params)


def test_train_eval_and_apply():
    net = Net()
    assert all(m.training for m in net.modules())
    net.eval()
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.train(False, recursive=False)
    assert not net.training and net.first.training
    seen = []
    net.apply(lambda m: seen.append(type(m).__name__))
    assert seen.count("Dense") == 5 and seen[0] == "Net"
    stats = net.blocks[1][1]
    stats.eval()
    stats(mge.Tensor(np.ones(4, dtype=np.float32)))
    assert stats.count.numpy().tolist() == [0.0] * 4


def test_forward_hooks():
    m = Dense(2, 2)
    x = mge.Tensor(np.ones((1, 2), dtype=np.float32))
    calls = []
    h1 = m.register_forward_pre_hook(lambda mod, inputs: calls.append(("pre", mod)))
    h2 = m.register_forward_pre_hook(lambda mod, inputs: (inputs[0] * 2,))
    h3 = m.register_forward_hook(lambda mod, inputs, out: out + 100)
    got = m(x).numpy()
    want = (np.ones((1, 2)) * 2) @ m.w.numpy() + m.b.numpy() + 100
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert calls == [("pre", m)]
    h2.remove()
    h3.remove()
    h3.remove()  # twice is harmless
    np.testing.assert_allclose(m(x).numpy(), np.ones((1, 2)) @ m.w.numpy() + m.b.numpy(), 1e-5)
    h1.remove()
    m(x)
    assert len(calls) == 2
    # a pre-hook may return a single value instead of a tuple
    m.register_forward_pre_hook(lambda mod, inputs: inputs[0] * 0)
    np.testing.assert_allclose(m(x).numpy(), m.b.numpy()[None], rtol=1e-6)
    with pytest.raises(TypeError, match="callable"):
        m.register_forward_hook(3)


def test_state_dict_round_trip_keeps_identity():
    a, b = Net(), Net()
    sd = a.state_dict()
    assert isinstance(sd, OrderedDict)
    own = ["extra"]  # this module's own tensors first, then each sub-module's (as MegEngine)
    assert list(sd) == own + [n for n, _ in a.named_tensors() if n not in own]
    assert sorted(sd) == sorted(n for n, _ in a.named_tensors())
    assert all(isinstance(v, np.ndarray) for v in sd.values())
    w_before = b.first.w
    b.load_state_dict(sd)
    assert b.first.w is w_before  # loaded in place
    for (n1, t1), (n2, t2) in zip(a.named_tensors(), b.named_tensors()):
        assert n1 == n2
        np.testing.assert_array_equal(t1.numpy(), t2.numpy())
    x = mge.Tensor(rng.normal(size=(2, 3)).astype(np.float32))
    np.testing.assert_array_equal(a(x)[0].numpy(), b(x)[0].numpy())
    # the state_dict is a copy: changing the module later does not change it
    a.extra._reset(a.extra + 1)
    np.testing.assert_array_equal(sd["extra"], b.extra.numpy())
    kept = a.state_dict(keep_var=True)
    assert kept["extra"] is a.extra
    assert next(iter(a.state_dict(prefix="m.").keys())) == "m.extra"


def test_load_state_dict_errors_and_non_strict():
    net = Net()
    sd = net.state_dict()
    missing = dict(sd)
    del missing["first.w"]
    with pytest.raises(KeyError, match=r"missing keys \['first.w'\]"):
        net.load_state_dict(missing)
    extra = dict(sd, bogus=np.zeros(1, np.float32))
    with pytest.raises(KeyError, match=r"unexpected keys \['bogus'\]"):
        net.load_state_dict(extra)
    bad = dict(sd, extra=np.zeros((3,), np.float32))
    with pytest.raises(ValueError, match=r"'extra' has shape \(2,\) in the module, got \(3,\)"):
        net.load_state_dict(bad)
    with pytest.raises(TypeError, match="dict or a callable"):
        net.load_state_dict([1, 2])
    # nothing was loaded by the failing calls
    np.testing.assert_array_equal(net.first.w.numpy(), sd["first.w"])
    # non-strict loads what both have
    partial = {"extra": np.array([7.0, 8.0], np.float32), "bogus": np.zeros(1)}
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    log = get_logger("megengine.module.module")
    log.addHandler(handler)
    try:
        net.load_state_dict(partial, strict=False)
    finally:
        log.removeHandler(handler)
    assert net.extra.numpy().tolist() == [7.0, 8.0]
    # each key passed over is named in a warning, as MegEngine's strict=False does
    messages = [r.getMessage() for r in records if r.levelno == logging.WARNING]
    assert any("unused keys ['bogus']" in m for m in messages), messages
    assert any("missing keys" in m and "'first.w'" in m for m in messages), messages
    # Tensors and float64 arrays are accepted, keeping the module's dtype
    net.load_state_dict({"extra": np.array([1.5, 2.5])}, strict=False)
    assert net.extra.dtype == np.float32 and net.extra.numpy().tolist() == [1.5, 2.5]
    net.load_state_dict({"extra": mge.Tensor([3.0, 4.0])}, strict=False)
    assert net.extra.numpy().tolist() == [3.0, 4.0]


def test_load_state_dict_with_a_closure():
    net = Net()

    def closure(name, tensor):
        return np.full(tensor.shape, 0.5, np.float32) if name.startswith("heads") else None

    net.load_state_dict(closure, strict=False)
    assert float(net.heads["a"].w.numpy().max()) == 0.5
    assert float(net.first.w.numpy().max()) != 0.5
    with pytest.raises(KeyError, match="missing keys"):
        net.load_state_dict(closure)


def test_repr_of_the_tree():
    class Leaf(M.Module):
        def _module_info_string(self):
            return "k=1"

    class Tree(M.Module):
        def __init__(self):
            super().__init__()
            self.leaf = Leaf()
            self.inner = [Leaf(name="x")]

    assert repr(Leaf()) == "Leaf(k=1)"
    assert repr(M.Module()) == "Module()"
    # sub-modules in assignment order, those in lists too
    assert repr(Tree()) == "Tree(\n  (leaf): Leaf(k=1)\n  (inner.0): Leaf(k=1)\n)"
    nested = M.Sequential(Tree())
    assert repr(nested).splitlines()[1] == "  (0): Tree("
    assert repr(nested).splitlines()[3] == "    (inner.0): Leaf(k=1)"

    class Both(Leaf):
        def __init__(self):
            super().__init__()
            self.sub = Leaf()

    assert repr(Both()) == "Both(\n  k=1\n  (sub): Leaf(k=1)\n)"

    class Aliased(M.Module):
        def __init__(self):
            super().__init__()
            self.a = Leaf()
            self.b = self.a

    # one module under two names is shown under both (discovery yields it once)
    assert repr(Aliased()) == "Aliased(\n  (a): Leaf(k=1)\n  (b): Leaf(k=1)\n)"
    assert len(list(Aliased().modules())) == 2


def test_non_str_dict_keys_holding_tensors_are_rejected():
    class Keyed(M.Module):
        def __init__(self, table):
            super().__init__()
            self.table = table

    # a name like "table.True" would not read back as the key True
    for table in ({True: _param(2), False: 0}, {1: M.Module()}, {"a": [{2: _param(1)}]}):
        with pytest.raises(AssertionError, match="keys for Tensor and Module must be str"):
            list(Keyed(table).named_parameters())
        with pytest.raises(AssertionError, match="error key: "):
            Keyed(table).state_dict()
    # keys that hold neither are fine, as are str keys that do
    ok = Keyed({1: "x", "w": _param(3)})
    assert [n for n, _ in ok.named_parameters()] == ["table.w"]


def test_forward_must_be_defined():
    with pytest.raises(NotImplementedError, match="Module does not define forward"):
        M.Module()(1)


def test_sequential_positional_and_ordered_dict():
    d1, d2 = Dense(3, 4), Dense(4, 2)
    seq = M.Sequential(d1, d2)
    x = mge.Tensor(rng.normal(size=(2, 3)).astype(np.float32))
    np.testing.assert_allclose(seq(x).numpy(), d2(d1(x)).numpy(), rtol=1e-6)
    assert len(seq) == 2 and seq[0] is d1 and seq[-1] is d2 and list(seq) == [d1, d2]
    assert [n for n, _ in seq.named_parameters()] == ["0.b", "0.w", "1.b", "1.w"]
    named = M.Sequential(OrderedDict([("enc", d1), ("dec", d2)]))
    assert [n for n, _ in named.named_children()] == ["enc", "dec"]
    assert named.enc is d1
    assert list(named.state_dict()) == ["enc.b", "enc.w", "dec.b", "dec.w"]
    sub = seq[1:]
    assert len(sub) == 1 and sub[0] is d2
    many = M.Sequential(*[Dense(2, 2) for _ in range(11)])
    assert [n for n, _ in many.named_children()][:3] == ["0", "1", "2"]
    del many[0]
    assert len(many) == 10
    many[0] = d1
    assert many[0] is d1
    with pytest.raises(TypeError, match="not a Module"):
        M.Sequential(d1, 3)


class _Block(M.Module):
    def __init__(self):
        super().__init__()
        self.conv = M.Conv2d(2, 2, 1)
        self.bn = M.BatchNorm2d(2)

    def forward(self, x):
        return self.bn(self.conv(x))


class _WalkNet(M.Module):
    def __init__(self):
        super().__init__()
        self.blocks = [_Block(), _Block()]
        self.head = M.Linear(2, 3)
        self.act = M.ReLU()
        self.scale = mge.Parameter(np.ones(1, np.float32))

    def forward(self, x):
        return x


def test_walk_keywords_match_megengine():
    # Every expected list here is what MegEngine 1.13 gives for the same module tree.
    net = _WalkNet()
    names = {id(m): n or "<root>" for n, m in net.named_modules()}
    names.update({id(t): n for n, t in net.named_tensors()})

    def nm(obj):
        return None if obj is None else names[id(obj)]

    mods = ["act", "blocks.0", "blocks.0.bn", "blocks.0.conv", "blocks.1", "blocks.1.bn"]
    mods += ["blocks.1.conv", "head"]
    parents = ["<root>", "<root>", "blocks.0", "blocks.0", "<root>", "blocks.1", "blocks.1"]
    parents += ["<root>"]
    assert [(nm(m), nm(p)) for m, p in net.modules(with_parent=True)] == [("<root>", None)] + list(
        zip(mods, parents)
    )
    got = [(k, nm(m), nm(p)) for k, m, p in net.named_modules(prefix="net", with_parent=True)]
    assert got == [("net", "<root>", None)] + [("net." + m, m, p) for m, p in zip(mods, parents)]
    assert [k for k, _ in net.named_modules(recursive=False)] == [
        "",
        "act",
        "blocks.0",
        "blocks.1",
        "head",
    ]
    top = ["act", "blocks.0", "blocks.1", "head"]
    assert [k for k, _ in net.named_children(prefix="p")] == ["p." + k for k in top]
    assert [(nm(m), nm(p)) for m, p in net.children(with_parent=True)] == [
        (k, "<root>") for k in top
    ]
    got = [(k, nm(p)) for k, _, p in net.named_tensors(with_parent=True)]
    assert got[:4] == [
        ("blocks.0.bn.bias", "blocks.0.bn"),
        ("blocks.0.bn.running_mean", "blocks.0.bn"),
        ("blocks.0.bn.running_var", "blocks.0.bn"),
        ("blocks.0.bn.weight", "blocks.0.bn"),
    ]
    assert got[-3:] == [("head.bias", "head"), ("head.weight", "head"), ("scale", "<root>")]
    assert len(got) == 15
    assert [k for k, _ in net.named_buffers(prefix="x")] == [
        f"x.blocks.{i}.bn.running_{s}" for i in (0, 1) for s in ("mean", "var")
    ]
    assert [(nm(t), nm(p)) for t, p in net.parameters(with_parent=True)][-1] == (
        "scale",
        "<root>",
    )
    # seen: objects already visited are skipped, with what they hold.
    skipped = [nm(m) for m in net.modules(seen={id(net.blocks[0])})]
    assert skipped == ["<root>", "act", "blocks.1", "blocks.1.bn", "blocks.1.conv", "head"]
    # The keywords each walk sets itself are not accepted again, as in MegEngine.
    for call in (
        lambda: net.tensors(predicate=bool),
        lambda: net.modules(with_key=True),
        lambda: net.parameters(bogus=1),
    ):
        with pytest.raises(TypeError):
            list(call())
