"""What both skills' scripts/distributed_smoke.py do the same way: start a launcher in a session of its own and stop
every process of it, recognise the ranks of a launch this script started, and check what the ranks wrote.

Each rank re-runs distributed_smoke.py with --worker and writes rank<N>.json into the launch's folder; the launcher
side reads those files and checks them. What differs between the skills (the training a rank does, the launchers'
command lines, the checks only one library needs) stays in each distributed_smoke.py.

This file is copied verbatim into each skill's ``scripts/`` folder from ``skill_common/`` at the bundle root (``make
sync``; tests/test_shared_source.py fails when a copy drifts).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable

from smoke_contract import EXIT_USAGE, SmokeError, build_parser, log, positive_int

LAUNCH_TOKEN_ENV = "DISTRIBUTED_SMOKE_LAUNCH_TOKEN"  # set in every process of a launch; --worker needs it
LAUNCH_TOKEN_FILE = ".launch-token"  # the same token, written by the launch into its folder
STOP_GRACE_SECONDS = 5  # between TERM and KILL when a launch is stopped


def launch_parser(script: str, doc: str, launchers: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = build_parser(script, doc.split("\n\n")[0], f"python scripts/{script} --launcher all --device cpu --json")
    parser.add_argument("--launcher", choices=["all", *launchers], default="all",
                        help="which launcher to prove (default: all)")
    parser.add_argument("--timeout", type=positive_int, default=300,
                        help="seconds one launch may take before it is killed (default: 300)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # set by the launches
    return parser


def run_rank_and_exit_if_launched(parser: argparse.ArgumentParser, argv: list[str] | None,
                                   worker_train: Callable[[argparse.Namespace], None]) -> None:
    """When this process is one rank of a launch this script started, run ``worker_train`` outside the contract (plain
    errors: the launcher side reports them) and exit 0; otherwise return, having run nothing."""
    worker_args = launched_worker(parser, sys.argv[1:] if argv is None else argv)
    if worker_args is not None:
        worker_train(worker_args)
        sys.exit(0)


def launched_worker(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace | None:
    """The arguments of one rank of a launch this script started, else None: the launch's token must be both in the
    environment and in the token file the launch wrote into the worker's --output-dir."""
    token = os.environ.get(LAUNCH_TOKEN_ENV)
    if "--worker" not in argv or not token:
        return None
    try:
        args = parser.parse_args(argv)
        launched = args.output_dir is not None and (args.output_dir / LAUNCH_TOKEN_FILE).read_text() == token
    except (SmokeError, OSError, ValueError):
        return None
    if not launched:
        return None
    args.output_dir = args.output_dir.resolve()
    return args


def refuse_worker(args: argparse.Namespace) -> None:
    if args.worker:
        raise SmokeError("--worker is internal: it runs one rank of a launch this script starts; run the script "
                         "without it", EXIT_USAGE)


# ---------------------------------------------------------------- worker side (runs once per rank)

def say(rank: int, world_size: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        print(marker(rank, world_size, "stdout" if stream is sys.stdout else "stderr"), file=stream, flush=True)


def marker(rank: int, world_size: int, stream: str) -> str:
    return f"distributed_smoke rank {rank}/{world_size} on {stream}"


def weights_digest(model) -> str:
    digest = hashlib.sha256()
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().float().cpu().numpy().tobytes())
    return digest.hexdigest()[:16]


def write_result(directory: Path, rank: int, result: dict) -> None:
    with open(directory / f"rank{rank}.json", "x") as file:  # "x": never over a file that is already there
        file.write(json.dumps({"rank": rank, "pid": os.getpid(), **result}))


# ---------------------------------------------------------------- launcher side

def resolve_launch_device(run) -> None:
    # Only auto and gpu need torch here to look for CUDA; the ranks import it anyway.
    run.device = run.args.device_resolved = "cpu" if run.args.device == "cpu" else run.resolve_device()


def planned_world_size(run, gpu_precision: str) -> int:
    """One rank per GPU with NCCL (NCCL takes one GPU per rank), else 2 ranks on CPU with gloo; logged as the plan."""
    if run.device != "gpu":
        log("plan: 2 ranks on CPU with the gloo backend over 127.0.0.1")
        return 2
    import torch

    world_size = torch.cuda.device_count()
    log(f"plan: {world_size} rank(s) with NCCL and {gpu_precision}, one per GPU" + (
        "; with 1 GPU the 2-rank checks need --device cpu (NCCL runs one rank per GPU)" if world_size == 1 else ""))
    return world_size


def console_script(name: str, module: str) -> list[str]:
    """The launcher installed next to this Python (what a user types), else the same code through -m."""
    installed = Path(sys.executable).parent / name
    return [str(installed)] if installed.exists() else [sys.executable, "-m", module]


def worker_command(script: str, directory: Path, args) -> list[str]:
    """``script`` (the distributed_smoke.py that launches) run as one rank, writing into ``directory``."""
    return [str(Path(script).resolve()), "--worker", "--output-dir", str(directory),
            "--device", args.device_resolved, "--seed", str(args.seed)]


def launch(run, name: str, command: list[str], directory: Path) -> tuple[int, float, str, str]:
    """Run one launcher in a session of its own; returns (exit code, seconds, stdout, stderr). However this returns
    or raises (a failure, --timeout, Ctrl-C), no process of the launch outlives it."""
    directory.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(16)
    (directory / LAUNCH_TOKEN_FILE).write_text(token)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", PYTHONUNBUFFERED="1", **{LAUNCH_TOKEN_ENV: token})
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun sets this too; N ranks x all cores oversubscribes a CPU
    # torch's TCPStore names the peer of every connection with getnameinfo; for its IPv4-mapped ::ffff:127.0.0.1,
    # which /etc/hosts does not list, glibc asks the DNS server. Zero resolver attempts: no query leaves the machine.
    env["RES_OPTIONS"] = f"{env.get('RES_OPTIONS', '')} attempts:0".strip()
    stdout_path, stderr_path = directory / "launcher.stdout.txt", directory / "launcher.stderr.txt"
    started, children_before = time.perf_counter(), children_cpu_seconds()
    with open(stdout_path, "w") as stdout, open(stderr_path, "w") as stderr:
        process = subprocess.Popen(command, cwd=directory, env=env, stdout=stdout, stderr=stderr,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = process.wait(timeout=run.args.timeout)
        except subprocess.TimeoutExpired:
            run.args.keep = True  # the error sends the user to these logs: a temporary output dir must stay
            raise SmokeError(f"{name}: launch did not finish within --timeout {run.args.timeout}s; the logs of the "
                             f"launcher and its ranks are kept in {directory}") from None
        finally:
            stop_launch(process, token)
    seconds = time.perf_counter() - started
    print(f"{name}: exit {code} in {seconds:.1f}s wall, {children_cpu_seconds() - children_before:.1f}s CPU "
          f"(launcher and ranks)", file=sys.stderr, flush=True)
    return code, seconds, stdout_path.read_text(errors="replace"), stderr_path.read_text(errors="replace")


def stop_launch(process: subprocess.Popen, token: str) -> None:
    """TERM the launcher's process group and every process that carries the launch's token (torchrun starts each
    rank in a session of its own, out of the group's reach), KILL what is left after a grace, and wait for it. The
    contract holds a second Ctrl-C while this runs."""
    def running() -> bool:
        return process.poll() is None or bool(launch_pids(token))

    for sent in (signal.SIGTERM, signal.SIGKILL):
        if not running():
            return
        with contextlib.suppress(ProcessLookupError):  # the launcher may end right now
            if process.poll() is None:  # until it is reaped, its pid is the group's id and no one else's
                os.killpg(process.pid, sent)
        for pid in launch_pids(token):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sent)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        while running() and time.monotonic() < deadline:
            time.sleep(0.1)


def launch_pids(token: str) -> list[int]:
    """Live processes started with this launch's token in their environment (Linux /proc; elsewhere the launcher's
    process group is all there is to stop). A zombie's environment reads empty: it is gone already."""
    marker = f"{LAUNCH_TOKEN_ENV}={token}".encode()
    pids = []
    with contextlib.suppress(OSError):
        for entry in os.scandir("/proc"):
            with contextlib.suppress(OSError):  # a process may end while it is read, or be another user's
                if entry.name.isdigit() and marker in Path(entry.path, "environ").read_bytes().split(b"\0"):
                    pids.append(int(entry.name))
    return pids


def children_cpu_seconds() -> float:
    try:
        import resource  # POSIX only
    except ImportError:
        return float("nan")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def first_error(text: str) -> str:
    """The first exception line a rank printed (e.g. '[rank1]: KeyError: ...'), else the last lines."""
    lines = text.splitlines()
    for line in lines:
        # torchrun's own ChildFailedError wraps the rank's failure: report the rank's line instead
        if re.search(r"\b\w*(Error|Exception|Interrupt): ", line) and "ChildFailedError" not in line:
            return line.strip()
    # A rank that died without a Python error (a signal): what the C++ runtime or Python printed before the abort,
    # then torchrun's summary, which names the rank, its exit code and the signal.
    native = [line.strip() for line in lines if re.search(r"terminate called|what\(\):|Fatal Python error", line)]
    summary = [line.strip() for line in lines if re.match(r"\s*(rank|exitcode|traceback)\s*:", line)]
    return " | ".join(native[:3] + summary or [line.strip() for line in text.strip().splitlines()[-3:]])


def check_launch(run, name: str, code: int, seconds: float, stderr: str, command: list[str]) -> None:
    shown = " ".join([Path(command[0]).name, *command[1:]])
    detail = f"exit {code} in {seconds:.1f}s: {shown}"
    if not run.check(f"{name}.launch", code == 0, detail if code == 0 else f"{detail}; {first_error(stderr)}",
                     actual=code, expected=0):
        raise SmokeError(f"{name}: the launch failed with exit code {code}: {first_error(stderr)}")


def read_results(directory: Path) -> dict[int, dict]:
    """rank -> what that rank wrote (write_result)."""
    return {result["rank"]: result for result in
            (json.loads(path.read_text()) for path in sorted(directory.glob("rank*.json")))}


def check_world(run, name: str, results: dict[int, dict], world_size: int) -> bool:
    """Every rank wrote its result, all in one world on the expected backend; False when no rank wrote one."""
    run.check_equal(f"{name}.ranks", sorted(results), list(range(world_size)))
    if not results:
        return False
    backend = "nccl" if run.device == "gpu" else "gloo"
    seen = sorted({(r["world_size"], r["backend"]) for r in results.values()}, key=str)
    # A single rank may run without a process group; two or more must share one on the expected backend.
    allowed = [[(world_size, backend)]] + ([[(1, None)]] if world_size == 1 else [])
    run.check(f"{name}.world_size", seen in allowed, f"(world size, backend) per rank: {seen}, expected {allowed[0]}",
              actual=seen, expected={"in": allowed})
    return True


def check_same_weights(run, name: str, results: dict[int, dict]) -> None:
    finals = {r["final"] for r in results.values()}
    initials = {r["initial"] for r in results.values()}
    run.check(f"{name}.same_weights", len(finals) == 1 and finals.isdisjoint(initials),
              f"final weight digests {sorted(finals)}; trained away from {sorted(initials)}",
              actual={"final_digests": len(finals), "finals_seen_at_start": sorted(finals & initials)},
              expected={"final_digests": 1, "finals_seen_at_start": []})


def check_output_every_rank(run, name: str, world_size: int, captured: str) -> None:
    """``captured``: all the launch printed and logged, where every rank must have said its marker on both streams."""
    missing = [marker(rank, world_size, stream) for rank in range(world_size) for stream in ("stdout", "stderr")
               if marker(rank, world_size, stream) not in captured]
    run.check(f"{name}.output_every_rank", not missing,
              f"missing: {missing}" if missing else f"stdout and stderr of all {world_size} ranks captured",
              actual=missing, expected=[])
