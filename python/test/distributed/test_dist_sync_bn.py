"""SyncBatchNorm on 2 ranks equals BatchNorm2d on the ranks' batches concatenated: outputs,
running statistics, and gradients (the input's per rank, the parameters' summed over ranks).
A traced data-parallel step with SyncBatchNorm (ranks of unequal batches) compiles with its
collectives and equals the same step run eagerly: losses, parameters, running statistics.
Bad groups, eps modes and channel counts that differ between ranks are clear errors."""

import warnings

import numpy as np
import pytest
from dist_util import TIMEOUT

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
import megengine.module as M
import megengine.optimizer as optim
from megengine.autodiff import GradManager
from megengine.jit import trace

W, N, C = 2, 3, 4


def _data():
    rng = np.random.RandomState(3)
    x = rng.randn(W * N, C, 5, 5).astype("float32") * 2 + 1
    dy = rng.randn(W * N, C, 5, 5).astype("float32")
    return x, dy


def _run(bn, x, dy):
    x = mge.Parameter(x)
    gm = GradManager().attach([x, bn.weight, bn.bias])
    with gm:
        y = bn(x)
        gm.backward((y * mge.Tensor(dy)).sum())
    return {
        "y": y.numpy(),
        "dx": x.grad.numpy(),
        "dw": bn.weight.grad.numpy(),
        "db": bn.bias.grad.numpy(),
        "mean": bn.running_mean.numpy(),
        "var": bn.running_var.numpy(),
    }


def _worker(eps_mode_max):
    r = dist.get_rank()
    x, dy = _data()
    part = slice(r * N, (r + 1) * N)
    bn = M.SyncBatchNorm(C)
    out = _run(bn, x[part], dy[part])
    bn.eval()
    out["eval"] = bn(mge.Tensor(x[part])).numpy()
    if eps_mode_max:
        big = F.nn.sync_batch_norm(
            mge.Tensor(x[part] * 1e-4), None, None, training=True, eps=1.0, eps_mode="max"
        )
        out["max"] = big.numpy()
    return out


def test_sync_batch_norm_equals_batch_norm_on_the_whole_batch():
    results = dist.launcher(n_gpus=W, timeout=TIMEOUT)(_worker)(True)
    x, dy = _data()
    ref_bn = M.BatchNorm2d(C)
    ref = _run(ref_bn, x, dy)
    ref_bn.eval()
    ref_eval = ref_bn(mge.Tensor(x)).numpy()
    for r, res in enumerate(results):
        part = slice(r * N, (r + 1) * N)
        np.testing.assert_allclose(res["y"], ref["y"][part], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(res["dx"], ref["dx"][part], rtol=1e-3, atol=1e-4)
        np.testing.assert_allclose(res["mean"], ref["mean"], rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(res["var"], ref["var"], rtol=1e-4, atol=1e-6)
        np.testing.assert_allclose(res["eval"], ref_eval[part], rtol=1e-4, atol=1e-5)
        # Tiny variance, eps 1: max(var, eps) = 1, so the output is x - mean.
        xs = x * 1e-4
        mean = xs.mean(axis=(0, 2, 3), keepdims=True)
        np.testing.assert_allclose(res["max"], (xs - mean)[part], rtol=1e-4, atol=1e-9)
    for k in ("dw", "db"):
        np.testing.assert_allclose(sum(res[k] for res in results), ref[k], rtol=1e-3, atol=1e-4)


STEPS = 3


def _dp_data(rank, step):
    # Rank r holds 2 + r samples: the group's count is not WORLD times a rank's.
    rng = np.random.RandomState(100 * step + rank)
    x = rng.randn(2 + rank, C, 4, 4).astype("float32") * 3 + 2
    target = rng.randn(2 + rank, 2, 2, 2).astype("float32")
    return x, target


def _dp_model():
    # bn reads the data (its statistics have a numpy reference); bn2 reads the convolution, so
    # backward runs through its statistics' all-reduce too.
    rng = np.random.RandomState(7)
    conv = M.Conv2d(C, 2, 3)
    conv.weight._reset(mge.Tensor(rng.randn(2, C, 3, 3).astype("float32") * 0.3))
    return M.SyncBatchNorm(C), conv, M.SyncBatchNorm(2, momentum=0.8)


def _dp_steps(traced):
    bn, conv, bn2 = _dp_model()
    params = list(bn.parameters()) + list(conv.parameters()) + list(bn2.parameters())
    dist.bcast_list_(params)
    gm = GradManager().attach(params, callbacks=[dist.make_allreduce_cb("mean")])
    opt = optim.SGD(params, lr=0.1, momentum=0.9)

    def step(x, target):
        with gm:
            loss = ((bn2(conv(F.relu(bn(x)))) - target) ** 2).mean()
            gm.backward(loss)
        opt.step().clear_grad()
        return loss

    if traced:
        step = trace(step, symbolic=True)
    losses, stats = [], []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for s in range(STEPS):
            x, target = _dp_data(dist.get_rank(), s)
            losses.append(step(mge.Tensor(x), mge.Tensor(target)).numpy())
            stats.append([t.numpy() for t in (bn.running_mean, bn.running_var)])
            stats[-1] += [t.numpy() for t in (bn2.running_mean, bn2.running_var)]
    out = {
        "loss": losses,
        "stats": stats,
        "params": [p.numpy() for p in params],
        # A trace's fallback to eager warns; a ResourceWarning is the garbage collector closing
        # a socket this forked process inherited, not this step's doing.
        "warned": [str(w.message) for w in caught if not issubclass(w.category, ResourceWarning)],
    }
    if traced:
        out["mode"] = step._mode
        out["ops"] = [op for op, _ in step.ops]
    return out


def _eager_and_traced():
    return _dp_steps(False), _dp_steps(True)


@pytest.mark.parametrize("world", [2, 3])
def test_traced_sync_batch_norm_step_equals_eager(world):
    results = dist.launcher(n_gpus=world, timeout=TIMEOUT)(_eager_and_traced)()
    for eager, traced in results:
        # Compiled with its collectives (the statistics' all-reduce, the gradient bucket and
        # bcast_list_'s broadcasts ran eagerly before): nothing fell back to eager.
        assert traced["warned"] == [] and eager["warned"] == []
        assert traced["mode"] == "graph"
        # Three all-reduces of statistics: bn's and bn2's forward, bn2's backward.
        assert traced["ops"].count("AllReduce(sum)") == 3, traced["ops"]
        assert traced["ops"].count("AllReduceStart(0)") == 1, traced["ops"]
        for s in range(STEPS):
            np.testing.assert_allclose(traced["loss"][s], eager["loss"][s], rtol=1e-5, atol=1e-6)
            for t, e in zip(traced["stats"][s], eager["stats"][s]):
                np.testing.assert_allclose(t, e, rtol=1e-5, atol=1e-6)
        for t, e in zip(traced["params"], eager["params"]):
            np.testing.assert_allclose(t, e, rtol=1e-4, atol=1e-6)
    # The ranks agree (one set of statistics, one all-reduced update)...
    for other in results[1:]:
        for a, b in zip(results[0][1]["params"], other[1]["params"]):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(results[0][1]["stats"][-1], other[1]["stats"][-1]):
            np.testing.assert_array_equal(a, b)
    # ...and the first step's running statistics are those of the ranks' batches together.
    x = np.concatenate([_dp_data(r, 0)[0] for r in range(world)])
    mean = x.mean(axis=(0, 2, 3)).reshape(1, C, 1, 1)
    var = x.var(axis=(0, 2, 3), ddof=1).reshape(1, C, 1, 1)
    for eager, traced in results:
        for run in (eager, traced):
            np.testing.assert_allclose(run["stats"][0][0], 0.1 * mean, rtol=1e-5, atol=1e-6)
            np.testing.assert_allclose(run["stats"][0][1], 0.9 + 0.1 * var, rtol=1e-5)


def _bad_inputs():
    x = mge.Tensor(np.ones((2, C, 3, 3), dtype="float32"))
    errors = []
    for fn in (
        lambda: F.nn.sync_batch_norm(x, None, None, training=True, group="world"),
        lambda: M.SyncBatchNorm(C, group=[0, 5])(x),
        lambda: F.nn.sync_batch_norm(x, None, None, training=True, eps_mode="min"),
        # Last: ranks with other channel counts all-reduce vectors of other sizes.
        lambda: M.SyncBatchNorm(C + dist.get_rank())(
            mge.Tensor(np.ones((2, C + dist.get_rank(), 3, 3), dtype="float32"))
        ),
    ):
        try:
            fn()
            errors.append(None)
        except (TypeError, ValueError) as exc:
            errors.append((type(exc).__name__, str(exc)))
    return errors


def test_bad_inputs_raise_clear_errors():
    for r, errors in enumerate(dist.launcher(n_gpus=W, timeout=TIMEOUT)(_bad_inputs)()):
        assert [e[0] for e in errors] == ["TypeError", "ValueError", "ValueError", "ValueError"]
        assert "not a rank" in errors[1][1] and "eps_mode" in errors[2][1], errors
        # The statistics' vector: the count and 2 sums per channel, C + rank channels here.
        mine, theirs = 2 * (C + r) + 1, 2 * (C + 1 - r) + 1
        msg = errors[3][1]
        assert f"rank {r} reduces {mine} elements of float32" in msg, msg
        assert f"rank {1 - r} reduces {theirs} elements" in msg and "same shape" in msg, msg


def _float16_batch(rank):
    # 76800 values per channel and rank: more than float16's largest number (65504).
    rng = np.random.RandomState(20 + rank)
    return (rng.randn(300, 2, 16, 16) * 2 + 3).astype("float16")


def _float16_worker():
    x = _float16_batch(dist.get_rank())
    y = F.nn.sync_batch_norm(mge.Tensor(x), None, None, training=True, eps=1e-5)
    return y.numpy()


def test_float16_statistics_are_summed_in_float32():
    results = dist.launcher(n_gpus=W, timeout=TIMEOUT)(_float16_worker)()
    x = np.concatenate([_float16_batch(r) for r in range(W)]).astype("float64")
    mean = x.mean(axis=(0, 2, 3), keepdims=True)
    ref = (x - mean) / np.sqrt(x.var(axis=(0, 2, 3), keepdims=True) + 1e-5)
    for r, y in enumerate(results):
        assert y.dtype == np.float16
        np.testing.assert_allclose(y, ref[r * 300 : (r + 1) * 300], atol=2e-2)
