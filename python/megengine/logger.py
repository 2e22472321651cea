"""MegEngine's logging helpers, with MegEngine's model: every logger that ``get_logger`` hands out
gets its own console handler (and does not propagate), all of them follow ``set_log_level``, and
``set_log_file`` copies every record to one file."""

import logging
import os

__all__ = ["enable_debug_log", "get_logger", "set_log_file", "set_log_level"]

_all_loggers = []
_default_level = logging.getLevelName(os.getenv("MEGENGINE_LOGGING_LEVEL", "INFO").upper())


class MegEngineLogFormatter(logging.Formatter):
    """The formatter of megengine's loggers: a short coloured line on the console and, once
    ``set_log_file`` was called, a full line (time, source line, logger name) in the file.

    Args:
        fmt: ignored: the format is the class's own, by level.
        datefmt: the ``time.strftime`` format of the time stamp.
        style: as for :class:`logging.Formatter`.

    Examples:
        >>> import logging
        >>> from megengine.logger import MegEngineLogFormatter
        >>> rec = logging.LogRecord("demo", logging.WARNING, "f.py", 1, "careful", None, None)
        >>> "WRN careful" in MegEngineLogFormatter().format(rec)
        True
    """

    log_fout = None  # set by set_log_file: every record is also written there
    date_full = "[%(asctime)s %(lineno)d@%(filename)s:%(name)s] "
    date = "%(asctime)s "
    msg = "%(message)s"
    max_lines = 256  # longer records are shortened on the console (kept whole in the file)

    _TAGS = ((logging.DEBUG, "36", "DBG"), (logging.WARNING, "1;31", "WRN"))
    _TAGS += ((logging.ERROR, "1;4;31", "ERR"),)

    def _with_fmt(self, fmt, record):
        self._style._fmt = fmt
        return super().format(record)

    def format(self, record):
        color, tag = next(((c, t) for lv, c, t in self._TAGS if lv == record.levelno), (None, ""))
        tag = tag + " " if tag else ""
        if self.log_fout is not None:
            full = self._with_fmt(self.date_full + tag + self.msg, record)
            lines = full.count("\n") + 1
            if lines >= self.max_lines:
                head, body = full.split("\n", 1)
                n = lines - 1
                full = f"{head}\nBEGIN_LONG_LOG_{n}_LINES{{\n{body}\n}}END_LONG_LOG_{n}_LINES"
            self.log_fout.write(full + "\n")
            self.log_fout.flush()
        text = tag + self.msg
        if color:
            text = f"\x1b[{color}m{text}\x1b[0m"
        out = self._with_fmt(f"\x1b[32m{self.date}\x1b[0m" + text, record)
        lines = out.split("\n")
        keep = self.max_lines // 2
        if len(lines) >= self.max_lines and len(lines) > 2 * keep:
            note = (
                f"\x1b[35m[{len(lines) - 2 * keep} log lines omitted (would be written to "
                "output file if set_log_file() has been called;\n the threshold can be set at "
                "MegEngineLogFormatter.max_lines)]\x1b[0m"
            )
            out = "\n".join(lines[:keep] + [note] + lines[-keep:])
        return out


def get_logger(name=None, formatter=MegEngineLogFormatter):
    """The logger ``name`` (as :func:`logging.getLogger`), set up once as megengine's: its own
    console handler with ``formatter``, no propagation, the level of ``set_log_level``.

    Args:
        name: the logger's name; None is the root logger, as in MegEngine.
        formatter: the :class:`logging.Formatter` subclass of the console handler.

    Returns:
        a :class:`logging.Logger`.

    Examples:
        >>> from megengine.logger import get_logger
        >>> log = get_logger("train")
        >>> log.name, log.propagate, get_logger("train") is log
        ('train', False, True)
    """
    logger = logging.getLogger(name)
    if getattr(logger, "_init_done__", None):
        return logger
    logger._init_done__ = True
    logger.propagate = False
    logger.setLevel(_default_level)
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(datefmt="%d %H:%M:%S"))
    handler.setLevel(0)
    del logger.handlers[:]
    logger.addHandler(handler)
    _all_loggers.append(logger)
    return logger


def set_log_level(level, update_existing=True):
    """Sets the level of the loggers ``get_logger`` hands out from now on.

    Args:
        level: a :mod:`logging` level (``logging.DEBUG``) or its name (``"DEBUG"``).
        update_existing: also set it on every logger already handed out.

    Returns:
        the previous default level.

    Examples:
        >>> import logging
        >>> from megengine.logger import get_logger, set_log_level
        >>> log = get_logger("demo")
        >>> old = set_log_level(logging.ERROR)
        >>> log.level == logging.ERROR
        True
        >>> _ = set_log_level(old)
    """
    global _default_level
    if isinstance(level, str):
        value = logging.getLevelName(level.upper())
        if not isinstance(value, int):
            raise ValueError(f"set_log_level: unknown level {level!r}")  # noqa: TRY004
        level = value
    old, _default_level = _default_level, level
    if update_existing:
        for logger in _all_loggers:
            logger.setLevel(level)
    return old


def set_log_file(fout, mode="a"):
    """Also writes every record of megengine's loggers to a file, in the full format.

    Args:
        fout: a path, or an open text file (anything with ``write`` and ``flush``); None
            stops writing to a file.
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
        >>> set_log_file(None)
    """
    if isinstance(fout, str):
        fout = open(fout, mode)  # noqa: SIM115 -- kept open for the process, as MegEngine
    MegEngineLogFormatter.log_fout = fout


def enable_debug_log():
    """Sets every megengine logger to ``DEBUG`` (``set_log_level(logging.DEBUG)``).

    Returns:
        None.

    Examples:
        >>> import logging
        >>> from megengine.logger import enable_debug_log, get_logger, set_log_level
        >>> old = set_log_level(logging.INFO)
        >>> enable_debug_log()
        >>> get_logger("demo").level == logging.DEBUG
        True
        >>> _ = set_log_level(old)
    """
    set_log_level(logging.DEBUG)
