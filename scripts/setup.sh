#!/usr/bin/env bash
# Installs everything NeoMeg's build, tests and main job need on a fresh Debian machine.
# Idempotent: each step checks first, so a second run installs nothing.
set -euo pipefail

DEB_PACKAGES=(
  build-essential cmake ninja-build ccache pkg-config clang-format
  clang libclang-rt-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libeigen3-dev libdnnl-dev libhwy-dev
  libflatbuffers-dev flatbuffers-compiler
  pybind11-dev libgloo-dev
  dataset-fashion-mnist
)
PY_PACKAGES=(numpy ml_dtypes pytest tqdm pybind11 ruff opencv-python-headless:cv2 pillow:PIL matplotlib)

missing=()
for p in "${DEB_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  SUDO=""
  [[ $(id -u) -ne 0 ]] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

PY=${PYTHON:-python3}
# Entries are pip names, or pip-name:import-name where the two differ.
pymissing=()
for entry in "${PY_PACKAGES[@]}"; do
  pipname=${entry%%:*}
  modname=${entry#*:}
  "$PY" -c "import $modname" 2>/dev/null || pymissing+=("$pipname")
done
if ((${#pymissing[@]})); then
  echo "setup: installing Python packages: ${pymissing[*]}"
  "$PY" -m pip install -q "${pymissing[@]}"
fi
echo "setup: all dependencies present"
