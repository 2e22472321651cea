"""Functional ops and Tensor methods on megengine.utils.network VarNodes, as MegEngine 1.13
allows: each call adds op nodes; the values VarNode.numpy() computes, and those the edited,
dumped model computes (GraphInference), are checked against NumPy. Bad input raises clearly."""

import io

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.core.tensor.utils import astensor1d
from megengine.jit import trace
from megengine.utils.comp_graph_tools import GraphInference
from megengine.utils.network import Network
from megengine.utils.network_node import VarNode


def randn(seed, *shape):
    return np.random.RandomState(seed).standard_normal(shape).astype("float32")


def conv2d_ref(x, w, stride, padding):
    """Naive NCHW cross-correlation."""
    n, _, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - kh) // stride + 1
    ow = (wd + 2 * padding - kw) // stride + 1
    out = np.zeros((n, o, oh, ow), np.float64)
    for i in range(oh):
        for j in range(ow):
            win = xp[:, :, i * stride : i * stride + kh, j * stride : j * stride + kw]
            out[:, :, i, j] = np.einsum("nchw,ochw->no", win, w)
    return out.astype("float32")


def softmax_ref(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


A = randn(0, 2, 3, 4)
B = randn(1, 2, 3, 4)
M = randn(2, 4, 5)
W = randn(3, 3, 2, 2, 2)  # OIHW
MASK = A > 0
IDX = np.random.RandomState(4).randint(0, 3, (2, 4)).astype("int32")

# (id, f(F-side inputs), NumPy reference, inputs)
CASES = [
    ("concat", lambda a, b: F.concat([a, b], axis=1), lambda a, b: np.concatenate([a, b], 1), [A, B]),
    ("stack", lambda a, b: F.stack([a, b], 0), lambda a, b: np.stack([a, b]), [A, B]),
    ("reshape", lambda a: a.reshape(4, -1), lambda a: a.reshape(4, -1), [A]),
    ("F.reshape", lambda a: F.reshape(a, (6, 4)), lambda a: a.reshape(6, 4), [A]),
    ("flatten", lambda a: F.flatten(a, 1), lambda a: a.reshape(2, 12), [A]),
    ("transpose", lambda a: F.transpose(a, (2, 0, 1)), lambda a: a.transpose(2, 0, 1), [A]),
    ("T", lambda a: a.T, lambda a: a.T, [A]),
    ("broadcast_to", lambda a: F.broadcast_to(a[:, :1], (5, 2, 3, 4)),
     lambda a: np.broadcast_to(a[:, :1], (5, 2, 3, 4)), [A]),
    ("repeat", lambda a: F.repeat(a, 3, axis=1), lambda a: np.repeat(a, 3, 1), [A]),
    ("tile", lambda a: F.tile(a, (2, 1, 2)), lambda a: np.tile(a, (2, 1, 2)), [A]),
    ("expand_squeeze", lambda a: F.squeeze(F.expand_dims(a, 1), 1), lambda a: a, [A]),
    ("index_int_slice", lambda a: a[:, 1], lambda a: a[:, 1], [A]),
    ("index_steps", lambda a: a[1, ::-2, 1:3], lambda a: a[1, ::-2, 1:3], [A]),
    ("index_array", lambda a: a[[1, 0, 1]], lambda a: a[[1, 0, 1]], [A]),
    ("index_none_ellipsis", lambda a: a[None, ..., 2], lambda a: a[None, ..., 2], [A]),
    ("index_bool_mask", lambda a, m: a[m], lambda a, m: a[m], [A, MASK]),
    ("sum", lambda a: a.sum(axis=(0, 2)), lambda a: a.sum(axis=(0, 2)), [A]),
    ("mean_keepdims", lambda a: F.mean(a, 1, keepdims=True), lambda a: a.mean(1, keepdims=True),
     [A]),
    ("max", lambda a: F.max(a, -1), lambda a: a.max(-1), [A]),
    ("argmax", lambda a: F.argmax(a, 1), lambda a: a.argmax(1).astype("int32"), [A]),
    ("matmul", lambda a, m: F.matmul(a, m), lambda a, m: a @ m, [A, M]),
    ("at", lambda a, m: a @ m, lambda a, m: a @ m, [A, M]),
    ("conv2d", lambda a, w: F.conv2d(a.reshape(1, 2, 3, 4), w, stride=2, padding=1),
     lambda a, w: conv2d_ref(a.reshape(1, 2, 3, 4), w, 2, 1), [A, W]),
    ("softmax", lambda a: F.nn.softmax(a, axis=1), lambda a: softmax_ref(a, 1), [A]),
    ("max_pool2d", lambda a: F.max_pool2d(a.reshape(1, 2, 3, 4), 2),
     lambda a: a.reshape(1, 2, 3, 4)[:, :, :2].reshape(1, 2, 1, 2, 2, 2).max((3, 5)), [A]),
    ("gather", lambda a, k: F.gather(a[:, 0], 1, k), lambda a, k: np.take_along_axis(a[:, 0], k, 1),
     [A, IDX]),
    ("one_hot", lambda k: F.one_hot(k, 4), lambda k: np.eye(4, dtype="int32")[k], [IDX]),
    # F.topk(x, k) gives the largest k, as MegEngine 1.13 does.
    ("topk", lambda a: F.topk(a.reshape(-1), 3)[0], lambda a: -np.sort(-a.reshape(-1))[:3], [A]),
    ("cond_take", lambda a: F.cond_take(a > 0.5, a)[0], lambda a: a[a > 0.5], [A]),
    ("logsumexp", lambda a: F.logsumexp(a, 2),
     lambda a: np.log(np.exp(a.astype("float64")).sum(2)).astype("float32"), [A]),
    ("astype", lambda a: (a * 3).astype("int32"), lambda a: (a * 3).astype("int32"), [A]),
    ("where", lambda a, b: F.where(a > b, a, b), lambda a, b: np.maximum(a, b), [A, B]),
    ("clip", lambda a: F.clip(a, -0.5, 0.5), lambda a: np.clip(a, -0.5, 0.5), [A]),
    ("cumsum", lambda a: F.cumsum(a, 2), lambda a: np.cumsum(a, 2), [A]),
    # A list is an int32 tensor, promoted with float32 to float32.
    ("elemwise_list", lambda a: a[0, 0] * [1, 2, 3, 4],
     lambda a: a[0, 0] * np.float32([1, 2, 3, 4]), [A]),
    ("promotion", lambda a: (a > 0) + 1.5, lambda a: (a > 0) + np.float32(1.5), [A]),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_op_on_constants_matches_numpy_and_the_dumped_model(case):
    _, fn, ref, inputs = case
    net = Network()
    out = fn(*(net.make_const(v) for v in inputs))
    assert isinstance(out, VarNode)
    expected = ref(*inputs)
    got = out.numpy()
    assert got.shape == expected.shape and got.dtype == np.asarray(expected).dtype.name
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-5)
    # The edited network, dumped and run with the model runtime.
    out.name = "out"
    net.add_output(out)
    for optimize in (False, True):
        buf = io.BytesIO()
        net.dump(buf, optimize_for_inference=optimize)
        np.testing.assert_allclose(
            GraphInference(buf.getvalue()).run()["out"], expected, rtol=1e-5, atol=1e-5
        )
        loaded = Network.load(io.BytesIO(buf.getvalue()))
        np.testing.assert_allclose(loaded.output_vars[0].numpy(), expected, rtol=1e-5, atol=1e-5)


@pytest.fixture
def model():
    """A loaded model: y = x * 2 with input x of shape (2, 3)."""
    f = trace(lambda x: x * 2, capture_as_const=True)
    f(mge.Tensor(np.zeros((2, 3), "float32")))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"], output_names=["y"], optimize_for_inference=False)
    return buf.getvalue()


def test_ops_on_a_loaded_models_vars_run_in_the_dumped_model(model):
    net = Network.load(io.BytesIO(model))
    (y,) = net.output_vars
    c = net.make_const(randn(3, 1, 3))
    z = F.concat([y, c])[:, ::-1].reshape(-1)  # (3, 3) reversed columns, flattened
    z = F.nn.softmax(z.reshape(3, 3) @ F.transpose(z.reshape(3, 3), (1, 0)), axis=0)
    assert z.shape == (3, 3)
    net.add_output(z)
    buf = io.BytesIO()
    net.dump(buf)
    xv = randn(4, 2, 3)
    out = GraphInference(buf.getvalue()).run(xv)
    t = np.concatenate([xv * 2, randn(3, 1, 3)])[:, ::-1]
    np.testing.assert_allclose(list(out.values())[-1], softmax_ref(t @ t.T, 0), rtol=1e-5)


def test_numpy_of_a_var_needing_an_input_raises(model):
    net = Network.load(io.BytesIO(model))
    (x,) = net.input_vars
    with pytest.raises(ValueError, match=r"depends on the input\(s\) x"):
        F.relu(x).numpy()
    with pytest.raises(ValueError, match=r"VarNode.numpy: .*depends on the input\(s\) x"):
        x.numpy()
    # A value read on the host (a shape, an index) is computed; one needing x cannot be.
    with pytest.raises(ValueError, match="depends on the input"):
        F.reshape(x, x.shape[0] * x.sum().astype("int32"))
    with pytest.raises(ValueError, match="depends on the input"):
        int(x[0, 0])


def test_host_values_read_from_constant_vars():
    net = Network()
    a = net.make_const(np.arange(6, dtype="float32"))
    np.testing.assert_equal(
        F.reshape(a, net.make_const([2, -1])).numpy(), np.arange(6).reshape(2, 3)
    )
    np.testing.assert_equal(a.reshape(net.make_const(3), -1).numpy(), np.arange(6).reshape(3, 2))
    np.testing.assert_equal(F.broadcast_to(a[:1], net.make_const([4])).numpy(), np.zeros(4))
    np.testing.assert_equal(a[net.make_const([5, 0])].numpy(), [5, 0])
    assert int(a[4]) == 4 and float(a[1]) == 1.0 and a[2].item() == 2.0
    assert len(a) == 6 and [v.item() for v in a[:2]] == [0.0, 1.0]
    np.testing.assert_equal(np.asarray(a), np.arange(6))
    r = astensor1d([1, net.make_const(2), 3], a)
    assert isinstance(r, VarNode) and r.numpy().tolist() == [1, 2, 3]
    r = astensor1d((2, 2), a, dtype="float32")  # values next to a var become its constants
    assert isinstance(r, VarNode) and r.numpy().tolist() == [2.0, 2.0]


def test_setitem_makes_the_var_stand_for_the_new_value():
    net = Network()
    a = net.make_const(np.arange(4, dtype="int32"))
    before = a * 10  # reads the value before the assignment
    a[1:3] = [7, 8]
    np.testing.assert_equal(a.numpy(), [0, 7, 8, 3])
    np.testing.assert_equal(before.numpy(), [0, 10, 20, 30])
    a[...] = np.full(4, 5, "int32")
    np.testing.assert_equal(a.numpy(), [5, 5, 5, 5])
    np.testing.assert_equal(before.numpy(), [0, 10, 20, 30])
    net.add_output(a, before)
    buf = io.BytesIO()
    net.dump(buf)
    outs = list(GraphInference(buf.getvalue()).run().values())
    np.testing.assert_equal(outs[0], [5, 5, 5, 5])
    np.testing.assert_equal(outs[1], [0, 10, 20, 30])


def test_var_identity_and_tensor_attributes():
    net = Network()
    a = net.make_const(np.zeros((2, 3), "float16"))
    assert VarNode(a.var) is a and a.var is a
    assert (a.size, a.ndim, a.device, a.dtype) == (6, 2, "cpu0", np.float16)
    assert not a  # MegEngine's VarNode has no truth value: False
    # NumPy arrays defer to the var's reflected operators.
    out = np.ones((2, 3), "float32") - a
    assert isinstance(out, VarNode) and out.dtype == np.float32


def test_bad_input_raises():
    net = Network()
    a = net.make_const(np.zeros((2, 3), "float32"))
    with pytest.raises(ValueError, match=r"reshape: cannot reshape \(2, 3\) into \(4, 4\)"):
        F.reshape(a, (4, 4))
    with pytest.raises(ValueError, match=r"concat: shapes \[\(2, 3\), \(2, 2\)\]"):
        F.concat([a, net.make_const(np.zeros((2, 2), "float32"))])
    with pytest.raises(TypeError, match="the operand is None"):
        a + None
    with pytest.raises(IndexError):
        a[0, 0, 0]
    with pytest.raises(TypeError, match="a VarNode can only be assigned a VarNode"):
        a._assign(mge.Tensor([1.0]))
    with pytest.raises(ValueError, match="can only convert an array of size 1"):
        int(a)
