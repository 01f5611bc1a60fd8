#!/usr/bin/env python3
"""Computes golden Cllr / minCllr / actDCF values with a NumPy transcription of their definitions.

tests/asvcpp/eval/golden/llr_metrics_golden.json was made with this script:

    python3 -m venv /tmp/asv-llr-venv && /tmp/asv-llr-venv/bin/pip install numpy==2.4.6
    /tmp/asv-llr-venv/bin/python tools/golden/make_llr_metric_golden.py \
        tests/asvcpp/eval/golden/llr_metrics_golden.json

Definitions, as in asvcpp/eval/llr_metrics.h (N. Brummer and J. du Preez, "Application-independent
evaluation of speaker detection", Computer Speech and Language 20, 2006; the BOSARIS Toolkit's
cllr.m, min_cllr.m, opt_loglr.m, pavx.m and fast_actDCF.m):
  Cllr    = (mean(log(1 + exp(-tar))) + mean(log(1 + exp(non)))) / (2 log 2), in bits;
  minCllr = Cllr of the pool-adjacent-violators (PAV) optimal LLRs of the scores: sorted ascending
            with targets first within a tie, isotonic regression of the 0/1 labels, each bin's
            posterior p turned into log(p / (1 - p)) - log(N_tar / N_non);
  actDCF  = (c_miss p P_miss + c_fa (1 - p) P_fa) / min(c_miss p, c_fa (1 - p)) with the Bayes
            threshold theta = log(c_fa (1 - p) / (c_miss p)): miss when llr < theta, false alarm
            when llr >= theta.
This transcription is written independently of the C++ code (NumPy's logaddexp, a lexsort, the
textbook PAV that merges backwards with float means); the C++ test compares within 1e-12.

The generated score sets use make_metric_golden.py's "splitmix_irwin_hall" generator (imported
from beside this file), which tests/asvcpp/eval/golden_scores.h reproduces bit for bit.
"""
import argparse
import json
import os
import platform
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_metric_golden import generate  # noqa: E402

OPERATING_POINTS = [(0.05, 1.0, 1.0), (0.01, 1.0, 1.0), (0.001, 1.0, 1.0), (0.5, 1.0, 10.0)]


def cllr(tar, non):
    tar = np.asarray(tar, dtype=np.float64)
    non = np.asarray(non, dtype=np.float64)
    return float((np.mean(np.logaddexp(0.0, -tar)) + np.mean(np.logaddexp(0.0, non))) / (2.0 * np.log(2.0)))


def pav(y):
    """Isotonic (non-decreasing) least-squares fit of y: a list of [mean, weight] blocks."""
    blocks = []
    for v in y:
        blocks.append([float(v), 1.0])
        while len(blocks) > 1 and blocks[-2][0] > blocks[-1][0]:
            m2, w2 = blocks.pop()
            m1, w1 = blocks.pop()
            blocks.append([(m1 * w1 + m2 * w2) / (w1 + w2), w1 + w2])
    fitted = []
    for m, w in blocks:
        fitted.extend([m] * int(w))
    return np.asarray(fitted)


def optimal_llrs(tar, non):
    tar = np.asarray(tar, dtype=np.float64)
    non = np.asarray(non, dtype=np.float64)
    scores = np.concatenate((tar, non))
    labels = np.concatenate((np.ones(tar.size), np.zeros(non.size)))
    # Ascending score; within a tie targets (label 1) first: secondary key -label.
    order = np.lexsort((-labels, scores))
    posterior = pav(labels[order])
    with np.errstate(divide="ignore"):
        llr_sorted = np.log(posterior) - np.log1p(-posterior) - np.log(tar.size / non.size)
    llrs = np.empty_like(llr_sorted)
    llrs[order] = llr_sorted
    return llrs[: tar.size], llrs[tar.size:]


def act_dcf(tar, non, p, c_miss, c_fa):
    tar = np.asarray(tar, dtype=np.float64)
    non = np.asarray(non, dtype=np.float64)
    theta = np.log(c_fa * (1.0 - p) / (c_miss * p))
    p_miss = np.mean(tar < theta)
    p_fa = np.mean(non >= theta)
    dcf = (c_miss * p * p_miss + c_fa * (1.0 - p) * p_fa) / min(c_miss * p, c_fa * (1.0 - p))
    return {"p_target": p, "c_miss": c_miss, "c_fa": c_fa, "threshold": float(theta), "p_miss": float(p_miss),
            "p_fa": float(p_fa), "act_dcf": float(dcf)}


def case_result(tar, non):
    opt_tar, opt_non = optimal_llrs(tar, non)
    return {
        "n_target": len(tar),
        "n_nontarget": len(non),
        "cllr": cllr(tar, non),
        "min_cllr": cllr(opt_tar, opt_non),
        "act_dcf": [act_dcf(tar, non, p, cm, cfa) for p, cm, cfa in OPERATING_POINTS],
        # actDCF of the PAV-optimal LLRs: the calibrated system's cost.
        "optimal_act_dcf": [act_dcf(opt_tar, opt_non, p, cm, cfa)["act_dcf"] for p, cm, cfa in OPERATING_POINTS],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("output", help="JSON file to write")
    args = ap.parse_args()

    inline = [
        ("tiny_separated", [1.0], [0.0]),
        ("tiny_reversed", [0.0], [1.0]),
        ("all_zero", [0.0] * 3, [0.0] * 5),
        ("ties_small", [1.0, 2.0, 2.0, 3.0, 3.0, 3.0], [0.0, 1.0, 1.0, 2.0, 3.0, 4.0]),
        ("overlapping_small", [0.3, -1.2, 2.5, 0.9, 1.7], [-0.4, 0.1, -2.2, 0.95, -0.8, 1.1, -1.5, 0.2]),
        ("confident_wrong", [-30.0, 5.0, 2.0], [40.0, -3.0, -1.0, -7.0]),
    ]
    generated = [
        ("unbalanced", dict(seed=11, n_target=60, n_nontarget=6000, target_mean=4.0, nontarget_mean=-4.0,
                            scale=5.0, quantum=0.0)),
        ("quantised_ties", dict(seed=12, n_target=2000, n_nontarget=20000, target_mean=1.0,
                                nontarget_mean=-2.0, scale=3.0, quantum=0.25)),
        ("miscalibrated_large", dict(seed=13, n_target=5000, n_nontarget=45000, target_mean=25.0,
                                     nontarget_mean=-10.0, scale=40.0, quantum=0.0)),
    ]
    cases = []
    for name, tar, non in inline:
        c = {"name": name, "target_scores": tar, "nontarget_scores": non}
        c.update(case_result(tar, non))
        cases.append(c)
    for name, spec in generated:
        tar, non = generate(spec)
        c = {"name": name, "generator": dict(kind="splitmix_irwin_hall", **spec),
             "first_target_scores": tar[:5], "first_nontarget_scores": non[:5]}
        c.update(case_result(tar, non))
        cases.append(c)

    doc = {
        "provenance": {
            "tool": "tools/golden/make_llr_metric_golden.py",
            "python": platform.python_version(),
            "numpy": np.__version__,
            "notes": "Cllr and minCllr in bits; actDCF normalised by min(c_miss p, c_fa (1 - p)).",
        },
        "cases": cases,
    }
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
