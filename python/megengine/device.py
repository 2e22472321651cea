"""Devices: which ones exist, the default one for new tensors, and their memory.

Device names are MegEngine's: ``"cpu0"``, ``"cpux"`` (any CPU), ``"xpux"`` (the default: a GPU
when one is usable, else the CPU), ``"gpu0"``, with an optional ``":<stream>"``.
"""

import os

from .core import _imperative_rt as _rt
from .core.comp_node import CompNode

__all__ = [
    "get_default_device",
    "get_device_count",
    "get_mem_status_bytes",
    "is_cuda_available",
    "set_default_device",
]


def is_cuda_available():
    """Whether a CUDA device is usable in this process.

    Returns:
        a bool (False in a build without the CUDA backend).

    Examples:
        >>> import megengine as mge
        >>> isinstance(mge.is_cuda_available(), bool)
        True
    """
    return _rt.is_cuda_available()


def get_device_count(device_type):
    """Number of devices of a type.

    Args:
        device_type: ``"cpu"`` or ``"gpu"``.

    Returns:
        an int: the CPU cores for ``"cpu"``, the usable CUDA devices for ``"gpu"``.

    Examples:
        >>> import megengine as mge
        >>> mge.get_device_count("cpu") >= 1
        True
    """
    if device_type == "cpu":
        return os.cpu_count() or 1
    if device_type in ("gpu", "cuda"):
        return _rt.get_cuda_device_count()
    raise ValueError(f"get_device_count: unknown device type {device_type!r} (cpu or gpu)")


def get_default_device():
    """The device of tensors created without one.

    Returns:
        the canonical device name, e.g. ``"cpu0"``.

    Examples:
        >>> import megengine as mge
        >>> mge.get_default_device().startswith(("cpu", "gpu"))
        True
    """
    return _rt.get_default_device()


def set_default_device(device="xpux"):
    """Sets the device of tensors created without one.

    Args:
        device: a device name; ``"xpux"`` restores the automatic choice.

    Returns:
        None. A name that is not a device raises ValueError and changes nothing.

    Examples:
        >>> import megengine as mge
        >>> mge.set_default_device("cpu1")
        >>> str(mge.Tensor([1.0]).device)
        'cpu1:0'
        >>> mge.set_default_device("xpux")
    """
    _rt.set_default_device(str(device))


def get_mem_status_bytes(device=None):
    """Total and free memory of a device, in bytes.

    Args:
        device: a device name; the default device when None.

    Returns:
        a tuple ``(total, free)``; for a CPU, the machine's physical memory and what the kernel
        reports as available.

    Examples:
        >>> import megengine as mge
        >>> total, free = mge.get_mem_status_bytes("cpu0")
        >>> 0 < free <= total
        True
    """
    return CompNode(device or get_default_device()).get_mem_status_bytes
