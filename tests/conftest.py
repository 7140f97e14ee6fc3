"""Shared test harness: run scripts as users do, offline, with caches in a temporary directory."""

from __future__ import annotations

import dataclasses
import fcntl
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import types
from dataclasses import dataclass
from pathlib import Path

import pytest

sys.dont_write_bytecode = True  # tests import skill scripts: no __pycache__ in the skill folders
REPO = Path(__file__).resolve().parent.parent
SKILLS_DIR = REPO / "skills"
GUARD_DIR = Path(__file__).resolve().parent / "offline_guard"
SCRIPT_TIMEOUT_S = 240


def _cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


CUDA = _cuda_available()

# Every script test takes a ``device`` from here: cpu always, gpu as a real case that runs when CUDA is present.
DEVICES = [
    pytest.param("cpu", id="cpu"),
    pytest.param("gpu", id="gpu", marks=[
        pytest.mark.gpu,
        pytest.mark.skipif(not CUDA, reason="CUDA is not available on this machine"),
    ]),
]


def skill_dirs() -> list[Path]:
    return sorted(path.parent for path in SKILLS_DIR.glob("*/SKILL.md"))


def leg_marks(path: Path) -> list:
    """Tests of anything inside a Composer skill need mosaicml: the ``composer`` marker keeps them out of the
    latest leg, whose venv holds the Transformers stack only."""
    relative = path.resolve().relative_to(REPO)
    in_composer_skill = relative.parts[0] == "skills" and len(relative.parts) > 1 and relative.parts[1].startswith("composer")
    return [pytest.mark.composer] if in_composer_skill else []


def skill_param(skill: Path):
    return pytest.param(skill, id=skill.name, marks=leg_marks(skill))


def isolated_env(tmp: Path, extra: dict | None = None) -> dict:
    """The environment of every child: offline guard first on PYTHONPATH, every cache under ``tmp``."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("HF_", "TRANSFORMERS_", "PYTEST_", "SMOKE_"))}
    cache = tmp / "cache"
    env.update({
        "PYTHONPATH": os.pathsep.join([str(GUARD_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "OFFLINE_GUARD_LOG": str(tmp / "network-attempts.log"),
        "HF_HOME": str(cache / "hf"),
        "XDG_CACHE_HOME": str(cache / "xdg"),
        "TORCH_HOME": str(cache / "torch"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"),
        "TRITON_CACHE_DIR": str(cache / "triton"),
        "MPLCONFIGDIR": str(cache / "matplotlib"),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        # torch's C++ store resolves 127.0.0.1 back to a name (getnameinfo), which the Python guard cannot see:
        # no DNS query leaves the machine (tests/test_distributed_smokes.py proves the smokes stop it themselves)
        "RES_OPTIONS": "attempts:0",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    })
    env.update(extra or {})
    return env


@dataclass
class ScriptResult:
    returncode: int
    stdout: str
    stderr: str
    network_attempts: list[str]
    stray_files: list[str] = dataclasses.field(default_factory=list)  # written outside the output dir

    @property
    def json(self) -> dict:
        return json.loads(self.stdout)

    def check(self, name: str) -> dict:
        """The check called ``name`` from the JSON summary (fails the test when it is missing)."""
        matches = [check for check in self.json["checks"] if check["name"] == name]
        assert matches, f"no check named {name!r}; checks: {[c['name'] for c in self.json['checks']]}"
        return matches[0]

    @property
    def stderr_lines(self) -> list[str]:
        return [line for line in self.stderr.splitlines() if line.strip()]


def tree_state(root: Path) -> dict[str, tuple]:
    """Every file under ``root`` with its size and mtime, every folder by name (a folder's mtime changes when a
    temporary file comes and goes inside it; what stays shows up as its own entry). Symlinks are not followed."""
    state = {}
    for folder, dirs, files in os.walk(root):
        state.update({os.path.join(folder, name): "folder" for name in dirs})
        for name in files:
            stat = os.lstat(os.path.join(folder, name))
            state[os.path.join(folder, name)] = (stat.st_size, stat.st_mtime_ns)
    return state


def stray_files(before: dict, after: dict, output_dir: Path | None) -> list[str]:
    """Paths created or changed between two tree_state()s, except those inside ``output_dir``."""
    inside = str(output_dir.resolve()) + os.sep if output_dir else None
    return sorted(path for path, state in after.items() if before.get(path) != state
                  and not (inside and (path + os.sep).startswith(inside)))


def output_dir_of(command: list[str], stdout: str, cwd: Path) -> Path | None:
    """The output directory a smoke script was given (or reported in its JSON summary)."""
    if "--output-dir" in command[:-1]:
        return cwd / command[command.index("--output-dir") + 1]
    try:
        reported = json.loads(stdout).get("output_dir")
    except (ValueError, AttributeError):
        return None
    return Path(reported) if reported else None


def import_script(path: Path):
    """A skill script as a module (its top level imports only the standard library and smoke_contract), named after
    its skill too: both skills have a checkpoint_smoke.py, and one pytest process may import both."""
    name = f"{path.parent.parent.name.replace('-', '_')}_{path.stem}"
    if name not in sys.modules:
        sys.path.insert(0, str(path.parent))
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
        finally:
            sys.path.remove(str(path.parent))
        sys.modules[name] = module
    return sys.modules[name]


def is_skill_script(path: Path) -> bool:
    return path.suffix == ".py" and path.parent.name == "scripts" and (path.parent.parent / "SKILL.md").is_file()


def run_command(command: list[str], tmp: Path, cwd: Path | None = None, env: dict | None = None,
                timeout: float = SCRIPT_TIMEOUT_S) -> ScriptResult:
    """Run ``command`` offline with a fresh HOME, TMPDIR and caches under ``tmp``. Every file it creates or changes
    under ``tmp`` and ``cwd`` outside its output directory is reported in ``stray_files``; for a skill's script
    that fails the test here (the contract: write only inside the output directory)."""
    tmp.mkdir(parents=True, exist_ok=True)
    cwd = cwd or tmp
    home, tmpdir = tmp / "home", tmp / "tmpdir"
    home.mkdir(exist_ok=True)
    tmpdir.mkdir(exist_ok=True)
    child_env = isolated_env(tmp, {"HOME": str(home), "TMPDIR": str(tmpdir), **(env or {})})
    log = Path(child_env["OFFLINE_GUARD_LOG"])
    log.unlink(missing_ok=True)
    watched = [tmp] if cwd.resolve().is_relative_to(tmp.resolve()) else [tmp, cwd]
    before = {path: state for root in watched for path, state in tree_state(root).items()}
    completed = subprocess.run(command, cwd=cwd, env=child_env, capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
    attempts = log.read_text().splitlines() if log.exists() else []
    after = {path: state for root in watched for path, state in tree_state(root).items() if path != str(log)}
    strays = stray_files(before, after, output_dir_of(command, completed.stdout, cwd))
    result = ScriptResult(completed.returncode, completed.stdout, completed.stderr, attempts, strays)
    if any(is_skill_script(cwd / part) for part in command[1:2]):
        assert not strays, f"{command[1:3]} wrote outside its output directory: {strays[:10]}"
    return result


def run_python(args: list[str], tmp: Path, **kwargs) -> ScriptResult:
    return run_command([sys.executable, *args], tmp, **kwargs)


_session: dict = {}


@pytest.fixture(scope="session", autouse=True)
def _remember_tmp_path_factory(tmp_path_factory):
    _session["tmp_path_factory"] = tmp_path_factory


def session_tmp_path_factory():
    """The session's tmp_path_factory, for helpers called without fixtures (the quoted-error producers); outside
    pytest (``python tests/quoted_errors_transformers.py``) one throwaway folder."""
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
    ``python scripts/<file>.py ...`` from (a copy of) the skill folder, with a fresh HOME and HF_HOME; run_command
    fails it on any file written outside its output directory, the skill folder included."""
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


class ScriptWorker:
    """One process (tests/script_worker.py) per skill that imports its scripts once and runs their ``main(argv)`` per
    request, offline, with a fresh HOME and TMPDIR and CUDA hidden; ``run`` answers as run_command would, minus the
    file watch (callers check what they expect on disk), with the network attempts of that call."""

    def __init__(self, scripts_dir: Path, tmp: Path):
        self.scripts_dir, self.tmp = scripts_dir, tmp
        self.home, self.tmpdir = tmp / "home", tmp / "tmpdir"
        self.home.mkdir()
        self.tmpdir.mkdir()
        self.env = isolated_env(tmp, {"HOME": str(self.home), "TMPDIR": str(self.tmpdir), "CUDA_VISIBLE_DEVICES": ""})
        self.log, self.attempts_seen = Path(self.env["OFFLINE_GUARD_LOG"]), 0
        self.process = subprocess.Popen([sys.executable, str(Path(__file__).with_name("script_worker.py")),
                                         str(scripts_dir)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=subprocess.DEVNULL, text=True, env=self.env, cwd=tmp)

    def ask(self, script: Path, request: dict) -> dict:
        assert script.parent == self.scripts_dir, f"{script} is not in {self.scripts_dir}"
        self.process.stdin.write(json.dumps({**request, "script": script.name}) + "\n")
        self.process.stdin.flush()
        line = self.process.stdout.readline()
        assert line, f"the script worker for {self.scripts_dir.parent.name} died"
        return json.loads(line)

    def options(self, script: Path) -> list[dict]:
        return self.ask(script, {"op": "options"})["options"]

    def run(self, script: Path, *argv: str, cwd: Path) -> ScriptResult:
        reply = self.ask(script, {"argv": list(argv), "cwd": str(cwd)})
        assert isinstance(reply["code"], int), f"{script.name} {list(argv)}: {reply['code']}"  # main() raised
        attempts = self.log.read_text().splitlines() if self.log.exists() else []
        new, self.attempts_seen = attempts[self.attempts_seen:], len(attempts)
        return ScriptResult(reply["code"], reply["stdout"], reply["stderr"], new)

    def close(self) -> None:
        self.process.stdin.close()
        self.process.wait(timeout=60)


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


def assert_one_line_error(result: ScriptResult, exit_code: int, fragment: str) -> None:
    """The contract for bad input: the exit code, one line on stderr naming the problem, no traceback."""
    assert result.returncode == exit_code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    error_lines = [line for line in result.stderr_lines if ": error: " in line]
    assert len(error_lines) == 1, result.stderr[-2000:]
    assert fragment in error_lines[0], error_lines[0]


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
