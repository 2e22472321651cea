"""Backward of every collective: the gradient each rank gets equals the derivative, worked out
by hand in numpy, of the total loss sum_r sum(w_r * y_r) over all ranks (w_r: rank r's weights
on its output y_r)."""

import numpy as np
from dist_util import TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
from megengine.autodiff import GradManager

W = 2
SHAPE = (4, 3)


def _weights(rank, shape):
    return rank_input(rank, shape, "float32", salt=7)


def _grads():
    r = dist.get_rank()
    out = {}

    def run(name, fn, tracked=True):
        x = mge.Parameter(rank_input(r, SHAPE, "float32"))
        gm = GradManager().attach(x if tracked else [])
        with gm:
            y = fn(x)
            if y is None:
                gm.backward()  # MegEngine's call on a rank without a result
            else:
                gm.backward((y * mge.Tensor(_weights(r, y.shape))).sum())
        out[name] = None if x.grad is None else x.grad.numpy()

    run("sum", F.distributed.all_reduce_sum)
    run("max", F.distributed.all_reduce_max)
    run("min", F.distributed.all_reduce_min)
    run("allgather", F.distributed.all_gather)
    run("allgather1", lambda x: F.distributed.all_gather(x, axis=1))
    run("rs", F.distributed.reduce_scatter_sum)
    run("a2a", F.distributed.all_to_all)
    run("bcast", F.distributed.broadcast)
    run("scatter", F.distributed.scatter)
    run("reduce", F.distributed.reduce_sum)
    run("gather", F.distributed.gather)

    def send_recv(x):
        if r == 0:
            F.distributed.remote_send(x * 3, 1)
            return None
        return F.distributed.remote_recv(0)

    run("p2p", send_recv)
    return out


def test_every_collective_has_the_adjoint_backward():
    res = dist.launcher(n_gpus=W, timeout=TIMEOUT)(_grads)()
    xs = [rank_input(q, SHAPE, "float32") for q in range(W)]
    ws = lambda shape: [_weights(q, shape) for q in range(W)]
    total = lambda shape: np.sum(ws(shape), axis=0)
    for r in range(W):
        g = res[r]
        np.testing.assert_allclose(g["sum"], total(SHAPE))
        mx, mn = np.max(xs, axis=0), np.min(xs, axis=0)
        np.testing.assert_allclose(g["max"], total(SHAPE) * (xs[r] == mx))
        np.testing.assert_allclose(g["min"], total(SHAPE) * (xs[r] == mn))
        # all_gather: rank r's rows of every rank's weights.
        np.testing.assert_allclose(g["allgather"], total((4 * W, 3))[4 * r : 4 * r + 4])
        np.testing.assert_allclose(g["allgather1"], total((4, 3 * W))[:, 3 * r : 3 * r + 3])
        # reduce_scatter: rank q's weights on rank q's rows of the sum.
        np.testing.assert_allclose(g["rs"], np.concatenate(ws((4 // W, 3))))
        # all_to_all: part q of rank r's input went to rank q as its part r.
        parts = [np.split(w, W)[r] for w in ws(SHAPE)]
        np.testing.assert_allclose(g["a2a"], np.concatenate(parts))
        # broadcast and reduce: only the root's input matters / is shared.
        if r == 0:
            np.testing.assert_allclose(g["bcast"], total(SHAPE))
            np.testing.assert_allclose(g["scatter"], np.concatenate(ws((4 // W, 3))))
        else:
            assert g["bcast"] is None and g["scatter"] is None
        np.testing.assert_allclose(g["reduce"], ws(SHAPE)[0])
        np.testing.assert_allclose(g["gather"], np.split(ws((4 * W, 3))[0], W)[r])
    np.testing.assert_allclose(res[0]["p2p"], 3 * ws(SHAPE)[1])
    assert res[1]["p2p"] is None
