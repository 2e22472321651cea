"""make_allreduce_cb: bucketed gradients equal the per-gradient all-reduce (the synchronous
path), and a full bucket's all-reduce runs while backward still computes other gradients."""

import time

import numpy as np
from dist_util import TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
import megengine.module as M
from megengine.autodiff import GradManager

WORLD = 2


class MLP(M.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = M.Linear(6, 8)
        self.fc2 = M.Linear(8, 8)
        self.fc3 = M.Linear(8, 3)

    def forward(self, x):
        return self.fc3(F.relu(self.fc2(F.relu(self.fc1(x)))))


def _model():
    model = MLP()
    for i, p in enumerate(model.parameters()):  # the same values on every rank
        p._reset(mge.Tensor(rank_input(i, p.shape, "float32", salt=3) / 10))
    return model


def _loss(model):
    x = mge.Tensor(rank_input(dist.get_rank(), (4, 6), "float32") / 10)
    return (model(x) ** 2).mean()


def _local_grads():
    model = _model()
    gm = GradManager().attach(model.parameters())
    with gm:
        gm.backward(_loss(model))
    return [p.grad for p in model.parameters()]


def _bucketed(method, threshold):
    model = _model()
    cb = dist.make_allreduce_cb(method)
    cb._param_pack_thd = threshold
    gm = GradManager().attach(model.parameters(), callbacks=cb)
    with gm:
        gm.backward(_loss(model))
    return [p.grad.numpy() for p in model.parameters()]


def _compare_worker():
    # The synchronous path: one blocking all-reduce per gradient after backward.
    sync = [F.distributed.all_reduce_sum(g).numpy() for g in _local_grads()]
    out = {"sum": sync, "mean": [g / WORLD for g in sync]}
    for threshold in (0, 200, 10 * 1024 * 1024):  # a bucket per gradient, a few, one
        for method in ("sum", "mean"):
            out[method, threshold] = _bucketed(method, threshold)
    return out


def test_buckets_equal_the_per_gradient_all_reduce():
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_compare_worker)()
    for res in results:
        for key, grads in res.items():
            if isinstance(key, tuple):
                for got, expect in zip(grads, res[key[0]]):
                    np.testing.assert_array_equal(got, expect, err_msg=str(key))
    for a, b in zip(results[0]["sum"], results[1]["sum"]):
        np.testing.assert_array_equal(a, b)
    # Against numpy: the sum of the ranks' local gradients, computed in one process.
    locals_ = [[g.numpy() for g in _local_grads_of(r)] for r in range(WORLD)]
    for got, *per_rank in zip(results[0]["sum"], *locals_):
        np.testing.assert_allclose(got, sum(per_rank), rtol=1e-6)


def _local_grads_of(rank):
    model = _model()
    gm = GradManager().attach(model.parameters())
    x = mge.Tensor(rank_input(rank, (4, 6), "float32") / 10)
    with gm:
        gm.backward((model(x) ** 2).mean())
    return [p.grad for p in model.parameters()]


def _overlap_worker():
    model = _model()
    cb = dist.make_allreduce_cb("sum")
    cb._param_pack_thd = 0  # every gradient fills a bucket: its all-reduce starts at once
    params = list(model.parameters())
    seen = []

    def probe(param, grad):
        # Runs after make_allreduce_cb on each gradient, as backward produces it.
        seen.append((len(seen), len(cb._in_flight)))
        if len(seen) == len(params):
            # The last gradient of backward: the first bucket's all-reduce must finish without
            # anyone waiting for it (no wait(), no other collective): it runs on the
            # communication thread while this rank is still inside backward.
            first = cb._in_flight[0][3]  # the first bucket's PendingAllReduce
            deadline = time.monotonic() + TIMEOUT
            while not first.completed and time.monotonic() < deadline:
                time.sleep(0.001)
            seen.append(("first bucket done before backward ended", first.completed))
        return grad

    gm = GradManager().attach(params, callbacks=[cb, probe])
    with gm:
        gm.backward(_loss(model))
    return seen, [p.grad.numpy() for p in params]


def test_bucket_all_reduces_start_during_backward():
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_overlap_worker)()
    n = len(list(MLP().parameters()))
    for seen, _ in results:
        # The k-th gradient's callback had already started k + 1 all-reduces.
        assert seen[:n] == [(k, k + 1) for k in range(n)]
        assert seen[n] == ("first bucket done before backward ended", True)
    for a, b in zip(results[0][1], results[1][1]):
        np.testing.assert_array_equal(a, b)


def _in_place_worker():
    from megengine.distributed import group

    comm = group._communicator(group.WORLD)
    r = dist.get_rank()
    kept = mge.Tensor(rank_input(r, (1000,), "float32", salt=4))
    bucket = mge.Tensor(rank_input(r, (1000,), "float32", salt=4))
    out = comm.all_reduce_async(kept, "sum").wait().numpy()
    out_in_place = comm.all_reduce_async(bucket, "sum", in_place=True).wait().numpy()
    return kept.numpy(), out, bucket.numpy(), out_in_place


def test_an_in_place_bucket_receives_the_sum_in_its_own_memory():
    # What make_allreduce_cb does with a bucket of several gradients (its own concat): no output
    # buffer; an ordinary all-reduce leaves its input alone.
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_in_place_worker)()
    xs = [rank_input(r, (1000,), "float32", salt=4) for r in range(WORLD)]
    for r, (kept, out, bucket, out_in_place) in enumerate(results):
        np.testing.assert_array_equal(kept, xs[r])
        np.testing.assert_array_equal(out, sum(xs))
        np.testing.assert_array_equal(out_in_place, sum(xs))
        np.testing.assert_array_equal(bucket, sum(xs))


def _start_wait_worker():
    from megengine.distributed import group

    comm = group._communicator(group.WORLD)
    r = dist.get_rank()
    a = mge.Tensor(rank_input(r, (2, 3), "float32", salt=5))
    b = mge.Tensor(rank_input(r, (4, 2), "float32", salt=6)).transpose(1, 0)  # strided
    bucket, pending = comm.all_reduce_start_op([a, b], "sum", 0)
    outs = comm.all_reduce_wait_op(pending, bucket, [[2, 3], [2, 4]], 2)
    errors = []
    for bad in (
        lambda: comm.all_reduce_start_op([], "sum", 1),
        lambda: comm.all_reduce_start_op([a, a.astype("float16")], "sum", 1),
        lambda: comm.all_reduce_start_op([a, np.zeros(3)], "sum", 1),
    ):
        try:
            bad()
            errors.append(None)
        except (TypeError, ValueError) as exc:
            errors.append(type(exc).__name__)
    return a.numpy(), b.numpy(), [o.numpy() for o in outs], errors


def test_the_traced_bucket_ops_copy_their_gradients_and_reduce_their_own_bucket():
    # The start op (what a traced step records) reads the gradients, strided ones included,
    # and reduces its own flat copy: the gradients keep their values; the wait op hands out
    # each part in its shape, divided by 2.
    results = dist.launcher(n_gpus=WORLD, timeout=TIMEOUT)(_start_wait_worker)()
    xa = [rank_input(r, (2, 3), "float32", salt=5) for r in range(WORLD)]
    xb = [rank_input(r, (4, 2), "float32", salt=6).T for r in range(WORLD)]
    for r, (a, b, outs, errors) in enumerate(results):
        np.testing.assert_array_equal(a, xa[r])
        np.testing.assert_array_equal(b, xb[r])
        np.testing.assert_array_equal(outs[0], sum(xa) / 2)
        np.testing.assert_array_equal(outs[1], sum(xb) / 2)
        assert errors == ["ValueError", "ValueError", "TypeError"]
