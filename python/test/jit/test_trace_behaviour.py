"""megengine.jit.trace's contract beyond single ops: tensors read from outside (bound or
captured as constants), in-place updates written back, TraceError naming the diverging lines,
exclude_from_trace, methods, nesting, a recording that cannot be compiled, and the options."""

import inspect
import warnings

import numpy as np
import pytest
from megengine.core._imperative_rt import apply

import megengine as mge
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine.autodiff import Function, GradManager
from megengine.core.ops import builtin
from megengine.jit import (
    DTRConfig,
    GraphOptimizationConfig,
    SublinearMemoryConfig,
    TraceError,
    exclude_from_trace,
    is_tracing,
    trace,
)


def line_of(fn, text):
    """The file line of the first source line of `fn` containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    for i, line in enumerate(lines):
        if text in line:
            return start + i
    raise AssertionError(f"{text!r} not in {fn.__name__}")


def test_outside_tensor_is_bound_and_read_at_each_replay():
    w = mge.Tensor([1.0, 2.0])
    f = trace(lambda x: x * w)
    assert f(mge.Tensor([1.0, 1.0])).numpy().tolist() == [1.0, 2.0]
    w._reset(mge.Tensor([10.0, 20.0]))  # eager code changes it between calls
    assert f(mge.Tensor([1.0, 1.0])).numpy().tolist() == [10.0, 20.0]
    w[...] = mge.Tensor([3.0, 4.0])
    assert f(mge.Tensor([2.0, 2.0])).numpy().tolist() == [6.0, 8.0]


def test_capture_as_const_keeps_the_recorded_value():
    w = mge.Tensor([1.0, 2.0])
    f = trace(lambda x: x * w, capture_as_const=True)
    f(mge.Tensor([1.0, 1.0]))
    w._reset(mge.Tensor([10.0, 20.0]))
    assert f(mge.Tensor([1.0, 1.0])).numpy().tolist() == [1.0, 2.0]


def test_constant_made_inside_is_not_rebound():
    @trace
    def f(x):
        c = mge.Tensor([2.0, 3.0])  # made by each eager call; a constant of the graph
        return x + c

    for v in (1.0, 5.0):
        assert f(mge.Tensor([v, v])).numpy().tolist() == [v + 2, v + 3]


def test_in_place_update_is_written_back_every_replay():
    w = mge.Parameter([1.0, 1.0])
    steps = mge.Tensor(0.0)

    @trace
    def f(x):
        y = x * w
        w._reset(w - 0.5 * y)
        steps[...] = steps + 1
        return y

    want_w = np.array([1.0, 1.0], np.float32)
    for i in range(4):
        x = np.array([1.0, 2.0 + i], np.float32)
        y = f(mge.Tensor(x))
        np.testing.assert_allclose(y.numpy(), x * want_w, rtol=1e-6)
        want_w = want_w - 0.5 * x * want_w
        np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-6)  # eager code sees it
        assert steps.item() == i + 1
    assert isinstance(w, mge.Parameter)


def test_replay_reads_bound_tensors_in_place_and_copies_nothing():
    from megengine.core import _imperative_rt as rt

    n = 1 << 20
    w = mge.Parameter(np.arange(n, dtype=np.float32) / n)
    f = trace(lambda x: F.sum(w) * x)
    x = mge.Tensor([2.0])
    f(x)
    f(x)
    rt.reset_peak_memory_stats("cpu0")
    before = rt.memory_stats("cpu0")["allocated"]
    y = f(x)
    # Copying w into the graph would allocate its 4 MiB again; the replay reads it where it lies
    # and allocates only its small output.
    assert rt.memory_stats("cpu0")["peak_allocated"] - before < 4 * n // 4
    np.testing.assert_allclose(y.numpy(), 2.0 * np.arange(n, dtype=np.float64).sum() / n, rtol=1e-4)


def test_replay_of_strided_arguments_and_returned_inputs():
    f = trace(lambda x: (x, x * 2))
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    for k in range(3):
        t = mge.Tensor(base + k)[:, ::2]  # a strided view: gathered before the graph reads it
        same, twice = f(t)
        np.testing.assert_array_equal(same.numpy(), (base + k)[:, ::2])
        np.testing.assert_array_equal(twice.numpy(), 2 * (base + k)[:, ::2])


def test_update_of_an_argument_goes_to_that_calls_argument():
    @trace
    def f(acc, x):
        acc._reset(acc + x)
        return acc * 2

    a, b = mge.Tensor([1.0]), mge.Tensor([100.0])
    assert f(a, mge.Tensor([1.0])).item() == 4.0 and a.item() == 2.0
    assert f(b, mge.Tensor([1.0])).item() == 202.0
    assert (a.item(), b.item()) == (2.0, 101.0)


def test_shape_change_records_again_and_keeps_both_recordings():
    calls = []

    def body(x):
        calls.append(tuple(x.shape))
        y = x + 1
        return F.matmul(y, y.T)

    f = trace(body)
    a, b = np.ones((2, 3), np.float32), np.arange(12, dtype=np.float32).reshape(4, 3)
    for x in (a, b, a, b, b):  # MegEngine's graph takes the new shape too
        np.testing.assert_allclose(f(mge.Tensor(x)).numpy(), (x + 1) @ (x + 1).T)
    # the function ran once per shape; the other calls replayed that shape's graph
    assert calls == [(2, 3), (4, 3)]
    assert f.ops[0][0] == "Elemwise(mode=ADD)"


def test_shape_recordings_are_bounded_and_evict_the_least_recently_used():
    from megengine.jit.tracing import _MAX_RECORDINGS

    calls = []

    def body(x):
        calls.append(x.shape[0])
        return x * 3

    f = trace(body)
    sizes = list(range(1, _MAX_RECORDINGS + 3))
    for n in sizes:
        assert f(mge.Tensor(np.full(n, 2.0, np.float32))).numpy().tolist() == [6.0] * n
    assert calls == sizes
    f(mge.Tensor(np.ones(sizes[-2], np.float32)))  # kept: replayed
    assert calls == sizes
    f(mge.Tensor(np.ones(sizes[0], np.float32)))  # the oldest, evicted: recorded again
    assert calls == sizes + [sizes[0]]


def test_training_step_with_a_smaller_last_batch():
    w = mge.Parameter(np.array([[1.0], [-2.0]], np.float32))
    gm = GradManager().attach(w)
    opt = optim.SGD([w], lr=0.1)

    @trace
    def step(x, y):
        with gm:
            loss = F.mean((F.matmul(x, w) - y) ** 2)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    rng = np.random.default_rng(1)
    xs = rng.normal(size=(10, 2)).astype(np.float32)
    ys = xs @ np.array([[0.5], [0.25]], np.float32)
    want = np.array([[1.0], [-2.0]], np.float32)
    for epoch in range(2):
        for i in range(0, 10, 4):  # batches of 4, 4, 2
            x, y = xs[i : i + 4], ys[i : i + 4]
            loss = step(mge.Tensor(x), mge.Tensor(y))
            grad = 2 * x.T @ (x @ want - y) / len(x)
            np.testing.assert_allclose(loss.item(), np.mean((x @ want - y) ** 2), rtol=1e-5)
            want = want - 0.1 * grad
            np.testing.assert_allclose(w.numpy(), want, rtol=1e-5, atol=1e-6)


def test_dtype_change_raises_trace_error():
    f = trace(lambda x: x * 2)
    f(mge.Tensor([1.0]))
    with pytest.raises(TraceError, match="int32"):
        f(mge.Tensor([1], dtype="int32"))


def test_different_op_path_names_both_lines():
    def body(x, flag):
        if flag:
            return x + 1
        return x * 2

    f = trace(body)
    assert f(mge.Tensor([1.0]), True).item() == 2.0
    assert f(mge.Tensor([3.0]), True).item() == 4.0
    with pytest.raises(TraceError) as e:
        f(mge.Tensor([1.0]), False)
    msg = str(e.value)
    assert f":{line_of(body, 'x * 2')}" in msg and f":{line_of(body, 'x + 1')}" in msg
    assert "MUL" in msg and "ADD" in msg


def test_fewer_ops_than_recorded_raises():
    def body(x, n):
        for _ in range(n):
            x = x + 1
        return x

    f = trace(body)
    f(mge.Tensor([0.0]), 2)
    with pytest.raises(TraceError, match="ran 1 ops, the recording 2"):
        f(mge.Tensor([0.0]), 1)


def test_a_matching_call_with_other_python_arguments_runs_eagerly():
    f = trace(lambda x, unused: x - 1)
    f(mge.Tensor([1.0]), "a")
    assert f(mge.Tensor([5.0]), "b").item() == 4.0  # checked op by op, same ops


def test_exclude_from_trace_runs_every_call():
    seen = []

    @trace
    def f(x):
        y = x * 2
        with exclude_from_trace():
            assert not is_tracing()
            seen.append(y.numpy().tolist())
            z = y + 100  # not recorded
        return y, z

    for v in (1.0, 2.0, 3.0):
        y, z = f(mge.Tensor([v]))
        assert (y.item(), z.item()) == (2 * v, 2 * v + 100)
    assert seen == [[2.0], [4.0], [6.0]]
    assert [op for op, _ in f.ops] == ["Elemwise(mode=MUL)"]
    y, z = f(mge.Tensor([1.0, 2.0]))  # another shape: recorded again, still run every call
    assert z.numpy().tolist() == [102.0, 104.0] and seen[-1] == [2.0, 4.0]
    with pytest.raises(TraceError):
        f(mge.Tensor([1], dtype="int32"))


def test_is_tracing_and_exclude_outside_a_trace():
    assert not is_tracing()
    with exclude_from_trace():
        assert not is_tracing()
    flags = []
    f = trace(lambda x: flags.append(is_tracing()) or x)
    f(mge.Tensor([1.0]))
    assert flags == [True]


def test_ops_record_the_call_sites():
    def body(x):
        a = F.exp(x)
        return a.sum()

    f = trace(body)
    assert f.ops is None
    f(mge.Tensor([1.0, 2.0]))
    ops = f.ops
    assert ops[0][0] == "Elemwise(mode=EXP)"
    assert ops[0][1] == f"{__file__}:{line_of(body, 'F.exp')}"
    assert all(loc.endswith(f":{line_of(body, 'a.sum()')}") for _, loc in ops[1:])


def test_method_and_module():
    class Net(M.Module):
        def __init__(self):
            super().__init__()
            self.fc = M.Linear(3, 2)

        @trace
        def run(self, x):
            return F.relu(self.fc(x))

    net = Net()
    for _ in range(2):
        x = np.random.default_rng(0).standard_normal((4, 3)).astype(np.float32)
        want = np.maximum(x @ net.fc.weight.numpy().T + net.fc.bias.numpy(), 0)
        np.testing.assert_allclose(net.run(mge.Tensor(x)).numpy(), want, rtol=1e-5, atol=1e-6)
        net.fc.weight._reset(net.fc.weight * 2)  # the replay reads the current parameters


def test_decorator_with_options():
    @trace(symbolic=True, opt_level=0)
    def f(x):
        return x * x + x * x  # two equal nodes; opt_level 0 keeps them

    f(mge.Tensor([1.0]))
    assert f(mge.Tensor([3.0])).item() == 18.0
    assert f._graph_text().count("Elemwise(mode=MUL)") == 2

    g = trace(lambda x: x * x + x * x)
    g(mge.Tensor([1.0]))
    # merged at opt_level 2, then fused with the ADD: one MUL step reading x twice
    assert "FusedElemwise(MUL(i0,i0), ADD(s0,s0))" in g._graph_text()


def test_nested_trace_joins_the_outer_one():
    inner = trace(lambda x: x + 1)
    inner(mge.Tensor([0.0]))  # compiled on its own
    outer = trace(lambda x: inner(x) * 3)
    assert outer(mge.Tensor([1.0])).item() == 6.0
    assert outer(mge.Tensor([2.0])).item() == 9.0
    assert [op for op, _ in outer.ops] == ["Elemwise(mode=ADD)", "Elemwise(mode=MUL)"]


class Square(Function):
    def forward(self, x):
        self.x = x
        return x * x

    def backward(self, dy):
        return 2 * self.x * dy


def test_unrecordable_function_warns_and_runs_eagerly():
    f = trace(lambda x: Square()(x) + 1)
    with pytest.warns(RuntimeWarning, match="later calls"):
        assert f(mge.Tensor([2.0])).item() == 5.0
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert f(mge.Tensor([3.0])).item() == 10.0


@pytest.mark.parametrize("capture_as_const", [False, True])
def test_random_generators_replay_the_eager_draws(capture_as_const):
    # A random generator (no inputs) is a node of the graph that no pass folds into a constant;
    # each replay reseeds it with the key the eager call would draw (a VAE's sampling step).
    def sample(mu, logvar):
        eps = mge.random.normal(size=mu.shape)
        return mu + F.exp(0.5 * logvar) * eps + mge.random.uniform(size=mu.shape)

    mu = mge.Tensor(np.zeros((3, 4), "float32"))
    logvar = mge.Tensor(np.full((3, 4), 0.5, "float32"))
    mge.random.seed(5)
    eager = [sample(mu, logvar).numpy() for _ in range(4)]
    mge.random.seed(5)
    f = trace(sample, capture_as_const=capture_as_const)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [f(mu, logvar).numpy() for _ in range(4)]
    assert f._mode == "graph" and len(f._reseed) == 2
    np.testing.assert_array_equal(got, eager)
    assert not np.array_equal(got[1], got[2])  # fresh numbers on each call


def _dropout_step(seed):
    mge.random.seed(seed)
    net = M.Sequential(M.Linear(8, 16), M.ReLU(), M.Dropout(0.5), M.Linear(16, 2))
    for i, p in enumerate(net.parameters()):
        p._reset(mge.Tensor(np.random.RandomState(i).uniform(-0.5, 0.5, p.shape), "float32"))
    gm = GradManager().attach(net.parameters())
    opt = optim.SGD(net.parameters(), lr=0.1)

    def step(x, y):
        with gm:
            loss = F.nn.cross_entropy(net(x), y)
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    return net, step


def test_dropout_replays_draw_the_keys_the_eager_calls_would():
    # The graph keeps DropoutForward (and the DropoutBackward carrying its seed); each replay
    # draws the next keys from megengine.random's generator, so the traced steps are bitwise
    # the eager ones: losses, masks and parameters.
    x = mge.Tensor(np.random.RandomState(9).uniform(-1, 1, (4, 8)).astype("float32"))
    y = mge.Tensor([0, 1, 1, 0])
    net_e, step_e = _dropout_step(3)
    eager = [step_e(x, y).numpy() for _ in range(5)]
    net_t, step_t = _dropout_step(3)
    traced = trace(step_t)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = [traced(x, y).numpy() for _ in range(5)]
    assert traced._mode == "graph" and traced._reseed
    np.testing.assert_array_equal(got, eager)
    assert len({float(v) for v in got}) > 1  # new masks each step
    for a, b in zip(net_e.parameters(), net_t.parameters()):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_dropout_in_check_mode_and_a_fixed_seed():
    x = mge.Tensor(np.ones(1000, np.float32))
    f = trace(lambda x, unused: F.dropout(x, 0.5, training=True))
    a = f(x, 1).numpy()
    b = f(x, 2).numpy()  # another Python argument: checked op by op, the seed aside
    assert f._mode == "graph" and not np.array_equal(a, b)
    op = builtin.DropoutForward(drop_prob=0.5, seed=123)  # a seed the code fixed stays
    g = trace(lambda x: apply(op, x)[0])
    first = g(x).numpy()
    for _ in range(2):
        np.testing.assert_array_equal(g(x).numpy(), first)


def _branch(a):
    if a.sum() > 100:  # bool() of a computed value steers Python
        return a
    return a - 1


def _zero_at(a, i):
    b = a * 1
    b[i] = 0.0
    return b


@pytest.mark.parametrize("symbolic", [False, True])
@pytest.mark.parametrize(
    "fn, make_args",
    [
        (_branch, lambda k: (mge.Tensor(np.arange(6, dtype="float32") * k),)),
        # int() of a value becomes a slice bound
        (lambda a: a[: int(a.max())], lambda k: (mge.Tensor([float(k), 0.0, 0.0]),)),
        # item() of a value becomes a Python constant
        (lambda a: a * a.mean().item(), lambda k: (mge.Tensor([1.0, 2.0, 3.0]) * k,)),
        # a tensor index is read on the host by the setitem
        (
            _zero_at,
            lambda k: (mge.Tensor([1.0, 2.0, 3.0]), mge.Tensor([k % 3])),
        ),
    ],
    ids=["branch", "slice", "item", "setitem_index"],
)
def test_host_reads_of_values_make_the_trace_run_eagerly(symbolic, fn, make_args):
    # A compiled replay runs no Python: one that reused the recording's branch, bound or
    # constant would be silently wrong, so the trace says where the value was read and runs
    # every later call eagerly.
    f = trace(fn, symbolic=symbolic)
    with pytest.warns(RuntimeWarning, match=r"value was read on the host .* at .*\.py:\d+"):
        f(*make_args(1))
    for k in (1, 2, 50):
        args = make_args(k)
        np.testing.assert_array_equal(f(*args).numpy(), fn(*args).numpy())
    assert f._mode == "eager"


@pytest.mark.parametrize("symbolic", [False, True])
def test_copies_to_another_device_make_the_trace_run_eagerly(symbolic):
    # The graph has no op that crosses devices: a replay would give the recording's copy.
    def fn(x):
        y = x.to("cpu1") * 2
        return F.copy(y, "cpu0") + 1

    f = trace(fn, symbolic=symbolic)
    with pytest.warns(RuntimeWarning, match=r"copied to another device \(cpu1\).* at .*\.py:\d+"):
        f(mge.Tensor([1.0, 2.0]))
    for k in (3.0, -1.0):
        assert f(mge.Tensor([k, 1.0])).numpy().tolist() == [2 * k + 1, 3.0]
    assert f._mode == "eager"


def test_copies_on_the_same_device_stay_compiled():
    @trace
    def f(x):
        return x.to(x.device) * 2 + F.copy(x)

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in (1.0, 4.0):
            assert f(mge.Tensor([k])).numpy().tolist() == [3.0 * k]
    assert f._mode == "graph"


def test_reads_that_do_not_steer_the_graph_keep_it_compiled():
    @trace
    def f(x):
        made_here = mge.Tensor([2.0, 3.0])  # from host data: the same on every call
        scale = float(made_here.numpy()[0])
        return x * scale

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for k in (1.0, 4.0):
            assert f(mge.Tensor([k])).numpy().tolist() == [2.0 * k]
    assert f._mode == "graph"


def test_error_in_the_first_call_leaves_the_trace_unrecorded():
    fail = [True]

    @trace
    def f(x):
        if fail[0]:
            raise KeyError("boom")
        return x + 1

    with pytest.raises(KeyError):
        f(mge.Tensor([1.0]))
    assert not is_tracing()
    fail[0] = False
    assert f(mge.Tensor([1.0])).item() == 2.0
    assert f(mge.Tensor([4.0])).item() == 5.0


def test_bad_arguments():
    with pytest.raises(TypeError, match="callable"):
        trace(3)
    with pytest.raises(ValueError, match="opt_level"):
        trace(lambda x: x, opt_level=7)
    with pytest.raises(TypeError, match="dtr_config"):
        trace(lambda x: x, dtr_config=1)


def test_configs_are_accepted_and_checked():
    f = trace(
        lambda x: x + 1,
        sublinear_memory_config=SublinearMemoryConfig(genetic_nr_iter=3),
        dtr_config=DTRConfig(eviction_threshold=1 << 20),
        graph_opt_config=GraphOptimizationConfig(),
        profiling=True,
        symbolic_shape=False,
        without_host=True,
        record_only=True,
    )
    f(mge.Tensor([1.0]))
    assert f(mge.Tensor([2.0])).item() == 3.0
    with pytest.raises(ValueError):
        DTRConfig()
    with pytest.raises(ValueError):
        SublinearMemoryConfig(num_worker=0)


def test_recorded_graph_has_megengine_input_and_output_names():
    w = mge.Tensor([2.0])
    f = trace(lambda x, *, y: (x * w + y, x - y))
    f(mge.Tensor([1.0]), y=mge.Tensor([3.0]))
    text = f._graph_text(compiled=False)
    assert "'arg_0' = input" in text and "'kwarg_y' = input" in text
    assert "'external_0' = input" in text  # w: bound, read at each replay
    assert "'output_0'" in text and "'output_1'" in text
    const = trace(lambda x: x * w, capture_as_const=True)
    const(mge.Tensor([1.0]))
    assert "'external_0' = const [2]" in const._graph_text(compiled=False)


def test_batchnorm_train_mode_statistics_follow_eager():
    rng = np.random.default_rng(3)
    bn_e, bn_t = M.BatchNorm2d(3), M.BatchNorm2d(3)
    traced = trace(lambda x: bn_t(x))
    for _ in range(4):
        x = rng.standard_normal((4, 3, 5, 5)).astype(np.float32) * 2 + 1
        np.testing.assert_allclose(
            traced(mge.Tensor(x)).numpy(), bn_e(mge.Tensor(x)).numpy(), rtol=1e-4, atol=1e-5
        )
        for name in ("running_mean", "running_var"):
            np.testing.assert_allclose(
                getattr(bn_t, name).numpy(), getattr(bn_e, name).numpy(), rtol=1e-5, atol=1e-6
            )
    assert np.abs(bn_t.running_mean.numpy()).sum() > 0.1


def test_methods_that_note_their_tensor_check_it():
    t = mge.Tensor([1.0])
    for call in (
        lambda: mge.Tensor._reset(3, t),
        lambda: mge.Tensor._detach(3),
    ):
        with pytest.raises(TypeError, match="expected a Tensor, got int"):
            call()
    # _assign is a C method: CPython's descriptor refuses the int before it runs
    with pytest.raises(TypeError, match="'_assign' .* doesn't apply to a 'int' object"):
        mge.Tensor._assign(3, t)


def test_grad_left_from_an_earlier_step_is_not_silently_replaced():
    from megengine.autodiff import GradManager

    w = mge.Parameter([1.0, 2.0])
    gm = GradManager().attach(w)

    def body(x):
        with gm:
            gm.backward((w * x).sum())

    step = trace(body)
    step(mge.Tensor([1.0, 1.0]))  # recorded with w.grad None: backward assigns it
    w.grad = None
    step(mge.Tensor([3.0, 4.0]))  # replayed
    assert w.grad.numpy().tolist() == [3.0, 4.0]
    # w.grad is set now: eagerly, backward would accumulate, another op than the recording's
    with pytest.raises(TraceError, match="recording ended"):
        step(mge.Tensor([1.0, 1.0]))


def test_module_mode_change_records_again():
    bn = M.BatchNorm1d(2)
    calls = []

    def body(x):
        calls.append(1)
        return bn(x)

    f = trace(body)
    x = mge.Tensor(np.array([[1.0, 2.0], [3.0, 6.0]], np.float32))
    f(x)
    f(x)
    assert len(calls) == 1
    bn.eval()  # running statistics instead of the batch's: other ops
    mean, var = bn.running_mean.numpy().reshape(-1), bn.running_var.numpy().reshape(-1)
    want = (x.numpy() - mean) / np.sqrt(var + bn.eps)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5)
    assert len(calls) == 2


def test_opt_level_chooses_the_fusion_passes():
    def chain(x):
        return F.relu(x * 2.0 + 1.0) - x

    x = mge.Tensor(np.linspace(-2, 2, 12, dtype="float32").reshape(3, 4))
    want = np.maximum(x.numpy() * 2 + 1, 0) - x.numpy()
    texts = {}
    for level in (1, 2):
        f = trace(chain, opt_level=level)
        f(x)
        np.testing.assert_array_equal(f(x).numpy(), want)  # the compiled graph
        texts[level] = f._graph_text()
    assert "FusedElemwise" not in texts[1] and texts[1].count("Elemwise(mode=") == 4
    assert texts[2].count("FusedElemwise(") == 1 and "Elemwise(mode=" not in texts[2]


def test_opt_level_3_folds_batch_norm_into_the_convolution():
    rng = np.random.default_rng(1)
    net = M.Sequential(M.Conv2d(2, 3, 3), M.BatchNorm2d(3))
    net[1].running_mean[...] = mge.Tensor(rng.standard_normal((1, 3, 1, 1)).astype("float32"))
    net[1].running_var[...] = mge.Tensor(rng.uniform(0.5, 2, (1, 3, 1, 1)).astype("float32"))
    net.eval()
    x = mge.Tensor(rng.standard_normal((2, 2, 6, 6)).astype("float32"))
    want = net(x).numpy()
    f = trace(lambda t: net(t), capture_as_const=True, opt_level=3)
    f(x)
    np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-5, atol=1e-5)
    text = f._graph_text()
    # conv + bias, then batch_norm's SUB, MUL and ADD: one convolution and one bias ADD remain
    assert text.count("ConvolutionForward(") + text.count("ConvBias(") == 1
    assert "SUB" not in text and "MUL" not in text


def _traced_sgd_steps_follow_eager(make_net, x):
    """Three SGD-momentum steps of two copies of ``make_net()`` on ``x``, one eager and one
    traced, checked for the same losses and final parameters; the traced graph's text."""
    from megengine.autodiff import GradManager
    from megengine.optimizer import SGD

    # A fixed initialisation: the comparison depends on it, not on the tests run before. Over 100
    # seeds of _TwoResidualBlocks, one (78) puts a parameter 2.6e-3 of its tensor's largest value
    # past rtol=1e-3 after three momentum steps, eager plain and eager blocked alike (float32 sums
    # in another order, amplified); the others stay within 1e-6 of it (3e-9 for seeds 0-19).
    mge.random.seed(0)
    nets = [make_net(), make_net()]
    nets[1].load_state_dict(nets[0].state_dict())

    def make_step(net):
        gm = GradManager().attach(net.parameters())
        opt = SGD(net.parameters(), lr=0.05, momentum=0.9)

        def step(data):
            with gm:
                loss = net(data)
                gm.backward(loss)
            opt.step().clear_grad()
            return loss

        return step

    eager, traced = make_step(nets[0]), trace(make_step(nets[1]))
    for _ in range(3):
        np.testing.assert_allclose(traced(x).numpy(), eager(x).numpy(), rtol=1e-4)
    want, got = nets[0].state_dict(), nets[1].state_dict()
    for k in want:
        np.testing.assert_allclose(got[k], want[k], rtol=1e-3, atol=1e-5, err_msg=k)
    text = traced._graph_text()
    return text


class _SmallLeNet(M.Module):
    # LeNet's shape: a narrow first convolution, max poolings, a blocked second convolution (6 ->
    # 16 channels) and biases everywhere; no BatchNorm.
    def __init__(self):
        super().__init__()
        self.conv1, self.conv2 = M.Conv2d(1, 6, 5), M.Conv2d(6, 16, 5)
        self.fc = M.Linear(16 * 2 * 2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return F.mean(self.fc(F.flatten(x, 1)) ** 2)


def test_lenet_step_sums_bias_gradients_rows_first_and_fuses_sgd_and_follows_eager():
    rng = np.random.default_rng(11)
    x = mge.Tensor(rng.standard_normal((8, 1, 20, 20)).astype("float32"))
    text = _traced_sgd_steps_follow_eager(_SmallLeNet, x)
    # Each convolution's bias gradient: one sum over each (n, c)'s H*W row, then over the batch
    # (8 x 6 x 16*16 and 8 x 16 x 4*4), no sum of axis 0 over the whole gradient first.
    assert "Reduce(mode=SUM, axis=2)" in text and "{8,6,256}" in text and "{8,16,16}" in text
    # SGD with momentum: one two-output sweep per parameter (6 parameters), the new momentum
    # buffer exported from the sweep that updates the parameter with it.
    assert text.count("FUSE_MUL_ADD3(s0,i3,i4); out s0)") == 6
    assert "Elemwise(mode=FUSE_MUL_ADD3)" not in text
    if "Blocked(" in text:
        # The second relu's mask of the plain pooling gradient stays plain: no conversion in.
        assert "ChannelBlock(" not in text


class _ResidualBlock(M.Module):
    def __init__(self):
        super().__init__()
        self.conv0, self.bn0 = M.Conv2d(3, 20, 3, padding=1, bias=False), M.BatchNorm2d(20)
        self.conv1, self.bn1 = M.Conv2d(20, 20, 3, padding=1, bias=False), M.BatchNorm2d(20)
        self.conv2 = M.Conv2d(20, 20, 3, stride=2, padding=1, bias=False)

    def forward(self, x):
        y = F.relu(self.bn0(self.conv0(x)))
        y = F.relu(self.bn1(self.conv1(y)) + y)
        return F.mean(self.conv2(y) ** 2)


def test_training_step_with_batch_norm_runs_blocked_and_follows_eager():
    # On x86 the layout pass runs the whole step (convolutions, BatchNorm, relus and their
    # gradients) in the blocked layout; elsewhere nothing changes. Either way: eager's values.
    rng = np.random.default_rng(5)
    x = mge.Tensor(rng.standard_normal((4, 3, 9, 9)).astype("float32"))
    text = _traced_sgd_steps_follow_eager(_ResidualBlock, x)
    if "Blocked(" in text:
        for plain in ("BatchNormForward(", "BatchNormBackward(", "ConvolutionBackwardData("):
            assert plain not in text, plain
        assert text.count("ChannelUnblock(") == 1  # the last convolution's value, for the loss
        # bn0's relu (its output's only reader) runs inside the blocked BatchNorm; bn1's output
        # goes to the residual add, which with the relu after it runs inside bn1. y's mask over
        # the gradients' sum (the residual's and conv1's) runs inside bn0's backward.
        assert text.count("BatchNormReluForwardBlocked(") == 1
        assert text.count("BatchNormAddReluForwardBlocked(") == 1
        assert text.count("BatchNormAddReluBackwardBlocked(") == 1


class _TwoResidualBlocks(M.Module):
    # ResNet's basic blocks after a stem: one with the identity shortcut, one that halves the
    # size and doubles the channels with a strided 1x1 convolution and BatchNorm as its shortcut.
    def __init__(self):
        super().__init__()

        def conv_bn(cin, cout, k, stride=1):
            conv = M.Conv2d(cin, cout, k, stride=stride, padding=k // 2, bias=False)
            return M.Sequential(conv, M.BatchNorm2d(cout))

        self.stem = conv_bn(3, 16, 3)
        self.a1, self.a2 = conv_bn(16, 16, 3), conv_bn(16, 16, 3)
        self.b1, self.b2 = conv_bn(16, 32, 3, stride=2), conv_bn(32, 32, 3)
        self.shortcut = conv_bn(16, 32, 1, stride=2)
        self.head = M.Conv2d(32, 8, 1)

    def forward(self, x):
        x0 = F.relu(self.stem(x))
        y1 = F.relu(self.a2(F.relu(self.a1(x0))) + x0)
        y2 = F.relu(self.b2(F.relu(self.b1(y1))) + self.shortcut(y1))
        return F.mean(self.head(y2) ** 2)


def test_residual_blocks_fuse_add_and_relu_into_batch_norm_and_follow_eager():
    # On x86 each block's last BatchNorm takes the residual add and the relu after it, and the
    # backward of a relu whose gradient is a sum (a block's input: the residual's gradient and
    # the first convolution's) takes the sum and the mask, its masked sum read by the residual
    # branch too. Either way: eager's values after three SGD steps.
    rng = np.random.default_rng(13)
    x = mge.Tensor(rng.standard_normal((4, 3, 10, 10)).astype("float32"))
    text = _traced_sgd_steps_follow_eager(_TwoResidualBlocks, x)
    if "Blocked(" in text:
        assert text.count("BatchNormAddReluForwardBlocked(") == 2
        assert text.count("BatchNormReluForwardBlocked(") == 3
        # y1's mask (block b's input) and x0's (block a's): bn a2's and the stem's backward.
        assert text.count("BatchNormAddReluBackwardBlocked(") == 2
        assert text.count("BatchNormReluBackwardBlocked(") == 2
        assert "Elemwise(mode=ADD)" not in text and "Elemwise(mode=RELU)" not in text


class _DepthwiseUnit(M.Module):
    # MobileNet's unit after a first convolution: depthwise 3x3, then pointwise 1x1.
    def __init__(self):
        super().__init__()
        self.conv0, self.bn0 = M.Conv2d(3, 16, 3, padding=1, bias=False), M.BatchNorm2d(16)
        self.dw, self.bn1 = M.Conv2d(16, 16, 3, padding=1, groups=16, bias=False), M.BatchNorm2d(16)
        self.pw = M.Conv2d(16, 24, 1, bias=False)

    def forward(self, x):
        y = F.relu(self.bn0(self.conv0(x)))
        return F.mean(self.pw(F.relu(self.bn1(self.dw(y)))) ** 2)


class _Conv1dNet(M.Module):
    def __init__(self):
        super().__init__()
        self.conv0, self.bn0 = M.Conv1d(3, 20, 3, padding=1, bias=False), M.BatchNorm1d(20)
        self.conv1 = M.Conv1d(20, 20, 3, padding=1, bias=False)

    def forward(self, x):
        return F.mean(self.conv1(F.relu(self.bn0(self.conv0(x)))) ** 2)


@pytest.mark.parametrize(
    "make_net, shape, relus_fused",
    [(_DepthwiseUnit, (4, 3, 9, 9), 2), (_Conv1dNet, (4, 3, 17), 1)],
    ids=["dw", "1d"],
)
def test_depthwise_and_1d_training_steps_run_blocked_and_follow_eager(make_net, shape, relus_fused):
    # On x86 the depthwise convolution (oneDNN's blocked depthwise kernels) and a 1-D network
    # (nCw16c; BatchNorm1d's reshapes to 4-D and back reshape the blocked tensors) run blocked
    # from the first convolution to the loss, forward and backward. A relu that alone reads
    # BatchNorm's output (through BatchNorm1d's reshape back to 3-D) runs inside it.
    rng = np.random.default_rng(11)
    x = mge.Tensor(rng.standard_normal(shape).astype("float32"))
    text = _traced_sgd_steps_follow_eager(make_net, x)
    if "Blocked(" in text:
        for plain in ("= ConvolutionForward(", "= ConvolutionBackwardData(", "= BatchNormForward("):
            assert plain not in text, plain
        assert text.count("BatchNormReluForwardBlocked(") == relus_fused


class _ScaledConvs(M.Module):
    def __init__(self):
        super().__init__()
        self.conv0 = M.Conv2d(3, 20, 3, padding=1)
        self.conv1 = M.Conv2d(20, 20, 3, padding=1)
        self.gamma = mge.Parameter(np.linspace(-1, 2, 20, dtype="float32").reshape(1, 20, 1, 1))

    def forward(self, x):
        return self.conv1(F.relu(self.conv0(x) * self.gamma * 0.5))


def test_per_channel_and_scalar_operands_stay_in_the_blocked_chain():
    # On x86 the per-channel gamma and the scalar 0.5 do not break the blocked chain between the
    # convolutions: only the result is converted back. Either way: eager's values.
    rng = np.random.default_rng(7)
    net = _ScaledConvs()
    x = mge.Tensor(rng.standard_normal((2, 3, 7, 6)).astype("float32"))
    traced = trace(lambda data: net(data))
    for _ in range(2):
        np.testing.assert_allclose(traced(x).numpy(), net(x).numpy(), rtol=1e-4, atol=1e-5)
    text = traced._graph_text()
    if "Blocked(" in text:
        assert text.count("ConvBiasBlocked(") == 2
        assert text.count("ChannelUnblock(") == 1


@pytest.mark.parametrize("symbolic", [False, True])
def test_replay_with_empty_tensors(symbolic):
    # Empty inputs and outputs: (10, 0) @ (0, 10) is a (10, 10) matrix of zeros, and an
    # empty broadcast keeps its shape, on the recording call and on replays.
    f = trace(symbolic=symbolic)(lambda a, b: (F.matmul(a, b), F.broadcast_to(a, (3, 10, 0))))
    a = mge.Tensor(np.ones((10, 0), dtype=np.float32))
    b = mge.Tensor(np.ones((0, 10), dtype=np.float32))
    for _ in range(3):
        prod, wide = f(a, b)
        np.testing.assert_array_equal(prod.numpy(), np.zeros((10, 10), dtype=np.float32))
        assert wide.numpy().shape == (3, 10, 0)
