#!/usr/bin/env bash
# The main job: installs what it needs, builds NeoMeg, and trains LeNet on Fashion-MNIST
# (Debian's dataset-fashion-mnist) with examples/train_fashion_mnist.py. Arguments go to the
# script, e.g. `scripts/train.sh --epochs 1` or `scripts/train.sh --resume`.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
bash scripts/build.sh
PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 examples/train_fashion_mnist.py "$@"
