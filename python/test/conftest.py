"""Shared fixtures of the Python tests."""

import gzip
import os
import signal
import struct
import time

import numpy as np
import pytest


def child_pids():
    """The pids of the live (non-zombie) children of this process."""
    pids = set()
    for tid in os.listdir(f"/proc/{os.getpid()}/task"):
        try:
            with open(f"/proc/{os.getpid()}/task/{tid}/children") as f:
                pids.update(int(p) for p in f.read().split())
        except FileNotFoundError:
            continue
    live = set()
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except FileNotFoundError:
            continue
        if state != "Z":
            live.add(pid)
    return live


def wait_no_new_children(before, timeout=5.0):
    """Waits until no child other than those in ``before`` is alive; returns the stragglers."""
    deadline = time.monotonic() + timeout
    while True:
        extra = child_pids() - before
        if not extra or time.monotonic() > deadline:
            return extra
        time.sleep(0.05)


@pytest.fixture
def no_stray_children():
    """Fails the test if it leaves child processes behind."""
    before = child_pids()
    yield before
    extra = wait_no_new_children(before)
    assert not extra, f"stray child processes left behind: {sorted(extra)}"


def write_idx(path, array, magic_override=None):
    """Writes ``array`` (uint8) as a gzip-compressed IDX file."""
    array = np.asarray(array, dtype=np.uint8)
    magic = magic_override if magic_override is not None else (0x0800 | array.ndim)
    header = struct.pack(">i", magic) + struct.pack(">" + "i" * array.ndim, *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


@pytest.fixture
def mnist_root(tmp_path):
    """A folder with tiny MNIST-format files: 5 training and 3 test images of 4x3."""
    rng = np.random.RandomState(0)
    train_x = rng.randint(0, 256, size=(5, 4, 3))
    test_x = rng.randint(0, 256, size=(3, 4, 3))
    write_idx(tmp_path / "train-images-idx3-ubyte.gz", train_x)
    write_idx(tmp_path / "train-labels-idx1-ubyte.gz", [3, 1, 4, 1, 5])
    write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", test_x)
    write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", [9, 2, 6])
    return tmp_path, train_x.astype(np.uint8), test_x.astype(np.uint8)


class TestTimedOut(Exception):
    pass


@pytest.fixture(autouse=True)
def _fail_instead_of_hanging():
    """Turns a test that runs for over a minute into a failure instead of a hang."""

    def on_alarm(signum, frame):
        raise TestTimedOut("test ran for over 60 s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
