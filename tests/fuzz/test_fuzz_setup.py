"""The CI fuzzing step's parts that need no clang build: scripts/fuzz.sh's refusals and skips,
and the seed models tests/fuzz/write_seed_models.py dumps (each loads and runs, the CNN at
batch sizes other than the traced one)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from megengine.utils.comp_graph_tools import GraphInference

ROOT = Path(__file__).resolve().parents[2]
FUZZ = ROOT / "scripts" / "fuzz.sh"


def fuzz_sh(tmp_path, **env):
    # A build directory that must stay untouched: none of these runs gets as far as building.
    env = {**os.environ, "FUZZ_BUILD_DIR": str(tmp_path / "build-fuzz"), **env}
    cmd = ["bash", str(FUZZ)]
    return subprocess.run(cmd, check=False, env=env, capture_output=True, text=True, timeout=60)


def test_fuzz_script_skips_clearly_without_clang(tmp_path):
    r = fuzz_sh(tmp_path, FUZZ_CXX=str(tmp_path / "no-such-clang++"))
    assert r.returncode == 0
    assert "SKIPPED" in r.stdout and "needs clang" in r.stdout
    assert not (tmp_path / "build-fuzz").exists()


def test_fuzz_script_skips_clearly_when_the_compiler_has_no_libfuzzer(tmp_path):
    fake = tmp_path / "fake-clang++"
    fake.write_text("#!/bin/sh\necho 'no libFuzzer here' >&2\nexit 1\n")
    fake.chmod(0o755)
    r = fuzz_sh(tmp_path, FUZZ_CXX=str(fake))
    assert r.returncode == 0
    assert "SKIPPED" in r.stdout and "-fsanitize=fuzzer,address" in r.stdout
    assert "no libFuzzer here" in r.stdout
    assert not (tmp_path / "build-fuzz").exists()


@pytest.mark.parametrize("seconds, code, message", [("0", 0, "skipped"), ("1m", 2, "whole number")])
def test_fuzz_script_time_setting(tmp_path, seconds, code, message):
    r = fuzz_sh(tmp_path, NEOMEG_FUZZ_SECONDS=seconds)
    assert r.returncode == code
    assert message in r.stdout + r.stderr
    assert not (tmp_path / "build-fuzz").exists()


def test_seed_models_load_and_run(tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT / "python")}
    subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fuzz" / "write_seed_models.py"), str(tmp_path)],
        check=True, env=env, capture_output=True, timeout=120,
    )  # fmt: skip
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cnn.nmeg", "cond_take.nmeg"]
    for p in tmp_path.iterdir():
        assert p.stat().st_size < 4096, p  # small: libFuzzer mutates it quickly
    cnn = GraphInference(str(tmp_path / "cnn.nmeg"))
    for n in (1, 5):
        prob = cnn.run(np.ones((n, 1, 4, 4), "float32"))["output_0"]
        assert prob.shape == (n, 3)
        np.testing.assert_allclose(prob.sum(axis=1), 1, rtol=1e-5)
    x = np.array([[1, -1, 2, 0], [0, 0, 3, -4], [-1, -2, -3, 5]], "float32")
    out = GraphInference(str(tmp_path / "cond_take.nmeg")).run(x, np.array([10], "int32"))
    np.testing.assert_allclose(out["output_0"], x[x > 0].sum() * 2)
    np.testing.assert_array_equal(out["output_1"], np.flatnonzero(x > 0) + 10)


def test_seed_writer_needs_a_directory():
    r = subprocess.run(
        [sys.executable, str(ROOT / "tests" / "fuzz" / "write_seed_models.py")],
        env={**os.environ, "PYTHONPATH": str(ROOT / "python")},
        check=False, capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert r.returncode != 0 and "usage" in r.stderr
