#!/usr/bin/env python3
"""Throughput of `asvrun embed` against a WeSpeaker-style PyTorch extraction loop, on the same
audio files and the same model.

The model: WeSpeaker's ResNet34 (or --model ECAPA_TDNN_GLOB_c512) as a WeSpeaker model directory
written by PyTorch's torch.save (tools/bench/peers/embed_loop.py make-model: WeSpeaker's
constructor and initialisation with seed 1, BatchNorm statistics drawn). The files: the first
--files WAV files of a demo corpus's voxceleb1 part (tools/make_demo_corpus.py), sorted by path.

    asvcpp     `asvrun embed --model DIR --wav-scp FILE --out OUT` (asvrun-torch of --build): the
               whole command, model loading, audio decoding and batching by frame budget included.
    PyTorch    tools/bench/peers/embed_loop.py embed: WeSpeaker's extraction path of
               wespeaker/cli/speaker.py and wespeaker/bin/extract.py with batch size 1 (whole
               utterances, as extract.py runs when batch_size is 1): per file
               torchaudio.load(normalize=False), torchaudio's Kaldi fbank (80 bins, 25/10 ms,
               hamming, no dither), mean normalisation, model(feats) under torch.no_grad(); timed
               from the model's loading (torch.load + load_state_dict(strict=True)) to the last
               embedding, Python's start and imports not counted. WeSpeaker's model code is
               imported from a WeSpeaker git directory or folder at commit dfa7419.

Both use every core (PyTorch: torch.set_num_threads(os.cpu_count()); asvrun: LibTorch's default).
With --device cuda (or cuda:N) both run the network on that GPU and compute fbank on the CPU, as
WeSpeaker's extract.py does (its data loader makes the features; the model runs on the GPU):
asvrun embed --device, and the loop moves the model and each utterance's features to the GPU and
waits for the device before it stops the clock. --copies K lists each file K times (under K ids),
so that a few files make enough work for a GPU. Each side runs --repeats times; the table gives the
fastest run of each, in utterances and audio seconds per second, and the ratio asvcpp / PyTorch.
The embeddings of both sides are compared (lowest cosine), so the two did the same work.

Only PyTorch is needed (--python; torchaudio when it has it, else --kaldi, see embed_loop.py):
the GPU machines have a bare PyTorch.

    tools/bench/embed_throughput.py --wespeaker-git-dir PATH.git --corpus demo_data --work /tmp/embed
    tools/bench/embed_throughput.py ... --python /usr/bin/python3 --files 100 --repeats 3 --json out.json
    tools/bench/embed_throughput.py --wespeaker-checkout DIR --corpus AUDIO --work /tmp/embed \
        --files 12 --copies 40 --device cuda      # on a GPU (tools/gpu_check/gpu_check.py bench_embed)
"""
import argparse
import json
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PEER = os.path.join(ROOT, "tools", "bench", "peers", "embed_loop.py")
sys.path.insert(0, os.path.dirname(PEER))
from npy import cosine, read_npy  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--wespeaker-git-dir", help="a (bare) WeSpeaker git directory")
    source.add_argument("--wespeaker-checkout", help="a folder holding WeSpeaker's wespeaker/models/*.py at the golden "
                                                     "commit (tools/gpu_check/prepare.sh copies them)")
    parser.add_argument("--corpus", required=True, help="a demo corpus (tools/make_demo_corpus.py --out FOLDER)")
    parser.add_argument("--work", required=True, help="folder for the model, lists and outputs")
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build folder with asvrun")
    parser.add_argument("--python", default="/usr/bin/python3", help="python with torch (and torchaudio, or "
                                                                       "--kaldi)")
    parser.add_argument("--kaldi", help="torchaudio/compliance/kaldi.py for a --python without torchaudio")
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
    source = (["--wespeaker-checkout", args.wespeaker_checkout] if args.wespeaker_checkout
              else ["--wespeaker-git-dir", args.wespeaker_git_dir])
    subprocess.run([args.python, PEER, "make-model", *source, "--model", args.model, "--out", model_dir], check=True)
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
        kaldi = ["--kaldi", args.kaldi] if args.kaldi else []
        result = subprocess.run([args.python, PEER, "embed", *source, "--model", args.model, "--model-dir", model_dir,
                                 "--scp", scp, "--out", npy, "--device", device, *kaldi], check=True,
                                capture_output=True, text=True)
        torch_info = json.loads(result.stdout.strip().splitlines()[-1])
        torch_times.append(torch_info["seconds"])
        print(f"[embed_throughput] run {repeat + 1}: asvcpp {asvcpp_times[-1]:.2f} s, "
              f"PyTorch {torch_times[-1]:.2f} s", file=sys.stderr)

    ours = read_npy(os.path.join(args.work, "asvcpp_0", "embeddings.npy"))
    theirs = read_npy(os.path.join(args.work, "torch_0.npy"))
    if len(ours) != len(theirs):
        sys.exit(f"asvrun embed gave {len(ours)} embeddings, the PyTorch loop {len(theirs)}")
    cosines = [cosine(a, b) for a, b in zip(ours, theirs)]
    audio = torch_info["audio_seconds"]
    n = torch_info["utterances"]
    best_ours, best_theirs = min(asvcpp_times), min(torch_times)
    figures = {
        "model": args.model, "utterances": n, "audio_seconds": audio, "cpus": os.cpu_count(), "device": device,
        "device_name": torch_info["device_name"], "files": len(wavs), "copies": args.copies,
        "asvcpp_seconds": asvcpp_times, "pytorch_seconds": torch_times,
        "pytorch": f"torch {torch_info['torch']}, {torch_info['audio']}",
        "speedup": best_theirs / best_ours, "lowest_cosine": min(cosines),
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
