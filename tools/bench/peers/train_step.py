#!/usr/bin/env python3
"""PyTorch peer of asv_bench_train (tools/bench/train_throughput.cc): the StandardNet x-vector
training step written in plain PyTorch, timed the same way.

    python train_step.py --threads 2 --json out.json          # StandardNet defaults, 64 x 200 frames
    python train_step.py --check-checkpoint epoch.10.pt       # asvcpp checkpoint loads strictly

The network is the one asvcpp builds for network.network_class = StandardNet with the
`network.*` defaults (asvcpp/nnet/xvector_net.cc, layers.cc; ASVtorch's architectures.py):

    tdnn_layers.i  CnnLayer: Conv1d(kernel 2r+1, padding r, zeros, bias) -> leaky ReLU(0.01)
                   -> BatchNorm1d(eps 1e-5, momentum 0.1, affine); r = 2, 2, 3, 0, 0;
                   channels F -> D -> D -> D -> D -> S
    pooling_layer  mean and sqrt(max(mean(x^2) - mean^2, 1e-6)) over frames -> [batch, 2S]
    utterance_layers.0  Linear(2S -> E) -> BatchNorm1d(E)   (the embedding layer)
    utterance_layers.1  Linear(E -> speakers)               (logits; softmax cross-entropy)

with the same submodule names, so the state-dict keys are asvcpp's (--check-checkpoint loads an
asvcpp epoch.N.pt with strict=True). The step is asv_bench_train's: a random minibatch
[batch, feat_dim, frames] (a new one every step, up to 512 MB of them made before timing, then
they repeat), forward, cross-entropy, backward, SGD (asvcpp train/sgd.h = torch.optim.SGD:
two groups as ASVtorch's get_weight_decay_param_groups, names containing 'batchnorm' without
weight decay, the others 0.001; lr 0.1, momentum 0), zero_grad (set_to_none), and the two
.item() reads of loss and accuracy of every step, as ASVtorch's training loop does (asvcpp's
trainer reads them every 16 steps). Warm-up steps, then `repeats` timed runs of `steps` steps;
frames/s = batch x frames x steps / seconds; frames_per_cpu_s the
same over the process's CPU time (time.process_time, as asv_bench_train's rank0_cpu_seconds).

--frames-major runs the frame layers in the memory layout asvcpp uses on the CPU (conv2d of
[batch, channels, 1, frames] in channels-last memory; nnet::ConvolveFrames): a reference variant
showing what that layout alone gives in PyTorch, not how PyTorch users write the network.
"""
import argparse
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F
from torch import nn

MAX_POOL_BYTES = 512 << 20  # asv_bench_train's kMaxPoolBytes
FRAMES_MAJOR = False  # --frames-major


class CnnLayer(nn.Module):
    """ASVtorch CnnLayer without squeeze-excitation: conv -> leaky ReLU -> batch norm."""

    def __init__(self, in_channels, out_channels, reach, lrelu_slope=0.01):
        super().__init__()
        # Registration order as in asvcpp/ASVtorch (batchnorm first): only the state-dict order.
        self.batchnorm = nn.BatchNorm1d(out_channels, eps=1e-5, momentum=0.1, affine=True)
        self.cnn = nn.Conv1d(in_channels, out_channels, 2 * reach + 1, stride=1, padding=reach, dilation=1,
                             bias=True, padding_mode="zeros")
        self.lrelu_slope = lrelu_slope

    def forward(self, x):
        if not FRAMES_MAJOR:
            return self.batchnorm(F.leaky_relu(self.cnn(x), self.lrelu_slope))
        # --frames-major: asvcpp's layout (nnet::ConvolveFrames, NormalizeFrames) written in PyTorch:
        # the convolution as conv2d of [batch, channels, 1, frames] in channels-last memory, batch
        # norm over the contiguous [batch * frames, channels] view; autograd's own backward.
        x4 = x.unsqueeze(2).contiguous(memory_format=torch.channels_last)
        y = F.conv2d(x4, self.cnn.weight.unsqueeze(2), self.cnn.bias, padding=(0, self.cnn.padding[0])).squeeze(2)
        y = F.leaky_relu(y, self.lrelu_slope)
        frames = y.transpose(1, 2)  # [batch, frames, channels], contiguous
        return self.batchnorm(frames.reshape(-1, y.size(1))).view(frames.shape).transpose(1, 2)


class MeanStdPoolingLayer(nn.Module):
    def forward(self, x):
        mean = x.mean(2)
        std = torch.sqrt(torch.clamp_min(x.pow(2).mean(2) - mean.pow(2), 1e-6))
        return torch.cat([mean, std], 1)


class LinearBatchNormLayer(nn.Module):
    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.batchnorm = nn.BatchNorm1d(out_features, eps=1e-5, momentum=0.1, affine=True)

    def forward(self, x):
        return self.batchnorm(self.linear(x))


class StandardNet(nn.Module):
    def __init__(self, feat_dim, frame_layer, stat_size, embedding, speakers):
        super().__init__()
        d = frame_layer
        self.tdnn_layers = nn.ModuleList([CnnLayer(feat_dim, d, 2), CnnLayer(d, d, 2), CnnLayer(d, d, 3),
                                          CnnLayer(d, d, 0), CnnLayer(d, stat_size, 0)])
        self.pooling_layer = MeanStdPoolingLayer()
        self.utterance_layers = nn.ModuleList([LinearBatchNormLayer(2 * stat_size, embedding),
                                               nn.Linear(embedding, speakers)])

    def forward(self, x):
        for layer in self.tdnn_layers:
            x = layer(x)
        return self.utterance_layers[1](self.utterance_layers[0](self.pooling_layer(x)))


def weight_decay_groups(net, skiplist, lr, weight_decay):
    """asvcpp train::WeightDecayGroups (ASVtorch get_weight_decay_param_groups)."""
    skip, rest = [], []
    for name, p in net.named_parameters():
        if p.requires_grad:
            (skip if any(s in name for s in skiplist) else rest).append(p)
    return [{"params": skip, "lr": lr, "weight_decay": 0.0}, {"params": rest, "lr": lr, "weight_decay": weight_decay}]


def check_checkpoint(path):
    """Builds the net with an asvcpp checkpoint's sizes and loads its model_state_dict strictly."""
    ckpt = torch.load(path, map_location="cpu", weights_only=False)
    state = ckpt["model_state_dict"]
    if ckpt.get("architecture") != "StandardNet":
        raise SystemExit(f"{path}: architecture {ckpt.get('architecture')}, this peer builds StandardNet")
    frame_layer = state["tdnn_layers.0.cnn.weight"].shape[0]
    stat_size = state["tdnn_layers.4.cnn.weight"].shape[0]
    net = StandardNet(int(ckpt["feat_dim"]), frame_layer, stat_size, int(ckpt["embedding_size"]),
                      int(ckpt["n_speakers"]))
    net.load_state_dict(dict(state), strict=True)  # raises on any missing/unexpected key or shape
    n = sum(p.numel() for p in net.parameters())
    print(json.dumps({"checkpoint": path, "strict_load": "ok", "tensors": len(state), "parameters": n,
                      "feat_dim": int(ckpt["feat_dim"]), "frame_layer": frame_layer, "stat_size": stat_size,
                      "embedding": int(ckpt["embedding_size"]), "speakers": int(ckpt["n_speakers"])}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--feat-dim", type=int, default=30)
    p.add_argument("--frame-layer", type=int, default=512)
    p.add_argument("--stat-size", type=int, default=1500)
    p.add_argument("--embedding", type=int, default=512)
    p.add_argument("--speakers", type=int, default=1000)
    p.add_argument("--frames", type=int, default=200)
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=torch.get_num_threads(), help="intra-op threads")
    p.add_argument("--device", default="cpu", help="cpu or cuda")
    p.add_argument("--precision", choices=["fp32", "bf16"], default="fp32",
                   help="bf16: forward pass and loss under torch.autocast(dtype=torch.bfloat16), as "
                        "asv_bench_train --precision bf16 (float32 weights, gradients and optimizer)")
    p.add_argument("--tf32", choices=["on", "off"], default="on",
                   help="TF32 for float32 matmuls and convolutions on GPUs (asvcpp's computing.allow_tf32)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--lr", type=float, default=0.1, help="network.initial_learning_rate")
    p.add_argument("--momentum", type=float, default=0.0, help="network.momentum")
    p.add_argument("--weight-decay", type=float, default=0.001, help="network.weight_decay")
    p.add_argument("--profile", help="write a torch.profiler table of one extra timed run to this file")
    p.add_argument("--check-checkpoint", help="load an asvcpp epoch.N.pt strictly and exit")
    p.add_argument("--frames-major", action="store_true",
                   help="run the frame layers in asvcpp's frames-major layout (a reference variant)")
    p.add_argument("--json", help="write the results here")
    a = p.parse_args()
    global FRAMES_MAJOR
    FRAMES_MAJOR = a.frames_major
    if a.check_checkpoint:
        check_checkpoint(a.check_checkpoint)
        return 0

    torch.set_num_threads(a.threads)
    try:
        torch.set_num_interop_threads(1)  # eager training uses no inter-op pool; as asvcpp leaves it
    except RuntimeError:
        pass
    device = torch.device(a.device)
    torch.backends.cuda.matmul.allow_tf32 = a.tf32 == "on"
    torch.backends.cudnn.allow_tf32 = a.tf32 == "on"
    autocast_dtype = torch.bfloat16 if a.precision == "bf16" else None

    torch.manual_seed(a.seed)
    net = StandardNet(a.feat_dim, a.frame_layer, a.stat_size, a.embedding, a.speakers).to(device)
    optimizer = torch.optim.SGD(weight_decay_groups(net, ["batchnorm"], a.lr, a.weight_decay), lr=a.lr,
                                momentum=a.momentum)
    parameters = sum(p.numel() for p in net.parameters() if p.requires_grad)

    batch_bytes = a.batch * a.feat_dim * a.frames * 4
    total_steps = a.warmup + a.steps * a.repeats
    pool = max(1, min(total_steps, MAX_POOL_BYTES // batch_bytes))
    torch.manual_seed(a.seed + 1)
    features = [torch.randn(a.batch, a.feat_dim, a.frames) for _ in range(pool)]
    labels = [torch.randint(a.speakers, (a.batch,)) for _ in range(pool)]
    state = {"next": 0, "loss": 0.0}

    def sync():
        if device.type == "cuda":
            torch.cuda.synchronize()

    net.train()
    optimizer.zero_grad(set_to_none=True)

    def step():
        i = state["next"]
        state["next"] = (i + 1) % pool
        x = features[i] if device.type == "cpu" else features[i].to(device)
        y = labels[i] if device.type == "cpu" else labels[i].to(device)
        if autocast_dtype is None:
            logits = net(x)
            loss = F.cross_entropy(logits, y)
        else:
            with torch.autocast(device_type=device.type, dtype=autocast_dtype):
                logits = net(x)
                loss = F.cross_entropy(logits, y)
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        state["loss"] = loss.item()
        if state["loss"] != state["loss"] or abs(state["loss"]) == float("inf"):
            raise SystemExit(f"training diverged: loss {state['loss']}")
        logits.argmax(1).eq(y).sum().item()

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
        print(f"[train_step.py] repeat {r + 1}/{a.repeats}: {rates[-1]:.0f} frames/s, "
              f"{1000 * seconds / a.steps:.1f} ms/step (loss {state['loss']:.3f})", file=sys.stderr)

    if a.profile:
        from torch.profiler import ProfilerActivity, profile
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
        with profile(activities=activities) as prof:
            for _ in range(a.steps):
                step()
            sync()
        with open(a.profile, "w") as f:
            f.write(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=40) + "\n")

    result = {"peer": "PyTorch (Python) StandardNet training step", "torch": torch.__version__,
              "frames_major": a.frames_major,
              "threads": torch.get_num_threads(), "interop_threads": torch.get_num_interop_threads(),
              "device": a.device, "precision": a.precision, "tf32": a.tf32, "parameters": parameters,
              "workload": {"feat_dim": a.feat_dim, "frame_layer": a.frame_layer, "stat_size": a.stat_size,
                           "embedding": a.embedding, "speakers": a.speakers, "batch": a.batch, "frames": a.frames,
                           "warmup": a.warmup, "steps": a.steps, "repeats": a.repeats, "distinct_batches": pool},
              "final_loss": state["loss"],
              "frames_per_s": {"median": statistics.median(rates), "min": min(rates), "max": max(rates),
                               "repeats": len(rates)},
              "rates": rates, "cpu_rates": cpu_rates,
              # CPU time of the process (all threads): with 1 thread, independent of other jobs on the cores.
              "frames_per_cpu_s": {"median": statistics.median(cpu_rates), "min": min(cpu_rates),
                                   "max": max(cpu_rates), "repeats": len(cpu_rates)}}
    if a.json:
        with open(a.json, "w") as f:
            json.dump(result, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
