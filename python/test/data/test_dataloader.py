import faulthandler
import os
import signal
import time

import numpy as np
import pytest

import megengine.data.transform as T
from data_test_utils import child_pids
from megengine.data import (
    DataLoader,
    RandomSampler,
    SequentialSampler,
    StreamSampler,
    get_worker_info,
)
from megengine.data.dataloader import WorkerError
from megengine.data.dataset import ArrayDataset, Dataset, FashionMNIST, StreamDataset

FASHION_ROOT = "/usr/share/datasets/fashion-mnist"


class Jittery(Dataset):
    """Items take a random short time, so workers finish out of order."""

    def __init__(self, n=24):
        self.x = np.arange(n * 4, dtype=np.float32).reshape(n, 2, 2, 1)

    def __getitem__(self, i):
        time.sleep(np.random.uniform(0, 0.004))
        return self.x[i], np.int32(i)

    def __len__(self):
        return len(self.x)


class WhoAmI(Dataset):
    def __getitem__(self, i):
        info = get_worker_info()
        return (
            np.int64(i),
            np.int64(info.id),
            np.int64(info.seed),
            np.int64(np.random.randint(1 << 30)),
            np.int64(os.getpid()),
        )

    def __len__(self):
        return 16


class FailsAt(Dataset):
    def __init__(self, bad, exc=ValueError):
        self.bad = bad
        self.exc = exc

    def __getitem__(self, i):
        if i == self.bad:
            raise_from_helper(self.exc, i)
        return (np.int64(i),)

    def __len__(self):
        return 20


def raise_from_helper(exc, i):
    raise exc(f"item {i} is bad")


class NeedsTwoArgs(Exception):
    def __init__(self, a, b):
        super().__init__(a, b)


def raise_needs_two(msg):
    raise NeedsTwoArgs(msg, 2)


class Slow(Dataset):
    def __init__(self, slow_index, seconds):
        self.slow_index = slow_index
        self.seconds = seconds

    def __getitem__(self, i):
        if i == self.slow_index:
            time.sleep(self.seconds)
        return np.int64(i), np.int64(os.getpid())

    def __len__(self):
        return 40


class SelfSignal(Dataset):
    def __init__(self, index, sig):
        self.index = index
        self.sig = sig

    def __getitem__(self, i):
        if i == self.index:
            # Keep pytest's fault handler (inherited through fork) from dumping a traceback.
            faulthandler.disable()
            os.kill(os.getpid(), self.sig)
        return (np.int64(i),)

    def __len__(self):
        return 20


class Counter(StreamDataset):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        for i in range(self.n):
            yield np.full((2,), i, np.float32), np.int32(i)


def collect(loader):
    return [tuple(np.asarray(f).copy() for f in batch) for batch in loader]


def assert_same_batches(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert len(x) == len(y)
        for u, v in zip(x, y):
            np.testing.assert_array_equal(u, v)


def test_serial_loader():
    ds = ArrayDataset(np.arange(10, dtype=np.float32).reshape(5, 2, 1, 1), np.arange(5))
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), transform=T.ToMode())
    batches = collect(loader)
    assert len(loader) == 3 and len(batches) == 3
    assert batches[0][0].shape == (2, 1, 2, 1)
    assert batches[2][1].tolist() == [4]
    assert [b[1].tolist() for b in DataLoader(ds)] == [[0], [1], [2], [3], [4]]


@pytest.mark.parametrize("num_workers", [1, 2, 3])
def test_workers_keep_sampler_order(num_workers, no_stray_children, nothing_left_behind):
    ds = Jittery()
    sampler = RandomSampler(ds, batch_size=3, seed=5)
    transform = T.Compose([T.Normalize(mean=1.0, std=2.0), T.ToMode()])
    serial = collect(DataLoader(ds, sampler, transform=transform))
    sampler = RandomSampler(ds, batch_size=3, seed=5)
    parallel = collect(DataLoader(ds, sampler, transform=transform, num_workers=num_workers))
    assert_same_batches(serial, parallel)
    assert len(parallel) == 8


def test_worker_info_and_seeds(no_stray_children, nothing_left_behind):
    assert get_worker_info() is None
    ds = WhoAmI()

    def run():
        np.random.seed(123)
        loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), num_workers=2)
        return np.concatenate([np.stack(b, axis=1) for b in loader])

    rows = run()
    assert rows[:, 0].tolist() == list(range(16))
    # Batches go to the workers in turn.
    assert rows[:, 1].tolist() == [0, 0, 1, 1] * 4
    seeds = {int(w): int(s) for w, s in rows[:, 1:3]}
    assert seeds[1] == seeds[0] + 1
    assert len(set(rows[:, 4].tolist())) == 2
    by_worker = [rows[rows[:, 1] == w, 3].tolist() for w in (0, 1)]
    assert by_worker[0] != by_worker[1]
    np.testing.assert_array_equal(run()[:, 1:4], rows[:, 1:4])


def test_new_epoch_new_order(no_stray_children, nothing_left_behind):
    ds = ArrayDataset(np.arange(12))
    loader = DataLoader(ds, RandomSampler(ds, batch_size=4, seed=0), num_workers=2)
    first = np.concatenate([b[0] for b in loader])
    second = np.concatenate([b[0] for b in loader])
    assert sorted(first.tolist()) == sorted(second.tolist()) == list(range(12))
    assert first.tolist() != second.tolist()


def test_worker_exception_with_traceback(no_stray_children, nothing_left_behind):
    ds = FailsAt(7)
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), num_workers=2)
    got = []
    with pytest.raises(ValueError) as info:
        for batch in loader:
            got.append(batch[0].tolist())
    msg = str(info.value)
    assert "Caught ValueError in DataLoader worker process 1" in msg
    assert "item 7 is bad" in msg
    assert "raise_from_helper" in msg and "Traceback" in msg
    assert got == [[0, 1], [2, 3], [4, 5]]


def test_worker_exception_that_cannot_be_rebuilt(no_stray_children, nothing_left_behind):
    ds = FailsAt(0, exc=lambda msg: raise_needs_two(msg))
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=4), num_workers=1)
    with pytest.raises(RuntimeError, match="NeedsTwoArgs") as info:
        next(iter(loader))
    assert "raise_needs_two" in str(info.value)


def test_serial_exception_is_the_original():
    ds = FailsAt(1)
    with pytest.raises(ValueError, match="item 1 is bad"):
        list(DataLoader(ds, SequentialSampler(ds, batch_size=2)))


def test_killed_worker_is_a_clear_error(no_stray_children, nothing_left_behind):
    ds = Slow(slow_index=-1, seconds=0)
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=1), num_workers=2, timeout=30)
    it = iter(loader)
    _, pid = next(it)
    os.kill(int(pid[0]), signal.SIGKILL)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="SIGKILL") as info:
        for _ in it:
            pass
    assert time.monotonic() - start < 10
    assert str(int(pid[0])) in str(info.value)
    del it


@pytest.mark.parametrize("sig,name", [(signal.SIGSEGV, "SIGSEGV"), (signal.SIGABRT, "SIGABRT")])
def test_crashing_worker_is_a_clear_error(sig, name, no_stray_children, nothing_left_behind):
    ds = SelfSignal(5, sig)
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), num_workers=2, timeout=30)
    with pytest.raises(WorkerError, match=name):
        list(loader)


def test_timeout(no_stray_children, nothing_left_behind):
    ds = Slow(slow_index=2, seconds=20)
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=1), num_workers=2, timeout=0.5)
    start = time.monotonic()
    with pytest.raises(WorkerError, match="timed out"):
        list(loader)
    assert time.monotonic() - start < 5


@pytest.mark.parametrize("preload", [False, True])
def test_break_early_leaves_no_process(preload, no_stray_children, nothing_left_behind):
    ds = Slow(slow_index=-1, seconds=0)
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), num_workers=2, preload=preload)
    for i, _ in enumerate(loader):
        if i == 2:
            break


def python_shm_entries():
    # Names Python's multiprocessing gives shared memory and semaphores under /dev/shm.
    if not os.path.isdir("/dev/shm"):
        return set()
    return {n for n in os.listdir("/dev/shm") if n.startswith(("psm_", "sem.mp-", "mp-"))}


@pytest.mark.parametrize("preload", [False, True])
def test_no_shared_memory_left_behind(preload, no_stray_children, nothing_left_behind):
    before = python_shm_entries()
    ds = Jittery(12)
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), num_workers=2, preload=preload)
    for i, _ in enumerate(loader):
        if i == 1:
            break
    list(loader)
    del loader
    assert python_shm_entries() - before == set()


def test_delete_loader_and_iterator_leaves_no_process(no_stray_children, nothing_left_behind):
    ds = Slow(slow_index=-1, seconds=0)
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), num_workers=3)
    it = iter(loader)
    next(it)
    assert len(child_pids() - no_stray_children) == 3
    del loader
    del it


def test_workers_run_while_iterating_and_stop_at_the_end(no_stray_children, nothing_left_behind):
    ds = ArrayDataset(np.arange(10))
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=5), num_workers=2)
    it = iter(loader)
    assert len(child_pids() - no_stray_children) == 2
    assert [b[0].tolist() for b in it] == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert not (child_pids() - no_stray_children)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_stream_dataset(num_workers, no_stray_children, nothing_left_behind):
    # the main process reads the stream once and hands the samples to the workers
    loader = DataLoader(
        Counter(7),
        StreamSampler(batch_size=3),
        T.Normalize(mean=1.0, order=("image", "image_category")),
        None,
        num_workers,
        0,
        False,
        False,  # parallel_stream, MegEngine's 8th positional parameter
    )
    assert loader.parallel_stream is False
    batches = collect(loader)
    assert [b[1].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5], [6]]
    assert batches[1][0].tolist() == [[2.0, 2.0], [3.0, 3.0], [4.0, 4.0]]
    with pytest.raises(TypeError):
        len(loader)
    # without workers parallel_stream changes nothing
    serial = DataLoader(Counter(4), StreamSampler(batch_size=3), parallel_stream=True)
    assert [b[1].tolist() for b in serial] == [[0, 1, 2], [3]]


class Sharded(StreamDataset):
    """Worker w of n yields w, w + n, w + 2n, ... below `stop`; the main process everything."""

    def __init__(self, stop):
        self.stop = stop

    def __iter__(self):
        info = get_worker_info()
        start, step = (0, 1) if info is None else (info.idx, info.worker)
        for i in range(start, self.stop, step):
            yield np.full((2,), i, np.float32), np.int32(i)


def test_parallel_stream_workers_read_their_own_iterators(no_stray_children, nothing_left_behind):
    loader = DataLoader(
        Sharded(11), StreamSampler(batch_size=2), num_workers=2, parallel_stream=True
    )
    # whole batches from each worker's shard, the workers in turn; worker 1's shard (1, 3, 5, 7,
    # 9) runs out first, which ends the iteration
    labels = [b[1].tolist() for b in loader]
    assert labels == [[0, 2], [1, 3], [4, 6], [5, 7], [8, 10], [9]]
    # a dataset that does not shard itself is read whole by each worker
    loader = DataLoader(
        Counter(3), StreamSampler(batch_size=2), num_workers=2, parallel_stream=True
    )
    assert [b[1].tolist() for b in loader] == [[0, 1], [0, 1], [2], [2]]


class Stalls(StreamDataset):
    def __init__(self, after, seconds):
        self.after, self.seconds = after, seconds

    def __iter__(self):
        for i in range(10):
            if i == self.after:
                time.sleep(self.seconds)
            yield np.zeros(2, np.float32), np.int32(i)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_stream_timeout_covers_reading_the_stream(num_workers, no_stray_children):
    # MegEngine raises when the stream itself stalls, with or without workers
    loader = DataLoader(
        Stalls(3, 20), StreamSampler(batch_size=2), num_workers=num_workers, timeout=0.5
    )
    start = time.monotonic()
    got = []
    with pytest.raises(WorkerError, match="stream gave no sample within timeout=0.5s"):
        for batch in loader:
            got.append(batch[1].tolist())
    assert time.monotonic() - start < 5
    assert got == [[0, 1]]  # the batch read before the stall comes first
    # a stream that keeps up is read whole under a timeout
    fine = DataLoader(
        Stalls(3, 0.01), StreamSampler(batch_size=4), num_workers=num_workers, timeout=5
    )
    assert [b[1].tolist() for b in fine] == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_preload(num_workers, no_stray_children, nothing_left_behind):
    ds = Jittery(12)
    plain = collect(DataLoader(ds, SequentialSampler(ds, batch_size=5)))
    pre = collect(
        DataLoader(ds, SequentialSampler(ds, batch_size=5), num_workers=num_workers, preload=True)
    )
    assert_same_batches(plain, pre)
    failing = DataLoader(FailsAt(3), num_workers=num_workers, preload=True)
    with pytest.raises(ValueError, match="item 3 is bad"):
        list(failing)


def test_argument_checks():
    ds = ArrayDataset(np.arange(3))
    with pytest.raises(ValueError):
        DataLoader(ds, num_workers=-1)
    with pytest.raises(ValueError):
        DataLoader(ds, timeout=-1)
    with pytest.raises(TypeError):
        DataLoader(ds, sampler=StreamSampler(2))
    with pytest.raises(TypeError):
        DataLoader(Counter(3), sampler=SequentialSampler(ds))


@pytest.mark.skipif(not os.path.isdir(FASHION_ROOT), reason="dataset-fashion-mnist not installed")
def test_fashion_mnist_with_workers(no_stray_children, nothing_left_behind):
    ds = FashionMNIST(train=False)
    mean, std = 0.2860 * 255, 0.3530 * 255
    loader = DataLoader(
        ds,
        SequentialSampler(ds, batch_size=64),
        transform=T.Compose([T.Normalize(mean=mean, std=std), T.ToMode("CHW")]),
        num_workers=2,
    )
    n = 0
    for i, (x, y) in enumerate(loader):
        if i == 0:
            expect = (ds.arrays[0][:64].astype(np.float32) - np.float32(mean)) / np.float32(std)
            np.testing.assert_allclose(x, expect.transpose(0, 3, 1, 2), rtol=1e-6)
            assert y.dtype == np.int32 and y[:3].tolist() == [9, 2, 1]
        n += len(y)
    assert n == 10000 and x.shape == (16, 1, 28, 28)


class BrokenStream(StreamDataset):
    def __iter__(self):
        for i in range(5):
            yield (np.int64(i),)
        raise OSError("stream broke")


@pytest.mark.parametrize("num_workers", [0, 2])
def test_stream_error_in_main_process_stops_workers(
    num_workers, no_stray_children, nothing_left_behind
):
    # The error surfaces after the batches completed before it, as without workers.
    loader = DataLoader(BrokenStream(), StreamSampler(batch_size=2), num_workers=num_workers)
    got = []
    with pytest.raises(OSError, match="stream broke"):
        for batch in loader:
            got.append(batch[0].tolist())
    assert got == [[0, 1], [2, 3]]


def test_worker_exiting_is_a_clear_error(no_stray_children, nothing_left_behind):
    loader = DataLoader(FailsAt(2, exc=lambda msg: os._exit(3)), num_workers=1, timeout=30)
    with pytest.raises(WorkerError, match="exited with code 3"):
        list(loader)


def test_infinite_sampler_with_workers(no_stray_children, nothing_left_behind):
    from itertools import islice

    from megengine.data import Infinite

    ds = ArrayDataset(np.arange(5))
    loader = DataLoader(ds, Infinite(SequentialSampler(ds, batch_size=2)), num_workers=2)
    got = [b[0].tolist() for b in islice(loader, 7)]
    assert got == [[0, 1], [2, 3], [4], [0, 1], [2, 3], [4], [0, 1]]


class ConvolvesInTheWorker(Dataset):
    """Runs oneDNN kernels (conv2d, matmul) inside the worker, as a GPU-free augmentation might."""

    def __init__(self, images, weight):
        self.images, self.weight = images, weight

    def __getitem__(self, i):
        import megengine as mge
        import megengine.functional as F

        x = mge.Tensor(self.images[i : i + 1])
        y = F.conv2d(x, mge.Tensor(self.weight), padding=1)
        return F.matmul(F.flatten(y, 1), F.flatten(y, 1), transpose_b=True).numpy()[0]

    def __len__(self):
        return len(self.images)


def test_workers_run_kernels_the_parent_ran(no_stray_children, nothing_left_behind):
    # The parent runs the same kernels first (on several OpenMP threads); a forked worker must
    # still run them: GNU OpenMP's pool does not survive fork.
    rng = np.random.default_rng(0)
    images = rng.normal(size=(6, 3, 16, 16)).astype(np.float32)
    weight = rng.normal(size=(8, 3, 3, 3)).astype(np.float32)
    ds = ConvolvesInTheWorker(images, weight)
    serial = np.stack([ds[i] for i in range(len(ds))])
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=2), num_workers=2, timeout=60)
    parallel = np.concatenate([b for b in loader])
    np.testing.assert_allclose(parallel, serial, rtol=1e-5)
