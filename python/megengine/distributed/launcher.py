"""launcher: runs a function in one process per rank, and fails fast.

The parent hosts the rendezvous Server and watches its children: the first child that raises
or dies stops all the others (SIGTERM, then SIGKILL), and the parent raises that child's
exception with its traceback. Children die with the parent (PR_SET_PDEATHSIG), so nothing is
left running. Each child runs its x86 kernels on its share of the machine's cores (all cores
divided by the ranks launched here), unless OMP_NUM_THREADS says otherwise.
"""

import ctypes
import functools
import multiprocessing as mp
import multiprocessing.connection
import os
import pickle
import signal
import traceback

from ..core import _imperative_rt as _rt
from ..device import get_device_count, is_cuda_available
from .group import _set_machine_ranks, _shutdown, group_barrier, init_process_group
from .server import Server

__all__ = ["launcher"]

_PR_SET_PDEATHSIG = 1
_GRACE_SECONDS = 2.0


class _RemoteTraceback(Exception):
    """Carries a child's formatted traceback as the cause of the exception re-raised."""

    def __init__(self, tb):
        super().__init__(tb)
        self.tb = tb

    def __str__(self):
        return self.tb


def _die_with_parent():
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass  # not Linux: the parent's terminate() in its finally still stops the children


def _share_cores(n_local):
    """Gives this rank its share of the machine's cores for the x86 kernels: ``n_local`` ranks,
    each on the default of every core, would run n times as many OpenMP threads as there are
    cores, and a parallel region waits for its slowest, descheduled, thread. ``OMP_NUM_THREADS``
    set by the user is left alone; the count only ever goes down (a fork after x86 kernels ran
    leaves one thread, which stays)."""
    if "OMP_NUM_THREADS" in os.environ:
        return
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    share = max(1, cores // n_local)
    if share < _rt.x86_threads():
        _rt.set_x86_threads(share)


def _run_wrapped(
    func,
    conn,
    master_ip,
    port,
    world_size,
    rank,
    dev,
    device_type,
    backend,
    timeout,
    machine_ranks,
    args,
    kwargs,
):
    _die_with_parent()
    try:
        _share_cores(len(machine_ranks))
        init_process_group(
            master_ip, port, world_size, rank, dev, backend, device_type, timeout=timeout
        )
        _set_machine_ranks(machine_ranks)
        ret = func(*args, **kwargs)
        if world_size > len(machine_ranks):
            # As MegEngine: with ranks on other machines, none returns before all have finished,
            # so the master's launcher (whose parent hosts the Server) does not return, and its
            # script exit, while the others still need the store.
            group_barrier()
        message = ("ok", rank, ret)
        try:
            data = pickle.dumps(message)
        except Exception as exc:
            raise TypeError(
                f"launcher: rank {rank} returned a {type(ret).__name__} that cannot be pickled"
            ) from exc
    except BaseException as exc:  # noqa: BLE001 - every failure goes to the parent
        tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        try:
            exc_data = pickle.dumps(exc)
            pickle.loads(exc_data)
        except Exception:  # noqa: BLE001 - unpicklable exceptions travel as their text
            exc_data = None
        data = pickle.dumps(("error", rank, tb, exc_data))
    conn.send_bytes(data)
    conn.close()
    # This rank's connections close with a goodbye: the store tells the peers that it left
    # rather than that it was killed.
    try:
        _shutdown()
    finally:
        # Skip atexit handlers and finalizers inherited from the parent by fork.
        os._exit(0)


def _stop(procs):
    for p in procs:
        if p.is_alive():
            p.terminate()
    for p in procs:
        p.join(_GRACE_SECONDS)
        if p.is_alive():
            p.kill()
            p.join()


class launcher:
    r"""Decorator for launching multiple processes in single-machine multi-device training.

    On a machine without CUDA it starts ``n_gpus`` CPU processes (ranks) whose collectives run
    on Gloo, whatever ``backend`` says. When a rank raises or dies, the others are stopped and
    calling the launcher raises that rank's exception, its remote traceback chained as the
    cause. A call returns the ranks' return values, in rank order. Each rank runs its CPU
    kernels on ``cores // n_gpus`` threads (at least one) unless ``OMP_NUM_THREADS`` is set,
    so that the ranks of one machine do not oversubscribe its cores.

    Args:
        args: what ``launcher(...)`` is called with: the function and the arguments below, or
            only keyword arguments, which gives a decorator (``@launcher(n_gpus=2)``).
        func: the function you want to launch in distributed mode.
        n_gpus: how many processes (devices) on this node; all CUDA devices, or all CPU
            cores, when None.
        world_size: how many processes in total (over all nodes); ``n_gpus`` when None.
        rank_start: start number for rank.
        master_ip: ip address for master node (where the rank 0 is).
        port: server port for distributed server; 0 picks a free one (on the master node).
        device_type: ``"xpu"``, ``"cpu"`` or ``"gpu"``.
        backend: set default collective communication backend.
        timeout: seconds the ranks wait for each other (see ``init_process_group``).

    Examples:
        >>> import megengine.distributed as dist
        >>> launch = dist.launcher(n_gpus=2)  # used as @dist.launcher(n_gpus=2) on a function
        >>> callable(launch)
        True
    """

    def __new__(cls, *args, **kwargs):
        if not args:
            return functools.partial(cls, **kwargs)
        return super().__new__(cls)

    def __init__(
        self,
        func,
        n_gpus=None,
        world_size=None,
        rank_start=0,
        master_ip="localhost",
        port=0,
        device_type="xpu",
        backend="nccl",
        *,
        timeout=None,
    ):
        if n_gpus is None:
            on_gpu = device_type in ("gpu", "cuda") or (
                device_type == "xpu" and is_cuda_available()
            )
            n_gpus = get_device_count("gpu" if on_gpu else "cpu")
        if not isinstance(n_gpus, int) or n_gpus < 1:
            raise ValueError(f"launcher: n_gpus must be a positive int, got {n_gpus!r}")
        self.func = func
        self.n_gpus = n_gpus
        self.world_size = world_size if world_size is not None else n_gpus
        self.rank_start = rank_start
        self.master_ip = master_ip
        self.port = port
        self.device_type = device_type
        self.backend = backend
        self.timeout = timeout
        if self.rank_start + self.n_gpus > self.world_size:
            raise ValueError(
                f"launcher: ranks {rank_start}..{rank_start + n_gpus - 1} exceed world_size "
                f"{self.world_size}"
            )
        # The master node hosts the rendezvous server.
        self.server = None
        if self.rank_start == 0:
            self.server = Server(self.port)
            self.port = self.server.py_server_port
        elif self.port == 0:
            raise ValueError("launcher: you have to assign a port for distributed server")
        functools.update_wrapper(self, func)

    def __call__(self, *args, **kwargs):
        ctx = mp.get_context("fork")
        machine_ranks = [i + self.rank_start for i in range(self.n_gpus)]
        procs, conns = [], []
        try:
            for dev in range(self.n_gpus):
                parent_end, child_end = ctx.Pipe(duplex=False)
                p = ctx.Process(
                    target=_run_wrapped,
                    args=(
                        self.func,
                        child_end,
                        self.master_ip,
                        self.port,
                        self.world_size,
                        dev + self.rank_start,
                        dev,
                        self.device_type,
                        self.backend,
                        self.timeout,
                        machine_ranks,
                        args,
                        kwargs,
                    ),
                    name=f"megengine-rank{dev + self.rank_start}",
                )
                p.start()
                child_end.close()
                procs.append(p)
                conns.append(parent_end)
            return self._collect(procs, conns)
        finally:
            _stop(procs)
            for c in conns:
                c.close()

    def _collect(self, procs, conns):
        results = [None] * self.n_gpus
        pending = {conns[i]: i for i in range(self.n_gpus)}
        # A child's report or, when it dies without one, the end of its pipe: either wakes us.
        while pending:
            for conn in mp.connection.wait(list(pending)):
                dev = pending.pop(conn)
                try:
                    message = pickle.loads(conn.recv_bytes())
                except EOFError:
                    procs[dev].join()
                    code = procs[dev].exitcode
                    how = (
                        f"was killed by signal {-code}" if code < 0 else f"exited with code {code}"
                    )
                    raise RuntimeError(
                        f"subprocess {dev + self.rank_start} {how} without returning a value"
                    ) from None
                if message[0] == "error":
                    self._raise(message)
                results[dev] = message[2]
        return results

    @staticmethod
    def _raise(message):
        _, rank, tb, exc_data = message
        remote = _RemoteTraceback(f"\n\nrank {rank} raised:\n{tb}")
        exc = pickle.loads(exc_data) if exc_data is not None else None
        if exc is None:
            raise RuntimeError(f"rank {rank} failed") from remote
        raise exc from remote
