#!/usr/bin/env bash
# Configures and builds NeoMeg (C++ libraries, tests, and the Python extension, which the
# developer build also copies into python/megengine/core/). Incremental on a second run.
#   BUILD_DIR=build-asan NEOMEG_SANITIZE=ON scripts/build.sh   # ASan+UBSan, no Python extension
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
SANITIZE=${NEOMEG_SANITIZE:-OFF}
# A sanitized extension cannot load into an uninstrumented Python: that build has none.
PYTHON_BINDINGS=ON
[[ $SANITIZE == ON ]] && PYTHON_BINDINGS=OFF
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DNEOMEG_WERROR=ON \
  -DNEOMEG_BUILD_PYTHON=$PYTHON_BINDINGS \
  -DNEOMEG_SANITIZE="$SANITIZE"
cmake --build "$BUILD_DIR" -j "$JOBS"
