"""The harness the tests run things with: where the bundle is, which devices and legs a test runs on, and a
script run as a user runs it: offline (the guard in offline_guard/ first on PYTHONPATH), with a fresh HOME, TMPDIR
and caches, every file it writes outside its output directory reported; in a child process (run_command) or in
the skill's worker process (ScriptWorker, script_worker.py)."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.manifest import SKILLS

sys.dont_write_bytecode = True  # tests import skill scripts: no __pycache__ in the skill folders
REPO = Path(__file__).resolve().parent.parent.parent
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
    """Tests of anything inside a skill that not every leg's venv can run carry that skill's marker (skills.toml):
    ``composer`` keeps the Composer skill's tests out of the latest leg, whose venv holds the Transformers stack
    only."""
    relative = path.resolve().relative_to(REPO)
    in_skill = relative.parts[0] == "skills" and len(relative.parts) > 1
    marker = SKILLS[relative.parts[1]].marker if in_skill else None
    return [getattr(pytest.mark, marker)] if marker else []


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
    """A skill script as a module, named after its skill too (both skills have a checkpoint_smoke.py, and one pytest
    process imports both), and so are the sibling modules it imports by bare name (``from _env_doctor import ...``):
    each skill's scripts get that skill's own copy of smoke_contract, _tensors, _env_doctor..., whichever skill's
    tests ran first (tests/test_harness.py plants a bug in one copy to prove it)."""
    prefix = path.parent.parent.name.replace("-", "_") + "_"
    name = prefix + path.stem
    if name not in sys.modules:
        siblings = {sibling.stem for sibling in path.parent.glob("*.py")}
        others = {stem: sys.modules.pop(stem) for stem in siblings if stem in sys.modules}
        sys.modules.update({stem: sys.modules[prefix + stem] for stem in siblings if prefix + stem in sys.modules})
        sys.path.insert(0, str(path.parent))
        try:
            spec = importlib.util.spec_from_file_location(name, path)
            module = importlib.util.module_from_spec(spec)
            spec.loader.exec_module(module)
            sys.modules[name] = module
        finally:
            sys.path.remove(str(path.parent))
            for stem in siblings & set(sys.modules):  # this skill's copies keep their skill's name only
                sys.modules[prefix + stem] = sys.modules.pop(stem)
            sys.modules.update(others)
    return sys.modules[name]


def run_command(command: list[str], tmp: Path, cwd: Path | None = None, env: dict | None = None,
                timeout: float = SCRIPT_TIMEOUT_S) -> ScriptResult:
    """Run ``command`` offline with a fresh HOME, TMPDIR and caches under ``tmp``. Every file it creates or changes
    under ``tmp`` and ``cwd`` outside its output directory is reported in ``stray_files``, for the test to assert
    (a skill's script writes only inside its output directory: ``assert result.stray_files == []``)."""
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
    return ScriptResult(completed.returncode, completed.stdout, completed.stderr, attempts, strays)


def run_python(args: list[str], tmp: Path, **kwargs) -> ScriptResult:
    return run_command([sys.executable, *args], tmp, **kwargs)


class ScriptWorker:
    """One process (tests/support/script_worker.py) per skill that imports its scripts once and runs their ``main(argv)`` per
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


def assert_one_line_error(result: ScriptResult, exit_code: int, fragment: str) -> None:
    """The contract for bad input: the exit code, one line on stderr naming the problem, no traceback."""
    assert result.returncode == exit_code, (result.returncode, result.stderr[-2000:])
    assert "Traceback" not in result.stderr, result.stderr[-2000:]
    error_lines = [line for line in result.stderr_lines if ": error: " in line]
    assert len(error_lines) == 1, result.stderr[-2000:]
    assert fragment in error_lines[0], error_lines[0]


def live_processes(text: str) -> dict[int, bytes]:
    """Live processes but this one whose command line or environment holds ``text``, with their command lines (Linux
    /proc; a zombie's both read empty). Launchers give ranks sessions of their own: this finds them anyway."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            try:
                cmdline, environ = (Path(entry.path, name).read_bytes() for name in ("cmdline", "environ"))
            except OSError:  # ended meanwhile
                continue
            if text.encode() in cmdline + environ:
                found[int(entry.name)] = cmdline
    return found


# Runs a script as __main__ with a disk that is full for every file copied into a folder named argv[1] (shutil's
# copies, which the scripts use to copy checkpoints): the copy fails with ENOSPC as on a real full disk.
FULL_DISK_FOR_COPIES = """
import errno, os, runpy, shutil, sys
folder, script = sys.argv[1], sys.argv[2]
copyfile = shutil.copyfile

def full_disk(source, destination, *args, **kwargs):
    if folder in os.fspath(destination).split(os.sep):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), os.fspath(destination))
    return copyfile(source, destination, *args, **kwargs)

shutil.copyfile = full_disk
sys.argv = sys.argv[2:]
sys.path.insert(0, os.path.dirname(script))
runpy.run_path(script, run_name="__main__")
"""


def run_with_full_disk_for_copies(folder: str, script: Path, args: list[str], tmp: Path) -> ScriptResult:
    """``script args`` with every shutil copy into a folder named ``folder`` failing as on a full disk."""
    return run_python(["-c", FULL_DISK_FOR_COPIES, folder, str(script), *args], tmp)
