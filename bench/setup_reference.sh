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
# torchvision for its ops (roi_align, roi_pool, deform_conv2d: bench/x86_vision_ops.py); without
# its dependencies, so that pip keeps the torch above rather than fetching the one it was built
# against, plus the one it imports at start (Pillow).
if ! "$venv/bin/python" -c 'import torchvision' 2>/dev/null; then
  "$venv/bin/python" -m pip install -q --no-deps torchvision
  "$venv/bin/python" -m pip install -q pillow
fi
"$venv/bin/python" -c 'import torch; print("PyTorch", torch.__version__, "at", __import__("sys").executable)'
