"""How batches and tasks cross between the DataLoader's main process and its workers.

Tasks and results travel as length-prefixed frames on pipes (``_TaskSender``, ``_FrameReader``);
large batch arrays travel through memfd shared memory whose fds cross a Unix socket
(``_ShmSender`` in a worker, ``_ShmReceiver`` in the main process), so the main process maps a
batch instead of unpickling a copy. ``dataloader.py`` drives them.
"""

import collections
import contextlib
import mmap
import os
import pickle
import select
import socket
import struct
import threading
import weakref

import numpy as np

# How often (seconds) a waiting main process checks its workers, and a waiting worker its parent.
_POLL_INTERVAL = 0.1
_WORKER_POLL_INTERVAL = 1.0
# Batches each worker may have in flight.
_PREFETCH_PER_WORKER = 2
# Array buffers of at least this many bytes cross from a worker through shared memory; smaller
# ones travel inside the pickled message.
_SHM_MIN_BYTES = 4096
# Shared-memory slots per worker: the batches in flight, the one the caller holds and a few
# whose release the worker has not heard of yet. When all are taken (the caller keeps many
# batches), batches travel through the pipe instead.
_SHM_SLOTS_PER_WORKER = _PREFETCH_PER_WORKER + 4
_SHM_ALIGN = 64


# Frames on the task and result pipes: the length of the data, then the data.
_FRAME_HEADER = struct.Struct("!Q")


class _TaskSender:
    # Main-process end of a worker's task pipe. The main thread writes each task directly
    # without blocking (a worker has at most _PREFETCH_PER_WORKER tasks pending, which normally
    # fit in the pipe); a task that does not fit right now is written, with those after it, by
    # a helper thread, so the main process never waits on a worker that waits on it. (A
    # multiprocessing.Queue hands every task to a feeder thread, which costs the main process
    # a thread switch per batch.)
    def __init__(self, conn):
        self._conn = conn
        self._fd = conn.fileno()
        os.set_blocking(self._fd, False)
        self._cond = threading.Condition(threading.Lock())
        self._backlog = collections.deque()
        self._thread = None
        self._closed = False

    def put(self, task):
        data = pickle.dumps(task, protocol=pickle.HIGHEST_PROTOCOL)
        data = memoryview(_FRAME_HEADER.pack(len(data)) + data)
        with self._cond:
            if self._closed:
                raise ValueError("the task pipe is closed")
            if not self._backlog:
                try:
                    written = os.write(self._fd, data)
                except BlockingIOError:
                    written = 0
                except OSError:
                    # The worker is gone; the main process finds out from its result pipe.
                    return
                if written == len(data):
                    return
                data = data[written:]
            self._backlog.append(data)
            if self._thread is None:
                self._thread = threading.Thread(target=self._write_backlog, daemon=True)
                self._thread.start()
            self._cond.notify()

    def _write_backlog(self):
        poller = select.poll()
        poller.register(self._fd, select.POLLOUT)
        while True:
            with self._cond:
                while not self._backlog and not self._closed:
                    self._cond.wait()
                if self._closed:
                    return
                data = self._backlog[0]
            if not poller.poll(_POLL_INTERVAL * 1000):
                continue
            try:
                written = os.write(self._fd, data)
            except BlockingIOError:
                continue
            except OSError:
                # The worker is gone; the main process finds out from its result pipe.
                with self._cond:
                    self._backlog.clear()
                continue
            with self._cond:
                if written == len(data):
                    self._backlog.popleft()
                else:
                    self._backlog[0] = data[written:]

    def close(self):
        with self._cond:
            if self._closed:
                return
            if not self._backlog:
                # Tell the worker to stop, if that fits in the pipe now (a write of at most
                # PIPE_BUF bytes is all or nothing); a busy worker finds its result pipe closed.
                data = pickle.dumps(None)
                with contextlib.suppress(OSError):
                    os.write(self._fd, _FRAME_HEADER.pack(len(data)) + data)
            self._closed = True
            self._cond.notify()
        if self._thread is not None:
            self._thread.join()
        self._conn.close()


def _write_frame(fd, data):
    # Writes one frame to a blocking pipe.
    header = _FRAME_HEADER.pack(len(data))
    parts = [memoryview(header + data)] if len(data) <= 1 << 16 else [header, memoryview(data)]
    for part in parts:
        while part:
            part = part[os.write(fd, part) :]


class _FrameReader:
    # Reads the frames of a pipe with as few system calls as it can: the fd is non-blocking and
    # each read takes whatever is there (often a whole frame, or several).
    def __init__(self, conn):
        self._conn = conn
        self._fd = conn.fileno()
        os.set_blocking(self._fd, False)
        self._poller = select.poll()
        self._poller.register(self._fd, select.POLLIN)
        self._buf = bytearray()
        self._big = None  # [data, bytes read] of a large frame being read

    def read(self, timeout):
        r"""Returns the data of the next frame, or None when it has not come within ``timeout``
        seconds; raises EOFError when the writer closed the pipe."""
        while True:
            data = self._frame()
            if data is not None:
                return data
            try:
                if self._big is not None:
                    data, done = self._big
                    with memoryview(data) as view:
                        got = os.readv(self._fd, [view[done:]])
                    if got:
                        self._big[1] += got
                        continue
                else:
                    chunk = os.read(self._fd, 1 << 16)
                    if chunk:
                        self._buf += chunk
                        continue
                raise EOFError
            except BlockingIOError:
                if not self._poller.poll(timeout * 1000):
                    return None

    def _frame(self):
        # The next complete frame's data from what was read, or None.
        if self._big is not None:
            data, done = self._big
            if done < len(data):
                return None
            self._big = None
            return data
        buf = self._buf
        if len(buf) < _FRAME_HEADER.size:
            return None
        (n,) = _FRAME_HEADER.unpack_from(buf)
        end = _FRAME_HEADER.size + n
        if len(buf) >= end:
            data = bytes(buf[_FRAME_HEADER.size : end])
            del buf[:end]
            return data
        if n > 1 << 16:
            # Read the rest straight into place.
            data = bytearray(n)
            have = len(buf) - _FRAME_HEADER.size
            data[:have] = buf[_FRAME_HEADER.size :]
            buf.clear()
            self._big = [data, have]
        return None

    def close(self):
        self._conn.close()


class _ShmMessage(tuple):
    # A batch whose array data lie in a shared-memory slot of the sending worker:
    # (batch_id, slot, size of a new slot whose fd precedes this message or 0, layout, body).
    # body None: the batch is a tuple (a list when layout[0] is True) of the arrays described by
    # layout[1], as (offset, dtype string, shape). Otherwise body is the pickled (batch_id, batch)
    # whose out-of-band buffers lie at the (offset, nbytes) of layout.
    __slots__ = ()


def _shm_supported(ctx):
    # memfd mappings have no name (nothing under /dev/shm) and vanish with their last user; the
    # worker hands their fds over a Unix socket. Linux with fork only; elsewhere batches are
    # pickled through the pipe.
    return (
        ctx.get_start_method() == "fork"
        and hasattr(os, "memfd_create")
        and hasattr(socket, "send_fds")
        and hasattr(socket, "AF_UNIX")
    )


def _plain_arrays(batch):
    # True when batch is what the default Collator makes of samples of arrays and numbers: a
    # plain tuple or list of C-contiguous, writable NumPy arrays of a numeric dtype. Those
    # cross with a header of dtypes and shapes instead of a pickle.
    if type(batch) is not tuple and type(batch) is not list:
        return False
    for a in batch:
        if (
            type(a) is not np.ndarray
            or a.dtype.kind not in "biufc"
            or not a.flags.c_contiguous
            or not a.flags.writeable
        ):
            return False
    return True


class _ShmSender:
    # Worker side: copies the arrays of a batch into one of a few shared-memory slots, reused
    # once the main process reports that the batch using it is gone.
    def __init__(self, sock):
        self._sock = sock
        self._slots = []  # [mmap, in use]

    def release(self, slots):
        for slot in slots:
            self._slots[slot][1] = False

    def _acquire(self, nbytes):
        # Returns (slot, size of the slot if it is new else 0), or (None, 0) when no slot can
        # be had.
        best = None
        for i, (mm, used) in enumerate(self._slots):
            fits = not used and len(mm) >= nbytes
            if fits and (best is None or len(mm) < len(self._slots[best][0])):
                best = i
        if best is not None:
            self._slots[best][1] = True
            return best, 0
        if len(self._slots) < _SHM_SLOTS_PER_WORKER:
            best = len(self._slots)
        else:
            # Replace a free slot that is too small.
            best = next((i for i, (_, used) in enumerate(self._slots) if not used), None)
            if best is None:
                return None, 0
        size = -(-max(nbytes, 1) // mmap.PAGESIZE) * mmap.PAGESIZE
        try:
            fd = os.memfd_create("megengine-dataloader", os.MFD_CLOEXEC)
        except OSError:
            return None, 0
        try:
            os.ftruncate(fd, size)
            mm = mmap.mmap(fd, size)
            # The fd goes first, so it is waiting when the main process reads the message.
            socket.send_fds(self._sock, [b"\0"], [fd])
        except OSError:
            return None, 0
        finally:
            os.close(fd)
        if best == len(self._slots):
            self._slots.append([mm, True])
        else:
            self._slots[best][0].close()
            self._slots[best] = [mm, True]
        return best, size

    def _store(self, buffers, message):
        # Copies the buffers (flat uint8 arrays) one after the other into a slot and returns
        # the pickled message(batch offsets, slot, new slot size), or None when no slot is free.
        offsets, total = [], 0
        for buffer in buffers:
            offsets.append(total)
            total += -(-buffer.nbytes // _SHM_ALIGN) * _SHM_ALIGN
        slot, new_size = self._acquire(total)
        if slot is None:
            return None
        with memoryview(self._slots[slot][0]) as view:
            for offset, buffer in zip(offsets, buffers):
                # A memoryview assignment is a plain memcpy.
                with memoryview(buffer) as src:
                    view[offset : offset + buffer.nbytes] = src
        return pickle.dumps(message(offsets, slot, new_size), protocol=pickle.HIGHEST_PROTOCOL)

    def pack(self, batch_id, batch):
        r"""Returns the bytes to send for a batch: a small message whose arrays lie in a slot,
        or, when no slot is free, the whole pickled batch."""
        if _plain_arrays(batch):
            if batch:
                data = self._store(
                    [a.reshape(-1).view(np.uint8) for a in batch],
                    lambda offsets, slot, new_size: _ShmMessage(
                        (
                            batch_id,
                            slot,
                            new_size,
                            (
                                type(batch) is list,
                                [(o, a.dtype.str, a.shape) for o, a in zip(offsets, batch)],
                            ),
                            None,
                        )
                    ),
                )
                if data is not None:
                    return data
        else:
            buffers = []

            def out_of_band(buffer):
                # Returns True for the buffers that stay inside the pickle.
                if buffer.raw().nbytes < _SHM_MIN_BYTES:
                    return True
                buffers.append(np.frombuffer(buffer.raw(), np.uint8))
                return False

            body = pickle.dumps((batch_id, batch), protocol=5, buffer_callback=out_of_band)
            if not buffers:
                return body
            data = self._store(
                buffers,
                lambda offsets, slot, new_size: _ShmMessage(
                    (
                        batch_id,
                        slot,
                        new_size,
                        [(o, b.nbytes) for o, b in zip(offsets, buffers)],
                        body,
                    )
                ),
            )
            if data is not None:
                return data
        return pickle.dumps((batch_id, batch), protocol=pickle.HIGHEST_PROTOCOL)


class _ShmReceiver:
    # Main-process side: maps a worker's slots and rebuilds batches whose arrays view them
    # (no copy). A slot is reported free once every array of its batch is gone.
    def __init__(self, sock):
        self._sock = sock
        self._maps = {}
        self._refs = {}
        self._freed = collections.deque()

    def unpack(self, message):
        r"""Returns (batch_id, batch) of a :class:`_ShmMessage`."""
        batch_id, slot, new_size, layout, body = message
        if new_size:
            _, fds, _, _ = socket.recv_fds(self._sock, 1, 1)
            try:
                self._maps[slot] = mmap.mmap(fds[0], new_size)
            finally:
                for fd in fds:
                    os.close(fd)
        # A fresh array over the slot for each batch: the batch's arrays keep it alive, and its
        # death frees the slot.
        base = np.frombuffer(self._maps[slot], np.uint8)
        freed = self._freed
        self._refs[slot] = weakref.ref(base, lambda _, slot=slot: freed.append(slot))
        if body is None:
            as_list, fields = layout
            arrays = [
                np.ndarray(shape, dtype, buffer=base, offset=offset)
                for offset, dtype, shape in fields
            ]
            return batch_id, arrays if as_list else tuple(arrays)
        return pickle.loads(body, buffers=[base[o : o + n] for o, n in layout])

    def take_freed(self):
        r"""Returns the slots freed since the last call."""
        slots = []
        freed = self._freed
        while freed:
            slots.append(freed.popleft())
        return slots

    def close(self):
        # Arrays still in use keep their mappings; the memory goes with the last of them.
        self._maps.clear()
        self._refs.clear()
        self._sock.close()


def _enlarge_pipe(conn):
    # A batch larger than the pipe's buffer (64 KiB by default) crosses in several rounds, each
    # waiting for the reader to be scheduled; on a busy machine that costs milliseconds per
    # round. Ask Linux for a buffer of up to 1 MiB (unprivileged limit); elsewhere keep it.
    try:
        import fcntl

        limit = 1 << 20
        try:
            with open("/proc/sys/fs/pipe-max-size") as f:
                limit = min(limit, int(f.read()))
        except OSError:
            pass
        fcntl.fcntl(conn.fileno(), fcntl.F_SETPIPE_SZ, limit)
    except (ImportError, AttributeError, OSError, ValueError):
        pass
