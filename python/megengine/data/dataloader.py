"""DataLoader: batches from a dataset through a sampler, a transform and a collator, in the main
process or in worker processes."""

import contextlib
import itertools
import multiprocessing
import os
import pickle
import queue
import random
import signal
import socket
import sys
import threading
import time
import traceback

import numpy as np

from ..logger import get_logger
from ._worker_transport import (
    _POLL_INTERVAL,
    _PREFETCH_PER_WORKER,
    _WORKER_POLL_INTERVAL,
    _enlarge_pipe,
    _FrameReader,
    _shm_supported,
    _ShmMessage,
    _ShmReceiver,
    _ShmSender,
    _TaskSender,
    _write_frame,
)
from .collator import Collator
from .dataset import Dataset, StreamDataset
from .sampler import Sampler, SequentialSampler, StreamSampler
from .transform import PseudoTransform, Transform

_worker_info = None


class WorkerInfo:
    r"""What a worker process knows about itself; see :func:`get_worker_info`.

    Args:
        id: the worker's index in ``[0, num_workers)``.
        num_workers: number of workers of the loader.
        seed: the seed of this worker's ``random`` and ``numpy.random`` generators.
        dataset: the worker's copy of the dataset.

    Examples:
        >>> from megengine.data.dataloader import WorkerInfo
        >>> WorkerInfo(id=0, num_workers=2, seed=7, dataset=None)
        WorkerInfo(id=0, num_workers=2, seed=7)
    """

    def __init__(self, id, num_workers, seed, dataset):
        self.id = id
        self.num_workers = num_workers
        self.seed = seed
        self.dataset = dataset

    @property
    def idx(self):
        r"""The worker's index (MegEngine's name for :attr:`id`)."""
        return self.id

    @property
    def worker(self):
        r"""Number of workers (MegEngine's name for :attr:`num_workers`)."""
        return self.num_workers

    def __repr__(self):
        return f"WorkerInfo(id={self.id}, num_workers={self.num_workers}, seed={self.seed})"


def get_worker_info():
    r"""Returns the :class:`WorkerInfo` of the current worker process, or ``None`` in the main
    process.

    Each worker seeds Python's ``random`` and NumPy's global generator with ``seed``, a base seed
    drawn from the main process's ``numpy.random`` when iteration starts plus the worker's id:
    random transforms differ across workers and are reproducible after ``np.random.seed``.

    Returns:
        A :class:`WorkerInfo` or ``None``.

    Examples:
        >>> from megengine.data import get_worker_info
        >>> get_worker_info() is None
        True
    """
    return _worker_info


class _ExceptionWrapper:
    # Carries an exception and its formatted traceback from a worker to the main process.
    def __init__(self, worker_id, exc_info):
        self.worker_id = worker_id
        self.exc_type = exc_info[0]
        self.exc_msg = "".join(traceback.format_exception(*exc_info))

    def reraise(self):
        msg = (
            f"Caught {self.exc_type.__name__} in DataLoader worker process {self.worker_id}.\n"
            f"Original traceback from the worker:\n{self.exc_msg}"
        )
        try:
            exc = self.exc_type(msg)
        except Exception:  # noqa: BLE001 - a type whose constructor needs other arguments
            exc = RuntimeError(msg)
        raise exc


class WorkerError(RuntimeError):
    r"""A DataLoader worker process died (killed, crashed), or a batch (or, reading a
    :class:`~megengine.data.dataset.StreamDataset`, a sample) did not arrive within the loader's
    ``timeout``.

    Examples:
        >>> from megengine.data.dataloader import WorkerError
        >>> issubclass(WorkerError, RuntimeError)
        True
    """


# The kind of task whose worker reads the samples from its own iterator of the stream dataset
# (parallel_stream); the payload is how many. The other tasks carry a bool: True for samples
# read by the main process, False for indices into a map-style dataset.
_OWN_STREAM = "own stream"


class _StreamEnd:
    # What a worker sends when its own iterator of the stream has no sample left.
    pass


class _BatchMaker:
    # Makes a batch from a task: reads the items, transforms them, collates them. Where the
    # dataset can gather a batch at once (ArrayDataset, MNIST, CIFAR over NumPy arrays), the
    # collator is the default one and the transform has a vectorised form (Compose, Normalize,
    # ToMode, PseudoTransform), the whole batch goes through NumPy at once, with the same
    # result as sample by sample; anything else, or any failure there, takes the per-sample
    # path, which then also raises the per-sample errors.
    def __init__(self, dataset, transform, collator):
        self.dataset = dataset
        self.transform = transform
        self.collator = collator
        self._vectorise = (
            type(collator) is Collator
            and callable(getattr(dataset, "_get_batch", None))
            and callable(getattr(transform, "_apply_columns", None))
        )

    def __call__(self, from_stream, payload):
        if self._vectorise and not from_stream:
            columns = None
            try:
                columns = self.dataset._get_batch(payload)
                batch = None if columns is None else self.transform._apply_columns(columns)
            except Exception:  # noqa: BLE001 - the per-sample path raises the real error
                batch = None
            if batch is not None:
                return list(batch)  # the default collator's container
            if columns is not None:
                # The transform has no vectorised form: stop trying.
                self._vectorise = False
        samples = payload if from_stream else [self.dataset[i] for i in payload]
        return self.collator.apply(self.transform.apply_batch(samples))


def _dumps(worker_id, batch_id, batch, shm=None):
    try:
        if shm is not None and not isinstance(batch, _ExceptionWrapper):
            return shm.pack(batch_id, batch)
        return pickle.dumps((batch_id, batch), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # noqa: BLE001 - whatever fails to pickle is reported to the main process
        if isinstance(batch, _ExceptionWrapper):
            wrapper = batch
            # The exception's type itself cannot be pickled (e.g. a local class).
            wrapper.exc_type = RuntimeError
        else:
            wrapper = _ExceptionWrapper(worker_id, sys.exc_info())
        return _dumps(worker_id, batch_id, wrapper)


def _worker_loop(
    dataset,
    transform,
    collator,
    task_conn,
    result_conn,
    shm_sock,
    worker_id,
    num_workers,
    seed,
    ppid,
):
    global _worker_info
    # Ctrl-C reaches the whole process group; the main process handles it and shuts us down.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _worker_info = WorkerInfo(worker_id, num_workers, seed, dataset)
    random.seed(seed)
    np.random.seed(seed % (1 << 32))
    shm = None if shm_sock is None else _ShmSender(shm_sock)
    tasks = _FrameReader(task_conn)
    result_fd = result_conn.fileno()
    make_batch = _BatchMaker(dataset, transform, collator)
    own_stream = None
    try:
        while True:
            task = tasks.read(_WORKER_POLL_INTERVAL)
            if task is None:
                if os.getppid() != ppid:
                    return
                continue
            task = pickle.loads(task)
            if task is None:
                return
            batch_id, from_stream, payload, freed = task
            if freed:
                shm.release(freed)
            try:
                if from_stream == _OWN_STREAM:
                    if own_stream is None:
                        own_stream = iter(dataset)
                    samples = list(itertools.islice(own_stream, payload))
                    batch = make_batch(True, samples) if samples else _StreamEnd()
                else:
                    batch = make_batch(from_stream, payload)
                data = _dumps(worker_id, batch_id, batch, shm)
            except Exception:  # noqa: BLE001 - every failure is re-raised in the main process
                data = _dumps(worker_id, batch_id, _ExceptionWrapper(worker_id, sys.exc_info()))
            _write_frame(result_fd, data)
            batch = data = None  # freed now, not when the next batch replaces it
    except (BrokenPipeError, EOFError, OSError, KeyboardInterrupt):
        # The main process closed our pipe (shutdown) or died.
        return


def _map_tasks(sampler):
    for indices in sampler:
        yield False, list(indices)


def _timed_stream(it, timeout):
    # MegEngine's timeout covers reading a stream too: the stream is read in a daemon thread and
    # a sample later than `timeout` raises (a thread stuck inside the dataset is left behind).
    q = queue.Queue(maxsize=1)
    stop = threading.Event()
    end = object()

    def pump():
        try:
            for item in it:
                if not _offer(q, stop, (True, item)):
                    return
        except BaseException:  # noqa: BLE001 - raised in the reading thread
            _offer(q, stop, (False, sys.exc_info()[1]))
            return
        _offer(q, stop, (True, end))

    threading.Thread(target=pump, daemon=True).start()
    try:
        while True:
            try:
                ok, item = q.get(timeout=timeout)
            except queue.Empty:
                raise WorkerError(
                    f"DataLoader timed out: the stream gave no sample within timeout={timeout}s"
                ) from None
            if not ok:
                raise item
            if item is end:
                return
            yield item
    finally:
        stop.set()


def _own_stream_tasks(sampler):
    for step in sampler:
        yield _OWN_STREAM, len(step)


def _stream_tasks(dataset, sampler, timeout):
    it = iter(dataset)
    if timeout > 0:
        it = _timed_stream(it, timeout)
    for step in sampler:
        samples = []
        for _ in step:
            try:
                samples.append(next(it))
            except StopIteration:
                break
        if not samples:
            return
        yield True, samples
        if len(samples) < len(step):
            return


class _SerialIter:
    def __init__(self, loader, tasks):
        self._make_batch = _BatchMaker(loader.dataset, loader.transform, loader.collator)
        self._tasks = tasks

    def __iter__(self):
        return self

    def __next__(self):
        from_stream, payload = next(self._tasks)
        return self._make_batch(from_stream, payload)


class _ParallelIter:
    def __init__(self, loader, tasks):
        self._loader = loader
        self._tasks = tasks
        self._timeout = loader.timeout
        self._shut = False
        self._tasks_done = False
        self._task_error = None
        self._send_idx = 0
        self._rcvd_idx = 0
        self._owner = {}
        self._next_worker = 0
        self._workers, self._task_senders, self._results, self._shm = [], [], [], []
        n = loader.num_workers
        ctx = loader._mp_context()
        use_shm = _shm_supported(ctx)
        base_seed = int(np.random.randint(0, 1 << 31))
        try:
            for wid in range(n):
                task_reader, task_writer = ctx.Pipe(duplex=False)
                self._task_senders.append(_TaskSender(task_writer))
                reader, writer = ctx.Pipe(duplex=False)
                _enlarge_pipe(writer)
                shm_main, shm_worker = socket.socketpair() if use_shm else (None, None)
                p = ctx.Process(
                    target=_worker_loop,
                    args=(
                        loader.dataset,
                        loader.transform,
                        loader.collator,
                        task_reader,
                        writer,
                        shm_worker,
                        wid,
                        n,
                        base_seed + wid,
                        os.getpid(),
                    ),
                    daemon=True,
                )
                try:
                    p.start()
                finally:
                    # Only the worker keeps the writing end: when it dies, reading gives EOF.
                    writer.close()
                    task_reader.close()
                    if use_shm:
                        shm_worker.close()
                self._workers.append(p)
                self._results.append(_FrameReader(reader))
                self._shm.append(_ShmReceiver(shm_main) if use_shm else None)
            for _ in range(_PREFETCH_PER_WORKER * n):
                self._put_task()
        except BaseException:
            self._shutdown()
            raise

    def __iter__(self):
        return self

    def _put_task(self):
        if self._tasks_done:
            return
        try:
            from_stream, payload = next(self._tasks)
        except StopIteration:
            self._tasks_done = True
            return
        except Exception as e:  # noqa: BLE001 - raised once the batches before it are consumed
            self._tasks_done = True
            self._task_error = e
            return
        wid = self._next_worker
        self._next_worker = (wid + 1) % len(self._workers)
        shm = self._shm[wid]
        freed = shm.take_freed() if shm is not None else None
        self._task_senders[wid].put((self._send_idx, from_stream, payload, freed))
        self._owner[self._send_idx] = wid
        self._send_idx += 1

    def _worker_died(self, wid):
        p = self._workers[wid]
        p.join(timeout=1.0)
        code = p.exitcode
        if code is None:
            how = "closed its result pipe"
        elif code < 0:
            try:
                how = f"was killed by signal {signal.Signals(-code).name}"
            except ValueError:
                how = f"was killed by signal {-code}"
        else:
            how = f"exited with code {code}"
        self._shutdown()
        raise WorkerError(
            f"DataLoader worker {wid} (pid {p.pid}) {how} unexpectedly while loading a batch"
        )

    def _receive(self, wid):
        results = self._results[wid]
        start = time.monotonic()
        while True:
            wait = _POLL_INTERVAL
            if self._timeout > 0:
                left = self._timeout - (time.monotonic() - start)
                if left <= 0:
                    self._shutdown()
                    raise WorkerError(
                        f"DataLoader timed out: worker {wid} gave no batch within "
                        f"timeout={self._timeout}s"
                    )
                wait = min(wait, left)
            try:
                data = results.read(wait)
                if data is None and not self._workers[wid].is_alive():
                    # Whatever it wrote before dying can still be read.
                    data = results.read(0)
                    if data is None:
                        raise EOFError
            except (EOFError, OSError):
                self._worker_died(wid)
            if data is not None:
                message = pickle.loads(data)
                if type(message) is _ShmMessage:
                    message = self._shm[wid].unpack(message)
                return message

    def __next__(self):
        if self._shut:
            raise StopIteration
        if self._rcvd_idx == self._send_idx:
            self._shutdown()
            if self._task_error is not None:
                error, self._task_error = self._task_error, None
                raise error
            raise StopIteration
        wid = self._owner.pop(self._rcvd_idx)
        try:
            batch_id, batch = self._receive(wid)
            if batch_id != self._rcvd_idx:
                raise RuntimeError(
                    f"DataLoader: worker {wid} sent batch {batch_id}, expected {self._rcvd_idx}"
                )
            self._rcvd_idx += 1
            if isinstance(batch, _ExceptionWrapper):
                batch.reraise()
            if isinstance(batch, _StreamEnd):
                self._shutdown()
                raise StopIteration
            self._put_task()
        except BaseException:
            self._shutdown()
            raise
        return batch

    def _shutdown(self):
        if self._shut:
            return
        self._shut = True
        for sender in self._task_senders:
            sender.close()
        # A worker blocked on sending a batch gets a broken pipe and exits.
        for results in self._results:
            results.close()
        deadline = time.monotonic() + 2.0
        for p in self._workers:
            p.join(timeout=max(0.0, deadline - time.monotonic()))
        for p in self._workers:
            if p.is_alive():
                p.kill()
                p.join()
        for shm in self._shm:
            if shm is not None:
                shm.close()

    def __del__(self):
        # At interpreter exit the modules _shutdown uses may already be gone.
        with contextlib.suppress(Exception):
            self._shutdown()


_PRELOAD_END = object()


def _offer(q, stop, item):
    # Puts item into q unless stop is set first; returns whether it was put.
    while not stop.is_set():
        try:
            q.put(item, timeout=_POLL_INTERVAL)
            return True
        except queue.Full:
            continue
    return False


def _preload_loop(inner, q, stop):
    # Runs in the preload thread; it holds no reference to the _PreloadIter, so deleting that
    # object stops the thread.
    try:
        for batch in inner:
            if not _offer(q, stop, (True, batch)):
                return
    except BaseException:  # noqa: BLE001 - handed to the consuming thread, which raises it
        if not stop.is_set():
            _offer(q, stop, (False, sys.exc_info()[1]))
        return
    _offer(q, stop, (True, _PRELOAD_END))


class _PreloadIter:
    # Loads the next batch in a background thread while the caller uses the current one.
    def __init__(self, inner):
        self._inner = inner
        self._queue = queue.Queue(maxsize=1)
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=_preload_loop, args=(inner, self._queue, self._stop), daemon=True
        )
        self._thread.start()

    def __iter__(self):
        return self

    def __next__(self):
        if self._stop.is_set():
            raise StopIteration
        ok, value = self._queue.get()
        if not ok:
            self.close()
            raise value
        if value is _PRELOAD_END:
            self.close()
            raise StopIteration
        return value

    def close(self):
        if self._stop.is_set():
            return
        self._stop.set()
        shutdown = getattr(self._inner, "_shutdown", None)
        if shutdown is not None:
            shutdown()
        self._thread.join()

    def __del__(self):
        self.close()


def _resident_bytes():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


_CGROUP_LIMIT_FILES = (
    "/sys/fs/cgroup/memory.max",  # cgroup v2: a number, or "max" for none
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",  # cgroup v1
)


def _cgroup_memory_limit_bytes():
    for path in _CGROUP_LIMIT_FILES:
        try:
            with open(path) as f:
                text = f.read().strip()
        except OSError:
            continue
        return int(text) if text.isdigit() else None
    return None


class DataLoader:
    r"""Loads batches from a dataset: a sampler picks the items of each batch, a transform
    processes each sample, a collator stacks them. Batches are NumPy arrays.

    With ``num_workers > 0`` batches are made in that many worker processes (forked where the
    platform allows) and come out in the sampler's order. A worker's exception is raised in the
    main process with the worker's traceback; a worker that dies raises
    :class:`~megengine.data.dataloader.WorkerError`. Workers stop when the iteration ends, when
    an error is raised, and when the iterator is deleted (e.g. after ``break``). For a
    :class:`~megengine.data.dataset.StreamDataset` the main process reads the stream and the
    workers transform and collate, unless ``parallel_stream`` is set. Each worker has up to two batches in flight and seeds
    ``random`` and ``numpy.random`` as :func:`get_worker_info` describes. On Linux a worker
    puts the arrays of its batches in a few shared-memory buffers of its own (``memfd``: no
    name under ``/dev/shm``, freed with their last user, even after a crash) and the batch's
    arrays view them without a copy; a buffer is reused once every array of the batch using it
    is gone, and while the caller keeps more batches than there are buffers, the batches are
    pickled through the worker's pipe. Elsewhere batches are always pickled.

    Where the dataset is an :class:`~megengine.data.dataset.ArrayDataset` (or MNIST, CIFAR)
    over numeric NumPy arrays, the collator is the default :class:`~megengine.data.Collator`
    and the transform is made of deterministic transforms with a vectorised form
    (:class:`~megengine.data.transform.Compose` without ``shuffle_indices``,
    :class:`~megengine.data.transform.Normalize`, :class:`~megengine.data.transform.ToMode`,
    :class:`~megengine.data.transform.PseudoTransform`), a batch is gathered with one NumPy
    index per array and transformed as a whole, giving the same arrays, bit for bit, as
    transforming and collating sample by sample; otherwise (subclasses included) samples go
    one by one. Such a batch costs less to make than to receive from a worker, so for these
    pipelines ``num_workers=0`` (with ``preload=True`` to overlap loading with the step) is
    faster than worker processes; workers pay where per-sample transforms are costly
    (``bench/data_loader.py`` measures both).

    Args:
        dataset: a :class:`~megengine.data.dataset.Dataset` or
            :class:`~megengine.data.dataset.StreamDataset`.
        sampler: a :class:`~megengine.data.MapSampler` (map-style datasets;
            ``SequentialSampler(dataset, batch_size=1)`` when ``None``) or a
            :class:`~megengine.data.StreamSampler` (stream datasets; batch size 1 when ``None``).
        transform: a :class:`~megengine.data.transform.Transform` applied to each sample; none
            when ``None``.
        collator: a :class:`~megengine.data.Collator` that merges samples into a batch.
        num_workers: number of worker processes; 0 loads in the main process.
        timeout: with workers, the most seconds to wait for one batch, and, reading a
            StreamDataset, for one sample (with or without workers), before raising
            :class:`~megengine.data.dataloader.WorkerError`; 0 waits without limit.
        preload: load the next batch in a background thread while the current one is used
            (MegEngine also copies it to the device; batches here stay NumPy arrays).
        parallel_stream: with workers and a StreamDataset, each worker reads its own iterator
            of the dataset (where :func:`get_worker_info` tells the dataset which worker it
            runs in, so that it can shard itself) and makes whole batches from it; the batches
            come from the workers in turn, and the iteration ends when a worker's iterator
            does. Without it (or without workers) the main process reads the one stream.

    Returns:
        An iterable of batches.

    Examples:
        >>> import numpy as np
        >>> from megengine.data import DataLoader, SequentialSampler
        >>> from megengine.data.dataset import ArrayDataset
        >>> ds = ArrayDataset(np.arange(10, dtype=np.float32).reshape(5, 2), np.arange(5))
        >>> loader = DataLoader(ds, sampler=SequentialSampler(ds, batch_size=2))
        >>> [label.tolist() for _, label in loader]
        [[0, 1], [2, 3], [4]]
    """

    def __init__(
        self,
        dataset: Dataset,
        sampler: Sampler = None,
        transform: Transform = None,
        collator: Collator = None,
        num_workers: int = 0,
        timeout: int = 0,
        preload: bool = False,
        parallel_stream: bool = False,
    ):
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise ValueError(f"num_workers should be a non-negative integer, got {num_workers!r}")
        if not isinstance(timeout, (int, float)) or isinstance(timeout, bool) or timeout < 0:
            raise ValueError(f"timeout should be a non-negative number, got {timeout!r}")
        self.dataset = dataset
        self.num_workers = num_workers
        self.timeout = timeout
        self.preload = preload
        self.parallel_stream = parallel_stream
        self.transform = PseudoTransform() if transform is None else transform
        self.collator = Collator() if collator is None else collator
        if isinstance(dataset, StreamDataset):
            self.sampler = StreamSampler(batch_size=1) if sampler is None else sampler
            if not isinstance(self.sampler, StreamSampler):
                raise TypeError("a StreamDataset needs a StreamSampler")
        else:
            self.sampler = (
                SequentialSampler(dataset, batch_size=1, drop_last=False)
                if sampler is None
                else sampler
            )
            if isinstance(self.sampler, StreamSampler):
                raise TypeError("a StreamSampler needs a StreamDataset")
        if sys.platform.startswith("linux") and self.num_workers > 0:
            self.check_memory_rationality()

    def check_memory_rationality(self):
        r"""Warns when the worker processes may outgrow this process's memory limit.

        A forked worker starts by sharing the parent's memory, but reading the dataset's Python
        objects writes their reference counts, so the pages it touches become copies: up to
        ``num_workers + 1`` times this process's resident memory in all. When that exceeds the
        limit of this process's memory cgroup (v1 or v2), a warning (MegEngine's) suggests
        keeping the dataset's metadata in NumPy arrays rather than lists or tuples. The
        constructor calls it on Linux with ``num_workers > 0``; it does nothing where the
        resident size or the limit cannot be read.

        Returns:
            The estimated total in GiB, or None where it could not be estimated.

        Examples:
            >>> import numpy as np
            >>> from megengine.data import DataLoader
            >>> from megengine.data.dataset import ArrayDataset
            >>> loader = DataLoader(ArrayDataset(np.zeros((4, 2), np.float32)))
            >>> loader.check_memory_rationality() is None or True
            True
        """
        rss, limit = _resident_bytes(), _cgroup_memory_limit_bytes()
        if rss is None:
            return None
        total_gib = (self.num_workers + 1) * rss / 2**30
        if limit is not None and limit / 2**30 < total_gib:
            get_logger(__name__).warning(
                "Each of the %d workers reads the dataset's shared metadata, which writes its "
                "reference counts, so copy-on-write copies the pages it touches: memory use may "
                "grow to %.2f GiB, above this process's limit of %.2f GiB. Request more memory, "
                "or keep the metadata in NumPy arrays rather than lists or tuples.",
                self.num_workers,
                total_gib,
                limit / 2**30,
            )
        return total_gib

    @staticmethod
    def _mp_context():
        methods = multiprocessing.get_all_start_methods()
        return multiprocessing.get_context("fork" if "fork" in methods else "spawn")

    def __iter__(self):
        if isinstance(self.dataset, StreamDataset):
            if self.parallel_stream and self.num_workers > 0:
                tasks = _own_stream_tasks(self.sampler)
            else:
                tasks = _stream_tasks(self.dataset, self.sampler, self.timeout)
        else:
            tasks = _map_tasks(self.sampler)
        if self.num_workers == 0:
            it = _SerialIter(self, tasks)
        else:
            it = _ParallelIter(self, tasks)
        return _PreloadIter(it) if self.preload else it

    def __len__(self):
        if isinstance(self.dataset, StreamDataset):
            raise TypeError("a DataLoader over a StreamDataset has no length")
        return len(self.sampler)
