#!/usr/bin/env python3
"""Computes golden learning rates and margins with WeSpeaker's own schedulers.py.

tests/asvcpp/train/golden/wespeaker_schedules_golden.json was made with this script, so that
asv::train::ExponentialLrAt (asvcpp/train/exponential_lr.h) and asv::train::MarginAt
(asvcpp/train/margin_schedule.h) can be checked against what WeSpeaker itself computes:

    git --git-dir=WESPEAKER_GIT_DIR show dfa7419:wespeaker/utils/schedulers.py > /tmp/schedulers.py
    /work/main/.venv/bin/python tools/golden/make_wespeaker_schedule_golden.py /tmp/schedulers.py \
        tests/asvcpp/train/golden/wespeaker_schedules_golden.json --wespeaker-commit dfa7419

(Python 3.11.7; WeSpeaker commit dfa7419.) Nothing of WeSpeaker is copied into asvcpp: the
script imports that file (it needs only `math`) and drives its classes ExponentialDecrease and
MarginScheduler the way wespeaker/utils/executor.py does: step(cur_iter) once per iteration with
cur_iter = (epoch - 1) * epoch_iter + i. Learning rates come from step_return_lr(it), which
evaluates the same get_current_lr as step(); margins are read from a stand-in projection's
update(margin) calls after each step(it), for it = 0, 1, 2, ... in order.
"""
import argparse
import importlib.util
import json


def load(path):
    spec = importlib.util.spec_from_file_location("wespeaker_schedulers", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Projection:
    """Stands in for ArcMarginProduct: only update(margin) matters to MarginScheduler."""

    def __init__(self):
        self.margin = None

    def update(self, margin=0.2):
        self.margin = margin


class Model:

    def __init__(self):
        self.projection = Projection()


LR_CASES = [
    # WeSpeaker's ResNet34 / ECAPA-TDNN recipe on 2 GPUs with batch 128: scale_ratio 4.
    dict(name="recipe_2gpu", num_epochs=150, epoch_iter=7, initial_lr=0.1, final_lr=0.00005,
         warm_up_epoch=6, scale_ratio=4.0, warm_from_zero=True),
    # The class's default warm-up: linear from 1 to scale_ratio.
    dict(name="warm_from_one", num_epochs=10, epoch_iter=5, initial_lr=0.2, final_lr=0.001,
         warm_up_epoch=3, scale_ratio=3.0, warm_from_zero=False),
    # scale_ratio <= 1 without warm_from_zero: no warm-up at all.
    dict(name="no_warm_up", num_epochs=8, epoch_iter=3, initial_lr=0.1, final_lr=0.00005,
         warm_up_epoch=2, scale_ratio=0.5, warm_from_zero=False),
    dict(name="single_gpu_from_zero", num_epochs=12, epoch_iter=4, initial_lr=0.1, final_lr=0.00005,
         warm_up_epoch=6, scale_ratio=1.0, warm_from_zero=True),
]

MARGIN_CASES = [
    # WeSpeaker's recipe: 0 -> 0.2, exp increase during epochs 20..39.
    dict(name="recipe_exp", epoch_iter=5, increase_start_epoch=20, fix_start_epoch=40,
         initial_margin=0.0, final_margin=0.2, update_margin=True, increase_type="exp", epochs=45),
    dict(name="linear", epoch_iter=4, increase_start_epoch=3, fix_start_epoch=6,
         initial_margin=0.1, final_margin=0.3, update_margin=True, increase_type="linear", epochs=8),
    dict(name="exp_from_nonzero", epoch_iter=3, increase_start_epoch=2, fix_start_epoch=5,
         initial_margin=0.05, final_margin=0.35, update_margin=True, increase_type="exp", epochs=7),
    dict(name="no_update", epoch_iter=3, increase_start_epoch=2, fix_start_epoch=4,
         initial_margin=0.1, final_margin=0.3, update_margin=False, increase_type="exp", epochs=6),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("schedulers_py", help="path of WeSpeaker's wespeaker/utils/schedulers.py")
    parser.add_argument("output", help="JSON file to write")
    parser.add_argument("--wespeaker-commit", required=True)
    args = parser.parse_args()
    schedulers = load(args.schedulers_py)

    lr_cases = []
    for case in LR_CASES:
        params = {k: v for k, v in case.items() if k != "name"}
        sched = schedulers.ExponentialDecrease(None, **params)
        iterations = list(range(0, params["num_epochs"] * params["epoch_iter"] + 5))
        lrs = [sched.step_return_lr(it) for it in iterations]
        lr_cases.append(dict(name=case["name"], params=params, lr=lrs))

    margin_cases = []
    for case in MARGIN_CASES:
        params = {k: v for k, v in case.items() if k not in ("name", "epochs")}
        model = Model()
        sched = schedulers.MarginScheduler(model, **params)
        margins = []
        for it in range(case["epochs"] * params["epoch_iter"]):
            sched.step(it)
            margins.append(model.projection.margin)
        margin_cases.append(dict(name=case["name"], params=params, margin=margins))

    doc = dict(
        source="WeSpeaker wespeaker/utils/schedulers.py (ExponentialDecrease, MarginScheduler)",
        wespeaker_commit=args.wespeaker_commit,
        note="lr[i] and margin[i] are the values for global iteration i (0-based)",
        exponential_decrease=lr_cases,
        margin_scheduler=margin_cases,
    )
    with open(args.output, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
