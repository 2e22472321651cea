"""MegEngine's logging helpers: every megengine logger hangs under the ``"megengine"`` logger,
so one level or one file setting applies to all of them."""

import logging

__all__ = ["enable_debug_log", "get_logger", "set_log_file", "set_log_level"]

_ROOT = "megengine"
_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def _root():
    root = logging.getLogger(_ROOT)
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter(_FORMAT))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
    return root


def get_logger(name=None):
    """A logger under megengine's root logger.

    Args:
        name: dotted name below ``"megengine"``; the root logger itself when None.

    Returns:
        a :class:`logging.Logger`.

    Examples:
        >>> from megengine.logger import get_logger
        >>> get_logger("train").name
        'megengine.train'
    """
    _root()
    if not name:
        return logging.getLogger(_ROOT)
    if name == _ROOT or name.startswith(_ROOT + "."):
        return logging.getLogger(name)
    return logging.getLogger(f"{_ROOT}.{name}")


def set_log_level(level):
    """Sets the level of every megengine logger.

    Args:
        level: a :mod:`logging` level (``logging.DEBUG``) or its name (``"DEBUG"``).

    Returns:
        the previous level.

    Examples:
        >>> import logging
        >>> from megengine.logger import set_log_level
        >>> old = set_log_level("WARNING")
        >>> _ = set_log_level(old)
    """
    root = _root()
    old = root.level
    root.setLevel(level.upper() if isinstance(level, str) else level)
    return old


def set_log_file(fout, mode="a"):
    """Also writes megengine's log to a file.

    Args:
        fout: a path, or an open text file.
        mode: the mode a path is opened with.

    Returns:
        None.

    Examples:
        >>> import io
        >>> from megengine.logger import get_logger, set_log_file
        >>> buf = io.StringIO()
        >>> set_log_file(buf)
        >>> get_logger("demo").warning("hello")
        >>> "hello" in buf.getvalue()
        True
    """
    handler = (
        logging.FileHandler(fout, mode) if isinstance(fout, str) else logging.StreamHandler(fout)
    )
    handler.setFormatter(logging.Formatter(_FORMAT))
    _root().addHandler(handler)


def enable_debug_log():
    """Sets every megengine logger to ``DEBUG`` (``set_log_level(logging.DEBUG)``).

    Returns:
        None.

    Examples:
        >>> import logging
        >>> from megengine.logger import enable_debug_log, get_logger, set_log_level
        >>> old = get_logger().level
        >>> enable_debug_log()
        >>> get_logger().level == logging.DEBUG
        True
        >>> _ = set_log_level(old)
    """
    set_log_level(logging.DEBUG)
