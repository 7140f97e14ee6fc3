#!/usr/bin/env python3
"""Environment doctor for the transformers-training skill: run it first in an environment you do not know.

It puts the installed transformers, torch, accelerate, datasets and evaluate next to the versions this skill was
tested with (the tested-* keys of ../SKILL.md) and gives the pip line that fixes each problem. This file is the
skill's table; the checks that read it are _env_doctor.py's, the same in every skill.
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
    skill="transformers-training",
    skill_md=Path(__file__).resolve().parent.parent / "SKILL.md",
    # Required distributions: the range this skill supports (pyproject.toml's [transformers] extra) and why.
    required={
        "transformers": (">=5.23,<6", "this skill teaches the transformers 5.x API (4.x's TrainingArguments and "
                                      "Trainer differ) and supports 5.23 and newer 5.x releases"),
        "torch": (">=2.6", "transformers 5 disables PyTorch below 2.6"),
        "accelerate": (">=1.10", "Trainer needs accelerate; this skill supports 1.10 and newer"),
        "datasets": (">=4", "this skill's data path supports datasets 4 and newer"),
        "evaluate": (">=0.4.6", "this skill's metrics support evaluate 0.4.6 and newer"),
    },
    optional={
        "tensorboard": ('report_to="tensorboard"', ""),
        "deepspeed": ("TrainingArguments(deepspeed=...)", ">=0.9.3"),
    },
    gpu_bf16="bf16=True",
    gpu_fp16="fp16=True",
    advisories=[],
)


def make_parser() -> argparse.ArgumentParser:
    return DOCTOR.parser()


def main(argv: list[str] | None = None, version_of: Callable[[str], str | None] = installed_version) -> int:
    """``version_of`` maps a distribution name to its installed version or None (tests pass a fake one)."""
    return run_main(SCRIPT, make_parser(), lambda run: DOCTOR.body(run, version_of), DOCTOR.distributions, argv)


if __name__ == "__main__":
    sys.exit(main())
