"""The grading worker: one process per skill that imports that skill's libraries once and grades solutions,
forking a child per solution run (harness.Worker starts and drives it).

Usage: python tests/agent_tasks/worker.py SKILL SCRATCH. Reads one JSON request per line on stdin,
``{"id": n, "task": "<task>", "solution": "<path>"}``, and answers one JSON line ``{"id": n, "checks": [...]}``
(or ``{"id": n, "error": "<traceback>"}`` when the grader itself broke).

Process tree: the worker imports torch, forks the *light zygote*, then imports the rest of the stack. Each grading
runs in a forked *grading child* (task.grade with a harness.Context); each solution run is a fork of that child,
or of the light zygote when the solution touches ``os.environ``: libraries read variables such as HF_HUB_OFFLINE
when they are imported, so a solution that sets them must find them not imported yet, as in a fresh interpreter.
A run child resets what a fresh interpreter would have fresh (argv, path, cwd, environment, RNG seeds, stdio) and
runs the solution with runpy as ``__main__``.
"""

from __future__ import annotations

import gc
import json
import os
import random
import runpy
import signal
import sys
import time
import traceback
from pathlib import Path

sys.dont_write_bytecode = True
HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # tests/: `import agent_tasks`

PRELOAD = {
    "transformers-training": [
        "numpy", "datasets", "evaluate", "accelerate", "tokenizers", "safetensors.torch", "transformers",
        "transformers.trainer", "transformers.trainer_seq2seq", "transformers.trainer_utils",
        "transformers.data.data_collator", "transformers.models.bert.modeling_bert",
        "transformers.models.gpt2.modeling_gpt2", "transformers.models.t5.modeling_t5"],
    "composer-training": [
        "numpy", "torchmetrics", "composer", "composer.trainer", "composer.models", "composer.core",
        "composer.utils.dist", "composer.callbacks", "composer.algorithms"],
}


# ---------------------------------------------------------------------------------------------- one solution run

def _child(request: dict) -> None:
    """In the forked child: become the solution's own process, run it, leave a probe file, exit."""
    import torch
    from torch.optim.optimizer import register_optimizer_step_post_hook

    out = os.open(request["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    err = os.open(request["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(out, 1)
    os.dup2(err, 2)
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)  # the worker's stdin carries its requests
    os.environ.clear()
    os.environ.update(request["env"])
    os.chdir(request["cwd"])
    solution = request["solution"]
    sys.argv = [solution, *request["argv"]]
    sys.path[0] = str(Path(solution).parent)
    torch.seed()  # a fresh interpreter starts torch, numpy and random from nondeterministic seeds
    random.seed()
    if "numpy" in sys.modules:
        sys.modules["numpy"].random.seed()

    steps = [0]
    kill_after = request.get("kill_after_steps")

    def count(optimizer, args, kwargs):  # torch's global hook: every optimizer's step, in every library
        groups = optimizer.param_groups
        if all(float(group.get("lr", 1)) == 0 for group in groups) and all(
                param.grad is None or not param.grad.any() for group in groups for param in group["params"]):
            return  # not training: torch.distributed.checkpoint's _init_optim_state before loading optimizer state
        steps[0] += 1
        if steps[0] == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)

    register_optimizer_step_post_hook(count)
    targets = watch_training_targets(torch, request.get("watch_target"))
    if request.get("kill_on_open"):
        suffix = request["kill_on_open"]

        def kill_on_open(event, args):  # a real SIGKILL at the moment the file is opened for writing
            if event == "open" and isinstance(args[0], str) and args[0].endswith(suffix) and \
                    any(flag in str(args[1]) for flag in "wax"):
                os.kill(os.getpid(), signal.SIGKILL)

        sys.addaudithook(kill_on_open)
    code = 0
    try:
        runpy.run_path(solution, run_name="__main__")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        if exc.code is not None and not isinstance(exc.code, int):
            print(exc.code, file=sys.stderr)
    except BaseException:  # noqa: BLE001 - the solution's own error, reported as a fresh process would
        traceback.print_exc()
        code = 1
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    with open(request["probe"], "w", encoding="utf-8") as probe:
        json.dump({"steps": steps[0], "targets": targets}, probe)
    os._exit(code)  # no atexit handlers: those registered before the fork belong to the worker


def watch_training_targets(torch, token_id: int | None) -> list[int]:
    """[how many training targets equal token_id, how many targets were trained]: every cross-entropy with a gradient
    (the Transformers losses and most hand-written loops call torch.nn.functional.cross_entropy at call time)."""
    counts = [0, 0]
    if token_id is None:
        return counts
    functional = torch.nn.functional
    original = functional.cross_entropy

    def cross_entropy(input, target, *args, **kwargs):  # noqa: A002 - torch's own parameter names
        if torch.is_grad_enabled() and getattr(input, "requires_grad", False) and target.dtype == torch.long:
            ignore = kwargs.get("ignore_index", -100)
            counts[0] += int((target == token_id).sum())
            counts[1] += int((target != ignore).sum())
        return original(input, target, *args, **kwargs)

    functional.cross_entropy = cross_entropy
    return counts


def spawn(request: dict) -> list[dict]:
    """Fork one child per rank (``request["ranks"]``: environment additions per rank, or None for one process),
    wait for all with a deadline, and report each: exit code or signal, seconds, optimizer steps."""
    ranks = request.get("ranks") or [{}]
    sys.stdout.flush()
    sys.stderr.flush()
    children = []
    for index, extra in enumerate(ranks):
        rank_request = dict(request, env={**request["env"], **extra},
                            **{key: f"{request[key]}.{index}" if len(ranks) > 1 else request[key]
                               for key in ("stdout", "stderr", "probe")})
        pid = os.fork()
        if pid == 0:
            try:
                _child(rank_request)
            except BaseException:  # noqa: BLE001 - the worker's own failure to set the run up
                with open(rank_request["stderr"], "a") as stderr:
                    stderr.write("agent_tasks worker: the run could not start\n" + traceback.format_exc())
            finally:
                os._exit(70)
        children.append((pid, rank_request))
    start, deadline = time.monotonic(), time.monotonic() + request["timeout"]
    status: dict[int, int] = {}
    stopped: set[int] = set()  # killed by the worker: past the deadline, or waiting on a failed rank
    failed_at = None
    while len(status) < len(children):
        for pid, _ in children:
            if pid not in status:
                done, code = os.waitpid(pid, os.WNOHANG)
                if done:
                    status[pid] = code
                    if os.waitstatus_to_exitcode(code) != 0 and failed_at is None:
                        failed_at = time.monotonic()
        now = time.monotonic()
        # past the deadline, or a rank failed 20 s ago and the others still wait for it in a collective
        if len(status) < len(children) and (now > deadline or (failed_at and now - failed_at > 20)):
            for pid, _ in children:
                if pid not in status:
                    os.kill(pid, signal.SIGKILL)
                    status[pid] = os.waitpid(pid, 0)[1]
                    stopped.add(pid)
        time.sleep(0.02)
    seconds = round(time.monotonic() - start, 2)
    results = []
    for pid, rank_request in children:
        exit_code = os.waitstatus_to_exitcode(status[pid])
        probe = Path(rank_request["probe"])
        report = json.loads(probe.read_text()) if probe.exists() else {}
        results.append({"code": exit_code, "timed_out": pid in stopped, "seconds": seconds,
                        "steps": report.get("steps"), "targets": report.get("targets"),
                        "stdout": rank_request["stdout"], "stderr": rank_request["stderr"]})
    return results


def zygote_loop(requests: int, replies: int) -> None:
    """The light zygote: only torch imported; forks the runs of solutions that set environment variables."""
    reader, writer = os.fdopen(requests, "r"), os.fdopen(replies, "w")
    for line in reader:
        writer.write(json.dumps(spawn(json.loads(line))) + "\n")
        writer.flush()
    os._exit(0)


class Zygote:
    def __init__(self):
        zygote_reads, parent_writes = os.pipe()
        parent_reads, zygote_writes = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.close(parent_writes)
                os.close(parent_reads)
                zygote_loop(zygote_reads, zygote_writes)
            except BaseException:  # noqa: BLE001 - to the worker's log; the grading that asked then fails
                traceback.print_exc()
            finally:
                os._exit(1)
        os.close(zygote_reads)
        os.close(zygote_writes)
        self.pid = pid
        self.writer, self.reader = os.fdopen(parent_writes, "w"), os.fdopen(parent_reads, "r")

    def spawn(self, request: dict) -> list[dict]:
        self.writer.write(json.dumps(request) + "\n")
        self.writer.flush()
        line = self.reader.readline()
        if not line:
            raise RuntimeError("the light zygote died")
        return json.loads(line)


# ---------------------------------------------------------------------------------------------- one grading

def _fork_and_wait(function, timeout: float) -> int:
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            function()
            code = 0
        except BaseException:  # noqa: BLE001 - printed to the worker's log; the caller reports the failure
            traceback.print_exc()
        finally:
            sys.stderr.flush()
            os._exit(code)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return -signal.SIGKILL
        time.sleep(0.02)


def fixture(task, scratch: Path) -> Path:
    """The task's fixture, made once per worker in a forked child (the worker itself computes nothing)."""
    folder = scratch / "fixtures" / task.name
    if not (folder / ".complete").exists():
        def make():
            import shutil

            shutil.rmtree(folder, ignore_errors=True)
            (folder / "data").mkdir(parents=True)
            task.make_fixture(folder / "data")
            (folder / ".complete").write_text("")

        code = _fork_and_wait(make, timeout=300)
        if code != 0:
            raise RuntimeError(f"the fixture of {task.name} failed (exit {code}); see the worker log")
    return folder / "data"


def grade(request: dict, scratch: Path, zygote: Zygote) -> dict:
    from agent_tasks import harness, load_task

    task = load_task(request["task"])
    data = fixture(task, scratch)
    reply_path = scratch / f"reply-{request['id']}.json"

    def run_grader():
        context = harness.Context(task, Path(request["solution"]), data, scratch / f"grading-{request['id']}",
                                  spawn=spawn, spawn_light=zygote.spawn)
        checks = context.grade()
        runs = [{"label": run.label, "code": run.code, "seconds": run.seconds, "steps": run.steps}
                for run in context.runs]
        reply_path.write_text(json.dumps({"checks": checks, "runs": runs}))

    code = _fork_and_wait(run_grader, timeout=request.get("timeout", 900))
    if code != 0 or not reply_path.exists():
        return {"error": f"the grader of {task.name} crashed (exit {code}); see {scratch / 'worker.log'}"}
    return json.loads(reply_path.read_text())


def serve(skill: str, scratch: Path) -> None:
    replies = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever a library prints goes to the log, not into the replies
    import importlib

    importlib.import_module("torch")
    gc.freeze()
    zygote = Zygote()
    for module in PRELOAD[skill]:
        importlib.import_module(module)
    if skill == "composer-training":
        # Every Trainer(...) reports the CPU model, which py-cpuinfo finds with a subprocess taking about a second;
        # Composer caches the answer (lru_cache), so ask once here instead of once per run.
        importlib.import_module("composer.utils.collect_env").get_cpu_model()
    gc.freeze()  # the imported stack stays out of every child's garbage collections (and its pages shared)
    for line in sys.stdin:
        request = json.loads(line)
        try:
            reply = grade(request, scratch, zygote)
        except Exception:  # noqa: BLE001 - a broken grader is reported, the worker goes on
            reply = {"error": traceback.format_exc()}
        replies.write(json.dumps({"id": request["id"], **reply}) + "\n")
        replies.flush()
    zygote.writer.close()
    os.waitpid(zygote.pid, 0)


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    serve(sys.argv[1], Path(sys.argv[2]).resolve())
