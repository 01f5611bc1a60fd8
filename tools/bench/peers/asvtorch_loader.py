"""ASVtorch's config loading, as its voxceleb/xvector run.py does it before any stage, for
run_benchmarks.py's case 4 (asvcpp's `asvrun show` against it, whole process against whole
process).

    python3 asvtorch_loader.py ASVTORCH_ROOT INIT_CONFIG MFCC_CONF RUN_CONFIGS CONFIG

ASVTORCH_ROOT is a checkout of ASVtorch (the folder that holds the `asvtorch` package); its
settings modules (asvtorch/src/settings, asvtorch/src/misc/singleton.py) are imported and run
unchanged, and they import PyTorch, so the Python running this needs torch. What run.py does with
them, in order: Settings(INIT_CONFIG), paths.kaldi_mfcc_conf_file = MFCC_CONF, a `recipe` group
with the fields of the x-vector recipe's RecipeSettings, then one pass of
Settings().load_settings(RUN_CONFIGS, [CONFIG]), which reads every block of the file and applies
CONFIG (printing its settings, as ASVtorch does). Nothing of the recipe's stages is imported or
run, so the time is a lower bound of what `run.py CONFIG` spends before its first stage.
"""

import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional


def main(argv):
    if len(argv) != 6:
        sys.exit(__doc__)
    root, init_config, mfcc_conf, run_configs, name = argv[1:]
    sys.path.insert(0, root)
    from asvtorch.src.settings.abstract_settings import AbstractSettings
    from asvtorch.src.settings.settings import Settings

    @dataclass
    class RecipeSettings(AbstractSettings):  # the x-vector recipe's fields and defaults
        start_stage: int = 0
        end_stage: int = 100
        preparation_datasets: Optional[List[str]] = None
        feature_extraction_datasets: List[str] = field(default_factory=list)
        augmentation_datasets: Dict[str, int] = field(default_factory=dict)
        selected_epoch: int = None

    Settings(init_config)
    Settings().paths.kaldi_mfcc_conf_file = mfcc_conf
    Settings().recipe = RecipeSettings()
    applied = 0
    for _ in Settings().load_settings(run_configs, [name]):
        applied += 1
    if applied != 1:
        sys.exit(f"asvtorch_loader: {applied} configs applied, expected 1")


if __name__ == "__main__":
    main(sys.argv)
