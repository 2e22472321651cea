"""trace(symbolic_shape=...): shapes the traced function reads follow the inputs in the graph
(True, the default) or are constants of it (False), as in MegEngine; a shape used as a fixed
value makes trace.dump refuse dynamic input dimensions (TraceError) instead of writing a model
that would be wrong at another batch."""

import doctest
import io

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
from megengine.core.tensor import shape_dim
from megengine.jit import TraceError, trace
from megengine.utils.comp_graph_tools import GraphInference

C_SHAPE = type(mge.Tensor.__dict__["shape"])  # the C getter, outside traces


def x_of(n, seed=0):
    return np.random.default_rng(seed).standard_normal((n, 2, 3)).astype("float32")


def dump_dynamic(fn, n=4, symbolic_shape=True):
    f = trace(fn, capture_as_const=True, symbolic_shape=symbolic_shape)
    f(mge.Tensor(x_of(n)))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"], input_shapes={"x": (-1, 2, 3)})
    return f, GraphInference(buf.getvalue())


@pytest.mark.parametrize(
    "fn, ref",
    [
        (lambda x: x.reshape(x.shape[0], -1), lambda a: a.reshape(a.shape[0], -1)),
        (lambda x: F.reshape(x, (x.shape[0], -1)), lambda a: a.reshape(a.shape[0], -1)),
        (lambda x: x.reshape(x.shape[0] * x.shape[1], -1), lambda a: a.reshape(-1, 3)),
        (lambda x: x.reshape(-1, x.shape[1] * x.shape[2]), lambda a: a.reshape(-1, 6)),
        (lambda x: x.reshape(x.size // 3, 3), lambda a: a.reshape(-1, 3)),
        (lambda x: F.reshape(x, x.size), lambda a: a.reshape(-1)),
        (lambda x: x.reshape(x.shape), lambda a: a),
        (
            lambda x: x.reshape(-x.shape[0] * -1, 3, 2)[:, :, 1],
            lambda a: a.reshape(-1, 3, 2)[:, :, 1],
        ),
        (lambda x: x * x.shape[0], lambda a: a * a.shape[0]),
        (lambda x: x.shape[0] + x, lambda a: a.shape[0] + a),
        (lambda x: x.sum() / x.size, lambda a: a.sum() / a.size),
        # broadcast_to and the fills take a shape holding dims as a value (BroadcastTo)
        (lambda x: F.broadcast_to(x[:1], x.shape), lambda a: np.broadcast_to(a[:1], a.shape)),
        (
            lambda x: F.broadcast_to(x[:1, :1], (x.shape[0], 2, None)),
            lambda a: np.broadcast_to(a[:1, :1], a.shape),
        ),
        (lambda x: x + F.zeros((x.shape[0], 1, 1)), lambda a: a),
        (lambda x: x * F.full((x.shape[0], 2, 1), 3.0), lambda a: a * 3),
        (lambda x: F.ones((x.shape[0] * 2, 3)), lambda a: np.ones((a.shape[0] * 2, 3))),
        (lambda x: x - F.ones_like(x), lambda a: a - 1),
        (lambda x: F.zeros_like(x), lambda a: np.zeros_like(a)),
        # linspace and arange of dims and tensors: their length and ends are values too
        (
            lambda x: F.linspace(0, x.shape[0] - 1, x.shape[0]),
            lambda a: np.arange(a.shape[0], dtype="float32"),
        ),
        (lambda x: F.arange(x.shape[0], dtype="int32"), lambda a: np.arange(a.shape[0])),
        (
            lambda x: F.arange(1, x.shape[0] * 2, 2).reshape(-1, 1, 1) + x,
            lambda a: np.arange(1, a.shape[0] * 2, 2).reshape(-1, 1, 1) + a,
        ),
        (
            lambda x: F.linspace(x.min(), x.max(), x.shape[0] + 1),
            lambda a: np.linspace(a.min(), a.max(), a.shape[0] + 1),
        ),
        (
            lambda x: F.arange(x.sum() * 0 + 0.25, x.shape[0], 0.5),
            lambda a: np.arange(0.25, a.shape[0], 0.5),
        ),
    ],
)
def test_a_dumped_model_follows_the_shapes_the_function_read(fn, ref):
    f, g = dump_dynamic(fn)
    # No op holds the traced batch (a Reshape to () makes a dim a scalar for arithmetic).
    assert not any(op.startswith("Reshape(shape=[4") for op, _ in f.ops), f.ops
    for n in (1, 7, 4):
        x = x_of(n, n)
        want = ref(x)
        np.testing.assert_allclose(g.run(x)["output_0"], want, rtol=1e-6)
        # The eager function agrees (the references above are its numpy forms).
        np.testing.assert_allclose(fn(mge.Tensor(x)).numpy(), want, rtol=1e-6)


def test_broadcast_to_a_shape_tensor_is_a_graph_input():
    # MegEngine 1.13's test_broadcast traces F.broadcast_to(x, shape) with the shape a Tensor
    # argument and dumps it; the model takes the shape as an input, the output follows it.
    f = trace(lambda x, s: F.broadcast_to(x, s), capture_as_const=True)
    x = np.arange(3, dtype="float32").reshape(3, 1)
    for _ in range(2):
        got = f(mge.Tensor(x), mge.Tensor([2, 3, 4]))
    assert f._mode == "graph"
    np.testing.assert_array_equal(got.numpy(), np.broadcast_to(x, (2, 3, 4)))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x", "s"])
    g = GraphInference(buf.getvalue())
    for shape in ((2, 3, 4), (5, 3, 2), (1, 3, 7)):
        out = g.run(x, np.array(shape, "int32"))["output_0"]
        np.testing.assert_array_equal(out, np.broadcast_to(x, shape))
    # A shape the input cannot broadcast to: the same error as eagerly.
    with pytest.raises(ValueError, match="cannot broadcast shape"):
        f(mge.Tensor(x), mge.Tensor([4, 2]))


def test_shapes_read_while_tracing_are_dims_that_print_as_ints():
    seen = []

    @trace
    def f(x):
        seen.append((x.shape, x.size, str(x.shape), f"{x.shape[0]:d}"))
        return x * 2

    f(mge.Tensor(x_of(4)))
    shape, size, text, formatted = seen[0]
    assert [type(d) for d in shape] == [shape_dim.TracedDim] * 3
    assert type(size) is shape_dim.TracedDim and repr(size) == "24"
    assert text == "(4, 2, 3)" and formatted == "4"
    # Outside the trace (and after it) the shape is a tuple of ints again, from the C getter.
    assert type(mge.Tensor.__dict__["shape"]) is C_SHAPE
    assert type(mge.Tensor(x_of(1)).shape[0]) is int


def test_the_c_getters_come_back_after_the_function_raises():
    @trace
    def f(x):
        raise RuntimeError(f"boom {x.shape}")

    with pytest.raises(RuntimeError, match=r"boom \(4, 2, 3\)"):
        f(mge.Tensor(x_of(4)))
    assert type(mge.Tensor.__dict__["shape"]) is C_SHAPE
    assert type(mge.Tensor.__dict__["size"]) is C_SHAPE


def test_symbolic_shape_false_gives_ints_and_bakes_them_as_megengine_does():
    seen = []

    @trace(capture_as_const=True, symbolic_shape=False)
    def f(x):
        seen.append(type(x.shape[0]))
        return x.reshape(x.shape[0], -1), F.flatten(x, 1)

    a, _ = f(mge.Tensor(x_of(4)))
    assert seen == [int]
    assert [op for op, _ in f.ops] == ["Reshape(shape=[4,-1])", "Reshape(shape=[4,6])"]
    np.testing.assert_array_equal(a.numpy(), x_of(4).reshape(4, 6))
    # Another batch is recorded again, with its own constants, never reshaped to the traced
    # batch (MegEngine raises here: "trace error because tensors not equals").
    b, _ = f(mge.Tensor(x_of(8)))
    np.testing.assert_array_equal(b.numpy(), x_of(8).reshape(8, 6))
    assert [op for op, _ in f.ops] == ["Reshape(shape=[8,-1])", "Reshape(shape=[8,6])"]
    f(mge.Tensor(x_of(4)))  # the dump below is of the recording for batch 4
    with pytest.raises(TraceError, match="symbolic_shape=False"):
        f.dump(io.BytesIO(), arg_names=["x"], input_shapes={"x": (-1, 2, 3)})
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"])  # static shapes: the constants are right
    out = GraphInference(buf.getvalue()).run(x_of(4, 1))
    np.testing.assert_array_equal(out["output_0"], x_of(4, 1).reshape(4, 6))


def test_symbolic_shape_true_records_shape_ops_for_flatten_and_reshape():
    f = trace(lambda x: (x.reshape(x.shape[0], -1), F.flatten(x, 1)))
    f(mge.Tensor(x_of(4)))
    ops = [op for op, _ in f.ops]
    assert ops.count("ReshapeTo()") == 2 and "GetVarShape(axes=[0])" in ops
    assert not any(op.startswith("Reshape(") for op in ops)


@pytest.mark.parametrize(
    "fn, use",
    [
        (lambda x: x.reshape(int(x.shape[0]), -1), "int() of shape[0]"),
        (
            lambda x: x[: x.shape[0] // 2],
            "use as an index of (shape[0] of a (4, 2, 3) tensor // 2)",
        ),
        (lambda x: x * (2 if x.shape[0] > 2 else 3), "comparison (>) of shape[0]"),
        (lambda x: x + mge.Tensor(np.ones(x.shape, "float32")), "use as an index of shape[0]"),
        (lambda x: x.reshape(x.shape[0] % 5, -1), "% of shape[0]"),
        # a float shift (the zoo's anchor grids): a float, so the dim's value
        (lambda x: x * F.arange(0.5, x.shape[0] * 1 + 0.5)[-1], "+ with a float of (shape[0]"),
        (lambda x: x * (0.5 * x.shape[1] - 0.25), "* with a float of shape[1]"),
        (lambda x: x[x.shape[0] - 1], "use as an index of (shape[0] of a (4, 2, 3) tensor - 1)"),
        (lambda x: x[:, x.shape[1] - 1] * 2, "use as an index of (shape[1]"),
    ],
)
def test_a_shape_used_as_a_fixed_value_makes_dump_refuse_dynamic_inputs(fn, use):
    f = trace(fn, capture_as_const=True)
    want = fn(mge.Tensor(x_of(4)))
    got = f(mge.Tensor(x_of(4)))
    np.testing.assert_array_equal(got.numpy(), want.numpy())
    line = fn.__code__.co_firstlineno
    with pytest.raises(TraceError) as e:
        f.dump(io.BytesIO(), arg_names=["x"], input_shapes={"x": (-1, 2, 3)})
    assert use in str(e.value) and f"{__file__}:{line}" in str(e.value)
    # With static input shapes the constant is right, and the model says so.
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"])
    np.testing.assert_array_equal(
        GraphInference(buf.getvalue()).run(x_of(4))["output_0"], want.numpy()
    )


def test_functions_taking_ints_accept_dims():
    @trace
    def f(x):
        n = x.shape[0]
        y = F.copy(x)
        y[n - 1] = 0.0
        return (
            F.split(x, n, axis=0)[0],
            F.repeat(x, n, axis=1),
            mge.random.normal(size=x.shape),
            F.eye(x.shape[2]),
            F.topk(x.reshape(-1), x.shape[1])[0],
            y,
        )

    x = x_of(2)
    a, b, c, eye, top, y = f(mge.Tensor(x))
    assert a.shape == (1, 2, 3) and b.shape == (2, 4, 3) and c.shape == (2, 2, 3)
    np.testing.assert_array_equal(eye.numpy(), np.eye(3, dtype="float32"))
    np.testing.assert_array_equal(top.numpy(), np.sort(x.reshape(-1))[::-1][:2])
    np.testing.assert_array_equal(y.numpy(), np.concatenate([x[:1], np.zeros_like(x[1:])]))


def test_a_returned_dim_is_an_int():
    f = trace(lambda x: (x * 2, x.shape[0]))
    for _ in range(2):
        _, n = f(mge.Tensor(x_of(4)))
        assert type(n) is int and n == 4
    assert f._mode == "graph"


def test_bad_reshapes_to_dims_are_clear_errors():
    def run(fn):
        return trace(fn)(mge.Tensor(x_of(4)))

    with pytest.raises(ValueError, match="invalid target shape"):
        run(lambda x: x.reshape(x.shape[0], -1, -1))
    with pytest.raises(ValueError, match="invalid target shape"):
        run(lambda x: x.reshape(x.shape[0], -2))
    with pytest.raises(ValueError, match="cannot reshape"):
        run(lambda x: x.reshape(x.shape[0], 5))
    with pytest.raises(ValueError, match="cannot reshape"):
        run(lambda x: F.reshape(x, (x.shape[0] * 2, 4)))
    with pytest.raises(ZeroDivisionError):
        run(lambda x: x.reshape(x.shape[0] // 0, -1))
    with pytest.raises(TypeError):
        run(lambda x: x.shape[0] + "a")
    # a dim plus a float is that float (5.5), as it is outside a trace
    with pytest.raises(ValueError, match=r"Reshape\(shape=\[5,-1\]\): cannot reshape"):
        run(lambda x: x.reshape(x.shape[0] + 1.5, -1))


def test_a_call_with_another_shape_replays_or_records_for_it():
    calls = []

    def body(x):
        calls.append(1)
        return x.reshape(x.shape[0], -1)

    f = trace(body)
    f(mge.Tensor(x_of(4)))
    np.testing.assert_array_equal(f(mge.Tensor(x_of(4, 1))).numpy(), x_of(4, 1).reshape(4, 6))
    np.testing.assert_array_equal(f(mge.Tensor(x_of(7))).numpy(), x_of(7).reshape(7, 6))
    assert len(calls) == 2  # batch 4 replayed, batch 7 recorded


def test_traced_dim_examples_run():
    finder, runner = doctest.DocTestFinder(), doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    for test in finder.find(shape_dim, "shape_dim"):
        runner.run(test)
    assert runner.failures == 0 and runner.tries > 0


def test_package_imported_through_an_unnormalised_path(tmp_path):
    # bench/ scripts put "bench/../python" on sys.path: the package's own shape reads must still
    # see plain tuples (they recursed before), and user reads still follow the batch.
    import os
    import subprocess
    import sys

    python_dir = os.path.dirname(os.path.dirname(os.path.abspath(mge.__file__)))
    # The directory holding megengine/, spelt through another one and "..", as bench/ does.
    odd = os.path.join(str(tmp_path), os.path.relpath(python_dir, tmp_path))
    # Inserted at run time, as bench/ does: PYTHONPATH entries are normalised at start-up.
    script = (
        f"import sys; sys.path.insert(0, {odd!r})\n"
        "import numpy as np, megengine as mge, megengine.module as M\n"
        "from megengine.jit import trace\n"
        "conv = M.Conv2d(1, 2, 3)\n"
        "@trace\n"
        "def f(x):\n"
        "    y = conv(x)\n"
        "    return y.reshape(y.shape[0], -1)\n"
        "x = mge.tensor(np.ones((2, 1, 5, 5), 'float32'))\n"
        "print(f(x).shape, f(x).shape)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "(2, 18) (2, 18)"


def test_megengine_trace_option_switch_reports_and_turns_off_shapes_as_values():
    from megengine.core._trace_option import set_symbolic_shape, use_symbolic_shape

    assert use_symbolic_shape() is False  # eager shapes are tuples of ints
    assert set_symbolic_shape(False) is False
    with pytest.raises(NotImplementedError, match="symbolic_shape=True"):
        set_symbolic_shape(True)
    seen = []

    def body(x):
        seen.append((use_symbolic_shape(), type(x.shape[0]).__name__))
        previous = set_symbolic_shape(False)
        seen.append((previous, use_symbolic_shape(), type(x.shape[0]).__name__))
        return x.reshape(x.shape[0], -1)

    trace(body, symbolic_shape=True)(mge.Tensor(x_of(4)))
    assert seen == [(True, "TracedDim"), (True, False, "int")]
    seen.clear()
    trace(lambda x: seen.append(use_symbolic_shape()) or x, symbolic_shape=False)(mge.Tensor([1]))
    assert seen == [False] and use_symbolic_shape() is False


# MegEngine 1.13's results for these traced calls (its linspace and arange take Tensors and
# stay in the graph): each call with new values replays the trace and gives that call's result.
LINSPACE_CALLS = [
    ((1.0, 9.0, 9), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]),
    ((0.0, 4.0, 5), [0.0, 1.0, 2.0, 3.0, 4.0]),
    ((2.5, -1.0, 3), [2.5, 0.75, -1.0]),
]
ARANGE_CALLS = [
    ((1.0, 9.0, 1.0), [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]),
    ((0.0, 4.0, 0.5), [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 3.5]),
    ((2.5, -1.0, -1.5), [2.5, 1.0, -0.5]),
]


@pytest.mark.parametrize("fn, calls", [(F.linspace, LINSPACE_CALLS), (F.arange, ARANGE_CALLS)])
@pytest.mark.parametrize("capture_as_const", [False, True])
def test_linspace_and_arange_of_tensor_arguments_follow_them_when_traced(
    fn, calls, capture_as_const
):
    f = trace(fn, symbolic=True, capture_as_const=capture_as_const)
    for _ in range(2):
        for args, want in calls:
            got = f(*[mge.Tensor(a) for a in args])
            np.testing.assert_array_equal(got.numpy(), np.float32(want))
    assert not any(op.startswith(("Linspace", "Arange")) for op, _ in f.ops), f.ops
    if not capture_as_const:
        return
    buf = io.BytesIO()
    f.dump(buf, arg_names=["start", "stop", "n"])
    g = GraphInference(buf.getvalue())
    for args, want in calls:
        got = g.run(*(np.asarray(a) for a in args))["output_0"]
        np.testing.assert_array_equal(got, np.float32(want))


def test_linspace_and_arange_of_dims_replay_at_another_shape():
    # MegEngine 1.13 gives these for n = 4 and 6 (x.shape[0] is a Tensor there)
    want = {
        4: [[1.0, 2.0, 3.0, 4.0], [0, 1, 2, 3], [1.0, 3.0, 5.0, 7.0], [4.0, 6.0, 8.0]],
        6: [
            [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            [0, 1, 2, 3, 4, 5],
            [1.0, 3.0, 5.0, 7.0, 9.0, 11.0],
            [6.0, 9.0, 12.0],
        ],
    }

    @trace(symbolic=True, capture_as_const=True)
    def f(x):
        n = x.shape[0]
        return (
            F.linspace(0, n - 1, n) + x,
            F.arange(n, dtype="int32"),
            F.arange(1, n * 2, 2),
            F.linspace(x.sum(), x.sum() * 2, 3),
        )

    for n in (4, 6, 4):
        got = f(mge.Tensor(np.ones(n, "float32")))
        assert [r.numpy().tolist() for r in got] == want[n]
        assert got[1].dtype == np.int32
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"], input_shapes={"x": (-1,)})
    g = GraphInference(buf.getvalue())
    for n in (6, 4):
        out = g.run(np.ones(n, "float32"))
        assert [out[f"output_{i}"].tolist() for i in range(4)] == want[n]


@pytest.mark.parametrize(
    "fn, error, message",
    [
        (lambda x: F.linspace(0, 1, x.shape[0] - 5), ValueError, "num must be >= 0, got -1"),
        (lambda x: F.linspace(0, 1, x.sum() * 0 + 2.5), ValueError, "num must be an integer"),
        (lambda x: F.linspace(x, 1, x.shape[0]), ValueError, "expected a scalar"),
        (lambda x: F.arange(0, x.shape[0], x.sum() * 0), ValueError, "step must not be 0"),
        (lambda x: F.arange(x[:2], x.shape[0]), ValueError, "expected a scalar"),
    ],
)
def test_bad_traced_linspace_and_arange_arguments_are_clear_errors(fn, error, message):
    with pytest.raises(error, match=message):
        trace(fn, capture_as_const=True)(mge.Tensor(np.ones(4, "float32")))
