#!/usr/bin/env python3
r"""Writes the state-dict layout of ASVtorch's x-vector network classes (every key in order, with
its shape and dtype) as JSON: the golden file that asvcpp's `asvrun export --format asvtorch`
(asvcpp/models/asvtorch_model.h) is tested against.

This is how tests/asvcpp/models/golden/asvtorch_xvector_state.json was made:

    python3 tools/golden/make_asvtorch_state_golden.py ASVTORCH_CHECKOUT \
        --asvtorch-commit 9c656dd55467f4480d4c455106c86519288723c3 \
        > tests/asvcpp/models/golden/asvtorch_xvector_state.json

ASVTORCH_CHECKOUT is a checkout of ASVtorch (github.com/asvtorch/asvtorch, SoftwareX release,
commit 9c656dd, the commit tools/golden/asvtorch_resolve.py pins too); --asvtorch-commit is only
recorded in the output. PyTorch: Debian's python3-torch (1.13.0a0 made the committed file).
Nothing of ASVtorch is copied here: the script imports asvtorch.src.networks.architectures, sets
ASVtorch's Settings() singleton's network.* fields to each case's values (CASES) and builds the
class with (FEAT_DIM, N_SPEAKERS), then records net.state_dict(). The sizes are small on purpose;
the keys and shapes are what matter, and asvcpp's test builds the same cases with the same values.
"""
import argparse
import json
import sys

FEAT_DIM = 30
N_SPEAKERS = 7
COMMON = {"frame_layer_size": 32, "stat_size": 64, "embedding_size": 16, "ser": 4}
# name -> (network class, network.* settings besides COMMON)
CASES = {
    "StandardNet": ("StandardNet", {}),
    "StandardSeNet": ("StandardSeNet", {}),
    "StandardResSeNet": ("StandardResSeNet", {}),
    "LargeResSeNet": ("LargeResSeNet", {}),
    "StandardNet_netvlad": (
        "StandardNet",
        {"pooling_layer_type": "clustering", "cluster_assignment_mode": "net_vlad", "n_clusters": 4,
         "n_ghost_clusters": 2},
    ),
    "StandardNet_lde_diagonal": (
        "StandardNet",
        {"pooling_layer_type": "clustering", "cluster_assignment_mode": "lde", "lde_covariance_type": "diagonal",
         "n_clusters": 4, "n_ghost_clusters": 0},
    ),
}


def format_golden(out):
    """The JSON of `out` with one state-dict entry per line (readable diffs)."""
    lines = ["{"]
    for key in ("asvtorch_commit", "torch_version", "feat_dim", "n_speakers", "network"):
        lines.append(f" {json.dumps(key)}: {json.dumps(out[key])},")
    lines.append(' "cases": {')
    cases = list(out["cases"].items())
    for i, (name, case) in enumerate(cases):
        lines.append(f"  {json.dumps(name)}: {{")
        lines.append(f'   "network_class": {json.dumps(case["network_class"])},')
        lines.append(f'   "settings": {json.dumps(case["settings"])},')
        lines.append('   "state_dict": [')
        entries = case["state_dict"]
        for j, entry in enumerate(entries):
            lines.append(f"    {json.dumps(entry)}{',' if j + 1 < len(entries) else ''}")
        lines.append("   ]")
        lines.append(f"  }}{',' if i + 1 < len(cases) else ''}")
    lines.append(" }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", help="ASVtorch checkout (the folder holding asvtorch/)")
    parser.add_argument("--asvtorch-commit", required=True, help="commit of the checkout, recorded in the output")
    args = parser.parse_args()
    sys.path.insert(0, args.checkout)

    import torch
    from asvtorch.src.settings.settings import Settings
    import asvtorch.src.networks.architectures as architectures

    network = Settings().network
    defaults = {field: getattr(network, field) for field in set(COMMON) | {k for _, s in CASES.values() for k in s}}
    out = {
        "asvtorch_commit": args.asvtorch_commit,
        "torch_version": torch.__version__,
        "feat_dim": FEAT_DIM,
        "n_speakers": N_SPEAKERS,
        "network": COMMON,
        "cases": {},
    }
    for name, (class_name, settings) in CASES.items():
        for field, value in {**defaults, **COMMON, **settings}.items():
            setattr(network, field, value)
        torch.manual_seed(0)
        net = getattr(architectures, class_name)(FEAT_DIM, N_SPEAKERS)
        out["cases"][name] = {
            "network_class": class_name,
            "settings": settings,
            "state_dict": [[key, list(value.shape), str(value.dtype).replace("torch.", "")]
                           for key, value in net.state_dict().items()],
        }
    sys.stdout.write(format_golden(out))


if __name__ == "__main__":
    main()
