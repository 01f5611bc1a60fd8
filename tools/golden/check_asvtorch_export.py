#!/usr/bin/env python3
r"""Runs an x-vector network that `asvrun export --format asvtorch` wrote in ASVtorch's own network
class, and compares its embeddings with asvcpp's ONNX export of the same run.

    asvrun export --model RUN --db DB --format asvtorch --out state.pt
    asvrun export --model RUN --db DB --format onnx --out net.onnx
    /usr/bin/python3 tools/golden/check_asvtorch_export.py ASVTORCH_CHECKOUT --db DB --run RUN \
        --state state.pt --onnx net.onnx

ASVTORCH_CHECKOUT is a checkout of ASVtorch (github.com/asvtorch/asvtorch, SoftwareX release,
commit 9c656dd, the commit tools/golden/make_asvtorch_state_golden.py pins). Nothing of ASVtorch is
copied here: the script imports asvtorch.src.networks.architectures, sets ASVtorch's Settings()
singleton's network.* fields to the values the run recorded in the experiment database (DB, an
SQLite file), builds the run's network.network_class with the export's feat_dim_param and
n_speakers_param, loads the file with load_state_dict(strict=True) (every key both ways, shapes
checked) and runs it as ASVtorch's extract_embeddings does: eval mode, no gradients,
net(features [batch, feat_dim, frames], 'extract_embeddings'). The same seeded random features go
through the ONNX graph in ONNX Runtime (--ort-python, by default the venv tools/setup.sh makes;
the graph takes [batch, frames, feat_dim]).

Without --onnx (no ONNX Runtime at hand) only the strict load and the size and finiteness of the
embeddings are checked. With it, prints, per
utterance length, the cosine and the largest |difference| / norm between the two, and
exits 1 when a cosine is below 0.9999 or a difference above 1e-4 x the norm (the bounds asvcpp's
ONNX tests use), 0 otherwise. Python: Debian's python3-torch (torch 1.13).
"""
import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LENGTHS = (200, 371, 1000)  # frames per utterance

ORT_RUN = r"""
import sys
import numpy as np
import onnxruntime
session = onnxruntime.InferenceSession(sys.argv[1], providers=["CPUExecutionProvider"])
name = session.get_inputs()[0].name
for path in sys.argv[2:]:
    feats = np.load(path)
    np.save(path + ".onnx.npy", session.run(None, {name: feats})[0])
"""


def default_ort_python():
    command = ["bash", "-c", "source tools/build_common.sh && printf %s \"$asv_onnxruntime_venv/bin/python\""]
    return subprocess.run(command, cwd=ROOT, check=True, capture_output=True, text=True).stdout


def run_settings(db, run):
    connection = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    row = connection.execute("SELECT settings_json FROM runs WHERE id = ?", (run,)).fetchone()
    if row is None:
        sys.exit(f"{db}: no run {run}")
    return json.loads(row[0])


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("checkout", help="ASVtorch checkout (the folder holding asvtorch/)")
    parser.add_argument("--db", required=True, help="the experiment database (SQLite) that recorded the run")
    parser.add_argument("--run", type=int, required=True, help="the run id given to asvrun export")
    parser.add_argument("--state", required=True, help="asvrun export --format asvtorch's file")
    parser.add_argument("--onnx", help="asvrun export --format onnx's file (features in); without it, only the "
                        "strict load and the embeddings' size are checked")
    parser.add_argument("--ort-python", help="a python with onnxruntime and numpy")
    args = parser.parse_args()
    sys.path.insert(0, args.checkout)

    import torch
    from asvtorch.src.settings.settings import Settings
    import asvtorch.src.networks.architectures as architectures

    settings = run_settings(args.db, args.run)
    network = Settings().network
    applied = 0
    for key, value in settings.items():
        group, _, field = key.partition(".")
        if group == "network" and hasattr(network, field):
            setattr(network, field, value)
            applied += 1
    class_name = settings["network.network_class"].rsplit(".", 1)[-1]
    state = torch.load(args.state, map_location="cpu")
    feat_dim = int(state["feat_dim_param"].item())
    net = getattr(architectures, class_name)(feat_dim, int(state["n_speakers_param"].item()))
    net.load_state_dict(state, strict=True)
    net.eval()
    print(f"ASVtorch {class_name}({feat_dim}, {int(state['n_speakers_param'].item())}) with {applied} network.* "
          f"settings of run {args.run} loaded {args.state} with strict=True ({len(state)} entries)")

    generator = np.random.default_rng(20261129)
    if args.onnx is None:
        feats = torch.from_numpy(generator.standard_normal((2, feat_dim, LENGTHS[1])).astype(np.float32))
        with torch.no_grad():
            embeddings = net(feats, "extract_embeddings")
        expected = (2, network.embedding_size)
        if tuple(embeddings.shape) != expected or not bool(torch.isfinite(embeddings).all()):
            print(f"FAILED: embeddings {tuple(embeddings.shape)} (expected {expected}, finite)")
            return 1
        print(f"no --onnx: embeddings {tuple(embeddings.shape)}, finite; not compared with asvcpp")
        return 0
    ort_python = args.ort_python or default_ort_python()
    worst = (1.0, 0.0)
    with tempfile.TemporaryDirectory() as tmp:
        paths = []
        for frames in LENGTHS:
            feats = generator.standard_normal((2, frames, feat_dim)).astype(np.float32)  # [batch, frames, dim]
            paths.append(os.path.join(tmp, f"feats_{frames}.npy"))
            np.save(paths[-1], feats)
        subprocess.run([ort_python, "-c", ORT_RUN, args.onnx, *paths], check=True)
        for frames, path in zip(LENGTHS, paths):
            feats = torch.from_numpy(np.load(path)).transpose(1, 2).contiguous()  # [batch, dim, frames]
            with torch.no_grad():
                theirs = net(feats, "extract_embeddings").numpy().astype(np.float64)
            ours = np.load(path + ".onnx.npy").astype(np.float64)
            norms = np.linalg.norm(theirs, axis=1)
            cosine = (theirs * ours).sum(1) / (norms * np.linalg.norm(ours, axis=1))
            relative = np.abs(theirs - ours).max(1) / norms
            print(f"{frames} frames: cosine {cosine.min():.9f}, max |difference| / norm {relative.max():.2e}")
            worst = (min(worst[0], cosine.min()), max(worst[1], relative.max()))
    if worst[0] < 0.9999 or worst[1] > 1e-4:
        print(f"FAILED: lowest cosine {worst[0]:.9f}, largest difference / norm {worst[1]:.2e}")
        return 1
    print(f"ASVtorch's class and asvcpp's ONNX graph agree: lowest cosine {worst[0]:.9f}, "
          f"largest difference / norm {worst[1]:.2e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
