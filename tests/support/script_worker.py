"""Run smoke scripts' ``main(argv)`` many times in one process (harness.ScriptWorker drives it), for tests that would
otherwise start a process, and pay the library import, per argument list: tests/test_bad_input.py and others.

Usage: python tests/support/script_worker.py SCRIPTS_DIR (one skill's scripts: their sibling imports, such as
``from train_smoke import ...``, resolve there). Reads one JSON request per line on stdin, answers one JSON line:
  {"op": "options", "script": "x.py"}             -> {"options": [{"flags", "kind", "choices"}, ...]}  (its parser)
  {"script": "x.py", "argv": [...], "cwd": "..."} -> {"code", "stdout", "stderr"}  (``code`` is "raised: <traceback>"
                                                     if main raised)
Each call runs as a fresh process would see it: the environment, the temp dir and the working directory are restored
afterwards. Each script is imported once, and torch or a library once for all of them, the first time a call
reaches it.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import io
import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

sys.dont_write_bytecode = True  # nothing lands in the skill's scripts folder


@functools.cache
def load(script: Path):
    spec = importlib.util.spec_from_file_location(f"fuzzed_{script.stem}", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def option_kind(action: argparse.Action) -> str:
    if action.nargs == 0:
        return "flag"
    if action.choices:
        return "choice"
    name = getattr(action.type, "__name__", "")
    if name in ("positive_int", "seed_int") or action.type is int:
        return "seed" if name == "seed_int" else "count"
    return "path" if action.type is Path else "text"


def parser_of(module) -> argparse.ArgumentParser:
    """The parser the script's main() parses with: every script builds it in ``make_parser()``."""
    return module.make_parser()


def options(module) -> list[dict]:
    """The script's own flags, read from its parser."""
    return [{"flags": action.option_strings, "kind": option_kind(action),
             "choices": list(action.choices) if action.choices else None}
            for action in parser_of(module)._actions
            if action.option_strings and action.help != argparse.SUPPRESS and action.dest != "help"]


def call(module, argv: list[str], cwd: str) -> dict:
    environ, tempdir, here = dict(os.environ), tempfile.tempdir, os.getcwd()
    out, err = io.StringIO(), io.StringIO()
    try:
        os.chdir(cwd)
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                code = module.main(argv)
            except SystemExit as exc:  # --help
                code = exc.code
            except BaseException:  # noqa: BLE001 - reported to the test, which fails on it
                code = "raised: " + traceback.format_exc()
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
        tempfile.tempdir = tempdir
    return {"code": code, "stdout": out.getvalue(), "stderr": err.getvalue()}


def serve(scripts_dir: Path) -> None:
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # anything a library writes to fd 1 goes to stderr, not into the replies
    sys.path.insert(0, str(scripts_dir))  # `from smoke_contract import ...`, as when run as a script
    for line in sys.stdin:
        request = json.loads(line)
        module = load(scripts_dir / request["script"])
        reply = {"options": options(module)} if request.get("op") == "options" else \
            call(module, request["argv"], request["cwd"])
        replies.write(json.dumps(reply) + "\n")
        replies.flush()


if __name__ == "__main__":
    serve(Path(sys.argv[1]).resolve())
