"""megengine.config (MegEngine 1.13's settings, defaults and checks) and the version numbers."""

import pathlib
import re

import numpy as np
import pytest

import megengine as mge
from megengine import config

DEFAULTS = {
    "async_level": 2,
    "benchmark_kernel": False,
    "deterministic_kernel": False,
    "disable_memory_forwarding": False,
    "benchmark_with_subprocess": False,
    "_compute_mode": "default",
    # MegEngine 1.13 gives True (its docstring says False): get_auto_format_convert() and
    # mge.config._auto_format_convert both read True in a fresh process
    "_auto_format_convert": True,
}


@pytest.fixture(autouse=True)
def restore_config():
    saved = {k: getattr(config, k) for k in [*DEFAULTS, "allow_tf32"]}
    yield
    for k, v in saved.items():
        setattr(config, k, v)


def test_defaults_are_megengines():
    for name, value in DEFAULTS.items():
        got = getattr(config, name)
        assert got == value and type(got) is type(value), name
    assert mge.config is config


def test_allow_tf32_reaches_the_kernels_switch():
    from megengine.core import _imperative_rt as rt

    assert config.allow_tf32 is False and rt.cuda_allow_tf32() is False
    config.allow_tf32 = True
    assert config.allow_tf32 is True and rt.cuda_allow_tf32() is True
    with pytest.raises(TypeError):
        config.allow_tf32 = "yes"
    assert rt.cuda_allow_tf32() is True  # a refused value changes nothing
    config.allow_tf32 = False
    assert rt.cuda_allow_tf32() is False


def test_benchmark_kernel_reaches_the_kernels_switch():
    from megengine.core import _imperative_rt as rt

    assert config.benchmark_kernel is False and rt.cuda_benchmark_kernel() is False
    config.benchmark_kernel = True
    assert rt.cuda_benchmark_kernel() is True and rt.x86_benchmark_kernel() is True
    with pytest.raises(TypeError):
        config.benchmark_kernel = "yes"
    assert rt.cuda_benchmark_kernel() is True  # a refused value changes nothing
    config.benchmark_kernel = 0
    assert rt.cuda_benchmark_kernel() is False and rt.x86_benchmark_kernel() is False
    # _override switches the kernels for its block and restores them after, even on an error.
    with pytest.raises(KeyError), config._override(benchmark_kernel=True):
        assert rt.cuda_benchmark_kernel() is True
        raise KeyError("inside")
    assert rt.cuda_benchmark_kernel() is False and config.benchmark_kernel is False
    with pytest.raises(TypeError):
        config._override(benchmark_kernel="on").__enter__()
    assert rt.cuda_benchmark_kernel() is False


def test_settings_round_trip_and_import_by_name():
    config.async_level = 0
    config.benchmark_kernel = True
    config.deterministic_kernel = np.bool_(True)
    config.benchmark_with_subprocess = 1
    config._compute_mode = "float32"
    config._auto_format_convert = False
    assert config.async_level == 0 and config.benchmark_kernel is True
    assert config.deterministic_kernel is True and config.benchmark_with_subprocess is True
    assert config._compute_mode == "float32" and config._auto_format_convert is False
    from megengine.config import async_level, benchmark_kernel

    assert (async_level, benchmark_kernel) == (0, True)
    # what `from megengine.config import *` binds
    star = {name: getattr(config, name) for name in config.__all__}
    assert set(star) == set(DEFAULTS) | {"_override", "allow_tf32"}
    assert star["async_level"] == 0 and callable(star["_override"])


def test_disable_memory_forwarding_reads_back_as_bool():
    config.disable_memory_forwarding = 2  # MegEngine stores an int option, reads bool(option)
    assert config.disable_memory_forwarding is True
    config.disable_memory_forwarding = False
    assert config.disable_memory_forwarding is False


@pytest.mark.parametrize(
    "name,value,exc",
    [
        ("async_level", 3, ValueError),
        ("async_level", -1, ValueError),
        ("async_level", "2", TypeError),
        ("async_level", 1.0, TypeError),
        ("async_level", True, TypeError),
        ("benchmark_kernel", "yes", TypeError),
        ("benchmark_kernel", 2, TypeError),
        ("deterministic_kernel", None, TypeError),
        ("benchmark_with_subprocess", 0.5, TypeError),
        ("_auto_format_convert", "true", TypeError),
        ("disable_memory_forwarding", "x", TypeError),
        ("_compute_mode", "float16", ValueError),
        ("_compute_mode", None, ValueError),
    ],
)
def test_bad_values_raise_and_change_nothing(name, value, exc):
    before = getattr(config, name)
    with pytest.raises(exc, match=f"megengine.config.{name}"):
        setattr(config, name, value)
    assert getattr(config, name) == before


def test_override_sets_then_restores_even_on_error():
    with config._override(benchmark_kernel=True, async_level=1, compute_mode="float32"):
        assert (config.benchmark_kernel, config.async_level, config._compute_mode) == (
            True,
            1,
            "float32",
        )
        assert config.deterministic_kernel is False  # None leaves a setting alone
    assert (config.benchmark_kernel, config.async_level, config._compute_mode) == (
        False,
        2,
        "default",
    )
    with pytest.raises(KeyError), config._override(deterministic_kernel=True):
        raise KeyError("inside")
    assert config.deterministic_kernel is False

    @config._override(async_level=0)
    def run():
        return config.async_level

    assert run() == 0 and config.async_level == 2


def test_override_checks_every_value_before_setting_any():
    with (
        pytest.raises(ValueError, match="async_level"),
        config._override(benchmark_kernel=True, async_level=5),
    ):
        pass
    assert config.benchmark_kernel is False


def test_version_is_megengines_and_neomegs_own_is_pyprojects():
    assert mge.__version__ == "1.13.0"
    # what scripts do with it: compare tuples of ints, or compare parsed versions
    assert tuple(int(p) for p in mge.__version__.split(".")) >= (1, 13)
    pyproject = pathlib.Path(__file__).parents[2] / "pyproject.toml"
    declared = re.search(r'^version = "([^"]+)"', pyproject.read_text(), re.MULTILINE).group(1)
    assert mge.__neomeg_version__ == declared
    from megengine.version import __version__

    assert __version__ == mge.__version__
