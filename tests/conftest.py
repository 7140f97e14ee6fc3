"""The suite's hooks and the fixtures several test modules share. What the tests run things with lives in the
support package (tests/support/): harness.py runs scripts as users do, offline, with caches in a temporary
directory; shared_runs.py holds the runs one session shares."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import pytest

pytest.register_assert_rewrite("support")  # helpers' failed asserts show their values, as they did in test modules

from support.composer_scripts import PREFLIGHT, checkpoint_smoke_all  # noqa: E402
from support.harness import (DEVICES, SCRIPT_TIMEOUT_S, ScriptResult, ScriptWorker, import_script,  # noqa: E402
                             run_python)
from support.shared_runs import remember_tmp_path_factory  # noqa: E402
from support.transformers_scripts import ARGS  # noqa: E402


@pytest.fixture(scope="session", autouse=True)
def _remember_tmp_path_factory(tmp_path_factory):
    remember_tmp_path_factory(tmp_path_factory)


@pytest.fixture(scope="session")
def script_worker(tmp_path_factory):
    """``script_worker(script)``: the ScriptWorker of the script's skill, one per skill and pytest process."""
    workers: dict[Path, ScriptWorker] = {}

    def worker_for(script: Path) -> ScriptWorker:
        if script.parent not in workers:
            workers[script.parent] = ScriptWorker(script.parent, tmp_path_factory.mktemp(script.parent.parent.name))
        return workers[script.parent]

    yield worker_for
    for worker in workers.values():
        worker.close()


@pytest.fixture
def run_script(tmp_path):
    """``run_script(path, *args)`` runs a script the way a user does and returns a ScriptResult."""

    def _run(script: Path, *args: str, cwd: Path | None = None, env: dict | None = None,
             timeout: float = SCRIPT_TIMEOUT_S) -> ScriptResult:
        return run_python([str(script), *args], tmp_path, cwd=cwd, env=env, timeout=timeout)

    return _run


# ---- composer-training (used by test_composer_scripts, test_composer_claims and test_fault_drills_composer) ----

@pytest.fixture(scope="module", params=DEVICES)
def checkpoints(request, tmp_path_factory):
    """(device, result, checkpoints folder) of the shared checkpoint_smoke.py --mode all run on each device."""
    return request.param, *checkpoint_smoke_all(tmp_path_factory, request.param)


@pytest.fixture
def preflight(capsys):
    """preflight.main in this process; the contract's environment and temp-dir changes are undone right after."""
    module = import_script(PREFLIGHT)

    def run(*args, device="cpu"):
        environment, temp = dict(os.environ), tempfile.tempdir
        capsys.readouterr()
        try:
            code = module.main(["--device", device, "--json", *args])
        finally:
            os.environ.clear()
            os.environ.update(environment)
            tempfile.tempdir = temp
        summary = json.loads(capsys.readouterr().out)
        return code, {check["name"]: check for check in summary["checks"]}

    return run


# ---- transformers-training (used by test_transformers_scripts and test_hostile_transformers) ----

@pytest.fixture
def training_args(script_worker):
    """training_args_smoke.py's main() in the skill's worker process: its cases pay the Transformers import once
    (with the fuzz tests of tests/test_bad_input.py)."""
    def run(*argv: str, cwd: Path):
        result = script_worker(ARGS).run(ARGS, *argv, cwd=cwd)
        assert result.network_attempts == [], result.network_attempts
        return result

    return run


# ---- the checkout: a test writes only in its temporary folders, never into the repository ----

REPOSITORY = Path(__file__).resolve().parent.parent
NOT_WATCHED = {".git", ".venv", ".venv-latest", "__pycache__", ".hypothesis"}  # git's, the venvs, Python's caches
CHECKOUT = pytest.StashKey[set]()  # the checkout's paths when the session started


def checkout_paths() -> set[str]:
    """Every file and folder of the checkout (empty folders too: git status misses those) but NOT_WATCHED."""
    paths = set()
    for folder, folders, files in os.walk(REPOSITORY):
        folders[:] = [name for name in folders if name not in NOT_WATCHED]
        relative = Path(folder).relative_to(REPOSITORY)
        paths.update(str(relative / name) for name in folders + files)
    return paths


def pytest_sessionstart(session):
    if not hasattr(session.config, "workerinput"):  # the controller watches; xdist workers only run tests
        session.config.stash[CHECKOUT] = checkout_paths()


def pytest_sessionfinish(session, exitstatus):
    """A test that created or removed anything in the checkout (a Trainer made its output_dir in the working
    directory, say) fails the session, naming what changed."""
    before = session.config.stash.get(CHECKOUT, None)
    changed = sorted(checkout_paths() ^ before) if before is not None else []
    if changed:
        writer = session.config.get_terminal_writer()
        writer.line()
        writer.line(
            f"the tests changed the checkout (a test must write only in its tmp_path): {', '.join(changed[:20])}",
            red=True)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(trylast=True)  # after the durations table, next to the result line
def pytest_terminal_summary(terminalreporter):
    """The claims index's counts (tests/test_claims_index.py), whenever its gate ran in this session."""
    if not any(getattr(report, "nodeid", "").startswith("tests/test_claims_index.py")
               for reports in terminalreporter.stats.values() for report in reports):
        return
    try:
        from test_claims_index import summary

        line = summary()
    except Exception as exc:  # noqa: BLE001  (the gate's own tests report what is wrong)
        line = f"claims index: could not count ({type(exc).__name__}: {exc})"
    terminalreporter.write_sep("-", line)
