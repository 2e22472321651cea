"""megengine.jit.trace on functional ops: each traced function, replayed on new data by the
compiled graph (its Python body does not run again), gives what numpy (or eager mode, for
convolution and pooling) gives."""

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.jit import trace

RNG = np.random.default_rng(7)


def randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def softmax(x, axis):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def elemwise_chain(x, y):
    return F.exp(-abs(x)) * 3 + F.maximum(x, y) / (1 + y * y) - F.sqrt(abs(y))


def elemwise_chain_ref(x, y):
    return np.exp(-abs(x)) * 3 + np.maximum(x, y) / (1 + y * y) - np.sqrt(abs(y))


# name -> (function, numpy reference or None for eager, argument shapes)
CASES = {
    "elemwise_chain": (elemwise_chain, elemwise_chain_ref, [(3, 4), (3, 4)]),
    "broadcast": (lambda x, b: F.relu(x + b), lambda x, b: np.maximum(x + b, 0), [(2, 5), (5,)]),
    "matmul": (F.matmul, np.matmul, [(4, 3), (3, 5)]),
    "batched_matmul": (F.matmul, np.matmul, [(2, 4, 3), (2, 3, 5)]),
    "linear": (
        lambda x, w, b: F.nn.linear(x, w, b),
        lambda x, w, b: x @ w.T + b,
        [(6, 4), (3, 4), (3,)],
    ),
    "conv2d": (
        lambda x, w: F.conv2d(x, w, stride=2, padding=1),
        None,
        [(2, 3, 7, 7), (4, 3, 3, 3)],
    ),
    "max_pool2d": (lambda x: F.max_pool2d(x, 2), None, [(2, 3, 6, 6)]),
    "avg_pool2d": (lambda x: F.avg_pool2d(x, 3, stride=2, padding=1), None, [(1, 2, 7, 7)]),
    "softmax": (lambda x: F.softmax(x, axis=1), lambda x: softmax(x, 1), [(4, 6)]),
    "sum_mean_max": (
        lambda x: (x.sum(axis=1), F.mean(x), x.max(axis=0, keepdims=True)),
        lambda x: (x.sum(axis=1), x.mean(), x.max(axis=0, keepdims=True)),
        [(3, 5)],
    ),
    "reshape_transpose": (
        lambda x: F.transpose(x.reshape(2, 3, 4), (2, 0, 1)) * 2,
        lambda x: np.transpose(x.reshape(2, 3, 4), (2, 0, 1)) * 2,
        [(6, 4)],
    ),
    "indexing": (
        lambda x: (x[:, 1:3], x[0], x[::-1, ::2] + 1),
        lambda x: (x[:, 1:3], x[0], x[::-1, ::2] + 1),
        [(4, 5)],
    ),
    "concat_stack": (
        lambda a, b: (F.concat([a, b, a], axis=1), F.stack([a, b], axis=0)),
        lambda a, b: (np.concatenate([a, b, a], axis=1), np.stack([a, b], axis=0)),
        [(2, 3), (2, 3)],
    ),
}


def as_tuple(v):
    return v if isinstance(v, tuple) else (v,)


@pytest.mark.parametrize("name", sorted(CASES))
def test_traced_op_matches_reference_on_new_data(name):
    fn, ref, shapes = CASES[name]
    calls = []

    def body(*args):
        calls.append(1)
        return fn(*args)

    traced = trace(body)
    for step in range(3):
        arrays = [randn(*s) for s in shapes]
        got = as_tuple(traced(*[mge.Tensor(a) for a in arrays]))
        if ref is not None:
            want = as_tuple(ref(*arrays))
        else:
            want = tuple(t.numpy() for t in as_tuple(fn(*[mge.Tensor(a) for a in arrays])))
        assert len(got) == len(want)
        for g, w in zip(got, want):
            assert isinstance(g, mge.Tensor)
            assert g.shape == tuple(np.shape(w)), (step, g.shape, np.shape(w))
            np.testing.assert_allclose(g.numpy(), w, rtol=1e-5, atol=1e-5)
    assert len(calls) == 1  # the replays ran the compiled graph, not the Python body


def test_int_and_bool_dtypes_replay():
    @trace
    def f(x, y):
        return (x + y) * 2, x < y

    for _ in range(2):
        a = RNG.integers(-5, 5, size=(3, 4)).astype(np.int32)
        b = RNG.integers(-5, 5, size=(3, 4)).astype(np.int32)
        s, lt = f(mge.Tensor(a), mge.Tensor(b))
        assert s.dtype == np.int32 and lt.dtype == np.bool_
        np.testing.assert_array_equal(s.numpy(), (a + b) * 2)
        np.testing.assert_array_equal(lt.numpy(), a < b)


def test_results_are_fresh_tensors_each_replay():
    f = trace(lambda x: x * 2)
    f(mge.Tensor([1.0]))
    r1 = f(mge.Tensor([2.0]))
    r2 = f(mge.Tensor([3.0]))
    assert r1.item() == 4.0 and r2.item() == 6.0  # the second replay left the first's result


def test_output_structure_and_non_tensor_arguments():
    @trace
    def f(inputs, scale, *, name="x"):
        a, b = inputs["a"], inputs["b"]
        return {"sum": a + b, "scaled": [a * scale, name]}

    for _ in range(2):
        a, b = randn(2), randn(2)
        out = f({"a": mge.Tensor(a), "b": mge.Tensor(b)}, 3.0, name="y")
        assert set(out) == {"sum", "scaled"} and out["scaled"][1] == "y"
        np.testing.assert_allclose(out["sum"].numpy(), a + b, rtol=1e-6)
        np.testing.assert_allclose(out["scaled"][0].numpy(), a * 3.0, rtol=1e-6)


def test_returning_an_argument_and_a_python_constant():
    f = trace(lambda x, y: (x, y + 1, 5))
    for v in (1.0, 2.0):
        x, y, c = f(mge.Tensor([v]), mge.Tensor([10 * v]))
        assert (x.item(), y.item(), c) == (v, 10 * v + 1, 5)


def test_same_tensor_twice_then_two_tensors():
    f = trace(lambda x, y: x - y)
    t = mge.Tensor([5.0])
    assert f(t, t).item() == 0.0
    # one graph input stood for both arguments: distinct ones must not reuse it
    assert f(mge.Tensor([5.0]), mge.Tensor([2.0])).item() == 3.0
