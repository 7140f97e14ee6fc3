#!/usr/bin/env python3
"""Environment doctor for the composer-training skill: run it first in an environment you do not know.

It puts the installed mosaicml, torch and torchvision next to the versions this skill was tested with (the
tested-* keys of ../SKILL.md) and gives the pip line that fixes each problem. This file is the skill's table; the
checks that read it are _env_doctor.py's, the same in every skill.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from _env_doctor import SCRIPT, EnvironmentDoctor, installed_version
from smoke_contract import run_main

DOCTOR = EnvironmentDoctor(
    skill="composer-training",
    skill_md=Path(__file__).resolve().parent.parent / "SKILL.md",
    # Required distributions: the range this skill supports (pyproject.toml's [composer] extra) and why.
    required={
        "mosaicml": (">=0.32.1,<0.33", "this skill documents the mosaicml 0.32.1 API"),
        "torch": (">=2.6.0,<2.7.1", "mosaicml 0.32.1 requires torch>=2.6.0,<2.7.1; pip refuses newer torch with it "
                                    "and forcing it is untested"),
        "torchvision": (">=0.21.0,<0.22.1", "mosaicml 0.32.1 requires torchvision>=0.21.0,<0.22.1"),
    },
    optional={
        "tensorboard": ("composer's TensorboardLogger", ">=2.9.1,<3.0.0"),
    },
    gpu_bf16='precision="amp_bf16"',
    gpu_fp16='precision="amp_fp16"',
    advisories=[
        ("transformers", ">=4.54", "composer's HuggingFaceModel is unsupported with it upstream (mosaicml[nlp] "
                                   "declares transformers<4.54); this skill does not use HuggingFaceModel"),
    ],
)


def make_parser() -> argparse.ArgumentParser:
    return DOCTOR.parser()


def main(argv: list[str] | None = None, version_of: Callable[[str], str | None] = installed_version) -> int:
    """``version_of`` maps a distribution name to its installed version or None (tests pass a fake one)."""
    return run_main(SCRIPT, make_parser(), lambda run: DOCTOR.body(run, version_of), DOCTOR.distributions, argv)


if __name__ == "__main__":
    sys.exit(main())
