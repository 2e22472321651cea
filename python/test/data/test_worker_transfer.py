"""How batches and tasks cross between the main process and the workers: batch arrays through
shared memory (memfd slots, reused once the main process has dropped a batch), everything else
pickled; tasks through a pipe. Values, dtypes, flags and structure are as without workers, and
nothing is left behind."""

import collections
import gc
import os
import signal

import numpy as np
import pytest

from megengine.data import Collator, DataLoader, SequentialSampler, StreamSampler, dataloader
from megengine.data.dataloader import WorkerError
from megengine.data.dataset import ArrayDataset, Dataset, StreamDataset


def images(n, shape=(1, 28, 28), dtype=np.float32):
    return (np.arange(n * int(np.prod(shape))) % 251).astype(dtype).reshape((n,) + shape)


def expected(ds, sampler):
    return [Collator().apply([ds[i] for i in idx]) for idx in sampler]


def assert_batch_equal(got, want):
    assert type(got) is type(want)
    for g, w in zip(got, want):
        assert type(g) is np.ndarray
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.flags.c_contiguous and g.flags.writeable
        np.testing.assert_array_equal(g, w)


@pytest.mark.parametrize("num_workers", [1, 2])
def test_large_batches_through_shared_memory(num_workers, nothing_left_behind):
    ds = ArrayDataset(images(200), np.arange(200, dtype=np.int32))
    sampler = SequentialSampler(ds, batch_size=32)
    want = expected(ds, sampler)
    loader = DataLoader(ds, sampler, num_workers=num_workers)
    n = 0
    for got, w in zip(loader, want):
        assert_batch_equal(got, w)
        n += 1
    assert n == len(want) == 7


def test_kept_batches_are_not_overwritten(nothing_left_behind):
    # Batches the caller keeps hold their slot: later batches go to other slots or, when all
    # are taken, through the pipe.
    ds = ArrayDataset(images(400), np.arange(400, dtype=np.int64))
    sampler = SequentialSampler(ds, batch_size=10)
    want = expected(ds, sampler)
    loader = DataLoader(ds, sampler, num_workers=2)
    kept = []
    for i, batch in enumerate(loader):
        if i % 3 == 0:
            kept.append((i, batch))
        assert_batch_equal(batch, want[i])
    for i, batch in kept:
        assert_batch_equal(batch, want[i])
    all_kept = list(loader)
    assert len(all_kept) == 40
    for got, w in zip(all_kept, want):
        assert_batch_equal(got, w)
    del kept, all_kept, batch


def test_writing_into_a_batch_does_not_touch_others(nothing_left_behind):
    ds = ArrayDataset(images(64), np.arange(64, dtype=np.int32))
    sampler = SequentialSampler(ds, batch_size=8)
    want = expected(ds, sampler)
    for i, batch in enumerate(DataLoader(ds, sampler, num_workers=2)):
        assert_batch_equal(batch, want[i])
        batch[0][...] = -1
        batch[1][...] = -1
        del batch


def test_batches_outlive_the_loader(nothing_left_behind):
    ds = ArrayDataset(images(64), np.arange(64, dtype=np.int32))
    sampler = SequentialSampler(ds, batch_size=8)
    want = expected(ds, sampler)
    it = iter(DataLoader(ds, sampler, num_workers=2))
    first = next(it)
    second = next(it)
    del it  # workers stop; the batches keep their memory
    gc.collect()
    assert_batch_equal(first, want[0])
    assert_batch_equal(second, want[1])
    first[0][...] += 1
    np.testing.assert_array_equal(first[0], want[0][0] + 1)
    del first, second


class Growing(Dataset):
    """Item i is an array of i + 1 rows: batches of every size, each larger than the last."""

    def __getitem__(self, i):
        return (np.full((i + 1, 300), i, np.float64),)

    def __len__(self):
        return 60


class ToList(Collator):
    def apply(self, inputs):
        return [np.concatenate([s[0] for s in inputs])]


def test_growing_batches_replace_slots(nothing_left_behind):
    ds = Growing()
    sampler = SequentialSampler(ds, batch_size=3)
    got = list(DataLoader(ds, sampler, collator=ToList(), num_workers=2))
    assert [type(b) for b in got] == [list] * 20
    for k, batch in enumerate(got):
        rows = sum(i + 1 for i in range(3 * k, 3 * k + 3))
        assert batch[0].shape == (rows, 300)
        assert batch[0][0, 0] == 3 * k and batch[0][-1, 0] == 3 * k + 2
    del got


Point = collections.namedtuple("Point", "x label")


class Mixed(Dataset):
    """Samples of every structure the Collator handles, large and small arrays mixed."""

    def __getitem__(self, i):
        return {
            "image": np.full((3, 40, 40), i, np.float32),
            "small": np.full((2,), i, np.int16),
            "name": f"item{i}",
            "point": Point(np.full((1000,), i, np.float64), i),
            "nested": [np.full((32, 32), -i, np.int64), float(i)],
        }

    def __len__(self):
        return 20


class ReadOnly(Collator):
    def apply(self, inputs):
        batch = Collator().apply(inputs)
        for a in batch:
            a.flags.writeable = False
        return batch


def test_other_structures_and_flags(nothing_left_behind):
    ds = Mixed()
    sampler = SequentialSampler(ds, batch_size=4)
    want = expected(ds, sampler)
    got = list(DataLoader(ds, sampler, num_workers=2))
    assert len(got) == 5
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        assert g["name"] == w["name"]
        assert type(g["point"]) is Point
        for a, b in [
            (g["image"], w["image"]),
            (g["small"], w["small"]),
            (g["point"].x, w["point"].x),
            (g["point"].label, w["point"].label),
            (g["nested"][0], w["nested"][0]),
            (g["nested"][1], w["nested"][1]),
        ]:
            assert a.dtype == b.dtype and a.flags.writeable
            np.testing.assert_array_equal(a, b)
    # Read-only arrays stay read-only, as when pickled.
    ds = ArrayDataset(images(16), np.arange(16))
    for batch in DataLoader(
        ds, SequentialSampler(ds, batch_size=8), collator=ReadOnly(), num_workers=1
    ):
        assert not batch[0].flags.writeable and not batch[1].flags.writeable
    del got, batch


def test_without_shared_memory_too(monkeypatch, nothing_left_behind):
    # Where memfd is unavailable, batches are pickled through the pipe (here 400 KB each, more
    # than one read of the pipe takes).
    monkeypatch.setattr(dataloader, "_shm_supported", lambda ctx: False)
    ds = ArrayDataset(images(40, shape=(3, 64, 64)), np.arange(40, dtype=np.int32))
    sampler = SequentialSampler(ds, batch_size=8)
    want = expected(ds, sampler)
    for got, w in zip(DataLoader(ds, sampler, num_workers=2), want):
        assert_batch_equal(got, w)


@pytest.mark.parametrize("preload", [False, True])
def test_early_break_frees_everything(preload, nothing_left_behind):
    ds = ArrayDataset(images(256), np.arange(256))
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=16), num_workers=2, preload=preload)
    for i, batch in enumerate(loader):
        if i == 3:
            break
    del batch


def test_worker_killed_frees_everything(nothing_left_behind):
    class Pids(Dataset):
        def __getitem__(self, i):
            return np.full((64, 64), i, np.float32), np.int64(os.getpid())

        def __len__(self):
            return 64

    loader = DataLoader(Pids(), SequentialSampler(Pids(), batch_size=4), num_workers=2, timeout=30)
    it = iter(loader)
    batch = next(it)
    os.kill(int(batch[1][0]), signal.SIGKILL)
    with pytest.raises(WorkerError, match="SIGKILL"):
        for batch in it:
            pass
    del it, batch


def test_error_in_worker_frees_everything(nothing_left_behind):
    class FailsLate(Dataset):
        def __getitem__(self, i):
            if i == 30:
                raise KeyError("late")
            return (np.full((32, 32), i, np.float32),)

        def __len__(self):
            return 64

    with pytest.raises(KeyError, match="late"):
        for _ in DataLoader(
            FailsLate(), SequentialSampler(FailsLate(), batch_size=4), num_workers=2
        ):
            pass


def test_huge_tasks_do_not_block(nothing_left_behind):
    # Index lists larger than a pipe's buffer go through the sender's helper thread.
    n = 300_000
    ds = ArrayDataset(np.arange(n, dtype=np.int32))
    loader = DataLoader(ds, SequentialSampler(ds, batch_size=n // 2), num_workers=2)
    got = [b[0] for b in loader]
    assert [len(b) for b in got] == [n // 2, n // 2]
    np.testing.assert_array_equal(np.concatenate(got), np.arange(n))
    del got


class BigSamples(StreamDataset):
    def __iter__(self):
        for i in range(12):
            yield np.full((256, 1024), i, np.float32), np.int32(i)


def test_stream_samples_larger_than_the_pipe(nothing_left_behind):
    # Each task carries 3 MiB of samples from the main process, each batch 3 MiB back.
    got = list(DataLoader(BigSamples(), StreamSampler(batch_size=3), num_workers=2))
    assert [b[1].tolist() for b in got] == [[0, 1, 2], [3, 4, 5], [6, 7, 8], [9, 10, 11]]
    for k, (x, _) in enumerate(got):
        assert x.shape == (3, 256, 1024)
        assert (x[:, 0, 0] == [3 * k, 3 * k + 1, 3 * k + 2]).all()
    del got


def test_empty_arrays_in_a_batch(nothing_left_behind):
    ds = ArrayDataset(images(12), np.zeros((12, 0, 4), np.float32), np.zeros((12, 0), np.int8))
    sampler = SequentialSampler(ds, batch_size=5)
    want = expected(ds, sampler)
    got = list(DataLoader(ds, sampler, num_workers=2))
    assert [b[1].shape for b in got] == [(5, 0, 4), (5, 0, 4), (2, 0, 4)]
    for g, w in zip(got, want):
        assert_batch_equal(g, w)
    del got
