"""LiteGlobal: process-wide queries and settings of MegEngine Lite."""

import os

from megengine.core import _imperative_rt as _rt

from .struct import LiteDeviceType

__all__ = ["LiteGlobal"]


class LiteGlobal:
    """Process-wide queries and settings: the device count and freeing cached memory.

    MegEngine's model decryption and loader-library registration, its fast-run and TensorRT
    caches and its physical-memory pairs are not part of NeoMeg's Lite.

    Examples:
        >>> from megenginelite import LiteDeviceType, LiteGlobal
        >>> LiteGlobal.get_device_count(LiteDeviceType.LITE_CPU) >= 1
        True
    """

    @staticmethod
    def get_device_count(device_type):
        """The number of devices of a type in this process.

        Args:
            device_type: a :class:`~.LiteDeviceType`.

        Returns:
            an int: the CPU cores this process may run on for ``LITE_CPU``, the usable CUDA
            devices for ``LITE_CUDA``, 0 for the devices NeoMeg has no backend for.

        Examples:
            >>> from megenginelite import LiteDeviceType, LiteGlobal
            >>> LiteGlobal.get_device_count(LiteDeviceType.LITE_ATLAS)
            0
        """
        device_type = LiteDeviceType(int(device_type))
        if device_type == LiteDeviceType.LITE_CPU:
            return len(os.sched_getaffinity(0))
        if device_type == LiteDeviceType.LITE_CUDA:
            return _rt.get_cuda_device_count()
        return 0

    @staticmethod
    def try_coalesce_all_free_memory():
        """Gives the memory NeoMeg's allocators keep cached for reuse back to the system
        (on every device), lowering the memory in use between runs.

        Examples:
            >>> from megenginelite import LiteGlobal
            >>> LiteGlobal.try_coalesce_all_free_memory()
        """
        _rt.empty_all_caches()
