#!/usr/bin/env bash
# Configures and builds NeoMeg (C++ libraries, tests, and the Python extension, which the
# developer build also copies into python/megengine/core/). Incremental on a second run.
#   BUILD_DIR=build-asan NEOMEG_SANITIZE=ON scripts/build.sh   # ASan+UBSan, no Python extension
#   NEOMEG_CUDA_ARCHS=native scripts/build.sh   # CUDA kernels for this machine's GPU only
#   NEOMEG_CUDA_ARCHS= scripts/build.sh         # the release list (cmake/NeoMegCudaArchs.cmake)
set -euo pipefail
cd "$(dirname "$0")/.."

BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
SANITIZE=${NEOMEG_SANITIZE:-OFF}
# One GPU architecture unless asked otherwise: sm_80 SASS plus compute_80 PTX runs on every GPU
# from Ampere up, and compiling each kernel once keeps CI and development builds short.
CUDA_ARCHS=${NEOMEG_CUDA_ARCHS-80}
# A sanitized extension cannot load into an uninstrumented Python: that build has none.
PYTHON_BINDINGS=ON
[[ $SANITIZE == ON ]] && PYTHON_BINDINGS=OFF
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DNEOMEG_WERROR=ON \
  -DNEOMEG_BUILD_PYTHON=$PYTHON_BINDINGS \
  -DNEOMEG_SANITIZE="$SANITIZE" \
  -DNEOMEG_CUDA_ARCHS="$CUDA_ARCHS"
cmake --build "$BUILD_DIR" -j "$JOBS"
