#!/usr/bin/env python3
"""Throughput of `asvrun embed` against a WeSpeaker-style PyTorch extraction loop, on the same
audio files and the same model.

The model: WeSpeaker's ResNet34 (or --model ECAPA_TDNN_GLOB_c512) with the deterministic golden
weights, written as a WeSpeaker model directory by PyTorch's torch.save
(tests/asvcpp/models/make_wespeaker_checkpoint.py). The files: the first --files WAV files of a
demo corpus's voxceleb1 part (tools/make_demo_corpus.py), sorted by path.

    asvcpp     `asvrun embed --model DIR --wav-scp FILE --out OUT` (asvrun-torch of --build): the
               whole command, model loading, audio decoding and batching by frame budget included.
    PyTorch    WeSpeaker's extraction path of wespeaker/cli/speaker.py and wespeaker/bin/extract.py
               with batch size 1 (whole utterances, as extract.py runs when batch_size is 1): per
               file torchaudio.load(normalize=False), torchaudio's Kaldi fbank (80 bins, 25/10 ms,
               hamming, no dither), mean normalisation, model(feats) under torch.no_grad(); timed
               from the model's loading (torch.load + load_state_dict(strict=True)) to the last
               embedding, Python's start and imports not counted. WeSpeaker's model class is
               imported from a WeSpeaker git directory at the golden commit (make_model_golden.py).

Both use every core (PyTorch: torch.set_num_threads(os.cpu_count()); asvrun: LibTorch's default).
With --device cuda (or cuda:N) both run the network on that GPU and compute fbank on the CPU, as
WeSpeaker's extract.py does (its data loader makes the features; the model runs on the GPU):
asvrun embed --device, and the loop moves the model and each utterance's features to the GPU and
waits for the device before it stops the clock. --copies K lists each file K times (under K ids),
so that a few files make enough work for a GPU. Each side runs --repeats times; the table gives the
fastest run of each, in utterances and audio seconds per second, and the ratio asvcpp / PyTorch. The
embeddings of both sides are compared (lowest cosine), so the two did the same work.

    tools/bench/embed_throughput.py --wespeaker-git-dir PATH.git --corpus demo_data --work /tmp/embed
    tools/bench/embed_throughput.py ... --python /usr/bin/python3 --files 100 --repeats 3 --json out.json
    tools/bench/embed_throughput.py --wespeaker-checkout DIR --corpus AUDIO --work /tmp/embed \
        --files 12 --copies 50 --device cuda      # on a GPU (tools/gpu_check/gpu_check.py bench_embed)
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The PyTorch side, run by --python (which needs torch, torchaudio and numpy).
TORCH_LOOP = r"""
import json, os, sys, tempfile, time
import numpy as np
import torch
import torchaudio
import torchaudio.compliance.kaldi as kaldi
sys.path.insert(0, os.path.join(sys.argv[1], "tools", "golden"))
import make_wespeaker_audio_golden as golden
import make_model_golden

class Args: pass
args = Args()
source = sys.argv[2]
args.wespeaker_git_dir = None if os.path.isdir(os.path.join(source, "wespeaker")) else source
args.wespeaker_checkout = source if args.wespeaker_git_dir is None else None
model_dir, model_name, scp, out, device = sys.argv[3:8]
device = torch.device(device)
torch.set_num_threads(os.cpu_count())
def wait():
    if device.type == "cuda":
        torch.cuda.synchronize(device)
with tempfile.TemporaryDirectory() as tmp:
    make_model_golden.load_wespeaker(args, tmp)
    files = [line.split(None, 1) for line in open(scp).read().splitlines() if line.strip()]
    start = time.perf_counter()
    state = torch.load(os.path.join(model_dir, "avg_model.pt"), map_location="cpu")
    state = {k: v for k, v in state.items() if not k.startswith("projection.")}
    model = golden.build(model_name, state).to(device)
    embeddings, seconds, frames = [], 0.0, []
    for utt, path in files:
        pcm, rate = torchaudio.load(path, normalize=False)
        pcm = pcm.to(torch.float)
        seconds += pcm.shape[1] / rate
        feat = kaldi.fbank(pcm, num_mel_bins=80, frame_length=25, frame_shift=10,
                           sample_frequency=rate, window_type="hamming")
        feat = (feat - torch.mean(feat, dim=0)).unsqueeze(0).to(device)
        with torch.no_grad():
            outputs = model(feat)
        outputs = outputs[-1] if isinstance(outputs, tuple) else outputs
        embeddings.append(outputs[0].cpu().numpy())
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
                kernel = int(np.prod(module.kernel_size))
                total[0] += 2 * output.numel() * module.in_channels // module.groups * kernel
            elif isinstance(module, torch.nn.Linear):
                total[0] += 2 * output.numel() * module.in_features
        handles = [m.register_forward_hook(hook) for m in model.modules()
                   if isinstance(m, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Linear))]
        with torch.no_grad():
            model(torch.zeros(1, n_frames, 80, device=device))
        for h in handles:
            h.remove()
        return total[0]
    short, long = count(400), count(1200)
    slope = (long - short) / 800.0
    flop = sum(slope * n + (short - slope * 400) for n in frames)
    # The device's single-precision matrix-product rate (the CPU's with the same threads): the
    # ceiling. PyTorch's default math: on a GPU no TF32 for matrix products.
    n = 8192 if device.type == "cuda" else 2048
    a, b = torch.randn(n, n, device=device), torch.randn(n, n, device=device)
    torch.mm(a, b)
    wait()
    rates = []
    for _ in range(5):
        t = time.perf_counter()
        torch.mm(a, b)
        wait()
        rates.append(2 * n ** 3 / (time.perf_counter() - t))
np.save(out, np.stack(embeddings))
print(json.dumps({"seconds": elapsed, "audio_seconds": seconds, "utterances": len(files), "frames": sum(frames),
                  "network_flop": flop, "sgemm_flop_per_s": max(rates), "sgemm_size": n,
                  "device_name": torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu",
                  "torch": torch.__version__, "torchaudio": torchaudio.__version__}))
"""


def read_npy(path):
    import numpy as np
    return np.load(path)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--wespeaker-git-dir", help="a (bare) WeSpeaker git directory")
    source.add_argument("--wespeaker-checkout", help="a folder holding WeSpeaker's wespeaker/models/*.py at the golden "
                                                     "commit (tools/gpu_check/prepare.sh copies them)")
    parser.add_argument("--corpus", required=True, help="a demo corpus (tools/make_demo_corpus.py --out FOLDER)")
    parser.add_argument("--work", required=True, help="folder for the model, lists and outputs")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build folder with asvrun")
    parser.add_argument("--python", default="/usr/bin/python3", help="python with torch and torchaudio")
    parser.add_argument("--model", default="ResNet34", choices=["ResNet34", "ECAPA_TDNN_GLOB_c512"])
    parser.add_argument("--files", type=int, default=100, help="number of WAV files (default 100)")
    parser.add_argument("--copies", type=int, default=1, help="list each file this many times (default 1)")
    parser.add_argument("--device", default="cpu", help="cpu (default), cuda or cuda:N: where both sides run the "
                                                        "network")
    parser.add_argument("--repeats", type=int, default=2, help="runs of each side; the fastest counts")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    os.makedirs(args.work, exist_ok=True)
    model_dir = os.path.join(args.work, args.model)
    subprocess.run([args.python, os.path.join(ROOT, "tests/asvcpp/models/make_wespeaker_checkpoint.py"), "10",
                    f"{model_dir}:{args.model}"], check=True)
    wavs = []
    for folder, _, names in os.walk(os.path.join(args.corpus, "voxceleb1")):
        wavs += [os.path.join(folder, n) for n in names if n.endswith(".wav")]
    wavs = sorted(wavs)[:args.files]
    if len(wavs) < args.files:
        sys.exit(f"{args.corpus}/voxceleb1 has {len(wavs)} WAV files, fewer than --files {args.files}")
    scp = os.path.join(args.work, "wav.scp")
    with open(scp, "w") as f:
        for copy in range(args.copies):
            for i, path in enumerate(wavs):
                f.write(f"utt{i:05d}_{copy} {os.path.abspath(path)}\n")

    asvrun = os.path.join(os.path.abspath(args.build), "tools", "asvrun", "asvrun")
    device = args.device
    asvcpp_times, torch_times, torch_info = [], [], None
    for repeat in range(args.repeats):
        out = os.path.join(args.work, f"asvcpp_{repeat}")
        start = time.perf_counter()
        subprocess.run([asvrun, "embed", "--model", model_dir, "--wav-scp", scp, "--out", out, "--device", device],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        asvcpp_times.append(time.perf_counter() - start)
        npy = os.path.join(args.work, f"torch_{repeat}.npy")
        result = subprocess.run([args.python, "-c", TORCH_LOOP, ROOT, args.wespeaker_checkout or args.wespeaker_git_dir,
                                 model_dir, args.model, scp, npy, device], check=True, capture_output=True, text=True)
        torch_info = json.loads(result.stdout.strip().splitlines()[-1])
        torch_times.append(torch_info["seconds"])
        print(f"[embed_throughput] run {repeat + 1}: asvcpp {asvcpp_times[-1]:.2f} s, "
              f"PyTorch {torch_times[-1]:.2f} s", file=sys.stderr)

    import numpy as np
    ours = read_npy(os.path.join(args.work, "asvcpp_0", "embeddings.npy"))
    theirs = read_npy(os.path.join(args.work, "torch_0.npy"))
    cosine = (ours * theirs).sum(1) / (np.linalg.norm(ours, axis=1) * np.linalg.norm(theirs, axis=1))
    audio = torch_info["audio_seconds"]
    n = torch_info["utterances"]
    best_ours, best_theirs = min(asvcpp_times), min(torch_times)
    figures = {
        "model": args.model, "utterances": n, "audio_seconds": audio, "cpus": os.cpu_count(), "device": device,
        "device_name": torch_info["device_name"], "files": len(wavs), "copies": args.copies,
        "asvcpp_seconds": asvcpp_times, "pytorch_seconds": torch_times,
        "pytorch": f"torch {torch_info['torch']}, torchaudio {torch_info['torchaudio']}",
        "speedup": best_theirs / best_ours, "lowest_cosine": float(cosine.min()),
    }
    print(f"| side | seconds (fastest of {args.repeats}) | utterances/s | audio s/s |")
    print("|---|---|---|---|")
    print(f"| asvrun embed | {best_ours:.2f} | {n / best_ours:.1f} | {audio / best_ours:.0f} |")
    print(f"| PyTorch loop ({figures['pytorch']}) | {best_theirs:.2f} | {n / best_theirs:.1f} | "
          f"{audio / best_theirs:.0f} |")
    where = f"{os.cpu_count()} CPUs" if device == "cpu" else f"{torch_info['device_name']} ({device})"
    print(f"\n{args.model}, {n} utterances ({len(wavs)} files x {args.copies}), {audio:.0f} s of audio, {where}: "
          f"asvcpp / PyTorch = "
          f"{figures['speedup']:.2f}x; lowest cosine between the two sides' embeddings {figures['lowest_cosine']:.6f}")
    # The ceiling: both sides do the same arithmetic, so neither can run it faster than this
    # machine multiplies large matrices.
    network_gflop = torch_info["network_flop"] / 1e9
    sgemm = torch_info["sgemm_flop_per_s"] / 1e9
    figures.update({"network_gflop": network_gflop, "sgemm_gflop_per_s": sgemm,
                    "asvcpp_gflop_per_s": network_gflop / best_ours, "pytorch_gflop_per_s": network_gflop / best_theirs})
    print(f"network arithmetic {network_gflop:.0f} GFLOP ({torch_info['frames']} frames): asvcpp "
          f"{network_gflop / best_ours:.0f} GFLOP/s, PyTorch {network_gflop / best_theirs:.0f} GFLOP/s, of a "
          f"{sgemm:.0f} GFLOP/s single-precision matrix product ({torch_info['sgemm_size']} squared, same "
          f"{'device' if device != 'cpu' else 'threads'}) here; "
          f"1.5x the PyTorch loop needs {1.5 * network_gflop / best_theirs:.0f} GFLOP/s")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(figures, f, indent=1)


if __name__ == "__main__":
    main()
