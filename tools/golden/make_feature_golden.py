#!/usr/bin/env python3
"""Golden files for asvcpp's feature code (tests/asvcpp/features/golden/*.txt).

How the committed files were produced
-------------------------------------
    python3 tools/golden/make_feature_golden.py

run from the repository root with Python 3.11.7. The script creates a throw-away virtual
environment /tmp/asv-feature-golden-venv, installs into it from PyPI

    kaldi-native-fbank==1.22.5   (csukuangfj/kaldi-native-fbank, a C++ re-implementation of
                                  Kaldi's compute-mfcc-feats / compute-fbank-feats)
    numpy==2.4.6

and re-runs itself inside it. Every golden file starts with '#' lines recording these versions
and the command, then "# shape: ROWS COLS", then one row per line.

What is computed, on a deterministic 2.5 s test signal (see test_signal(); the C++ golden test
generates it with identical integer code and checks the checksums in the header):
  * mfcc_snip_false.txt / mfcc_snip_true.txt: kaldi_native_fbank.OnlineMfcc with ASVtorch's
    voxceleb x-vector mfcc.conf (16 kHz, 25 ms, low 20 Hz, high 7900 Hz, 30 mel bins, 30 ceps,
    snip-edges false resp. true) and --dither=0; all other options are Kaldi's defaults.
  * fbank_hamming.txt: kaldi_native_fbank.OnlineFbank, 40 mel bins, hamming window,
    use-energy true with raw-energy false, snip-edges false, dither 0.
  * vad.txt, cmn_*.txt, deltas_*.txt: kaldi-native-fbank has no VAD, sliding CMN or deltas, so
    these are NumPy transcriptions written here of Kaldi's C++ code (kaldi-asr/kaldi, commit
    f4007661): ivector/voice-activity-detection.cc ComputeVadEnergy,
    feat/feature-functions.cc SlidingWindowCmnInternal and DeltaFeatures. Their input is the
    first 10 columns of mfcc_snip_false.txt as read back from the file (values are written
    with %.9g, which round-trips float32 exactly).
This makes the MFCC/fbank goldens independent of asvcpp; the VAD/CMN/delta goldens are
independent implementations of the same published algorithm, not output of Kaldi binaries.
"""
import math
import os
import platform
import subprocess
import sys

VENV = "/tmp/asv-feature-golden-venv"
PACKAGES = ["kaldi-native-fbank==1.22.5", "numpy==2.4.6"]
OUT_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "tests", "asvcpp", "features", "golden")
COMMAND = "python3 tools/golden/make_feature_golden.py"

SAMPLE_RATE = 16000
NUM_SAMPLES = 40000  # 2.5 s


def ensure_venv():
    if sys.prefix == VENV:
        return
    if not os.path.exists(os.path.join(VENV, "bin", "python")):
        subprocess.check_call([sys.executable, "-m", "venv", VENV])
    subprocess.check_call([os.path.join(VENV, "bin", "pip"), "install", "-q"] + PACKAGES)
    os.execv(os.path.join(VENV, "bin", "python"), [os.path.join(VENV, "bin", "python")] + sys.argv)


def test_signal():
    """Integer-valued samples in the int16 range; mirrored exactly by GoldenSignal() in
    tests/asvcpp/features/golden_signal.h. Alternating 0.25 s "speech" (three sines plus LCG
    noise) and "silence" (weak LCG noise) segments, so the VAD sees both classes."""
    state = 12345
    samples = []
    for i in range(NUM_SAMPLES):
        state = (1664525 * state + 1013904223) % (1 << 32)
        noise = ((state >> 8) % 2001) - 1000  # uniform integer in [-1000, 1000]
        if (i // 4000) % 2 == 0:
            t = i / SAMPLE_RATE
            x = (3000.0 * math.sin(2.0 * math.pi * 440.0 * t)
                 + 1500.0 * math.sin(2.0 * math.pi * 1234.0 * t)
                 + 800.0 * math.sin(2.0 * math.pi * 3001.0 * t) + noise)
        else:
            x = noise / 50.0
        v = math.floor(x + 0.5)
        samples.append(max(-32768, min(32767, v)))
    return samples


def checksums(samples):
    return sum(samples), sum(v * v for v in samples)


def header(description, samples, versions):
    s, ss = checksums(samples)
    return [
        f"# asvcpp feature golden: {description}",
        f"# produced by: {COMMAND} ({versions})",
        f"# signal: n={len(samples)} sum={s} sumsq={ss}",
    ]


def write(name, lines, rows, fmt):
    path = os.path.join(OUT_DIR, name)
    ncols = len(rows[0]) if len(rows) else 0
    with open(path + ".tmp", "w") as f:
        for line in lines:
            f.write(line + "\n")
        f.write(f"# shape: {len(rows)} {ncols}\n")
        for row in rows:
            f.write(" ".join(fmt % float(v) for v in row) + "\n")
    os.replace(path + ".tmp", path)
    print(f"wrote {path} ({len(rows)} x {ncols})")


def knf_features(computer, samples):
    computer.accept_waveform(SAMPLE_RATE, [float(v) for v in samples])
    computer.input_finished()
    import numpy as np
    return np.array([computer.get_frame(i) for i in range(computer.num_frames_ready)],
                    dtype=np.float32)


def mfcc(knf, samples, snip_edges):
    o = knf.MfccOptions()
    o.frame_opts.samp_freq = SAMPLE_RATE
    o.frame_opts.frame_length_ms = 25
    o.frame_opts.dither = 0.0
    o.frame_opts.snip_edges = snip_edges
    o.mel_opts.low_freq = 20
    o.mel_opts.high_freq = 7900
    o.mel_opts.num_bins = 30
    o.num_ceps = 30
    return knf_features(knf.OnlineMfcc(o), samples)


def fbank(knf, samples):
    o = knf.FbankOptions()
    o.frame_opts.dither = 0.0
    o.frame_opts.snip_edges = False
    o.frame_opts.window_type = "hamming"
    o.mel_opts.num_bins = 40
    o.use_energy = True
    o.raw_energy = False
    return knf_features(knf.OnlineFbank(o), samples)


# ---- NumPy transcriptions of Kaldi C++ (see the module docstring) ----

def vad_energy(np, feats, threshold, mean_scale, context, proportion):
    log_energy = feats[:, 0].astype(np.float32)
    T = len(log_energy)
    thr = np.float32(threshold)
    if mean_scale != 0.0:
        # Kaldi: threshold += scale * log_energy.Sum() / T, all in float.
        total = np.float32(log_energy.astype(np.float64).sum())
        thr = np.float32(thr + np.float32(np.float32(mean_scale) * total) / np.float32(T))
    out = np.zeros(T, dtype=np.float32)
    for t in range(T):
        num = den = 0
        for t2 in range(t - context, t + context + 1):
            if 0 <= t2 < T:
                den += 1
                if log_energy[t2] > thr:
                    num += 1
        out[t] = 1.0 if num >= den * np.float32(proportion) else 0.0
    return out


def sliding_cmn(np, feats, cmn_window, min_window, norm_vars, center):
    x = feats.astype(np.float64)
    T, D = x.shape
    out = np.zeros_like(x)
    cur_sum = np.zeros(D)
    cur_sumsq = np.zeros(D)
    last_start = last_end = -1
    for t in range(T):
        if center:
            start = t - cmn_window // 2
            end = start + cmn_window
        else:
            start = t - cmn_window
            end = t + 1
        if start < 0:
            end -= start
            start = 0
        if not center and end > t:
            end = max(t + 1, min_window)
        if end > T:
            start -= end - T
            end = T
            if start < 0:
                start = 0
        if last_start == -1:
            cur_sum = x[start:end].sum(axis=0)
            cur_sumsq = (x[start:end] ** 2).sum(axis=0)
        else:
            if start > last_start:
                assert start == last_start + 1
                cur_sum = cur_sum - x[last_start]
                cur_sumsq = cur_sumsq - x[last_start] ** 2
            if end > last_end:
                assert end == last_end + 1
                cur_sum = cur_sum + x[last_end]
                cur_sumsq = cur_sumsq + x[last_end] ** 2
        n = end - start
        last_start, last_end = start, end
        out[t] = x[t] - cur_sum / n
        if norm_vars:
            if n == 1:
                out[t] = 0.0
            else:
                var = cur_sumsq / n - cur_sum ** 2 / (n * n)
                var = np.maximum(var, 1e-10)
                out[t] = out[t] * var ** -0.5
    return out.astype(np.float32)


def delta_scales(np, order, window):
    scales = [np.array([1.0], dtype=np.float32)]
    for _ in range(order):
        prev = scales[-1]
        prev_offset = (len(prev) - 1) // 2
        cur_offset = prev_offset + window
        cur = np.zeros(len(prev) + 2 * window, dtype=np.float32)
        normalizer = np.float32(0.0)
        for j in range(-window, window + 1):
            normalizer += np.float32(j * j)
            for k in range(-prev_offset, prev_offset + 1):
                cur[j + k + cur_offset] += np.float32(j) * prev[k + prev_offset]
        cur *= np.float32(1.0 / float(normalizer))  # Kaldi: Scale(1.0 / normalizer)
        scales.append(cur)
    return scales


def deltas(np, feats, order, window):
    T, D = feats.shape
    scales = delta_scales(np, order, window)
    out = np.zeros((T, D * (order + 1)), dtype=np.float32)
    for t in range(T):
        for i, s in enumerate(scales):
            m = (len(s) - 1) // 2
            acc = np.zeros(D, dtype=np.float32)
            for j in range(-m, m + 1):
                f = min(max(t + j, 0), T - 1)
                if s[j + m] != 0.0:
                    acc += s[j + m] * feats[f]
            out[t, i * D:(i + 1) * D] = acc
    return out


def read_back(np, path):
    rows = [line.split() for line in open(path) if not line.startswith("#")]
    return np.array([[np.float32(v) for v in r] for r in rows], dtype=np.float32)


def main():
    ensure_venv()
    import kaldi_native_fbank as knf
    import numpy as np
    from importlib.metadata import version
    versions = (f"kaldi-native-fbank {version('kaldi-native-fbank')}, numpy {np.__version__}, "
                f"python {platform.python_version()}")
    os.makedirs(OUT_DIR, exist_ok=True)
    samples = test_signal()

    conf = "ASVtorch voxceleb_xvector mfcc.conf (30 mel bins, 30 ceps, 20-7900 Hz), dither 0"
    for snip in (False, True):
        name = f"mfcc_snip_{'true' if snip else 'false'}.txt"
        write(name, header(f"knf OnlineMfcc, {conf}, snip-edges {str(snip).lower()}", samples,
                           versions), mfcc(knf, samples, snip), "%.9g")
    write("fbank_hamming.txt",
          header("knf OnlineFbank, 40 mel bins, window hamming, use-energy true, raw-energy "
                 "false, snip-edges false, dither 0", samples, versions),
          fbank(knf, samples), "%.9g")

    base = read_back(np, os.path.join(OUT_DIR, "mfcc_snip_false.txt"))[:, :10]
    numpy_note = "NumPy transcription of Kaldi C++ (see script docstring), input: first 10 " \
                 "columns of mfcc_snip_false.txt"
    vad = vad_energy(np, base, 5.5, 0.5, 2, 0.12)
    write("vad.txt", header(f"ComputeVadEnergy, voxceleb/v2 vad.conf (5.5, 0.5, 2, 0.12); "
                            f"{numpy_note}", samples, versions), vad.reshape(-1, 1), "%g")
    for name, args in [
        ("cmn_w300_center.txt", dict(cmn_window=300, min_window=100, norm_vars=False, center=True)),
        ("cmn_w100_center_normvars.txt",
         dict(cmn_window=100, min_window=100, norm_vars=True, center=True)),
        ("cmn_w100_left_min50.txt", dict(cmn_window=100, min_window=50, norm_vars=False,
                                         center=False)),
    ]:
        desc = ", ".join(f"{k}={v}" for k, v in args.items())
        write(name, header(f"SlidingWindowCmn {desc}; {numpy_note}", samples, versions),
              sliding_cmn(np, base, **args), "%.7g")
    write("deltas_order2_window3.txt",
          header(f"DeltaFeatures order=2 window=3; {numpy_note}", samples, versions),
          deltas(np, base, 2, 3), "%.7g")


if __name__ == "__main__":
    main()
