"""The composer-training scripts as the tests meet them: their paths, the shared checkpoint_smoke.py --mode all run
(read by tests/test_composer_scripts.py, tests/test_fault_drills_composer.py and conftest's ``checkpoints``), and
how a test reads a summary and the files a script was given."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from .checks import assert_equal_check
from .harness import SKILLS_DIR, ScriptResult
from .shared_runs import canonical_run

SCRIPTS = SKILLS_DIR / "composer-training" / "scripts"
TRAIN, CHECKPOINT, PREFLIGHT = (SCRIPTS / name for name in ("train_smoke.py", "checkpoint_smoke.py", "preflight.py"))


def passed(result: ScriptResult) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.network_attempts == [], result.network_attempts
    summary = result.json
    assert summary["ok"] and summary["exit_code"] == 0
    assert summary["versions"]["mosaicml"] == "0.32.1"
    failed = [check for check in summary["checks"] if not check["ok"]]
    assert not failed, failed
    return summary


def got(result: ScriptResult, name: str, expected) -> None:
    assert_equal_check(result.check(name), expected)


def checkpoint_smoke_all(tmp_path_factory, device: str) -> tuple[ScriptResult, Path]:
    """The shared run of checkpoint_smoke.py --mode all on ``device`` (shared_runs.CANONICAL_RUNS; also read by
    test_fault_drills_composer.py and test_confinement.py)."""
    result = canonical_run(tmp_path_factory, "composer-training/checkpoint_smoke.py", device)
    passed(result)
    return result, Path(result.json["output_dir"]) / "checkpoints"


def state_of(paths: list[Path]) -> dict:
    """sha256 + mtime of every file, the target of every link, the names in every folder."""
    state = {}
    for path in paths:
        if path.is_symlink():
            state[path] = ("link", os.readlink(path), path.lstat().st_mtime_ns)
        elif path.is_dir():
            state[path] = ("dir", sorted(child.name for child in path.iterdir()))
        else:
            state[path] = (hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns)
    return state
