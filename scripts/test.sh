#!/usr/bin/env bash
# Installs dependencies, builds NeoMeg and runs every test suite. Safe to run repeatedly:
# the build directory and ccache make a second run incremental.
#   BUILD_DIR=build-asan NEOMEG_SANITIZE=ON scripts/test.sh   # the ASan+UBSan job (C++ tests)
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh

echo "== Python lint (ruff) =="
PY_SOURCES=(python tests bench examples dnn/ops src/ops src/opgen)
ruff check "${PY_SOURCES[@]}"
ruff format --check "${PY_SOURCES[@]}"

echo "== C++ format (clang-format) =="
git ls-files '*.cpp' '*.h' '*.cu' '*.cuh' | xargs clang-format --dry-run --Werror

bash scripts/build.sh
BUILD_DIR=${BUILD_DIR:-build}

echo "== C++ tests (ctest) =="
# Passing tests are not listed one by one; failures print their output, then ctest's summary.
ctest --test-dir "$BUILD_DIR" -j "${JOBS:-$(nproc)}" --output-on-failure 2>&1 |
  grep -vE '^ *(Start +[0-9]+:|[0-9]+/[0-9]+ Test +#[0-9]+: .* Passed)'

if [[ ${NEOMEG_SANITIZE:-OFF} != ON ]]; then
  echo "== Python tests (pytest): unit tests, then cross-layer and end-to-end tests =="
  PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -m pytest -q python/test tests
  echo "== Python tests under NumPy 1.x: the NumPy-facing ones =="
  # pyproject.toml promises NumPy 1.24 to 2.x and the run above has pip's newest. These tests are
  # where the two differ (ndarray conversion, pickled ndarrays in checkpoints, results against
  # NumPy's, values printed by the docstring examples); the same interpreter and extension, in a
  # venv with NumPy 1.x: about a minute. scripts/test_python_versions.sh runs everything on other
  # Pythons and NumPys.
  PYTEST_ARGS="python/test/core python/test/functional python/test/test_docstrings.py
    python/test/test_megengine_checkpoints.py python/test/test_serialization.py
    python/test/test_serialization_dmap.py python/test/data/test_transform.py" \
    bash scripts/test_python_versions.sh "$(command -v python3):numpy<2"
  # The model loader under libFuzzer (its own clang build, seeded with models the Python
  # package dumps); once, in this job rather than the sanitizer one.
  bash scripts/fuzz.sh
fi
