"""Runs shared by the whole session: ``run_once`` runs a command once per test session, also across pytest-xdist
workers, and ``canonical_run`` each skill script's full run per device as SKILL.md tells a user to run it
(CANONICAL_RUNS)."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import tempfile
import types
from pathlib import Path

from .harness import SKILLS_DIR, ScriptResult, run_python

_session: dict = {}


def remember_tmp_path_factory(tmp_path_factory) -> None:
    """Called once per session by conftest, for session_tmp_path_factory()."""
    _session["tmp_path_factory"] = tmp_path_factory


def session_tmp_path_factory():
    """The session's tmp_path_factory, for helpers called without fixtures (the quoted-error producers); outside
    pytest (``cd tests && python -m support.quoted_errors_transformers``) one throwaway folder."""
    if "tmp_path_factory" not in _session:
        folder = Path(tempfile.mkdtemp(prefix="quoted-errors-"))
        _session["tmp_path_factory"] = types.SimpleNamespace(getbasetemp=lambda: folder)
    return _session["tmp_path_factory"]


def run_once(tmp_path_factory, key: str, args: list[str], **kwargs) -> ScriptResult:
    """Run ``python *args`` once per test session and share the result, also between pytest-xdist workers
    (a module-scoped fixture alone runs once per worker). The run's scratch folder is ``<session>/<key>``."""
    basetemp = tmp_path_factory.getbasetemp()
    # Under xdist each worker's basetemp sits in one folder per session; without xdist basetemp is that folder.
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    folder, stored = shared / key, shared / f"{key}.json"
    with open(shared / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not stored.exists():
            folder.mkdir(exist_ok=True)
            stored.write_text(json.dumps(dataclasses.asdict(run_python(args, folder, **kwargs))))
    return ScriptResult(**json.loads(stored.read_text()))


# One full run of every skill script per device, shared by the route tests that read its checks, by
# tests/test_confinement.py and by the SKILL.md blocks that run these very commands (test_docs_execute.py).
# Arguments besides --device and --json.
COMPOSER_TRAIN = {"batches": 3, "eval_batches": 2, "batch_size": 4, "microbatch_size": 2}
TRAINING_ARGS_SEED_EXAMPLE = [
    "--output_dir", "outputs/smoke", "--per_device_train_batch_size", "2", "--per_device_eval_batch_size", "2",
    "--eval_strategy", "steps", "--eval_steps", "50", "--save_strategy", "steps", "--save_steps", "50",
    "--load_best_model_at_end", "--metric_for_best_model", "eval_loss", "--report_to", "none"]
CANONICAL_RUNS = {
    "composer-training/train_smoke.py": [
        *(item for name, value in COMPOSER_TRAIN.items() for item in (f"--{name.replace('_', '-')}", str(value))),
        "--predict"],
    "composer-training/checkpoint_smoke.py": ["--mode", "all", "--output-dir", "checkpoint-smoke"],  # kept
    "composer-training/preflight.py": ["--max-duration", "2ep", "--autoresume", "--run-name", "my-run",
                                       "--save-folder", "checkpoints/{run_name}"],
    "composer-training/distributed_smoke.py": [],
    "composer-training/env_check.py": [],
    "transformers-training/train_smoke.py": [],
    # killed after checkpoint 1 (first step), 2 (mid-epoch), 4 (epoch boundary), and while writing 1 and 3
    "transformers-training/checkpoint_smoke.py": ["--mode", "all", "--kill-at", "1,2,4", "--kill-while-saving", "1,3",
                                                  "--output-dir", "out"],
    "transformers-training/training_args_smoke.py": TRAINING_ARGS_SEED_EXAMPLE,
    "transformers-training/distributed_smoke.py": [],
    "transformers-training/env_check.py": [],
    "composer-training/trap_check.py": ["scripts"], "transformers-training/trap_check.py": ["scripts"],  # no trap
}


def canonical_run(tmp_path_factory, script: str, device: str) -> ScriptResult:
    """The shared full run of ``script`` (``<skill>/<file>.py``) on ``device``, as SKILL.md tells a user to run it:
    ``python scripts/<file>.py ...`` from (a copy of) the skill folder, with a fresh HOME and HF_HOME; any file written
    outside its output directory, the skill folder included, is in its ``stray_files`` (tests/test_confinement.py)."""
    key = f"{script.replace('/', '-').removesuffix('.py')}-{device}"
    skill, name = script.split("/")
    basetemp = tmp_path_factory.getbasetemp()
    shared = basetemp.parent if os.environ.get("PYTEST_XDIST_WORKER") else basetemp
    copy = shared / key / "skill"  # inside the run's folder, so a file written into it counts as stray
    with open(shared / f"{key}.copy.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not copy.exists():
            shutil.copytree(SKILLS_DIR / skill, copy, ignore=shutil.ignore_patterns("__pycache__"))
    args = [f"scripts/{name}", *CANONICAL_RUNS[script], "--device", device, "--json"]
    return run_once(tmp_path_factory, key, args, cwd=copy, env={"PYTHONDONTWRITEBYTECODE": ""})


def smoke_world_size(result: ScriptResult) -> int:
    """Ranks a distributed smoke launched: 2 on CPU, one per GPU."""
    if result.json["device"] == "cpu":
        return 2
    import torch

    return torch.cuda.device_count()
