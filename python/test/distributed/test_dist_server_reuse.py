"""One Server, several jobs: a launcher called again, or a user's Server that outlives the ranks
of one job, must give the next job's ranks a fresh rendezvous. The earlier job's barrier
counts and Gloo addresses are still in the store; read as the next job's they passed its
barriers at once and sent its ranks to dead ports ("Connection refused", or a hang).

MegEngine's test_functional_distributed.py calls one launcher once per shape, as here."""

import multiprocessing as mp

import numpy as np
from dist_util import TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F

SHAPES = [(2, 3), (8, 10), (99, 77)]


def _reduce_sum(shape):
    rank = dist.get_rank()
    out = F.distributed.reduce_sum(mge.Tensor(rank_input(rank, shape, "float32")))
    # Off the root MegEngine 1.13 returns None.
    return None if out is None else out.numpy()


def _broadcast(shape):
    rank = dist.get_rank()
    return F.distributed.broadcast(mge.Tensor(rank_input(rank, shape, "float32"))).numpy()


def test_a_launcher_called_again_runs_each_call_in_a_fresh_rendezvous():
    reduce_sum = dist.launcher(_reduce_sum, n_gpus=2, timeout=TIMEOUT)
    broadcast = dist.launcher(_broadcast, n_gpus=2, timeout=TIMEOUT)
    for shape in SHAPES:
        x, y = (rank_input(r, shape, "float32") for r in range(2))
        root, other = reduce_sum(shape)
        np.testing.assert_array_equal(root, x + y)
        assert other is None
        for got in broadcast(shape):
            np.testing.assert_array_equal(got, x)


def _rank(port, rank, shape, queue):
    dist.init_process_group("localhost", port, 2, rank, rank, timeout=TIMEOUT)
    x = mge.Tensor(rank_input(rank, shape, "float32"))
    queue.put((rank, F.distributed.all_reduce_sum(x).numpy()))


def test_a_users_server_serves_one_job_after_another():
    # The pattern of MegEngine's older distributed tests: one Server, processes per shape.
    server = dist.Server()
    ctx = mp.get_context("fork")
    try:
        for shape in SHAPES:
            queue = ctx.Queue()
            procs = [
                ctx.Process(target=_rank, args=(server.py_server_port, r, shape, queue))
                for r in range(2)
            ]
            for p in procs:
                p.start()
            got = dict(queue.get(timeout=6 * TIMEOUT) for _ in procs)
            for p in procs:
                p.join(TIMEOUT)
                assert p.exitcode == 0
            want = rank_input(0, shape, "float32") + rank_input(1, shape, "float32")
            for r in range(2):
                np.testing.assert_array_equal(got[r], want)
    finally:
        for p in procs:
            if p.is_alive():
                p.kill()
        server.close()
