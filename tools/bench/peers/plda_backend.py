#!/usr/bin/env python3
"""Peer of asv_bench_backend: the same closed-form PLDA, scoring and metrics in NumPy/SciPy, and the
scikit-learn roc_curve EER, on the inputs asv_bench_backend --write DIR wrote.

Formulas: asvcpp/backend/plda.h (closed form, divisors N - 1; scoring matrices; float32 scores)
written as they read (two scatter matrices; SVD of P), float64 training and scoring matrices,
float32 trial scoring, as asvcpp. Extra entries time the parts of scoring and variants with
asvcpp's algebra (one scatter matrix; P and Gamma from two symmetric positive definite inverses,
eigendecomposition of the symmetric P).
and asvcpp/eval/metrics.h (ASVtorch's EER and minDCF). Prints JSON: per implementation, timings
(median/min/max over repeats after warm-up) and EER/minDCF on its own scores and on asvcpp's.
"""
import argparse
import json
import os
import statistics
import time

import numpy as np
import scipy.linalg
from threadpoolctl import threadpool_limits


def measure(fn, warmup, repeats):
    for _ in range(warmup):
        fn()
    times = []
    result = None
    for _ in range(repeats):
        start = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - start)
    return result, {"median": statistics.median(times), "min": min(times), "max": max(times), "repeats": repeats}


def train_closed_form(x, speakers):
    x = x.astype(np.float64)
    n, dim = x.shape
    labels, inverse = np.unique(speakers, return_inverse=True)
    sums = np.zeros((len(labels), dim))
    np.add.at(sums, inverse, x)
    means = sums / np.bincount(inverse)[:, None]
    within = x - means[inverse]
    within -= within.mean(axis=0)
    sw = within.T @ within / (n - 1)
    centred = x - x.mean(axis=0)
    st = centred.T @ centred / (n - 1)
    return st, st - sw


def scoring_matrices(st, sb, plda_dim):
    lam = scipy.linalg.inv(st)
    gamma = scipy.linalg.inv(st - sb @ lam @ sb)
    q = lam - gamma
    p = lam @ sb @ gamma
    u, s, _ = np.linalg.svd(p)
    ud = u[:, :plda_dim]
    return ud.astype(np.float32), s[:plda_dim].astype(np.float32), (ud.T @ q @ ud).astype(np.float32)


def score_all(ud, cross, quad, left, right):
    """float32 throughout, as asvcpp: project, per-vector quadratic terms, one matrix product."""
    a = left @ ud
    b = right @ ud
    ha = ((a @ quad) * a).sum(axis=1)
    hb = ((b @ quad) * b).sum(axis=1)
    s = (a * (2 * cross)) @ b.T
    s += ha[:, None]
    s += hb[None, :]
    return s


# Variants that use the same algebra as asvcpp's implementation rather than the formulas as
# written (reported separately, for transparency; the timed "numpy" entries follow the formulas).
def train_one_scatter(x, speakers):
    """Sw from one scatter: W = T - sum_s n_s (m_s - m)(m_s - m)^T (the identity asvcpp uses)."""
    x = x.astype(np.float64)
    n, dim = x.shape
    labels, inverse = np.unique(speakers, return_inverse=True)
    centred = x - x.mean(axis=0)
    counts = np.bincount(inverse)
    sums = np.zeros((len(labels), dim))
    np.add.at(sums, inverse, centred)
    scaled = sums / np.sqrt(counts)[:, None]
    total = centred.T @ centred
    between = scaled.T @ scaled
    st = total / (n - 1)
    sw = (total - between) / (n - 1)
    return st, st - sw


def spd_inverse(m):
    """Inverse of a symmetric positive definite matrix from its Cholesky factor (LAPACK dpotrf +
    dpotri, as asvcpp), both triangles."""
    c, info = scipy.linalg.lapack.dpotrf(m, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotrf info {info}")
    inv, info = scipy.linalg.lapack.dpotri(c, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotri info {info}")
    return np.tril(inv) + np.tril(inv, -1).T


def scoring_matrices_partial_fractions(st, sb, plda_dim):
    """asvcpp's algebra (asvcpp/backend/plda.h): Gamma = (Sw^-1 + (St + Sb)^-1) / 2 and
    P = (Sw^-1 - (St + Sb)^-1) / 2 with Sw = St - Sb, from two symmetric positive definite
    inverses (no other D x D product); U and s from the symmetric eigendecomposition of P;
    Q^ = (Ls^-1 U)^T (Ls^-1 U) - U^T Gamma U with St = Ls Ls^T."""
    ls = scipy.linalg.cholesky(st, lower=True)
    w_inv = spd_inverse(st - sb)
    p_inv = spd_inverse(st + sb)
    p = 0.5 * (w_inv - p_inv)
    gamma = 0.5 * (w_inv + p_inv)
    w, v = scipy.linalg.eigh(p, driver="evd")
    order = np.argsort(-np.abs(w), kind="stable")[:plda_dim]
    ud = v[:, order]
    v1 = scipy.linalg.solve_triangular(ls, ud, lower=True)
    return ud.astype(np.float32), np.abs(w[order]).astype(np.float32), (v1.T @ v1 - ud.T @ gamma @ ud).astype(np.float32)


def asvtorch_metrics(target, nontarget, p_target=0.05, c_miss=1.0, c_fa=1.0):
    """EER and minDCF as asvcpp/eval/metrics.h (ASVtorch's eval_metrics.py) defines them."""
    scores = np.concatenate([target, nontarget])
    is_target = np.concatenate([np.ones(len(target)), np.zeros(len(nontarget))])
    order = np.argsort(scores, kind="mergesort")
    is_target = is_target[order]
    n_tar, n_non = len(target), len(nontarget)
    t = np.concatenate([[0], np.cumsum(is_target)])
    k = np.arange(len(scores) + 1)
    frr = t / n_tar
    far = (n_non - (k - t)) / n_non
    i = int(np.argmin(np.abs(frr - far)))
    eer = (frr[i] + far[i]) / 2
    c_det = c_miss * frr * p_target + c_fa * far * (1 - p_target)
    min_dcf = float(np.min(c_det) / min(c_miss * p_target, c_fa * (1 - p_target)))
    return float(eer) * 100, min_dcf


try:
    from sklearn.metrics import roc_curve
except ImportError:
    roc_curve = None


def sklearn_eer(target, nontarget):
    if roc_curve is None:
        raise ImportError("scikit-learn")
    y = np.concatenate([np.ones(len(target)), np.zeros(len(nontarget))])
    fpr, tpr, _ = roc_curve(y, np.concatenate([target, nontarget]))
    fnr = 1 - tpr
    i = int(np.nanargmin(np.abs(fnr - fpr)))
    return float((fpr[i] + fnr[i]) / 2) * 100


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dir", required=True)
    parser.add_argument("--meta", required=True, help="asv_bench_backend's JSON (sizes)")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", required=True)
    args = parser.parse_args()
    meta = json.load(open(args.meta))
    dim = meta["dim"]

    def load(name, dtype, cols=None):
        a = np.fromfile(os.path.join(args.dir, name), dtype=dtype)
        return a.reshape(-1, cols) if cols else a

    x, spk = load("train.f32", np.float32, dim), load("train_speakers.i64", np.int64)
    enroll, espk = load("enroll.f32", np.float32, dim), load("enroll_speakers.i64", np.int64)
    test, tspk = load("test.f32", np.float32, dim), load("test_speakers.i64", np.int64)
    asv_scores = load("asvcpp_scores.f64", np.float64).reshape(len(enroll), len(test))
    mask = espk[:, None] == tspk[None, :]
    out = {}
    with threadpool_limits(limits=args.threads):
        (st, sb), t_train = measure(lambda: train_closed_form(x, spk), args.warmup, args.repeats)
        scores, t_score = measure(lambda: score_all(*scoring_matrices(st, sb, meta["plda_dim"]), enroll, test),
                                  args.warmup, args.repeats)
        (eer, dcf), t_metrics = measure(lambda: asvtorch_metrics(scores[mask].astype(np.float64),
                                                                 scores[~mask].astype(np.float64)),
                                        args.warmup, args.repeats)
        eer_asv, dcf_asv = asvtorch_metrics(asv_scores[mask], asv_scores[~mask])
        out["numpy"] = {"train": t_train, "score": t_score, "metrics": t_metrics, "eer_percent": eer,
                        "min_dcf": dcf, "eer_percent_on_asvcpp_scores": eer_asv,
                        "min_dcf_on_asvcpp_scores": dcf_asv,
                        "max_abs_score_diff": float(np.max(np.abs(scores - asv_scores)))}
        _, t_train1 = measure(lambda: train_one_scatter(x, spk), args.warmup, args.repeats)
        _, t_mat = measure(lambda: scoring_matrices(st, sb, meta["plda_dim"]), args.warmup, args.repeats)
        _, t_mat_same = measure(lambda: scoring_matrices_partial_fractions(st, sb, meta["plda_dim"]), args.warmup,
                                args.repeats)
        ready = scoring_matrices(st, sb, meta["plda_dim"])
        _, t_trials = measure(lambda: score_all(*ready, enroll, test), args.warmup, args.repeats)
        out["numpy"].update({"score_matrices": t_mat, "score_trials": t_trials})
        out["numpy_same_algebra_as_asvcpp"] = {"train_one_scatter": t_train1, "score_matrices_partial_fractions": t_mat_same}
        try:
            sk_eer, t_sk = measure(lambda: sklearn_eer(scores[mask].astype(np.float64),
                                                       scores[~mask].astype(np.float64)),
                                   args.warmup, args.repeats)
            out["sklearn"] = {"metrics": t_sk, "eer_percent": sk_eer,
                              "eer_percent_on_asvcpp_scores": sklearn_eer(asv_scores[mask], asv_scores[~mask])}
        except ImportError:
            out["sklearn"] = "not available"
    with open(args.json, "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
