"""Devices: which ones exist, the default one for new tensors, and their memory.

Device names are MegEngine's: ``"cpu0"``, ``"cpux"`` (any CPU), ``"xpux"`` (the default: a GPU
when one is usable, else the CPU), ``"gpu0"``, with an optional ``":<stream>"``.

CUDA devices are found at run time: the same build runs with and without a GPU. Without one
(no driver, no device, or a driver older than the CUDA runtime), importing megengine prints
nothing, :func:`is_cuda_available` is False, the version queries still give what NeoMeg was built
with (a build without CUDA answers -1, as MegEngine's CPU build does), and asking for a device
raises RuntimeError saying why there is none. NeoMeg has no ROCm, Cambricon or Atlas backend.

The memory queries read each device's caching allocator: every ``"cpu<N>[:<stream>]"`` and
``"gpu<N>[:<stream>]"`` queue has an allocator of its own, so their numbers are per queue.
"""

import enum
import numbers
import os
import warnings

from .core import _imperative_rt as _rt

__all__ = [
    "coalesce_free_memory",
    "get_allocated_memory",
    "get_cuda_compute_capability",
    "get_cuda_device_property",
    "get_cuda_driver_version",
    "get_cuda_version",
    "get_cudnn_version",
    "get_default_device",
    "get_device_count",
    "get_max_allocated_memory",
    "get_max_reserved_memory",
    "get_mem_status_bytes",
    "get_reserved_memory",
    "get_tensorrt_version",
    "is_atlas_available",
    "is_cambricon_available",
    "is_cuda_available",
    "is_rocm_available",
    "reset_max_memory_stats",
    "set_default_device",
    "set_prealloc_config",
]


class DeviceType(enum.IntEnum):
    """Kinds of device, numbered as MegEngine's ``DeviceType``.

    Args:
        value: the number of a kind (``DeviceType(1)`` is ``DeviceType.CUDA``).

    Examples:
        >>> from megengine.device import DeviceType
        >>> DeviceType.CUDA.name, int(DeviceType.CPU)
        ('CUDA', 2)
    """

    UNSPEC = 0
    CUDA = 1
    CPU = 2
    CAMBRICON = 3
    ROCM = 8
    ATLAS = 9
    MULTITHREAD = 11
    MAX_DEVICE_ID = 12


class _stream_helper:
    """MegEngine's counter of stream numbers: each process group (and, in MegEngine, each
    preloading DataLoader iterator) takes the next, from 1; ``Group.comp_node`` names it."""

    def __init__(self):
        self.stream = 1

    def get_next(self):
        out = self.stream
        self.stream = self.stream + 1
        return out


_sh = _stream_helper()


def is_cuda_available():
    """Whether a CUDA device is usable in this process.

    Returns:
        a bool: False without a CUDA driver or device, or in a build without CUDA.

    Examples:
        >>> import megengine as mge
        >>> isinstance(mge.is_cuda_available(), bool)
        True
    """
    return _rt.is_cuda_available()


def get_device_count(device_type):
    """Number of devices of a type.

    Args:
        device_type: ``"cpu"``, ``"gpu"``, ``"xpu"`` or ``"rocm"``.

    Returns:
        an int: the CPU cores for ``"cpu"``, the usable CUDA devices for ``"gpu"``; for
        ``"xpu"`` (what ``"xpux"`` resolves to) the CUDA devices if there are any, else the CPU
        cores; 0 for ``"rocm"``, which NeoMeg has no backend for.

    Examples:
        >>> import megengine as mge
        >>> mge.get_device_count("cpu") >= 1
        True
        >>> mge.get_device_count("xpu") >= 1
        True
    """
    if device_type == "cpu":
        return os.cpu_count() or 1
    if device_type in ("gpu", "cuda"):
        return _rt.get_cuda_device_count()
    if device_type == "xpu":
        return _rt.get_cuda_device_count() or os.cpu_count() or 1
    if device_type == "rocm":
        return 0
    raise ValueError(
        f"get_device_count: unknown device type {device_type!r} (cpu, gpu, xpu or rocm)"
    )


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
        a tuple ``(total, free)``; for a GPU, the device's memory and what ``cudaMemGetInfo``
        reports free (memory the caching allocators keep counts as used); for a CPU, the
        machine's physical memory and what the kernel reports as available.

    Examples:
        >>> import megengine as mge
        >>> total, free = mge.get_mem_status_bytes("cpu0")
        >>> 0 < free <= total
        True
    """
    if device is None:
        device = get_default_device()
    elif not isinstance(device, str):
        raise TypeError(f"device must be a device name (str) or None, got {type(device).__name__}")
    return tuple(_rt.mem_status(_rt.canonical_device(device)))


def is_rocm_available():
    """Whether an AMD ROCm device is usable in this process.

    Returns:
        False: NeoMeg has no ROCm backend.

    Examples:
        >>> import megengine as mge
        >>> mge.is_rocm_available()
        False
    """
    return False


def is_cambricon_available():
    """Whether a Cambricon device is usable in this process.

    Returns:
        False: NeoMeg has no Cambricon backend.

    Examples:
        >>> import megengine as mge
        >>> mge.is_cambricon_available()
        False
    """
    return False


def is_atlas_available():
    """Whether a Huawei Atlas device is usable in this process.

    Returns:
        False: NeoMeg has no Atlas backend.

    Examples:
        >>> import megengine as mge
        >>> mge.is_atlas_available()
        False
    """
    return False


def _device_count_of(device_type):
    if not isinstance(device_type, DeviceType):
        raise TypeError(
            f"device_type must be a megengine.device.DeviceType, got {type(device_type).__name__}"
        )
    return _rt.get_cuda_device_count() if device_type == DeviceType.CUDA else 0


class _DeviceProperties:
    """What :func:`get_cuda_device_property` gives: ``name``, ``major``, ``minor`` (the compute
    capability), ``total_memory`` (bytes) and ``multi_processor_count``."""

    __slots__ = ("major", "minor", "multi_processor_count", "name", "total_memory")

    def __init__(self, props):
        for key in self.__slots__:
            setattr(self, key, props[key])

    def __repr__(self):
        return (
            f"_DeviceProperties(name='{self.name}', major={self.major}, minor={self.minor}, "
            f"total_memory={self.total_memory // (1024 * 1024)}MB)"
        )


def get_cuda_device_property(device, device_type=DeviceType.CUDA):
    """Properties (name, compute capability, memory) of a CUDA device.

    Args:
        device: the device number.
        device_type: the kind of device; :attr:`DeviceType.CUDA`.

    Returns:
        the device's properties (``name``, ``major``, ``minor``, ``total_memory`` in bytes,
        ``multi_processor_count``). Without such a device it raises RuntimeError, as MegEngine
        does on a machine without one.

    Examples:
        >>> import megengine as mge
        >>> try:
        ...     prop = mge.get_cuda_device_property(0)
        ...     answer = prop.total_memory > 0
        ... except RuntimeError:
        ...     answer = not mge.is_cuda_available()  # no device 0 on this machine
        >>> answer
        True
    """
    if not isinstance(device, numbers.Integral) or isinstance(device, bool):
        raise TypeError(f"device must be an int, got {type(device).__name__}")
    count = _device_count_of(device_type)
    if not 0 <= device < count:
        why = "" if count else f": {_rt.cuda_unavailable_reason()}"
        raise RuntimeError(
            f"request {device_type.name.lower()} device {device} out of valid range "
            f"[0, {count}){why}"
        )
    return _DeviceProperties(_rt.get_device_prop(device))


def get_cuda_compute_capability(device, device_type=DeviceType.CUDA):
    """Compute capability (SM version) of a CUDA device.

    Args:
        device: the device number.
        device_type: the kind of device; :attr:`DeviceType.CUDA`.

    Returns:
        ``major * 10 + minor`` (e.g. 80 for an A100). Without such a device it raises
        RuntimeError, as MegEngine does on a machine without one.

    Examples:
        >>> import megengine as mge
        >>> try:
        ...     answer = mge.get_cuda_compute_capability(0) >= 70
        ... except RuntimeError:
        ...     answer = not mge.is_cuda_available()  # no device 0 on this machine
        >>> answer
        True
    """
    prop = get_cuda_device_property(device, device_type)
    return prop.major * 10 + prop.minor


def get_cuda_version():
    """The CUDA version NeoMeg was built with (whether or not a GPU is present).

    Returns:
        ``CUDA_VERSION_MAJOR * 1000 + CUDA_VERSION_MINOR * 10`` (13000 for CUDA 13.0), or -1 in
        a build without CUDA, as MegEngine's CPU build answers.

    Examples:
        >>> import megengine as mge
        >>> v = mge.get_cuda_version()
        >>> v == -1 or v >= 12000
        True
    """
    return _rt.get_cuda_version()


def get_cudnn_version():
    """The cuDNN version NeoMeg was built with (whether or not a GPU is present).

    Returns:
        cuDNN's own number, ``CUDNN_MAJOR * 10000 + CUDNN_MINOR * 100 + CUDNN_PATCHLEVEL``
        (91900 for 9.19.0: MegEngine's ``major * 1000 + minor * 100`` cannot tell 9.10 from
        10.0), or -1 in a build without CUDA, as MegEngine's CPU build answers.

    Examples:
        >>> import megengine as mge
        >>> v = mge.get_cudnn_version()
        >>> v == -1 or v >= 90000
        True
    """
    return _rt.get_cudnn_version()


def get_tensorrt_version():
    """The TensorRT version NeoMeg was built with.

    Returns:
        -1: NeoMeg does not use TensorRT (MegEngine's answer in a build without it).

    Examples:
        >>> import megengine as mge
        >>> mge.get_tensorrt_version()
        -1
    """
    return -1


def get_cuda_driver_version():
    """The newest CUDA version the installed driver supports.

    Returns:
        a version number as :func:`get_cuda_version`'s; 0 on a machine without a CUDA driver
        (as MegEngine answers there), -1 in a build without CUDA.

    Examples:
        >>> import megengine as mge
        >>> mge.get_cuda_driver_version() >= -1
        True
    """
    return _rt.get_cuda_driver_version()


def _stats(device):
    if device is None:
        device = get_default_device()
    elif not isinstance(device, str):
        raise TypeError(f"device must be a device name (str) or None, got {type(device).__name__}")
    return _rt.memory_stats(_rt.canonical_device(device))


def get_allocated_memory(device=None):
    """Bytes currently held by tensors (and kernel workspaces) on a device.

    Args:
        device: a device name; the default device when None.

    Returns:
        an int: the bytes the device's caching allocator has handed out and not got back
        (each block rounded up to its size class).

    Examples:
        >>> import megengine as mge
        >>> before = mge.get_allocated_memory("cpu5")
        >>> x = mge.Tensor([0.0] * 1024, device="cpu5")
        >>> mge.get_allocated_memory("cpu5") - before
        4096
    """
    return _stats(device)["allocated"]


def get_reserved_memory(device=None):
    """Bytes the caching allocator of a device holds: in use plus cached for reuse.

    Args:
        device: a device name; the default device when None.

    Returns:
        an int, at least :func:`get_allocated_memory`.

    Examples:
        >>> import megengine as mge
        >>> mge.get_reserved_memory("cpu0") >= mge.get_allocated_memory("cpu0")
        True
    """
    return _stats(device)["reserved"]


def get_max_allocated_memory(device=None):
    """The most bytes held by tensors on a device at once, since the start or the last
    :func:`reset_max_memory_stats`.

    Args:
        device: a device name; the default device when None.

    Returns:
        an int.

    Examples:
        >>> import megengine as mge
        >>> mge.reset_max_memory_stats("cpu5")
        >>> x = mge.Tensor([0.0] * 1024, device="cpu5")
        >>> del x
        >>> mge.get_max_allocated_memory("cpu5") - mge.get_allocated_memory("cpu5")
        4096
    """
    return _stats(device)["peak_allocated"]


def get_max_reserved_memory(device=None):
    """The most bytes the caching allocator of a device has held at once, since the start or
    the last :func:`reset_max_memory_stats`.

    Args:
        device: a device name; the default device when None.

    Returns:
        an int, at least :func:`get_reserved_memory`.

    Examples:
        >>> import megengine as mge
        >>> mge.get_max_reserved_memory("cpu0") >= mge.get_reserved_memory("cpu0")
        True
    """
    return _stats(device)["peak_reserved"]


def reset_max_memory_stats(device=None):
    """Restarts the maxima of :func:`get_max_allocated_memory` and
    :func:`get_max_reserved_memory` from the current values.

    Args:
        device: a device name; the default device when None.

    Returns:
        None

    Examples:
        >>> import megengine as mge
        >>> mge.reset_max_memory_stats("cpu0")
        >>> mge.get_max_allocated_memory("cpu0") == mge.get_allocated_memory("cpu0")
        True
    """
    if device is None:
        device = get_default_device()
    elif not isinstance(device, str):
        raise TypeError(f"device must be a device name (str) or None, got {type(device).__name__}")
    _rt.reset_peak_memory_stats(_rt.canonical_device(device))


def set_prealloc_config(
    alignment=1,
    min_req=32 * 1024 * 1024,
    max_overhead=0,
    growth_factor=2.0,
    device_type=DeviceType.CUDA,
):
    """Sets how a device's allocator grows its pool (MegEngine's CUDA pre-allocation).

    The arguments are checked as MegEngine checks them. NeoMeg's CUDA allocator caches
    blocks by size class and empties its cache when the device is full, so it has no pool to
    pre-allocate: for :attr:`DeviceType.CUDA` the call changes nothing; for any other kind it
    warns, as MegEngine does, that the kind is unsupported.

    Args:
        alignment: alignment of a request in bytes, > 0.
        min_req: the smallest request to the system in bytes, > 0.
        max_overhead: the most bytes a request may exceed what is needed, >= 0.
        growth_factor: how much a request grows with what is allocated, >= 1.
        device_type: the kind of device to configure.

    Returns:
        None

    Examples:
        >>> import megengine as mge
        >>> mge.set_prealloc_config(alignment=512, min_req=64 << 20, growth_factor=1.5)
    """
    for name, value, low in (
        ("alignment", alignment, 1),
        ("min_req", min_req, 1),
        ("max_overhead", max_overhead, 0),
    ):
        if not isinstance(value, numbers.Integral) or isinstance(value, bool):
            raise TypeError(f"set_prealloc_config: {name} must be an int, got {value!r}")
        if value < low:
            raise ValueError(f"set_prealloc_config: {name} must be >= {low}, got {value}")
    if not isinstance(growth_factor, numbers.Real) or isinstance(growth_factor, bool):
        raise TypeError(
            f"set_prealloc_config: growth_factor must be a number, got {growth_factor!r}"
        )
    if not growth_factor >= 1:
        raise ValueError(f"set_prealloc_config: growth_factor must be >= 1, got {growth_factor}")
    if not isinstance(device_type, DeviceType):
        raise TypeError(
            "set_prealloc_config: device_type must be a megengine.device.DeviceType, got "
            f"{type(device_type).__name__}"
        )
    if device_type != DeviceType.CUDA:
        warnings.warn(
            f"set_prealloc_config: unsupported device type {device_type.name}", stacklevel=2
        )


def coalesce_free_memory():
    """Gives the memory that the caching allocators keep for reuse back to the system.

    Every device's cached (free) blocks are released; blocks in use are untouched, so
    :func:`get_reserved_memory` drops to :func:`get_allocated_memory`.

    Returns:
        None

    Examples:
        >>> import megengine as mge
        >>> x = mge.Tensor([0.0] * 4096, device="cpu5")
        >>> del x
        >>> mge.coalesce_free_memory()
        >>> mge.get_reserved_memory("cpu5") == mge.get_allocated_memory("cpu5")
        True
    """
    _rt.empty_all_caches()


def _full_sync():
    """Waits until the work queued on every device has finished.

    GPU work runs asynchronously; reading a tensor (``numpy()``) already waits for what it
    needs, so this is for timing and for the memory queries' exact values.

    Returns:
        None

    Examples:
        >>> import megengine as mge
        >>> from megengine.device import _full_sync
        >>> x = mge.Tensor([1.0, 2.0])
        >>> _full_sync()
    """
    _rt.sync_all()


def _sync(device=None):
    """Waits until the work queued on one device (the default device when None) has finished.

    Args:
        device: a device name.

    Returns:
        None

    Examples:
        >>> from megengine.device import _sync
        >>> _sync("cpu0")
    """
    _rt.sync(_rt.canonical_device(device or get_default_device()))
