#!/usr/bin/env python3
"""Golden embeddings of audio, computed by WeSpeaker's own model code and WeSpeaker's front end
(the Kaldi fbank of torchaudio with the arguments of wespeaker/cli/speaker.py, then per-utterance
mean normalisation), for asvcpp's test that `asvrun embed` of a WeSpeaker model directory gives
WeSpeaker's embeddings from a WAV file, fbank included.

WeSpeaker (github.com/wenet-e2e/wespeaker) commit dfa741957e5c11f477623b6e583d67d0af25ee88, its
model files imported as they are (tools/golden/make_model_golden.py loads them; nothing of them is
copied into asvcpp), with the deterministic weights of make_model_golden.py (fill_value):

    python tools/golden/make_wespeaker_audio_golden.py --wespeaker-git-dir PATH.git OUT.json
    python tools/golden/make_wespeaker_audio_golden.py --wespeaker-git-dir PATH.git \\
        --check-export ResNet34:DIR [--check-export MODEL:DIR ...] --golden OUT.json

The second form is the other direction: it loads the avg_model.pt of each asvcpp export DIR
(`asvrun export --format wespeaker`) into WeSpeaker's model class with load_state_dict(strict=True)
and prints the cosine of its embeddings of the same audio against the golden ones.

tests/tools/golden/wespeaker_audio_golden.json was made with the first form, Debian 12's
python3-torch 1.13.1 and python3-torchaudio 0.13.1 (CPU, float32, one thread), NumPy 1.24.2,
Python 3.11.2.

The waveforms (16 kHz, 16-bit; asvcpp's test makes the same samples, tests/tools/golden_audio.h):
case c (0, 1, 2) has N_c samples (16000, 37920, 64000: 1.0, 2.37 and 4.0 s). Sample n, with
t = n / 16000 and every step in double precision, left to right as written:

    phase = (110 + 25 c) * t - (30 / (2 pi 0.9)) * cos(2 pi 0.9 t)          [cycles]
    voiced = sum over h = 1..12 of (1 / h) * (1 + 0.5 sin(2 pi 0.13 h + c)) * sin(2 pi h phase)
    envelope = 0.55 + 0.45 sin(2 pi 3.7 t + c)
    x = 1000 * envelope * voiced + 200 * (2 u(2^21 + c, n) - 1)
    sample = min(32767, max(-32768, floor(x + 0.5)))

(a voice whose pitch glides around 110 + 25 c Hz, with 12 harmonics, a syllable-rate envelope and
noise; u is make_model_golden.py's SplitMix64 uniform). sin and cos are the C library's (Python's
math module), the same functions asvcpp's test calls.
"""
import argparse
import json
import math
import os
import sys
import tempfile

import numpy as np
import torch
import torchaudio.compliance.kaldi as kaldi

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_model_golden import (MODELS, fill_value, golden_doc, load_wespeaker, uniform,  # noqa: E402
                               write_golden)

SAMPLE_RATE = 16000
LENGTHS = [16000, 37920, 64000]
NOISE_SEED = 1 << 21
AUDIO_MODELS = ["ResNet34", "ECAPA_TDNN_GLOB_c512"]


def waveform(case, samples):
    """The int16 samples of one case, as float32 (torchaudio.load(normalize=False) values)."""
    noise = uniform(NOISE_SEED + case, samples)
    two_pi = 2.0 * math.pi
    glide = 30.0 / (two_pi * 0.9)
    weights = [(1.0 / h) * (1.0 + 0.5 * math.sin(two_pi * 0.13 * h + case)) for h in range(1, 13)]
    out = np.empty(samples, dtype=np.float32)
    for n in range(samples):
        t = n / SAMPLE_RATE
        phase = (110.0 + 25.0 * case) * t - glide * math.cos(two_pi * 0.9 * t)
        voiced = 0.0
        for h in range(1, 13):
            voiced += weights[h - 1] * math.sin(two_pi * h * phase)
        envelope = 0.55 + 0.45 * math.sin(two_pi * 3.7 * t + case)
        x = 1000.0 * envelope * voiced + 200.0 * (2.0 * noise[n] - 1.0)
        out[n] = min(32767.0, max(-32768.0, math.floor(x + 0.5)))
    return out


def checksums(samples):
    """[sum of the samples, sum of (n + 1) * sample n]: the test's waveforms must match them."""
    values = [int(v) for v in samples]
    return [sum(values), sum((n + 1) * v for n, v in enumerate(values))]


def front_end(samples):
    """WeSpeaker's features of one waveform: [1, frames, 80] (wespeaker/cli/speaker.py)."""
    pcm = torch.from_numpy(samples).unsqueeze(0)
    feat = kaldi.fbank(pcm, num_mel_bins=80, frame_length=25, frame_shift=10,
                       sample_frequency=SAMPLE_RATE, window_type="hamming")
    feat = feat - torch.mean(feat, dim=0)
    return feat.unsqueeze(0)


def build(name, state=None):
    import importlib
    _, module, ctor, kwargs, gain = next(m for m in MODELS if m[0] == name)
    model = getattr(importlib.import_module(f"wespeaker.models.{module}"), ctor)(**kwargs)
    model.eval()
    if state is None:
        state = model.state_dict()
        with torch.no_grad():
            for i, (key, tensor) in enumerate(state.items()):
                if key.endswith("num_batches_tracked"):
                    tensor.zero_()
                else:
                    tensor.copy_(fill_value(key, list(tensor.shape), i, gain))
    else:
        model.load_state_dict(state, strict=True)
    return model


def embed(model, feats):
    with torch.no_grad():
        outputs = model(feats)
    outputs = outputs[-1] if isinstance(outputs, tuple) else outputs
    return outputs[0].numpy()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--wespeaker-checkout", help="a checkout of WeSpeaker at the commit")
    source.add_argument("--wespeaker-git-dir", help="a (bare) WeSpeaker git directory")
    parser.add_argument("--check-export", action="append", default=[], metavar="MODEL:DIR",
                        help="an asvcpp export of the golden model MODEL to check against --golden")
    parser.add_argument("--golden", help="the golden file (with --check-export)")
    parser.add_argument("out", nargs="?", help="output JSON file")
    args = parser.parse_args()
    torch.set_num_threads(1)
    feats = [front_end(waveform(c, n)) for c, n in enumerate(LENGTHS)]
    with tempfile.TemporaryDirectory() as tmp:
        load_wespeaker(args, tmp)
        if args.check_export:
            with open(args.golden) as f:
                golden = {m["name"]: m for m in json.load(f)["models"]}
            for item in args.check_export:
                name, folder = item.split(":", 1)
                state = torch.load(os.path.join(folder, "avg_model.pt"), map_location="cpu")
                state = {k: v for k, v in state.items() if not k.startswith("projection.")}
                model = build(name, state)
                for case, f in enumerate(feats):
                    e = embed(model, f)
                    g = np.array(golden[name]["cases"][case]["embedding"])
                    cosine = float(e @ g / (np.linalg.norm(e) * np.linalg.norm(g)))
                    print(f"{name} case {case}: cosine {cosine:.9f} with the golden embedding")
            return
        models = []
        for name in AUDIO_MODELS:
            model = build(name)
            cases = []
            for case, f in enumerate(feats):
                e = embed(model, f)
                print(f"{name} case {case}: {f.shape[1]} frames, norm {np.linalg.norm(e):.4g}",
                      file=sys.stderr)
                cases.append({"samples": LENGTHS[case], "frames": int(f.shape[1]),
                              "embedding": [float(f"{v:.9g}") for v in e]})
            models.append({"name": name, "cases": cases})
    write_golden(args.out, golden_doc("tools/golden/make_wespeaker_audio_golden.py", sample_rate=SAMPLE_RATE,
                                      checksums=[checksums(waveform(c, n)) for c, n in enumerate(LENGTHS)],
                                      models=models))


if __name__ == "__main__":
    main()
