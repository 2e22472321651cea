"""Device helpers and the logger against known values."""

import io
import logging
import os

import pytest

import megengine as mge
from megengine.logger import get_logger, set_log_file, set_log_level


def test_default_device_round_trip():
    assert mge.get_default_device() == "cpu0"  # no CUDA in this build
    try:
        mge.set_default_device("cpu2")
        assert mge.get_default_device() == "cpu2"
        assert mge.Tensor([1.0]).device == "cpu2"
        assert mge.Tensor([1.0], device="cpu0").device == "cpu0"
    finally:
        mge.set_default_device("xpux")
    assert mge.Tensor([1.0]).device == "cpu0"
    with pytest.raises(ValueError, match="invalid comp node name"):
        mge.set_default_device("npu0")
    assert mge.get_default_device() == "cpu0"  # a bad name changes nothing


def test_device_counts_and_memory():
    assert mge.get_device_count("cpu") == os.cpu_count()
    assert mge.get_device_count("gpu") == 0
    assert mge.is_cuda_available() is False
    with pytest.raises(ValueError, match="unknown device type"):
        mge.get_device_count("tpu")
    total, free = mge.get_mem_status_bytes()
    assert 0 < free <= total
    assert total == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")


def test_logger_levels_and_file():
    log = get_logger("unit")
    assert log.name == "megengine.unit"
    buf = io.StringIO()
    set_log_file(buf)
    old = set_log_level("ERROR")
    try:
        log.warning("hidden")
        log.error("shown")
    finally:
        set_log_level(old)
        root = logging.getLogger("megengine")
        root.removeHandler(root.handlers[-1])
    assert "shown" in buf.getvalue() and "hidden" not in buf.getvalue()


def test_logging_helpers_at_top_level():
    assert mge.get_logger("x").name == "megengine.x"
    old = mge.set_log_level("ERROR")
    try:
        assert mge.get_logger().level == logging.ERROR
        mge.enable_debug_log()
        assert mge.get_logger().level == logging.DEBUG
    finally:
        mge.set_log_level(old)
