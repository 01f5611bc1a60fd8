#!/usr/bin/env python3
"""Epoch time and data-parallel scaling of both recipes' training stage, as asvrun runs it.

For each recipe (voxceleb/xvector: stage 5 with MFCC features from disk; voxceleb/margin: stage 5
with on-the-fly augmentation and fbank from PCM stores) and each number of processes N, this runs
the recipe's `demo` config's training stage with `asvrun --nproc-per-node N` on the CPU (Gloo),
each in a system folder of its own, and reads the epochs it recorded from the experiment database:
the wall time of every epoch (data loading, training, validation and checkpoint, as the trainer
measures it) and the training frames per second of all ranks together. The first epoch of a run
is left out (start-up: oneDNN primitives, page cache); the table shows the median of the others.

    speed-up(N)   = epoch seconds(1) / epoch seconds(N)
    efficiency(N) = speed-up(N) / N

Before the timed runs, the stages that make the training data run once per recipe (x-vector:
stages 0-1, preparation and MFCCs; margin: stages 0-1, preparation and PCM stores), into
WORK/<recipe>. The corpus is the synthetic demo corpus (tools/make_demo_corpus.py), made in
WORK/demo_data when --corpus is not given.

    tools/bench/epoch_scaling.py --work /tmp/scaling                  # 1, 2, 4 processes, 4 epochs
    tools/bench/epoch_scaling.py --work /tmp/scaling --nproc 1,2 --epochs 2 --corpus demo_data
    tools/bench/epoch_scaling.py --quick --corpus PATH --work DIR    # smoke test: tiny, seconds

Prints a Markdown table per recipe; --json writes the figures. asvrun gives every CPU worker
cores / N intra-op threads (at least 1), so all process counts share the same cores.
"""
import argparse
import json
import os
import sqlite3
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Per recipe: the stages that prepare the training data, and the training stage's own settings.
RECIPES = {
    "voxceleb/xvector": {"prepare_end": 1, "train_stage": 5},
    "voxceleb/margin": {"prepare_end": 1, "train_stage": 5},
}

# --quick: a network and an epoch small enough for a smoke test on the tiny corpus.
QUICK_SETTINGS = {
    "voxceleb/xvector": [
        "recipe.feature_extraction_datasets=['voxceleb1', 'voxceleb2_cat']",
        "recipe.min_speech_frames=50",
        "recipe.min_utterances_per_speaker=2",
        "recipe.plda_speakers_during_training=5",
        "network.frame_layer_size=32",
        "network.stat_size=64",
        "network.embedding_size=32",
        "network.min_clip_size=50",
        "network.max_clip_size=60",
        "network.utts_per_speaker_in_epoch=4",
        "network.minibatch_size=8",
        "network.validation_utterances=4",
    ],
    "voxceleb/margin": [
        "recipe.channels=16",
        "recipe.embedding_size=16",
        "recipe.num_mel_bins=20",
        "recipe.num_frames=40",
        "recipe.min_num_frames=40",
        "network.minibatch_size=8",
    ],
}


def log(message):
    print(f"[epoch_scaling] {message}", file=sys.stderr, flush=True)


def run(cmd, log_path):
    """Runs cmd from the repository root, its output appended to log_path; raises on failure."""
    with open(log_path, "a") as out:
        out.write("$ " + " ".join(cmd) + "\n")
        out.flush()
        status = subprocess.run(cmd, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT).returncode
    if status != 0:
        with open(log_path) as f:
            tail = f.read()[-4000:]
        raise RuntimeError(f"{' '.join(cmd)} failed with status {status}; the end of {log_path}:\n{tail}")


def asvrun_args(args, recipe, output, extra):
    corpus = os.path.abspath(args.corpus)
    sets = [
        f"paths.output_folder={output}",
        f"paths.datasets={{'voxceleb1': '{corpus}/voxceleb1', 'voxceleb2': '{corpus}/voxceleb2'}}",
        f"paths.musan_folder={corpus}/musan",
        f"paths.rirs_folder={corpus}/RIRS_NOISES",
        "computing.use_gpu=False",
    ]
    if args.quick:
        sets += QUICK_SETTINGS[recipe]
    sets += extra
    cmd = [args.asvrun, recipe, "demo"]
    for s in sets:
        cmd += ["--set", s]
    return cmd


def epochs_of_last_run(db_path):
    """(seconds, frames_per_second) of every epoch of the newest run in db_path, in epoch order."""
    with sqlite3.connect(f"file:{db_path}?mode=ro", uri=True) as con:
        (run_id,) = con.execute("SELECT max(id) FROM runs").fetchone()
        status = con.execute("SELECT status FROM runs WHERE id = ?", (run_id,)).fetchone()[0]
        if status != "finished":
            raise RuntimeError(f"run {run_id} in {db_path} is {status}, not finished")
        return con.execute("SELECT seconds, frames_per_second FROM epochs WHERE run_id = ? ORDER BY epoch",
                           (run_id,)).fetchall()


def measure(args, recipe, log_path):
    spec = RECIPES[recipe]
    output = os.path.join(os.path.abspath(args.work), recipe.replace("/", "_"))
    db_path = os.path.join(output, "experiments.db")
    if not os.path.exists(os.path.join(output, ".prepared")):
        log(f"{recipe}: stages 0-{spec['prepare_end']} (training data)")
        run(asvrun_args(args, recipe, output, ["recipe.start_stage=0", f"recipe.end_stage={spec['prepare_end']}"]),
            log_path)
        open(os.path.join(output, ".prepared"), "w").close()
    rows = []
    for n in args.nproc:
        stage = spec["train_stage"]
        extra = [
            f"recipe.start_stage={stage}",
            f"recipe.end_stage={stage}",
            f"paths.system_folder=scaling_{n}",
            f"network.max_epochs={args.epochs}",
            f"network.epochs_per_train_call={args.epochs}",
            "recipe.training_trial_lists=[]",  # no EER evaluation after the last epoch: not timed
        ]
        cmd = asvrun_args(args, recipe, output, extra) + ["--nproc-per-node", str(n)]
        log(f"{recipe}: {n} process(es), {args.epochs} epochs")
        start = time.monotonic()
        run(cmd, log_path)
        wall = time.monotonic() - start
        epochs = epochs_of_last_run(db_path)
        if len(epochs) != args.epochs:
            raise RuntimeError(f"{recipe} with {n} processes recorded {len(epochs)} epochs, not {args.epochs}")
        timed = epochs[1:] if len(epochs) > 1 else epochs
        seconds = [e[0] for e in timed]
        rows.append({
            "processes": n,
            "threads_each": max(1, (os.cpu_count() or 1) // n),
            "epoch_seconds": statistics.median(seconds),
            "epoch_seconds_min": min(seconds),
            "epoch_seconds_max": max(seconds),
            "frames_per_second": statistics.median(e[1] for e in timed),
            "timed_epochs": len(timed),
            "run_seconds": wall,
        })
    base = next((r for r in rows if r["processes"] == 1), None)
    for r in rows:
        r["speed_up"] = base["epoch_seconds"] / r["epoch_seconds"] if base else None
        r["efficiency"] = r["speed_up"] / r["processes"] if base else None
    return rows


def markdown(recipe, rows):
    lines = [f"{recipe} (stage 5, `demo` config)", "",
             "| processes | threads each | epoch s (median) | min - max | frames/s | speed-up | efficiency |",
             "|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        speed = f"{r['speed_up']:.2f}" if r["speed_up"] is not None else "-"
        eff = f"{r['efficiency']:.2f}" if r["efficiency"] is not None else "-"
        lines.append(f"| {r['processes']} | {r['threads_each']} | {r['epoch_seconds']:.1f} | "
                     f"{r['epoch_seconds_min']:.1f} - {r['epoch_seconds_max']:.1f} | "
                     f"{r['frames_per_second']:,.0f} | {speed} | {eff} |")
    return "\n".join(lines) + "\n"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"), help="CMake build folder with asvrun")
    parser.add_argument("--work", required=True, help="folder for the corpus (unless --corpus), outputs and logs")
    parser.add_argument("--corpus", help="an existing demo corpus (tools/make_demo_corpus.py --out FOLDER)")
    parser.add_argument("--nproc", default="1,2,4", help="process counts, comma-separated (default 1,2,4)")
    parser.add_argument("--epochs", type=int, default=4, help="epochs per run; the first is not timed (default 4)")
    parser.add_argument("--recipes", default=",".join(RECIPES), help="comma-separated (default: both)")
    parser.add_argument("--quick", action="store_true", help="tiny network and epochs: a smoke test")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()
    args.nproc = [int(n) for n in args.nproc.split(",")]
    args.asvrun = os.path.join(os.path.abspath(args.build), "tools", "asvrun", "asvrun")
    if args.epochs < 1:
        parser.error("--epochs must be at least 1")
    recipes = args.recipes.split(",")
    for recipe in recipes:
        if recipe not in RECIPES:
            parser.error(f"unknown recipe {recipe}; known: {', '.join(RECIPES)}")
    os.makedirs(args.work, exist_ok=True)
    log_path = os.path.join(os.path.abspath(args.work), "log.txt")
    if not args.corpus:
        args.corpus = os.path.join(args.work, "demo_data")
        run([sys.executable, os.path.join(ROOT, "tools", "make_demo_corpus.py"), "--out", args.corpus]
            + (["--small"] if args.quick else []), log_path)
    report = {"meta": {"cpus": os.cpu_count(), "epochs": args.epochs, "quick": args.quick,
                       "command": " ".join(sys.argv)}, "recipes": {}}
    for recipe in recipes:
        rows = measure(args, recipe, log_path)
        report["recipes"][recipe] = rows
        print(markdown(recipe, rows))
    if args.json:
        with open(args.json + ".tmp", "w") as f:
            json.dump(report, f, indent=2)
        os.replace(args.json + ".tmp", args.json)


if __name__ == "__main__":
    main()
