#!/usr/bin/env python3
"""GPU acceptance check of asvcpp: one command that builds asvcpp on a bare GPU machine and checks
everything that needs a GPU, then writes a report (Markdown and JSON) and prints it.

    python3 tools/gpu_check/gpu_check.py REPORT_DIR            # on the GPU machine, repository root
    python3 tools/gpu_check/gpu_check.py REPORT_DIR --cpu --build-dir build --skip-ctest
                                                               # CPU mode (what CI's test runs)

Needs what tools/gpu_check/prepare.sh makes on the development machine: .devdeps/ (the Debian
build dependencies, unpacked) for the build on the GPU machine, and .gpu_check/ (the tiny corpus's
lists and features after stages 0-2 of voxceleb/xvector; its lists and PCM stores after stages
0-1 of voxceleb/margin with the tiny MUSAN and RIRS_NOISES; WeSpeaker's model files for the
margin benchmark's peer when prepare.sh found a WeSpeaker git directory). Steps, in order (each one pass, fail or skip, with its log
under REPORT_DIR/logs/):

  environment     GPUs, driver, PyTorch/LibTorch, CUDA, NCCL and cuDNN versions, asvrun info
  build           configure and build against the machine's PyTorch with all cores (GPU mode;
                  FFmpeg's libraries are not there: -DASV_WITH_LIBAV=OFF) the targets the steps
                  need (asvrun, the two benchmarks, the GPU tests), or check --build-dir
  ctest_gpu       the tests labelled gpu (one at a time: they share the GPU), then the margin data
                  path's GPU tests by name (GPU_TESTS_BY_NAME: labelled unit, a skip fails here)
  e2e             asvrun stages 5-9 (training, embeddings, PLDA scoring) on cuda:0 in float32 and
                  in bfloat16: exit 0, stage-9 results and epochs in the experiment database
  checkpoints     a checkpoint written on the GPU resumed on the CPU, and the reverse
  margin_e2e      asvrun voxceleb/margin stages 5-9 (training with augmentation and fbank on the
                  device, averaging, large-margin fine-tuning, embeddings, cosine scoring) on cuda:0:
                  a narrow ResNet34 in fp32 and bf16, a narrow ECAPA-TDNN in fp32 (configs
                  margin_run_configs): exit 0, stage-9 results and 3 epochs in the database;
                  figures: EER, seconds, frames/s and data-wait % from the epochs table
  embed           asvrun embed and asvrun verify with the models that margin_e2e trained
                  (mc_resnet_fp32, mc_ecapa_fp32) on the voxceleb1 recordings prepare.sh carries
                  (embed_audio/), with --device cuda:0 and --device cpu: the same utterances
                  embedded, each embedding within cosine 0.9999 of the CPU's, the verify scores of
                  the first VoxCeleb trials within 1e-3 (relative) of the CPU's; the run's
                  computing.allow_tf32 applies, as in the recipe. CPU mode: the CPU side only, and
                  --device cuda refused (exit 2) by a build without CUDA
  pin_queue       two configs pinned to GPU 0 started back to back, the second with
                  --wait-for-gpu: it waits, then runs; nvidia-smi sees each worker only on GPU 0
                  and never two at once; a third without --wait-for-gpu warns that GPU 0 is held
  dist_kill       data-parallel training through asvrun's launcher with NCCL on every GPU (world
                  size 1 on a one-GPU machine: the NCCL group, bucketed all-reduce and broadcasts
                  still run; CPU mode: 2 processes over Gloo); one rank is killed: the job ends
                  within 60 s, exit status non-zero, the run marked failed, no process left
  bench_train     benchmark case 2: the StandardNet training step (asv_bench_train) against the
                  same network in PyTorch (tools/bench/peers/train_step.py) on the same device,
                  fp32 and bf16
  bench_features  benchmark case 1 on the device: batched MFCC extraction (asv_bench_features)
  bench_margin    the margin recipe's training step: asv_bench_train --model ResNet34 and
                  --model ECAPA_TDNN_GLOB_c512 against tools/bench/peers/margin_step.py (WeSpeaker's
                  model code from .gpu_check/wespeaker) on the GPU, fp32 and bf16: the ratio per
                  model and precision (target >= 1.3x); skipped in CPU mode (--only bench_margin
                  runs a tiny one on the CPU) and, after asvcpp's figures, without the WeSpeaker
                  files or the peer script
  bench_margin_data  the margin data path on the device: batched fbank (asv_bench_features
                  --batched-fbank) and batched augmentation (asv_bench_augment) in segments/s,
                  against the training step's segments/s of bench_margin
  bench_embed     asvrun embed's throughput on the GPU against a WeSpeaker-style PyTorch loop
                  (tools/bench/embed_throughput.py --device cuda) for ResNet34 and
                  ECAPA_TDNN_GLOB_c512 at full width with seeded weights, on the carried
                  recordings listed EMBED_BENCH_COPIES times; needs WeSpeaker's model files
                  (wespeaker/) and PyTorch in --python (torchaudio, or the carried
                  torchaudio_kaldi/kaldi.py for the fbank), else skipped naming what is missing;
                  skipped in CPU mode (--only bench_embed runs a tiny one on the CPU)
  ctest_rest      builds the other test programs, then runs every other test, in parallel, in the
                  time left (tests that need espeak-ng, ffmpeg or Gloo skip themselves on the GPU
                  machine)

In CPU mode the same steps run on the CPU where they can (GPU-only ones are reported as skipped),
so that the script cannot rot between GPU runs. --budget caps the whole check: a step that would
start after it is reported as skipped (out of time). To spend a short GPU loan on the margin recipe
alone: --only ctest_gpu,margin_e2e,bench_margin,bench_margin_data; on asvrun embed and verify:
--only margin_e2e,embed,bench_embed. The exit status is 0 when no step failed.
"""
import argparse
import datetime
import json
import math
import os
import platform
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools" / "bench" / "peers"))
from npy import cosine, norm, read_npy  # noqa: E402  (plain Python: the GPU machine's Python may lack NumPy)
CONFIGS = ROOT / "tools" / "gpu_check" / "configs"
RECIPE = "voxceleb/xvector"
MARGIN_RECIPE = "voxceleb/margin"
WORK_PLACEHOLDER = "@GPU_CHECK_WORK@"  # what prepare.sh writes into the lists for the work folder
# What the steps before ctest_rest run; ctest_rest builds the rest (the other test programs).
# asv_augment_test and asv_features_torch_test hold the GPU tests of the margin data path.
CHECK_TARGETS = ["asvrun", "asvrun-torch", "asv_bench_train", "asv_bench_features", "asv_bench_augment",
                 "asv_gpu_test", "asv_augment_test", "asv_features_torch_test"]
# GPU tests of the margin recipe's data path that are labelled unit, not gpu (they skip themselves
# without CUDA): ctest_gpu runs them by name and fails when they skip on the GPU machine.
GPU_TESTS_BY_NAME = ["BatchedFbank.CudaMatchesCpu", "BatchedAugmentTest.OnAGpuTheBatchEqualsTheCpusToFloatRounding"]
# The margin recipe's configs (tools/gpu_check/configs/margin_run_configs) that step margin_e2e
# runs, and the epochs each records: network.max_epochs 2, then recipe.lm_epochs 1.
MARGIN_CONFIGS = ["mc_resnet_fp32", "mc_resnet_bf16", "mc_ecapa_fp32"]
MARGIN_EPOCHS = 3
# WeSpeaker's models that step bench_margin times (asv_bench_train --model against
# tools/bench/peers/margin_step.py).
MARGIN_BENCH_MODELS = ["ResNet34", "ECAPA_TDNN_GLOB_c512"]
SEGMENT_FRAMES = 200  # the margin recipe's training segment: 200 frames (32,240 samples)
# The margin runs of step margin_e2e that step embed embeds and verifies with, on the GPU and the CPU.
EMBED_CONFIGS = ["mc_resnet_fp32", "mc_ecapa_fp32"]
EMBED_TRIALS = 6  # the first VoxCeleb trials of the carried veri_test.txt that step embed verifies
# Step bench_embed: the carried recordings (12 of the tiny corpus) each listed this many times.
EMBED_BENCH_COPIES = 40


class Skip(Exception):
    """A step that cannot run here; the message says why."""


class Fail(Exception):
    """A step whose check failed; the message says what."""


def now():
    return time.monotonic()


class Check:
    def __init__(self, args):
        self.args = args
        self.report = Path(args.report_dir).resolve()
        self.logs = self.report / "logs"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.start = now()
        self.deadline = self.start + args.budget
        self.gpu = not args.cpu
        self.steps = []
        self.env = dict(os.environ)
        self.build = None
        self.facts = {}
        self.work = None

    # ---- processes --------------------------------------------------------------------------
    def run(self, cmd, log_name, timeout, cwd=None, env=None, check=True, stdout=None):
        """Runs cmd (a list) in its own process group with its output in logs/LOG_NAME (only its
        standard error when `stdout` names a file for its standard output); kills the group at the
        timeout. Returns (exit status, output); raises Fail when check and the status is not 0."""
        log = self.logs / log_name
        started = now()
        offset = log.stat().st_size if log.exists() else 0
        with open(log, "ab") as out, open(stdout or os.devnull, "wb") as std:
            out.write(f"$ {' '.join(map(str, cmd))}{f' > {stdout}' if stdout else ''}\n".encode())
            out.flush()
            p = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=env or self.env,
                                 stdout=std if stdout else out, stderr=out if stdout else subprocess.STDOUT,
                                 start_new_session=True)
            try:
                rc = p.wait(timeout=max(1, timeout))
            except subprocess.TimeoutExpired:
                kill_group(p)
                raise Fail(f"{Path(str(cmd[0])).name} ran past {timeout:.0f} s (log: logs/{log_name})")
            finally:
                out.write(f"# exit status {p.returncode} after {now() - started:.1f} s\n".encode())
        with open(log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
        if check and rc != 0:
            raise Fail(f"{Path(str(cmd[0])).name} exited with {rc}: {tail(text)} (log: logs/{log_name})")
        return rc, text

    def spawn(self, cmd, log_name, cwd=None):
        out = open(self.logs / log_name, "ab")
        out.write(f"$ {' '.join(map(str, cmd))}\n".encode())
        out.flush()
        p = subprocess.Popen([str(c) for c in cmd], cwd=cwd, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        p.log_file = out
        return p

    def left(self):
        return self.deadline - now()

    # ---- steps ------------------------------------------------------------------------------
    def step(self, name, function, needs=(), min_seconds=5):
        entry = {"step": name, "status": "skip", "seconds": 0.0, "details": "", "figures": {}}
        self.steps.append(entry)
        started = now()
        print(f"[gpu_check] {name} ...", file=sys.stderr, flush=True)
        try:
            if name in self.args.skip:
                raise Skip("--skip")
            for need in needs:
                prior = next((s for s in self.steps if s["step"] == need), None)
                if prior is None or prior["status"] != "pass":
                    raise Skip(f"needs step '{need}'")
            if self.left() < min_seconds:
                raise Skip(f"out of time (--budget {self.args.budget:.0f} s)")
            result = function(entry["figures"])
            entry["status"] = "pass"
            entry["details"] = result or ""
        except Skip as e:
            entry["status"] = "skip"
            entry["details"] = str(e)
        except Fail as e:
            entry["status"] = "fail"
            entry["details"] = str(e)
        except Exception as e:  # a bug of this script or an unexpected output: a failed step
            entry["status"] = "fail"
            entry["details"] = f"{type(e).__name__}: {e}"
        entry["seconds"] = round(now() - started, 1)
        print(f"[gpu_check] {name}: {entry['status']} ({entry['seconds']} s) {entry['details']}", file=sys.stderr,
              flush=True)
        self.save()

    def environment(self, fig):
        fig["mode"] = "gpu" if self.gpu else "cpu"
        fig["host"] = platform.node()
        fig["cpu_cores"] = os.cpu_count()
        fig["date"] = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        fig["git_commit"] = git(["rev-parse", "--short", "HEAD"])
        fig["git_dirty"] = bool(git(["status", "--porcelain", "--untracked-files=no"]))
        if shutil.which("nvidia-smi"):
            rc, text = self.run(["nvidia-smi", "--query-gpu=index,name,memory.total,driver_version,compute_cap,uuid",
                                 "--format=csv,noheader"], "environment.log", 30, check=False)
            gpus = [l.split(", ") for l in text.splitlines() if re.match(r"^\d+, ", l)]
            fig["gpus"] = [{"index": int(g[0]), "name": g[1], "memory": g[2], "driver": g[3], "compute_cap": g[4],
                            "uuid": g[5]} for g in gpus if len(g) >= 6]
        else:
            fig["gpus"] = []
        if self.gpu and not fig["gpus"]:
            raise Fail("GPU mode but nvidia-smi lists no GPU (use --cpu on a machine without one)")
        self.facts["gpus"] = fig["gpus"]
        code = ("import json, torch; c = torch.cuda.is_available(); print(json.dumps({'torch': torch.__version__, "
                "'cuda': torch.version.cuda, 'cuda_available': c, 'gpu_count': torch.cuda.device_count(), "
                "'cudnn': torch.backends.cudnn.version() if c else None, "
                "'nccl': '.'.join(map(str, torch.cuda.nccl.version())) if c else None, "
                "'cmake_prefix_path': torch.utils.cmake_prefix_path}))")
        python = self.args.python
        rc, text = self.run([python, "-c", code], "environment.log", 120, check=False)
        line = next((l for l in reversed(text.splitlines()) if l.startswith("{")), None)
        if line:
            fig["python_torch"] = json.loads(line)
        elif self.gpu:
            raise Fail(f"{python} cannot import torch: the GPU build needs the machine's PyTorch")
        cmake = shutil.which("cmake")
        fig["cmake"] = first_line(self.run([cmake, "--version"], "environment.log", 30, check=False)[1]) if cmake \
            else None
        nvcc = shutil.which("nvcc") or ("/usr/local/cuda/bin/nvcc" if Path("/usr/local/cuda/bin/nvcc").exists() else None)
        if nvcc:
            _, text = self.run([nvcc, "--version"], "environment.log", 30, check=False)
            m = re.search(r"release ([\d.]+)", text)
            fig["nvcc"] = m.group(1) if m else None
            self.facts["nvcc_dir"] = str(Path(nvcc).parent)
        return f"{len(fig['gpus'])} GPU(s): " + ", ".join(g["name"] for g in fig["gpus"]) if fig["gpus"] else "no GPU"

    def build_step(self, fig):
        if not self.gpu:
            build = Path(self.args.build_dir or ROOT / "build").resolve()
            if not (build / "CMakeCache.txt").exists():
                raise Fail(f"{build}: not a configured build folder (tools/test.sh makes build/)")
            self.build = build
            targets = ["asvrun", "asvrun-torch", "asv_bench_train", "asv_bench_features", "asv_bench_augment"]
            if self.args.no_build:
                missing = [t for t in targets if not any(build.glob(f"tools/*/{t}"))]
                if missing:
                    raise Fail(f"{build}: not built: {', '.join(missing)}")
                return f"CPU build {build} (not rebuilt: --no-build)"
            self.run(["cmake", "--build", build, "-j", str(self.args.jobs), "--target", *targets], "build.log",
                     self.left())
            return f"CPU build {build}"
        deps = ROOT / ".devdeps" / "root"
        if not deps.is_dir():
            raise Fail(".devdeps/root missing: run tools/gpu_check/prepare.sh on the development machine and send "
                       ".devdeps along")
        torch_info = next(s for s in self.steps if s["step"] == "environment")["figures"].get("python_torch") or {}
        torch_cmake = Path(torch_info["cmake_prefix_path"])
        torch_root = torch_cmake.parent.parent
        lib = deps / "usr" / "lib" / "x86_64-linux-gnu"
        env = self.env
        env["LD_LIBRARY_PATH"] = join_path(str(lib), env.get("LD_LIBRARY_PATH"))
        cpath = [str(deps / "usr" / "include")]
        nccl_include = torch_root.parent / "nvidia" / "nccl" / "include"
        if nccl_include.is_dir():
            cpath.insert(0, str(nccl_include))
        env["CPATH"] = join_path(":".join(cpath), env.get("CPATH"))
        env["PKG_CONFIG_LIBDIR"] = f"{lib}/pkgconfig:{deps}/usr/share/pkgconfig"
        env["PKG_CONFIG_SYSROOT_DIR"] = str(deps)
        if "nvcc_dir" in self.facts:
            env["PATH"] = join_path(self.facts["nvcc_dir"], env.get("PATH"))
        caps = sorted({g["compute_cap"] for g in self.facts.get("gpus", []) if g.get("compute_cap")})
        arch = ";".join(caps) or "9.0"
        build = Path(self.args.build_dir or ROOT / "build-gpu").resolve()
        self.build = build
        prefix = ";".join([str(torch_root), str(torch_cmake), str(deps / "usr"), str(lib / "cmake")])
        configure = ["cmake", "-S", ROOT, "-B", build, "-G", "Ninja", "-DCMAKE_BUILD_TYPE=Release",
                     f"-DCMAKE_PREFIX_PATH={prefix}", f"-DTORCH_CUDA_ARCH_LIST={arch}", "-DASV_WITH_LIBAV=OFF",
                     f"-DPKG_CONFIG_EXECUTABLE={deps / 'usr' / 'bin' / 'pkgconf'}", f"-DOPENSSL_ROOT_DIR={deps / 'usr'}"]
        t = now()
        _, text = self.run(configure, "build.log", min(300, self.left()))
        fig["configure_seconds"] = round(now() - t, 1)
        m = re.search(r"asvcpp [\d.]+: (LibTorch .*)", text)
        fig["configuration"] = m.group(1).strip() if m else None
        t = now()
        _, text = self.run(["cmake", "--build", build, "-j", str(self.args.jobs), "--target", *CHECK_TARGETS],
                           "build.log", self.left())
        fig["build_seconds"] = round(now() - t, 1)
        # Not -Werror here: another compiler may warn where CI's does not; the count is reported.
        fig["warnings"] = len(re.findall(r": warning: ", text))
        fig["targets"] = CHECK_TARGETS
        fig["jobs"] = self.args.jobs
        fig["cuda_arch"] = arch
        info = self.asvrun_info()
        fig["asvrun_info"] = info
        if "CUDA build: yes" not in info or "NCCL: yes" not in info:
            raise Fail(f"asvrun info: not a CUDA build with NCCL: {tail(info)}")
        return f"{fig['configuration']}; built in {fig['build_seconds']} s with {self.args.jobs} jobs"

    def asvrun(self):
        return self.build / "tools" / "asvrun" / "asvrun"

    def asvrun_info(self):
        if "asvrun_info" not in self.facts:
            _, text = self.run([self.asvrun(), "info"], "asvrun_info.log", 60, check=False)
            self.facts["asvrun_info"] = text
        return self.facts["asvrun_info"]

    def ctest(self, fig, name, args, timeout):
        junit = self.report / f"{name}.xml"
        rc, text = self.run(["ctest", "--test-dir", self.build, "--output-on-failure", "--output-junit", junit,
                             "--timeout", "240", *args], f"{name}.log", timeout, check=False)
        results = parse_junit(junit) if junit.exists() else parse_ctest_output(text)
        if not results:
            m = re.search(r"No tests were found", text)
            if m:
                raise Skip("no such tests in this build")
            raise Fail(f"ctest wrote no results: {tail(text)}")
        counts = {k: sum(1 for v in results.values() if v["status"] == k) for k in ("pass", "fail", "skip")}
        fig.update(counts)
        fig["tests"] = results
        failed = [k for k, v in results.items() if v["status"] == "fail"]
        if failed:
            raise Fail(f"{len(failed)} of {len(results)} failed: {', '.join(failed[:12])}")
        skipped = sorted({v.get("reason", "") for v in results.values() if v["status"] == "skip"})
        return f"{counts['pass']} passed, {counts['skip']} skipped" + (
            f" ({'; '.join(s for s in skipped if s)[:300]})" if counts["skip"] else "")

    def ctest_gpu(self, fig):
        if not self.gpu:
            raise Skip("CPU mode (the gpu-labelled tests exist only in CUDA builds)")
        text = self.ctest(fig, "ctest_gpu", ["-L", "gpu", "-j", "1"], min(300, self.left()))
        # The margin data path's GPU tests carry the label unit: run by name, and a skip (no CUDA
        # device seen) is a failure here.
        named = {}
        regex = "^(" + "|".join(re.escape(t) for t in GPU_TESTS_BY_NAME) + ")$"
        try:
            self.ctest(named, "ctest_gpu_named", ["-R", regex, "-j", "1"], min(180, self.left()))
        except Skip as e:
            raise Fail(f"margin data path GPU tests {', '.join(GPU_TESTS_BY_NAME)}: {e}")
        finally:
            fig["by_name"] = named
        missing = [t for t in GPU_TESTS_BY_NAME if t not in named.get("tests", {})]
        skipped = [t for t, v in named.get("tests", {}).items() if v["status"] == "skip"]
        if missing or skipped:
            raise Fail(f"margin data path GPU tests: missing {missing}, skipped {skipped} (log: logs/ctest_gpu_named.log)")
        return f"{text}; by name: {', '.join(GPU_TESTS_BY_NAME)} passed"

    def ctest_rest(self, fig):
        if not self.gpu and "ctest_rest" not in self.args.only:
            raise Skip("CPU mode: the test suite runs these (tools/test.sh)")
        if self.gpu:  # the other test programs were left for now
            t = now()
            self.run(["cmake", "--build", self.build, "-j", str(self.args.jobs)], "ctest_rest_build.log", self.left())
            fig["build_seconds"] = round(now() - t, 1)
        return self.ctest(fig, "ctest_rest", ["-LE", "gpu", "-j", str(self.args.jobs)], self.left())

    # ---- end to end -------------------------------------------------------------------------
    def prepare_work(self):
        data = Path(self.args.data).resolve()
        if not (data / "PREPARED").exists():
            raise Fail(f"{data}: no prepared data (run tools/gpu_check/prepare.sh on the development machine)")
        work = Path(self.args.work).resolve() if self.args.work else self.report / "work"
        if work.exists():
            shutil.rmtree(work)
        shutil.copytree(data, work, symlinks=True)
        # prepare.sh wrote the lists' paths relative to a placeholder for the work folder (the
        # x-vector lists' .scp files, every file under the margin recipe's lists/ folders).
        lists = set(work.rglob("*.scp")) | {f for f in (work / "out_margin").rglob("*")
                                           if f.is_file() and "lists" in f.relative_to(work).parts}
        for path in lists:
            text = path.read_text(errors="surrogateescape")
            if WORK_PLACEHOLDER in text:
                path.write_text(text.replace(WORK_PLACEHOLDER, str(work)), errors="surrogateescape")
        self.work = work
        return work

    def asvrun_config(self, config, log, timeout, extra=(), check=True):
        cmd = [self.asvrun(), RECIPE, config, "--init-config", CONFIGS / "init_config", "--run-configs",
               CONFIGS / "run_configs", *extra]
        return self.run(cmd, log, timeout, cwd=self.work, check=check)

    def database(self, out="out"):
        return sqlite3.connect(str(self.work / out / "experiments.db"))

    def last_run(self, config, out="out"):
        with self.database(out) as db:
            row = db.execute("SELECT id, status, world_size, gpu_ids, start_time, end_time, error_text FROM runs "
                             "WHERE config = ? ORDER BY id DESC LIMIT 1", (config,)).fetchone()
        if row is None:
            raise Fail(f"no run of {config} in the experiment database")
        return dict(zip(["id", "status", "world_size", "gpu_ids", "start_time", "end_time", "error_text"], row))

    def epochs(self, run_id):
        with self.database() as db:
            return db.execute("SELECT epoch, loss, accuracy, seconds, frames_per_second FROM epochs WHERE run_id = ? "
                              "ORDER BY epoch", (run_id,)).fetchall()

    def results(self, run_id, stage, out="out"):
        with self.database(out) as db:
            return db.execute("SELECT trial_list, eer, min_dcf, n_target, n_nontarget FROM results WHERE run_id = ? "
                              "AND stage = ?", (run_id, stage)).fetchall()

    def device_of(self, text):
        """The training device named by the trainer's first log line ("... trainable parameters ...,
        device cuda:0")."""
        found = re.findall(r"trainable parameters .*device (cuda:\d+|cuda|cpu)\b", text)
        return found[-1] if found else None

    def expect_device(self, text, config):
        device = self.device_of(text)
        want = "cuda:0" if self.gpu else "cpu"
        if device != want:
            raise Fail(f"{config} ran on {device}, not {want}")
        return device

    def e2e(self, fig):
        self.prepare_work()
        summary = []
        for config in ("gc_fp32", "gc_bf16"):
            t = now()
            _, text = self.asvrun_config(config, f"e2e_{config}.log", min(240, self.left()))
            seconds = round(now() - t, 1)
            device = self.expect_device(text, config)
            run = self.last_run(config)
            if run["status"] != "finished":
                raise Fail(f"{config}: run {run['id']} is '{run['status']}' in the database")
            epochs = self.epochs(run["id"])
            final = self.results(run["id"], 9)
            if len(epochs) != 2:
                raise Fail(f"{config}: {len(epochs)} epoch rows, expected 2")
            if not final or any(r[1] is None for r in final):
                raise Fail(f"{config}: no stage-9 EER in the database ({final})")
            fig[config] = {"seconds": seconds, "device": device, "run_id": run["id"],
                           "epochs": [{"epoch": e[0], "loss": e[1], "accuracy": e[2], "seconds": e[3],
                                       "frames_per_s": e[4]} for e in epochs],
                           "results": [{"trial_list": r[0], "eer": r[1], "min_dcf": r[2], "targets": r[3],
                                        "nontargets": r[4]} for r in final]}
            summary.append(f"{config} {seconds} s on {device}, EER {final[0][1]:.2f} % minDCF {final[0][2]:.3f}")
        return "; ".join(summary)

    def checkpoints(self, fig):
        if self.work is None or not (self.work / "out" / "gc_fp32" / "networks" / "epoch.2.pt").exists():
            raise Skip("needs gc_fp32's checkpoint of step e2e")
        out = []
        written = "GPU" if self.gpu else "CPU (CPU mode)"
        for config, first, load_device, train_device in (("gc_gpu_to_cpu", None, written, "cpu"),
                                                          ("gc_cpu_to_gpu", "gc_cpu", "CPU", "gpu")):
            if first:
                _, text = self.asvrun_config(first, f"checkpoints_{first}.log", min(180, self.left()))
                if self.device_of(text) != "cpu":
                    raise Fail(f"{first} ran on {self.device_of(text)}, not the CPU")
            _, text = self.asvrun_config(config, f"checkpoints_{config}.log", min(180, self.left()))
            device = self.device_of(text)
            want = "cpu" if train_device == "cpu" else ("cuda:0" if self.gpu else "cpu")
            if device != want:
                raise Fail(f"{config} trained on {device}, not {want}")
            run = self.last_run(config)
            epochs = self.epochs(run["id"])
            if run["status"] != "finished" or len(epochs) != 1:
                raise Fail(f"{config}: run {run['id']} {run['status']} with {len(epochs)} epoch rows (expected 1)")
            if not re.search(r"Resuming training from epoch \d+ from", text):
                raise Fail(f"{config}: the log does not say that a checkpoint was loaded")
            fig[config] = {"device": device, "epoch": epochs[0][0], "loss": epochs[0][1]}
            out.append(f"{config}: epoch {epochs[0][0]} on {device} from a checkpoint written on the {load_device}")
        return "; ".join(out)

    # ---- the margin recipe end to end -----------------------------------------------------------
    def margin_e2e(self, fig):
        if self.work is None:
            self.prepare_work()
        if not (self.work / "out_margin" / "datasets_margin" / "voxceleb2" / "pcm" / "header").exists():
            raise Fail(f"{self.args.data}: no PCM stores of voxceleb/margin (prepare.sh older than this script: "
                       "run it again)")
        summary = []
        for config in MARGIN_CONFIGS:
            cmd = [self.asvrun(), MARGIN_RECIPE, config, "--init-config", CONFIGS / "margin_init_config",
                   "--run-configs", CONFIGS / "margin_run_configs"]
            if not self.gpu:
                cmd += ["--set", "computing.use_gpu=False"]
            t = now()
            _, text = self.run(cmd, f"margin_e2e_{config}.log", min(240, self.left()), cwd=self.work)
            seconds = round(now() - t, 1)
            device = self.expect_device(text, config)
            run = self.last_run(config, "out_margin")
            if run["status"] != "finished":
                raise Fail(f"{config}: run {run['id']} is '{run['status']}' in the database")
            with self.database("out_margin") as db:
                epochs = db.execute("SELECT epoch, loss, accuracy, learning_rate, seconds, frames_per_second, "
                                    "data_wait_percent FROM epochs WHERE run_id = ? ORDER BY epoch",
                                    (run["id"],)).fetchall()
            final = self.results(run["id"], 9, "out_margin")
            if len(epochs) != MARGIN_EPOCHS:
                raise Fail(f"{config}: {len(epochs)} epoch rows, expected {MARGIN_EPOCHS} (2 of training, 1 of "
                           "large-margin fine-tuning)")
            if not final or any(r[1] is None for r in final):
                raise Fail(f"{config}: no stage-9 EER in the database ({final})")
            train_seconds = sum(e[4] or 0 for e in epochs)
            frames = sum((e[4] or 0) * (e[5] or 0) for e in epochs)
            waits = [e[6] for e in epochs if e[6] is not None]
            fig[config] = {"seconds": seconds, "device": device, "run_id": run["id"],
                           "epochs": [{"epoch": e[0], "loss": e[1], "accuracy": e[2], "learning_rate": e[3],
                                       "seconds": e[4], "frames_per_s": e[5], "data_wait_percent": e[6]}
                                      for e in epochs],
                           "frames_per_s": round(frames / train_seconds) if train_seconds else None,
                           "data_wait_percent_max": round(max(waits), 1) if waits else None,
                           "results": [{"trial_list": r[0], "eer": r[1], "min_dcf": r[2], "targets": r[3],
                                        "nontargets": r[4]} for r in final]}
            wait = f", data wait <= {max(waits):.1f} %" if waits else ""
            summary.append(f"{config} {seconds} s on {device}, {len(epochs)} epochs at "
                           f"{fig[config]['frames_per_s'] or 0:,} frames/s{wait}, EER {final[0][1]:.2f} %")
        return "; ".join(summary)

    # ---- asvrun embed and verify on the device ---------------------------------------------------
    def embed_inputs(self):
        """The carried voxceleb1 recordings (prepare.sh's embed_audio/): a wav.scp of all of them
        and a trial file (`enrollment test` audio paths) of the first EMBED_TRIALS VoxCeleb trials.
        Returns (wav.scp, trials, number of recordings)."""
        folder = self.work / "embed_audio" / "voxceleb1"
        wavs = sorted((folder / "wav").rglob("*.wav"))
        if not wavs or not (folder / "veri_test.txt").exists():
            raise Fail(f"{self.args.data}: no embed_audio/voxceleb1 recordings and trial list (prepare.sh older than "
                       "this script: run it again)")
        scp = self.work / "embed_audio" / "wav.scp"
        scp.write_text("".join(f"{'-'.join(w.relative_to(folder / 'wav').with_suffix('').parts)} {w}\n" for w in wavs))
        trials = self.work / "embed_audio" / "trials.txt"
        lines = [l.split() for l in (folder / "veri_test.txt").read_text().splitlines() if l.strip()]
        trials.write_text("".join(f"{folder / 'wav' / a} {folder / 'wav' / b}\n" for _, a, b in lines[:EMBED_TRIALS]))
        return scp, trials, len(wavs)

    def embed(self, fig):
        scp, trials, n = self.embed_inputs()
        devices = ["cuda:0", "cpu"] if self.gpu else ["cpu"]
        db = self.work / "out_margin" / "experiments.db"
        summary = []
        for config in EMBED_CONFIGS:
            run = self.last_run(config, "out_margin")
            model = ["--model", run["id"], "--db", db]
            got = {}
            for device in devices:
                out = self.report / "embed" / f"{config}_{device.replace(':', '')}"
                t = now()
                self.run([self.asvrun(), "embed", *model, "--wav-scp", scp, "--out", out, "--device", device],
                         f"embed_{config}.log", min(180, self.left()), cwd=self.work)
                seconds = round(now() - t, 1)
                ids = (out / "utt_ids.txt").read_text().split()
                rows = read_npy(out / "embeddings.npy")
                if len(ids) != n or len(rows) != n:
                    raise Fail(f"{config} on {device}: {len(ids)} ids and {len(rows)} embeddings of {n} recordings "
                               f"(see {out}/skipped.txt)")
                if not all(math.isfinite(v) for row in rows for v in row):
                    raise Fail(f"{config} on {device}: embeddings that are not finite")
                verdict = self.report / "embed" / f"{config}_{device.replace(':', '')}_verify.json"
                self.run([self.asvrun(), "verify", *model, "--trials", trials, "--json", "--device", device],
                         f"embed_{config}.log", min(180, self.left()), cwd=self.work, stdout=verdict)
                scores = [t["score"] for t in json.loads(verdict.read_text())["trials"]]
                if len(scores) != EMBED_TRIALS or not all(math.isfinite(s) for s in scores):
                    raise Fail(f"{config} on {device}: verify gave {scores} for {EMBED_TRIALS} trials")
                got[device] = {"ids": ids, "rows": rows, "scores": scores, "seconds": seconds}
            entry = {"run_id": run["id"], "recordings": n, "trials": EMBED_TRIALS,
                     "embed_seconds": {d: g["seconds"] for d, g in got.items()},
                     "scores": {d: g["scores"] for d, g in got.items()}}
            fig[config] = entry
            if not self.gpu:
                summary.append(f"{config}: {n} recordings embedded and {EMBED_TRIALS} trials verified on the CPU")
                continue
            gpu, cpu = got["cuda:0"], got["cpu"]
            if gpu["ids"] != cpu["ids"]:
                raise Fail(f"{config}: the GPU and the CPU embedded different utterances")
            cosines = [cosine(a, b) for a, b in zip(gpu["rows"], cpu["rows"])]
            diffs = [max(abs(x - y) for x, y in zip(a, b)) / norm(b) for a, b in zip(gpu["rows"], cpu["rows"])]
            score_diffs = [abs(a - b) / max(1.0, abs(b)) for a, b in zip(gpu["scores"], cpu["scores"])]
            entry.update({"lowest_cosine": min(cosines), "max_diff_over_norm": max(diffs),
                          "max_score_diff_relative": max(score_diffs)})
            summary.append(f"{config}: cuda:0 vs cpu lowest cosine {min(cosines):.7f}, max diff / norm "
                           f"{max(diffs):.1e}, verify scores within {max(score_diffs):.1e}")
            if min(cosines) < 0.9999:
                raise Fail(f"{config}: an embedding on cuda:0 is at cosine {min(cosines):.6f} of the CPU's (< 0.9999): "
                           + "; ".join(summary))
            if max(score_diffs) > 1e-3:
                raise Fail(f"{config}: verify scores on cuda:0 differ from the CPU's by {max(score_diffs):.1e} "
                           "(relative, > 1e-3): " + "; ".join(summary))
        if not self.gpu and "CUDA build: no" in self.asvrun_info():
            run = self.last_run(EMBED_CONFIGS[0], "out_margin")
            rc, text = self.run([self.asvrun(), "embed", "--model", run["id"], "--db", db, "--wav-scp", scp, "--out",
                                 self.report / "embed" / "refused", "--device", "cuda"], "embed_refused.log", 60,
                                cwd=self.work, check=False)
            if rc != 2 or "no CUDA device is visible" not in text:
                raise Fail(f"asvrun embed --device cuda in a build without CUDA: exit {rc}, not 2 with 'no CUDA device "
                           f"is visible': {tail(text)}")
            summary.append("--device cuda refused (exit 2)")
        return "; ".join(summary)

    def bench_embed(self, fig):
        if not self.gpu and "bench_embed" not in self.args.only:
            raise Skip("CPU mode (tools/bench/embed_throughput.py measures the CPU; --only bench_embed runs a "
                       "tiny one)")
        if self.work is None:
            self.prepare_work()
        wespeaker = Path(self.args.data).resolve() / "wespeaker"
        if not (wespeaker / "wespeaker" / "models" / "resnet.py").exists():
            raise Skip(f"no WeSpeaker model files in {wespeaker} (prepare.sh copies them from a WeSpeaker git "
                       "directory, ASV_WESPEAKER_GIT_DIR)")
        if not self.have_torch():
            raise Skip(f"{self.args.python} has no PyTorch for the peer and the model files")
        # The peer uses torchaudio where it imports, else this file (it says which in its figures).
        kaldi = Path(self.args.data).resolve() / "torchaudio_kaldi" / "kaldi.py"
        self.embed_inputs()
        device = "cuda:0" if self.gpu else "cpu"
        sizes = ["--copies", str(EMBED_BENCH_COPIES), "--repeats", "2"] if self.gpu else ["--copies", "1",
                                                                                        "--repeats", "1"]
        rows = []
        for model in MARGIN_BENCH_MODELS:
            out = self.report / f"bench_embed_{model}.json"
            self.run([self.args.python, ROOT / "tools" / "bench" / "embed_throughput.py", "--wespeaker-checkout",
                      wespeaker, "--corpus", self.work / "embed_audio", "--work", self.report / "bench_embed",
                      "--build", self.build, "--python", self.args.python, "--model", model, "--files", "12",
                      "--device", device, *(["--kaldi", kaldi] if kaldi.exists() else []), *sizes, "--json", out],
                     f"bench_embed_{model}.log", min(300, self.left()))
            b = json.loads(out.read_text())
            fig[model] = b
            rows.append(f"{model}: {b['utterances']} utterances on {b['device_name']}, asvrun embed "
                        f"{min(b['asvcpp_seconds']):.2f} s, PyTorch loop {min(b['pytorch_seconds']):.2f} s "
                        f"({b['speedup']:.2f}x), lowest cosine {b['lowest_cosine']:.6f}")
        fig["target"] = ">= 1.5x the PyTorch loop"
        return "; ".join(rows)

    # ---- pinned jobs and the GPU queue ---------------------------------------------------------
    def pin_queue(self, fig):
        if not self.gpu:
            raise Skip("needs a GPU (a CPU run holds no GPU)")
        if self.work is None:
            raise Skip("needs the work folder of step e2e")
        uuid0 = next(g["uuid"] for g in self.facts["gpus"] if g["index"] == 0)
        base = [self.asvrun(), RECIPE]
        files = ["--init-config", CONFIGS / "init_config", "--run-configs", CONFIGS / "run_configs"]
        samples = []
        launchers = {}

        def sample():
            p = subprocess.run(["nvidia-smi", "--query-compute-apps=pid,gpu_uuid,used_memory",
                                "--format=csv,noheader,nounits"], capture_output=True, text=True, timeout=20)
            apps = [l.split(", ") for l in p.stdout.splitlines() if l.strip()]
            workers = []
            for job, launcher in launchers.items():
                for pid in descendants(launcher.pid):
                    if "asvrun" in proc_cmdline(pid):
                        workers.append({"job": job, "pid": pid,
                                        "cuda_visible_devices": proc_environ(pid).get("CUDA_VISIBLE_DEVICES")})
            samples.append({"t": round(now() - t0, 2), "workers": workers,
                            "apps": [{"pid": int(a[0]), "gpu": a[1], "mib": a[2]} for a in apps if len(a) >= 3]})

        t0 = now()
        a = self.spawn(base + ["gc_pin_a", *files], "pin_a.log", cwd=self.work)
        launchers["gc_pin_a"] = a
        if not wait_for(lambda: "process group" in read(self.logs / "pin_a.log") or a.poll() is not None, 90, sample):
            kill_group(a)
            raise Fail("gc_pin_a did not start training within 90 s")
        b = self.spawn(base + ["gc_pin_b", "--wait-for-gpu", "--gpu-poll", "1", *files], "pin_b.log", cwd=self.work)
        launchers["gc_pin_b"] = b
        waited = wait_for(lambda: "(--wait-for-gpu)" in read(self.logs / "pin_b.log") or b.poll() is not None, 60,
                          sample)
        a_done = wait_for(lambda: a.poll() is not None, min(240, self.left()), sample)
        t_a_end = now() - t0
        b_done = wait_for(lambda: b.poll() is not None, min(240, self.left()), sample)
        for p in (a, b):
            if p.poll() is None:
                kill_group(p)
        (self.report / "pin_queue_samples.json").write_text(json.dumps(samples, indent=1))
        if not (a_done and b_done):
            raise Fail("gc_pin_a or gc_pin_b did not finish in time")
        if a.returncode != 0 or b.returncode != 0:
            raise Fail(f"exit status gc_pin_a {a.returncode}, gc_pin_b {b.returncode}")
        b_text = read(self.logs / "pin_b.log")
        if not waited or "waiting for GPU 0" not in b_text:
            raise Fail("gc_pin_b did not wait for GPU 0 (no 'waiting for GPU 0' in its log)")
        run_a, run_b = self.last_run("gc_pin_a"), self.last_run("gc_pin_b")
        if not run_b["start_time"] >= run_a["end_time"]:
            raise Fail(f"gc_pin_b's run started {run_b['start_time']}, before gc_pin_a ended {run_a['end_time']}")
        # Each job's worker is pinned to GPU 0 (its CUDA_VISIBLE_DEVICES) and the two jobs' workers
        # never live at once; nvidia-smi, where it can see processes (not always inside a
        # container), shows them only on GPU 0 and one at a time.
        workers = {(w["job"], w["pid"], w["cuda_visible_devices"]) for s in samples for w in s["workers"]}
        jobs = {w[0] for w in workers}
        unpinned = [w for w in workers if w[2] != "0"]
        together = [s["t"] for s in samples if len({w["job"] for w in s["workers"]}) > 1]
        smi_pids = {app["pid"] for s in samples for app in s["apps"]}
        elsewhere = {app["pid"] for s in samples for app in s["apps"] if app["gpu"] != uuid0}
        smi_together = [s["t"] for s in samples if len(s["apps"]) > 1]
        fig.update({"samples": len(samples), "workers": sorted(workers), "nvidia_smi_pids": sorted(smi_pids),
                    "a_ended_s": round(t_a_end, 1), "run_a": run_a, "run_b": run_b})
        if jobs != {"gc_pin_a", "gc_pin_b"}:
            raise Fail(f"workers of {sorted(jobs)} seen in {len(samples)} samples, expected both jobs'")
        if unpinned:
            raise Fail(f"workers not pinned to GPU 0 (CUDA_VISIBLE_DEVICES): {unpinned}")
        if together:
            raise Fail(f"both jobs had workers at once (at {together[0]} s)")
        if elsewhere:
            raise Fail(f"nvidia-smi: processes {sorted(elsewhere)} on another GPU than GPU 0")
        if smi_together:
            raise Fail(f"nvidia-smi: two processes on GPU 0 at once (at {smi_together[0]} s)")
        smi_note = (f"nvidia-smi saw pids {sorted(smi_pids)} only on GPU 0, one at a time" if smi_pids else
                    "nvidia-smi lists no processes here (PID namespace)")
        # A third job without --wait-for-gpu while gc_pin_a holds GPU 0: a warning, then it runs.
        a2 = self.spawn(base + ["gc_pin_a", *files], "pin_a2.log", cwd=self.work)
        wait_for(lambda: "process group" in read(self.logs / "pin_a2.log") or a2.poll() is not None, 90)
        rc_c, c_text = self.asvrun_config("gc_pin_c", "pin_c.log", min(180, self.left()), check=False)
        wait_for(lambda: a2.poll() is not None, min(180, self.left()))
        if a2.poll() is None:
            kill_group(a2)
        if rc_c != 0 or a2.returncode != 0:
            raise Fail(f"exit status gc_pin_c {rc_c}, second gc_pin_a {a2.returncode}")
        if "GPU 0 is in use by run" not in c_text or "starting anyway" not in c_text:
            raise Fail("gc_pin_c did not warn that GPU 0 is held")
        return (f"gc_pin_b waited for gc_pin_a, then ran; workers {sorted(w[1] for w in workers)} pinned to GPU 0, "
                f"never together ({len(samples)} samples; {smi_note}); gc_pin_c warned that GPU 0 is held and ran")

    # ---- data-parallel training, a rank killed -------------------------------------------------
    def dist_kill(self, fig):
        if self.work is None:
            raise Skip("needs the work folder of step e2e")
        cmd = [self.asvrun(), RECIPE, "gc_dist", "--init-config", CONFIGS / "init_config", "--run-configs",
               CONFIGS / "run_configs"]
        if self.gpu:
            gpus = [g["index"] for g in self.facts["gpus"]]
            ids = "(" + ", ".join(map(str, gpus)) + ("," if len(gpus) == 1 else "") + ")"
            cmd += ["--set", f"computing.gpu_ids={ids}"]
            backend = "NCCL"
        else:
            if "Gloo: yes" not in self.asvrun_info():
                raise Skip("CPU mode without Gloo in this LibTorch: no data-parallel training on the CPU")
            cmd += ["--set", "computing.use_gpu=False", "--nproc-per-node", "2"]
            backend = "Gloo"
        p = self.spawn(cmd, "dist_kill.log", cwd=self.work)
        log = self.logs / "dist_kill.log"
        started = wait_for(lambda: re.search(r"Epoch 2: ", read(log)) is not None or p.poll() is not None,
                           min(180, self.left()))
        text = read(log)
        m = re.search(r"process group: (\d+) ranks, " + backend, text)
        if not m:
            kill_group(p)
            raise Fail(f"no {backend} process group in the log: {tail(text)}")
        fig["world_size"] = int(m.group(1))
        if not started or p.poll() is not None:
            kill_group(p)
            raise Fail(f"training did not reach epoch 2 (exit status {p.poll()})")
        victims = descendants(p.pid)
        workers = [v for v in victims if "asvrun" in proc_cmdline(v)]
        if not workers:
            kill_group(p)
            raise Fail("no worker process under the launcher")
        victim = workers[-1]
        t = now()
        os.kill(victim, signal.SIGKILL)
        ended = wait_for(lambda: p.poll() is not None, 90)
        seconds = round(now() - t, 1)
        if not ended:
            kill_group(p)
            raise Fail(f"the job still ran 90 s after rank's process {victim} was killed")
        run = self.last_run("gc_dist")
        fig.update({"killed_pid": victim, "exit_status": p.returncode, "seconds_to_end": seconds, "run": run})
        left_over = [v for v in victims if pid_alive(v)]
        if p.returncode == 0:
            raise Fail("the launcher exited 0 after a rank was killed")
        if seconds > 60:
            raise Fail(f"the job took {seconds} s to end after a rank was killed (limit 60 s)")
        if run["status"] != "failed":
            raise Fail(f"run {run['id']} is '{run['status']}', not failed")
        if left_over:
            raise Fail(f"processes {left_over} outlived the launcher")
        return (f"world size {fig['world_size']} ({backend}); worker {victim} killed at epoch 2: launcher exit "
                f"{p.returncode} after {seconds} s, run {run['id']} failed: {run['error_text']}")

    # ---- benchmarks ---------------------------------------------------------------------------
    def bench_train(self, fig):
        device = "cuda" if self.gpu else "cpu"
        binary = self.build / "tools" / "bench" / "asv_bench_train"
        quick = [] if self.gpu else ["--quick"]
        steps = ["--warmup", "10", "--steps", "50", "--repeats", "3"] if self.gpu else []
        rows = []
        for precision in ("fp32", "bf16"):
            out = self.report / f"bench_train_asvcpp_{precision}.json"
            self.run([binary, "--device", device, "--nproc", "1", "--precision", precision, *quick, *steps,
                      "--json", out], f"bench_train_asvcpp_{precision}.log", min(240, self.left()))
            asv = json.loads(out.read_text())
            run = asv["runs"][0]
            if run["status"] != "ok":
                raise Fail(f"asv_bench_train {precision}: {run['status']}")
            w = asv["workload"]
            rows.append(f"{precision}: asvcpp {run['frames_per_s_median']:,.0f} frames/s")
            fig[precision] = {"asvcpp_frames_per_s": round(run["frames_per_s_median"]),
                              "asvcpp_min_max": [round(run["frames_per_s_min"]), round(run["frames_per_s_max"])],
                              "device": run.get("device_name"), "parameters": w["parameters"]}
            if not self.have_torch():
                if self.gpu:
                    raise Fail(f"{self.args.python} has no PyTorch for the peer")
                rows[-1] += " (no PyTorch here: peer not run)"
                continue
            peer_out = self.report / f"bench_train_peer_{precision}.json"
            peer_args = ["--device", device, "--precision", precision, "--json", peer_out,
                         "--feat-dim", w["feat_dim"], "--frame-layer", w["frame_layer"], "--stat-size",
                         w["stat_size"], "--embedding", w["embedding"], "--speakers", w["speakers"],
                         "--batch", w["global_batch"], "--frames", w["frames"], "--warmup", w["warmup"],
                         "--steps", w["steps"], "--repeats", w["repeats"]]
            self.run([self.args.python, ROOT / "tools" / "bench" / "peers" / "train_step.py", *peer_args],
                     f"bench_train_peer_{precision}.log", min(240, self.left()))
            peer = json.loads(peer_out.read_text())
            if peer["parameters"] != w["parameters"]:
                raise Fail(f"the peer's network has {peer['parameters']} parameters, asvcpp's {w['parameters']}")
            a, b = run["frames_per_s_median"], peer["frames_per_s"]["median"]
            fig[precision].update({"peer_frames_per_s": round(b), "ratio": round(a / b, 3),
                                   "peer_min_max": [round(peer["frames_per_s"]["min"]),
                                                    round(peer["frames_per_s"]["max"])]})
            rows[-1] = f"{precision}: asvcpp {a:,.0f} frames/s, PyTorch {b:,.0f} ({a / b:.2f}x)"
        fig["target"] = ">= 1.5x the PyTorch step with bf16 on the GPU"
        if self.gpu:
            fig["target_met"] = fig["bf16"]["ratio"] >= 1.5
        return "; ".join(rows)

    def bench_features(self, fig):
        binary = self.build / "tools" / "bench" / "asv_bench_features"
        device = "cuda" if self.gpu else "cpu"
        seconds = "600" if self.gpu else "60"
        out = self.report / "bench_features.json"
        self.run([binary, "--seconds", seconds, "--batched", device, "--json", out], "bench_features.log",
                 min(180, self.left()))
        batched = json.loads(out.read_text())
        fig["batched_" + device] = batched
        text = f"batched MFCC on {device}: {batched.get('x_real_time', 0):,.0f}x real time ({seconds} s of audio)"
        if self.gpu:
            out = self.report / "bench_features_cpu.json"
            self.run([binary, "--seconds", "600", "--threads", str(self.args.jobs), "--json", out],
                     "bench_features.log", min(120, self.left()))
            cpu = json.loads(out.read_text())
            fig["per_frame_cpu"] = cpu
            rtf = cpu.get("rtf_median") or 0
            text += f"; stage 1's per-frame extractor (MFCC + VAD) on {self.args.jobs} CPU threads: " \
                    f"{1 / rtf if rtf else 0:,.0f}x"
        return text

    def bench_margin(self, fig):
        """voxceleb/margin's training step: asv_bench_train --model against WeSpeaker's own model code
        in PyTorch (tools/bench/peers/margin_step.py), per model and precision. CPU mode runs it
        only when asked (--only bench_margin), with a tiny workload, to check the script."""
        if not self.gpu and "bench_margin" not in self.args.only:
            raise Skip("CPU mode: the comparison needs a GPU (--only bench_margin runs a tiny one on the CPU)")
        binary = self.build / "tools" / "bench" / "asv_bench_train"
        _, text = self.run([binary, "--help"], "bench_margin.log", 60, check=False)
        if "--model" not in text:
            raise Skip(f"{binary} has no --model option (built before the margin benchmark)")
        wespeaker = Path(self.args.data).resolve() / "wespeaker"
        peer_script = ROOT / "tools" / "bench" / "peers" / "margin_step.py"
        have_peer = (wespeaker / "wespeaker" / "models" / "resnet.py").exists() and peer_script.exists()
        device = "cuda" if self.gpu else "cpu"
        if self.gpu:
            sizes = ["--warmup", "3", "--steps", "10", "--repeats", "3"]
        else:
            sizes = ["--batch", "2", "--frames", "40", "--speakers", "10", "--warmup", "0", "--steps", "1",
                     "--repeats", "1", "--threads", str(self.args.jobs)]
        rows = []
        for model in MARGIN_BENCH_MODELS:
            for precision in ("fp32", "bf16"):
                key = f"{model}_{precision}"
                out = self.report / f"bench_margin_asvcpp_{key}.json"
                self.run([binary, "--model", model, "--device", device, "--nproc", "1", "--precision", precision,
                          *sizes, "--json", out], f"bench_margin_asvcpp_{key}.log", min(240, self.left()))
                asv = json.loads(out.read_text())
                run = asv["runs"][0]
                if run["status"] != "ok":
                    raise Fail(f"asv_bench_train --model {model} {precision}: {run['status']}")
                w = asv["workload"]
                a = run["frames_per_s_median"]
                fig[key] = {"model": model, "precision": precision, "asvcpp_frames_per_s": round(a),
                            "asvcpp_min_max": [round(run["frames_per_s_min"]), round(run["frames_per_s_max"])],
                            "device": run.get("device_name"), "parameters": w["parameters"],
                            "batch": w["global_batch"], "frames": w["frames"]}
                rows.append(f"{model} {precision}: asvcpp {a:,.0f} frames/s")
                if not have_peer or not self.have_torch():
                    continue
                peer_out = self.report / f"bench_margin_peer_{key}.json"
                channels_last = ["--channels-last"] if model == "ResNet34" and precision == "bf16" else []
                threads = [] if self.gpu else ["--threads", str(self.args.jobs)]
                self.run([self.args.python, peer_script,
                          "--wespeaker-checkout", wespeaker, "--model", model, "--device", device, "--precision",
                          precision, *channels_last, *threads, "--feat-dim", w["feat_dim"], "--embedding",
                          w["embedding"], "--speakers", w["speakers"], "--batch", w["global_batch"], "--frames",
                          w["frames"], "--warmup", w["warmup"], "--steps", w["steps"], "--repeats", w["repeats"],
                          "--json", peer_out], f"bench_margin_peer_{key}.log", min(240, self.left()))
                peer = json.loads(peer_out.read_text())
                if peer["parameters"] != w["parameters"]:
                    raise Fail(f"{model}: the peer's network has {peer['parameters']} parameters, asvcpp's "
                               f"{w['parameters']}")
                b = peer["frames_per_s"]["median"]
                fig[key].update({"peer_frames_per_s": round(b), "ratio": round(a / b, 3),
                                 "peer_min_max": [round(peer["frames_per_s"]["min"]),
                                                  round(peer["frames_per_s"]["max"])],
                                 "peer_channels_last": bool(channels_last)})
                rows[-1] = f"{model} {precision}: asvcpp {a:,.0f} frames/s, PyTorch {b:,.0f} ({a / b:.2f}x)"
        fig["target"] = ">= 1.3x the PyTorch step (WeSpeaker's model code) on the GPU"
        if not peer_script.exists():
            raise Skip(f"asvcpp's figures only: no {peer_script.relative_to(ROOT)} in this tree: " + "; ".join(rows))
        if not have_peer:
            raise Skip(f"asvcpp's figures only: no WeSpeaker model files in {wespeaker} (prepare.sh copies them from "
                       f"a WeSpeaker git directory, ASV_WESPEAKER_GIT_DIR): " + "; ".join(rows))
        if not self.have_torch():
            if self.gpu:
                raise Fail(f"{self.args.python} has no PyTorch for the peer")
            raise Skip("asvcpp's figures only: no PyTorch here for the peer: " + "; ".join(rows))
        if self.gpu:
            fig["target_met"] = all(v["ratio"] >= 1.3 for v in fig.values() if isinstance(v, dict) and "ratio" in v)
        return "; ".join(rows)

    def bench_margin_data(self, fig):
        """The margin recipe's data path on the training device: batched fbank (asv_bench_features
        --batched-fbank) and batched augmentation (asv_bench_augment), in segments of 200 frames
        per second, against the training step's rate (step bench_margin)."""
        device = "cuda" if self.gpu else "cpu"
        sizes = [] if self.gpu else ["--warmup", "1", "--repeats", "2", "--threads", str(self.args.jobs)]
        segments = "128" if self.gpu else "16"
        out = self.report / "bench_margin_fbank.json"
        self.run([self.build / "tools" / "bench" / "asv_bench_features", "--batched-fbank", device, "--segments",
                  segments, *sizes, "--json", out], "bench_margin_data.log", min(180, self.left()))
        fbank = json.loads(out.read_text())
        out = self.report / "bench_margin_augment.json"
        self.run([self.build / "tools" / "bench" / "asv_bench_augment", "--device", device, "--batch", segments,
                  *sizes, "--json", out], "bench_margin_data.log", min(180, self.left()))
        augment = json.loads(out.read_text())
        f, a = fbank["segments_per_second"], augment["segments_per_s"]
        both = 1 / (1 / f + 1 / a)  # one after the other, as the training loop runs them
        fig.update({"device": device, "segments_per_batch": int(segments), "fbank_segments_per_s": round(f, 1),
                    "augment_segments_per_s": round(a, 1), "data_path_segments_per_s": round(both, 1),
                    "fbank_x_real_time": round(fbank.get("x_real_time", 0)), "augment": augment, "fbank": fbank})
        text = (f"{device}: fbank {f:,.0f} segments/s, augmentation {a:,.0f}, both {both:,.0f} segments/s "
                f"({SEGMENT_FRAMES} frames each)")
        bench = next((s["figures"] for s in self.steps if s["step"] == "bench_margin"), {})
        steps = {k: v["asvcpp_frames_per_s"] / SEGMENT_FRAMES for k, v in bench.items()
                 if isinstance(v, dict) and v.get("frames") == SEGMENT_FRAMES and "asvcpp_frames_per_s" in v}
        if steps:
            fig["step_segments_per_s"] = {k: round(v, 1) for k, v in steps.items()}
            fig["data_over_step"] = {k: round(both / v, 2) for k, v in steps.items()}
            text += "; against the training step: " + ", ".join(f"{k} {both / v:.1f}x" for k, v in steps.items())
        return text

    def have_torch(self):
        env = next((s for s in self.steps if s["step"] == "environment"), {}).get("figures", {})
        return bool(env.get("python_torch"))

    # ---- report -------------------------------------------------------------------------------
    def save(self):
        failed = [s["step"] for s in self.steps if s["status"] == "fail"]
        data = {"tool": "asvcpp tools/gpu_check/gpu_check.py", "mode": "gpu" if self.gpu else "cpu",
                "seconds": round(now() - self.start, 1), "budget_seconds": self.args.budget,
                "ok": not failed, "failed": failed, "steps": self.steps}
        write_atomic(self.report / "report.json", json.dumps(data, indent=1, default=str) + "\n")
        write_atomic(self.report / "report.md", markdown(data))


def markdown(data):
    env = next((s["figures"] for s in data["steps"] if s["step"] == "environment"), {})
    torch_info = env.get("python_torch") or {}
    lines = [f"# asvcpp GPU acceptance check ({data['mode']} mode)", "",
             f"- date {env.get('date')}, host {env.get('host')}, {env.get('cpu_cores')} CPU cores, commit "
             f"{env.get('git_commit')}{' (with local changes)' if env.get('git_dirty') else ''}",
             "- GPUs: " + (", ".join(f"{g['index']}: {g['name']} ({g['memory']}, compute {g['compute_cap']}, driver "
                                     f"{g['driver']})" for g in env.get("gpus", [])) or "none"),
             f"- PyTorch {torch_info.get('torch')}, CUDA {torch_info.get('cuda')}, cuDNN {torch_info.get('cudnn')}, "
             f"NCCL {torch_info.get('nccl')}; nvcc {env.get('nvcc')}; {env.get('cmake')}",
             f"- {data['seconds']} s in all (budget {data['budget_seconds']} s): "
             + ("every step passed or was skipped" if data["ok"] else f"FAILED: {', '.join(data['failed'])}"), "",
             "| step | status | seconds | details |", "|---|---|---|---|"]
    for s in data["steps"]:
        details = str(s["details"]).replace("|", "/").replace("\n", " ")
        lines.append(f"| {s['step']} | {s['status']} | {s['seconds']} | {details} |")
    bench = next((s["figures"] for s in data["steps"] if s["step"] == "bench_train" and s["figures"]), None)
    if bench:
        lines += ["", "Training step (StandardNet, asv_bench_train against tools/bench/peers/train_step.py, same "
                      "device, median frames/s):", "",
                  "| precision | asvcpp | PyTorch | ratio |", "|---|---|---|---|"]
        for p in ("fp32", "bf16"):
            if p in bench:
                b = bench[p]
                lines.append(f"| {p} | {b['asvcpp_frames_per_s']:,} | {b.get('peer_frames_per_s', '-')} | "
                             f"{b.get('ratio', '-')} |")
    margin = next((s["figures"] for s in data["steps"] if s["step"] == "margin_e2e" and s["figures"]), None)
    if margin:
        lines += ["", "voxceleb/margin end to end (stages 5-9, tiny corpus; figures from the epochs table):", "",
                  "| config | device | seconds | epochs | frames/s | data wait % (max) | EER % |",
                  "|---|---|---|---|---|---|---|"]
        for config, m in margin.items():
            lines.append(f"| {config} | {m['device']} | {m['seconds']} | {len(m['epochs'])} | "
                         f"{m['frames_per_s'] or 0:,} | {m['data_wait_percent_max']} | "
                         f"{m['results'][0]['eer']:.2f} |")
    bench = next((s["figures"] for s in data["steps"] if s["step"] == "bench_margin" and s["figures"]), None)
    if bench:
        lines += ["", "voxceleb/margin training step (asv_bench_train --model against "
                      "tools/bench/peers/margin_step.py with WeSpeaker's model code, same device, median frames/s; "
                      "target >= 1.3x on a GPU):", "",
                  "| model | precision | asvcpp | PyTorch | ratio |", "|---|---|---|---|---|"]
        for b in bench.values():
            if isinstance(b, dict) and "model" in b:
                lines.append(f"| {b['model']} | {b['precision']} | {b['asvcpp_frames_per_s']:,} | "
                             f"{b.get('peer_frames_per_s', '-')} | {b.get('ratio', '-')} |")
    data_path = next((s["figures"] for s in data["steps"] if s["step"] == "bench_margin_data" and s["figures"]),
                     None)
    if data_path:
        lines += ["", f"voxceleb/margin data path on {data_path['device']} (segments of {SEGMENT_FRAMES} frames/s): "
                      f"fbank {data_path['fbank_segments_per_s']:,}, augmentation "
                      f"{data_path['augment_segments_per_s']:,}, both {data_path['data_path_segments_per_s']:,}"
                      + ("; data path / training step: " + ", ".join(f"{k} {v}x" for k, v in
                                                                     data_path["data_over_step"].items())
                         if data_path.get("data_over_step") else "")]
    return "\n".join(lines) + "\n"


# ---- helpers ------------------------------------------------------------------------------------
def kill_group(p):
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    try:
        p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass


def wait_for(predicate, seconds, tick=None, interval=0.5):
    end = now() + seconds
    while now() < end:
        if tick:
            tick()
        if predicate():
            return True
        time.sleep(interval)
    return predicate()


def read(path):
    try:
        return Path(path).read_text(errors="replace")
    except FileNotFoundError:
        return ""


def descendants(pid):
    children = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(d.name))
    out, todo = [], [pid]
    while todo:
        for c in children.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def proc_cmdline(pid):
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def proc_environ(pid):
    try:
        items = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return {}
    return dict(i.decode(errors="replace").split("=", 1) for i in items if b"=" in i)


def pid_alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        return state != "Z"
    except (OSError, IndexError):
        return False


def parse_junit(path):
    import xml.etree.ElementTree as ET
    results = {}
    for case in ET.parse(path).getroot().iter("testcase"):
        name = case.get("name")
        status = case.get("status", "")
        entry = {"seconds": float(case.get("time", 0) or 0)}
        skipped = case.find("skipped")
        if case.find("failure") is not None or status == "fail":
            entry["status"] = "fail"
        elif skipped is not None or status in ("notrun", "disabled"):
            entry["status"] = "skip"
            out = case.findtext("system-out") or ""
            m = re.search(r"\[  SKIPPED \] *\n?([^\n]*)", out) or re.search(r"Skipped[^\n]*?: ([^\n]+)", out)
            reasons = re.findall(r"^.*?: Skipped\n(.*)$", out, re.M)
            entry["reason"] = (reasons[0] if reasons else (m.group(1) if m else skipped.get("message", "")
                                                           if skipped is not None else "")).strip()
        else:
            entry["status"] = "pass"
        results[name] = entry
    return results


def parse_ctest_output(text):
    """ctest's progress lines ("1/9 Test #1: Suite.Name ....   Passed 0.1 sec"), for a ctest without
    --output-junit (before CMake 3.21)."""
    results = {}
    for m in re.finditer(r"Test +#\d+: (\S+) \.+\s*(\*+)?(\w+)[^\n]*?([\d.]+) sec", text):
        word = m.group(3)
        status = "pass" if word == "Passed" else "skip" if word in ("Skipped", "Not") else "fail"
        results[m.group(1)] = {"status": status, "seconds": float(m.group(4))}
    return results


def git(args):
    try:
        return subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True, timeout=20).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None


def join_path(first, rest):
    return first if not rest else f"{first}:{rest}"


def first_line(text):
    """The first line of a command's output in a log (without the command and exit-status lines)."""
    lines = [l for l in text.splitlines() if l.strip() and not l.startswith("$ ") and not l.startswith("# exit")]
    return lines[0] if lines else ""


def tail(text, n=400):
    lines = [l for l in text.splitlines() if not l.startswith("# exit status")]
    return " / ".join(lines[-6:])[-n:]


def write_atomic(path, text):
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("report_dir", help="folder for report.md, report.json, logs/ and the work folder")
    p.add_argument("--cpu", action="store_true", help="CPU mode (default when nvidia-smi lists no GPU)")
    p.add_argument("--build-dir", help="build folder (GPU mode: built here, default build-gpu; CPU mode: an "
                                       "existing build, default build)")
    p.add_argument("--work", help="work folder of the asvrun runs (default REPORT_DIR/work)")
    p.add_argument("--no-build", action="store_true", help="CPU mode: use --build-dir as it is")
    p.add_argument("--data", default=str(ROOT / ".gpu_check"), help="prepared data (tools/gpu_check/prepare.sh)")
    p.add_argument("--budget", type=float, default=480, help="seconds for the whole check (default 480)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="build and ctest jobs (default: all cores)")
    p.add_argument("--python", default=sys.executable, help="Python with PyTorch (GPU mode: the machine's)")
    p.add_argument("--skip", default="", help="comma-separated steps to skip")
    p.add_argument("--only", default="", help="comma-separated steps to run besides environment and build")
    p.add_argument("--skip-ctest", action="store_true", help="skip ctest_gpu and ctest_rest")
    args = p.parse_args()
    args.skip = {s for s in args.skip.split(",") if s}
    args.only = {s for s in args.only.split(",") if s}
    if args.skip_ctest:
        args.skip |= {"ctest_gpu", "ctest_rest"}
    if not args.cpu and not gpu_listed():
        print("[gpu_check] nvidia-smi lists no GPU: CPU mode", file=sys.stderr)
        args.cpu = True
    check = Check(args)
    steps = [("environment", check.environment, ()), ("build", check.build_step, ("environment",)),
             ("ctest_gpu", check.ctest_gpu, ("build",)), ("e2e", check.e2e, ("build",)),
             ("checkpoints", check.checkpoints, ("e2e",)), ("margin_e2e", check.margin_e2e, ("build",)),
             ("embed", check.embed, ("margin_e2e",)), ("pin_queue", check.pin_queue, ("e2e",)),
             ("dist_kill", check.dist_kill, ("e2e",)), ("bench_train", check.bench_train, ("build",)),
             ("bench_features", check.bench_features, ("build",)), ("bench_margin", check.bench_margin, ("build",)),
             ("bench_margin_data", check.bench_margin_data, ("build",)), ("bench_embed", check.bench_embed, ("build",)),
             ("ctest_rest", check.ctest_rest, ("build",))]
    for name, function, needs in steps:
        if args.only and name not in args.only and name not in ("environment", "build"):
            continue
        check.step(name, function, needs)
    check.save()
    sys.stdout.write((check.report / "report.md").read_text())
    return 0 if all(s["status"] != "fail" for s in check.steps) else 1


def gpu_listed():
    if not shutil.which("nvidia-smi"):
        return False
    try:
        p = subprocess.run(["nvidia-smi", "-L"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return p.returncode == 0 and "GPU 0" in p.stdout


if __name__ == "__main__":
    sys.exit(main())
