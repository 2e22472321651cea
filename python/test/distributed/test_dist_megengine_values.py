"""What MegEngine 1.13 itself returns where NeoMeg could differ: get_backend() (the backend as
given), Group.comp_node ("<device_type><device>:<stream>"), make_allreduce_cb("mean") of integer
gradients (a true division), and a torchrun-style launch's LOCAL_WORLD_SIZE.

The literals come from MegEngine 1.13 run on this machine (its distributed package needs a GPU,
so its own code ran with the process group's state filled in by hand: ``group._sd`` and
``WORLD.reset`` for comp_node and get_backend; ``helper.pack_allreduce_split`` with the ranks'
all-reduced sum in place of ``all_reduce_sum`` for the mean)."""

import json
import os

import numpy as np
import pytest
from dist_util import TIMEOUT, launch_by_environment

import megengine as mge
import megengine.distributed as dist
from megengine.autodiff import GradManager


def _launch(script, world_size, env_of_rank, args=()):
    """launch_by_environment, each rank's last line of stdout parsed as JSON."""
    outs = launch_by_environment(script, world_size, env_of_rank, args)
    return [json.loads(out.splitlines()[-1]) for out in outs]


_GROUP_SCRIPT = f"""
import json, sys
import megengine.distributed as dist
from megengine.core import _imperative_rt as rt
kwargs = json.loads(sys.argv[1])
dist.init_process_group(timeout={TIMEOUT}, **kwargs)
r = dist.get_rank()
out = {{"backend": dist.get_backend(), "world": dist.WORLD.comp_node}}
out["own"] = dist.new_group([r]).comp_node
out["both"] = dist.new_group([0, 1]).comp_node
out["single_machine"] = dist.WORLD.is_single_machine
out["threads"] = rt.x86_threads()
dist.backend = "gloo"
out["set"] = dist.get_backend()
print(json.dumps(out))
"""


def test_backend_and_comp_node_are_megengines():
    # MegEngine 1.13: get_backend() is init_process_group's backend ("auto" by default), and a
    # group's comp_node "<device_type><device>:<stream>", the process's groups numbered from 1.
    outs = _launch(_GROUP_SCRIPT, 2, lambda r: {"LOCAL_RANK": r}, [json.dumps({})])
    for r, out in enumerate(outs):
        assert out["backend"] == "auto"
        assert out["world"] == f"xpu{r}:1"
        assert out["own"] == f"xpu{r}:2"
        assert out["both"] == f"xpu{r}:3"
        assert out["set"] == "gloo"
        # Without LOCAL_WORLD_SIZE nothing says which ranks share a machine: MegEngine's
        # is_single_machine is False without launcher.
        assert out["single_machine"] is False
    outs = _launch(
        _GROUP_SCRIPT,
        2,
        lambda r: {"LOCAL_RANK": None},
        [json.dumps({"backend": "nccl", "device_type": "cpu"})],
    )
    for out in outs:
        assert out["backend"] == "nccl"
        assert (out["world"], out["own"], out["both"]) == ("cpu0:1", "cpu0:2", "cpu0:3")


def _launched_backend():
    return dist.get_backend(), dist.WORLD.comp_node, dist.make_allreduce_cb("sum")._backend


def test_launcher_passes_its_backend_nccl_by_default():
    # MegEngine's launcher(backend="nccl") hands it to init_process_group; AllreduceCallback
    # reads "auto" as "nccl".
    results = dist.launcher(n_gpus=2, timeout=TIMEOUT)(_launched_backend)()
    assert [r[0] for r in results] == ["nccl", "nccl"]
    assert [r[2] for r in results] == ["nccl", "nccl"]
    # Each rank's device is its index: xpu0 and xpu1, at the stream numbers the forked ranks
    # take next (1 in a process that made no group before the fork).
    assert [r[1].split(":")[0] for r in results] == ["xpu0", "xpu1"]
    results = dist.launcher(n_gpus=2, backend="auto", timeout=TIMEOUT)(_launched_backend)()
    assert [r[0] for r in results] == ["auto", "auto"]
    assert [r[2] for r in results] == ["nccl", "nccl"]


def test_torchrun_local_world_size_names_the_machines_ranks():
    # Two ranks on one machine (LOCAL_WORLD_SIZE 2): its ranks, and each gets half the cores
    # for its x86 kernels, as two ranks of one launcher. Two "machines" of one rank each: none
    # is single-machine, and each keeps every core.
    cores = len(os.sched_getaffinity(0))
    args = [json.dumps({})]
    outs = _launch(
        _GROUP_SCRIPT,
        2,
        lambda r: {"LOCAL_RANK": r, "LOCAL_WORLD_SIZE": 2, "OMP_NUM_THREADS": None},
        args,
    )
    for out in outs:
        assert out["single_machine"] is True
        assert out["threads"] == max(1, cores // 2)
    outs = _launch(
        _GROUP_SCRIPT,
        2,
        lambda r: {"LOCAL_RANK": 0, "LOCAL_WORLD_SIZE": 1, "OMP_NUM_THREADS": None},
        args,
    )
    for out in outs:
        assert out["single_machine"] is False
        assert out["threads"] == cores


@pytest.mark.parametrize(
    "rank, local_rank, local_world_size",
    [(1, 2, 2), (0, 1, 2), (1, 0, 2), (0, 0, 0)],
)
def test_a_local_world_size_that_does_not_fit_is_an_error(
    monkeypatch, rank, local_rank, local_world_size
):
    # LOCAL_RANK beyond the machine's ranks, a machine starting before rank 0, or reaching past
    # the job's 2 ranks, or of no rank: a clear error before any rendezvous.
    for name, value in (
        ("MASTER_ADDR", "127.0.0.1"),
        ("MASTER_PORT", "1234"),
        ("WORLD_SIZE", "2"),
        ("RANK", str(rank)),
        ("LOCAL_RANK", str(local_rank)),
        ("LOCAL_WORLD_SIZE", str(local_world_size)),
    ):
        monkeypatch.setenv(name, value)
    with pytest.raises(ValueError, match="LOCAL_WORLD_SIZE"):
        dist.init_process_group()
    assert not dist.is_distributed()


# Rank r's integer gradients of w (3 elements) and v (1): a callback before make_allreduce_cb
# hands them on, as a gradient quantizer would (GradManager attaches float tensors only).
_INT_GRADS = {0: ([1, 2, 3], [5]), 1: ([2, 2, 4], [6])}


def _integer_gradients(method):
    r = dist.get_rank()
    w = mge.Parameter(np.zeros(3, "float32"))
    v = mge.Parameter(np.zeros(1, "float32"))

    def to_int(param, grad):
        return mge.Tensor(np.array(_INT_GRADS[r][0 if param is w else 1], dtype="int32"))

    gm = GradManager().attach([w, v], callbacks=[to_int, dist.make_allreduce_cb(method)])
    with gm:
        gm.backward(w.sum() + v.sum())
    return [(np.dtype(p.grad.dtype).name, p.grad.numpy().tolist()) for p in (w, v)]


def test_mean_of_integer_gradients_is_a_true_division():
    # MegEngine 1.13: packed_grads /= group.size turns the int32 sums [3, 4, 7] and [11] into
    # float32 means; "sum" keeps them int32.
    for grads in dist.launcher(n_gpus=2, timeout=TIMEOUT)(_integer_gradients)("mean"):
        assert grads == [("float32", [1.5, 2.0, 3.5]), ("float32", [5.5])]
    for grads in dist.launcher(n_gpus=2, timeout=TIMEOUT)(_integer_gradients)("sum"):
        assert grads == [("int32", [3, 4, 7]), ("int32", [11])]
