#!/usr/bin/env bash
# For a GPU machine that cannot build NeoMeg (no oneDNN, Highway, Gloo ... and no package
# registry, as this workplace's device machines): builds the C++ GPU tests and the Python
# extension here for one architecture and packs them with the system libraries they link that such
# a machine lacks, into gpucarry/nm.tar.xz (git-ignored through .git/info/exclude). Then, on the GPU
# machine, from the repository root with gpucarry/ beside it: `bash tests/gpu/run_prebuilt.sh`.
#
#   bash tests/gpu/pack_prebuilt.sh [arch=90] [python=python3.12 with numpy and pybind11]
set -euo pipefail
cd "$(dirname "$0")/../.."
ARCH=${1:-90}
PY=${2:-}
B=build-gpu$ARCH
cmake -S . -B "$B" -G Ninja -DCMAKE_BUILD_TYPE=Release -DNEOMEG_WERROR=ON \
  -DNEOMEG_CUDA_ARCHS="$ARCH-real" \
  $([[ -n $PY ]] && echo "-DNEOMEG_BUILD_PYTHON=ON -DPython3_EXECUTABLE=$PY" || echo "-DNEOMEG_BUILD_PYTHON=OFF")
cmake --build "$B" -j "$(nproc)"
P=$(mktemp -d)
mkdir -p "$P/bin" "$P/lib" gpucarry
BINS=("$B/dnn/test/neomeg_dnn_test" "$B/src/neomeg_core_test" "$B/src/distributed/neomeg_distributed_nccl_test")
cp "${BINS[@]}" "$P/bin/"
find "$B" -name 'libneomeg*.so' ! -name '*fake*' -exec cp {} "$P/lib/" \;
find "$B/python" -name '_imperative_rt*.so' -exec cp {} "$P/" \; 2>/dev/null || true
# What they link beyond glibc, libstdc++ and the CUDA libraries (those come from the GPU machine's
# own CUDA or PyTorch install): oneDNN, Highway, Gloo and its dependencies, OpenMP, OpenCL.
for b in "${BINS[@]}" "$P"/lib/*.so; do ldd "$b"; done | awk '$3 ~ /^\// {print $3}' | sort -u |
  grep -vE '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s)\.so|/usr/local/cuda|/build-gpu' |
  xargs -r -I{} cp -L {} "$P/lib/"
tar -cf - -C "$P" . | xz -T0 -6 >gpucarry/nm.tar.xz
rm -rf "$P"
grep -qx '/gpucarry/' .git/info/exclude 2>/dev/null || echo '/gpucarry/' >>.git/info/exclude
ls -la gpucarry/nm.tar.xz
