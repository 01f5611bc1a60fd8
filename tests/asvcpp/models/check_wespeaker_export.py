#!/usr/bin/env python3
"""Checks a WeSpeaker model directory that `asvrun export --format wespeaker` (or
asvcpp::models::ExportWespeakerModel) wrote, with PyTorch and PyYAML themselves: DIR/avg_model.pt
is read by torch.load (weights_only=True where this PyTorch has it, as torch.load defaults to since
2.6) as an OrderedDict whose keys, order, shapes and dtypes are those of WeSpeaker's state_dict()
in tests/asvcpp/nnet/golden/wespeaker_models_golden.json (computed by WeSpeaker's own code, see
tools/golden/make_model_golden.py) plus the head projection.weight [CLASSES, embed_dim], and whose
values are the deterministic weights of make_model_golden.py's fill_value (tensor number i with
seed i; the head with the next seed); DIR/config.yaml holds WeSpeaker's fields.

    check_wespeaker_export.py CLASSES DIR:MODEL[:trained] ...
Prints what differs and exits 1, or prints "ok" per model (one Python start for all). CLASSES 0:
projection_args.num_class of the config. ":trained": a trained model, whose values are not the
deterministic ones (keys, order, shapes, dtypes and config are still checked).
"""
import collections
import inspect
import json
import os
import sys

import torch
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "golden"))
from make_model_golden import fill_value  # noqa: E402


def check(folder, model_name, classes, trained):
    with open(os.path.join(ROOT, "tests/asvcpp/nnet/golden/wespeaker_models_golden.json")) as f:
        golden = {m["name"]: m for m in json.load(f)["models"]}[model_name]
    with open(os.path.join(folder, "config.yaml")) as f:
        config = yaml.safe_load(f)
    if classes == 0:
        classes = config["projection_args"]["num_class"]
    expected = [(k, s) for k, s in golden["state_dict"]]
    embed_dim = golden["kwargs"]["embed_dim"]
    expected.append(("projection.weight", [classes, embed_dim]))

    path = os.path.join(folder, "avg_model.pt")
    if "weights_only" in inspect.signature(torch.load).parameters:
        state = torch.load(path, map_location="cpu", weights_only=True)
    else:
        state = torch.load(path, map_location="cpu")
    errors = []
    if not isinstance(state, collections.OrderedDict):
        errors.append(f"avg_model.pt holds a {type(state).__name__}, not an OrderedDict")
    keys = list(state.keys())
    if keys != [k for k, _ in expected]:
        missing = [k for k, _ in expected if k not in state]
        extra = [k for k in keys if k not in dict(expected)]
        errors.append(f"keys differ: missing {missing[:5]}, unexpected {extra[:5]}, same order: "
                      f"{not missing and not extra}")
    for i, (key, shape) in enumerate(expected):
        if key not in state:
            continue
        t = state[key]
        want_dtype = torch.int64 if key.endswith("num_batches_tracked") else torch.float32
        if list(t.shape) != shape or t.dtype != want_dtype:
            errors.append(f"{key}: {list(t.shape)} {t.dtype}, expected {shape} {want_dtype}")
            continue
        if trained:
            continue
        if key.endswith("num_batches_tracked"):
            want = torch.zeros((), dtype=torch.int64)
        else:
            want = fill_value(key, shape, i, golden["gain"])
        if not torch.equal(t, want):
            errors.append(f"{key}: values differ from asvcpp's (max {float((t - want).abs().max())})")

    want_config = {
        ("model",): model_name,
        ("model_args", "feat_dim"): 80,
        ("model_args", "embed_dim"): embed_dim,
        ("model_args", "pooling_func"): golden["kwargs"]["pooling_func"],
        ("projection_args", "project_type"): "arc_margin",
        ("projection_args", "num_class"): classes,
        ("dataset_args", "resample_rate"): 16000,
        ("dataset_args", "fbank_args", "num_mel_bins"): 80,
        ("dataset_args", "fbank_args", "frame_shift"): 10,
        ("dataset_args", "fbank_args", "frame_length"): 25,
        ("dataset_args", "fbank_args", "dither"): 1.0,
        ("dataset_args", "cmvn"): True,
    }
    for keys_path, want in want_config.items():
        node = config
        for k in keys_path:
            node = node.get(k) if isinstance(node, dict) else None
        if node != want or type(node) is not type(want):
            errors.append(f"config.yaml {'.'.join(keys_path)}: {node!r}, expected {want!r}")
    for k, v in golden["kwargs"].items():
        if config["model_args"].get(k) != v:
            errors.append(f"config.yaml model_args.{k}: {config['model_args'].get(k)!r}, WeSpeaker's {v!r}")

    for e in errors:
        print(f"{model_name}: {e}")
    if not errors:
        print(f"{model_name} ok: {len(keys)} tensors, torch {torch.__version__}")
    return not errors


if __name__ == "__main__":
    results = []
    for spec in sys.argv[2:]:
        parts = spec.split(":")
        results.append(check(parts[0], parts[1], int(sys.argv[1]), parts[2:] == ["trained"]))
    sys.exit(0 if all(results) else 1)
