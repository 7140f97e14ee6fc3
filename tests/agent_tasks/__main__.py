"""Agent-trial tasks from the command line (references/agent-trials.md):

  python -m tests.agent_tasks list                       the tasks, their skill and what they ask
  python -m tests.agent_tasks fixture TASK DIR           lay out DIR/prompt.md and DIR/data/ for an agent
  python -m tests.agent_tasks grade TASK SOLUTION.py     grade a solution file: one line per check, exit 0 or 1
          [--json] [--keep DIR]                          (JSON output; keep the grading's files in DIR)

Grading runs offline (the suite's guard logs any network attempt) on CPU, in a worker that imports the skill's
libraries once; it takes a minute or so, most of it the import.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a file: python tests/agent_tasks/__main__.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "agent_tasks"

from . import harness, load_task, task_names  # noqa: E402


def lay_out(task_name: str, folder: Path) -> Path:
    """DIR/prompt.md and DIR/data/: everything the agent may read. Refuses a folder that is not empty."""
    task = load_task(task_name)
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"agent_tasks fixture: error: {folder} is not empty")
    (folder / "data").mkdir(parents=True)
    shutil.copy(task.folder / "prompt.md", folder / "prompt.md")
    task.make_fixture(folder / "data")
    return folder


def report(task_name: str, worker: harness.Worker, solution: Path, as_json: bool) -> int:
    request = worker.submit(task_name, solution)
    checks = worker.result(request)
    ok = harness.passed(checks)
    if as_json:
        print(json.dumps({"task": task_name, "solution": str(solution), "passed": ok, "checks": checks,
                          "runs": worker.replies[request].get("runs", [])}, indent=1))
    else:
        for check in checks:
            word = {True: "PASS", False: "FAIL", None: "SKIP"}[check["ok"]]
            print(f"{word} {check['name']}" + (f": {check['detail']}" if check["detail"] else ""))
        bad = len(harness.failed(checks))
        print(f"{task_name}: {'PASS' if ok else 'FAIL'} ({bad} of {len(checks)} checks failed)")
    return 0 if ok else 1


def main(argv: list[str] | None = None, worker: harness.Worker | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.agent_tasks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the tasks")
    lay = commands.add_parser("fixture", help="lay out a task's prompt and data for an agent")
    lay.add_argument("task", choices=task_names())
    lay.add_argument("folder", type=Path)
    grade = commands.add_parser("grade", help="grade a solution file")
    grade.add_argument("task", choices=task_names())
    grade.add_argument("solution", type=Path)
    grade.add_argument("--json", action="store_true")
    grade.add_argument("--keep", type=Path, help="grade inside this folder (new or empty) and keep its files")
    args = parser.parse_args(argv)

    if args.command == "list":
        for name in task_names():
            task = load_task(name)
            print(f"{name:30} {task.SKILL:22} {task.SUMMARY}")
        return 0
    if args.command == "fixture":
        folder = lay_out(args.task, args.folder)
        print(f"{folder}: prompt.md, data/ ({len(list((folder / 'data').rglob('*')))} files)")
        return 0
    if not args.solution.is_file():
        parser.error(f"no such file: {args.solution}")
    if worker is not None:
        return report(args.task, worker, args.solution.resolve(), args.json)
    scratch = args.keep or Path(tempfile.mkdtemp(prefix="agent-task-"))
    if args.keep and args.keep.exists() and any(args.keep.iterdir()):
        parser.error(f"--keep {args.keep}: not empty")
    scratch.mkdir(parents=True, exist_ok=True)
    own = harness.Worker(load_task(args.task).SKILL, scratch.resolve())
    try:
        return report(args.task, own, args.solution.resolve(), args.json)
    finally:
        own.close()
        if not args.keep:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
