"""Run every runnable python block of one Markdown file, in order, in one shared namespace.

Usage: python tests/run_doc_blocks.py DOC.md   (run by tests/test_docs_execute.py from a scratch directory)
Prints one line per block on stdout; on the first failing block prints its traceback and exits 1.
"""

import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from docs import runnable_blocks  # noqa: E402


def main() -> int:
    path = Path(sys.argv[1]).resolve()
    namespace = {"__name__": "__main__"}
    for block in runnable_blocks(path, "python"):
        started = time.perf_counter()
        try:
            exec(compile(block.source, block.where, "exec"), namespace)  # noqa: S102 - executing docs is the point
        except BaseException:  # noqa: BLE001 - report every failure, SystemExit included
            print(f"FAILED {block.where}", flush=True)
            traceback.print_exc()
            return 1
        print(f"ok {block.where} {time.perf_counter() - started:.2f}s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
