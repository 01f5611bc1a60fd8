#!/usr/bin/env bash
# Builds asvcpp with CUDA and NCCL against the PyPI torch 2.11.0 wheel (the LibTorch of our GPU
# machines): compile and link every target, tests included. Runs on a machine without a GPU (nvcc
# and the CUDA 13 toolkit are needed). The wheel is installed once per machine, outside the clone
# (tools/setup.sh --cuda; ASV_VENV chooses the folder). The compile flags are the CPU build's
# (tools/build_common.sh), so with ccache the LibTorch-free sources come from the CPU build's
# objects and only the sources that include LibTorch are compiled again.
#
#   tools/build_cuda.sh [extra cmake arguments]      # builds in build-cuda/ (ASV_CUDA_BUILD_DIR)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source tools/build_common.sh
tools/setup.sh --cuda
torch_root=$("$asv_venv/bin/python" -c \
  'import importlib.util as u; print(u.find_spec("torch").submodule_search_locations[0])')
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
command -v nvcc >/dev/null || { echo "build_cuda: nvcc (CUDA 13 toolkit) not found" >&2; exit 1; }
build="${ASV_CUDA_BUILD_DIR:-build-cuda}"
cmake -S . -B "$build" "${asv_build_args[@]}" \
  -DCMAKE_PREFIX_PATH="$torch_root;$torch_root/share/cmake" \
  -DTORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" "$@" >/dev/null
cmake --build "$build" -j"$asv_jobs"
echo "build_cuda: CUDA build of asvcpp in $build is complete"
