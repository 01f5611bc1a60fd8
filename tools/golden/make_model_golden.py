#!/usr/bin/env python3
"""Golden values for asvcpp's WeSpeaker networks (asvcpp/nnet/resnet.h, ecapa_tdnn.h, pooling.h):
parameter counts, state-dict names and shapes, and embeddings computed by WeSpeaker's own PyTorch
model code with deterministic weights.

WeSpeaker (github.com/wenet-e2e/wespeaker) commit dfa741957e5c11f477623b6e583d67d0af25ee88:
the files wespeaker/models/{resnet,ecapa_tdnn,pooling_layers}.py are imported as they are from
that commit (nothing of them is copied into asvcpp). The script takes either a checkout of that
commit or a bare git directory from which it extracts the three files into a temporary folder:

    python tools/golden/make_model_golden.py --wespeaker-checkout PATH OUT.json
    python tools/golden/make_model_golden.py --wespeaker-git-dir PATH.git OUT.json

tests/asvcpp/nnet/golden/wespeaker_models_golden.json was made with the second form, PyTorch
2.11.0 (CPU, float32), NumPy 2.4.6, Python 3.11.7. The models are run in eval mode, one CPU
thread.

Models (WeSpeaker constructor names and arguments):
  ResNet34(feat_dim=80, embed_dim=256, pooling_func='TSTP', two_emb_layer=False)
  ECAPA_TDNN_c512 / ECAPA_TDNN_GLOB_c512 / ECAPA_TDNN_c1024 / ECAPA_TDNN_GLOB_c1024
      (feat_dim=80, embed_dim=192, pooling_func='ASTP', emb_bn=False)
The embedding is ResNet's `embed_a` (seg_1 output) and ECAPA-TDNN's `linear` output, i.e. the
second element of each model's forward() tuple.

Deterministic values (reproduced exactly by tests/asvcpp/nnet/wespeaker_golden_test.cc):
  u(seed, k) for k = 0, 1, ...: z = seed * 2^40 + k + 0x9E3779B97F4A7C15 (mod 2^64), then
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9, z = (z ^ (z >> 27)) * 0x94D049BB133111EB,
  z = z ^ (z >> 31) (SplitMix64's output function, all mod 2^64), u = (z >> 11) * 2^-53.
  State-dict tensor number i (in state_dict() order, counted from 0) gets seed i and, over its
  flattened elements k (row-major), in double precision and then rounded to float32:
    *.num_batches_tracked              left at 0
    *.running_mean                     0.1 * (2u - 1)
    *.running_var                      0.5 + u
    tensors of 2 or more dimensions    a * (2u - 1), a = GAIN * sqrt(3 / fan_in),
                                       fan_in = numel / shape[0]
    other *.weight (batch-norm scale)  1 + 0.2 * (2u - 1)
    other *.bias                       0.1 * (2u - 1)
  GAIN is per model (MODELS below). The input x[b, t, f] ([batch, frames, 80]) of a case with
  T frames: x = (2 n - 1) + (2 s - 1) * r_t + (2 o - 1), computed left to right, where
  n = u(2^20 + T, (b * T + t) * 80 + f), s = u(2^20 + T + 1024, b * 80 + f),
  o = u(2^20 + T + 2048, b * 80 + f) and r_t = 2 t / (T - 1) - 1 (a ramp over time per channel, so
  that utterances differ in their statistics and the statistics change over time).
"""
import argparse
import importlib
import json
import math
import os
import platform
import subprocess
import sys
import tempfile

import numpy as np
import torch

WESPEAKER_COMMIT = "dfa741957e5c11f477623b6e583d67d0af25ee88"
FILES = ["wespeaker/models/resnet.py", "wespeaker/models/ecapa_tdnn.py",
         "wespeaker/models/pooling_layers.py"]
FEAT_DIM = 80
BATCH = 2
FRAMES = [200, 157]
INPUT_SEED = 1 << 20

# (name, module, constructor, kwargs, gain)
MODELS = [
    ("ResNet34", "resnet", "ResNet34",
     dict(feat_dim=FEAT_DIM, embed_dim=256, pooling_func="TSTP", two_emb_layer=False), 0.8),
    ("ECAPA_TDNN_c512", "ecapa_tdnn", "ECAPA_TDNN_c512",
     dict(feat_dim=FEAT_DIM, embed_dim=192, pooling_func="ASTP", emb_bn=False), 1.0),
    ("ECAPA_TDNN_GLOB_c512", "ecapa_tdnn", "ECAPA_TDNN_GLOB_c512",
     dict(feat_dim=FEAT_DIM, embed_dim=192, pooling_func="ASTP", emb_bn=False), 1.0),
    ("ECAPA_TDNN_c1024", "ecapa_tdnn", "ECAPA_TDNN_c1024",
     dict(feat_dim=FEAT_DIM, embed_dim=192, pooling_func="ASTP", emb_bn=False), 1.0),
    ("ECAPA_TDNN_GLOB_c1024", "ecapa_tdnn", "ECAPA_TDNN_GLOB_c1024",
     dict(feat_dim=FEAT_DIM, embed_dim=192, pooling_func="ASTP", emb_bn=False), 1.0),
]

MASK = np.uint64((1 << 64) - 1)


def uniform(seed, n):
    """u(seed, k) for k = 0 .. n-1 (float64)."""
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + np.uint64(seed << 40) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z = z ^ (z >> np.uint64(31))
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


def fill_value(name, shape, seed, gain):
    n = int(np.prod(shape)) if shape else 1
    u = uniform(seed, n)
    if name.endswith("running_mean"):
        v = 0.1 * (2.0 * u - 1.0)
    elif name.endswith("running_var"):
        v = 0.5 + u
    elif len(shape) >= 2:
        a = gain * math.sqrt(3.0 / (n // shape[0]))
        v = a * (2.0 * u - 1.0)
    elif name.endswith("weight"):
        v = 1.0 + 0.2 * (2.0 * u - 1.0)
    elif name.endswith("bias"):
        v = 0.1 * (2.0 * u - 1.0)
    else:
        raise ValueError(f"no fill rule for {name}")
    return torch.from_numpy(v.astype(np.float32).reshape(shape))


def make_input(frames):
    """The input [BATCH, frames, FEAT_DIM] (float32) of one case."""
    noise = 2.0 * uniform(INPUT_SEED + frames, BATCH * frames * FEAT_DIM) - 1.0
    slope = 2.0 * uniform(INPUT_SEED + frames + 1024, BATCH * FEAT_DIM) - 1.0
    offset = 2.0 * uniform(INPUT_SEED + frames + 2048, BATCH * FEAT_DIM) - 1.0
    noise = noise.reshape(BATCH, frames, FEAT_DIM)
    ramp = (2.0 * np.arange(frames, dtype=np.float64) / (frames - 1) - 1.0).reshape(1, frames, 1)
    x = noise + slope.reshape(BATCH, 1, FEAT_DIM) * ramp + offset.reshape(BATCH, 1, FEAT_DIM)
    return x.astype(np.float32)


def load_wespeaker(args, tmp):
    if args.wespeaker_checkout:
        root = args.wespeaker_checkout
        head = subprocess.run(["git", "-C", root, "rev-parse", "HEAD"], capture_output=True,
                              text=True).stdout.strip()
        if head and head != WESPEAKER_COMMIT:
            print(f"warning: checkout is at {head}, not {WESPEAKER_COMMIT}", file=sys.stderr)
    else:
        root = tmp
        for path in FILES:
            text = subprocess.run(["git", f"--git-dir={args.wespeaker_git_dir}", "show",
                                   f"{WESPEAKER_COMMIT}:{path}"], check=True, capture_output=True,
                                  text=True).stdout
            os.makedirs(os.path.join(tmp, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(tmp, path), "w") as f:
                f.write(text)
        # Empty package files: the upstream __init__.py files import models not needed here.
        for pkg in ["wespeaker", "wespeaker/models"]:
            open(os.path.join(tmp, pkg, "__init__.py"), "w").close()
    sys.path.insert(0, root)


def run_model(name, module, ctor, kwargs, gain):
    model = getattr(importlib.import_module(f"wespeaker.models.{module}"), ctor)(**kwargs)
    model.eval()
    state = model.state_dict()
    with torch.no_grad():
        for i, (key, tensor) in enumerate(state.items()):
            if key.endswith("num_batches_tracked"):
                tensor.zero_()
                continue
            tensor.copy_(fill_value(key, list(tensor.shape), i, gain))
    cases = []
    for frames in FRAMES:
        x = torch.from_numpy(make_input(frames))
        with torch.no_grad():
            embedding = model(x.clone())[1]
        e = embedding.numpy()
        print(f"{name} frames {frames}: embedding {list(e.shape)}, std {e.std():.4g}, "
              f"max |e| {np.abs(e).max():.4g}", file=sys.stderr)
        cases.append({"frames": frames,
                      "embedding_shape": list(e.shape),
                      "embedding": [float(f"{v:.9g}") for v in e.reshape(-1)]})
    params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {params} parameters", file=sys.stderr)
    return {"name": name, "constructor": ctor, "kwargs": kwargs, "gain": gain,
            "parameter_count": params,
            "state_dict": [[k, list(v.shape)] for k, v in state.items()],
            "cases": cases}


def golden_doc(script, **fields):
    """A golden file's JSON: who made it (`script`), from which WeSpeaker commit, with which
    versions, then `fields` in their order."""
    return {
        "produced_by": script,
        "wespeaker_commit": WESPEAKER_COMMIT,
        "versions": f"torch {torch.__version__}, numpy {np.__version__}, "
                    f"python {platform.python_version()}",
        **fields,
    }


def write_golden(path, doc):
    """Writes `doc` as the golden files are written: one-space indent, a final newline."""
    with open(path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--wespeaker-checkout", help="a checkout of WeSpeaker at the commit")
    source.add_argument("--wespeaker-git-dir", help="a (bare) WeSpeaker git directory")
    parser.add_argument("out", help="output JSON file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        load_wespeaker(args, tmp)
        models = [run_model(*m) for m in MODELS]
    write_golden(args.out, golden_doc("tools/golden/make_model_golden.py", batch=BATCH, feat_dim=FEAT_DIM,
                                      input_seed=INPUT_SEED, models=models))


if __name__ == "__main__":
    main()
