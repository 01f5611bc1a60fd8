#!/usr/bin/env bash
# Prepares, on the development machine, what the GPU acceptance check (gpu_check.py) needs on a
# bare GPU machine that has only PyTorch (CUDA, NCCL), CMake, ninja and nvcc, within 64 MiB:
#   .devdeps/     the Debian build dependencies the GPU machine lacks, unpacked (apt-get download,
#                 dpkg -x): PEGTL, fmt, SQLite, GoogleTest, CLI11, nlohmann-json, libsndfile, soxr,
#                 the reference BLAS/LAPACK and pkgconf, with their runtime libraries (and the
#                 pkg-config files of libsndfile's codecs, which pkgconf insists on). FFmpeg's
#                 libraries are left out (several hundred MB with their codecs): the GPU build is
#                 configured with -DASV_WITH_LIBAV=OFF.
#   .gpu_check/   the tiny corpus of tools/make_demo_corpus.py --small after stages 0-2 of
#                 voxceleb/xvector (config gc_data of tools/gpu_check/configs/run_configs): lists,
#                 MFCCs, VAD, augmented copies; the audio itself is left out. Beside it the same
#                 corpus after stages 0-1 of voxceleb/margin (config mc_data of
#                 tools/gpu_check/configs/margin_run_configs): lists and the PCM stores of
#                 voxceleb1 and voxceleb2 (out_margin/), and the tiny MUSAN and the simulated
#                 rooms of RIRS_NOISES that its training stage augments with (corpus/), and the
#                 corpus's voxceleb1 part, 12 recordings (about 2 MB) and veri_test.txt, that
#                 asvrun embed and verify run on (embed_audio/voxceleb1/). With a
#                 WeSpeaker git directory (ASV_WESPEAKER_GIT_DIR, default
#                 /work/.mirror/wenet-e2e+wespeaker/repo), also WeSpeaker's four model files for
#                 the benchmark peers tools/bench/peers/margin_step.py and embed_loop.py
#                 (wespeaker/; fetched reference code, never committed: .gpu_check is
#                 git-ignored), and torchaudio's compliance/kaldi.py from Debian's
#                 python3-torchaudio (torchaudio_kaldi/), WeSpeaker's fbank for embed_loop.py
#                 where the GPU machine's PyTorch comes without torchaudio.
# Both folders are git-ignored; send them along with the working tree. Needs the CPU build of
# asvrun (tools/test.sh or tools/demo.sh build it into build/; ASV_BUILD_DIR chooses another
# build folder, ASV_ASVRUN another asvrun). ASV_TINY_CORPUS names a corpus that
# tools/make_demo_corpus.py --small made earlier, to be copied instead of made again.
#
#   tools/gpu_check/prepare.sh                  # both, then prints their sizes
#   tools/gpu_check/prepare.sh --data [DEST]    # only the data, into DEST (default .gpu_check)
#   tools/gpu_check/prepare.sh --bundle         # only .devdeps/
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
what=all
data_dest="$root/.gpu_check"
case "${1:-}" in
  "") ;;
  --data) what=data; [ -n "${2:-}" ] && data_dest=$(realpath -m "$2") ;;  # relative to the caller's folder
  --bundle) what=bundle ;;
  *) echo "usage: $0 [--data [DEST]|--bundle]" >&2; exit 2 ;;
esac
cd "$root"

make_bundle() {
  local dest=.devdeps
  local pkgs=(
    tao-pegtl-dev libfmt-dev libfmt9 libsqlite3-dev libsqlite3-0
    libgtest-dev libgmock-dev libcli11-dev nlohmann-json3-dev
    libsndfile1-dev libsndfile1 libflac12 libvorbis0a libvorbisenc2 libogg0 libopus0 libmpg123-0 libmp3lame0
    libflac-dev libogg-dev libvorbis-dev libopus-dev libmpg123-dev
    libsoxr-dev libsoxr0 libgomp1
    liblapack-dev liblapack3 libblas-dev libblas3 libgfortran5 libquadmath0
    pkgconf-bin libpkgconf3
    libssl-dev libssl3
  )
  rm -rf "$dest.tmp"
  mkdir -p "$dest.tmp/debs" "$dest.tmp/root"
  if [ -z "$(ls /var/lib/apt/lists 2>/dev/null | grep -v -e lock -e partial)" ]; then apt-get update -qq; fi
  (cd "$dest.tmp/debs" && apt-get download -qq -o APT::Sandbox::User=root "${pkgs[@]}")
  for f in "$dest.tmp"/debs/*.deb; do dpkg -x "$f" "$dest.tmp/root"; done
  rm -rf "$dest.tmp/debs"
  # Debian picks its BLAS/LAPACK through /etc/alternatives, which dpkg -x does not set up: link
  # the reference libraries where the linker and the loader look.
  local lib="$dest.tmp/root/usr/lib/x86_64-linux-gnu"
  for impl in blas lapack; do
    for so in "$lib/$impl"/lib$impl.so*; do
      [ -e "$so" ] && ln -sf "$impl/$(basename "$so")" "$lib/$(basename "$so")"
    done
    rm -f "$lib/$impl"/*.a "$lib/lib${impl}_pic.a"
  done
  rm -f "$lib/libsqlite3.a" "$lib/libssl.a" "$lib/libcrypto.a"
  rm -rf "$dest.tmp/root/usr/share/doc" "$dest.tmp/root/usr/share/man" "$dest.tmp/root/usr/share/lintian"
  rm -rf "$dest"
  mv "$dest.tmp" "$dest"
}

# WeSpeaker's model files for tools/bench/peers/margin_step.py --wespeaker-checkout DEST, from a
# WeSpeaker git directory when there is one (a message otherwise: gpu_check.py then skips the
# comparison).
copy_wespeaker() {
  local dest=$1 git_dir="${ASV_WESPEAKER_GIT_DIR:-/work/.mirror/wenet-e2e+wespeaker/repo}"
  local commit=dfa741957e5c11f477623b6e583d67d0af25ee88 f
  if ! git --git-dir="$git_dir" cat-file -e "$commit^{commit}" 2>/dev/null; then
    echo "prepare: no WeSpeaker git directory with commit $commit at $git_dir (ASV_WESPEAKER_GIT_DIR):" \
         "wespeaker/ left out, gpu_check.py's bench_margin will skip" >&2
    return 0
  fi
  mkdir -p "$dest/wespeaker/models"
  for f in resnet ecapa_tdnn pooling_layers projections; do
    git --git-dir="$git_dir" show "$commit:wespeaker/models/$f.py" > "$dest/wespeaker/models/$f.py"
  done
  # Empty package files: the upstream ones import models the peer does not need.
  : > "$dest/wespeaker/__init__.py"
  : > "$dest/wespeaker/models/__init__.py"
  echo "WeSpeaker $commit (github.com/wenet-e2e/wespeaker), fetched reference code: never commit" > "$dest/SOURCE"
}

make_data() {
  local asvrun="${ASV_ASVRUN:-$root/${ASV_BUILD_DIR:-build}/tools/asvrun/asvrun}"
  [ -x "$asvrun" ] || { echo "prepare: $asvrun not found: build asvrun first (tools/test.sh)" >&2; exit 1; }
  local scratch="$data_dest.tmp"
  rm -rf "$scratch"
  mkdir -p "$scratch"
  if [ -n "${ASV_TINY_CORPUS:-}" ]; then
    cp -r "$ASV_TINY_CORPUS" "$scratch/corpus"   # one made earlier by make_demo_corpus.py --small
  else
    python3 tools/make_demo_corpus.py --small --out "$scratch/corpus" >/dev/null
  fi
  (cd "$scratch" && "$asvrun" voxceleb/xvector gc_data --init-config "$root/tools/gpu_check/configs/init_config" \
     --run-configs "$root/tools/gpu_check/configs/run_configs" >prepare.log 2>&1) ||
    { cat "$scratch/prepare.log" >&2; exit 1; }
  (cd "$scratch" && "$asvrun" voxceleb/margin mc_data --init-config "$root/tools/gpu_check/configs/margin_init_config" \
     --run-configs "$root/tools/gpu_check/configs/margin_run_configs" >prepare.log 2>&1) ||
    { cat "$scratch/prepare.log" >&2; exit 1; }
  # What stages 5-9 read: the lists and features (out/datasets); voxceleb/margin's lists and PCM
  # stores (out_margin/datasets_margin) and what its training augments with: MUSAN's three sets
  # and RIRS_NOISES' smallroom and mediumroom (augment::SimulatedRoomRirs); voxceleb1's recordings
  # for asvrun embed and verify. Not the rest of the audio, the databases, the runs' own folders
  # or the log.
  mv "$scratch/corpus" "$scratch/corpus.all"
  mkdir -p "$scratch/corpus/RIRS_NOISES/simulated_rirs" "$scratch/embed_audio"
  mv "$scratch/corpus.all/voxceleb1" "$scratch/embed_audio/voxceleb1"
  mv "$scratch/corpus.all/musan" "$scratch/corpus/musan"
  for room in smallroom mediumroom; do
    mv "$scratch/corpus.all/RIRS_NOISES/simulated_rirs/$room" "$scratch/corpus/RIRS_NOISES/simulated_rirs/$room"
  done
  rm -rf "$scratch/corpus.all" "$scratch/prepare.log" "$scratch/out/gc_data" "$scratch"/out/experiments.db* \
    "$scratch/out_margin/mc_data" "$scratch"/out_margin/experiments.db*
  [ -f "$scratch/out/datasets/voxceleb2_cat_combined/lists/feats.scp" ] ||
    { echo "prepare: stages 0-2 left no voxceleb2_cat_combined features in $scratch/out/datasets" >&2; exit 1; }
  for dataset in voxceleb1 voxceleb2; do
    [ -f "$scratch/out_margin/datasets_margin/$dataset/pcm/header" ] ||
      { echo "prepare: voxceleb/margin's stage 1 left no PCM store of $dataset in $scratch/out_margin" >&2; exit 1; }
  done
  # The lists name features and audio by absolute path: gpu_check.py puts its work folder in for
  # this (the PCM stores name none).
  find "$scratch/out/datasets" -name '*.scp' -exec sed -i "s|$scratch/|@GPU_CHECK_WORK@/|g" {} +
  find "$scratch/out_margin/datasets_margin" -path '*/lists/*' -type f -exec sed -i "s|$scratch/|@GPU_CHECK_WORK@/|g" {} +
  copy_wespeaker "$scratch/wespeaker"
  local kaldi=/usr/lib/python3/dist-packages/torchaudio/compliance/kaldi.py
  if [ -f "$kaldi" ]; then
    mkdir -p "$scratch/torchaudio_kaldi"
    cp "$kaldi" "$scratch/torchaudio_kaldi/kaldi.py"
    echo "torchaudio/compliance/kaldi.py of Debian's python3-torchaudio $(dpkg-query -W -f='${Version}' python3-torchaudio 2>/dev/null), fetched reference code: never commit" \
      > "$scratch/torchaudio_kaldi/SOURCE"
  else
    echo "prepare: no $kaldi (tools/setup.sh installs python3-torchaudio): gpu_check.py's bench_embed needs torchaudio on the GPU machine" >&2
  fi
  echo "tiny corpus of tools/make_demo_corpus.py --small after stages 0-2 (config gc_data) and voxceleb/margin's stages 0-1 (config mc_data), $(date -u +%FT%TZ)" \
    > "$scratch/PREPARED"
  rm -rf "$data_dest"
  mv "$scratch" "$data_dest"
}

[ "$what" = data ] || make_bundle
[ "$what" = bundle ] || make_data
if [ "$what" != bundle ]; then
  (cd "$data_dest" && du -sh out out_margin corpus embed_audio $( [ -d wespeaker ] && echo wespeaker torchaudio_kaldi)) | sed 's/^/prepare:   /'
  du -sh "$data_dest" | sed 's/^/prepare: /'
fi
[ "$what" = data ] || du -sh .devdeps | sed 's/^/prepare: /'
[ "$what" = all ] && du -csh "$data_dest" .devdeps | tail -1 | sed 's/^/prepare: in all (the device transfer takes 64 MiB): /'
exit 0
