import os
import subprocess
import sys

import pytest

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
FASHION_ROOT = "/usr/share/datasets/fashion-mnist"


@pytest.mark.skipif(not os.path.isdir(FASHION_ROOT), reason="dataset-fashion-mnist not installed")
def test_bench_data_loader_runs():
    out = subprocess.run(
        [sys.executable, "bench/data_loader.py", "--batches", "5", "--repeat", "1"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=50,
        check=True,
    ).stdout
    for row in ("plain NumPy loop", "DataLoader, 0 workers", "DataLoader, 2 workers"):
        assert row in out
    assert "training steps alone" in out
