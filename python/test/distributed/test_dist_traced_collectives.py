"""broadcast, reduce_sum, gather, scatter, all_to_all and remote_send/remote_recv inside
jit.trace on 2-4 CPU ranks: the compiled graph holds each as an op (no eager fallback) on every
rank, including the ranks that discard the result (reduce's and gather's non-roots, a sender),
and every replay gives the outputs and the gradients of the same function run eagerly; trace.dump
refuses such a graph with a clear error (a model file runs in one process)."""

import io
import warnings

import numpy as np
import pytest
from dist_util import TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
import megengine.optimizer as optim
from megengine.autodiff import GradManager
from megengine.jit import trace
from megengine.utils.comp_graph_tools import ModelError

CALLS = 3


def _weights(world, shape, salt):
    return mge.Tensor(rank_input(dist.get_rank(), shape, "float32", salt=salt))


def _step_fn(world):
    """A training step's body on this rank (a new Parameter and GradManager per call of this
    function): its outputs and the parameter's gradient."""
    r = dist.get_rank()
    w = mge.Parameter(rank_input(r, (2 * world, 3), "float32"))
    gm = GradManager().attach(w)
    opt = optim.SGD([w], lr=0.0)
    w_b, w_s, w_a = (
        _weights(world, s, k) for s, k in (((2 * world, 3), 1), ((2, 3), 2), ((2 * world, 3), 3))
    )
    w_r, w_g = _weights(world, (2 * world, 3), 4), _weights(world, (2 * world * world, 3), 5)

    def step(scale):
        with gm:
            x = w * scale
            b = F.distributed.broadcast(x)
            red = F.distributed.reduce_sum(x)
            g = F.distributed.gather(x, axis=0)
            s = F.distributed.scatter(x)
            a = F.distributed.all_to_all(x)
            loss = (b * w_b).sum() + (s * w_s).sum() + (a * w_a).sum()
            if r == 0:
                loss = loss + (red * w_r).sum() + (g * w_g).sum()
            gm.backward(loss)
        grad = w.grad * 1
        opt.clear_grad()
        if r != 0:
            assert red is None and g is None
            return b, s, a, grad
        return b, s, a, grad, red, g

    return step


def _traced_against_eager(world):
    eager = _step_fn(world)
    traced = trace(_step_fn(world), symbolic=True)
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for c in range(CALLS):
            scale = mge.Tensor(float(c + 1))
            e = [t.numpy() for t in eager(scale)]
            t = [t.numpy() for t in traced(scale)]
            out.append((e, t))
    ops = [op for op, _ in traced.ops]
    # A model file runs in one process: it cannot hold a collective.
    frozen = trace(lambda x: F.distributed.broadcast(x) * 1, symbolic=True, capture_as_const=True)
    frozen(mge.Tensor(np.ones(3, "float32")))
    try:
        frozen.dump(io.BytesIO())
        dumped = "dumped"
    except ModelError as e:
        dumped = f"ModelError: {e}"
    return out, ops, traced._mode, [str(w.message) for w in caught], dumped


@pytest.mark.parametrize("world", [2, 3, 4])
def test_traced_collectives_equal_eager_and_run_on_every_rank(world):
    results = dist.launcher(n_gpus=world, timeout=TIMEOUT)(_traced_against_eager)(world)
    xs = [rank_input(q, (2 * world, 3), "float32") for q in range(world)]
    for r, (calls, ops, mode, warned, dumped) in enumerate(results):
        assert warned == [] and mode == "graph", (r, warned, mode)
        assert dumped.startswith("ModelError: dump: Broadcast(root=0) is outside"), dumped
        for name in ("Broadcast(root=0)", "Reduce(sum, root=0)", "Gather(root=0)"):
            assert name in ops, (r, ops)
        assert "Scatter(root=0)" in ops and "AllToAll" in ops, (r, ops)
        for c, (e, t) in enumerate(calls):
            assert len(e) == len(t) == (6 if r == 0 else 4)
            for k, (a, b) in enumerate(zip(e, t)):
                np.testing.assert_allclose(b, a, rtol=1e-6, err_msg=f"rank {r} call {c} out {k}")
            # The values themselves: broadcast gives the root's input on every call.
            np.testing.assert_allclose(t[0], (c + 1) * xs[0], rtol=1e-6)
            if r == 0:
                np.testing.assert_allclose(t[4], (c + 1) * np.sum(xs, axis=0), rtol=1e-6)


def _p2p_fn():
    r = dist.get_rank()
    w = mge.Parameter(rank_input(r, (4, 2), "float32", salt=8))
    gm = GradManager().attach(w)
    opt = optim.SGD([w], lr=0.0)
    weights = mge.Tensor(rank_input(r, (4, 2), "float32", salt=9))

    def step(scale):
        with gm:
            if r == 0:
                F.distributed.remote_send(w * scale, 1)
                gm.backward()
                got = w * 0
            else:
                got = F.distributed.remote_recv(0)
                gm.backward((got * weights * scale).sum())
        grad = w.grad * 1 if w.grad is not None else w * 0
        opt.clear_grad()
        return got, grad

    return step


def _p2p_traced_against_eager():
    eager, traced = _p2p_fn(), trace(_p2p_fn(), symbolic=True)
    out = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for c in range(CALLS):
            scale = mge.Tensor(float(c + 1))
            out.append(([t.numpy() for t in eager(scale)], [t.numpy() for t in traced(scale)]))
    return out, [op for op, _ in traced.ops], traced._mode, [str(w.message) for w in caught]


def test_traced_send_and_recv_equal_eager_with_gradients():
    results = dist.launcher(n_gpus=2, timeout=TIMEOUT)(_p2p_traced_against_eager)()
    w0 = rank_input(0, (4, 2), "float32", salt=8)
    w1 = rank_input(1, (4, 2), "float32", salt=9)
    for r, (calls, ops, mode, warned) in enumerate(results):
        assert warned == [] and mode == "graph", (r, warned, mode)
        assert any(op.startswith("Send(to=1" if r == 0 else "Recv(from=0") for op in ops), ops
        for c, (e, t) in enumerate(calls):
            s = c + 1
            for a, b in zip(e, t):
                np.testing.assert_allclose(b, a, rtol=1e-6)
            if r == 1:
                np.testing.assert_allclose(t[0], s * w0, rtol=1e-6)
            else:
                # d/dw0 of sum(s * w0 * w1 * s) on rank 1: s^2 * w1, sent back to rank 0.
                np.testing.assert_allclose(t[1], s * s * w1, rtol=1e-6)
