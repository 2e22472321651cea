"""Helpers of the megengine.data tests."""

import gzip
import os
import struct
import time

import numpy as np


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


def write_idx(path, array, magic_override=None):
    """Writes ``array`` (uint8) as a gzip-compressed IDX file."""
    array = np.asarray(array, dtype=np.uint8)
    magic = magic_override if magic_override is not None else (0x0800 | array.ndim)
    header = struct.pack(">i", magic) + struct.pack(">" + "i" * array.ndim, *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.tobytes())


MEMFD_NAME = "memfd:megengine-dataloader"


def memfd_fds():
    """This process's open fds that are DataLoader shared-memory slots."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(MEMFD_NAME):
            found.append(fd)
    return found


def memfd_mappings():
    """This process's memory mappings of DataLoader shared-memory slots (lines of maps)."""
    with open("/proc/self/maps") as f:
        return [line for line in f if MEMFD_NAME in line]


def dev_shm():
    """The names under /dev/shm."""
    return set(os.listdir("/dev/shm")) if os.path.isdir("/dev/shm") else set()
