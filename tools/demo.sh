#!/usr/bin/env bash
# The main job on the bundled demo data: builds asvrun, then works with the `demo` config of the
# voxceleb/xvector recipe (run_configs/voxceleb/xvector). Until the recipe's stages land this
# resolves and shows the config and what it would run, without running or recording anything.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
tools/setup.sh
build="${ASV_BUILD_DIR:-build}"
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target asvrun -j"${ASV_JOBS:-2}"
asvrun="$build/tools/asvrun/asvrun"

echo; echo "== configs of voxceleb/xvector"
"$asvrun" list voxceleb/xvector
echo; echo "== the resolved demo config, and where each value comes from"
"$asvrun" show voxceleb/xvector demo --explain
echo; echo "== what 'asvrun voxceleb/xvector demo' would run"
"$asvrun" voxceleb/xvector demo --dry-run
