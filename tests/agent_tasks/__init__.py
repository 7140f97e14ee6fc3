"""Agent-trial tasks (issue #17): everyday training jobs an agent solves with or without a skill, each graded on
the traps that pass silently, not on exit 0 alone.

Each task is a folder here: ``prompt.md`` (what the agent gets), ``task.py`` (``SKILL``, ``make_fixture(data)``,
``grade(ctx)``), ``reference.py`` (a short idiomatic solution) and ``naive_*.py`` (what an agent without the skill
plausibly writes; its docstring names the checks it fails: ``Trap: check_a, check_b``, and optionally
``Detail: <text the failing check's detail contains>``). Grading runs in harness.Worker; the CLI is
``python -m tests.agent_tasks`` (see __main__.py) and the protocol references/agent-trials.md.
"""

from __future__ import annotations

import ast
import importlib
import re
from dataclasses import dataclass
from pathlib import Path

TASKS_DIR = Path(__file__).resolve().parent


def task_names() -> list[str]:
    return sorted(path.parent.name for path in TASKS_DIR.glob("*/task.py"))


def load_task(name: str):
    """The task's module, with ``name`` and ``folder`` set; imports no training library (graders import lazily)."""
    if name not in task_names():
        raise KeyError(f"no task {name!r}; tasks: {', '.join(task_names())}")
    module = importlib.import_module(f"{__name__}.{name}.task")
    module.name, module.folder = name, TASKS_DIR / name
    return module


@dataclass(frozen=True)
class Solution:
    task: str
    path: Path
    traps: tuple[str, ...]  # the checks it must fail; empty for the reference
    details: tuple[str, ...]  # text the failing checks' details must contain

    @property
    def label(self) -> str:
        return f"{self.task}/{self.path.stem}"


def solutions(task: str) -> list[Solution]:
    """The reference first, then every naive solution with the traps its docstring declares."""
    folder = TASKS_DIR / task
    found = [Solution(task, folder / "reference.py", (), ())]
    for path in sorted(folder.glob("naive_*.py")):
        docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        traps = re.search(r"^Trap:\s*(.+)$", docstring, re.M)
        details = re.findall(r"^Detail:\s*(.+)$", docstring, re.M)
        found.append(Solution(task, path, tuple(t.strip() for t in traps[1].split(",")) if traps else (),
                              tuple(d.strip() for d in details)))
    return found
