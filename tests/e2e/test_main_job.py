"""The main job's script (examples/train_fashion_mnist.py, what `scripts/train.sh` runs) on the real
Fashion-MNIST files, cut to a few steps per epoch: it learns, saves a checkpoint each epoch, and
--resume continues from it."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "examples" / "train_fashion_mnist.py"
DATA = Path("/usr/share/datasets/fashion-mnist")

pytestmark = pytest.mark.skipif(
    not (DATA / "train-images-idx3-ubyte.gz").exists(),
    reason="Debian's dataset-fashion-mnist is not installed (scripts/setup.sh installs it)",
)


def run(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "python"))
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), *args],
        check=False,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return proc.stdout


def accuracies(out):
    return [float(a) for a in re.findall(r"test accuracy ([0-9.]+)%", out)]


def test_trains_checkpoints_and_resumes(tmp_path):
    ckpt = tmp_path / "lenet.mge"
    out = run("--epochs", "1", "--max-steps", "150", "--checkpoint", str(ckpt), cwd=tmp_path)
    (first,) = accuracies(out)
    # 150 steps of 64 images: far above the 10% of chance on ten classes.
    assert first > 60.0, out
    assert ckpt.exists()

    out = run(
        "--epochs", "2", "--max-steps", "150", "--checkpoint", str(ckpt), "--resume", cwd=tmp_path
    )
    assert "resumed from" in out and "after epoch 1" in out, out
    assert re.search(r"^epoch 2: ", out, re.MULTILINE), out
    assert not re.search(r"^epoch 1: ", out, re.MULTILINE), out
    (second,) = accuracies(out)
    assert second > 60.0, out


def test_traced_step_trains_as_the_eager_one(tmp_path):
    """--trace replays a compiled graph for every step after the first; the run gives the same
    loss and accuracy as the eager one (same seed, same data order)."""
    args = ("--epochs", "1", "--max-steps", "100")
    eager = run(*args, "--checkpoint", str(tmp_path / "e.mge"), cwd=tmp_path)
    traced = run(*args, "--checkpoint", str(tmp_path / "t.mge"), "--trace", cwd=tmp_path)
    (acc_e,), (acc_t,) = accuracies(eager), accuracies(traced)
    assert acc_e > 50.0, eager
    assert abs(acc_t - acc_e) <= 0.1, (eager, traced)
    loss = r"train loss ([0-9.]+)"
    assert float(re.search(loss, traced).group(1)) == pytest.approx(
        float(re.search(loss, eager).group(1)), rel=1e-4
    )
