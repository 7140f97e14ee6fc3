"""The transformers-training scripts as the tests meet them: their paths, the shared checkpoint_smoke.py --mode all
run and its crash drills (read by tests/test_transformers_scripts.py, tests/test_fault_drills_transformers.py and
tests/test_hostile_transformers.py), and what the damaged-checkpoint tests check a refusal and the given files with."""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path

from .harness import SKILLS_DIR, assert_one_line_error
from .shared_runs import CANONICAL_RUNS, canonical_run

SCRIPTS = SKILLS_DIR / "transformers-training" / "scripts"
TRAIN, CHECKPOINT, ARGS = SCRIPTS / "train_smoke.py", SCRIPTS / "checkpoint_smoke.py", SCRIPTS / "training_args_smoke.py"
# The crash drills the suite runs: killed after checkpoint 1 (the first step), 2 (mid-epoch) and 4 (the epoch
# boundary: 16 rows at batch 4), and killed while writing checkpoint 1 (nothing complete is left) and 3.
KILL_AT, KILL_WHILE_SAVING = [1, 2, 4], [1, 3]
COPY_AGAIN = "copy the checkpoint folder again, or resume from an earlier complete checkpoint-N"


def checkpoint_smoke_all(tmp_path_factory, device: str):
    """checkpoint_smoke.py --mode all (the resume checks and the crash drills at KILL_AT and KILL_WHILE_SAVING): the
    shared canonical run, also read by tests/test_fault_drills_transformers.py; its files stay in its output dir."""
    result = canonical_run(tmp_path_factory, "transformers-training/checkpoint_smoke.py", device)
    args = CANONICAL_RUNS["transformers-training/checkpoint_smoke.py"]
    assert args[args.index("--kill-at") + 1] == ",".join(map(str, KILL_AT))
    assert args[args.index("--kill-while-saving") + 1] == ",".join(map(str, KILL_WHILE_SAVING))
    return result


def good_checkpoint(tmp_path_factory) -> Path:
    """straight/checkpoint-3 written by the CPU run of the script."""
    result = checkpoint_smoke_all(tmp_path_factory, "cpu")
    assert result.returncode == 0, result.stderr[-3000:]
    return Path(result.json["output_dir"]) / "straight" / "checkpoint-3"


def fingerprint(folder: Path) -> dict:
    """sha256 and mtime of every file under ``folder``: equal before and after means nothing was touched."""
    return {str(path.relative_to(folder)): (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
            for path in sorted(folder.rglob("*")) if path.is_file()}


class MkdirWhenUnpickled:
    """A pickle payload, as a hostile checkpoint would hold one: unpickling it calls os.mkdir(marker), harmless and
    visible."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.mkdir, (str(self.marker),)


def assert_refused_before_torch(result, fragment: str) -> None:
    assert_one_line_error(result, 2, fragment)
    imported = re.findall(r"^import time:.*\|\s+(torch|transformers|safetensors)\s*$", result.stderr, re.M)
    assert not imported, f"{imported} imported before the checkpoint was refused"
