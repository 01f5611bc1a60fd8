#!/usr/bin/env bash
# The main job on the bundled demo data: builds asvrun, generates the synthetic demo corpus
# (tools/make_demo_corpus.py, espeak-ng voices in VoxCeleb layouts) if it is missing, runs the
# `demo` config of voxceleb/xvector (stages 0-9: preparation, features, training, embeddings,
# PLDA scoring) and prints the EER table from the experiment database.
#
#   tools/demo.sh                   # everything
#   tools/demo.sh demo_larger       # another config (see run_configs/voxceleb/xvector/run_configs)
#   tools/demo.sh demo_aug          # after demo: augmentation (stage 2), then training on clean + augmented data
#   tools/demo.sh voxceleb/margin   # the margin recipe's demo: ECAPA-TDNN, AAM-softmax, on-the-fly augmentation
#   tools/demo.sh voxceleb/margin CONFIG
#   tools/demo.sh sitw/xvector      # x-vectors trained on the demo's VoxCeleb1 and VoxCeleb2 speakers,
#                                   # scored on its SITW eval lists (core-core and core-multi)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
source tools/build_common.sh
tools/setup.sh
build="${ASV_BUILD_DIR:-build}"
asv_configure_cpu "$build"   # as tools/test.sh does: one build folder serves both
cmake --build "$build" --target asvrun -j"$asv_jobs"
asvrun="$build/tools/asvrun/asvrun"
recipe=voxceleb/xvector
if [[ "${1:-}" == */* ]]; then
  recipe="$1"
  shift
fi
config="${1:-demo}"

python3 tools/make_demo_corpus.py --out demo_data
start=$(date +%s)
"$asvrun" "$recipe" "$config"
echo "demo: $recipe '$config' took $(( $(date +%s) - start )) s"
echo
"$asvrun" results --db "outputs/${recipe//\//_}/experiments.db" --config "$config"   # stage 5: evaluations during training; stage 9: final
