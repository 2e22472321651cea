"""Helpers of the distributed tests: inputs that every rank can recompute, and a short timeout.

Each test launches its ranks with ``megengine.distributed.launcher`` (fork, Gloo over loopback)
and compares what they return with the same computation done here in numpy.
"""

import numpy as np

# Seconds a rank waits for its peers in these tests: a failure shows quickly, never as a hang.
TIMEOUT = 10

DTYPES = ["float32", "int32", "float16", "int8"]
SHAPES = [(), (5,), (4, 3), (2, 3, 4)]


def rank_input(rank, shape, dtype, salt=0):
    """Rank ``rank``'s input: distinct per rank, exact in every dtype of DTYPES."""
    rng = np.random.RandomState(1000 * salt + rank)
    return rng.randint(-20, 20, size=shape).astype(dtype)
