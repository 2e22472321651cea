"""``megengine.distributed``: data-parallel training across processes.

MegEngine 1.13's API on Gloo (CPU tensors, TCP): ``launcher`` starts one process per rank,
``init_process_group`` joins one (or reads ``MASTER_ADDR``/``MASTER_PORT``/``WORLD_SIZE``/
``RANK``/``LOCAL_RANK``), the collectives are in :mod:`.functional`, and
``make_allreduce_cb`` averages gradients; ``group_start``/``group_end`` run the batched
point-to-point transfers issued between them together. See docs/architecture.md, "Distributed".
"""

import sys
import types

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
from .group_comm import group_end, group_start
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
    "group_end",
    "group_start",
    "helper",
    "init_process_group",
    "is_distributed",
    "launcher",
    "make_allreduce_cb",
    "new_group",
    "override_backend",
    "synchronized",
]


class _DistributedModule(types.ModuleType):
    """This package as a module with MegEngine's ``backend`` property (mprop's mproperty)."""

    @property
    def backend(self):
        r"""Get or set backend of collective communication (``dist.backend = "gloo"``).

        Returns:
            the backend's name; reading or setting it needs ``init_process_group`` first.
        """
        group._require_init()
        return group._sd.backend

    @backend.setter
    def backend(self, val):
        group._require_init()
        if val not in group._backends - {"auto"}:
            raise ValueError(
                f"backend should be one of {sorted(group._backends - {'auto'})} but got {val!r}"
            )
        group._sd.backend = val


sys.modules[__name__].__class__ = _DistributedModule
