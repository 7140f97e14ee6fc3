"""Run the runnable python blocks of Markdown files as support/docs.py says: in a skill of BLOCKS_RUN_ALONE each
block alone in a fresh namespace, after only its document's ``## Shared setup`` blocks; elsewhere a file's blocks in
one namespace, like a notebook. A file's blocks run in order, in its own scratch copy of the skill folder (or of the
bundle's docs and scripts for bundle docs), so files an earlier block wrote are there.

Usage: python tests/support/run_doc_blocks.py WORK DOC.md [DOC.md ...]   (run by tests/test_docs_execute.py)
All files of one skill share this process, so the library imports are paid once; the working directory and the
environment are restored between files, and a failing file does not stop the next. One line per file on stdout:
``DOC-RESULT {"doc": ..., "ok": ..., "blocks": [...], "error": ...}``.
"""

import json
import os
import shutil
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # tests/: run by path, `support` is a package there
from support.docs import REPO, blocks_run_alone, runnable_blocks  # noqa: E402


def scratch_copy(doc: Path, target: Path) -> Path:
    """A copy of the doc's skill folder (or of the bundle's docs and scripts), so blocks write nothing in the repo."""
    relative = doc.relative_to(REPO)
    ignore = shutil.ignore_patterns("__pycache__")
    if relative.parts[0] == "skills":
        shutil.copytree(REPO / "skills" / relative.parts[1], target, ignore=ignore)
    else:
        target.mkdir(parents=True)
        for name in ("skills", "scripts", "references"):
            shutil.copytree(REPO / name, target / name, ignore=ignore)
    return target


def run_doc(doc: Path, work: Path) -> dict:
    done = []
    environ, here = dict(os.environ), os.getcwd()
    os.chdir(scratch_copy(doc, work))
    python = runnable_blocks(doc, "python")
    setup = [block for block in python if block.is_setup] if blocks_run_alone(doc) else []
    runs = [[*setup, block] for block in python if block not in setup] or [setup]
    notebook = {"__name__": "__main__"}
    try:
        for steps in runs:
            started = time.perf_counter()
            namespace = {"__name__": "__main__"} if blocks_run_alone(doc) else notebook
            block = steps[-1]
            for step in steps:
                try:
                    exec(compile(step.source, step.where, "exec"), namespace)  # noqa: S102 - running docs is the point
                except BaseException:  # noqa: BLE001 - report every failure, SystemExit included
                    failed = f"{step.where} (run for {block.where})\n{traceback.format_exc()}"
                    return {"doc": str(doc), "ok": False, "blocks": done, "error": failed}
            done.append(f"{block.where} {time.perf_counter() - started:.2f}s")
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
    return {"doc": str(doc), "ok": True, "blocks": done, "error": None}


def main() -> int:
    work = Path(sys.argv[1]).resolve()
    results = [run_doc(Path(doc).resolve(), work / str(index)) for index, doc in enumerate(sys.argv[2:])]
    for result in results:
        print("DOC-RESULT " + json.dumps(result), flush=True)
    return 0 if all(result["ok"] for result in results) else 1


if __name__ == "__main__":
    sys.exit(main())
