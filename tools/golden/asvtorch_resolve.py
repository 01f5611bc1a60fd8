#!/usr/bin/env python3
r"""Resolves every run config of an ASVtorch recipe with ASVtorch's own settings code and prints
the values as one JSON document: {"configs": {name: {"group.field": value, ...}}, ...}.

This is how the golden files under tests/tools/asvtorch_golden/ were made, so that asvcpp's
`asvrun show --json` can be compared with what ASVtorch itself computes:

    ASVTORCH_COMMIT=9c656dd python3 tools/golden/asvtorch_resolve.py ASVTORCH_CHECKOUT \
        tests/tools/asvtorch_configs/voxceleb_xvector/init_config.py \
        tests/tools/asvtorch_configs/voxceleb_xvector/run_configs.py \
        > tests/tools/asvtorch_golden/voxceleb_xvector.json

    ASVTORCH_COMMIT=9c656dd python3 tools/golden/asvtorch_resolve.py --recipe sitw/xvector ASVTORCH_CHECKOUT \
        tests/tools/asvtorch_configs/sitw_xvector/init_config.py \
        tests/tools/asvtorch_configs/sitw_xvector/run_configs.py \
        > tests/tools/asvtorch_golden/sitw_xvector.json

ASVTORCH_CHECKOUT is a checkout of ASVtorch (SoftwareX release, commit 9c656dd); ASVTORCH_COMMIT
is only recorded in the output. --recipe (default voxceleb/xvector) names the ASVtorch recipe
whose asvtorch/recipes/RECIPE/run.py defines the RecipeSettings class. Nothing of ASVtorch is
copied here: the script imports its settings module and runs its load_settings(). torch is
replaced by a tiny stand-in (only post_update_call's device selection uses it, with CUDA
reported unavailable), and RecipeSettings is taken from the recipe's run.py without running the
rest of that script. paths.kaldi_mfcc_conf_file is set as run.py sets it, to the mfcc.conf
beside the init config; it is printed as "${CONFIG_DIR}/mfcc.conf" so the file is portable.
Values: tuples and lists become arrays, dicts objects, None null. The class attribute
network.max_consecutive_lr_updates is included like a field.
"""
import argparse
import ast
import contextlib
import dataclasses
import json
import os
import sys
import types
import typing


def install_torch_stub():
    torch = types.ModuleType("torch")
    torch.device = lambda spec: f"device({spec})"
    cuda = types.ModuleType("torch.cuda")
    cuda.is_available = lambda: False
    cuda.set_device = lambda device: None
    torch.cuda = cuda
    backends = types.ModuleType("torch.backends")
    backends.cudnn = types.SimpleNamespace(benchmark=False)
    torch.backends = backends
    sys.modules["torch"] = torch
    sys.modules["torch.cuda"] = cuda
    sys.modules["torch.backends"] = backends


def load_recipe_settings_class(run_py, abstract_settings, settings_cls):
    tree = ast.parse(open(run_py).read(), run_py)
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "RecipeSettings")
    namespace = {
        "dataclass": dataclasses.dataclass, "field": dataclasses.field,
        "List": typing.List, "Dict": typing.Dict, "Optional": typing.Optional,
        "AbstractSettings": abstract_settings, "Settings": settings_cls, "torch": sys.modules["torch"],
    }
    exec(compile(ast.Module(body=[node], type_ignores=[]), run_py, "exec"), namespace)
    return namespace["RecipeSettings"]


def to_json_value(value):
    if isinstance(value, (tuple, list)):
        return [to_json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_json_value(v) for k, v in value.items()}
    return value


def flatten(settings):
    out = {}
    groups = [k for k, v in vars(settings).items() if hasattr(v, "__dataclass_fields__")]
    for group in groups:
        obj = getattr(settings, group)
        names = list(vars(obj).keys())
        for name, attr in type(obj).__dict__.items():  # class attributes such as max_consecutive_lr_updates
            if not name.startswith("_") and not callable(attr) and name not in names and name not in obj.__dataclass_fields__:
                names.append(name)
        for name in names:
            if group == "computing" and name == "device":
                continue
            out[f"{group}.{name}"] = to_json_value(getattr(obj, name))
    return out


def config_names(run_configs):
    names, lines = [], []
    for line in list(open(run_configs)) + [""]:
        line = line.strip()
        if line.startswith("#"):
            continue
        if line:
            lines.append(line)
        elif lines:
            names.append(lines[0].split("<")[0].strip())
            lines = []
    return names


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--recipe", default="voxceleb/xvector",
                        help="ASVtorch recipe whose run.py defines RecipeSettings (default: %(default)s)")
    parser.add_argument("checkout")
    parser.add_argument("init_config")
    parser.add_argument("run_configs")
    args = parser.parse_args()
    checkout, init_config, run_configs = (
        os.path.abspath(a) for a in (args.checkout, args.init_config, args.run_configs))
    run_py = os.path.join(checkout, "asvtorch", "recipes", *args.recipe.split("/"), "run.py")
    if not os.path.isfile(run_py):
        parser.error(f"no recipe {args.recipe!r} in {checkout}: {run_py} does not exist")
    install_torch_stub()
    sys.path.insert(0, checkout)
    from asvtorch.src.settings.abstract_settings import AbstractSettings
    from asvtorch.src.settings.settings import Settings

    config_dir = os.path.dirname(init_config)
    result = {"asvtorch_checkout_commit": os.environ.get("ASVTORCH_COMMIT", "unknown"), "configs": {}}
    with contextlib.redirect_stdout(sys.stderr):
        settings = Settings(init_config)
        settings.paths.kaldi_mfcc_conf_file = os.path.join(config_dir, "mfcc.conf")
        settings.recipe = load_recipe_settings_class(run_py, AbstractSettings, Settings)()
        for name in config_names(run_configs):
            generator = settings.load_settings(run_configs, [name])
            next(generator)
            values = flatten(settings)
            values["paths.kaldi_mfcc_conf_file"] = values["paths.kaldi_mfcc_conf_file"].replace(config_dir, "${CONFIG_DIR}")
            result["configs"][name] = values
            for _ in generator:
                pass
    json.dump(result, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
