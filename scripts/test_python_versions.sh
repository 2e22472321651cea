#!/usr/bin/env bash
# Runs the Python tests under Python and NumPy versions other than the one scripts/test.sh uses
# (the machine's python3 with whatever NumPy pip gives it, today the newest 2.x). Each argument is
# PYTHON[:NUMPY_REQUIREMENT]; without arguments, the two ends of the supported range that the
# machine has: pyenv's 3.13 with the newest NumPy, and pyenv's 3.11 with NumPy 1.24.
#   bash scripts/test_python_versions.sh
#   bash scripts/test_python_versions.sh /usr/bin/python3.12:'numpy<2'
#   PYTEST_ARGS="python/test/core tests/ops" bash scripts/test_python_versions.sh   # a subset
# Each version gets a venv outside the tree ($NEOMEG_PYVENVS, /tmp/neomeg-pyvenvs by default). An
# interpreter other than the one scripts/build.sh built for gets a CMake build directory of its
# own (build-py<version>) that builds the extension and the libraries it links, no C++ tests:
# after scripts/build.sh, ccache compiles only the extension's sources (about 10 minutes on 2
# cores). The extension is copied into python/megengine/core/ beside the main build's; its file
# name carries the interpreter's ABI tag, so each interpreter imports its own.
set -euo pipefail
cd "$(dirname "$0")/.."

VENVS=${NEOMEG_PYVENVS:-/tmp/neomeg-pyvenvs}
JOBS=${JOBS:-$(nproc)}
MAIN_BUILD=${BUILD_DIR:-build}
# Paths relative to the build directory in ccache's keys, so build-py*/ shares build/'s objects.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD}
# Paths separated by spaces or newlines.
read -r -d '' -a PYTEST_ARGS <<<"${PYTEST_ARGS:-python/test tests}" || true
if (($# == 0)); then
  set -- "$HOME/.pyenv/versions/3.13.0/bin/python3:numpy" \
    "$HOME/.pyenv/versions/3.11.7/bin/python3:numpy==1.24.*"
fi

summary=()
status=0
for spec in "$@"; do
  python=${spec%%:*}
  numpy=numpy
  [[ $spec == *:* ]] && numpy=${spec#*:}
  if [[ ! -x $python ]]; then
    echo "== $python: not found, skipped =="
    summary+=("$spec: skipped (no such interpreter)")
    continue
  fi
  pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  tag="py${pyver/./}-$(echo "$numpy" | tr -c 'A-Za-z0-9.\n' '_')"
  venv="$VENVS/$tag"
  echo "== Python $pyver, $numpy: venv $venv =="
  [[ -x $venv/bin/python ]] || "$python" -m venv "$venv"
  # opencv, Pillow and matplotlib: the data transforms and their tests; pybind11: the build.
  "$venv/bin/python" -m pip install -q "$numpy" ml_dtypes pytest tqdm pybind11 pillow matplotlib \
    opencv-python-headless
  "$venv/bin/python" -c 'import numpy, sys; print("Python", sys.version.split()[0], "NumPy", numpy.__version__)'

  # A venv of the interpreter scripts/build.sh built for (python3) uses that build's extension.
  base=$("$venv/bin/python" -c 'import sys; print(sys.base_prefix)')
  if [[ $base == "$(python3 -c 'import sys; print(sys.base_prefix)')" && -d $MAIN_BUILD ]]; then
    build=$MAIN_BUILD
  else
    build="build-py${pyver/./}"
    cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEOMEG_WERROR=ON \
      -DNEOMEG_BUILD_PYTHON=ON -DNEOMEG_BUILD_TESTS=OFF \
      -DNEOMEG_CUDA_ARCHS="${NEOMEG_CUDA_ARCHS-80}" -DPython3_EXECUTABLE="$venv/bin/python" >/dev/null
  fi
  cmake --build "$build" -j "$JOBS" --target _imperative_rt

  if PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" "$venv/bin/python" -m pytest -q \
    -p no:cacheprovider "${PYTEST_ARGS[@]}"; then
    summary+=("Python $pyver, $numpy: passed")
  else
    summary+=("Python $pyver, $numpy: FAILED")
    status=1
  fi
done

echo "== Summary =="
printf '%s\n' "${summary[@]}"
exit $status
