"""Device helpers and the logger against known values."""

import io
import logging
import os

import pytest

import megengine as mge
from megengine.logger import MegEngineLogFormatter, get_logger, set_log_file, set_log_level

AUTO = "gpu0" if mge.is_cuda_available() else "cpu0"  # what "xpux" means here


def test_default_device_round_trip():
    assert mge.get_default_device() == AUTO
    try:
        mge.set_default_device("cpu2")
        assert mge.get_default_device() == "cpu2"
        assert mge.Tensor([1.0]).device == "cpu2"
        assert mge.Tensor([1.0], device="cpu0").device == "cpu0"
    finally:
        mge.set_default_device("xpux")
    assert mge.Tensor([1.0]).device == AUTO
    with pytest.raises(ValueError, match="invalid comp node name"):
        mge.set_default_device("npu0")
    assert mge.get_default_device() == AUTO  # a bad name changes nothing


def test_creators_without_a_device_use_the_default_device():
    # MegEngine's full/zeros/arange/linspace/eye take get_default_device() for device=None, as
    # Tensor() does; an explicit device still wins.
    import megengine.functional as F

    try:
        mge.set_default_device("cpu2")
        made = {
            "zeros": F.zeros((2, 3)),
            "ones": F.ones(4),
            "full": F.full((2,), 7),
            "full -0.0": F.full((2,), -0.0),
            "full int64 value": F.full((2,), 2**40, dtype="float32"),
            "arange": F.arange(5),
            "linspace": F.linspace(0, 1, 3),
            "eye": F.eye(3),
        }
        for name, t in made.items():
            assert t.device == "cpu2", name
        assert F.zeros((2,), device="cpu0").device == "cpu0"
        assert F.zeros_like(F.zeros((2,), device="cpu0")).device == "cpu0"  # follows its input
    finally:
        mge.set_default_device("xpux")
    assert F.zeros((2,)).device == AUTO


def test_device_counts_and_memory():
    assert mge.get_device_count("cpu") == os.cpu_count()
    assert mge.is_cuda_available() is (mge.get_device_count("gpu") > 0)
    with pytest.raises(ValueError, match="unknown device type"):
        mge.get_device_count("tpu")
    # MegEngine 1.13 counts "xpu" as the GPUs when there are any, else the CPUs (its tests ask
    # get_device_count("xpu") > 1 before using "xpu0" and "xpu1"), and "rocm" as 0 here.
    gpus = mge.get_device_count("gpu")
    assert mge.get_device_count("xpu") == (gpus if gpus else os.cpu_count())
    assert mge.get_device_count("rocm") == 0
    total, free = mge.get_mem_status_bytes("cpu0")
    assert 0 < free <= total
    assert total == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_logger_levels_and_file():
    log = get_logger("unit")
    assert log.name == "unit" and not log.propagate  # MegEngine's: the name as given
    assert get_logger("unit") is log and len(log.handlers) == 1
    buf = io.StringIO()
    set_log_file(buf)
    old = set_log_level("ERROR")
    try:
        log.warning("hidden")
        log.error("shown")
    finally:
        set_log_level(old)
        set_log_file(None)
    assert "shown" in buf.getvalue() and "hidden" not in buf.getvalue()
    assert buf.getvalue().startswith("[") and "ERR shown" in buf.getvalue()
    with pytest.raises(ValueError, match="unknown level 'LOUD'"):
        set_log_level("LOUD")


def test_set_log_level_update_existing():
    early = get_logger("early")
    old = set_log_level(logging.WARNING)
    try:
        assert early.level == logging.WARNING
        assert set_log_level(logging.ERROR, update_existing=False) == logging.WARNING
        assert early.level == logging.WARNING  # left alone
        assert get_logger("late").level == logging.ERROR  # new loggers take the default
    finally:
        set_log_level(old)
    assert early.level == old


def test_get_logger_formatter():
    class Plain(logging.Formatter):
        pass

    log = get_logger("custom_fmt", Plain)
    assert type(log.handlers[0].formatter) is Plain
    assert log.handlers[0].formatter.datefmt == "%d %H:%M:%S"
    rec = logging.LogRecord("n", logging.WARNING, "f.py", 7, "careful", None, None)
    line = MegEngineLogFormatter().format(rec)
    assert "WRN careful" in line and line.startswith("\x1b[32m")


def test_logging_helpers_at_top_level():
    assert mge.get_logger("x").name == "x"
    old = mge.set_log_level("ERROR")
    try:
        assert mge.get_logger("x").level == logging.ERROR
        mge.enable_debug_log()
        assert mge.get_logger("x").level == logging.DEBUG
    finally:
        mge.set_log_level(old)
