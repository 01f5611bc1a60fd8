#!/usr/bin/env python3
"""PyTorch peer of `asv_bench_train --model NAME` (tools/bench/train_throughput.cc): the training
step of WeSpeaker's voxceleb/v2 recipe with WeSpeaker's own model and head code, timed the same
way.

    python3 margin_step.py --wespeaker-git-dir /path/to/wespeaker.git --model ResNet34 --threads 2

WeSpeaker (github.com/wenet-e2e/wespeaker) commit dfa741957e5c11f477623b6e583d67d0af25ee88: the
files wespeaker/models/{resnet,ecapa_tdnn,pooling_layers,projections}.py are imported as they are
from a checkout (--wespeaker-checkout) or extracted from a git directory (--wespeaker-git-dir)
into a temporary folder; nothing of them is copied into asvcpp.

The step is WeSpeaker's wespeaker/utils/executor.py run_epoch: features [batch, frames, 80] (a
new random minibatch every step, up to 512 MB of them made before timing, then they repeat),
model(features) -> embedding (the last element of the output tuple), projection(embedding,
labels) = ArcMarginProduct (scale 32, margin 0.2), CrossEntropyLoss, optimizer.zero_grad(),
backward, SGD step (momentum 0.9, Nesterov, weight decay 1e-4 on every parameter, as
conf/resnet.yaml), and loss.item() plus the training accuracy read every step (WeSpeaker copies
the whole output matrix to the host for its accuracy meter; this reads only the argmax count,
which favours the peer). bf16: torch.autocast around forward and loss, as WeSpeaker's
enable_amp (with bf16 instead of fp16, so no gradient scaler). Warm-up steps, then `repeats`
timed runs of `steps` steps; frames/s = batch x frames x steps / seconds, and frames per CPU
second of the process (time.process_time, as asv_bench_train's rank0_cpu_seconds).
"""
import argparse
import contextlib
import importlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F

WESPEAKER_COMMIT = "dfa741957e5c11f477623b6e583d67d0af25ee88"
FILES = ["wespeaker/models/resnet.py", "wespeaker/models/ecapa_tdnn.py",
         "wespeaker/models/pooling_layers.py", "wespeaker/models/projections.py"]
MAX_POOL_BYTES = 512 << 20  # asv_bench_train's kMaxPoolBytes
# WeSpeaker constructor arguments of the voxceleb/v2 configs (conf/resnet.yaml, ecapa_tdnn.yaml).
MODELS = {
    "ResNet34": ("resnet", dict(pooling_func="TSTP", two_emb_layer=False), 256),
    "ECAPA_TDNN_c512": ("ecapa_tdnn", dict(pooling_func="ASTP", emb_bn=False), 192),
    "ECAPA_TDNN_GLOB_c512": ("ecapa_tdnn", dict(pooling_func="ASTP", emb_bn=False), 192),
    "ECAPA_TDNN_c1024": ("ecapa_tdnn", dict(pooling_func="ASTP", emb_bn=False), 192),
    "ECAPA_TDNN_GLOB_c1024": ("ecapa_tdnn", dict(pooling_func="ASTP", emb_bn=False), 192),
}


def load_wespeaker(args, tmp):
    if args.wespeaker_checkout:
        root = args.wespeaker_checkout
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


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--wespeaker-checkout", help="a WeSpeaker checkout")
    source.add_argument("--wespeaker-git-dir", help="a (bare) WeSpeaker git directory")
    p.add_argument("--model", choices=sorted(MODELS), default="ResNet34")
    p.add_argument("--feat-dim", type=int, default=80)
    p.add_argument("--embedding", type=int, help="default: 256 for ResNet34, 192 for ECAPA-TDNN")
    p.add_argument("--speakers", type=int, default=5994 * 3, help="classes of the head")
    p.add_argument("--frames", type=int, default=200)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=torch.get_num_threads(), help="intra-op threads")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32")
    p.add_argument("--channels-last", action="store_true", help="ResNet34 in channels-last memory")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    device = torch.device(a.device)
    autocast_dtype = torch.bfloat16 if a.precision == "bf16" else None

    with tempfile.TemporaryDirectory() as tmp:
        load_wespeaker(a, tmp)
        module, kwargs, default_embedding = MODELS[a.model]
        embedding = a.embedding or default_embedding
        ctor = getattr(importlib.import_module(f"wespeaker.models.{module}"), a.model)
        projections = importlib.import_module("wespeaker.models.projections")
        torch.manual_seed(a.seed)
        model = ctor(feat_dim=a.feat_dim, embed_dim=embedding, **kwargs)
        model.add_module("projection", projections.ArcMarginProduct(embedding, a.speakers, scale=32.0,
                                                                    margin=0.2, easy_margin=False))
    model = model.to(device)
    if a.channels_last:
        model = model.to(memory_format=torch.channels_last)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4)
    criterion = torch.nn.CrossEntropyLoss()
    parameters = sum(p.numel() for p in model.parameters() if p.requires_grad)

    batch_bytes = a.batch * a.feat_dim * a.frames * 4
    total_steps = a.warmup + a.steps * a.repeats
    pool = max(1, min(total_steps, MAX_POOL_BYTES // batch_bytes))
    torch.manual_seed(a.seed + 1)
    features = [torch.randn(a.batch, a.frames, a.feat_dim) for _ in range(pool)]
    labels = [torch.randint(a.speakers, (a.batch,)) for _ in range(pool)]
    state = {"next": 0, "loss": 0.0}

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    model.train()

    def step():
        i = state["next"]
        state["next"] = (i + 1) % pool
        x = features[i].to(device)
        y = labels[i].to(device)
        autocast = (torch.autocast(device_type=device.type, dtype=autocast_dtype) if autocast_dtype
                    else contextlib.nullcontext())
        with autocast:
            outputs = model(x)
            embeds = outputs[-1] if isinstance(outputs, tuple) else outputs
            outputs = model.projection(embeds, y)
            loss = criterion(outputs, y)
        state["loss"] = loss.item()
        if state["loss"] != state["loss"] or abs(state["loss"]) == float("inf"):
            raise SystemExit(f"training diverged: loss {state['loss']}")
        outputs.detach().argmax(1).eq(y).sum().item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    for _ in range(a.warmup):
        step()
    rates, cpu_rates = [], []
    for r in range(a.repeats):
        sync()
        start, cpu_start = time.perf_counter(), time.process_time()
        for _ in range(a.steps):
            step()
        sync()
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu_start
        rates.append(a.batch * a.frames * a.steps / seconds)
        cpu_rates.append(a.batch * a.frames * a.steps / cpu_seconds if cpu_seconds > 0 else 0.0)
        print(f"[margin_step.py] repeat {r + 1}/{a.repeats}: {rates[-1]:.0f} frames/s, "
              f"{1000 * seconds / a.steps:.1f} ms/step (loss {state['loss']:.3f})", file=sys.stderr)

    result = {"peer": f"PyTorch (Python) training step of WeSpeaker's {a.model} + ArcMarginProduct",
              "wespeaker_commit": WESPEAKER_COMMIT, "torch": torch.__version__,
              "threads": torch.get_num_threads(), "device": a.device, "precision": a.precision,
              "channels_last": a.channels_last, "parameters": parameters,
              "workload": {"model": a.model, "feat_dim": a.feat_dim, "embedding": embedding, "speakers": a.speakers,
                           "batch": a.batch, "frames": a.frames, "warmup": a.warmup, "steps": a.steps,
                           "repeats": a.repeats, "distinct_batches": pool},
              "final_loss": state["loss"],
              "frames_per_s": {"median": statistics.median(rates), "min": min(rates), "max": max(rates),
                               "repeats": len(rates)},
              "rates": rates, "cpu_rates": cpu_rates,
              # CPU time of the process (all threads): with 1 thread, independent of other jobs on the cores.
              "frames_per_cpu_s": {"median": statistics.median(cpu_rates), "min": min(cpu_rates),
                                   "max": max(cpu_rates), "repeats": len(cpu_rates)}}
    print(json.dumps({"frames_per_s": result["frames_per_s"], "frames_per_cpu_s": result["frames_per_cpu_s"]}))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
