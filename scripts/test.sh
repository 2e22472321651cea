#!/usr/bin/env bash
# Installs dependencies, builds NeoMeg and runs every test suite. Safe to run repeatedly:
# the build directory and ccache make a second run incremental.
#   BUILD_DIR=build-asan NEOMEG_SANITIZE=ON scripts/test.sh   # the ASan+UBSan job
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== Python lint (ruff) =="
ruff check python bench dnn/ops imperative/ops imperative/opgen
ruff format --check python bench dnn/ops imperative/ops imperative/opgen

BUILD_DIR=${BUILD_DIR:-build}
JOBS=${JOBS:-$(nproc)}
SANITIZE=${NEOMEG_SANITIZE:-OFF}
# A sanitized extension cannot load into an uninstrumented Python: that job runs C++ tests only.
PYTHON_BINDINGS=ON
[[ $SANITIZE == ON ]] && PYTHON_BINDINGS=OFF
cmake -S . -B "$BUILD_DIR" -G Ninja \
  -DCMAKE_BUILD_TYPE=Release \
  -DNEOMEG_WERROR=ON \
  -DNEOMEG_BUILD_PYTHON=$PYTHON_BINDINGS \
  -DNEOMEG_SANITIZE="$SANITIZE"
cmake --build "$BUILD_DIR" -j "$JOBS"

echo "== C++ tests (ctest) =="
# Passing tests are not listed one by one; failures print their output, then ctest's summary.
ctest --test-dir "$BUILD_DIR" -j "$JOBS" --output-on-failure 2>&1 |
  grep -vE '^ *(Start +[0-9]+:|[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed)'


if [[ $PYTHON_BINDINGS == ON && -d python/test ]]; then
  echo "== Python tests (pytest) =="
  PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -q python/test
fi
