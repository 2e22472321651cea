#!/usr/bin/env bash
# Fuzzes the model loader with libFuzzer for a bounded time (scripts/test.sh runs it; a finding
# fails). Its own small build directory, configured with clang and -fsanitize=fuzzer,address,
# compiles only what the loader needs (the naive kernels, the graph runtime, the model file) and
# reuses ccache. The seed corpus is the C++ example model plus small models dumped by
# megengine.jit.trace (tests/fuzz/write_seed_models.py) when the Python extension is built, and
# the small MegEngine-written .mge files of src/test/fixtures/mge.
# Safe to run again: the corpus and the findings directory are made afresh each run.
#   NEOMEG_FUZZ_SECONDS=600 scripts/fuzz.sh   # fuzz longer (0 skips)
#   FUZZ_BUILD_DIR=build-fuzz                  # where it builds
set -euo pipefail
cd "$(dirname "$0")/.."

SECONDS_TO_FUZZ=${NEOMEG_FUZZ_SECONDS:-60}
FUZZ_DIR=${FUZZ_BUILD_DIR:-build-fuzz}
CXX_FUZZ=${FUZZ_CXX:-clang++}

if [[ ! $SECONDS_TO_FUZZ =~ ^[0-9]+$ ]]; then
  echo "fuzz: NEOMEG_FUZZ_SECONDS must be a whole number of seconds, got '$SECONDS_TO_FUZZ'" >&2
  exit 2
fi
echo "== Model loader fuzzing (libFuzzer, ${SECONDS_TO_FUZZ} s) =="
if [[ $SECONDS_TO_FUZZ == 0 ]]; then
  echo "fuzz: skipped (NEOMEG_FUZZ_SECONDS=0)"
  exit 0
fi
if ! command -v "$CXX_FUZZ" >/dev/null; then
  echo "fuzz: SKIPPED: $CXX_FUZZ not found; libFuzzer needs clang (Debian: apt-get install clang libclang-rt-dev)"
  exit 0
fi
# clang without its runtime libraries cannot link a fuzzer: say so instead of failing the build.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
echo 'extern "C" int LLVMFuzzerTestOneInput(const unsigned char*, unsigned long) { return 0; }' >"$probe/p.cpp"
if ! "$CXX_FUZZ" -fsanitize=fuzzer,address "$probe/p.cpp" -o "$probe/p" 2>"$probe/err"; then
  echo "fuzz: SKIPPED: $CXX_FUZZ cannot link -fsanitize=fuzzer,address (Debian: apt-get install libclang-rt-dev):"
  sed 's/^/  /' "$probe/err" | head -5
  exit 0
fi

start=$(date +%s)
cmake -S . -B "$FUZZ_DIR" -G Ninja -Wno-dev \
  -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_CXX_COMPILER="$CXX_FUZZ" \
  -DNEOMEG_FUZZ=ON -DNEOMEG_WERROR=ON \
  -DNEOMEG_WITH_DNNL=OFF -DNEOMEG_WITH_CUDA=OFF -DNEOMEG_WITH_GLOO=OFF \
  -DNEOMEG_BUILD_TESTS=OFF -DNEOMEG_BUILD_PYTHON=OFF >/dev/null
cmake --build "$FUZZ_DIR" -j "${JOBS:-$(nproc)}" --target model_loader_fuzzer write_example_model
echo "fuzz: build took $(($(date +%s) - start)) s"

corpus=$FUZZ_DIR/fuzz_corpus
findings=$FUZZ_DIR/fuzz_findings
rm -rf "$corpus" "$findings"
mkdir -p "$corpus" "$findings"
"$FUZZ_DIR/src/write_example_model" "$corpus/example_classifier.nmeg"
if PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 -c "import megengine" 2>/dev/null; then
  PYTHONPATH="$PWD/python${PYTHONPATH:+:$PYTHONPATH}" python3 tests/fuzz/write_seed_models.py "$corpus"
else
  echo "fuzz: the megengine package is not built here: seeding with the C++ example model only"
fi
# Models the real MegEngine 1.13 dumped (the .mge importer's test data), those within -max_len.
find src/test/fixtures/mge -name '*.mge' -size -4097c -exec cp {} "$corpus/" \;
ls -l "$corpus" | tail -n +2 | awk '{print "fuzz: seed " $NF " (" $5 " bytes)"}'

# -timeout: one input running longer than this is a finding (a hang). -max_len lets inputs grow
# past the largest seed. Inputs found are kept in the corpus directory; a crashing input is
# written to $findings.
if ! "$FUZZ_DIR/src/model_loader_fuzzer" -max_total_time="$SECONDS_TO_FUZZ" -timeout=20 \
  -max_len=4096 -print_final_stats=1 -artifact_prefix="$findings/" "$corpus" 2>"$FUZZ_DIR/fuzz.log"; then
  tail -n 60 "$FUZZ_DIR/fuzz.log"
  echo "fuzz: FAILED: the input that failed is in $findings/; rerun it with"
  echo "  $FUZZ_DIR/src/model_loader_fuzzer $findings/<file>"
  exit 1
fi
grep -E '^(Done|stat::number_of_executed_units|stat::peak_rss_mb)' "$FUZZ_DIR/fuzz.log" | sed 's/^/fuzz: /'
echo "fuzz: no finding"
