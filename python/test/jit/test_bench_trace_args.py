"""bench/trace.py's --threads: read before megengine loads (OpenMP reads its thread count then)."""

import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))


def run_bench(*args):
    return subprocess.run(
        [sys.executable, "bench/trace.py", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("bad", [["--threads", "0"], ["--threads=two"], ["--threads", "-1"]])
def test_bad_thread_count_is_refused_before_anything_runs(bad):
    proc = run_bench(*bad)
    assert proc.returncode != 0
    assert "--threads takes a positive integer" in proc.stderr
    assert proc.stdout == ""


def test_thread_count_reaches_openmp_and_help():
    # A one-line program of the bench's own module: its threads_from_argv ran at import.
    code = (
        "import sys; sys.argv = ['trace.py', '--threads=1', '--no-chain', '--models', 'lenet'];"
        "sys.path.insert(0, 'bench'); import trace, os;"
        "print(trace.THREADS, os.environ['OMP_NUM_THREADS'])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "python")),
    )
    assert proc.stdout.split() == ["1", "1"]
    help_text = run_bench("--help").stdout
    assert "--threads THREADS" in help_text
