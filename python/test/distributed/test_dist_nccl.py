"""Collectives on GPU tensors (NCCL on each tensor's comp node stream) against numpy, eager and
in a traced data-parallel step; skipped where there is no GPU. One rank per GPU, up to two.
Without a GPU, what can be checked is that the NCCL library those collectives load is built
and loadable from this process, and that a GPU device type says why it cannot run."""

import numpy as np
import pytest
from dist_util import TIMEOUT, rank_input

import megengine as mge
import megengine.distributed as dist
import megengine.functional as F
from megengine.core import _imperative_rt as _rt
from megengine.device import get_device_count

GPUS = get_device_count("gpu")
WORLD = min(GPUS, 2)
DEVICE = "gpu"  # the same tests pass on "cpu" (Gloo), which is how they were checked without a GPU

needs_gpu = pytest.mark.skipif(GPUS == 0, reason="no GPU: NCCL's collectives need one")


def _collectives():
    r = dist.get_rank()
    x = mge.Tensor(rank_input(r, (2 * WORLD, 3), "float32"))
    assert str(x.device).startswith(DEVICE)
    out = {
        "sum": F.distributed.all_reduce_sum(x),
        "max": F.distributed.all_reduce_max(x),
        "bcast": F.distributed.broadcast(x),
        "gather": F.distributed.all_gather(x),
        "rs": F.distributed.reduce_scatter_sum(x),
        "a2a": F.distributed.all_to_all(x),
        "nc_sum": F.distributed.all_reduce_sum(x.transpose(1, 0)),
    }
    for v in out.values():
        assert str(v.device).startswith(DEVICE)
    return {k: v.numpy() for k, v in out.items()}


@pytest.mark.gpu
@needs_gpu
def test_gpu_collectives_match_numpy():
    results = dist.launcher(n_gpus=WORLD, device_type=DEVICE, timeout=TIMEOUT)(_collectives)()
    xs = [rank_input(q, (2 * WORLD, 3), "float32") for q in range(WORLD)]
    total = np.sum(xs, axis=0)
    for r, res in enumerate(results):
        np.testing.assert_array_equal(res["sum"], total)
        np.testing.assert_array_equal(res["max"], np.max(xs, axis=0))
        np.testing.assert_array_equal(res["bcast"], xs[0])
        np.testing.assert_array_equal(res["gather"], np.concatenate(xs))
        np.testing.assert_array_equal(res["rs"], np.split(total, WORLD)[r])
        parts = [np.split(v, WORLD) for v in xs]
        np.testing.assert_array_equal(res["a2a"], np.concatenate([p[r] for p in parts]))
        np.testing.assert_array_equal(res["nc_sum"], total.T)


def _traced_step():
    import megengine.optimizer as optim
    from megengine.autodiff import GradManager
    from megengine.jit import trace

    r = dist.get_rank()
    w = mge.Parameter(np.ones((4,), dtype="float32"))
    gm = GradManager().attach([w], callbacks=[dist.make_allreduce_cb("sum")])
    opt = optim.SGD([w], lr=0.0)

    @trace(symbolic=True)
    def step(x):
        with gm:
            gm.backward((w * x).sum())
        grad = w.grad * 1
        opt.clear_grad()  # every call starts without a .grad: the same graph replays
        return grad

    return [step(mge.Tensor(rank_input(r, (4,), "float32", salt=s))).numpy() for s in range(3)]


@pytest.mark.gpu
@needs_gpu
def test_traced_gradient_all_reduce_on_gpu():
    results = dist.launcher(n_gpus=WORLD, device_type=DEVICE, timeout=TIMEOUT)(_traced_step)()
    for s in range(3):
        expect = np.sum([rank_input(q, (4,), "float32", salt=s) for q in range(WORLD)], axis=0)
        for grads in results:
            np.testing.assert_array_equal(grads[s], expect)


def _group_exchange():
    import megengine.distributed.functional as DF

    r = dist.get_rank()
    peer = 1 - r
    # 4M floats: more than NCCL's buffers hold, so the sends need the group to complete.
    mine = mge.Tensor(rank_input(r, (1 << 22,), "float32"))
    assert str(mine.device).startswith(DEVICE)
    dist.group_start()
    DF._remote_send_nobackward(mine, peer)
    DF._remote_send_nobackward(mge.Tensor(rank_input(r, (3, 4), "int16"))[:, 1], peer)
    got = DF._remote_recv_nobackward(peer, shape=(1 << 22,), dtype="float32")
    small = DF._remote_recv_nobackward(peer, shape=(3,), dtype="int16")
    dist.group_end()
    assert str(got.device).startswith(DEVICE)
    return got.numpy(), small.numpy()


@pytest.mark.gpu
@pytest.mark.skipif(GPUS < 2, reason=f"{GPUS} GPU(s): an exchange between GPU ranks needs two")
def test_gpu_group_exchanges_both_ways_in_one_nccl_group():
    results = dist.launcher(n_gpus=2, device_type=DEVICE, timeout=TIMEOUT)(_group_exchange)()
    for r, (got, small) in enumerate(results):
        np.testing.assert_array_equal(got, rank_input(1 - r, (1 << 22,), "float32"))
        np.testing.assert_array_equal(small, rank_input(1 - r, (3, 4), "int16")[:, 1])


@pytest.mark.skipif(_rt.get_cuda_version() == 0, reason="NeoMeg built without CUDA: no NCCL")
def test_the_nccl_library_that_gpu_collectives_load_is_built_and_loads():
    # The library a GPU tensor's first collective loads (open_nccl_communicator, through the
    # same loader), found beside the distributed library and exporting its factory: NCCL's
    # path is reachable from Python; only the communicator itself needs a GPU.
    assert _rt.distributed.nccl_load_error() == ""
