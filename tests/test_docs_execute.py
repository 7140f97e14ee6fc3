"""Executable docs: every python and bash block in every SKILL.md, reference and README runs (or says why not).

The python blocks of all documents of one skill run in one process (tests/run_doc_blocks.py: a fresh namespace,
scratch folder and environment per document), shared by the per-document tests, so the imports are paid once."""

import json
from pathlib import Path

import pytest

from conftest import REPO, leg_marks, run_command, run_once
from docs import markdown_files, runnable_blocks
from run_doc_blocks import scratch_copy

RUNNER = Path(__file__).resolve().parent / "run_doc_blocks.py"

def _doc_id(path: Path) -> str:
    return str(path.relative_to(REPO))


def _skill_root(path: Path) -> Path | None:
    relative = path.relative_to(REPO)
    return REPO / relative.parts[0] / relative.parts[1] if relative.parts[0] == "skills" else None


def _group(path: Path) -> str:
    skill = _skill_root(path)
    return skill.name if skill else "bundle"


PYTHON_DOCS = [pytest.param(path, id=_doc_id(path), marks=leg_marks(path))
               for path in markdown_files() if runnable_blocks(path, "python")]
BASH_BLOCKS = [pytest.param(block, id=block.where, marks=leg_marks(block.path))
               for path in markdown_files() for block in runnable_blocks(path, "bash")]


@pytest.mark.parametrize("doc", PYTHON_DOCS)
def test_python_blocks_run(doc, tmp_path_factory):
    group = _group(doc)
    docs = [str(path) for path in markdown_files() if _group(path) == group and runnable_blocks(path, "python")]
    key = f"docs-python-{group}"
    result = run_once(tmp_path_factory, key, [str(RUNNER), "work", *docs])
    reports = {report["doc"]: report for line in result.stdout.splitlines() if line.startswith("DOC-RESULT ")
               for report in [json.loads(line.removeprefix("DOC-RESULT "))]}
    assert str(doc) in reports, f"no result for {doc}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    assert reports[str(doc)]["ok"], reports[str(doc)]["error"]
    assert result.network_attempts == [], result.network_attempts


@pytest.mark.parametrize("block", BASH_BLOCKS)
def test_bash_block_runs(block, tmp_path):
    result = run_command(["bash", "-euo", "pipefail", "-c", block.source], tmp_path,
                         cwd=scratch_copy(block.path, tmp_path / "work"))
    assert result.returncode == 0, f"{block.where}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    assert result.network_attempts == [], result.network_attempts
