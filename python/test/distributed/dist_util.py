"""Helpers of the distributed tests: inputs that every rank can recompute, and a short timeout.

Each test launches its ranks with ``megengine.distributed.launcher`` (fork, Gloo over loopback),
or as an external launcher would (``launch_by_environment``), and compares what they return with
the same computation done here in numpy.
"""

import os
import socket
import subprocess
import sys

import numpy as np

# Seconds a rank waits for its peers in these tests: a failure shows quickly, never as a hang.
TIMEOUT = 10

DTYPES = ["float32", "int32", "float16", "int8"]
SHAPES = [(), (5,), (4, 3), (2, 3, 4)]


def rank_input(rank, shape, dtype, salt=0):
    """Rank ``rank``'s input: distinct per rank, exact in every dtype of DTYPES."""
    rng = np.random.RandomState(1000 * salt + rank)
    return rng.randint(-20, 20, size=shape).astype(dtype)


# The package the ranks import, whatever the test's working directory.
PYTHON_DIR = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))


def free_port():
    """A loopback TCP port that was free a moment ago: a job's MASTER_PORT."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch_by_environment(script, world_size, env_of_rank, args=(), timeout=60):
    """Runs the Python source ``script`` as the ranks of a job launched the way torchrun or
    Slurm launch one: no launcher parent, each rank told MASTER_ADDR, MASTER_PORT, WORLD_SIZE and
    RANK, plus ``env_of_rank(rank)``'s variables (a value of None removes one). Returns each
    rank's stripped stdout; a rank that exits non-zero fails the test with its stderr, and no
    rank outlives the call."""
    port = free_port()
    procs = []
    for rank in range(world_size):
        env = dict(
            os.environ,
            PYTHONPATH=PYTHON_DIR,
            MASTER_ADDR="127.0.0.1",
            MASTER_PORT=str(port),
            WORLD_SIZE=str(world_size),
            RANK=str(rank),
        )
        for name, value in env_of_rank(rank).items():
            if value is None:
                env.pop(name, None)
            else:
                env[name] = str(value)
        procs.append(
            subprocess.Popen(
                [sys.executable, "-c", script, *args],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outs = []
    try:
        for p in procs:
            out, err = p.communicate(timeout=timeout)
            assert p.returncode == 0, err
            outs.append(out.strip())
    finally:
        for p in procs:
            p.kill()
            p.wait()
    return outs
