#!/usr/bin/env python3
"""Break the bundle on purpose, one realistic bug at a time, and report whether the tests notice.

Each row of the table (tests/mutations.toml) names a file, an exact old text, the new text that breaks it, and the
tests that must then fail. A file of skill_common/ is mutated in every skill's copy of it, one copy at a time (a user
runs one skill's copy; the copies' tests must catch a bug in either). Every mutation is applied in a temporary copy
of the working tree (tracked and untracked files, not ignored ones), never in the tree itself; only its tests run,
with the repository's .venv python. Before any mutation those tests run once unmutated and must pass, so that a
test failing for another reason is not counted as a catch.

A survivor is a missing test (write it) or dead code (remove it). Not part of CI: it takes minutes.

example:
  python scripts/mutation_drill.py --jobs 2
  python scripts/mutation_drill.py --only tensors-allclose,runner-repeat-last --json

exit codes:
  0  every mutation was caught
  1  a mutation survived, or its tests could not run (the row says why)
  2  usage error, a stale table (an old text not found exactly once, a test file missing), or the listed tests
     fail without any mutation
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TABLE = REPO / "tests" / "mutations.toml"
SHARED = "skill_common/"
TABLE_KEYS = {"id", "file", "old", "new", "tests", "why"}
PYTEST_EXIT_FAILED = 1  # pytest's "tests were collected and run, and some failed": the only catch


class DrillError(Exception):
    """A usage error or a stale table: one line and exit 2."""


@dataclass
class Mutation:
    id: str  # the table's id, with @<skill> for each copy of a skill_common file
    file: str  # relative to the repository
    old: str
    new: str
    tests: list[str]
    why: str


@dataclass
class Outcome:
    id: str
    file: str
    result: str  # caught, survived, or error
    seconds: float
    detail: str  # the last line pytest printed


def read_table(table: Path, repo: Path) -> list[Mutation]:
    """The table's rows, a skill_common file expanded to each skill's copy. Raises DrillError for a malformed or
    stale row: an old text that is not in the file exactly once, a listed test file that does not exist."""
    try:
        rows = tomllib.loads(table.read_text())["mutation"]
    except (OSError, tomllib.TOMLDecodeError, KeyError) as exc:
        raise DrillError(f"cannot read the table {table}: {exc}") from None
    mutations, problems, seen = [], [], set()
    for number, row in enumerate(rows, 1):
        if set(row) != TABLE_KEYS:
            raise DrillError(f"{table} row {number}: keys must be {sorted(TABLE_KEYS)}, got {sorted(row)}")
        if row["id"] in seen:
            raise DrillError(f"{table}: id {row['id']!r} appears twice")
        seen.add(row["id"])
        if row["file"].startswith(SHARED):
            name = row["file"].removeprefix(SHARED)
            copies = [(f"{row['id']}@{path.parts[-3]}", path) for path in sorted(repo.glob(f"skills/*/scripts/{name}"))]
        else:
            copies = [(row["id"], repo / row["file"])]
        if not copies:
            problems.append(f"{row['id']}: no skill carries {row['file']}")
        for test in row["tests"]:
            if not (repo / test.split("::")[0]).is_file():
                problems.append(f"{row['id']}: no test file {test.split('::')[0]}")
        for mutation_id, path in copies:
            found = path.read_text().count(row["old"]) if path.is_file() else 0
            if found != 1:
                problems.append(f"{mutation_id}: the old text is in {path.relative_to(repo)} {found} times, not once")
            mutations.append(Mutation(mutation_id, str(path.relative_to(repo)), row["old"], row["new"], row["tests"],
                                      row["why"]))
    if problems:
        raise DrillError(f"stale table {table}: " + "; ".join(problems))
    return mutations


def copy_tree(repo: Path, into: Path) -> Path:
    """The working tree's tracked and untracked files (not ignored ones) under ``into``, with links to its venvs."""
    listed = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=repo,
                            capture_output=True, text=True)
    if listed.returncode != 0:
        raise DrillError(f"cannot list the files of {repo}: {listed.stderr.strip()}")
    for name in filter(None, listed.stdout.split("\0")):
        source = repo / name
        if source.is_file() and not source.is_symlink():
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, into / name)
    for venv in (".venv", ".venv-latest"):
        if (repo / venv).exists():
            (into / venv).symlink_to((repo / venv).resolve())
    return into


def run_tests(clone: Path, python: str, tests: list[str], timeout: float, workers: int = 1) -> tuple[int, str]:
    """pytest's exit status and its last line, or (-1, why) when it did not finish in time."""
    command = [python, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *tests]
    if workers > 1:
        command[3:3] = ["-n", str(workers)]
    try:
        completed = subprocess.run(command, cwd=clone, capture_output=True, text=True, timeout=timeout,
                                   stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        return -1, f"did not finish in {timeout:.0f}s"
    lines = [line for line in (completed.stdout + completed.stderr).splitlines() if line.strip()]
    return completed.returncode, lines[-1].strip("= ") if lines else ""


def drill_one(clone: Path, mutation: Mutation, python: str, timeout: float) -> Outcome:
    path = clone / mutation.file
    original = path.read_text()
    path.write_text(original.replace(mutation.old, mutation.new, 1))
    started = time.monotonic()
    try:
        code, last_line = run_tests(clone, python, mutation.tests, timeout)
    finally:
        path.write_text(original)
    result = "caught" if code == PYTEST_EXIT_FAILED else "survived" if code == 0 else "error"
    detail = last_line if result != "error" or code == -1 else f"pytest exit {code}: {last_line}"
    return Outcome(mutation.id, mutation.file, result, round(time.monotonic() - started, 1), detail)


def drill(mutations: list[Mutation], clones: list[Path], python: str, timeout: float, report) -> list[Outcome]:
    """Each mutation in one of the clones (one worker thread per clone), reported as it finishes; table order."""
    waiting: queue.Queue = queue.Queue()
    for index, mutation in enumerate(mutations):
        waiting.put((index, mutation))
    outcomes: list[Outcome | None] = [None] * len(mutations)

    def work(clone: Path) -> None:
        while True:
            try:
                index, mutation = waiting.get_nowait()
            except queue.Empty:
                return
            outcomes[index] = drill_one(clone, mutation, python, timeout)
            report(outcomes[index])

    threads = [threading.Thread(target=work, args=(clone,)) for clone in clones]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return outcomes


def table_text(outcomes: list[Outcome]) -> str:
    widths = [max(len(title), *(len(str(getattr(row, title))) for row in outcomes))
              for title in ("id", "file", "result")]
    lines = [f"{'id':<{widths[0]}}  {'file':<{widths[1]}}  {'result':<{widths[2]}}  seconds  detail"]
    lines += [f"{row.id:<{widths[0]}}  {row.file:<{widths[1]}}  {row.result:<{widths[2]}}  {row.seconds:>7.1f}  "
              f"{row.detail}" for row in outcomes]
    return "\n".join(lines)


def make_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mutation_drill.py", description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1], allow_abbrev=False,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--table", type=Path, default=TABLE, help="the mutation table (default tests/mutations.toml)")
    parser.add_argument("--only", default=None, metavar="ID[,ID]",
                        help="only these table ids (each with all its copies) or copy ids (id@skill)")
    parser.add_argument("--jobs", type=int, default=1, help="mutations drilled at once, one tree copy each")
    parser.add_argument("--timeout", type=float, default=900, help="seconds one mutation's tests may take")
    parser.add_argument("--python", default=None, help="the python that runs pytest (default: the repo's .venv)")
    parser.add_argument("--no-baseline", action="store_true",
                        help="skip the unmutated run of the listed tests (only when you just ran it)")
    parser.add_argument("--list", action="store_true", help="print the mutations (one per copy) and run nothing")
    parser.add_argument("--json", action="store_true", help="print the outcomes as JSON on stdout")
    return parser


def selected(mutations: list[Mutation], only: str | None) -> list[Mutation]:
    if only is None:
        return mutations
    wanted = {name.strip() for name in only.split(",") if name.strip()}
    chosen = [mutation for mutation in mutations if mutation.id in wanted or mutation.id.split("@")[0] in wanted]
    unknown = wanted - {name for mutation in chosen for name in (mutation.id, mutation.id.split("@")[0])}
    if unknown:
        raise DrillError(f"--only: no mutation {', '.join(sorted(unknown))} in the table")
    return chosen


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    python = args.python or str(REPO / ".venv" / "bin" / "python")
    try:
        mutations = selected(read_table(args.table, REPO), args.only)
        if args.list:
            print(json.dumps([asdict(mutation) for mutation in mutations], indent=2) if args.json else
                  "\n".join(f"{mutation.id}  {mutation.file}  {mutation.why}" for mutation in mutations))
            return 0
        started = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="mutation-drill-") as scratch:
            clones = [copy_tree(REPO, Path(scratch, f"tree{number}")) for number in range(args.jobs)]
            if not args.no_baseline:
                tests = sorted({test for mutation in mutations for test in mutation.tests})
                print(f"mutation_drill.py: baseline: {len(tests)} test targets, unmutated", file=sys.stderr)
                code, last_line = run_tests(clones[0], python, tests, args.timeout * 2, workers=args.jobs)
                if code != 0:
                    raise DrillError(f"the listed tests fail without any mutation (pytest exit {code}: {last_line}); "
                                     "fix them first")

            def report(outcome: Outcome) -> None:
                print(f"mutation_drill.py: {outcome.id}: {outcome.result} ({outcome.seconds}s)", file=sys.stderr)

            outcomes = drill(mutations, clones, python, args.timeout, report)
    except DrillError as exc:
        print(f"mutation_drill.py: error: {exc}", file=sys.stderr)
        return 2
    counts = {result: sum(row.result == result for row in outcomes) for result in ("caught", "survived", "error")}
    seconds = round(time.monotonic() - started, 1)
    if args.json:
        print(json.dumps({"mutations": [asdict(row) for row in outcomes], **counts, "seconds": seconds,
                          "ok": counts["caught"] == len(outcomes)}, indent=2))
    else:
        print(table_text(outcomes))
        print(f"{len(outcomes)} mutations: {counts['caught']} caught, {counts['survived']} survived, "
              f"{counts['error']} could not run; {seconds:.0f}s with {args.jobs} job(s)")
    return 0 if counts["caught"] == len(outcomes) else 1


if __name__ == "__main__":
    sys.exit(main())
