"""launcher gives each rank its share of the machine's cores for the x86 kernels, so that n ranks
do not run n times as many OpenMP threads as there are cores. Each case runs in a fresh
interpreter: the threads a rank starts with depend on what its parent ran before the fork."""

import json
import os
import subprocess
import sys

import pytest

PYTHON_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

SCRIPT = """
import json, os, sys
import numpy as np
import megengine as mge
import megengine.distributed as dist
from megengine.core import _imperative_rt as rt

def threads():
    return rt.x86_threads()

def try_two():
    try:
        rt.set_x86_threads(2)
        return "set"
    except ValueError as e:
        return str(e)

out = {"parent": rt.x86_threads(), "cores": len(os.sched_getaffinity(0))}
for n in (1, 2, 3):
    out[str(n)] = dist.launcher(n_gpus=n)(threads)()
if sys.argv[1] == "ran_kernels":
    (mge.Tensor(np.ones((4, 4), "float32")) * 2).numpy()  # the parent now has an x86 handle
    out["after_kernels"] = dist.launcher(n_gpus=1)(threads)()
    out["raise_after_kernels"] = dist.launcher(n_gpus=1)(try_two)()
print(json.dumps(out))
"""


def _run(case, omp=None):
    env = dict(os.environ, PYTHONPATH=os.path.abspath(PYTHON_DIR))
    env.pop("OMP_NUM_THREADS", None)
    if omp is not None:
        env["OMP_NUM_THREADS"] = str(omp)
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, case],
        check=False,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_ranks_share_the_cores():
    out = _run("plain")
    for n in (1, 2, 3):
        share = max(1, out["cores"] // n)
        assert out[str(n)] == [min(out["parent"], share)] * n, (n, out)


def test_omp_num_threads_is_left_alone():
    out = _run("plain", omp=3)
    assert out["parent"] == 3
    for n in (1, 2, 3):
        assert out[str(n)] == [3] * n


def test_a_fork_after_x86_kernels_keeps_one_thread():
    out = _run("ran_kernels")
    assert out["after_kernels"] == [1]
    assert "does not survive a fork" in out["raise_after_kernels"][0]


def test_bad_thread_counts_raise():
    from megengine.core import _imperative_rt as rt

    with pytest.raises(ValueError, match="at least 1"):
        rt.set_x86_threads(0)
