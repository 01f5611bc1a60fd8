#!/usr/bin/env python3
"""Writes a WeSpeaker model as WeSpeaker writes it, with PyTorch itself: torch.save of an
OrderedDict state dict with the names, order and shapes of WeSpeaker's state_dict()
(tests/asvcpp/nnet/golden/wespeaker_models_golden.json) and the deterministic weights of
tools/golden/make_model_golden.py (fill_value: tensor number i with seed i, num_batches_tracked 0;
the head projection.weight [CLASSES, embed_dim] with the next seed), plus a config.yaml with
WeSpeaker's fields (as wespeaker/bin/train.py dumps them, training keys included).

    make_wespeaker_checkpoint.py CLASSES OUT_DIR:MODEL[:training] ...
writes OUT_DIR/avg_model.pt and OUT_DIR/config.yaml for each model (one Python start for all);
with ":training", OUT_DIR/models/model_3.pt instead of avg_model.pt, as WeSpeaker's training can
leave it: every key with DistributedDataParallel's "module." prefix, inside
{'model': state, 'epoch': 3} (the form wespeaker/bin/average_model.py accepts).
"""
import collections
import json
import os
import sys

import torch
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path.insert(0, os.path.join(ROOT, "tools", "golden"))
from make_model_golden import fill_value  # noqa: E402


def write(out, model_name, classes, training):
    with open(os.path.join(ROOT, "tests/asvcpp/nnet/golden/wespeaker_models_golden.json")) as f:
        golden = {m["name"]: m for m in json.load(f)["models"]}[model_name]
    embed_dim = golden["kwargs"]["embed_dim"]
    entries = golden["state_dict"] + [["projection.weight", [classes, embed_dim]]]
    state = collections.OrderedDict()
    for i, (key, shape) in enumerate(entries):
        if key.endswith("num_batches_tracked"):
            state[key] = torch.zeros((), dtype=torch.int64)
        else:
            state[key] = fill_value(key, shape, i, golden["gain"])
    os.makedirs(out, exist_ok=True)
    if training:
        os.makedirs(os.path.join(out, "models"), exist_ok=True)
        wrapped = collections.OrderedDict(("module." + k, v) for k, v in state.items())
        torch.save({"model": wrapped, "epoch": 3}, os.path.join(out, "models", "model_3.pt"))
    else:
        torch.save(state, os.path.join(out, "avg_model.pt"))
    config = {
        "exp_dir": "exp/" + model_name,
        "gpus": "[0,1]",
        "num_epochs": 150,
        "model": model_name,
        "model_init": None,
        "model_args": dict(golden["kwargs"]),
        "projection_args": {"project_type": "arc_margin", "scale": 32.0, "easy_margin": False,
                            "embed_dim": embed_dim, "num_class": classes, "do_lm": False},
        "margin_update": {"initial_margin": 0.0, "final_margin": 0.2},
        "dataset_args": {"resample_rate": 16000, "speed_perturb": True, "num_frms": 200,
                         "fbank_args": {"num_mel_bins": 80, "frame_shift": 10, "frame_length": 25,
                                        "dither": 1.0},
                         "spec_aug": False},
        "optimizer_args": {"momentum": 0.9, "nesterov": True, "weight_decay": 0.0001},
    }
    with open(os.path.join(out, "config.yaml"), "w") as f:
        yaml.dump(config, f)


if __name__ == "__main__":
    for spec in sys.argv[2:]:
        parts = spec.split(":")
        write(parts[0], parts[1], int(sys.argv[1]), parts[2:] == ["training"])
