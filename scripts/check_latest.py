#!/usr/bin/env python3
"""Maintainer command: try the newest releases of the Transformers stack before moving the pins.

It builds a throwaway venv, installs the latest leg's extras (skills.toml: [transformers,test]) WITHOUT a constraint
file (so pip picks the newest releases inside pyproject.toml's ranges), runs the latest leg's suite there
(pytest -m "not composer": the Transformers skill, its gates and the bundle tools) and reports
  - which versions moved, against constraints/latest.txt,
  - which tests broke, by test module,
  - which documented API facts changed: the parameters and defaults of every callable the Transformers skill
    cites (SURFACE in tests/support/surface_transformers.py), the pinned venv (.venv-latest) against the new one.
Then move the pins (make lock) and the text together. It needs the network, so it is not part of CI.
--dry-run downloads nothing: it prints the plan and the version diff between a pin file and an existing
interpreter.

example:
  python scripts/check_latest.py --dry-run
  python scripts/check_latest.py --json > latest-report.json

exit codes:
  0  nothing broke and no documented fact changed (dry run: the plan was printed)
  1  a test broke or a documented fact changed: the report says which
  2  usage error
  3  the throwaway venv could not be built (pip failed; its last lines are shown)
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib
import inspect
import json
import os
import re
import runpy
import shlex
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path

from skill_manifest import LEGS, deselected, install_extras, skills_in

REPO = Path(__file__).resolve().parent.parent
LATEST = LEGS["latest"]
PINS = LATEST.constraints
SURFACE_FILE = REPO / "tests" / "support" / "surface_transformers.py"
BASELINE_PYTHON = LATEST.venv / "bin" / "python"
# The distributions whose moves the report names: the latest leg's skills' packages and the rest of their stacks.
STACK = list(dict.fromkeys(name for skill in skills_in(LATEST.name) for name in skill.packages + skill.watch))
EXTRAS = f"[{','.join(install_extras(LATEST.name))}]"
NOT_PINNED = ("training-skills", "pip", "setuptools", "wheel")  # what `make lock` (pip freeze) leaves out
SUITE = ["-m", "pytest", "-m", deselected(LATEST.name), "-n", "2", "-q", "-p", "no:cacheprovider"]

class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"check_latest.py: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def normalize(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def read_pins(path: Path) -> dict[str, str]:
    """name -> version from a pip freeze style file (name==version lines; local labels such as +cpu dropped)."""
    pins = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        if match:
            pins[normalize(match[1])] = match[2].split("+")[0]
    return pins


def installed_versions(python: Path | str) -> dict[str, str]:
    """name -> version of every distribution in that interpreter's environment (read from metadata)."""
    code = ("import importlib.metadata as m, json; "
            "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))")
    completed = subprocess.run([str(python), "-c", code], capture_output=True, text=True, check=True)
    return {normalize(name): version.split("+")[0] for name, version in json.loads(completed.stdout).items()}


def version_diff(pinned: dict[str, str], found: dict[str, str]) -> dict[str, dict[str, str | None]]:
    """Every distribution whose version differs: {name: {"pinned": old or None, "found": new or None}}."""
    names = sorted((set(pinned) | set(found)) - set(NOT_PINNED))
    return {name: {"pinned": pinned.get(name), "found": found.get(name)}
            for name in names if pinned.get(name) != found.get(name)}


def load_surface(path: Path = SURFACE_FILE) -> list[str]:
    return list(runpy.run_path(str(path))["SURFACE"])


def resolve(dotted: str):
    """The object a dotted name such as transformers.Trainer.train names."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for attribute in parts[cut:]:
            found = getattr(found, attribute)
        return found
    raise ImportError(f"cannot import {dotted}")


def snapshot_here(names: list[str]) -> dict[str, dict[str, str]]:
    """The parameters of each dotted name in this interpreter, defaults as text (fields for a dataclass)."""
    def text(value) -> str:
        return re.sub(r" at 0x[0-9a-f]+", "", repr(value))  # no memory addresses: they differ on every run

    def parameter_text(parameter: inspect.Parameter) -> str:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            return "<*args>" if parameter.kind == parameter.VAR_POSITIONAL else "<**kwargs>"
        return "<required>" if parameter.default is parameter.empty else text(parameter.default)

    snapshot = {}
    for dotted in names:
        try:
            found = resolve(dotted)
        except Exception as exc:  # noqa: BLE001 - a name that stopped resolving is itself a change to report
            snapshot[dotted] = {"<error>": f"{type(exc).__name__}: {exc}"}
            continue
        if dataclasses.is_dataclass(found):
            snapshot[dotted] = {
                field.name: text(field.default) if field.default is not dataclasses.MISSING else
                "<factory>" if field.default_factory is not dataclasses.MISSING else "<required>"
                for field in dataclasses.fields(found) if field.init}
        else:
            snapshot[dotted] = {name: parameter_text(parameter) for name, parameter in
                                inspect.signature(found).parameters.items() if name != "self"}
    return snapshot


def api_snapshot(python: Path | str, names: list[str]) -> dict[str, dict[str, str]]:
    """snapshot_here, run by another interpreter (this file and skill_manifest.py, its neighbour on sys.path, import
    only the standard library)."""
    code = ("import json, os, runpy, sys; sys.path.insert(0, os.path.dirname(sys.argv[1])); "
            "print(json.dumps(runpy.run_path(sys.argv[1])['snapshot_here'](json.loads(sys.argv[2]))))")
    offline = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_HUB_DISABLE_TELEMETRY": "1"}
    completed = subprocess.run([str(python), "-c", code, __file__, json.dumps(names)], capture_output=True,
                               text=True, env={**os.environ, **offline})
    if completed.returncode != 0:
        raise RuntimeError(f"API snapshot failed in {python}: {completed.stderr.strip().splitlines()[-1:]}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def api_diff(old: dict[str, dict[str, str]], new: dict[str, dict[str, str]]) -> list[str]:
    """One line per documented fact that changed: a callable or parameter added or removed, a default changed."""
    changes = []
    for name in sorted(set(old) | set(new)):
        before, after = old.get(name), new.get(name)
        if before is None or after is None:
            changes.append(f"{name}: {'added' if before is None else 'gone'}")
            continue
        for parameter in sorted(set(before) | set(after)):
            if parameter not in after:
                changes.append(f"{name}: parameter {parameter} removed")
            elif parameter not in before:
                changes.append(f"{name}: parameter {parameter} added (default {after[parameter]})")
            elif before[parameter] != after[parameter]:
                changes.append(f"{name}: {parameter} default {before[parameter]} -> {after[parameter]}")
    return changes


def failed_tests(junit_xml: Path) -> dict[str, list[str]]:
    """Test module -> failing or erroring tests ("name: first line of the message") from a JUnit XML report."""
    broken: dict[str, list[str]] = {}
    for case in ElementTree.parse(junit_xml).iter("testcase"):
        problem = case.find("failure")
        problem = problem if problem is not None else case.find("error")
        if problem is None:
            continue
        message = (problem.get("message") or "").strip().splitlines()
        broken.setdefault(case.get("classname") or "?", []).append(
            f"{case.get('name')}: {message[0][:200] if message else ''}")
    return broken


def plan(venv: Path, junit_xml: Path, pytest_args: list[str] = ()) -> list[list[str]]:
    """The three commands of a real run: create the venv, install the newest stack, run the suite."""
    python = str(venv / "bin" / "python")
    return [
        [sys.executable, "-m", "venv", str(venv)],
        [python, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--upgrade",
         "--upgrade-strategy", "eager", f"{REPO}{EXTRAS}"],
        [python, *SUITE, f"--junitxml={junit_xml}", *pytest_args],
    ]


def report_text(report: dict) -> str:
    lines = []
    moved = {name: change for name, change in report["versions"].items() if name in STACK}
    lines.append(f"versions against {report['pins']}: " + (", ".join(
        f"{name} {change['pinned'] or '-'} -> {change['found'] or '-'}" for name, change in moved.items())
        or "the stack is unchanged"))
    others = len(report["versions"]) - len(moved)
    if others:
        lines.append(f"  and {others} other distributions differ (--json lists them)")
    if "broken" in report:
        broken = report["broken"]
        lines.append("tests: " + ("all passed" if not broken else f"{sum(map(len, broken.values()))} broke"))
        lines += [f"  {module}: {test}" for module, tests in broken.items() for test in tests]
    if "api_changes" in report:
        lines.append("documented API facts: " + ("unchanged" if not report["api_changes"] else "changed"))
        lines += [f"  {change}" for change in report["api_changes"]]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    # allow_abbrev=False: a prefix of a flag is not that flag (--dry is not --dry-run).
    parser = OneLineParser(prog="check_latest.py", allow_abbrev=False, description=__doc__.split("\n\n")[0],
                           epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dry-run", action="store_true",
                        help="print the plan and the version diff; download nothing")
    parser.add_argument("--python", type=Path, default=Path(sys.executable),
                        help="dry run: the interpreter whose versions are compared with the pins (default: this one)")
    parser.add_argument("--pins", type=Path, default=PINS,
                        help="the pin file to compare with (default: constraints/latest.txt)")
    parser.add_argument("--baseline-python", type=Path, default=BASELINE_PYTHON,
                        help="the pinned venv's interpreter for the API comparison (default: .venv-latest)")
    parser.add_argument("--venv", type=Path, help="build the venv here and keep it (default: a temporary directory)")
    parser.add_argument("--pytest-args", type=shlex.split, default=[],
                        help='more pytest arguments, e.g. "tests/test_docs_execute.py -x" to rerun one module')
    parser.add_argument("--json", action="store_true", help="print the report as JSON on stdout")
    args = parser.parse_args(argv)
    if not args.pins.is_file():
        parser.error(f"--pins {str(args.pins)!r} is not a file")

    pins = read_pins(args.pins)
    if args.dry_run:
        if not args.python.exists():
            parser.error(f"--python {str(args.python)!r} does not exist")
        work = Path(tempfile.gettempdir()) / "check-latest-RANDOM"
        report = {"pins": str(args.pins), "python": str(args.python),
                  "plan": [shlex.join(command) for command in
                           plan(args.venv or work / "venv", work / "junit.xml", args.pytest_args)],
                  "versions": version_diff(pins, installed_versions(args.python))}
        if args.json:
            print(json.dumps(report, indent=2))
        else:
            print("would run:\n" + "\n".join(f"  {command}" for command in report["plan"]))
            print(report_text(report).replace("versions against", f"versions of {args.python} against", 1))
        return 0

    if not args.baseline_python.exists():
        parser.error(f"--baseline-python {str(args.baseline_python)!r} does not exist (make test-latest builds it)")
    work = Path(tempfile.mkdtemp(prefix="check-latest-"))
    venv = args.venv or work / "venv"
    junit_xml = work / "junit.xml"
    create, install, suite = plan(venv, junit_xml, args.pytest_args)
    print(f"check_latest.py: building {venv} (downloads)", file=sys.stderr)
    for command in ([] if (venv / "bin" / "python").exists() else [create]) + [install]:
        completed = subprocess.run(command, capture_output=True, text=True)
        if completed.returncode != 0:
            tail = " | ".join(completed.stderr.strip().splitlines()[-3:])
            print(f"check_latest.py: error: {shlex.join(command[:4])} failed: {tail}", file=sys.stderr)
            return 3
    python = venv / "bin" / "python"
    print("check_latest.py: running the suite there", file=sys.stderr)
    subprocess.run(suite, cwd=REPO, stdout=sys.stderr)  # stdout carries only the report
    surface = load_surface()
    report = {"pins": str(args.pins), "venv": str(venv),
              "versions": version_diff(pins, installed_versions(python)),
              "broken": failed_tests(junit_xml) if junit_xml.exists()
              else {"pytest": ["no JUnit report: the suite did not run"]},
              "api_changes": api_diff(api_snapshot(args.baseline_python, surface), api_snapshot(python, surface))}
    print(json.dumps(report, indent=2) if args.json else report_text(report))
    shutil.rmtree(work, ignore_errors=True)
    return 1 if report["broken"] or report["api_changes"] else 0


if __name__ == "__main__":
    sys.exit(main())
