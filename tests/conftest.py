"""Shared test harness: run scripts as users do, offline, with caches in a temporary directory."""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

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


def run_command(command: list[str], tmp: Path, cwd: Path | None = None, env: dict | None = None,
                timeout: float = SCRIPT_TIMEOUT_S) -> ScriptResult:
    tmp.mkdir(parents=True, exist_ok=True)
    child_env = isolated_env(tmp, env)
    log = Path(child_env["OFFLINE_GUARD_LOG"])
    log.unlink(missing_ok=True)
    completed = subprocess.run(command, cwd=cwd or tmp, env=child_env, capture_output=True, text=True,
                               timeout=timeout, stdin=subprocess.DEVNULL)
    attempts = log.read_text().splitlines() if log.exists() else []
    return ScriptResult(completed.returncode, completed.stdout, completed.stderr, attempts)


def run_python(args: list[str], tmp: Path, **kwargs) -> ScriptResult:
    return run_command([sys.executable, *args], tmp, **kwargs)


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
