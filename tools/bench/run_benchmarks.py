#!/usr/bin/env python3
"""Runs asvcpp's benchmarks side by side with peers and writes results.md and results.json.

  python3 tools/bench/run_benchmarks.py --build build --out bench_out            # everything
  python3 tools/bench/run_benchmarks.py --quick --no-peers --build build --out /tmp/b  # smoke test

Cases (the benchmark issue): 1 MFCC + VAD (asv_bench_features), 2 training step (asv_bench_train), 3 PLDA back-end, 4 config
resolution (asv_bench_config), 5 experiment database (asv_bench_db). Each asvcpp program warms up
and repeats and prints median/min/max; peers (tools/bench/peers/*.py) run in a virtual
environment this script creates (default ~/.cache/asvcpp-bench/venv) with pinned PyPI packages,
on the same inputs and thread count. Ratio = peer time / asvcpp time (> 1: asvcpp is faster).
Standard library only.
"""
import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
PINNED = ["numpy==2.3.4", "scipy==1.16.3", "scikit-learn==1.7.2", "threadpoolctl==3.6.0",
          "kaldi-native-fbank==1.22.3", "torch==2.11.0"]
OPTIONAL = ["torchaudio==2.11.0"]


def log(message):
    print(f"[bench] {message}", file=sys.stderr, flush=True)


def run_json(cmd, env=None, timeout=None):
    """Runs cmd, which writes JSON to a file given as its last argument's value; returns it."""
    log(" ".join(cmd))
    proc = subprocess.run(cmd, env=env, timeout=timeout, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"{cmd[0]} exited with {proc.returncode}: {proc.stderr[-2000:]}")
    return proc


def machine_info():
    info = {"cores": os.cpu_count(), "cpu": platform.processor() or platform.machine(), "gpu": None,
            "os": platform.platform(), "python": platform.python_version()}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    info["cpu"] = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20)
        if out.returncode == 0 and out.stdout.strip():
            info["gpu"] = ", ".join(out.stdout.strip().splitlines())
    except (OSError, subprocess.TimeoutExpired):
        pass
    return info


def libtorch_version():
    """Version of the LibTorch the build uses, from its headers (Debian's or the Torch_DIR one)."""
    for header in ["/usr/include/torch/csrc/api/include/torch/version.h"]:
        try:
            parts = {}
            with open(header) as f:
                for line in f:
                    fields = line.split()
                    if len(fields) == 3 and fields[1].startswith("TORCH_VERSION_"):
                        parts[fields[1][len("TORCH_VERSION_"):]] = fields[2]
            return f"{parts['MAJOR']}.{parts['MINOR']}.{parts['PATCH']}"
        except (OSError, KeyError):
            continue
    return "unknown"


class Venv:
    """The peers' virtual environment; python is None when peers are off or it cannot be made."""

    def __init__(self, path, enabled):
        self.path = path
        self.python = None
        self.available = {}
        if not enabled:
            return
        python = os.path.join(path, "bin", "python")
        try:
            if not os.path.exists(python):
                log(f"creating venv {path}")
                subprocess.run([sys.executable, "-m", "venv", path], check=True)
            for spec in PINNED + OPTIONAL:
                name = spec.split("==")[0]
                ok = subprocess.run([python, "-m", "pip", "install", "-q", spec], stdout=subprocess.DEVNULL,
                                    stderr=subprocess.PIPE, text=True)
                self.available[name] = ok.returncode == 0
                if ok.returncode != 0:
                    log(f"not available: {spec}: {ok.stderr.strip().splitlines()[-1:]}")
            self.python = python
        except (OSError, subprocess.CalledProcessError) as e:
            log(f"no peers: cannot create the venv: {e}")

    def has(self, *names):
        return self.python is not None and all(self.available.get(n, False) for n in names)

    def version(self, module):
        if self.python is None:
            return None
        out = subprocess.run([self.python, "-c", f"import {module}; print({module}.__version__)"],
                             capture_output=True, text=True)
        return out.stdout.strip() if out.returncode == 0 else None


def peer_env(threads):
    env = dict(os.environ)
    for var in ["OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"]:
        env[var] = str(threads)
    return env


def row(case, name, unit, asv, peers, note="", higher_better=False):
    """One table row: asv and each peer are {median, min, max} dicts (or a str: why there is none).
    ratio = peer time / asvcpp time; for rates (higher_better) asvcpp rate / peer rate."""
    for p in peers.values():
        if isinstance(p, dict) and isinstance(asv, dict) and asv["median"] > 0 and p["median"] > 0:
            p["ratio"] = asv["median"] / p["median"] if higher_better else p["median"] / asv["median"]
    return {"case": case, "name": name, "unit": unit, "asvcpp": asv, "peers": peers, "note": note,
            "higher_better": higher_better}


def timing(d):
    return {"median": d["median"], "min": d["min"], "max": d["max"], "repeats": d.get("repeats", 1)}


def bin_path(build, name):
    path = os.path.join(build, "tools", "bench", name)
    if not os.path.exists(path):
        raise RuntimeError(f"{path} not built (cmake --build {build} --target {name})")
    return path


def case_config(args, tmp, venv):
    del venv  # no peer: the issue sets absolute targets
    blocks, depth = (200, 10) if args.quick else (10000, 10)
    out = os.path.join(tmp, "config.json")
    cmd = [bin_path(args.build, "asv_bench_config"), "--blocks", str(blocks), "--depth", str(depth), "--json", out]
    cmd += ["--repeats", "2", "--warmup", "0"] if args.quick else ["--repeats", "5", "--budget-s", "60"]
    run_json(cmd)
    r = json.load(open(out))
    note_all = "target < 1 s" + (" (extrapolated from a partial run: too slow to finish)"
                                 if r.get("resolve_all_extrapolated") else "")
    size = f"{blocks} blocks, depth {depth}"
    return [row("4 config", f"parse+check, {size}", "s", timing(r["parse"]), {}),
            row("4 config", f"resolve one, {size}", "s", timing(r["resolve_one"]), {}, "target < 50 ms"),
            row("4 config", f"resolve all, {size}", "s", timing(r["resolve_all"]), {}, note_all)]


def case_db(args, tmp, venv):
    del venv
    writers, epochs, rows, configs = (4, 10, 20000, 50) if args.quick else (16, 1000, 1000000, 1000)
    out = os.path.join(tmp, "db.json")
    cmd = [bin_path(args.build, "asv_bench_db"), "--writers", str(writers), "--epochs", str(epochs), "--rows",
           str(rows), "--configs", str(configs), "--dir", tmp, "--json", out]
    cmd += ["--repeats", "2", "--warmup", "0"] if args.quick else ["--repeats", "5"]
    run_json(cmd)
    r = json.load(open(out))
    w = r["writers"]
    wt = {"median": w["seconds"], "min": w["seconds"], "max": w["seconds"], "repeats": 1}
    return [row("5 db", f"{writers} writers x {epochs} epochs+results", "s", wt, {},
                f"failed writes: {w['failed_writes']}, {w['writes_per_second']:.0f} writes/s"),
            row("5 db", f"best EER per config over {rows} rows", "s", timing(r["query"]), {}, "target < 100 ms")]


def case_train(args, tmp, venv):
    out = os.path.join(tmp, "train.json")
    binary = args.train_binary or bin_path(args.build, "asv_bench_train")
    cmd = [binary, "--nproc", "1", "--threads", str(args.threads), "--json", out]
    if args.quick:
        cmd.append("--quick")
    run_json(cmd, timeout=3600)
    r = json.load(open(out))
    run = r["runs"][0]
    asv = {"median": run["frames_per_s_median"], "min": run["frames_per_s_min"], "max": run["frames_per_s_max"],
           "repeats": len(run["repeats"])}
    w = r["workload"]
    peers = {}
    if venv.has("torch") and os.path.exists(os.path.join(PEERS, "train_step.py")):
        pout = os.path.join(tmp, "train_peer.json")
        pcmd = [venv.python, os.path.join(PEERS, "train_step.py"), "--threads", str(args.threads), "--json", pout]
        for key in ["feat_dim", "frame_layer", "stat_size", "embedding", "speakers", "frames", "warmup", "steps",
                    "repeats"]:
            pcmd += ["--" + key.replace("_", "-"), str(w[key])]
        pcmd += ["--batch", str(w["global_batch"])]
        run_json(pcmd, env=peer_env(args.threads), timeout=3600)
        peers["PyTorch " + (venv.version("torch") or "?")] = json.load(open(pout))["frames_per_s"]
    else:
        peers["PyTorch"] = "not available"
    shape = f"{w['architecture']} {w['frame_layer']}/{w['stat_size']}/{w['embedding']}, {w['global_batch']}x{w['frames']}"
    return [row("2 train", f"train step, 1 process, {args.threads} threads, {shape}", "frames/s", asv, peers,
                "higher is better", higher_better=True)]


def case_features(args, tmp, venv):
    seconds = 20 if args.quick else 600
    reps = ["--warmup", "0", "--repeats", "2"] if args.quick else ["--warmup", "1", "--repeats", "5"]
    audio = os.path.join(tmp, "audio.raw")
    rows = []
    for threads in sorted({1, args.threads}):
        out = os.path.join(tmp, f"features{threads}.json")
        run_json([bin_path(args.build, "asv_bench_features"), "--seconds", str(seconds), "--threads", str(threads),
                  *reps, "--write", audio, "--json", out])
        r = json.load(open(out))
        asv = {k: v / seconds for k, v in timing(r["time"]).items() if k != "repeats"}
        asv["repeats"] = r["time"]["repeats"]
        peers = {}
        for impl, name, needs in [("knf", "kaldi-native-fbank", ("kaldi-native-fbank", "numpy")),
                                  ("torchaudio", "torchaudio compliance.kaldi", ("torchaudio", "torch", "numpy"))]:
            if not venv.has(*needs):
                peers[name] = "not available"
                continue
            pout = os.path.join(tmp, f"features_{impl}{threads}.json")
            try:
                run_json([venv.python, os.path.join(PEERS, "features_peer.py"), "--audio", audio, "--impl", impl,
                          "--threads", str(threads), *reps, "--json", pout], env=peer_env(threads), timeout=3600)
                p = json.load(open(pout))
                peers[name] = {k: p[k] / seconds for k in ["median", "min", "max"]}
            except RuntimeError as e:
                peers[name] = f"failed: {str(e)[-120:]}"
        rows.append(row("1 features", f"MFCC + energy VAD (mfcc.conf), {seconds} s audio, {threads} thr", "RTF", asv,
                        peers, f"{r['utterances']} utterances, {r['voiced_fraction']:.0%} voiced; RTF = time / audio"))
    return rows


def case_backend(args, tmp, venv):
    sizes = (["--vectors", "2000", "--speakers", "100", "--dim", "64", "--plda-dim", "32", "--trial-speakers", "20",
              "--enroll", "100", "--test", "100"] if args.quick else
             ["--vectors", "50000", "--speakers", "1000", "--dim", "512", "--plda-dim", "200", "--trial-speakers",
              "200", "--enroll", "1000", "--test", "1000"])
    reps = ["--warmup", "0", "--repeats", "2"] if args.quick else ["--warmup", "1", "--repeats", "5"]
    rows = []
    for threads in sorted({1, args.threads}):
        data = os.path.join(tmp, f"backend{threads}")
        out = os.path.join(tmp, f"backend{threads}.json")
        run_json([bin_path(args.build, "asv_bench_backend"), *sizes, *reps, "--threads", str(threads), "--write", data,
                  "--json", out])
        r = json.load(open(out))
        peer = None
        if venv.has("numpy", "scipy", "threadpoolctl"):
            pout = os.path.join(tmp, f"backend_peer{threads}.json")
            run_json([venv.python, os.path.join(PEERS, "plda_backend.py"), "--dir", data, "--meta", out, "--threads",
                      str(threads), *reps, "--json", pout], env=peer_env(threads))
            peer = json.load(open(pout))
        size = f"{r['vectors']}x{r['dim']}, {r['speakers']} spk"
        trials = f"{r['trials']} trials, plda_dim {r['plda_dim']}"
        np_name = "NumPy/SciPy"
        na = {np_name: "not available"}
        rows.append(row("3 backend", f"PLDA closed-form training, {size}, {threads} thr", "s", timing(r["train"]),
                        {np_name: timing(peer["numpy"]["train"])} if peer else dict(na)))
        rows.append(row("3 backend", f"PLDA scoring, {trials}, {threads} thr", "s", timing(r["score"]),
                        {np_name: timing(peer["numpy"]["score"])} if peer else dict(na),
                        f"max |score diff| {peer['numpy']['max_abs_score_diff']:.2g}" if peer else ""))
        metric_peers = dict(na)
        note = f"asvcpp EER {r['eer_percent']:.4f}%, minDCF {r['min_dcf']:.4f}"
        if peer:
            metric_peers = {np_name: timing(peer["numpy"]["metrics"])}
            note += (f"; NumPy on asvcpp scores: EER {peer['numpy']['eer_percent_on_asvcpp_scores']:.4f}%, "
                     f"minDCF {peer['numpy']['min_dcf_on_asvcpp_scores']:.4f}; on own scores: EER "
                     f"{peer['numpy']['eer_percent']:.4f}%")
            sk = peer.get("sklearn")
            if isinstance(sk, dict):
                metric_peers["scikit-learn roc_curve"] = timing(sk["metrics"])
                note += f"; sklearn roc_curve EER on asvcpp scores {sk['eer_percent_on_asvcpp_scores']:.4f}%"
            else:
                metric_peers["scikit-learn roc_curve"] = "not available"
        rows.append(row("3 backend", f"EER + minDCF, {r['trials']} trials, {threads} thr", "s", timing(r["metrics"]),
                        metric_peers, note))
    return rows


CASES = {"1": case_features, "2": case_train, "3": case_backend, "4": case_config, "5": case_db}


def fmt_time(t):
    if t is None:
        return "-"
    if isinstance(t, str):
        return t
    return f"{t['median']:.4g} ({t['min']:.3g}-{t['max']:.3g})"


def write_markdown(path, meta, rows):
    lines = ["# asvcpp benchmarks", "",
             f"Date: {meta['date']}  ", f"Machine: {meta['machine']['cores']} cores, {meta['machine']['cpu']}, "
             f"GPU: {meta['machine']['gpu'] or 'none'}  ",
             f"LibTorch (asvcpp): {meta['libtorch']}; PyTorch (peers): {meta['pytorch'] or 'not installed'}  ",
             f"Mode: {'quick' if meta['quick'] else 'full'}; threads: {meta['threads']}", "",
             "Times: median (min-max) over repeats after warm-up. Ratio = peer time / asvcpp time (> 1: asvcpp faster).", "",
             "| case | benchmark | unit | asvcpp | peer | peer figure | ratio | note |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        peers = r["peers"] or {"-": None}
        for name, p in peers.items():
            ratio = f"{p['ratio']:.2f}" if isinstance(p, dict) and "ratio" in p else "-"
            lines.append(f"| {r['case']} | {r['name']} | {r['unit']} | {fmt_time(r['asvcpp'])} | {name} | "
                         f"{fmt_time(p)} | {ratio} | {r['note']} |")
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default="build", help="CMake build folder with tools/bench/asv_bench_*")
    parser.add_argument("--quick", action="store_true", help="tiny sizes (seconds): the test's smoke run")
    parser.add_argument("--cases", default="1,2,3,4,5", help="comma-separated case numbers")
    parser.add_argument("--out", default="bench_results", help="folder for results.md and results.json")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="the 'all threads' thread count")
    parser.add_argument("--train-binary", help="asv_bench_train to use (default: in --build)")
    parser.add_argument("--no-peers", action="store_true", help="asvcpp only (no venv)")
    parser.add_argument("--venv", default=os.path.expanduser("~/.cache/asvcpp-bench/venv"))
    args = parser.parse_args()
    args.build = os.path.abspath(args.build)
    os.makedirs(args.out, exist_ok=True)
    venv = Venv(args.venv, not args.no_peers)
    rows = []
    failures = []
    meta = {"machine": machine_info(), "libtorch": libtorch_version(), "pytorch": venv.version("torch"),
            "quick": args.quick, "threads": args.threads, "peers_available": venv.available, "failures": failures}

    def save():  # after every case, so a long run that is stopped still leaves its table
        meta["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        with open(os.path.join(args.out, "results.json"), "w") as f:
            json.dump({"meta": meta, "rows": rows}, f, indent=2)
        write_markdown(os.path.join(args.out, "results.md"), meta, rows)

    with tempfile.TemporaryDirectory(prefix="asv_bench.") as tmp:
        for case in [c.strip() for c in args.cases.split(",") if c.strip()]:
            fn = CASES.get(case)
            if fn is None:
                failures.append(f"unknown case {case}: the cases are {', '.join(sorted(CASES))}")
                continue
            try:
                rows += fn(args, tmp, venv)
            except (RuntimeError, OSError, subprocess.TimeoutExpired, KeyError, ValueError) as e:
                log(f"case {case} failed: {e}")
                failures.append(f"case {case}: {e}")
            save()
    save()
    log(f"wrote {args.out}/results.md and results.json")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
