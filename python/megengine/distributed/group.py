"""The process group: this process's rank, the job's size, the rendezvous client, and the
Gloo communicators of the groups this rank belongs to (created on a group's first collective).
"""

import atexit
import os
import socket
import time
from contextlib import contextmanager

from ..core import _imperative_rt as _rt
from ..device import _sh, get_device_count, is_cuda_available, set_default_device
from ..random import seed
from .server import Client, Server, default_timeout

__all__ = [
    "WORLD",
    "CommError",
    "Group",
    "StoreTimeout",
    "get_backend",
    "get_client",
    "get_mm_server_addr",
    "get_py_server_addr",
    "get_rank",
    "get_world_size",
    "group_barrier",
    "init_process_group",
    "is_distributed",
    "new_group",
    "override_backend",
]


# A collective failed (a peer died, disconnected or timed out): a RuntimeError. Named here so
# that it pickles (launcher sends a rank's exception to the parent).
CommError = _rt.distributed.CommError
CommError.__module__ = __name__
CommError.__doc__ = """A collective failed: a peer died, closed its connection or did not answer in time.

    The group's communicator is unusable afterwards; the job should stop.

    Args:
        message: what failed, on which rank, and Gloo's reason.

    Examples:
        >>> import megengine.distributed as dist
        >>> issubclass(dist.CommError, RuntimeError)
        True
    """
# The rendezvous timed out waiting for a peer: a TimeoutError.
StoreTimeout = _rt.distributed.StoreTimeout
StoreTimeout.__module__ = __name__
StoreTimeout.__doc__ = """The rendezvous timed out waiting for a peer that never arrived.

    Args:
        message: the keys that were still missing.

    Examples:
        >>> import megengine.distributed as dist
        >>> issubclass(dist.StoreTimeout, TimeoutError)
        True
    """


class StaticData:
    """What init_process_group sets up, shared by the whole package."""

    server = None
    client = None
    master_ip = None
    py_server_port = None
    mm_server_port = None
    world_size = None
    proc_rank = None
    device = None
    backend = None
    device_type = None
    machine_ranks = None
    timeout = None
    hostname = None


_sd = None
_communicators = {}  # group key -> Communicator, created on the group's first collective


def _require_init():
    if _sd is None:
        raise RuntimeError("megengine.distributed: call init_process_group first")


class Group:
    r"""Include ranked nodes running collective communication (See :mod:`~.functional.distributed`).

    By default collectives operate on the default group (also called ``WORLD``)
    and require all processes to enter the distributed function call.

    Args:
        proc_ranks: rank list of the group, the first one is root rank.

    Examples:
        >>> from megengine.distributed import Group
        >>> Group([]).proc_ranks is None  # an empty group, as WORLD before init
        True
    """

    def __init__(self, proc_ranks):
        if len(proc_ranks) == 0:  # empty group
            self.proc_ranks = None
            self.stream = None
        else:
            self.reset(proc_ranks)

    def reset(self, proc_ranks):
        """Sets the group's ranks (``WORLD`` is reset by init_process_group).

        Args:
            proc_ranks: the ranks; the first is the root.
        """
        self.check(proc_ranks)
        self.proc_ranks = list(proc_ranks)
        self.is_single_machine_cache = None
        # MegEngine's stream number, which only comp_node shows: NeoMeg's collectives run on
        # their tensors' devices, whatever the group's stream.
        self.stream = _sh.get_next()

    def check(self, proc_ranks):
        """Raises ValueError unless ``proc_ranks`` are distinct ranks of the job including this one.

        Args:
            proc_ranks: the ranks.
        """
        _require_init()
        for rank in proc_ranks:
            if not isinstance(rank, int) or not 0 <= rank < _sd.world_size:
                raise ValueError(f"Group: {rank!r} is not a rank of a job of {_sd.world_size}")
        if len(set(proc_ranks)) != len(proc_ranks):
            raise ValueError(f"Group: ranks {list(proc_ranks)} repeat")
        if _sd.proc_rank not in proc_ranks:
            raise ValueError(f"Group: rank {_sd.proc_rank} is not in {list(proc_ranks)}")

    def _valid(self):
        if not self.proc_ranks:
            raise RuntimeError("invalid group (call init_process_group first)")

    @property
    def size(self):
        """Number of ranks in the group."""
        self._valid()
        return len(self.proc_ranks)

    @property
    def key(self):
        """The ranks joined by commas: the name the group's members meet under."""
        self._valid()
        return ",".join(map(str, self.proc_ranks))

    @property
    def rank(self):
        """This process's index in the group (0 = the root)."""
        self._valid()
        return self.proc_ranks.index(_sd.proc_rank)

    @property
    def comp_node(self):
        """MegEngine's name of the group's comp node, ``"<device_type><device>:<stream>"``:
        ``"xpu0:1"`` for ``WORLD`` on device 0 (the first group of the process takes stream 1, each
        ``new_group`` the next). MegEngine runs the group's collectives on that stream; NeoMeg's
        run on their tensors' devices, and a collective given it as ``device`` accepts it."""
        self._valid()
        return f"{_sd.device_type}{_sd.device}:{self.stream}"

    @property
    def is_single_machine(self):
        """Whether every rank of the group runs on this machine."""
        if self.is_single_machine_cache is None:
            _require_init()
            ranks = _sd.machine_ranks
            self.is_single_machine_cache = ranks is not None and all(
                r in ranks for r in self.proc_ranks
            )
        return self.is_single_machine_cache


WORLD = Group([])

_devices = {"xpu", "cpu", "gpu", "cuda"}
_backends = {"nccl", "rccl", "gloo", "auto"}


def _device_name(device_type, device):
    if device_type in ("gpu", "cuda") or (device_type == "xpu" and is_cuda_available()):
        return f"gpu{device}"
    return f"cpu{device}"


def _local_address(master_ip, port):
    # The address the master sees this host under: the peers connect to it.
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((master_ip, port))
            return s.getsockname()[0]
        except OSError:
            return "127.0.0.1"


def _check_gpu(device, device_type):
    # NCCL collectives need a GPU: without one, say so before any rendezvous.
    count = get_device_count("gpu")
    if count == 0:
        raise RuntimeError(
            f"init_process_group: device_type={device_type!r} asks for GPU {device}, but no GPU "
            "is present (CUDA sees no device, or this build has no CUDA backend); use "
            "device_type='cpu' to run the collectives on CPUs with Gloo"
        )
    if device >= count:
        raise ValueError(
            f"init_process_group: there is no GPU {device}: this process sees {count} GPU(s)"
        )


def _env_int(name, value):
    if value is not None:
        return value
    text = os.environ.get(name)
    if text is None:
        return None
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"init_process_group: ${name} must be an int, got {text!r}")


def init_process_group(
    master_ip: str | None = None,
    port: int | None = None,
    world_size: int | None = None,
    rank: int | None = None,
    device: int | None = None,
    backend: str | None = "auto",
    device_type: str = "xpu",
    *,
    timeout: float | None = None,
) -> None:
    r"""Initialize the distributed process group and specify the device used in the current process

    Arguments left None come from the environment that external launchers (torchrun, Slurm
    scripts) set: ``MASTER_ADDR``, ``MASTER_PORT``, ``WORLD_SIZE``, ``RANK`` and ``LOCAL_RANK``
    (the device). Where ``LOCAL_RANK`` gives the device, ``LOCAL_WORLD_SIZE`` (torchrun's) says
    how many ranks share this machine, consecutive ranks from ``RANK - LOCAL_RANK``: they are
    the machine's ranks (``Group.is_single_machine``) and share its cores, as those of one
    ``launcher``. Rank 0 hosts the rendezvous :class:`Server` unless one already listens on
    ``port`` (one started by ``launcher`` or by the user). Returns once every rank has joined.

    Args:
        master_ip: ip address of the master node.
        port: port available for all processes to communicate.
        world_size: total number of processes participating in the job.
        rank: rank of the current process.
        device: the device id to bind this process to.
        backend: communicator backend, what :func:`get_backend` returns: ``"auto"``,
            ``"nccl"``, ``"gloo"`` or ``"rccl"`` (not supported). Whatever it says, collectives
            on CPU tensors run on Gloo and those on GPU tensors on NCCL.
        device_type: ``"xpu"`` (a GPU when usable, else the CPU), ``"cpu"`` or ``"gpu"``.
        timeout: seconds to wait for peers before raising TimeoutError (also the timeout of
            every collective); ``NEOMEG_DIST_TIMEOUT`` or 300 when None.

    Returns:
        None. Raises TimeoutError when a peer does not join within ``timeout``.

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.is_distributed()  # nothing initialised in a single process
        False
    """
    master_ip = master_ip if master_ip is not None else os.environ.get("MASTER_ADDR")
    port = _env_int("MASTER_PORT", port)
    world_size = _env_int("WORLD_SIZE", world_size)
    rank = _env_int("RANK", rank)
    # A torchrun-style launch: the device is the rank's index on its node, and the node's ranks
    # (LOCAL_WORLD_SIZE of them, numbered consecutively) are what launcher's machine_ranks are.
    local_world_size = _env_int("LOCAL_WORLD_SIZE", None) if device is None else None
    device = _env_int("LOCAL_RANK", device)
    if device is None:
        device = 0
    for name, value, kind in (
        ("master_ip", master_ip, str),
        ("port", port, int),
        ("world_size", world_size, int),
        ("rank", rank, int),
        ("device", device, int),
    ):
        if value is None:
            raise ValueError(f"init_process_group: {name} is not given (nor in the environment)")
        if not isinstance(value, kind) or isinstance(value, bool):
            raise TypeError(f"Expect type {kind.__name__} but got {type(value).__name__}")
    if backend not in _backends:
        raise ValueError(f"backend should be one of {sorted(_backends)} but got {backend}")
    if device_type not in _devices:
        raise ValueError(f"{device_type} is not a valid distributed device type")
    if world_size < 1:
        raise ValueError(f"init_process_group: world_size must be >= 1, got {world_size}")
    if not 0 <= rank < world_size:
        raise ValueError(f"init_process_group: rank {rank} is not in [0, {world_size})")
    if not 0 < port < 65536:
        raise ValueError(f"init_process_group: port must be in (0, 65536), got {port}")
    machine_ranks = None
    if local_world_size is not None:
        first = rank - device
        if not 0 <= device < local_world_size or not 0 <= first <= world_size - local_world_size:
            raise ValueError(
                f"init_process_group: $LOCAL_WORLD_SIZE {local_world_size} ranks from rank "
                f"{first} (RANK {rank} - LOCAL_RANK {device}) are not ranks of {world_size}"
            )
        machine_ranks = list(range(first, first + local_world_size))
    timeout = default_timeout() if timeout is None else float(timeout)
    if timeout <= 0:
        raise ValueError(f"init_process_group: timeout must be positive, got {timeout}")

    global _sd
    if _sd is not None:
        raise RuntimeError("init_process_group should be called only once")
    device_name = _device_name(device_type, device)
    if backend == "rccl":
        raise NotImplementedError(
            "init_process_group: rccl needs ROCm, which NeoMeg does not support"
        )
    on_gpu = device_name.startswith("gpu")
    if on_gpu:
        _check_gpu(device, device_type)

    if machine_ranks is not None:
        from .launcher import _share_cores  # not at import: launcher imports this module

        _share_cores(len(machine_ranks))  # as launcher does for the ranks it starts

    # One deadline for the whole of it: reaching the Server, joining rank 0's job, meeting the
    # others. A rank that raised, died or was never started is named within the timeout.
    deadline = time.monotonic() + timeout
    sd = StaticData()
    if rank == 0:
        try:
            sd.server = Server(port)
        except OSError:
            sd.server = None  # a Server (launcher's, or the user's) already listens on port
    try:
        sd.client = Client(master_ip, port, timeout=timeout)
    except ConnectionError as exc:
        # Without launcher, rank 0 hosts the Server: it is the rank that is missing.
        raise ConnectionError(
            f"init_process_group: rank {rank} of {world_size}: {exc} (rank 0 hosts the Server "
            "unless launcher or the user started one: did rank 0 start, or did it exit?)"
        ) from None
    sd.master_ip = master_ip
    sd.py_server_port = sd.mm_server_port = port
    sd.world_size = world_size
    sd.proc_rank = rank
    sd.device = device
    # As given, as MegEngine ("auto" by default, launcher's "nccl"): what get_backend() and
    # dist.backend say. The collectives choose by their tensors' device (Gloo for CPU tensors,
    # NCCL for GPU ones), whatever it says.
    sd.backend = backend
    sd.device_type = device_type
    sd.timeout = timeout
    sd.machine_ranks = machine_ranks
    sd.hostname = _local_address(master_ip, port)
    _sd = sd
    _communicators.clear()
    try:
        sd.client._join_session(
            rank, world_size, _time_left(deadline), hosts_server=sd.server is not None
        )
        WORLD.reset(list(range(world_size)))
        sd.client._host_reported = _rank_the_server_host_lost
        sd.client._tell_peers_lost = _tell_peers_lost
        set_default_device(device_name)
        seed(int(time.time()) + rank)
        # Every rank has joined when this returns; the missing ones are named here.
        missing = sd.client._meet("__init__", rank, world_size, _time_left(deadline))
        if missing:
            ranks = ", ".join(map(str, missing))
            raise TimeoutError(
                f"init_process_group: rank {rank} of {world_size} waited {timeout:g} s (the "
                f"timeout) for rank{'s' if len(missing) > 1 else ''} {ranks}, which never "
                "joined (raised or died before init_process_group, or was never started)"
            )
    except BaseException:
        _sd = None
        raise


# Gloo's words for a connection that ended under a collective: the peer's process is gone or
# going, and the store hears of it about as soon (its connection to the store closes too).
_LOST_CONNECTION = ("closed", "reset", "Broken pipe", "Read error", "Write error")
# How long a lost connection's error waits for the store to hear of the departure.
_DEPARTURE_WAIT = 1.0


def _explain_comm_error(message):
    """``message`` of a CommError, with the job's first rank to leave named as the store saw
    it: a rank killed mid-collective fails its direct peers, and they in turn the others, whose
    own errors name only the peer they lost. Called by the extension's translation of CommError;
    returns ``message`` unchanged when the store cannot tell (or is gone with its process)."""
    sd = _sd
    if sd is None or sd.client is None:
        return message
    lost = any(word in message for word in _LOST_CONNECTION)
    try:
        departed = sd.client._departed(min(_DEPARTURE_WAIT, sd.timeout) if lost else 0.0)
    except (ConnectionError, TimeoutError, RuntimeError):
        return message
    others = [(r, bye) for r, bye in departed if r != sd.proc_rank]
    if not others:
        return message
    rank, said_goodbye = others[0]
    how = (
        "it closed its connection after finishing, raising or exiting"
        if said_goodbye
        else "its connection dropped without a goodbye: the process was killed or crashed"
    )
    return (
        f"{message} [rank {rank} of the job's {sd.world_size} was the first to leave, as the "
        f"rendezvous store saw it: {how}]"
    )


def _rank_the_server_host_lost():
    """The job rank that the Server's host (job rank 0, WORLD's rank 0) said it lost, in the
    report a rank whose collective failed sends its WORLD peers before closing its connections;
    None when it sent none or WORLD never communicated. A rank that waits on the store when the
    host goes names that rank, not the host: the host left because of it."""
    comm = _communicators.get(WORLD.key)
    if comm is None:
        return None
    rank = comm.reported_by(0, _DEPARTURE_WAIT)
    return rank if rank >= 0 else None


def _tell_peers_lost(rank):
    """Tells the WORLD peers still connected that this rank lost job rank ``rank`` (a store wait
    for a key it was to set ended with its departure): this rank's error ends it and closes its
    connections next, and a peer that sees them close would otherwise name this rank."""
    comm = _communicators.get(WORLD.key)
    if comm is not None and rank != comm.rank:
        comm.tell_peers_lost(rank)


def _time_left(deadline):
    # At least a moment: a wait past the deadline still looks once more.
    return max(deadline - time.monotonic(), 0.001)


@atexit.register
def _shutdown():
    # Gloo's connections, the client and the server go while the interpreter still runs their
    # threads and callbacks (at finalization they would wait for threads that no longer run).
    global _sd
    _communicators.clear()
    if _sd is not None:
        _sd.client.close()
        if _sd.server is not None:
            _sd.server.close()
        _sd = None


def _set_machine_ranks(ranks) -> None:
    _require_init()
    _sd.machine_ranks = ranks


def _communicator(group):
    """The Gloo communicator of ``group``, made on first use by all its members together."""
    _require_init()
    group = WORLD if group is None else group
    if not isinstance(group, Group):
        raise TypeError(f"expected a Group, got {type(group).__name__}")
    key = group.key
    comm = _communicators.get(key)
    if comm is None:
        try:
            comm = _rt.distributed.Communicator(
                _sd.client, f"__gloo/{key}/", group.rank, group.size, _sd.timeout, _sd.hostname
            )
        except (StoreTimeout, CommError) as exc:
            if group.proc_ranks == list(range(_sd.world_size)):
                raise
            # The rendezvous names ranks of the group: say which processes those are.
            raise type(exc)(
                f"{exc} [the group's ranks 0..{group.size - 1} are processes {group.proc_ranks}]"
            ) from None
        _communicators[key] = comm
    return comm


@contextmanager
def override_backend(new_backend: str):
    r"""Override distributed backend

    Args:
        new_backend: communicator backend set in this context.

    Returns:
        a context manager.

    Examples:
        >>> import megengine.distributed as dist
        >>> callable(dist.override_backend)
        True
    """
    _require_init()
    old_backend = _sd.backend
    _sd.backend = new_backend
    try:
        yield
    finally:
        _sd.backend = old_backend


def is_distributed() -> bool:
    r"""Return True if the distributed process group has been initialized.

    Returns:
        a bool.

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.is_distributed()
        False
    """
    return _sd is not None


def get_rank() -> int:
    r"""Get the rank of the current process (0 when not distributed).

    Returns:
        an int.

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.get_rank()
        0
    """
    return _sd.proc_rank if _sd is not None else 0


def get_world_size() -> int:
    r"""Get the total number of processes participating in the job (1 when not distributed).

    Returns:
        an int.

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.get_world_size()
        1
    """
    return _sd.world_size if _sd is not None else 1


def get_backend() -> str:
    r"""Get the backend str: ``init_process_group``'s ``backend`` (``"auto"`` by default,
    ``"nccl"`` under :class:`launcher`, as MegEngine), or what ``dist.backend`` or
    :func:`override_backend` set since. Collectives do not read it: CPU tensors go through Gloo
    and GPU tensors through NCCL.

    Returns:
        the backend's name.

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.get_backend() if dist.is_distributed() else None
    """
    _require_init()
    return _sd.backend


def get_py_server_addr() -> tuple[str, int]:
    r"""Get master_ip and port of the rendezvous server.

    Returns:
        ``(master_ip, port)``.

    Examples:
        >>> import megengine.distributed as dist
        >>> callable(dist.get_py_server_addr)
        True
    """
    _require_init()
    return _sd.master_ip, _sd.py_server_port


def get_mm_server_addr() -> tuple[str, int]:
    r"""Get master_ip and port of the rendezvous server (MegEngine's second server's name).

    Returns:
        ``(master_ip, port)``.

    Examples:
        >>> import megengine.distributed as dist
        >>> callable(dist.get_mm_server_addr)
        True
    """
    _require_init()
    return _sd.master_ip, _sd.mm_server_port


def get_client() -> Client:
    r"""Get client of the rendezvous server.

    Returns:
        this process's Client.

    Examples:
        >>> import megengine.distributed as dist
        >>> callable(dist.get_client)
        True
    """
    _require_init()
    return _sd.client


def new_group(proc_ranks: list[int]) -> Group:
    r"""Build a subgroup containing certain ranks.

    Args:
        proc_ranks: the ranks (this one included); the first is the group's root.

    Returns:
        a Group.

    Examples:
        >>> import megengine.distributed as dist
        >>> callable(dist.new_group)
        True
    """
    return Group(proc_ranks)


def group_barrier(group: Group = WORLD) -> None:
    r"""Block until all ranks in the group reach this barrier (a no-op when not distributed).

    Args:
        group: the group.

    Returns:
        None.

    Examples:
        >>> import megengine.distributed as dist
        >>> dist.group_barrier()  # a single process passes at once
    """
    if _sd is None:
        return
    if not isinstance(group, Group):
        raise TypeError(f"group_barrier: expected a Group, got {type(group).__name__}")
    # A member that leaves before the barrier is passed fails the others at once.
    others = [r for r in group.proc_ranks if r != _sd.proc_rank]
    _sd.client.group_barrier(group.key, group.size, peers=others)
