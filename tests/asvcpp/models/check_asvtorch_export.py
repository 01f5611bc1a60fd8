#!/usr/bin/env python3
"""Reads a state dict that asvcpp wrote in ASVtorch's form (asvcpp/models/asvtorch_model.h) with
PyTorch itself: torch.load(FILE, weights_only=True) where this PyTorch has weights_only (as
torch.load defaults to since 2.6), and prints one JSON object to stdout:

    {"type": "OrderedDict", "entries": [[key, shape, dtype, sum of the values as float64], ...]}

in the file's order, for the C++ test to compare with what it wrote.

    check_asvtorch_export.py FILE
"""
import inspect
import json
import sys

import torch


def main():
    path = sys.argv[1]
    if "weights_only" in inspect.signature(torch.load).parameters:
        state = torch.load(path, map_location="cpu", weights_only=True)
    else:
        state = torch.load(path, map_location="cpu")
    entries = [[key, list(t.shape), str(t.dtype).replace("torch.", ""), float(t.double().sum())]
               for key, t in state.items()]
    json.dump({"type": type(state).__name__, "entries": entries}, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
