"""The enums of MegEngine Lite, with MegEngine 1.13's names and values."""

from enum import IntEnum

__all__ = [
    "LiteAlgoSelectStrategy",
    "LiteBackend",
    "LiteDataType",
    "LiteDeviceType",
    "LiteIOType",
    "LiteLogLevel",
    "LiteTensorPhase",
]


class LiteBackend(IntEnum):
    """The inference backend: only the default one.

    Examples:
        >>> from megenginelite import LiteBackend
        >>> int(LiteBackend.LITE_DEFAULT)
        0
    """

    LITE_DEFAULT = 0


class LiteDeviceType(IntEnum):
    """The device a network or a tensor lives on.

    NeoMeg runs ``LITE_CPU`` and, where a CUDA device is usable, ``LITE_CUDA``; the other
    devices (Atlas, NPU, Cambricon) are refused with a ``RuntimeError`` when used.
    ``LITE_DEVICE_DEFAULT`` means "the device of the source" where MegEngine takes it
    (:func:`~.LiteTensorConcat`).

    Examples:
        >>> from megenginelite import LiteDeviceType
        >>> LiteDeviceType.LITE_CUDA.value
        1
    """

    LITE_CPU = 0
    LITE_CUDA = 1
    LITE_ATLAS = 3
    LITE_NPU = 4
    LITE_CAMBRICON = 5
    LITE_DEVICE_DEFAULT = 7


class LiteDataType(IntEnum):
    """A tensor's element type: ``LITE_HALF`` is float16, ``LITE_INT`` is int32.

    Examples:
        >>> from megenginelite import LiteDataType, lite_dtype_2_numpy
        >>> lite_dtype_2_numpy(LiteDataType.LITE_INT).__name__
        'int32'
    """

    LITE_FLOAT = 0
    LITE_HALF = 1
    LITE_INT = 2
    LITE_INT16 = 3
    LITE_INT8 = 4
    LITE_UINT8 = 5
    LITE_UINT16 = 6


class LiteTensorPhase(IntEnum):
    """Which IO tensors :meth:`~.LiteNetwork.get_io_tensor` looks among: ``LITE_IO`` both the
    inputs and the outputs (inputs first), ``LITE_INPUT`` or ``LITE_OUTPUT`` one kind.

    Examples:
        >>> from megenginelite import LiteTensorPhase
        >>> [p.name for p in LiteTensorPhase]
        ['LITE_IO', 'LITE_INPUT', 'LITE_OUTPUT']
    """

    LITE_IO = 0
    LITE_INPUT = 1
    LITE_OUTPUT = 2


class LiteIOType(IntEnum):
    """What an IO carries: its value, or only its shape (an output of ``LITE_IO_SHAPE`` gets
    its layout after a forward but not its values).

    Examples:
        >>> from megenginelite import LiteIOType
        >>> LiteIOType.LITE_IO_SHAPE.value
        1
    """

    LITE_IO_VALUE = 0
    LITE_IO_SHAPE = 1


class LiteAlgoSelectStrategy(IntEnum):
    """How MegEngine chooses among an operator's algorithms; the flags combine with ``|``.

    NeoMeg chooses its kernels itself (docs/x86-backend.md, "The operator families"), so
    :meth:`~.LiteNetwork.set_network_algo_policy` accepts these and changes nothing.

    Examples:
        >>> from megenginelite import LiteAlgoSelectStrategy as S
        >>> int(S.LITE_ALGO_PROFILE | S.LITE_ALGO_REPRODUCIBLE)
        6
    """

    LITE_ALGO_HEURISTIC = 1
    LITE_ALGO_PROFILE = 2
    LITE_ALGO_REPRODUCIBLE = 4
    LITE_ALGO_OPTIMIZED = 8


class LiteLogLevel(IntEnum):
    """Log levels, from the most verbose (``DEBUG``) to the least (``ERROR``).

    Examples:
        >>> from megenginelite import LiteLogLevel, get_log_level, set_log_level
        >>> set_log_level(LiteLogLevel.WARN)
        >>> get_log_level() == LiteLogLevel.WARN
        True
        >>> set_log_level(LiteLogLevel.DEBUG)
    """

    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
