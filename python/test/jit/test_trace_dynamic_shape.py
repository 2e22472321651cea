"""Traced graphs that follow their inputs' shapes and their data: a CNN with F.flatten, or with
``x.reshape(x.shape[0], -1)``, traced at batch 4 and dumped runs at batch 1 and 7 (GraphInference
and the C++ load_and_run agree with eager), and cond_take/non_zero replay with as many elements
as the new data has. Shape reads that cannot follow make dump refuse dynamic shapes
(test_trace_symbolic_shape.py)."""

import io
import os
import subprocess
from pathlib import Path

import numpy as np
import pytest

import megengine as mge
import megengine.functional as F
import megengine.module as M
from megengine.jit import trace
from megengine.utils.comp_graph_tools import GraphInference

ROOT = Path(__file__).resolve().parents[3]


class SmallCNN(M.Module):
    # How the features are flattened: F.flatten, or a reshape to the batch the function reads
    # from x.shape (a TracedDim while tracing with symbolic_shape=True).
    def __init__(self, flatten="flatten"):
        super().__init__()
        self.conv = M.Conv2d(3, 4, 3, padding=1)
        self.bn = M.BatchNorm2d(4)
        self.fc = M.Linear(4 * 4 * 4, 5)
        self.flatten = flatten

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn(self.conv(x))), 2)
        if self.flatten == "reshape":
            return self.fc(x.reshape(x.shape[0], -1))
        if self.flatten == "reshape_dims":
            n, c, h, w = x.shape
            return self.fc(F.reshape(x, (n, c * h * w)))
        return self.fc(F.flatten(x, 1))


def batch(n, seed):
    return np.random.default_rng(seed).standard_normal((n, 3, 8, 8)).astype("float32")


@pytest.fixture(scope="module", params=["flatten", "reshape", "reshape_dims"])
def cnn_model(request):
    mge.random.seed(3)
    net = SmallCNN(request.param)
    net.eval()
    f = trace(lambda x: net(x), capture_as_const=True)
    f(mge.Tensor(batch(4, 0)))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"], output_names=["logits"], input_shapes={"x": (-1, 3, 8, 8)})
    return net, buf.getvalue()


def test_dumped_cnn_runs_other_batch_sizes_through_graph_inference(cnn_model):
    net, data = cnn_model
    g = GraphInference(data)
    for n in (1, 7, 4, 1):
        x = batch(n, n)
        got = g.run(x)["logits"]
        want = net(mge.Tensor(x)).numpy()
        assert got.shape == (n, 5)
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def load_and_run():
    build = Path(os.environ.get("BUILD_DIR", "build"))
    path = (build if build.is_absolute() else ROOT / build) / "src" / "load_and_run"
    if not path.exists():
        pytest.skip(f"{path} is not built")
    return path


@pytest.mark.parametrize("n", [1, 7])
def test_dumped_cnn_runs_other_batch_sizes_through_load_and_run(cnn_model, tmp_path, n):
    exe = load_and_run()
    net, data = cnn_model
    (tmp_path / "m.nmeg").write_bytes(data)
    x = batch(n, 10 + n)
    np.save(tmp_path / "x.npy", x)
    out = tmp_path / "out"
    out.mkdir()
    cmd = [str(exe), str(tmp_path / "m.nmeg"), "--input", f"x={tmp_path / 'x.npy'}"]
    cmd += ["--iters", "1", "--warmup", "0", "--output-dir", str(out)]
    r = subprocess.run(cmd, check=True, capture_output=True, text=True, timeout=60)
    assert f"output logits: ({n}, 5) float32" in r.stdout
    assert f"input x: ({n}, 3, 8, 8) float32 (declared (-1, 3, 8, 8))" in r.stdout
    got = np.load(out / "logits.npy")
    assert got.shape == (n, 5)
    np.testing.assert_allclose(got, net(mge.Tensor(x)).numpy(), rtol=1e-4, atol=1e-5)


def test_a_fixed_batch_is_still_refused_clearly(cnn_model):
    # Declared static: the loader refuses another batch before anything runs.
    net, _ = cnn_model
    f = trace(lambda x: net(x), capture_as_const=True)
    f(mge.Tensor(batch(4, 0)))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"])
    with pytest.raises(ValueError, match="declared shape"):
        GraphInference(buf.getvalue()).run(batch(2, 0))


def test_traced_cond_take_replays_with_the_new_count():
    f = trace(lambda m, x: F.cond_take(m, x))
    rng = np.random.default_rng(0)
    for i, p in enumerate((0.3, 0.8, 0.0, 1.0, 0.5)):
        x = rng.standard_normal((4, 5)).astype("float32")
        m = rng.uniform(size=(4, 5)) < p
        v, idx = f(mge.Tensor(m), mge.Tensor(x))
        if i:
            assert f._mode == "graph"
        np.testing.assert_array_equal(v.numpy(), x[m])
        np.testing.assert_array_equal(idx.numpy(), np.flatnonzero(m).astype("int32"))


@pytest.mark.gpu
@pytest.mark.skipif(not mge.is_cuda_available(), reason="no CUDA device")
def test_traced_cond_take_replays_on_gpu0():
    # CondTake writes its count on the device; the compiled graph reads it back for TakePrefix.
    f = trace(lambda m, x: F.cond_take(m, x) + (F.cond_take(m, x)[0].sum(),))
    rng = np.random.default_rng(1)
    for i, p in enumerate((0.3, 0.0, 1.0, 0.6)):
        x = rng.standard_normal((4, 5)).astype("float32")
        m = rng.uniform(size=(4, 5)) < p
        v, idx, total = f(mge.Tensor(m, device="gpu0"), mge.Tensor(x, device="gpu0"))
        if i:
            assert f._mode == "graph"
        assert v.device == "gpu0"
        np.testing.assert_array_equal(v.numpy(), x[m])
        np.testing.assert_array_equal(idx.numpy(), np.flatnonzero(m).astype("int32"))
        np.testing.assert_allclose(total.numpy(), x[m].sum(), rtol=1e-5, atol=1e-6)


def test_traced_non_zero_and_arithmetic_after_it():
    f = trace(lambda x: (F.non_zero(x), F.non_zero(x, as_tuple=True)[1] * 2))
    for seed in range(4):
        x = (np.random.default_rng(seed).uniform(size=(3, 4)) < 0.4).astype("int32")
        coords, cols = f(mge.Tensor(x))
        np.testing.assert_array_equal(coords.numpy(), np.argwhere(x).astype("int32"))
        np.testing.assert_array_equal(cols.numpy(), np.nonzero(x)[1].astype("int32") * 2)
    assert f._mode == "graph"


def test_dumped_cond_take_gives_data_dependent_shapes():
    f = trace(lambda x: F.cond_take(x > 0, x)[0] * 3, capture_as_const=True)
    f(mge.Tensor(np.array([1, -1, 2, -2], "float32")))
    buf = io.BytesIO()
    f.dump(buf, arg_names=["x"])
    g = GraphInference(buf.getvalue())
    for x in ([-1, -1, -1, -1], [5, 6, 7, 8], [0.5, -3, -3, 4]):
        x = np.array(x, "float32")
        np.testing.assert_array_equal(g.run(x)["output_0"], x[x > 0] * 3)


def test_reshape_to_a_tensor_shape_follows_it_when_traced():
    f = trace(lambda x, s: F.reshape(x, s))
    for shape in ((2, 6), (3, 4), (12, 1)):
        x = np.arange(12, dtype="float32")
        got = f(mge.Tensor(x), mge.Tensor(np.array(shape, "int32")))
        np.testing.assert_array_equal(got.numpy(), x.reshape(shape))
    with pytest.raises(ValueError):
        f(mge.Tensor(np.arange(12, dtype="float32")), mge.Tensor(np.array([5, 5], "int32")))


@pytest.mark.parametrize("flatten", ["flatten", "reshape"])
def test_traced_training_through_flatten_matches_eager(flatten):
    def make():
        mge.random.seed(5)
        return SmallCNN(flatten)

    def step_fn(net, opt, gm):
        def step(x, y):
            with gm:
                loss = F.nn.cross_entropy(net(x), y)
                gm.backward(loss)
            opt.step().clear_grad()
            return loss

        return step

    from megengine.autodiff import GradManager
    from megengine.optimizer import SGD

    nets, losses = [], []
    for traced in (False, True):
        net = make()
        gm = GradManager().attach(net.parameters())
        opt = SGD(net.parameters(), lr=0.1)
        step = step_fn(net, opt, gm)
        step = trace(step) if traced else step
        ls = []
        for i in range(3):
            x, y = batch(4, 20 + i), np.arange(4, dtype="int32") % 5
            ls.append(float(step(mge.Tensor(x), mge.Tensor(y)).numpy()))
        nets.append(net)
        losses.append(ls)
    np.testing.assert_allclose(losses[0], losses[1], rtol=1e-4)
    np.testing.assert_allclose(nets[0].fc.weight.numpy(), nets[1].fc.weight.numpy(), atol=1e-5)


def test_gradient_through_traced_cond_take_runs_eagerly_and_stays_right():
    # Backward rules fix shapes in their params (a mean's divisor, a broadcast's shape): a graph
    # of a backward pass through a data-dependent shape would be wrong for another count, so
    # such a recording ends and the calls run eagerly.
    from megengine.autodiff import GradManager

    x = mge.Parameter(np.arange(1, 13, dtype="float32").reshape(3, 4))
    gm = GradManager().attach([x])

    @trace
    def step(m):
        with gm:
            v, _ = F.cond_take(m, x)
            loss = v.mean()
            gm.backward(loss)
        return loss

    rng = np.random.default_rng(1)
    for i, p in enumerate((0.5, 0.2, 0.9)):
        m = rng.uniform(size=(3, 4)) < p
        x.grad = None
        if i == 0:
            with pytest.warns(RuntimeWarning, match="depends on data"):
                loss = step(mge.Tensor(m))
        else:
            loss = step(mge.Tensor(m))
        xv = x.numpy()
        np.testing.assert_allclose(loss.numpy(), xv[m].mean(), rtol=1e-6)
        np.testing.assert_allclose(x.grad.numpy(), m / m.sum(), rtol=1e-6)
    assert step._mode == "eager"
