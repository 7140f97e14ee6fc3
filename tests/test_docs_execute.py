"""Executable docs: every python and bash block in every SKILL.md, reference and README runs (or says why not)."""

import shutil
from pathlib import Path

import pytest

from conftest import REPO, leg_marks, run_command, run_python
from docs import markdown_files, runnable_blocks

RUNNER = Path(__file__).resolve().parent / "run_doc_blocks.py"

def _doc_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def _skill_root(path: Path) -> Path | None:
    relative = path.relative_to(REPO)
    return REPO / relative.parts[0] / relative.parts[1] if relative.parts[0] == "skills" else None


def _scratch_copy(path: Path, tmp: Path) -> Path:
    """A copy of the skill folder (or of the bundle's docs and scripts) to run a block in, so it writes nothing here."""
    skill = _skill_root(path)
    target = tmp / "work"
    if skill is not None:
        shutil.copytree(skill, target, ignore=shutil.ignore_patterns("__pycache__"))
    else:
        target.mkdir()
        for name in ("skills", "scripts", "references"):
            shutil.copytree(REPO / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    return target


PYTHON_DOCS = [pytest.param(path, id=_doc_id(path), marks=leg_marks(path))
               for path in markdown_files() if runnable_blocks(path, "python")]
BASH_BLOCKS = [pytest.param(block, id=block.where, marks=leg_marks(block.path))
               for path in markdown_files() for block in runnable_blocks(path, "bash")]


@pytest.mark.parametrize("doc", PYTHON_DOCS)
def test_python_blocks_run(doc, tmp_path):
    result = run_python([str(RUNNER), str(doc)], tmp_path, cwd=_scratch_copy(doc, tmp_path))
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr[-4000:]}"
    assert result.network_attempts == [], result.network_attempts


@pytest.mark.parametrize("block", BASH_BLOCKS)
def test_bash_block_runs(block, tmp_path):
    result = run_command(["bash", "-euo", "pipefail", "-c", block.source], tmp_path,
                         cwd=_scratch_copy(block.path, tmp_path))
    assert result.returncode == 0, f"{block.where}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    assert result.network_attempts == [], result.network_attempts
