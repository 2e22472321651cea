#!/usr/bin/env bash
# Builds dnn/bench/onednn_versions.cpp against Debian's oneDNN 2.6 (libdnnl-dev) and against
# oneDNN 3.2 from PyPI, then runs each case with 1 and 2 threads, `rounds` times, the two versions
# in turn (the machines here are shared: compare the best figures of several rounds).
#
#   bash dnn/bench/onednn_versions.sh [rounds=2] [repeat=10] [filter]
#
# oneDNN 3.2 is looked for in ONEDNN3_PREFIX (default: a virtual environment outside the
# project, made on first use with `pip install onednn-cpu-gomp==2023.2.0
# onednn-devel-cpu-gomp==2023.2.0`: the GNU-OpenMP CPU build with headers and a CMake config).
set -euo pipefail
cd "$(dirname "$0")"

ROUNDS=${1:-2}
REPEAT=${2:-10}
FILTER=${3:-}
PREFIX=${ONEDNN3_PREFIX:-$HOME/.cache/neomeg-references/onednn32-venv}
if [[ ! -f $PREFIX/include/oneapi/dnnl/dnnl.hpp ]]; then
  python3 -m venv "$PREFIX"
  "$PREFIX/bin/pip" install -q onednn-cpu-gomp==2023.2.0 onednn-devel-cpu-gomp==2023.2.0
fi
OUT=${TMPDIR:-/tmp}/neomeg-onednn-versions
mkdir -p "$OUT"
CXX=${CXX:-g++}
FLAGS=(-O2 -std=c++20 -Wall -Wextra -Werror)
"$CXX" "${FLAGS[@]}" onednn_versions.cpp -ldnnl -o "$OUT/onednn_v2"
"$CXX" "${FLAGS[@]}" -isystem "$PREFIX/include" onednn_versions.cpp -L"$PREFIX/lib" \
  -Wl,-rpath,"$PREFIX/lib" -ldnnl -o "$OUT/onednn_v3"

# Case by case, each version in turn, so that both see the same load on a shared machine.
mapfile -t CASES < <("$OUT/onednn_v2" list)
for name in "${CASES[@]}"; do
  [[ -n $FILTER && $name != *"$FILTER"* ]] && continue
  for threads in 1 2; do
    for ((r = 1; r <= ROUNDS; ++r)); do
      for v in v2 v3; do
        printf '%s t%s r%s ' "$v" "$threads" "$r"
        OMP_NUM_THREADS=$threads "$OUT/onednn_$v" "$REPEAT" "$name" | tail -n +2
      done
    done
  done
done
