#!/usr/bin/env bash
# Installs everything asvcpp needs on a bare Debian 12 machine (run as root, or with sudo
# available). Idempotent: installs only what is missing.
#
#   tools/setup.sh           # build and test dependencies (CPU build with Debian's LibTorch 1.13)
#   tools/setup.sh --cuda    # also the torch 2.11.0 wheel, for tools/build_cuda.sh: once per
#                            # machine, in ~/.cache/asvcpp/torch-2.11.0 (ASV_VENV chooses another
#                            # folder; ASV_TORCH_FULL=1: with all of torch's PyPI dependencies)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

packages=(
  build-essential cmake ninja-build ccache pkg-config git ca-certificates python3 python3-venv python3-pip
  libtorch-dev libgloo-dev
  tao-pegtl-dev libfmt-dev libsqlite3-dev sqlite3 libssl-dev libgtest-dev libgmock-dev libcli11-dev
  nlohmann-json3-dev libyaml-cpp-dev libsndfile1-dev libsoxr-dev libcairo2-dev libavformat-dev libavcodec-dev libavutil-dev
  espeak-ng ffmpeg libopenblas0-pthread libblas-dev liblapack-dev
  clang libclang-rt-14-dev  # tools/fuzz_configs.sh (libFuzzer)
  libjs-chart.js chromium  # asvrun report: Chart.js inlined into the page; its browser test
  python3-torch python3-yaml  # torchrun of the PyTorch whose LibTorch asvrun links; WeSpeaker checkpoints in tests
  python3-torchaudio  # tools/bench/embed_throughput.py and tools/golden/make_wespeaker_audio_golden.py
  slurm-wlm munge  # asvrun --slurm: tests/tools/slurm_e2e_test.cc starts a one-node cluster (as root)
  libonnx-dev  # ONNX export (asvcpp/deploy): ONNX's protobuf classes, checker and shape inference
  libpq-dev postgresql  # the PostgreSQL experiment store (libpq); its tests start a PostgreSQL 15 server
)
cuda=0
for arg in "$@"; do
  case "$arg" in
    --cuda) cuda=1 ;;
    *) echo "usage: $0 [--cuda]" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  echo "setup: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# ONNX Runtime (PyPI; Debian has none) for the tests that run asvcpp's exported ONNX graphs, in a
# virtual environment of its own, once per machine and user (as the torch wheel below).
source "$root/tools/build_common.sh"
ort_venv="$asv_onnxruntime_venv"
mkdir -p "$(dirname "$ort_venv")"
exec {ort_lock}>"$ort_venv.lock"
flock "$ort_lock"
if [ ! -f "$ort_venv/.asvcpp-onnxruntime-$asv_onnxruntime_version-complete" ]; then
  echo "setup: installing onnxruntime==$asv_onnxruntime_version into $ort_venv"
  [ -x "$ort_venv/bin/python" ] || python3 -m venv "$ort_venv"
  "$ort_venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir "onnxruntime==$asv_onnxruntime_version"
  touch "$ort_venv/.asvcpp-onnxruntime-$asv_onnxruntime_version-complete"
fi
exec {ort_lock}>&-

if [ "$cuda" -eq 1 ]; then
  venv="$asv_venv"
  mkdir -p "$(dirname "$venv")"
  # One install per machine and user, shared by every clone: concurrent set-ups wait for each
  # other, and an install counts only once it has finished (an interrupted one is redone).
  exec {lock}>"$venv.lock"
  flock "$lock"
  done_mark="$venv/.asvcpp-torch-2.11.0-complete"
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  pip=("$venv/bin/pip" install -q --disable-pip-version-check --no-cache-dir)
  if [ "${ASV_TORCH_FULL:-0}" = 1 ]; then
    # Also completes an earlier install without dependencies (pip adds only what is missing).
    echo "setup: torch==2.11.0 with all its dependencies in $venv"
    "${pip[@]}" torch==2.11.0
    touch "$done_mark"
  elif [ ! -f "$done_mark" ]; then
    # Building needs LibTorch, not the Python package's dependencies (triton, sympy, ...), and
    # the CUDA libraries it links to come from the machine's CUDA 13 toolkit where it has them
    # (cuBLAS, cuFFT, cuDNN, NCCL, ...): 1.5 GB instead of 4.6 GB plus pip's download cache.
    # The toolkit lacks cuSPARSELt, NVSHMEM and cuFile; their wheels are the versions torch
    # 2.11.0 pins. Whatever is still unresolved after that brings the full install.
    echo "setup: installing torch==2.11.0 into $venv (without its Python dependencies)"
    "${pip[@]}" --no-deps torch==2.11.0 nvidia-cusparselt-cu13==0.8.0 nvidia-nvshmem-cu13==3.4.5 \
      nvidia-cufile==1.15.1.6
    torch_lib=$("$venv/bin/python" -c \
      'import importlib.util as u; print(u.find_spec("torch").submodule_search_locations[0])')/lib
    unresolved=$(for lib in libtorch.so libtorch_cpu.so libtorch_cuda.so libc10_cuda.so; do
                   ldd "$torch_lib/$lib" | grep 'not found' || true
                 done)
    if [ -n "$unresolved" ]; then
      echo "setup: not on this machine:" $unresolved "- installing torch's dependencies"
      "${pip[@]}" torch==2.11.0
    fi
    have=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("torch"))')
    [ "${have%%+*}" = "2.11.0" ] || { echo "setup: $venv holds torch $have, not 2.11.0" >&2; exit 1; }
    touch "$done_mark"
  fi
  exec {lock}>&-
fi
echo "setup: ok"
