#!/usr/bin/env python3
"""Runs an ONNX model in ONNX Runtime (CPU) for asvcpp's ONNX export tests.

    run_onnx.py MODEL SPEC.json

SPEC: {"input": NAME, "runs": [{"input": "x.f32", "shape": [...], "output": "y.f32"}, ...]}: each
run feeds the float32 file `input` of `shape` to the model's input NAME ("feats" unless given:
[batch, frames, feat_dim]; "waveform": [batch, samples]) and writes its output
"embedding" as float32 to `output`, all in one session (so that dynamic axes are exercised).
A run may give {"wav": "x.wav", ...} instead of "input" and "shape": a 16-bit PCM WAV file read
with Python's wave module, fed as [1, samples] in [-1, 1) (samples / 32768, first channel).
Prints the output shapes, one line per run.
"""
import json
import sys
import wave

import numpy as np
import onnxruntime


def main():
    model, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    session = onnxruntime.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    input_name = spec.get("input", "feats")
    names = [i.name for i in session.get_inputs()], [o.name for o in session.get_outputs()]
    if names != ([input_name], ["embedding"]):
        sys.exit(f"unexpected inputs/outputs {names}")
    for run in spec["runs"]:
        if "wav" in run:
            with wave.open(run["wav"]) as w:
                if w.getsampwidth() != 2:
                    sys.exit(f"{run['wav']}: not 16-bit PCM")
                pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2").reshape(-1, w.getnchannels())
            x = (pcm[:, 0].astype(np.float32) / 32768.0).reshape(1, -1)
        else:
            x = np.fromfile(run["input"], dtype=np.float32).reshape(run["shape"])
        (y,) = session.run(["embedding"], {input_name: x})
        y.astype(np.float32).tofile(run["output"])
        print(" ".join(str(d) for d in y.shape))


if __name__ == "__main__":
    main()
