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

echo "== A rebuild after the tests is a no-op =="
# The sources are globbed (CONFIGURE_DEPENDS), so a file a test or a generator leaves in a
# globbed folder would make every later build rerun CMake; a custom command that always runs would
# rebuild its dependents. Either shows here. (`ninja -n` always lists "Re-running CMake": a dry run
# cannot run CMake's glob check and assumes it fails; a real build reruns CMake only on a
# "GLOB mismatch".)
rebuild=$(cmake --build "$BUILD_DIR" 2>&1)
if grep -qvE '^(\[0/[0-9]+\] Re-checking globbed directories\.\.\.|ninja: no work to do\.)$' \
  <<<"$rebuild"; then
  echo "$rebuild"
  echo "the build was not up to date after the tests (a file in a globbed folder?)" >&2
  exit 1
fi
