"""``CompNode``: what ``Tensor.device`` returns, MegEngine's comp-node object.

A ``CompNode`` is a ``str`` holding the canonical ``"<device>:<stream>"`` name (``"cpu0:0"``), so
code that treats a device as its name keeps working, and everything that takes a device name
takes a ``CompNode``. On top of the name it offers MegEngine's comp-node attributes.
"""

import functools

from . import _imperative_rt as _rt

__all__ = ["CompNode"]


@functools.lru_cache(maxsize=256)
def _full_name(name):
    # "xpux" -> "cpu0:0": which device a name means is fixed for the process.
    canonical = _rt.canonical_device(name)
    return canonical if ":" in canonical else canonical + ":0"


class CompNode(str):
    """A device and an execution queue, as ``Tensor.device`` gives it.

    It is the canonical name ``"<device><index>:<stream>"`` (a ``str``), equal to every name
    of the same queue (``"cpu0"``, ``"cpux"``, ``"xpux:0"`` on a machine without a GPU).
    NeoMeg resolves a name when a tensor is made, so the logical name (``xpux`` in MegEngine)
    is not kept: ``logical_name`` is the physical one.

    Args:
        name: a device name (``"cpu0"``, ``"cpux"``, ``"xpux"``, ``"gpu0:1"``) or a CompNode.

    Examples:
        >>> import megengine as mge
        >>> d = mge.Tensor([1.0], device="cpu1").device
        >>> d, str(d), d.physical_locator
        (CompNode("cpu1:0" from "cpu1:0"), 'cpu1:0', ['cpu', 1, 0])
        >>> d == "cpu1", d == "cpu1:0", d == "cpu0"
        (True, True, False)
    """

    __slots__ = ()

    def __new__(cls, name):
        if isinstance(name, CompNode):
            return name
        if not isinstance(name, str):
            raise TypeError(f"CompNode: a device name is a str, got {type(name).__name__}")
        try:
            return str.__new__(cls, _full_name(name))
        except (ValueError, RuntimeError) as e:
            raise ValueError(f"CompNode: {name!r} is not a device ({e})") from None

    @property
    def logical_name(self):
        """The name the node was asked for; NeoMeg keeps the resolved one (``"cpu0:0"``)."""
        return str(self)

    @property
    def physical_name(self):
        """The device and stream that run the work (``"cpu0:0"``)."""
        return str(self)

    @property
    def physical_locator(self):
        """``[type, device index, stream]``, e.g. ``["cpu", 0, 0]``."""
        device, stream = str(self).split(":")
        kind = device.rstrip("0123456789")
        return [kind, int(device[len(kind) :]), int(stream)]

    @property
    def get_mem_status_bytes(self):
        """``(total, free)`` memory of the device in bytes (a property, as in MegEngine); for a
        GPU, the device's memory and what CUDA reports free; for a CPU, the machine's physical
        memory and what the kernel reports as available."""
        return tuple(_rt.mem_status(str(self)))

    @property
    def get_used_memory(self):
        """Bytes that tensors on this node occupy now (its caching allocator's count)."""
        return _rt.memory_stats(str(self))["allocated"]

    @property
    def get_max_used_memory(self):
        """The most bytes that tensors on this node occupied at once."""
        return _rt.memory_stats(str(self))["peak_allocated"]

    @property
    def get_reserved_memory(self):
        """Bytes the node's caching allocator holds, used or cached for reuse."""
        return _rt.memory_stats(str(self))["reserved"]

    def __eq__(self, other):
        if isinstance(other, CompNode):
            return str.__eq__(self, other)
        if isinstance(other, str):
            try:
                return str.__eq__(self, _full_name(other))
            except (ValueError, RuntimeError):
                return False  # not a device name: equal to no node, as in MegEngine
        return NotImplemented

    def __ne__(self, other):
        eq = self.__eq__(other)
        return eq if eq is NotImplemented else not eq

    __hash__ = str.__hash__

    def __repr__(self):
        return f'CompNode("{self}" from "{self.logical_name}")'

    def __reduce__(self):
        return (CompNode, (str(self),))
