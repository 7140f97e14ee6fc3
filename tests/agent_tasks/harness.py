"""Grading machinery shared by every task: the client that drives a worker process (Worker), and what a grader
gets inside it (Context: run the solution, record checks). Standard library only at import time."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
GUARD_DIR = HERE.parent / "support" / "offline_guard"
WORKER = HERE / "worker.py"
KILLED = -9


def worker_env(scratch: Path) -> dict:
    """What support.harness.isolated_env gives a child (the offline guard first on PYTHONPATH, caches in scratch), plus:
    CUDA hidden (grading is on CPU, the same on every machine), one math thread per process, no tokenizer threads
    across forks."""
    env = {key: value for key, value in os.environ.items()
           if not key.startswith(("HF_", "TRANSFORMERS_", "PYTEST_", "SMOKE_", "COMPOSER_", "RUN_NAME"))}
    cache = scratch / "cache"
    env.update({
        "PYTHONPATH": os.pathsep.join([str(GUARD_DIR), env.get("PYTHONPATH", "")]).rstrip(os.pathsep),
        "OFFLINE_GUARD_LOG": str(scratch / "network-attempts.log"),
        "HOME": str(scratch / "home"), "TMPDIR": str(scratch / "tmp"),
        "HF_HOME": str(cache / "hf"), "XDG_CACHE_HOME": str(cache / "xdg"), "TORCH_HOME": str(cache / "torch"),
        "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton"),
        "MPLCONFIGDIR": str(cache / "matplotlib"),
        "PYTHONDONTWRITEBYTECODE": "1", "PYTHONUNBUFFERED": "1",
        "CUDA_VISIBLE_DEVICES": "", "OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
        "PATH": os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")]),
    })
    return env


# ------------------------------------------------------------------------------------------- the client side

class Worker:
    """One grading worker process per skill (tests/agent_tasks/worker.py). ``submit`` queues a grading and returns
    at once, so two workers (one per skill) grade in parallel; ``result`` waits for one."""

    def __init__(self, skill: str, scratch: Path, python: str = sys.executable):
        self.skill, self.scratch = skill, scratch
        for folder in ("home", "tmp"):
            (scratch / folder).mkdir(parents=True, exist_ok=True)
        self.log = scratch / "worker.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen([python, str(WORKER), skill, str(scratch)], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=log, text=True, env=worker_env(scratch),
                                            cwd=scratch)
        self.replies: dict[int, dict] = {}
        self.lock = threading.Condition()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            reply = json.loads(line)
            with self.lock:
                self.replies[reply["id"]] = reply
                self.lock.notify_all()
        with self.lock:
            self.replies[-1] = {"error": f"the {self.skill} worker exited; log: {self.tail()}"}
            self.lock.notify_all()

    def tail(self, chars: int = 3000) -> str:
        return self.log.read_text(errors="replace")[-chars:] if self.log.exists() else ""

    def submit(self, task: str, solution: Path) -> int:
        with self.lock:
            self.next_id += 1
            request_id = self.next_id
        self.process.stdin.write(json.dumps({"id": request_id, "task": task, "solution": str(solution)}) + "\n")
        self.process.stdin.flush()
        return request_id

    def result(self, request_id: int, timeout: float = 900) -> list[dict]:
        """The checks of a grading (its runs, with seconds and optimizer steps, in ``self.replies[request_id]``)."""
        with self.lock:
            if not self.lock.wait_for(lambda: request_id in self.replies or -1 in self.replies, timeout):
                raise TimeoutError(f"no grading result after {timeout} s; worker log: {self.tail()}")
            reply = self.replies.get(request_id, self.replies.get(-1))
        if "error" in reply:
            raise RuntimeError(reply["error"])
        return reply["checks"]

    def grade(self, task: str, solution: Path) -> list[dict]:
        return self.result(self.submit(task, solution))

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.stdin.close()
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def failed(checks: list[dict]) -> list[dict]:
    return [check for check in checks if check["ok"] is False]


def passed(checks: list[dict]) -> bool:
    return all(check["ok"] is True for check in checks)


# ------------------------------------------------------------------------------------------- the grader side

def tree_state(root: Path) -> dict[str, tuple]:
    """Every file and link under ``root`` with size, mtime and link target; folders by name."""
    state: dict[str, tuple] = {}
    for folder, dirs, files in os.walk(root):
        state.update({os.path.join(folder, name): ("folder",) for name in dirs})
        for name in files:
            path = os.path.join(folder, name)
            stat = os.lstat(path)
            state[path] = (stat.st_size, stat.st_mtime_ns, os.readlink(path) if os.path.islink(path) else None)
    return state


ENVIRONMENT_WRITE = re.compile(r"\b(environ|putenv)\b")


@dataclass
class Run:
    label: str
    code: int
    timed_out: bool
    seconds: float
    steps: int | None  # optimizer steps the process took (None when it was killed before reporting)
    stdout: str
    stderr: str
    network: list[str] = field(default_factory=list)
    strays: list[str] = field(default_factory=list)  # files it wrote into its working directory
    targets: list[int] | None = None  # with watch_target: [trained targets equal to it, trained targets]

    @property
    def ok(self) -> bool:
        return self.code == 0 and not self.timed_out

    @property
    def killed(self) -> bool:
        return self.code == KILLED and not self.timed_out

    def error(self) -> str:
        """One line: the exception the run ended with, or how it ended."""
        if self.timed_out:
            return f"{self.label}: stopped after {self.seconds} s (timeout, or its peer rank failed)"
        lines = [line.strip() for line in self.stderr.splitlines() if line.strip()]
        first = next((index for index in range(len(lines) - 1, -1, -1)
                      if re.match(r"^[\w.]+(Error|Exception|Exit)\b", lines[index])), max(len(lines) - 1, 0))
        return f"{self.label}: exit {self.code}: {' '.join(lines[first:first + 3])[:400]}"  # the message and its sequel


class Context:
    """What ``task.grade(ctx)`` works with: a fresh copy of the fixture in ``ctx.data``, ``ctx.run`` to launch the
    solution as ``python solution.py --data DATA --out OUT`` (a fork of the worker; killable at an optimizer step
    or when a file is opened for writing), and ``ctx.check`` to record results. Checks every task shares are added
    after the grader: no network attempts, the data folder unchanged, nothing written outside ``--out``."""

    def __init__(self, task, solution: Path, fixture_data: Path, work: Path, spawn, spawn_light):
        self.task, self.solution, self.work = task, solution.resolve(), work
        work.mkdir(parents=True)
        self.data = work / "data"
        shutil.copytree(fixture_data, self.data, symlinks=True)
        self.data_before = tree_state(self.data)
        source = self.solution.read_text(encoding="utf-8") if self.solution.is_file() else ""
        self.light = bool(ENVIRONMENT_WRITE.search(source))  # runs from the torch-only zygote (worker.py)
        self._spawn = spawn_light if self.light else spawn
        self.env = dict(os.environ)
        for name in ("home", "tmp", "hf"):
            (work / name).mkdir()
        self.env.update(HOME=str(work / "home"), TMPDIR=str(work / "tmp"), HF_HOME=str(work / "hf"))
        self.checks: list[dict] = []
        self.runs: list[Run] = []

    # ---- running the solution

    def run(self, out: Path, *, label: str | None = None, extra_args: tuple = (), kill_after_steps: int | None = None,
            kill_on_open: str | None = None, ranks: list[dict] | None = None, timeout: float = 240,
            watch_target: int | None = None):
        """Launch the solution once (or once per rank, each with its environment additions); returns a Run (a list
        of Runs with ``ranks``). The working directory is ``<out>.cwd``, empty at first and the same on relaunch."""
        cwd = out.with_name(out.name + ".cwd")
        cwd.mkdir(exist_ok=True)
        before = tree_state(cwd)
        index = len(self.runs)
        log = self.work / f"run-{index}"
        request = {"solution": str(self.solution), "argv": ["--data", str(self.data), "--out", str(out), *extra_args],
                   "cwd": str(cwd), "env": {**self.env, "OFFLINE_GUARD_LOG": f"{log}.network"},
                   "stdout": f"{log}.stdout", "stderr": f"{log}.stderr", "probe": f"{log}.probe",
                   "kill_after_steps": kill_after_steps, "kill_on_open": kill_on_open, "timeout": timeout,
                   "watch_target": watch_target,
                   "ranks": ranks}
        results = self._spawn(request)
        network_log = Path(f"{log}.network")
        network = network_log.read_text().splitlines() if network_log.exists() else []
        strays = sorted(path for path, state in tree_state(cwd).items() if before.get(path) != state)
        runs = []
        for rank, result in enumerate(results):
            name = label or f"launch {index + 1}"
            runs.append(Run(f"{name} rank {rank}" if ranks else name, result["code"], result["timed_out"],
                            result["seconds"], result["steps"], Path(result["stdout"]).read_text(errors="replace"),
                            Path(result["stderr"]).read_text(errors="replace"), network, strays,
                            result.get("targets")))
        self.runs.extend(runs)
        return runs if ranks else runs[0]

    # ---- recording checks

    def check(self, name: str, ok: bool | None, detail: str = "") -> bool:
        """Record a check (``ok=None``: not checked, because something it depends on failed). A second check of
        the same name merges into the first: it passes only if both do."""
        for existing in self.checks:
            if existing["name"] == name:
                if existing["ok"] is not False and ok is not None:
                    existing["ok"] = ok
                existing["detail"] = "; ".join(part for part in (existing["detail"], detail) if part)
                return bool(ok)
        self.checks.append({"name": name, "ok": ok, "detail": detail})
        return bool(ok)

    def ran(self, run: Run, name: str = "exit_zero") -> bool:
        """The run ended with exit 0 (a check named ``name``)."""
        return self.check(name, run.ok, "" if run.ok else run.error())

    def skip(self, *names: str, because: str = "an earlier check failed") -> None:
        for name in names:
            self.check(name, None, f"not checked: {because}")

    def read_json(self, path: Path, name: str) -> dict | None:
        """The JSON file the solution had to write, or None after recording the failed check ``name``."""
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as error:
            self.check(name, False, f"cannot read {path.name}: {error}")
            return None

    # ---- the whole grading

    def grade(self) -> list[dict]:
        try:
            self.task.grade(self)
        except Exception:  # noqa: BLE001 - a grader that trips over the solution's output reports it, and fails
            self.check("grader_completed", False, traceback.format_exc(limit=3)[-1500:])
        attempts = sorted({line.split(" ", 1)[-1] for run in self.runs for line in run.network})
        self.check("no_network_attempts", not attempts, ", ".join(attempts[:5]))
        changed = sorted(os.path.relpath(path, self.data) for path, state in tree_state(self.data).items()
                         if self.data_before.get(path) != state)
        changed += [f"{os.path.relpath(path, self.data)} (deleted)" for path in self.data_before
                    if not os.path.lexists(path)]
        self.check("data_untouched", not changed, ", ".join(changed[:5]))
        strays = sorted({os.path.relpath(path, self.work) for run in self.runs for path in run.strays})
        self.check("writes_only_under_out", not strays, ", ".join(strays[:5]))
        return self.checks
