#!/usr/bin/env python3
"""Peer of asv_bench_scoring: the same back end in NumPy on the inputs asv_bench_scoring --write DIR
wrote, timed step by step, and checked against asvcpp's outputs in DIR.

The maths, as asvcpp states it:
  processing 'cwl'   asvcpp/backend/vector_processor.h (float64; C = X^T X / N of the centred
                     back-end set, W = U diag(l^-1/2), l >= 1e-8; length normalisation)
  cosine scoring     asvcpp/backend/scorer.h (float32, clamped to [-1, 1])
  adaptive s-norm    asvcpp/backend/score_norm.h: per embedding the top-N cohort scores (rows in
                     chunks of --chunk-rows, np.partition), their mean and np.std in float64
  calibration        asvcpp/eval/calibration.h: QualityFeatures, the prior-weighted logistic
                     objective with l2 on standardised weights, Newton steps with backtracking
  metrics            asvcpp/eval/metrics.h (ASVtorch's EER and minDCF) and llr_metrics.h (Cllr,
                     minCllr by pool-adjacent-violators, actDCF)
Threads: --threads sets OPENBLAS_NUM_THREADS (and the OpenMP/MKL variables) before NumPy loads.
Prints JSON: timings (wall and CPU seconds) per step, the metrics per list, and the agreement with
asvcpp (max differences of s-norm statistics, scores and LLRs; metrics of both on each list).
"""
import argparse
import json
import os
import resource
import sys
import time


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("dir", help="directory asv_bench_scoring --write filled")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--chunk-rows", type=int, default=2000, help="s-norm rows per score matrix chunk")
    p.add_argument("--pair-chunk", type=int, default=50000, help="trials per pairwise scoring chunk")
    p.add_argument("--asvcpp-json", help="asv_bench_scoring's report, to compare its metrics")
    p.add_argument("--json", default="-")
    return p.parse_args()


args = parse_args()
for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(args.threads)
import numpy as np  # noqa: E402  (after the thread variables)


def timed(steps, name):
    class _T:
        def __enter__(self):
            self.w, self.c = time.perf_counter(), time.process_time()

        def __exit__(self, *exc):
            steps[name] = {"wall_s": time.perf_counter() - self.w, "cpu_s": time.process_time() - self.c}

    return _T()


def train_cwl(x):
    x = x.astype(np.float64)
    mean = x.mean(axis=0)
    c = x - mean
    cov = c.T @ c / len(c)
    l, u = np.linalg.eigh(cov)
    w = u / np.sqrt(np.maximum(l, 1e-8))
    return mean, w


def process(x, mean, w):
    y = (x.astype(np.float64) - mean) @ w
    y /= np.maximum(np.linalg.norm(y, axis=1, keepdims=True), 1e-300)
    return y.astype(np.float32)


def normalise(x):
    n = np.linalg.norm(x, axis=1, keepdims=True)
    n[n == 0] = 1
    return (x / n).astype(np.float32)


def snorm_stats(x, cohort, top_n, chunk):
    x, cohort = normalise(x), normalise(cohort)
    mean = np.empty(len(x))
    std = np.empty(len(x))
    for b in range(0, len(x), chunk):
        s = x[b:b + chunk] @ cohort.T
        np.clip(s, -1, 1, out=s)
        top = np.partition(s, -top_n, axis=1)[:, -top_n:].astype(np.float64)
        mean[b:b + chunk] = top.mean(axis=1)
        std[b:b + chunk] = top.std(axis=1)
    return mean, std


def score_pairs(x, trials, chunk):
    x = normalise(x)
    out = np.empty(len(trials), dtype=np.float32)
    for b in range(0, len(trials), chunk):
        t = trials[b:b + chunk]
        out[b:b + chunk] = np.einsum("ij,ij->i", x[t[:, 0]], x[t[:, 1]])
    return np.clip(out, -1, 1)


def apply_snorm(scores, mean, std, trials):
    s = scores.astype(np.float64)
    l, r = trials[:, 0], trials[:, 1]
    return (0.5 * ((s - mean[l]) / std[l] + (s - mean[r]) / std[r])).astype(np.float32)


def quality_features(scores, trials, durations, magnitudes, max_duration=20.0):
    d = np.minimum(durations, max_duration)
    dl, dr = d[trials[:, 0]], d[trials[:, 1]]
    ml, mr = magnitudes[trials[:, 0]], magnitudes[trials[:, 1]]
    return np.column_stack([scores.astype(np.float64), np.log(np.minimum(dl, dr)), np.log(np.maximum(dl, dr)),
                            np.minimum(ml, mr), np.maximum(ml, mr)])


def train_calibration(tar, non, prior=0.5, l2=1e-6, max_iter=100, tol=1e-12):
    """Newton's method on standardised features (asvcpp/eval/calibration.h's objective)."""
    x = np.vstack([tar, non])
    mu = x.mean(axis=0)
    sd = x.std(axis=0)
    sd[sd == 0] = 1
    z = np.column_stack([(x - mu) / sd, np.ones(len(x))])
    y = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    logit_prior = np.log(prior / (1 - prior))
    weight = np.where(y == 1, prior / len(tar), (1 - prior) / len(non))
    reg = np.full(z.shape[1], l2)
    reg[-1] = 0

    def objective(theta):
        a = z @ theta + logit_prior
        loss = np.where(y == 1, np.logaddexp(0, -a), np.logaddexp(0, a))
        return (weight * loss).sum() + 0.5 * (reg * theta * theta).sum()

    theta = np.zeros(z.shape[1])
    for it in range(1, max_iter + 1):
        a = z @ theta + logit_prior
        p = 1 / (1 + np.exp(-a))
        grad = z.T @ (weight * (p - y)) + reg * theta
        hess = (z * (weight * p * (1 - p))[:, None]).T @ z + np.diag(reg)
        step = np.linalg.solve(hess, grad)
        decrement = grad @ step / 2
        if decrement < tol:
            break
        f0, t = objective(theta), 1.0
        while objective(theta - t * step) > f0 - 0.25 * t * grad @ step and t > 1e-10:
            t /= 2
        theta = theta - t * step
    w = theta[:-1] / sd
    return w, theta[-1] - (w * mu).sum(), it


def eer_min_dcf(tar, non, p_targets):
    scores = np.concatenate([tar, non])
    labels = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    order = np.argsort(scores, kind="stable")
    t = np.concatenate([[0], np.cumsum(labels[order])])
    k = np.arange(len(scores) + 1)
    frr = t / len(tar)
    far = (len(non) - (k - t)) / len(non)
    i = np.argmin(np.abs(frr - far))
    eer = (frr[i] + far[i]) / 2
    dcfs = []
    for p in p_targets:
        c = frr * p + far * (1 - p)
        dcfs.append(c.min() / min(p, 1 - p))
    return eer, dcfs


def cllr(tar, non):
    return (np.logaddexp(0, -tar).mean() + np.logaddexp(0, non).mean()) / (2 * np.log(2))


def min_cllr(tar, non):
    scores = np.concatenate([tar, non])
    labels = np.concatenate([np.ones(len(tar)), np.zeros(len(non))])
    order = np.lexsort((1 - labels, scores))  # ascending, targets first within a tie
    s, y = scores[order], labels[order]
    # Tied scores start in one bin; then pool adjacent violators (a stack of bins).
    starts = np.concatenate([[0], np.nonzero(np.diff(s))[0] + 1])
    sums = np.add.reduceat(y, starts)
    counts = np.diff(np.concatenate([starts, [len(s)]]))
    stack_sum, stack_cnt = [], []
    for a, c in zip(sums.tolist(), counts.tolist()):
        while stack_sum and stack_sum[-1] * c >= a * stack_cnt[-1]:
            a += stack_sum.pop()
            c += stack_cnt.pop()
        stack_sum.append(a)
        stack_cnt.append(c)
    p = np.repeat(np.array(stack_sum) / np.array(stack_cnt), stack_cnt)
    with np.errstate(divide="ignore"):
        llr = np.log(p) - np.log1p(-p) - np.log(len(tar) / len(non))
    return cllr(llr[y == 1], llr[y == 0])


def act_dcf(tar, non, p):
    theta = np.log((1 - p) / p)
    return (p * np.mean(tar < theta) + (1 - p) * np.mean(non >= theta)) / min(p, 1 - p)


def list_metrics(llr, target):
    tar, non = llr[target == 1], llr[target == 0]
    eer, dcfs = eer_min_dcf(tar, non, [0.05, 0.01])
    return {"trials": int(len(llr)), "targets": int(len(tar)), "eer_percent": 100 * eer, "min_dcf_0.05": dcfs[0],
            "min_dcf_0.01": dcfs[1], "cllr": cllr(tar, non), "min_cllr": min_cllr(tar, non),
            "act_dcf_0.05": act_dcf(tar, non, 0.05), "act_dcf_0.01": act_dcf(tar, non, 0.01)}


def main():
    d = args.dir
    meta = json.load(open(os.path.join(d, "meta.json")))
    dim = meta["dim"]

    def f32(name):
        return np.fromfile(os.path.join(d, name), dtype=np.float32).reshape(-1, dim)

    def trials(name):
        return np.fromfile(os.path.join(d, name), dtype=np.int64).reshape(-1, 2)

    emb, backend, cal, cohort = f32("embeddings.f32"), f32("backend.f32"), f32("calibration.f32"), f32("cohort.f32")
    durations = np.fromfile(os.path.join(d, "durations.f64"))
    cal_durations = np.fromfile(os.path.join(d, "calibration_durations.f64"))
    cal_trials = trials("calibration_trials.i64")
    cal_target = np.fromfile(os.path.join(d, "calibration_target.u8"), dtype=np.uint8)
    names = meta["lists"]
    lists = [trials(f"{n}_trials.i64") for n in names]
    targets = [np.fromfile(os.path.join(d, f"{n}_target.u8"), dtype=np.uint8) for n in names]
    top_n = meta["top_n"]

    steps = {}
    w0, c0 = time.perf_counter(), time.process_time()
    with timed(steps, "process"):
        mean, w = train_cwl(backend)
        p_emb, p_cohort, p_cal = process(emb, mean, w), process(cohort, mean, w), process(cal, mean, w)
        mags = np.linalg.norm(emb.astype(np.float64), axis=1)
        cal_mags = np.linalg.norm(cal.astype(np.float64), axis=1)
    with timed(steps, "snorm_stats"):
        s_mean, s_std = snorm_stats(p_emb, p_cohort, top_n, args.chunk_rows)
    with timed(steps, "score"):
        raw = [score_pairs(p_emb, t, args.pair_chunk) for t in lists]
    with timed(steps, "normalise"):
        normed = [apply_snorm(r, s_mean, s_std, t) for r, t in zip(raw, lists)]
    with timed(steps, "calibration_train"):
        c_mean, c_std = snorm_stats(p_cal, p_cohort, top_n, args.chunk_rows)
        c_scores = apply_snorm(score_pairs(p_cal, cal_trials, args.pair_chunk), c_mean, c_std, cal_trials)
        f = quality_features(c_scores, cal_trials, cal_durations, cal_mags)
        cw, cb, iterations = train_calibration(f[cal_target == 1], f[cal_target == 0])
    with timed(steps, "calibration_apply"):
        llrs = [quality_features(s, t, durations, mags) @ cw + cb for s, t in zip(normed, lists)]
    with timed(steps, "metrics"):
        metrics = [dict(list=n, **list_metrics(l, y)) for n, l, y in zip(names, llrs, targets)]
    steps["total"] = {"wall_s": time.perf_counter() - w0, "cpu_s": time.process_time() - c0}

    # Agreement with asvcpp.
    a_mean = np.fromfile(os.path.join(d, "asvcpp_snorm_mean.f64"))
    a_std = np.fromfile(os.path.join(d, "asvcpp_snorm_std.f64"))
    agreement = {"snorm_mean_max_abs_diff": float(np.abs(a_mean - s_mean).max()),
                 "snorm_std_max_rel_diff": float((np.abs(a_std - s_std) / s_std).max()),
                 "calibration_weights_numpy": cw.tolist(), "calibration_bias_numpy": float(cb),
                 "calibration_weights_asvcpp": meta["calibration_weights"],
                 "calibration_bias_asvcpp": meta["calibration_bias"], "lists": []}
    asvcpp_report = json.load(open(args.asvcpp_json)) if args.asvcpp_json else None
    ok = agreement["snorm_mean_max_abs_diff"] < 1e-5 and agreement["snorm_std_max_rel_diff"] < 1e-4
    for i, n in enumerate(names):
        a_raw = np.fromfile(os.path.join(d, f"{n}_asvcpp_raw.f32"), dtype=np.float32)
        a_norm = np.fromfile(os.path.join(d, f"{n}_asvcpp_snorm.f32"), dtype=np.float32)
        a_llr = np.fromfile(os.path.join(d, f"{n}_asvcpp_llr.f64"))
        entry = {"list": n, "raw_max_abs_diff": float(np.abs(a_raw - raw[i]).max()),
                 "snorm_max_abs_diff": float(np.abs(a_norm - normed[i]).max()),
                 "llr_max_abs_diff": float(np.abs(a_llr - llrs[i]).max()),
                 "numpy_metrics_of_asvcpp_llrs": list_metrics(a_llr, targets[i])}
        entry["eer_percent_diff"] = abs(entry["numpy_metrics_of_asvcpp_llrs"]["eer_percent"] - metrics[i]["eer_percent"])
        if asvcpp_report:
            own = asvcpp_report["lists"][i]
            entry["asvcpp_reported"] = own
            mine = entry["numpy_metrics_of_asvcpp_llrs"]
            entry["metric_max_abs_diff_same_llrs"] = max(abs(own[k] - mine[k]) for k in mine if k not in ("trials", "targets"))
            ok = ok and entry["metric_max_abs_diff_same_llrs"] < 1e-9
        ok = ok and entry["raw_max_abs_diff"] < 1e-5 and entry["snorm_max_abs_diff"] < 1e-3 \
            and entry["llr_max_abs_diff"] < 1e-2 and entry["eer_percent_diff"] < 0.02
        agreement["lists"].append(entry)
    agreement["ok"] = bool(ok)
    report = {"case": "scoring", "implementation": "numpy", "numpy": np.__version__, "threads": args.threads,
              "chunk_rows": args.chunk_rows, "lists": metrics,
              "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, "calibration_iterations": iterations, **steps,
              "agreement": agreement}
    text = json.dumps(report, indent=2)
    if args.json == "-":
        print(text)
    else:
        with open(args.json, "w") as out:
            out.write(text + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
