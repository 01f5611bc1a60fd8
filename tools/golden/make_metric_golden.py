#!/usr/bin/env python3
"""Computes golden EER / minDCF / DET values with ASVtorch's own eval_metrics.py.

tests/asvcpp/eval/golden/metrics_golden.json was made with this script, so that asvcpp's
asv::eval metrics can be checked bit for bit against what ASVtorch itself computes:

    python3 -m venv /tmp/asv-eval-venv
    /tmp/asv-eval-venv/bin/pip install numpy==2.4.6 scipy==1.17.1 scikit-learn==1.9.1
    git -C ASVTORCH_GIT_DIR show HEAD:asvtorch/src/evaluation/eval_metrics.py > /tmp/eval_metrics.py
    /tmp/asv-eval-venv/bin/python tools/golden/make_metric_golden.py /tmp/eval_metrics.py \
        tests/asvcpp/eval/golden/metrics_golden.json --asvtorch-commit 9c656dd55467f4480d4c455106c86519288723c3

(Python 3.11.7; ASVtorch SoftwareX release, commit 9c656dd.) The first argument is the path of
ASVtorch's asvtorch/src/evaluation/eval_metrics.py, or of a checkout holding it. Nothing of ASVtorch
is copied into asvcpp: the script imports that file (matplotlib, which it needs only for DET plots,
is replaced by a stand-in) and calls its functions _compute_eer, _compute_min_dcf_tar_nontar,
_compute_det_curve, compute_eer and compute_min_dcf.

Score sets (each either inline or generated; generated ones are reproduced exactly by
tests/asvcpp/eval/metrics_golden_test.cc, which also checks the stored first scores):
  generator "splitmix_irwin_hall": a SplitMix64 stream from `seed`; u = (z >> 11) * 2^-53;
  g = ((u1 + u2) + u3) + u4 - 2.0 (an Irwin-Hall, roughly normal variable, no transcendental
  functions so that C++ and Python agree bit for bit); score = mean + scale * g, then, when
  quantum > 0, floor(score / quantum) * quantum (creates ties). Target scores are drawn first,
  then non-target scores.

Notes written into the file:
  sklearn_roc_eer is the EER most Python code computes with sklearn.metrics.roc_curve:
  fnr = 1 - tpr, i = nanargmin(|fnr - fpr|), EER = (fpr[i] + fnr[i]) / 2. It is NOT what ASVtorch
  (or asvcpp) computes: roc_curve merges tied scores into one point and drops collinear points
  (drop_intermediate=True), and its thresholds accept scores >= t, so with ties, or when the
  crossing falls between points, the two disagree by up to about one trial's share. It is stored
  for information only.
"""
import argparse
import contextlib
import importlib.util
import io
import json
import os
import platform
import sys
import types

import numpy as np

MASK = (1 << 64) - 1
DCF_POINTS = [(0.05, 1.0, 1.0), (0.01, 1.0, 1.0), (0.001, 1.0, 1.0), (0.5, 1.0, 10.0)]


def splitmix64_stream(seed):
    state = seed & MASK
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def generate(spec):
    stream = splitmix64_stream(spec["seed"])

    def draw(n, mean, scale):
        out = []
        for _ in range(n):
            u = [(next(stream) >> 11) * 2.0 ** -53 for _ in range(4)]
            g = u[0] + u[1]
            g = g + u[2]
            g = g + u[3]
            g = g - 2.0
            s = mean + scale * g
            if spec["quantum"] > 0:
                s = float(np.floor(s / spec["quantum"])) * spec["quantum"]
            out.append(s)
        return out

    tar = draw(spec["n_target"], spec["target_mean"], spec["scale"])
    non = draw(spec["n_nontarget"], spec["nontarget_mean"], spec["scale"])
    return tar, non


def load_eval_metrics(path):
    if os.path.isdir(path):
        path = os.path.join(path, "asvtorch", "src", "evaluation", "eval_metrics.py")
    plt = types.ModuleType("matplotlib.pyplot")
    mpl = types.ModuleType("matplotlib")
    mpl.pyplot = plt
    sys.modules.setdefault("matplotlib", mpl)
    sys.modules.setdefault("matplotlib.pyplot", plt)
    spec = importlib.util.spec_from_file_location("asvtorch_eval_metrics", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module, path


def sklearn_eer(tar, non):
    from sklearn.metrics import roc_curve
    y = np.concatenate((np.ones(len(tar)), np.zeros(len(non))))
    s = np.concatenate((np.asarray(tar, dtype=np.float64), np.asarray(non, dtype=np.float64)))
    fpr, tpr, _ = roc_curve(y, s, pos_label=1)
    fnr = 1 - tpr
    i = np.nanargmin(np.abs(fnr - fpr))
    return float((fpr[i] + fnr[i]) / 2)


def case_result(em, tar, non, labels=None, scores=None, with_curve=False):
    out = {}
    if labels is None:
        t = np.asarray(tar, dtype=np.float64)
        n = np.asarray(non, dtype=np.float64)
        eer, thr = em._compute_eer(t, n)
        dcfs = [em._compute_min_dcf_tar_nontar(t, n, p, cm, cfa) for p, cm, cfa in DCF_POINTS]
        out["asvtorch_functions"] = "_compute_eer, _compute_min_dcf_tar_nontar"
    else:
        s = np.asarray(scores, dtype=np.float64)
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            eer, thr = em.compute_eer(s, labels)
        out["asvtorch_printed"] = buf.getvalue().strip()
        dcfs = [em.compute_min_dcf(s, labels, p, cm, cfa) for p, cm, cfa in DCF_POINTS]
        out["asvtorch_functions"] = "compute_eer, compute_min_dcf"
        t, n = em._get_tar_and_nontar_scores(s, labels, None, None)
    out["n_target"] = int(np.asarray(t).size)
    out["n_nontarget"] = int(np.asarray(n).size)
    out["eer"] = float(eer)
    out["eer_threshold"] = float(thr)
    out["min_dcf"] = [
        {"p_target": p, "c_miss": cm, "c_fa": cfa, "min_dcf": float(v), "threshold": float(th)}
        for (p, cm, cfa), (v, th) in zip(DCF_POINTS, dcfs)
    ]
    out["sklearn_roc_eer"] = sklearn_eer(t, n)
    if with_curve:
        frr, far, thresholds = em._compute_det_curve(np.asarray(t, dtype=np.float64), np.asarray(n, dtype=np.float64))
        out["det_curve"] = {"frr": [float(x) for x in frr], "far": [float(x) for x in far],
                            "thresholds": [float(x) for x in thresholds]}
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("eval_metrics", help="ASVtorch eval_metrics.py, or a checkout holding it")
    ap.add_argument("output", help="JSON file to write")
    ap.add_argument("--asvtorch-commit", default="unknown")
    args = ap.parse_args()
    em, path = load_eval_metrics(args.eval_metrics)

    inline = [
        ("tiny_separated", [1.0], [0.0]),
        ("tiny_reversed", [0.0], [1.0]),
        ("all_equal", [0.5] * 5, [0.5] * 7),
        ("ties_small", [1.0, 2.0, 2.0, 3.0, 3.0, 3.0], [0.0, 1.0, 1.0, 2.0, 3.0, 4.0]),
        ("signed_zeros", [-0.0, 1.0, 0.0], [0.0, -1.0, -0.0, 2.0]),
        ("overlapping_small", [0.3, -1.2, 2.5, 0.9, 1.7], [-0.4, 0.1, -2.2, 0.95, -0.8, 1.1, -1.5, 0.2]),
    ]
    generated = [
        ("unbalanced", dict(seed=1, n_target=50, n_nontarget=5000, target_mean=2.0, nontarget_mean=-1.0,
                            scale=3.0, quantum=0.0)),
        ("quantised_ties", dict(seed=2, n_target=2000, n_nontarget=20000, target_mean=1.0,
                                nontarget_mean=-1.0, scale=2.0, quantum=0.25)),
        ("large_100k", dict(seed=3, n_target=10000, n_nontarget=90000, target_mean=5.0,
                            nontarget_mean=-3.0, scale=9.0, quantum=0.0)),
    ]
    cases = []
    for name, tar, non in inline:
        c = {"name": name, "target_scores": tar, "nontarget_scores": non}
        c.update(case_result(em, tar, non, with_curve=True))
        cases.append(c)
    for name, spec in generated:
        tar, non = generate(spec)
        c = {"name": name, "generator": dict(kind="splitmix_irwin_hall", **spec),
             "first_target_scores": tar[:5], "first_nontarget_scores": non[:5]}
        c.update(case_result(em, tar, non))
        cases.append(c)

    # Label strings through ASVtorch's public functions: every vocabulary spelling, plus labels
    # that ASVtorch silently drops ("unknown", "x", "yes").
    label_scores = [2.0, -0.6, -0.5, 0.7, 1.1, -1.0, 0.2, 3.0, -2.0, 0.4, 0.9, 5.0, -3.0, 0.8]
    label_strings = ["Target", "t", "nontarget", "N", "1", "0", "Non-target", "TARGET", "f", "unknown",
                     "T", "x", "yes", "NON-TARGET"]
    c = {"name": "label_vocabulary", "scores": label_scores, "labels": label_strings}
    c.update(case_result(em, None, None, labels=label_strings, scores=label_scores))
    cases.append(c)

    import scipy
    import sklearn
    doc = {
        "provenance": {
            "tool": "tools/golden/make_metric_golden.py",
            "asvtorch_file": "asvtorch/src/evaluation/eval_metrics.py",
            "asvtorch_commit": args.asvtorch_commit,
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "scikit_learn": sklearn.__version__,
            "notes": ("Scores are float64. eer is a fraction (ASVtorch's recipes print 100*eer). "
                      "sklearn_roc_eer is information only: roc_curve merges tied scores and drops "
                      "collinear points, so it differs from ASVtorch's first-argmin EER on ties."),
        },
        "cases": cases,
    }
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
