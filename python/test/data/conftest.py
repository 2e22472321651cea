"""Fixtures of the megengine.data tests."""

import gc
import signal

import numpy as np
import pytest

from data_test_utils import (
    child_pids,
    dev_shm,
    memfd_fds,
    memfd_mappings,
    wait_no_new_children,
    write_idx,
)


@pytest.fixture
def no_stray_children():
    """Fails the test if it leaves child processes behind."""
    before = child_pids()
    yield before
    extra = wait_no_new_children(before)
    assert not extra, f"stray child processes left behind: {sorted(extra)}"


@pytest.fixture
def nothing_left_behind(no_stray_children):
    """Fails the test if it leaves slot fds, slot mappings or /dev/shm entries behind."""
    gc.collect()
    before_shm = dev_shm()
    before_maps = len(memfd_mappings())
    yield
    gc.collect()
    assert memfd_fds() == []
    assert len(memfd_mappings()) <= before_maps
    new = {
        n for n in dev_shm() - before_shm if n.startswith(("psm_", "sem.mp-", "mp-", "megengine"))
    }
    assert not new


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


class DataTestTimedOut(Exception):
    pass


@pytest.fixture(autouse=True)
def _fail_instead_of_hanging():
    """Turns a test that runs for over a minute into a failure instead of a hang."""

    def on_alarm(signum, frame):
        raise DataTestTimedOut("test ran for over 60 s")

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(60)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)
