#!/usr/bin/env bash
# On a GPU machine without NeoMeg's build dependencies: runs what tests/gpu/pack_prebuilt.sh packed
# (the C++ GPU tests, then with the image's python3 the Python GPU tests, bench/gpu_ops.py against
# PyTorch (its convolution and ResNet-18 cases on both cuDNN paths, graph and legacy) and one
# ResNet-18 step under NEOMEG_DEBUG=1, which names each convolution's cuDNN engine and says why a
# case fell back to the legacy API). Logs go to $OUT. BENCH=0 skips the bench.
set -uo pipefail
OUT=${OUT:-/tmp/out}
REPO=$PWD
D=/tmp/nm; mkdir -p $D && tar -xJf gpucarry/nm.tar.xz -C $D
NV=$(python3 -c "import nvidia,os; print(list(nvidia.__path__)[0])" 2>/dev/null)
NVL=""; [ -n "$NV" ] && NVL=$(ls -d $NV/*/lib 2>/dev/null | tr '\n' ':')
export LD_LIBRARY_PATH=$D/lib:${NVL}/usr/local/cuda/lib64:/usr/local/cuda/lib:${LD_LIBRARY_PATH:-}
nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv,noheader
[ -n "$NV" ] && ls $NV | tr '\n' ' '; echo
for l in libcudnn.so.9 libcublas.so.13 libcusolver.so.12 libnccl.so.2 libcublasLt.so.13; do echo "$l: $(ldconfig -p | grep -c $l) $(ls $NV/*/lib/$l 2>/dev/null | head -1)"; done
cd $D/bin
run() { local name=$1; shift; local t=$1; shift
  timeout $t "$@" > $OUT/$name.log 2>&1; rc=$?
  echo "== $name rc=$rc: $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] [0-9]+ test|^\[  SKIPPED \] [0-9]+' $OUT/$name.log | tr '\n' ' ')"
  grep -E '^\[  FAILED  \] [A-Za-z]' $OUT/$name.log | head -40
  grep -E -B2 -A12 'Failure$' $OUT/$name.log | head -${FAILLINES:-150}
}
run dnn_cuda 240 ./neomeg_dnn_test --gtest_filter='Cuda.*:CudaHandle.*:CudaIndexedWalk.*:CudaResizeTap.*:CudaSvd*:Paths/CudaConv.*:CudaConvGraph*'
export NEOMEG_DEBUG=1; run dnn_cuda_debug 60 ./neomeg_dnn_test --gtest_filter='Cuda.DebugSwitch*'; unset NEOMEG_DEBUG
run core_cuda 60 ./neomeg_core_test --gtest_filter='CudaCompNode.*:CudaEnv.*:GraphDynamicCuda.*'
run dist_nccl 90 ./neomeg_distributed_nccl_test
# Python: the GPU-marked tests and the GPU benchmark against PyTorch, on the image's python3.
cd "$REPO"
cp $D/_imperative_rt.cpython-312-x86_64-linux-gnu.so python/megengine/core/
export PYTHONPATH=$REPO/python
python3 -c "import megengine as m; print('cuda', m.is_cuda_available(), m.get_device_count('gpu'), m.get_cudnn_version())" 2>&1 | tail -3
timeout ${T_PY:-150} python3 -m pytest -q -m gpu -p no:cacheprovider -rs python/test tests > $OUT/pytest.log 2>&1
echo "== pytest rc=$?: $(tail -n 1 $OUT/pytest.log)"
grep -E '^(FAILED|ERROR)|Error|assert' $OUT/pytest.log | head -30
[ "${BENCH:-1}" = 1 ] && timeout ${T_BENCH:-210} python3 bench/gpu_ops.py --iters 10 --timeout 60 > $OUT/bench.log 2>&1
echo "== bench rc=$?"; cat $OUT/bench.log | tail -60
NEOMEG_DEBUG=1 timeout 60 python3 tests/gpu/debug_step.py > $OUT/debug_step.log 2>&1
echo "== debug step rc=$?: $(grep -c . $OUT/debug_step.log) lines; warnings:"; grep -iE "warn" $OUT/debug_step.log | sort | uniq -c | sort -rn | head -10
grep "graph API declined" $OUT/debug_step.log | sort | uniq -c | head -10
grep -o "neomeg cuda: [A-Za-z]*\|kernel .*" $OUT/debug_step.log | paste - - | sed 's/neomeg cuda: //' | sort | uniq -c | sort -rn | head -40
tail -2 $OUT/debug_step.log
