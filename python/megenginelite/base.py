"""The version and the log level of MegEngine Lite."""

from .struct import LiteLogLevel

__all__ = ["get_log_level", "set_log_level", "version"]

# The MegEngine Lite version whose Python API this package reproduces.
version = "1.13.0"

_log_level = LiteLogLevel.DEBUG


def set_log_level(level):
    """Sets the level below which Lite's messages are not printed.

    NeoMeg's Lite prints nothing of its own (its errors are exceptions, its warnings Python
    warnings), so the level is only kept for :func:`get_log_level`.

    Args:
        level: a :class:`~.LiteLogLevel` or its int value.

    Returns:
        None.

    Examples:
        >>> from megenginelite import LiteLogLevel, get_log_level, set_log_level
        >>> set_log_level(LiteLogLevel.ERROR)
        >>> int(get_log_level())
        3
        >>> set_log_level(LiteLogLevel.DEBUG)
    """
    global _log_level
    _log_level = LiteLogLevel(int(level))


def get_log_level():
    """The level :func:`set_log_level` set (``DEBUG``, 0, at first, as in MegEngine).

    Returns:
        a :class:`~.LiteLogLevel`.

    Examples:
        >>> from megenginelite import get_log_level
        >>> get_log_level() in (0, 1, 2, 3)
        True
    """
    return _log_level
