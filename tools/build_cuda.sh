#!/usr/bin/env bash
# Builds asvcpp with CUDA and NCCL against the PyPI torch 2.11.0 wheel (the LibTorch of our GPU
# machines) in the project-local virtual environment .venv: compile and link every target,
# tests included. Runs on a machine without a GPU (nvcc and the CUDA 13 toolkit are needed).
#
#   tools/build_cuda.sh [extra cmake arguments]      # builds in build-cuda/
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tools/setup.sh --cuda
venv="${ASV_VENV:-$root/.venv}"
torch_root=$("$venv/bin/python" -c \
  'import importlib.util as u; print(u.find_spec("torch").submodule_search_locations[0])')
if ! command -v nvcc >/dev/null && [ -x /usr/local/cuda/bin/nvcc ]; then
  export PATH=/usr/local/cuda/bin:$PATH
fi
command -v nvcc >/dev/null || { echo "build_cuda: nvcc (CUDA 13 toolkit) not found" >&2; exit 1; }
build="${ASV_CUDA_BUILD_DIR:-build-cuda}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASV_WERROR=ON \
  -DCMAKE_PREFIX_PATH="$torch_root;$torch_root/share/cmake" \
  -DTORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0}" "$@" >/dev/null
cmake --build "$build" -j"${ASV_JOBS:-2}"
echo "build_cuda: CUDA build of asvcpp in $build is complete"
