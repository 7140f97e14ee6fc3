"""Agent-trial tasks from the command line (references/agent-trials.md):

  python -m tests.agent_tasks list                       the tasks, their skill and what they ask
  python -m tests.agent_tasks fixture TASK DIR           lay out DIR/prompt.md and DIR/data/ for an agent
  python -m tests.agent_tasks session TASK DIR           lay out a whole trial session and print the agent's prompt
          --mode write|run [--skill REV]                 (the skill folder from a git revision or "worktree"; none
                                                         without --skill; run mode adds DIR/py, which logs each run)
  python -m tests.agent_tasks grade TASK SOLUTION.py     grade a solution file: one line per check, exit 0 or 1
          [--json] [--keep DIR]                          (JSON output; keep the grading's files in DIR)

Grading runs offline (the suite's guard logs any network attempt) on CPU, in a worker that imports the skill's
libraries once; it takes a minute or so, most of it the import.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

if __package__ in (None, ""):  # run as a file: python tests/agent_tasks/__main__.py
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    __package__ = "agent_tasks"

from . import TASKS_DIR, harness, load_task, task_names  # noqa: E402

REPO = TASKS_DIR.parent.parent


def lay_out(task_name: str, folder: Path) -> Path:
    """DIR/prompt.md and DIR/data/: everything the agent may read. Refuses a folder that is not empty."""
    task = load_task(task_name)
    if folder.exists() and any(folder.iterdir()):
        raise SystemExit(f"agent_tasks fixture: error: {folder} is not empty")
    (folder / "data").mkdir(parents=True)
    shutil.copy(task.folder / "prompt.md", folder / "prompt.md")
    task.make_fixture(folder / "data")
    return folder


RULES = {
    "write": """Rules for this session (write-only mode):
- Do not run any code: no python, no pip, no tests, no shell command other than listing and reading files inside {ws} (cat, ls, sed, head). You may read the files under {ws}/data/ that the prompt says you may read.
- Do not read installed library source or any file outside {ws}, and do not use any search tool. Use what you know (and the skill, if one is given).
- Write only {ws}/solution.py (plus nothing else).
""",
    "run": """Rules for this session (run mode):
- You may run code to develop and test your solution, but run Python only through the wrapper {ws}/py (it is the environment's Python with the task's libraries installed; it logs each call). Example: `{ws}/py {ws}/solution.py --data {ws}/data --out {ws}/scratch/out1`. Short experiments are allowed: `{ws}/py -c "..."` or `{ws}/py {ws}/scratch/try.py`. No pip installs. The machine has no network; keep experiments small.
- Work only inside {ws}: write your solution to {ws}/solution.py and any experiments or outputs under {ws}/scratch/. Do not read or list any file outside {ws} except by running Python through the wrapper (you may inspect installed libraries with Python, e.g. help() or inspect); in particular do not look at any test or grader. No web search tools.
- Test your solution the way the prompt says it will be run (including any kill/relaunch it describes) until you believe it is correct.
""",
}
CLOSING = """When you are done, your final message must contain, in this order:
1. "Which questions did you have to guess the answer to?" - a list of every point where you were unsure how the library behaves and guessed or wrote defensive code to cover it.
2. For each requirement of the prompt, the library mechanism your solution relies on (one line each).
3. Which parts of the skill you read (file names), if a skill was given.
"""
RUN_CLOSING = ("4. How many times you ran solution.py, and after which run you believed it correct; what running it "
               "taught you that you did not know (library behaviour you discovered).\n")


def lay_out_session(task_name: str, folder: Path, mode: str, skill_revision: str | None) -> str:
    """A trial workspace (fixture, skill folder, run wrapper) and the prompt that starts the agent's session."""
    lay_out(task_name, folder)
    ws, skill = folder.resolve(), load_task(task_name).SKILL
    skill_line = ""
    if skill_revision:
        target = ws / ".skills"
        target.mkdir()
        if skill_revision == "worktree":
            shutil.copytree(REPO / "skills" / skill, target / skill, ignore=shutil.ignore_patterns("__pycache__"))
        else:  # the skill as a commit had it: git archive, unpacked without its leading skills/
            archive = subprocess.run(["git", "archive", skill_revision, f"skills/{skill}"], cwd=REPO,
                                     capture_output=True, check=True).stdout
            subprocess.run(["tar", "-x", "--strip-components=1", "-C", str(target)], input=archive, check=True)
        skill_line = (f"An agent skill for this kind of job is installed at {target / skill}/ : start by reading its "
                      "SKILL.md and follow its links to references/ as you need them (reading the skill folder is "
                      "allowed).\n")
    if mode == "run":
        wrapper = ws / "py"
        wrapper.write_text(f'#!/bin/sh\necho "$(date +%T) $*" >> "{ws}/runs.log"\nexec "{sys.executable}" "$@"\n')
        wrapper.chmod(0o755)
        (ws / "scratch").mkdir()
    return (f"You are a coding agent given one job. Your working folder is {ws}. Read {ws}/prompt.md: it is the "
            f"task. Write the solution file {ws}/solution.py exactly as the prompt asks.\n" + skill_line
            + RULES[mode].format(ws=ws) + CLOSING + (RUN_CLOSING if mode == "run" else ""))


def size(task_name: str, solution: Path) -> dict:
    """What the results table records besides the checks: non-blank lines against the reference's, and the runs
    logged by a run-mode session's wrapper (runs.log beside the solution)."""
    def lines(path: Path) -> int:
        return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())

    log = solution.parent / "runs.log"
    calls = log.read_text().splitlines() if log.is_file() else []
    return {"lines": lines(solution), "reference_lines": lines(load_task(task_name).folder / "reference.py"),
            "runs": sum("solution.py" in call for call in calls) if log.is_file() else None,
            "python_calls": len(calls) if log.is_file() else None}


def report(task_name: str, worker: harness.Worker, solution: Path, as_json: bool) -> int:
    request = worker.submit(task_name, solution)
    checks = worker.result(request)
    ok = harness.passed(checks)
    measured = size(task_name, solution)
    if as_json:
        print(json.dumps({"task": task_name, "solution": str(solution), "passed": ok, "checks": checks,
                          "runs": worker.replies[request].get("runs", []), **measured}, indent=1))
    else:
        for check in checks:
            word = {True: "PASS", False: "FAIL", None: "SKIP"}[check["ok"]]
            print(f"{word} {check['name']}" + (f": {check['detail']}" if check["detail"] else ""))
        bad = len(harness.failed(checks))
        runs = "" if measured["runs"] is None else f", {measured['runs']} runs of solution.py"
        print(f"{task_name}: {'PASS' if ok else 'FAIL'} ({bad} of {len(checks)} checks failed; "
              f"{measured['lines']} lines, reference {measured['reference_lines']}{runs})")
    return 0 if ok else 1


def main(argv: list[str] | None = None, worker: harness.Worker | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.agent_tasks", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("list", help="the tasks")
    lay = commands.add_parser("fixture", help="lay out a task's prompt and data for an agent")
    lay.add_argument("task", choices=task_names())
    lay.add_argument("folder", type=Path)
    session = commands.add_parser("session", help="lay out a trial session and print the agent's prompt")
    session.add_argument("task", choices=task_names())
    session.add_argument("folder", type=Path)
    session.add_argument("--mode", choices=sorted(RULES), required=True)
    session.add_argument("--skill", metavar="REV", help='copy the skill folder from this git revision or "worktree"')
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
    if args.command == "session":
        print(lay_out_session(args.task, args.folder, args.mode, args.skill), end="")
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
