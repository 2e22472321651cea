#!/usr/bin/env bash
# Installs the benchmarks' reference, PyTorch 2.x from PyPI (the default wheel runs on the CPU with
# MKL and oneDNN 3), into a virtual environment outside the project. Safe to run twice.
#   bash bench/setup_reference.sh [VENV]    (default ~/.cache/neomeg-references/torch-venv)
set -euo pipefail
venv=${1:-$HOME/.cache/neomeg-references/torch-venv}
if ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install -q torch numpy
fi
"$venv/bin/python" -c 'import torch; print("PyTorch", torch.__version__, "at", __import__("sys").executable)'
