#!/usr/bin/env python3
"""Golden values for asvcpp's back-end: vector processing, closed-form PLDA, PLDA/cosine scoring,
adaptive s-norm, computed by an independent NumPy/SciPy implementation of the formulas documented
in asvcpp/backend/{vector_processor,plda,score_norm}.h (ASVtorch's back-end, reference section 8).

tests/asvcpp/backend/golden/plda_golden.json was made with:

    python3 -m venv /tmp/asv-eval-venv
    /tmp/asv-eval-venv/bin/pip install numpy==2.4.6 scipy==1.17.1
    /tmp/asv-eval-venv/bin/python tools/golden/make_plda_golden.py tests/asvcpp/backend/golden/plda_golden.json

(Python 3.11.7.) No ASVtorch code is run or copied; the script also checks its PLDA score against
the two-covariance log-likelihood ratio evaluated directly with scipy.stats.multivariate_normal
(score / 2 - LLR must be the same constant for every trial when plda_dim = D).

Data (reproduced exactly by tests/asvcpp/backend/plda_golden_test.cc):
  SplitMix64 stream from seed 2024; u = (z >> 11) * 2^-53; g = ((u1 + u2) + u3) + u4 - 2.0.
  D = 16. A[i][j] = (u - 0.5) * 2.0 (row-major, speaker loading), then B[i][j] = (u - 0.5) * 1.2
  (residual loading), then mu[i] = (u - 0.5) * 4.0. Then for each speaker: y = 16 draws of g;
  for each of its vectors: e = 16 draws of g, x_i = mu_i, x_i += A[i][j] * y[j] for j = 0..15,
  x_i += B[i][j] * e[j] for j = 0..15 (each product and sum rounded to double), stored as float32.
  Training set: 40 speakers x 6 vectors, speaker "s00".."s39", generated speaker by speaker, then
  row i of the stored set is generated row (7 * i) % 240 (speakers interleaved). Test set (drawn
  after the training set): 12 speakers x 4 vectors, kept in order; trials are all pairs (i, j),
  i < j, of the 48 test vectors, in row-major order; target iff same speaker.

Pipeline: VectorProcessor "cwl" trained on the training set, applied to both sets, results rounded
to float32 (as asvcpp stores them); PLDA (ASVtorch divisors: N - 1 for Sw and St) trained on the
processed training set; scores for plda_dim 10 and 16; cosine scores; adaptive s-norm of the
plda_dim 10 scores with the processed training set as cohort and top_n 50; EER / minDCF
(p_target 0.05) of the plda_dim 10 scores with ASVtorch's definitions. Whitening eigenvector
signs: the largest-magnitude entry of each column is made positive (asvcpp's convention).
"""
import json
import platform
import sys

import numpy as np
import scipy
import scipy.linalg
import scipy.stats

MASK = (1 << 64) - 1
D = 16


class SplitMix64:
    def __init__(self, seed):
        self.state = seed & MASK

    def next(self):
        self.state = (self.state + 0x9E3779B97F4A7C15) & MASK
        z = self.state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def u(self):
        return (self.next() >> 11) * 2.0 ** -53

    def g(self):
        v = self.u() + self.u()
        v = v + self.u()
        v = v + self.u()
        return v - 2.0


def generate():
    rng = SplitMix64(2024)
    A = [[(rng.u() - 0.5) * 2.0 for _ in range(D)] for _ in range(D)]
    B = [[(rng.u() - 0.5) * 1.2 for _ in range(D)] for _ in range(D)]
    mu = [(rng.u() - 0.5) * 4.0 for _ in range(D)]

    def speaker_rows(n_vectors):
        y = [rng.g() for _ in range(D)]
        rows = []
        for _ in range(n_vectors):
            e = [rng.g() for _ in range(D)]
            row = []
            for i in range(D):
                acc = mu[i]
                for j in range(D):
                    acc = acc + A[i][j] * y[j]
                for j in range(D):
                    acc = acc + B[i][j] * e[j]
                row.append(acc)
            rows.append(row)
        return rows

    train, train_spk = [], []
    for s in range(40):
        for r in speaker_rows(6):
            train.append(r)
            train_spk.append("s%02d" % s)
    test, test_spk = [], []
    for s in range(12):
        for r in speaker_rows(4):
            test.append(r)
            test_spk.append(s)
    n = len(train)
    order = [(7 * i) % n for i in range(n)]
    train = [train[k] for k in order]
    train_spk = [train_spk[k] for k in order]
    return (np.asarray(train, dtype=np.float32), train_spk, np.asarray(test, dtype=np.float32), test_spk)


def train_processor(x, instruction):
    steps = []
    x = x.astype(np.float64)
    for c in instruction:
        if c == "c":
            m = x.mean(axis=0)
            steps.append(("c", m))
            x = x - m
        elif c == "w":
            cov = x.T @ x / x.shape[0]
            lam, u = scipy.linalg.eigh(cov)
            pivots = u[np.argmax(np.abs(u), axis=0), np.arange(u.shape[1])]
            u = u * np.where(pivots < 0, -1.0, 1.0)
            w = u * (np.maximum(lam, 1e-8) ** -0.5)
            steps.append(("w", w))
            x = x @ w
        elif c == "l":
            steps.append(("l", None))
            x = length_norm(x)
        else:
            raise ValueError(c)
    return steps


def length_norm(x):
    n = np.sqrt((x ** 2).sum(axis=1, keepdims=True))
    n[n == 0] = 1
    return x / n


def process(steps, x):
    x = x.astype(np.float64)
    for kind, p in steps:
        if kind == "c":
            x = x - p
        elif kind == "w":
            x = x @ p
        else:
            x = length_norm(x)
    return x.astype(np.float32)


def train_plda(x, spk):
    x = x.astype(np.float64)
    n = x.shape[0]
    labels = sorted(set(spk))
    ids = np.array([labels.index(s) for s in spk])
    means = np.stack([x[ids == k].mean(axis=0) for k in range(len(labels))])
    r = x - means[ids]
    r = r - r.mean(axis=0)
    sw = r.T @ r / (n - 1)
    sw_unbiased = r.T @ r / (n - len(labels))
    xc = x - x.mean(axis=0)
    st = xc.T @ xc / (n - 1)
    return st, st - sw, sw_unbiased


def scoring_matrices(st, sb, d):
    lam = np.linalg.inv(st)
    gam = np.linalg.inv(st - sb @ lam @ sb)
    q = lam - gam
    p = lam @ sb @ gam
    u, s, _ = np.linalg.svd(p)
    uk = u[:, :d]
    return uk, s[:d], uk.T @ q @ uk


def plda_scores(st, sb, d, left, right):
    uk, l, qh = scoring_matrices(st, sb, d)
    a = left.astype(np.float64) @ uk
    b = right.astype(np.float64) @ uk
    return ((a @ qh) * a).sum(1) + ((b @ qh) * b).sum(1) + 2 * (a * l * b).sum(1)


def eer_min_dcf(scores, is_target, p_target=0.05):
    tar = scores[is_target]
    non = scores[~is_target]
    all_scores = np.concatenate((tar, non))
    labels = np.concatenate((np.ones(tar.size), np.zeros(non.size)))
    idx = np.argsort(all_scores, kind="mergesort")
    labels = labels[idx]
    t = np.cumsum(labels)
    frr = np.concatenate(([0.0], t / tar.size))
    far = np.concatenate(([1.0], (non.size - (np.arange(1, labels.size + 1) - t)) / non.size))
    k = int(np.argmin(np.abs(frr - far)))
    cdet = frr * p_target + far * (1 - p_target)
    return float((frr[k] + far[k]) / 2), float(cdet.min() / min(p_target, 1 - p_target))


def main():
    out_path = sys.argv[1]
    train, train_spk, test, test_spk = generate()
    steps = train_processor(train, "cwl")
    ptrain = process(steps, train)
    ptest = process(steps, test)
    steps2 = train_processor(train, "cwlcw")
    ptest2 = process(steps2, test)
    st, sb, sw_unbiased = train_plda(ptrain, train_spk)

    pairs = [(i, j) for i in range(len(test)) for j in range(i + 1, len(test))]
    li = np.array([p[0] for p in pairs])
    ri = np.array([p[1] for p in pairs])
    is_target = np.array([test_spk[i] == test_spk[j] for i, j in pairs])
    s10 = plda_scores(st, sb, 10, ptest[li], ptest[ri])
    s16 = plda_scores(st, sb, 16, ptest[li], ptest[ri])

    # Independent check of the scoring formula: two-covariance LLR by direct Gaussian densities.
    a = ptest[li].astype(np.float64)
    b = ptest[ri].astype(np.float64)
    joint = scipy.stats.multivariate_normal(np.zeros(2 * D), np.block([[st, sb], [sb, st]]))
    marg = scipy.stats.multivariate_normal(np.zeros(D), st)
    llr = joint.logpdf(np.hstack((a, b))) - marg.logpdf(a) - marg.logpdf(b)
    offset = s16 / 2 - llr
    assert np.ptp(offset) < 1e-8 * np.abs(s16).max(), np.ptp(offset)

    pa = ptest[li].astype(np.float64)
    pb = ptest[ri].astype(np.float64)
    cosine = (pa * pb).sum(1) / np.sqrt((pa ** 2).sum(1) * (pb ** 2).sum(1))

    # Adaptive s-norm, cohort = processed training set, top 50.
    uk, l, qh = scoring_matrices(st, sb, 10)
    def all_vs_all(x, y):
        x = x.astype(np.float64) @ uk
        y = y.astype(np.float64) @ uk
        return ((x @ qh) * x).sum(1)[:, None] + ((y @ qh) * y).sum(1)[None, :] + 2 * (x * l) @ y.T
    top = np.sort(all_vs_all(ptest, ptrain), axis=1)[:, -50:]
    sn_mean = top.mean(axis=1)
    sn_std = top.std(axis=1)
    snorm = 0.5 * ((s10 - sn_mean[li]) / sn_std[li] + (s10 - sn_mean[ri]) / sn_std[ri])

    eer, min_dcf = eer_min_dcf(s10, is_target)
    doc = {
        "provenance": {
            "tool": "tools/golden/make_plda_golden.py",
            "python": platform.python_version(),
            "numpy": np.__version__,
            "scipy": scipy.__version__,
            "notes": ("Independent float64 NumPy/SciPy implementation; inputs to each stage rounded to "
                      "float32 as asvcpp stores them. llr_offset: score/2 - direct two-covariance LLR "
                      "(constant over trials) for plda_dim 16."),
        },
        "data": {"seed": 2024, "dim": D, "train_speakers": 40, "train_per_speaker": 6, "train_row_stride": 7,
                 "test_speakers": 12, "test_per_speaker": 4,
                 "train_first_row": [float(v) for v in train[0]],
                 "test_last_row": [float(v) for v in test[-1]],
                 "train_first_speakers": train_spk[:5]},
        "processed_test_cwl": ptest.astype(np.float64).tolist(),
        "processed_test_cwlcw": ptest2.astype(np.float64).tolist(),
        "St": st.tolist(),
        "Sb": sb.tolist(),
        "Sw_unbiased": sw_unbiased.tolist(),
        "singular_values_10": scoring_matrices(st, sb, 10)[1].tolist(),
        "n_trials": len(pairs),
        "n_target": int(is_target.sum()),
        "scores_plda10": s10.tolist(),
        "scores_plda16": s16.tolist(),
        "llr_offset": float(offset.mean()),
        "scores_cosine": cosine.tolist(),
        "snorm_top_n": 50,
        "snorm_mean": sn_mean.tolist(),
        "snorm_std": sn_std.tolist(),
        "scores_plda10_snorm": snorm.tolist(),
        "eer_plda10": eer,
        "min_dcf_plda10_p0.05": min_dcf,
    }
    with open(out_path, "w") as f:
        json.dump(doc, f)
        f.write("\n")
    print("EER %.4f %%, minDCF %.4f, %d trials (%d target)" % (100 * eer, min_dcf, len(pairs), is_target.sum()))


if __name__ == "__main__":
    main()
