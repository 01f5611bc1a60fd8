#!/usr/bin/env python3
"""Peer of asv_bench_features: the same MFCC (ASVtorch's mfcc.conf: 16 kHz, 25 ms, 30 mel bins,
30 ceps, 20-7900 Hz, snip_edges false, Kaldi's dither 1.0 and energy) and Kaldi energy VAD
(voxceleb v2: threshold 5.5, mean scale 0.5, context 2, proportion 0.12; in NumPy) on the raw
int16 audio asv_bench_features --write wrote, cut into the same utterances.
--impl knf: kaldi-native-fbank, utterances on --threads threads (a thread pool);
--impl torchaudio: torchaudio.compliance.kaldi.mfcc with torch.set_num_threads(--threads).
--compare FILE: the first utterance's MFCCs and VAD without dither as asv_bench_features --dump wrote
them; the peer computes the same without dither and reports the largest absolute MFCC difference
and the share of frames with the same VAD decision."""
import argparse
import json
import statistics
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np


def vad(log_energy, threshold=5.5, mean_scale=0.5, context=2, proportion=0.12):
    thr = threshold + mean_scale * log_energy.mean()
    above = (log_energy > thr).astype(np.float64)
    n = len(above)
    c = np.concatenate([[0], np.cumsum(above)])
    lo = np.maximum(np.arange(n) - context, 0)
    hi = np.minimum(np.arange(n) + context + 1, n)
    return ((c[hi] - c[lo]) >= proportion * (hi - lo)).astype(np.float32)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--audio", required=True)
    p.add_argument("--impl", choices=["knf", "torchaudio"], required=True)
    p.add_argument("--utterance-seconds", type=float, default=10)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--compare", help="asv_bench_features --dump output to compare with")
    p.add_argument("--json", required=True)
    a = p.parse_args()
    audio = np.fromfile(a.audio, dtype=np.int16).astype(np.float32)
    per = int(a.utterance_seconds * 16000)
    utts = [audio[i:i + per] for i in range(0, len(audio), per)]

    if a.impl == "knf":
        import kaldi_native_fbank as knf

        def make_options(dither):
            opts = knf.MfccOptions()
            opts.frame_opts.samp_freq = 16000
            opts.frame_opts.frame_length_ms = 25
            opts.frame_opts.snip_edges = False
            opts.frame_opts.dither = dither
            opts.mel_opts.num_bins = 30
            opts.mel_opts.low_freq = 20
            opts.mel_opts.high_freq = 7900
            opts.num_ceps = 30
            opts.use_energy = True
            return opts

        opts, exact = make_options(1.0), make_options(0.0)

        def features(u, o):
            m = knf.OnlineMfcc(o)
            m.accept_waveform(16000, u.tolist())
            m.input_finished()
            return np.array([m.get_frame(i) for i in range(m.num_frames_ready)])

        def one(u):
            return vad(features(u, opts)[:, 0]).sum()

        def exact_features(u):
            return features(u, exact)

        pool = ThreadPoolExecutor(a.threads)

        def run():
            return list(pool.map(one, utts)) if a.threads > 1 else [one(u) for u in utts]
    else:
        import torch
        import torchaudio.compliance.kaldi as kaldi
        torch.set_num_threads(a.threads)
        tutts = [torch.from_numpy(u).unsqueeze(0) for u in utts]

        def features(u, dither):
            return kaldi.mfcc(u, sample_frequency=16000, frame_length=25, low_freq=20, high_freq=7900,
                              num_mel_bins=30, num_ceps=30, snip_edges=False, dither=dither, use_energy=True)

        def run():
            return [vad(features(u, 1.0)[:, 0].numpy()).sum() for u in tutts]

        def exact_features(u):
            return features(torch.from_numpy(u).unsqueeze(0), 0.0).numpy()

    result = {}
    if a.compare:
        ours = exact_features(utts[0]).astype(np.float64)
        theirs = np.fromfile(a.compare, dtype=np.float32).reshape(-1, ours.shape[1] + 1).astype(np.float64)
        if theirs.shape[0] != ours.shape[0]:
            raise SystemExit(f"frame counts differ: peer {ours.shape[0]}, asvcpp {theirs.shape[0]}")
        diff = np.abs(theirs[:, :-1] - ours)
        result["max_abs_diff"] = float(diff.max())
        result["max_abs_diff_c0_energy"] = float(diff[:, 0].max())
        result["max_abs_diff_ceps"] = float(diff[:, 1:].max())
        result["max_abs_value"] = float(np.abs(ours).max())
        result["vad_agreement"] = float((vad(ours[:, 0]) == theirs[:, -1]).mean())
        result["frames_compared"] = int(ours.shape[0])

    for _ in range(a.warmup):
        run()
    times = []
    for _ in range(a.repeats):
        t = time.perf_counter()
        run()
        times.append(time.perf_counter() - t)
    result.update({"median": statistics.median(times), "min": min(times), "max": max(times), "repeats": a.repeats,
                   "seconds_audio": len(audio) / 16000})
    with open(a.json, "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
