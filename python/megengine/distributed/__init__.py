"""``megengine.distributed``: data-parallel training across processes.

MegEngine 1.13's API on Gloo (CPU tensors, TCP): ``launcher`` starts one process per rank,
``init_process_group`` joins one (or reads ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/
``RANK``/``LOCAL_RANK``), the collectives are in :mod:`.functional`, and
``make_allreduce_cb`` averages gradients. See docs/architecture.md, "Distributed".
"""

from . import functional, group, helper
from .group import (
    WORLD,
    CommError,
    Group,
    StoreTimeout,
    get_backend,
    get_client,
    get_mm_server_addr,
    get_py_server_addr,
    get_rank,
    get_world_size,
    group_barrier,
    init_process_group,
    is_distributed,
    new_group,
    override_backend,
)
from .helper import bcast_list_, make_allreduce_cb, synchronized
from .launcher import launcher
from .server import Client, Server

__all__ = [
    "WORLD",
    "Client",
    "CommError",
    "Group",
    "Server",
    "StoreTimeout",
    "bcast_list_",
    "functional",
    "get_backend",
    "get_client",
    "get_mm_server_addr",
    "get_py_server_addr",
    "get_rank",
    "get_world_size",
    "group",
    "group_barrier",
    "helper",
    "init_process_group",
    "is_distributed",
    "launcher",
    "make_allreduce_cb",
    "new_group",
    "override_backend",
    "synchronized",
]


def __getattr__(name):
    # MegEngine's module property ``dist.backend`` (reading it; set it with override_backend).
    if name == "backend":
        group._require_init()
        return group._sd.backend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
