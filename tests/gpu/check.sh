#!/usr/bin/env bash
# The GPU check, for a machine with one NVIDIA GPU (and the toolkit, cuDNN and the build
# dependencies of scripts/setup.sh already installed): builds NeoMeg for the architecture of the
# GPU present, runs every GPU test (C++: ctest's CUDA, GPU and NCCL tests; Python: the tests marked
# `gpu`) and a short benchmark against PyTorch when it is importable (bench/gpu_ops.py), then
# prints a summary. Each step has a time limit so that the whole stays under 8 minutes on a
# fresh machine; a step that runs out says so in the summary.
#
#   bash tests/gpu/check.sh                 # build dir build-gpu (kept: a rerun is incremental)
#   BUILD_DIR=/tmp/b JOBS=8 bash tests/gpu/check.sh
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2

BUILD_DIR=${BUILD_DIR:-build-gpu}
JOBS=${JOBS:-$(nproc)}
LOG_DIR=${LOG_DIR:-$BUILD_DIR/gpu-check-logs}
# Seconds per step: configure + build, C++ tests, Python tests, benchmark (sum 450 s, leaving
# room for start-up within 8 minutes).
T_BUILD=${T_BUILD:-270}
T_CTEST=${T_CTEST:-45}
T_PYTEST=${T_PYTEST:-45}
T_BENCH=${T_BENCH:-90}

START=$(date +%s)
declare -a SUMMARY=()
FAILED=0
note() { SUMMARY+=("$1"); echo "== $1"; }
elapsed() { echo $(($(date +%s) - $1)); }

# ---- the GPU ----
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "tests/gpu/check.sh: nvidia-smi not found: this script needs a machine with an NVIDIA GPU" >&2
  exit 2
fi
GPU_INFO=$(nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | head -n 1)
CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
if [[ ! $CAP =~ ^[0-9]+$ ]]; then
  echo "tests/gpu/check.sh: could not read the GPU's compute capability (got '$CAP')" >&2
  exit 2
fi
mkdir -p "$LOG_DIR"
note "GPU: $GPU_INFO (sm_$CAP); nvcc $(/usr/local/cuda/bin/nvcc --version 2>/dev/null | sed -n 's/.*release \([0-9.]*\).*/\1/p')"

# ---- configure and build for this GPU only (SASS for sm_$CAP: no PTX JIT at run time) ----
export CCACHE_BASEDIR=$PWD
t=$(date +%s)
if timeout "$T_BUILD" bash -c "
  cmake -S . -B '$BUILD_DIR' -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEOMEG_WERROR=ON \
    -DNEOMEG_WITH_CUDA=ON -DNEOMEG_CUDA_ARCHS='${CAP}-real' -DNEOMEG_BUILD_PYTHON=ON \
    -DNEOMEG_BUILD_TESTS=ON &&
  cmake --build '$BUILD_DIR' -j '$JOBS'" >"$LOG_DIR/build.log" 2>&1; then
  note "build: ok in $(elapsed "$t") s (sm_$CAP)"
  BUILT=1
else
  rc=$?
  why="failed (exit $rc)"
  [[ $rc == 124 ]] && why="timed out after $T_BUILD s"
  note "build: $why; last lines of $LOG_DIR/build.log:"
  tail -n 15 "$LOG_DIR/build.log" | sed 's/^/    /'
  SUMMARY+=("$(tail -n 3 "$LOG_DIR/build.log" | sed 's/^/    /')")
  BUILT=0
  FAILED=1
fi

if [[ $BUILT == 1 ]]; then
  # The freshly built extension, as scripts/build.sh does for the developer build.
  cp "$BUILD_DIR"/python/_imperative_rt*.so python/megengine/core/ 2>/dev/null ||
    find "$BUILD_DIR" -name '_imperative_rt*.so' -exec cp {} python/megengine/core/ \;
  export PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}"

  # ---- the environment as NeoMeg sees it ----
  ENV_LINE=$(python3 -c "
import megengine as m
from megengine.core import _imperative_rt as rt
print(f'cuda_available={m.is_cuda_available()} devices={m.get_device_count(\"gpu\")} '
      f'sm={m.get_cuda_compute_capability(0) if m.is_cuda_available() else None} '
      f'cuda={m.get_cuda_version()} runtime={rt.get_cuda_runtime_version()} '
      f'driver={m.get_cuda_driver_version()} cudnn={m.get_cudnn_version()} '
      f'kernels={rt.cuda_kernels_available()}')" 2>&1 | tail -n 1)
  note "NeoMeg: $ENV_LINE"

  # ---- C++ GPU tests ----
  t=$(date +%s)
  timeout "$T_CTEST" ctest --test-dir "$BUILD_DIR" -R '[Cc][Uu][Dd][Aa]|[Gg][Pp][Uu]|[Nn][Cc][Cc][Ll]' -j 4 \
    --output-on-failure >"$LOG_DIR/ctest.log" 2>&1
  rc=$?
  line=$(grep -E 'tests passed|No tests were found' "$LOG_DIR/ctest.log" | tail -n 1)
  skipped=$(grep -c 'Skipped' "$LOG_DIR/ctest.log")
  [[ $rc == 124 ]] && line="timed out after $T_CTEST s; $line"
  note "C++ GPU tests: ${line:-see $LOG_DIR/ctest.log} ($skipped skipped) in $(elapsed "$t") s"
  if [[ $rc != 0 ]]; then
    FAILED=1
    grep -E '\(Failed\)|\(Timeout\)|\*\*\*' "$LOG_DIR/ctest.log" | head -n 20 | sed 's/^/    /'
  fi

  # ---- Python GPU tests ----
  t=$(date +%s)
  timeout "$T_PYTEST" python3 -m pytest -q -m gpu -p no:cacheprovider python/test tests \
    >"$LOG_DIR/pytest.log" 2>&1
  rc=$?
  line=$(tail -n 1 "$LOG_DIR/pytest.log")
  [[ $rc == 124 ]] && line="timed out after $T_PYTEST s"
  note "Python GPU tests: $line in $(elapsed "$t") s"
  if [[ $rc != 0 && $rc != 5 ]]; then # 5: nothing collected
    FAILED=1
    grep -E '^(FAILED|ERROR)' "$LOG_DIR/pytest.log" | head -n 20 | sed 's/^/    /'
  fi

  # ---- benchmark ----
  t=$(date +%s)
  timeout "$T_BENCH" python3 bench/gpu_ops.py --iters 10 --timeout $((T_BENCH / 2 - 5)) \
    >"$LOG_DIR/bench.log" 2>&1
  rc=$?
  if [[ $rc == 124 ]]; then
    note "benchmark: timed out after $T_BENCH s"
  else
    note "benchmark ($(elapsed "$t") s):"
  fi
  SUMMARY+=("$(sed 's/^/    /' "$LOG_DIR/bench.log")")
fi

echo
echo "================ GPU check summary ($(elapsed "$START") s) ================"
printf '%s\n' "${SUMMARY[@]}"
echo "logs: $LOG_DIR"
if [[ $FAILED == 0 ]]; then echo "RESULT: PASS"; else echo "RESULT: FAIL"; fi
exit "$FAILED"
