#!/usr/bin/env python3
"""Runs asvcpp's benchmarks side by side with peers and writes results.md and results.json.

  python3 tools/bench/run_benchmarks.py --build build --out bench_out            # everything
  python3 tools/bench/run_benchmarks.py --quick --no-peers --build build --out /tmp/b  # smoke test

Cases (the benchmark issue): 1 MFCC + VAD (asv_bench_features), 2 training step (asv_bench_train), 3 PLDA back-end, 4 config
resolution (asv_bench_config), 5 experiment database (asv_bench_db), 6 memory of asvrun's stages 1, 5, 7, 9 on the
demo corpus and stage 5's data-wait share; 7 (only with --cases 7) the cosine back end at Vox1-O+E+H size
(asv_bench_scoring). Each asvcpp program warms up
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
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
PEERS = os.path.join(HERE, "peers")
ROOT = os.path.dirname(os.path.dirname(HERE))
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


def spread(values):
    """Median, min, max and count of repeated measurements, as timing() reports them."""
    return {"median": statistics.median(values), "min": min(values), "max": max(values), "repeats": len(values)}


def bin_path(build, name):
    path = os.path.join(build, "tools", "bench", name)
    if not os.path.exists(path):
        raise RuntimeError(f"{path} not built (cmake --build {build} --target {name})")
    return path


def time_command(cmd, cwd, warmup, repeats):
    """Wall seconds of a whole command (process start to exit, output discarded), repeated; and the
    CPU seconds (user + system) of its last run."""
    times = []
    for i in range(warmup + repeats):
        before = os.times()
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
        if i >= warmup:
            times.append(time.perf_counter() - start)
        after = os.times()
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    return spread(times), cpu


# Files of one config `bad` whose lines are all wrong, in four ways (a file of 100,000 bad lines
# must be reported well within a second: the first 50 errors in full, then their count).
BAD_LINES = {
    "unknown names": lambda i: f"network.nosuchkey{i} = 1",
    "one unknown name, repeated": lambda i: "network.nosuchkey = 1",
    "bad choice, repeated": lambda i: "network.activation = 'rleu'",
    "syntax errors": lambda i: "network.max_epochs = = 1",
}


def asvtorch_python(args, venv):
    """A Python that can import torch, for ASVtorch's settings modules; None when there is none."""
    candidates = [args.asvtorch_python] if args.asvtorch_python else (
        [venv.python] if venv.has("torch") else []) + ["python3", "/usr/bin/python3"]
    for python in candidates:
        ok = subprocess.run([python, "-c", "import torch"], capture_output=True)
        if ok.returncode == 0:
            return python
    return None


def case_config(args, tmp, venv):
    blocks, depth = (200, 10) if args.quick else (10000, 10)
    out = os.path.join(tmp, "config.json")
    run_configs = os.path.join(tmp, "config_run_configs")
    cmd = [bin_path(args.build, "asv_bench_config"), "--blocks", str(blocks), "--depth", str(depth), "--json", out,
           "--write", run_configs]
    cmd += ["--repeats", "2", "--warmup", "0"] if args.quick else ["--repeats", "5", "--budget-s", "60"]
    run_json(cmd)
    r = json.load(open(out))
    # What a user waits for: `asvrun show` of one config, process start to exit (asvrun links no
    # LibTorch: loading it took 0.6-0.9 s of every command before).
    asvrun = os.path.join(args.build, "tools", "asvrun", "asvrun")
    show = [asvrun, "show", "voxceleb/xvector", r["deepest_config"], "--run-configs", run_configs]
    warmup, repeats = (0, 2) if args.quick else (1, 10)
    subprocess.run(show, check=True, stdout=subprocess.DEVNULL, cwd=tmp)
    show_timing, _ = time_command(show, tmp, warmup, repeats)
    # The peer: ASVtorch's own loader (its settings modules, from a checkout given by --asvtorch),
    # resolving the same config of the same file with its x-vector recipe's init config, as its
    # run.py does before the first stage. Its settings module imports PyTorch.
    peers = {}
    if args.asvtorch and (args.asvtorch_python or not args.no_peers):
        python = asvtorch_python(args, venv)
        configs = os.path.join(args.asvtorch, "asvtorch", "recipes", "voxceleb", "xvector", "configs")
        if python is None:
            peers["ASVtorch loader"] = "no Python with torch (--asvtorch-python)"
        elif not os.path.isdir(configs):
            peers["ASVtorch loader"] = f"not an ASVtorch checkout: {args.asvtorch}"
        else:
            loader = [python, os.path.join(PEERS, "asvtorch_loader.py"), args.asvtorch,
                      os.path.join(configs, "init_config.py"), os.path.join(configs, "mfcc.conf"), run_configs,
                      r["deepest_config"]]
            subprocess.run(loader, check=True, stdout=subprocess.DEVNULL, cwd=tmp)
            torch_version = subprocess.run([python, "-c", "import torch; print(torch.__version__)"],
                                           capture_output=True, text=True).stdout.strip()
            peers[f"ASVtorch loader (torch {torch_version})"], _ = time_command(loader, tmp, warmup, repeats)
    note_all = "target < 1 s" + (" (extrapolated from a partial run: too slow to finish)"
                                 if r.get("resolve_all_extrapolated") else "")
    size = f"{blocks} blocks, depth {depth}"
    rows = [row("4 config", f"parse+check, {size}", "s", timing(r["parse"]), {}),
            row("4 config", f"resolve one, {size}", "s", timing(r["resolve_one"]), {},
                "target < 50 ms; as asvrun reads a config: scan of the whole file, parse + check of its chain"),
            row("4 config", f"asvrun show of one config, whole command, {size}", "s", show_timing, peers,
                "process start to exit, as a user waits for it; target >= 30x ASVtorch's loader"),
            row("4 config", f"resolve one in the parsed file, {size}", "s", timing(r["resolve_one_parsed"]), {}),
            row("4 config", f"resolve all, {size}", "s", timing(r["resolve_all"]), {}, note_all)]
    # `asvrun show` of a config of 100,000 bad lines (1,000 in quick mode): exit 2 with the
    # first 50 errors and the count of the rest.
    lines = 1000 if args.quick else 100000
    for kind, line in BAD_LINES.items():
        path = os.path.join(tmp, "bad_run_configs")
        with open(path, "w") as f:
            f.write("bad\n")
            f.writelines(line(i) + "\n" for i in range(lines))
        bad = [asvrun, "show", "voxceleb/xvector", "bad", "--run-configs", path]
        status = subprocess.run(bad, capture_output=True, text=True, cwd=tmp)
        if status.returncode != 2 or f"{lines} errors in configuration" not in status.stderr:
            raise RuntimeError(f"asvrun show of {lines} lines of {kind}: exit {status.returncode}, "
                               f"{status.stderr[-300:]}")
        t, cpu = time_command(bad, tmp, warmup, repeats)
        rows.append(row("4 config", f"asvrun show of {lines} bad lines: {kind}", "s", t, {},
                        f"whole command, exit 2; CPU {cpu:.3g} s; target well under 1 s"))
    return rows


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


def train_binaries(args):
    """asv_bench_train programs to compare: --train-binary (the fair comparison: the LibTorch the
    peer's PyTorch wraps, e.g. build-cuda's against the 2.11 wheel) and --build's (e.g. Debian's
    LibTorch 1.13), whichever exist; the first is the one the target is judged on."""
    paths = []
    if args.train_binary:
        paths.append(os.path.abspath(args.train_binary))
    own = os.path.join(args.build, "tools", "bench", "asv_bench_train")
    if os.path.exists(own) and own not in paths:
        paths.append(own)
    if not paths:
        raise RuntimeError(f"{own} not built (cmake --build {args.build} --target asv_bench_train)")
    return paths


def pool_asv_rounds(results):
    """asv_bench_train JSONs of several rounds as one: the repeats of all rounds, their median,
    min and max (a failed round is returned as it is)."""
    for r in results:
        if r["runs"][0].get("status") != "ok":
            return r
    pooled = json.loads(json.dumps(results[0]))
    run = pooled["runs"][0]
    run["repeats"] = [rep for r in results for rep in r["runs"][0]["repeats"]]
    rates = [rep["frames_per_s"] for rep in run["repeats"]]
    run["frames_per_s_median"], run["frames_per_s_min"], run["frames_per_s_max"] = (
        statistics.median(rates), min(rates), max(rates))
    pooled["rounds"] = len(results)
    return pooled


def pool_peer_rounds(results):
    """train_step.py JSONs of several rounds as one (pooled rates); a failure string stays."""
    for r in results:
        if not isinstance(r, dict):
            return r
    pooled = dict(results[0])
    pooled["rates"] = [x for r in results for x in r["rates"]]
    pooled["cpu_rates"] = [x for r in results for x in r.get("cpu_rates", [])]
    pooled["frames_per_s"] = spread(pooled["rates"])
    if len(pooled["cpu_rates"]) == len(pooled["rates"]):
        pooled["frames_per_cpu_s"] = spread(pooled["cpu_rates"])
    pooled["rounds"] = len(results)
    return pooled


def case_train(args, tmp, venv):
    """Case 2: the StandardNet training step, asvcpp (asv_bench_train, 1 process) against the same
    network and step in PyTorch (peers/train_step.py), at 1 thread and at --threads.

    asvcpp runs with its caching CPU allocator (what the trainer uses) and, for the first binary,
    once more with LibTorch's default allocator, so the table shows where a difference comes from.
    The peer runs as users run it and once with PyTorch's own large-allocation knob
    THP_MEM_ALLOC_ENABLE=1 (huge pages for CPU tensors of 2 MB and more, PyTorch >= 2.1). In full
    mode the judged pair (asvcpp with the caching allocator, the peer as users run it) runs in
    --train-rounds rounds in turns and pools their repeats."""
    rounds = 1 if args.quick else args.train_rounds
    reps = [] if args.quick else ["--warmup", str(args.train_warmup), "--steps", str(args.train_steps)]
    repeats = [] if args.quick else ["--repeats", str(args.train_repeats)]
    # The reference variants run once, with as many repeats as the rounds together.
    reference_repeats = [] if args.quick else ["--repeats", str(args.train_repeats * rounds)]
    peer_ok = venv.has("torch") and os.path.exists(os.path.join(PEERS, "train_step.py"))
    torch_version = venv.version("torch") if peer_ok else None
    name = f"PyTorch {torch_version}" if torch_version else "PyTorch"
    peer_variants = [(name, {}, [])]
    if not args.quick:
        peer_variants += [(name + " THP", {"THP_MEM_ALLOC_ENABLE": "1"}, []),
                          (name + " frames-major", {}, ["--frames-major"])]
    rows = []
    runs = [0]  # a counter for the output file names

    def run_asv(binary, threads, allocator, repeat_args):
        runs[0] += 1
        out = os.path.join(tmp, f"train{threads}_{runs[0]}_{allocator}.json")
        cmd = [binary, "--nproc", "1", "--threads", str(threads), "--cpu-allocator", allocator, *reps, *repeat_args,
               "--json", out]
        if args.quick:
            cmd.append("--quick")
        run_json(cmd, timeout=3600)
        return json.load(open(out))

    def run_peer(threads, w, extra_env, extra_args, repeat_args):
        """The peer on asv_bench_train's workload `w`; its JSON, or why there is none."""
        if not peer_ok:
            return "not available"
        runs[0] += 1
        pout = os.path.join(tmp, f"train_peer{threads}_{runs[0]}.json")
        pcmd = [venv.python, os.path.join(PEERS, "train_step.py"), "--threads", str(threads), "--json", pout]
        for key in ["feat_dim", "frame_layer", "stat_size", "embedding", "speakers", "frames", "warmup", "steps"]:
            pcmd += ["--" + key.replace("_", "-"), str(w[key])]
        pcmd += ["--batch", str(w["global_batch"]), *extra_args, *(repeat_args or ["--repeats", str(w["repeats"])])]
        try:
            run_json(pcmd, env={**peer_env(threads), **extra_env}, timeout=3600)
            return json.load(open(pout))
        except RuntimeError as e:
            return f"failed: {str(e)[-160:]}"

    for threads in sorted({1, args.threads}):
        # The comparison the target is judged on (every binary with the caching allocator, and the
        # peer as users run it) runs in `rounds` rounds, asvcpp and the peer taking turns in
        # ABBA order, and pools the repeats of all rounds: slow drift of a shared machine then
        # hits both sides alike. The reference variants run once afterwards.
        binaries = train_binaries(args)
        asv_rounds = [[] for _ in binaries]
        peer_rounds = []
        for rnd in range(rounds):
            for side in (("asv", "peer") if rnd % 2 == 0 else ("peer", "asv")):
                if side == "asv":
                    for i, binary in enumerate(binaries):
                        asv_rounds[i].append(run_asv(binary, threads, "caching", repeats))
                else:  # round 0 runs asvcpp first, so its workload is known
                    peer_rounds.append(run_peer(threads, asv_rounds[0][0]["workload"], {}, [], repeats))
        results = [(i, "caching", pool_asv_rounds(r)) for i, r in enumerate(asv_rounds)]
        if not args.quick:
            results.insert(1, (0, "default", run_asv(binaries[0], threads, "default", reference_repeats)))
        w = results[0][2]["workload"]
        peers = {name: pool_peer_rounds(peer_rounds)}
        for peer_name, extra_env, extra_args in peer_variants[1:]:
            peers[peer_name] = run_peer(threads, w, extra_env, extra_args, reference_repeats)
        for i, allocator, r in results:
            run = r["runs"][0]
            if run.get("status") != "ok":
                raise RuntimeError(f"asv_bench_train: {run.get('status')}")
            asv = {"median": run["frames_per_s_median"], "min": run["frames_per_s_min"],
                   "max": run["frames_per_s_max"], "repeats": len(run["repeats"])}
            w = r["workload"]
            lt = r["libtorch"]["version"]
            notes = [f"asvcpp on LibTorch {lt}"]
            ok_peers = {k: v for k, v in peers.items() if isinstance(v, dict)}
            for k, v in ok_peers.items():
                if v["parameters"] != w["parameters"]:
                    raise RuntimeError(f"the peer's network ({k}) has {v['parameters']} parameters, asvcpp's "
                                       f"{w['parameters']}: not the same network")
            if ok_peers:
                notes.append(f"same network: {w['parameters']:,} parameters in all")
                same = torch_version and torch_version.split("+")[0] == lt
                notes.append("target >= 1.2x on the CPU (same LibTorch)" if same and i == 0 and allocator == "caching"
                             else f"reference only: LibTorch {lt}, {allocator} allocator, vs PyTorch {torch_version}")
            if rounds > 1 and allocator == "caching":
                notes.append(f"{rounds} rounds, asvcpp and the peer ({name}) in turns (ABBA), repeats pooled; "
                             "the other variants once")
            if len(peer_variants) > 1:
                notes.append("THP: the peer with THP_MEM_ALLOC_ENABLE=1; frames-major: the peer in asvcpp's "
                             "frames-major layout (train_step.py --frames-major, reference only)")
            shape = (f"{w['architecture']} {w['frame_layer']}/{w['stat_size']}/{w['embedding']}, "
                     f"{w['global_batch']}x{w['frames']}, {w['speakers']} spk")
            label = "" if allocator == "caching" else ", LibTorch's default CPU allocator"
            row_ = row("2 train", f"train step, 1 process, {threads} thr, {shape}, LibTorch {lt}{label}", "frames/s",
                       asv, {k: dict(v["frames_per_s"]) if isinstance(v, dict) else v for k, v in peers.items()},
                       "; ".join(notes), higher_better=True)
            row_["details"] = {"asvcpp": r, "peers": peers}
            rows.append(row_)
            cpu = [rep.get("rank0_frames_per_cpu_s") for rep in run["repeats"]]
            if threads == 1 and all(cpu):
                # One thread: frames per CPU second does not depend on other jobs sharing the cores.
                asv_cpu = spread(cpu)
                peers_cpu = {k: dict(v["frames_per_cpu_s"]) if isinstance(v, dict) else v for k, v in peers.items()}
                rows.append(row("2 train", f"train step per CPU second, 1 thr, {shape}, LibTorch {lt}{label}",
                                "frames/CPU-s", asv_cpu, peers_cpu,
                                "; ".join(notes[1:] + ["process CPU time (user+system)"]), higher_better=True))
    return rows


def case_features(args, tmp, venv):
    seconds = 20 if args.quick else 600
    reps = ["--warmup", "0", "--repeats", "2"] if args.quick else ["--warmup", "1", "--repeats", "5"]
    audio = os.path.join(tmp, "audio.raw")
    rows = []
    for threads in sorted({1, args.threads}):
        out = os.path.join(tmp, f"features{threads}.json")
        dump = os.path.join(tmp, "features_exact.f32")
        run_json([bin_path(args.build, "asv_bench_features"), "--seconds", str(seconds), "--threads", str(threads),
                  *reps, "--write", audio, "--dump", dump, "--json", out])
        r = json.load(open(out))
        asv = {k: v / seconds for k, v in timing(r["time"]).items() if k != "repeats"}
        asv["repeats"] = r["time"]["repeats"]
        peers = {}
        agreement = []  # without dither, first utterance
        for impl, name, needs in [("knf", "kaldi-native-fbank", ("kaldi-native-fbank", "numpy")),
                                  ("torchaudio", "torchaudio compliance.kaldi", ("torchaudio", "torch", "numpy"))]:
            if not venv.has(*needs):
                peers[name] = "not available"
                continue
            pout = os.path.join(tmp, f"features_{impl}{threads}.json")
            try:
                run_json([venv.python, os.path.join(PEERS, "features_peer.py"), "--audio", audio, "--impl", impl,
                          "--threads", str(threads), *reps, "--compare", dump, "--json", pout],
                         env=peer_env(threads), timeout=3600)
                p = json.load(open(pout))
                peers[name] = {k: p[k] / seconds for k in ["median", "min", "max"]}
                agreement.append(f"{name}: max |MFCC diff| {p['max_abs_diff']:.2g} (values up to "
                                 f"{p['max_abs_value']:.3g}), same VAD on {p['vad_agreement']:.2%} of frames")
            except RuntimeError as e:
                peers[name] = f"failed: {str(e)[-120:]}"
        rows.append(row("1 features", f"MFCC + energy VAD (mfcc.conf), {seconds} s audio, {threads} thr", "RTF", asv,
                        peers, f"{r['utterances']} utterances, {r['voiced_fraction']:.0%} voiced; RTF = time / audio; "
                        f"x real time = 1 / RTF" + ("; without dither: " + "; ".join(agreement) if agreement else "")))
    # Batched extraction on a GPU: features::BatchedMfcc in the CUDA build's asv_bench_features (the
    # one beside --train-binary), when this machine has a GPU.
    gpu_binary = os.path.join(os.path.dirname(args.train_binary), "asv_bench_features") if args.train_binary else None
    if machine_info()["gpu"] and gpu_binary and os.path.exists(gpu_binary):
        out = os.path.join(tmp, "features_gpu.json")
        try:
            run_json([gpu_binary, "--seconds", str(seconds), "--batched", "cuda", *reps, "--json", out])
            r = json.load(open(out))
            asv = {k: v / r["seconds_audio"] for k, v in timing(r["time"]).items() if k != "repeats"}
            asv["repeats"] = r["time"]["repeats"]
            rows.append(row("1 features", f"MFCC batched on the GPU, {r['seconds_audio']:g} s audio", "RTF", asv, {},
                            f"{r['utterances']} utterances in one batch, no dither, no VAD; "
                            f"{r['x_real_time']:,.0f}x real time"))
        except RuntimeError as e:
            rows.append(row("1 features", "MFCC batched on the GPU", "RTF", f"failed: {str(e)[-160:]}", {}))
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
        if peer and "numpy_same_algebra_as_asvcpp" in peer:
            same = peer["numpy_same_algebra_as_asvcpp"]
            rows.append(row("3 backend", f"PLDA training, NumPy with asvcpp's one-scatter algebra, {threads} thr", "s",
                            timing(r["train"]), {np_name: timing(same["train_one_scatter"])},
                            "same identity W = T - sum n_s (m_s - m)(m_s - m)^T on both sides"))
        rows.append(row("3 backend", f"PLDA scoring, {trials}, {threads} thr", "s", timing(r["score"]),
                        {np_name: timing(peer["numpy"]["score"])} if peer else dict(na),
                        (f"max |score diff| {peer['numpy']['max_abs_score_diff']:.2g}; " if peer else "") +
                        "= scoring matrices from the model + scoring the trials (next rows)"))
        if "score_matrices" in r:
            has_parts = peer is not None and "score_matrices" in peer["numpy"]
            matrix_peers = dict(na)
            if has_parts:
                matrix_peers = {np_name: timing(peer["numpy"]["score_matrices"])}
                same = peer.get("numpy_same_algebra_as_asvcpp", {})
                if "score_matrices_partial_fractions" in same:
                    matrix_peers["NumPy/SciPy, asvcpp's algebra (two SPD inverses, eigh)"] = timing(
                        same["score_matrices_partial_fractions"])
            rows.append(row("3 backend", f"PLDA scoring matrices (once per model), {threads} thr", "s",
                            timing(r["score_matrices"]), matrix_peers,
                            "LAPACK-bound: factorisations and an eigendecomposition of 512 x 512 matrices"))
            rows.append(row("3 backend", f"PLDA scoring of {r['trials']} trials, {threads} thr", "s",
                            timing(r["score_trials"]),
                            {np_name: timing(peer["numpy"]["score_trials"])} if has_parts else dict(na),
                            "BLAS-bound: matrix products over the unique enrollment and test vectors"))
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
        # The case as the issue words it: scoring plus EER/minDCF, each side's two medians (and
        # minima, maxima) added.
        def plus(a, b):
            return {k: a[k] + b[k] for k in ("median", "min", "max")} | {"repeats": min(a["repeats"], b["repeats"])}
        rows.append(row("3 backend", f"PLDA scoring + EER/minDCF, {r['trials']} trials, {threads} thr", "s",
                        plus(timing(r["score"]), timing(r["metrics"])),
                        {np_name: plus(timing(peer["numpy"]["score"]), timing(peer["numpy"]["metrics"]))}
                        if peer else dict(na), "sum of the scoring and EER + minDCF rows"))
    return rows


def case_scoring(args, tmp, venv):
    """Case 7 (only when asked: --cases 7): the cosine back end at Vox1-O+E+H size, asv_bench_scoring
    against peers/backend_scoring.py (NumPy only), at 1 thread and --threads; every step timed once,
    wall and CPU seconds; the peer fails the case when it disagrees with asvcpp's outputs."""
    sizes = (["--utterances", "3000", "--speakers", "100", "--dim", "64", "--speaker-rank", "32", "--cohort", "600",
              "--backend-vectors", "2000", "--calibration-trials", "2000", "--list-sizes", "500", "3000", "3000",
              "--top-n", "50"] if args.quick else [])
    rows = []
    for threads in sorted({1, args.threads}):
        data = os.path.join(tmp, f"scoring{threads}")
        out = os.path.join(tmp, f"scoring{threads}.json")
        run_json([bin_path(args.build, "asv_bench_scoring"), *sizes, "--threads", str(threads), "--write", data,
                  "--json", out])
        r = json.load(open(out))
        peer = None
        if venv.has("numpy"):
            pout = os.path.join(tmp, f"scoring_peer{threads}.json")
            run_json([venv.python, os.path.join(PEERS, "backend_scoring.py"), data, "--threads", str(threads),
                      "--asvcpp-json", out, "--json", pout], env=peer_env(threads))
            peer = json.load(open(pout))
        size = f"{r['utterances']} x {r['dim']}, {r['trials']} trials, cohort {r['cohort']}, top {r['top_n']}"
        eers = " / ".join(f"{l['eer_percent']:.3f}" for l in r["lists"])
        for step, label in [("total", f"cwl + cosine + AS-norm + calibration + metrics, {size}"),
                            ("snorm_stats", "of which the s-norm statistics")]:
            for kind in ("wall_s", "cpu_s"):
                def one(x):
                    return {"median": x, "min": x, "max": x, "repeats": 1}
                peers = {"NumPy": one(peer[step][kind])} if peer else {"NumPy": "not available"}
                rows.append(row("7 scoring", f"{label}, {threads} thr, {kind[:-2]} time", "s", one(r[step][kind]),
                                peers, f"EER O/E/H {eers} %" if step == "total" and kind == "wall_s" else ""))
    return rows


def process_tree_rss_kb(root):
    """Summed VmRSS (kB) of `root` and all its descendants (asvrun may launch worker processes)."""
    parents = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
            parents[int(entry)] = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError, IndexError):
            continue
    tree, frontier = {root}, [root]
    while frontier:
        pid = frontier.pop()
        for child, parent in parents.items():
            if parent == pid and child not in tree:
                tree.add(child)
                frontier.append(child)
    total = 0
    for pid in tree:
        try:
            with open(f"/proc/{pid}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
                        break
        except OSError:
            pass
    return total


RSS_KINDS = ("heap", "anonymous", "jit", "files", "other")


def rss_by_kind_kb(pid):
    """RSS (kB) of one process split by the kind of mapping, from /proc/PID/smaps: "heap" (glibc's
    main heap, [heap]), "anonymous" (anonymous read-write mappings: asvcpp's caching allocator,
    large malloc chunks, thread stacks and arenas), "jit" (anonymous executable mappings: oneDNN's
    generated kernels), "files" (libraries and other mapped files), "other" ([stack], [vdso], ...).
    None when the process is gone."""
    kinds = dict.fromkeys(RSS_KINDS, 0)
    kind = None
    try:
        with open(f"/proc/{pid}/smaps") as f:
            for line in f:
                if line.startswith("Rss:"):
                    kinds[kind] += int(line.split()[1])
                elif not line[0].isupper():  # a mapping's header: "start-end perms offset dev inode [path]"
                    fields = line.split(maxsplit=5)
                    path = fields[5].strip() if len(fields) > 5 else ""
                    if path == "[heap]":
                        kind = "heap"
                    elif path.startswith("/"):
                        kind = "files"
                    elif path and not path.startswith("[anon"):
                        kind = "other"
                    else:
                        kind = "jit" if "x" in fields[1] else "anonymous"
    except (OSError, ValueError, IndexError, KeyError):
        return None
    return kinds


def run_sampled(cmd, cwd, log_path, interval=0.2, kinds_interval=None):
    """Runs cmd, sampling its process tree's RSS every `interval` s, and with `kinds_interval` (s)
    also the RSS of cmd's own process by kind of mapping (rss_by_kind_kb; reading smaps costs a few
    ms, hence the longer interval). Returns (exit status, ru_maxrss of the child in kB (os.wait4),
    [(unix time, tree RSS kB)], wall seconds, [(unix time, {kind: kB})])."""
    log(" ".join(cmd))
    samples = []
    kind_samples = []
    start = time.time()
    with open(log_path, "w") as logf:
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=logf, stderr=subprocess.STDOUT)
        done = threading.Event()

        def sample():
            next_kinds = time.time() + (kinds_interval or 0)  # not before cmd has started
            while not done.is_set():
                now = time.time()
                samples.append((now, process_tree_rss_kb(proc.pid)))
                if kinds_interval is not None and now >= next_kinds:
                    kinds = rss_by_kind_kb(proc.pid)
                    if kinds is not None:
                        kind_samples.append((now, kinds))
                    next_kinds = now + kinds_interval
                done.wait(interval)

        sampler = threading.Thread(target=sample, daemon=True)
        sampler.start()
        _, status, usage = os.wait4(proc.pid, 0)
        done.set()
        sampler.join()
        proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, usage.ru_maxrss, samples, time.time() - start, kind_samples


def db_time(text):
    """The experiment database's UTC timestamps ('2026-11-21T10:02:03.164Z') as unix time."""
    return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


def case_memory(args, tmp, venv):
    """Case 6: peak resident memory of asvrun's stages 1 (features), 5 (training), 7 (embedding
    extraction) and 9 (scoring) on the demo corpus, RSS across the training epochs, and the share
    of stage 5's training time the step waited for data. Each stage runs as its own asvrun process of the `demo` config
    (stage 0 runs too: the others need its outputs)."""
    del venv
    asvrun = os.path.join(args.build, "tools", "asvrun", "asvrun")
    if not os.path.exists(asvrun):
        raise RuntimeError(f"{asvrun} not built (cmake --build {args.build} --target asvrun)")
    work = os.path.join(tmp, "memory")
    os.makedirs(work, exist_ok=True)
    make_corpus = [sys.executable, os.path.join(ROOT, "tools", "make_demo_corpus.py")]
    if args.quick and args.small_corpus:
        corpus = os.path.abspath(args.small_corpus)  # made earlier; only read
        make_corpus = None
    elif args.quick:
        corpus = os.path.join(tmp, "demo_small")
        make_corpus += ["--small", "--out", corpus]
    else:
        corpus = os.path.abspath(args.demo_corpus)
        make_corpus += ["--out", corpus]  # tools/demo.sh's corpus; returns at once when up to date
    if make_corpus:
        log(" ".join(make_corpus))
        made = subprocess.run(make_corpus, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if made.returncode != 0:
            raise RuntimeError(f"make_demo_corpus.py exited with {made.returncode}: {made.stdout[-1000:]}")
    sets = [f"paths.output_folder={os.path.join(work, 'out')}",
            f"paths.feature_and_list_folder={os.path.join(work, 'datasets')}",
            "paths.datasets={'voxceleb1': '%s', 'voxceleb2': '%s'}" % (os.path.join(corpus, "voxceleb1"),
                                                                       os.path.join(corpus, "voxceleb2")),
            f"network.max_epochs={2 if args.quick else args.memory_epochs}"]
    if args.quick:  # the tiny network and corpus settings of tests/tools/recipe_e2e_test.cc
        sets += ["recipe.min_speech_frames=50", "recipe.min_utterances_per_speaker=2",
                 "recipe.plda_speakers_during_training=5", "network.frame_layer_size=32", "network.stat_size=64",
                 "network.embedding_size=16", "network.min_clip_size=40", "network.max_clip_size=60",
                 "network.minibatch_size=8", "network.utts_per_speaker_in_epoch=8",
                 "network.validation_utterances=2", "network.epochs_per_train_call=1", "network.print_interval=5",
                 "backend.scoring=cosine", "computing.network_dataloader_workers=1"]
    db_path = os.path.join(work, "out", "experiments.db")
    kinds_interval = 0.2 if args.quick else 2.0  # stage 5's RSS by kind of mapping (s)
    stages = {}
    for stage in [0, 1, 5, 7, 9]:
        cmd = [asvrun, "voxceleb/xvector", "demo"]
        for s in sets + [f"recipe.start_stage={stage}", f"recipe.end_stage={stage}"]:
            cmd += ["--set", s]
        log_path = os.path.join(work, f"stage{stage}.log")
        status, maxrss_kb, samples, wall, kind_samples = run_sampled(cmd, work, log_path,
                                                                    kinds_interval=kinds_interval if stage == 5
                                                                    else None)
        if status != 0:
            with open(log_path) as f:
                raise RuntimeError(f"asvrun stage {stage} exited with {status}: {f.read()[-1500:]}")
        peak_kb = max([maxrss_kb] + [kb for _, kb in samples])
        stages[stage] = {"peak_rss_mb": peak_kb / 1024, "ru_maxrss_mb": maxrss_kb / 1024,
                         "sampled_peak_mb": max([kb for _, kb in samples] or [0]) / 1024, "seconds": wall,
                         "samples": samples, "kind_samples": kind_samples, "log": log_path}

    # Stage 5: RSS over each epoch (the samples after the previous epoch's row was recorded, up to
    # this epoch's row): the median, i.e. the training steps' steady state (validation and the
    # evaluations are a small share of an epoch and show in the peak instead), and the peak; and
    # the data-wait share of each epoch (epochs.data_wait_percent).
    con = sqlite3.connect(db_path)
    run_id = con.execute("SELECT MAX(run_id) FROM stages WHERE stage = 5").fetchone()[0]
    epochs = con.execute("SELECT epoch, seconds, frames_per_second, recorded_time, data_wait_percent FROM epochs "
                         "WHERE run_id = ? ORDER BY epoch", (run_id,)).fetchall()
    con.close()
    if len(epochs) < 2:
        raise RuntimeError(f"stage 5 trained {len(epochs)} epoch(s): RSS growth needs at least 2")
    samples5 = stages[5]["samples"]
    kinds5 = stages[5]["kind_samples"]
    epoch_rss = []
    previous = float("-inf")
    for epoch, seconds, fps, recorded, wait in epochs:
        t = db_time(recorded)
        window = [kb for ts, kb in samples5 if previous < ts <= t]
        kind_window = [kinds for ts, kinds in kinds5 if previous < ts <= t]
        previous = t
        if not window:  # an epoch shorter than the sampling interval (quick mode): the last sample
            window = [kb for ts, kb in samples5 if ts <= t][-1:] or [0]
        if not kind_window:
            kind_window = [kinds for ts, kinds in kinds5 if ts <= t][-1:]
        epoch_rss.append({"epoch": epoch, "seconds": seconds, "frames_per_s": fps, "recorded_time": recorded,
                          "rss_mb": statistics.median(window) / 1024, "peak_rss_mb": max(window) / 1024,
                          "rss_by_kind_mb": {k: statistics.median(kinds[k] for kinds in kind_window) / 1024
                                             for k in RSS_KINDS} if kind_window else None,
                          "data_wait_percent": wait})
    waits = {e["epoch"]: e["data_wait_percent"] for e in epoch_rss if e["data_wait_percent"] is not None}
    if not waits:
        raise RuntimeError("stage 5's epochs have no data_wait_percent in the experiment database")
    first, last = epoch_rss[0], epoch_rss[-1]
    growth = last["rss_mb"] - first["rss_mb"]

    def single(x):
        return {"median": x, "min": x, "max": x, "repeats": 1}

    corpus_note = ("tools/make_demo_corpus.py --small, tiny network (quick)" if args.quick else
                   f"demo corpus ({corpus}), config 'demo'")
    rows = []
    for stage, what in [(1, "features"), (5, "training"), (7, "embeddings"), (9, "scoring")]:
        s = stages[stage]
        note = (f"{corpus_note}; {s['seconds']:.0f} s; process tree sampled every 0.2 s "
                f"(peak {s['sampled_peak_mb']:.0f} MB), asvrun's ru_maxrss {s['ru_maxrss_mb']:.0f} MB")
        if stage == 5:
            note += f"; {len(epochs)} epochs"
        rows.append(row("6 memory", f"peak RSS, stage {stage} ({what})", "MB", single(s["peak_rss_mb"]), {}, note))
    trend = ", ".join(f"{e['rss_mb']:.0f}" for e in epoch_rss)
    peaks = ", ".join(f"{e['peak_rss_mb']:.0f}" for e in epoch_rss)
    by_kind = ""
    if first["rss_by_kind_mb"] and last["rss_by_kind_mb"]:
        by_kind = (f"; by kind of mapping (asvrun's process, smaps every {kinds_interval:g} s, median of each epoch), "
                   f"epoch {first['epoch']} -> {last['epoch']}: " +
                   ", ".join(f"{k} {first['rss_by_kind_mb'][k]:.0f} -> {last['rss_by_kind_mb'][k]:.0f}"
                             for k in RSS_KINDS) + " MB")
    growth_row = row("6 memory", f"RSS growth, epoch {first['epoch']} -> {last['epoch']} (stage 5, median over "
                     "each epoch)", "MB", single(growth), {},
                     f"target: no growth; median RSS of each epoch: {trend} MB; peak of each epoch (validation, "
                     f"evaluations): {peaks} MB{by_kind}")
    growth_row["any_sign"] = True
    rows.append(growth_row)
    w = list(waits.values())
    wait_row = row("6 memory", "stage 5: share of training time the step waited for data", "%",
                   spread(w), {},
                   f"target < 5 %; over {len(w)} epochs (median, min-max; rank 0, epochs.data_wait_percent)")
    wait_row["any_sign"] = True
    rows.append(wait_row)
    for r in rows:
        r["details"] = {"stages": {k: {x: y for x, y in v.items() if x not in ("samples", "kind_samples")}
                                   for k, v in stages.items()},
                        "epochs": epoch_rss,
                        "rss_trace_stage5": [(round(ts - samples5[0][0], 2), kb) for ts, kb in samples5]
                        if samples5 and r is growth_row else None}
    return rows


CASES = {"1": case_features, "2": case_train, "3": case_backend, "4": case_config, "5": case_db,
         "6": case_memory, "7": case_scoring}


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
    parser.add_argument("--cases", default="1,2,3,4,5,6",
                        help="comma-separated case numbers (7, the scoring case, only when named)")
    parser.add_argument("--out", default="bench_results", help="folder for results.md and results.json")
    parser.add_argument("--threads", type=int, default=os.cpu_count(), help="the 'all threads' thread count")
    parser.add_argument("--train-binary", help="asv_bench_train against the peer's LibTorch (e.g. build-cuda's, "
                        "torch 2.11); case 2 also runs --build's if it exists")
    parser.add_argument("--train-warmup", type=int, default=2, help="case 2: untimed steps (full mode)")
    parser.add_argument("--train-steps", type=int, default=5, help="case 2: timed steps per repeat (full mode)")
    parser.add_argument("--train-repeats", type=int, default=1,
                        help="case 2: repeats per round (full mode; the reference variants run all rounds' at once)")
    parser.add_argument("--train-rounds", type=int, default=3,
                        help="case 2: rounds in which asvcpp and the peer take turns (full mode)")
    parser.add_argument("--demo-corpus", default=os.path.join(ROOT, "demo_data"),
                        help="case 6: demo corpus folder, made by tools/make_demo_corpus.py if missing (full mode)")
    parser.add_argument("--small-corpus",
                        help="case 6 in quick mode: a corpus that tools/make_demo_corpus.py --small made earlier "
                             "(default: make one)")
    parser.add_argument("--memory-epochs", type=int, default=6, help="case 6: network.max_epochs of stage 5")
    parser.add_argument("--no-peers", action="store_true", help="asvcpp only (no venv)")
    parser.add_argument("--asvtorch", default=os.environ.get("ASVTORCH_ROOT"),
                        help="case 4: a checkout of ASVtorch (the folder holding the asvtorch package), whose "
                             "config loader is timed against asvrun show (default: $ASVTORCH_ROOT)")
    parser.add_argument("--asvtorch-python",
                        help="case 4: the Python (with torch) that runs ASVtorch's loader (default: the peers' "
                             "venv, else python3; with --no-peers, only this one)")
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
