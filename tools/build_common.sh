# Sourced by tools/test.sh, tools/demo.sh, tools/build_cuda.sh, tools/sanitize.sh and
# tools/fuzz_configs.sh: what their builds share, so that a build folder configured by one script
# is not rebuilt by another and the compiler cache (cmake/AsvCcache.cmake) serves one build's
# objects to the others.

# Parallel compile and test jobs: ASV_JOBS, or one per core.
asv_jobs="${ASV_JOBS:-$(nproc)}"

# The CPU build (build/) and the CUDA build (build-cuda/) compile with the same flags: the CUDA
# build's LibTorch-free sources are then cache hits of the CPU build's objects. No debug
# information (the sanitizer build keeps line tables for its reports): 10 % quicker to compile
# and a fifth of the disk; configure a build of your own for a debugger.
asv_build_args=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DASV_WERROR=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -DNDEBUG")

# asv_configure_cpu BUILD [cmake arguments]: configures the CPU build (Debian's LibTorch) in BUILD.
asv_configure_cpu() {
  local build=$1
  shift
  cmake -S . -B "$build" "${asv_build_args[@]}" -DASV_WITH_LIBAV=ON "$@" >/dev/null
}

# The torch 2.11.0 wheel of the CUDA build lives outside the clone, once per machine and user
# (tools/setup.sh --cuda installs it there and checks its version): ASV_VENV, or
# $XDG_CACHE_HOME/asvcpp/torch-2.11.0 (~/.cache/asvcpp/torch-2.11.0).
asv_venv="${ASV_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/asvcpp/torch-2.11.0}"

# ONNX Runtime for the ONNX export tests (tools/setup.sh installs it): a virtual environment
# outside the clone, once per machine and user; ASV_ONNXRUNTIME_VENV chooses another folder.
asv_onnxruntime_version=1.20.1
asv_onnxruntime_venv="${ASV_ONNXRUNTIME_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/asvcpp/onnxruntime-$asv_onnxruntime_version}"
