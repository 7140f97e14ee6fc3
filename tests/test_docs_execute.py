"""Executable docs: every python and bash block in every SKILL.md, reference and README runs (or says why not).

The python blocks of all documents of one skill run in one process (support/run_doc_blocks.py: a scratch folder and
environment per document; a fresh namespace per block after the document's Shared setup in the skills of
support/docs.py's BLOCKS_RUN_ALONE, else per document), shared by the per-document tests, so imports are paid once.
A bash block whose every command is ``python scripts/<script>.py`` with the arguments of that script's canonical
run (shared_runs.CANONICAL_RUNS) is proven by that shared run: the same command from a copy of the skill folder,
plus ``--device`` set to what ``auto`` picks here and ``--json`` so the result can be read."""

import json
import shlex
from pathlib import Path

import pytest

from support.docs import Block, markdown_files, runnable_blocks
from support.harness import CUDA, REPO, leg_marks, run_command
from support.run_doc_blocks import scratch_copy
from support.shared_runs import CANONICAL_RUNS, canonical_run, run_once

RUNNER = Path(__file__).resolve().parent / "support" / "run_doc_blocks.py"

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


def script_commands(block: Block) -> list[tuple[str, list[str]]] | None:
    """(``<skill>/<script>.py``, arguments) per command when every command of a skill's block runs one of its
    scripts, else None."""
    skill = _skill_root(block.path)
    commands = []
    for line in block.source.replace("\\\n", " ").splitlines():
        try:
            words = shlex.split(line, comments=True)
        except ValueError:  # not a shell line on its own (a here-document's body)
            return None
        if not words:
            continue
        if skill is None or len(words) < 2 or words[0] != "python" or not words[1].startswith("scripts/"):
            return None
        commands.append((f"{skill.name}/{words[1].removeprefix('scripts/')}", words[2:]))
    return commands or None


@pytest.mark.parametrize("block", BASH_BLOCKS)
def test_bash_block_runs(block, tmp_path, tmp_path_factory):
    commands = script_commands(block)
    if commands and all(CANONICAL_RUNS.get(script) == args for script, args in commands):
        for script, _ in commands:
            result = canonical_run(tmp_path_factory, script, "gpu" if CUDA else "cpu")
            assert result.returncode == 0, f"{block.where}: {script}\n{result.stderr[-4000:]}"
            assert result.network_attempts == [], result.network_attempts
        return
    result = run_command(["bash", "-euo", "pipefail", "-c", block.source], tmp_path,
                         cwd=scratch_copy(block.path, tmp_path / "work"))
    assert result.returncode == 0, f"{block.where}\n{result.stdout[-2000:]}\n{result.stderr[-4000:]}"
    assert result.network_attempts == [], result.network_attempts


@pytest.mark.parametrize("block", [param for param in BASH_BLOCKS if script_commands(param.values[0])])
def test_script_blocks_are_the_canonical_runs(block):
    """A block of skill-script commands runs once per session, as the canonical run the route tests read; a block
    that drifts from shared_runs.CANONICAL_RUNS would still run, as a second costly launch of the same scripts."""
    for script, args in script_commands(block):
        assert CANONICAL_RUNS.get(script) == args, (
            f"{block.where}: make `python scripts/{script.split('/')[1]} {shlex.join(args)}` the canonical run of "
            f"{script} in tests/support/shared_runs.py (CANONICAL_RUNS: {CANONICAL_RUNS.get(script)})")
