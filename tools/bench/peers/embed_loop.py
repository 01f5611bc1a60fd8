#!/usr/bin/env python3
"""PyTorch peer of `asvrun embed` (tools/bench/embed_throughput.py): WeSpeaker's extraction path
with WeSpeaker's own model code, and the model both sides load.

    embed_loop.py make-model --wespeaker-git-dir WESPEAKER.git --model ResNet34 --out MODEL_DIR
    embed_loop.py embed --wespeaker-git-dir WESPEAKER.git --model ResNet34 --model-dir MODEL_DIR \\
        --scp wav.scp --out embeddings.npy [--device cuda] [--kaldi PATH/kaldi.py]

WeSpeaker (github.com/wenet-e2e/wespeaker) commit dfa741957e5c11f477623b6e583d67d0af25ee88: its
model files are imported as they are from a folder (--wespeaker-checkout) or a git directory
(--wespeaker-git-dir), as tools/bench/peers/margin_step.py does; nothing of them is copied into
asvcpp.

make-model writes MODEL_DIR/avg_model.pt and MODEL_DIR/config.yaml as WeSpeaker's training leaves
them: torch.save of the model's state_dict() (WeSpeaker's constructor with the voxceleb/v2
arguments, its default initialisation with torch.manual_seed(1), then BatchNorm statistics drawn
uniformly: means in [-0.1, 0.1), variances in [0.5, 1.5), so that the eval-mode network is not the
identity there), and the model, model_args and fbank settings of config.yaml, without a head.

embed is WeSpeaker's extraction path of wespeaker/cli/speaker.py and wespeaker/bin/extract.py with
batch size 1 (whole utterances): per wav.scp line the audio as torchaudio.load(normalize=False)
gives it (int16 values as float), torchaudio's Kaldi fbank (80 bins, 25/10 ms, hamming, no
dither), the utterance's mean subtracted, model(feats) under torch.no_grad() on --device. The
clock runs from torch.load of the model to the last embedding (on a GPU after
torch.cuda.synchronize). It writes the embeddings as a float32 .npy, rows in wav.scp order, and
prints one JSON line: seconds, audio seconds, utterances, frames, the network's arithmetic
(counted by forward hooks after the timing) and the device's float32 matrix-product rate (the
ceiling), with the versions.

Only PyTorch is required. torchaudio is used when it imports; otherwise the audio is read with
Python's wave module (16-bit PCM WAV: the same values) and the fbank comes from the file
torchaudio/compliance/kaldi.py given by --kaldi (tools/gpu_check/prepare.sh carries Debian's
python3-torchaudio one: fetched reference code, never committed), so that a machine with a bare
PyTorch (the GPU machines) runs the same front end.
"""
import argparse
import importlib
import importlib.util
import json
import math
import os
import struct
import sys
import tempfile
import time
import types
import wave

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from margin_step import MODELS, load_wespeaker  # noqa: E402
from npy import write_npy  # noqa: E402

FEAT_DIM = 80
SAMPLE_RATE = 16000


def config_yaml(model, embed_dim, kwargs):
    """config.yaml's model, model_args and dataset_args as WeSpeaker's training dumps them."""
    lines = [f"model: {model}", "model_args:", f"  feat_dim: {FEAT_DIM}", f"  embed_dim: {embed_dim}"]
    for key, value in kwargs.items():
        lines.append(f"  {key}: {str(value).lower() if isinstance(value, bool) else value}")
    lines += ["dataset_args:", f"  resample_rate: {SAMPLE_RATE}", "  fbank_args:", f"    num_mel_bins: {FEAT_DIM}",
              "    frame_shift: 10", "    frame_length: 25", "    dither: 1.0"]
    return "\n".join(lines) + "\n"


def build(model_name):
    module, kwargs, embed_dim = MODELS[model_name]
    ctor = getattr(importlib.import_module(f"wespeaker.models.{module}"), model_name)
    return ctor(feat_dim=FEAT_DIM, embed_dim=embed_dim, **kwargs), embed_dim, kwargs


def make_model(a):
    torch.manual_seed(1)
    model, embed_dim, kwargs = build(a.model)
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name.endswith("running_mean"):
                buffer.uniform_(-0.1, 0.1)
            elif name.endswith("running_var"):
                buffer.uniform_(0.5, 1.5)
    os.makedirs(a.out, exist_ok=True)
    torch.save(model.state_dict(), os.path.join(a.out, "avg_model.pt"))
    with open(os.path.join(a.out, "config.yaml"), "w") as f:
        f.write(config_yaml(a.model, embed_dim, kwargs))


def front_end(kaldi_path, use_torchaudio=True):
    """(load, fbank, description): torchaudio's, or the wave module and the kaldi.py file at
    kaldi_path (when torchaudio does not import, or not use_torchaudio)."""
    if use_torchaudio and importlib.util.find_spec("torchaudio") is not None:
        import torchaudio
        import torchaudio.compliance.kaldi as kaldi

        def load(path):
            pcm, rate = torchaudio.load(path, normalize=False)
            return pcm.to(torch.float), rate
        return load, kaldi.fbank, f"torchaudio {torchaudio.__version__}"
    if not kaldi_path or not os.path.exists(kaldi_path):
        sys.exit("embed_loop: torchaudio not used and no --kaldi file (torchaudio/compliance/kaldi.py) given")
    # kaldi.py imports torchaudio for its MFCC's DCT matrix only; fbank does not touch it. Where
    # torchaudio is importable, the real one serves; else an empty module stands in for the import.
    if importlib.util.find_spec("torchaudio") is None:
        sys.modules.setdefault("torchaudio", types.ModuleType("torchaudio"))
    spec = importlib.util.spec_from_file_location("torchaudio_compliance_kaldi", kaldi_path)
    kaldi = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kaldi)

    def load(path):
        with wave.open(path, "rb") as w:
            if w.getsampwidth() != 2:
                sys.exit(f"embed_loop: {path}: not 16-bit PCM (the wave module reads only that here)")
            frames = w.readframes(w.getnframes())
            channels, rate = w.getnchannels(), w.getframerate()
        samples = torch.tensor(struct.unpack(f"<{len(frames) // 2}h", frames), dtype=torch.float)
        return samples.view(-1, channels).t().contiguous(), rate
    return load, kaldi.fbank, f"torchaudio's compliance/kaldi.py from {kaldi_path}, wave"


def embed(a):
    device = torch.device(a.device)
    torch.set_num_threads(os.cpu_count())
    load, fbank, audio_lib = front_end(a.kaldi, not a.no_torchaudio)

    def wait():
        if device.type == "cuda":
            torch.cuda.synchronize(device)

    files = [line.split(None, 1) for line in open(a.scp).read().splitlines() if line.strip()]
    start = time.perf_counter()
    state = torch.load(os.path.join(a.model_dir, "avg_model.pt"), map_location="cpu")
    state = {k: v for k, v in state.items() if not k.startswith("projection.")}
    model, _, _ = build(a.model)
    model.load_state_dict(state, strict=True)
    model = model.eval().to(device)
    embeddings, seconds, frames = [], 0.0, []
    for _, path in files:
        pcm, rate = load(path)
        seconds += pcm.shape[1] / rate
        feat = fbank(pcm, num_mel_bins=FEAT_DIM, frame_length=25, frame_shift=10, sample_frequency=rate,
                     window_type="hamming")
        feat = (feat - torch.mean(feat, dim=0)).unsqueeze(0).to(device)
        with torch.no_grad():
            outputs = model(feat)
        outputs = outputs[-1] if isinstance(outputs, tuple) else outputs
        embeddings.append(outputs[0].cpu())
        frames.append(feat.shape[1])
    wait()
    elapsed = time.perf_counter() - start

    # The network's arithmetic, after the timing: 2 x multiply-adds of every convolution and
    # linear layer (output elements x input channels per group x kernel size), from hooks on one
    # pass over two lengths; the count is linear in the frame count.
    def count(n_frames):
        total = [0]

        def hook(module, inputs, output):
            if isinstance(module, (torch.nn.Conv1d, torch.nn.Conv2d)):
                total[0] += 2 * output.numel() * module.in_channels // module.groups * math.prod(module.kernel_size)
            elif isinstance(module, torch.nn.Linear):
                total[0] += 2 * output.numel() * module.in_features
        handles = [m.register_forward_hook(hook) for m in model.modules()
                   if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Linear))]
        with torch.no_grad():
            model(torch.zeros(1, n_frames, FEAT_DIM, device=device))
        for h in handles:
            h.remove()
        return total[0]
    short, long = count(400), count(1200)
    slope = (long - short) / 800.0
    flop = sum(slope * n + (short - slope * 400) for n in frames)
    # The device's float32 matrix-product rate (the CPU's with the same threads): the ceiling.
    # PyTorch's default math: on a GPU no TF32 for matrix products.
    n = 8192 if device.type == "cuda" else 2048
    x, y = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    torch.mm(x, y)
    wait()
    rates = []
    for _ in range(5):
        t = time.perf_counter()
        torch.mm(x, y)
        wait()
        rates.append(2 * n ** 3 / (time.perf_counter() - t))
    write_npy(a.out, [e.tolist() for e in embeddings])
    print(json.dumps({"seconds": elapsed, "audio_seconds": seconds, "utterances": len(files), "frames": sum(frames),
                      "network_flop": flop, "sgemm_flop_per_s": max(rates), "sgemm_size": n,
                      "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                      "torch": torch.__version__, "audio": audio_lib}))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("command", choices=["make-model", "embed"])
    source = p.add_mutually_exclusive_group(required=True)
    source.add_argument("--wespeaker-checkout", help="a folder holding WeSpeaker's wespeaker/models/*.py")
    source.add_argument("--wespeaker-git-dir", help="a (bare) WeSpeaker git directory")
    p.add_argument("--model", choices=["ResNet34", "ECAPA_TDNN_GLOB_c512"], default="ResNet34")
    p.add_argument("--out", required=True, help="make-model: the model directory; embed: the .npy file")
    p.add_argument("--model-dir", help="embed: the model directory of make-model")
    p.add_argument("--scp", help="embed: a wav.scp of WAV files")
    p.add_argument("--device", default="cpu", help="embed: cpu, cuda or cuda:N")
    p.add_argument("--kaldi", help="embed: torchaudio/compliance/kaldi.py, used when torchaudio does not import")
    p.add_argument("--no-torchaudio", action="store_true", help="embed: the wave module and --kaldi even where "
                                                                "torchaudio imports (to compare the two)")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        load_wespeaker(a, tmp)
        if a.command == "make-model":
            make_model(a)
        else:
            if not a.model_dir or not a.scp:
                p.error("embed needs --model-dir and --scp")
            embed(a)


if __name__ == "__main__":
    main()
