#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "mosaicml==0.32.1",
#     "torch==2.7.0",
#     "torchvision==0.22.0",
# ]
# ///
"""Launch a tiny Composer DDP run with `composer -n N` and with `torchrun`, then check every rank's result.

On CPU: 2 ranks, gloo backend, rendezvous on 127.0.0.1. On GPU: one rank per GPU with NCCL and amp_bf16 (with a
single GPU only 1 rank can run: NCCL takes one GPU per rank). The script re-runs itself as the worker of each
launch (a ComposerClassifier on a Linear layer, 3 batches, a checkpoint) and checks, per launcher: every rank ran,
the world size and backend, the global sample count and disjoint sampler shards, identical final weights on all
ranks, that only rank 0 wrote the checkpoint, and that stdout and stderr of every rank were captured (`composer`
keeps only local rank 0's output unless given --stdout and --stderr file patterns, which this script passes).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from smoke_contract import EXIT_MISSING_DEPENDENCY, SmokeError, build_parser, log, positive_int, run_main

SCRIPT = "distributed_smoke.py"
LAUNCHERS = ("composer", "torchrun")
DISTRIBUTIONS = ["mosaicml", "torch"]
BATCH_SIZE = 4  # per rank
BATCHES = 3  # one epoch: the dataset holds BATCHES * BATCH_SIZE samples per rank


def build_cli() -> argparse.ArgumentParser:
    parser = build_parser(SCRIPT, __doc__.split("\n\n")[0],
                          f"python scripts/{SCRIPT} --launcher all --device cpu --json")
    parser.add_argument("--launcher", choices=["all", *LAUNCHERS], default="all",
                        help="which launcher to prove (default: all)")
    parser.add_argument("--timeout", type=positive_int, default=300,
                        help="seconds one launch may take before it is killed (default: 300)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)  # set by the launches
    return parser


# ---------------------------------------------------------------- worker side (runs once per rank)

def worker_train(args) -> None:
    """One rank of the DDP run. Composer reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR... set by the launcher."""
    import torch
    from composer import Trainer
    from composer.models import ComposerClassifier
    from composer.utils import dist
    from torch.utils.data import DataLoader

    rank, world_size = dist.get_global_rank(), dist.get_world_size()
    say(rank, world_size)
    generator = torch.Generator().manual_seed(args.seed)
    features = torch.randn(BATCHES * BATCH_SIZE * world_size, 8, generator=generator)
    samples = [(index, features[index], index % 3) for index in range(len(features))]
    consumed: list[int] = []

    def collate(batch):
        consumed.extend(index for index, _, _ in batch)
        return torch.stack([x for _, x, _ in batch]), torch.tensor([y for _, _, y in batch])

    # dist.get_sampler gives each rank its own shard; a plain DataLoader would feed every rank every sample.
    sampler = dist.get_sampler(samples, shuffle=True, seed=args.seed)
    loader = DataLoader(samples, batch_size=BATCH_SIZE, sampler=sampler, collate_fn=collate)
    torch.manual_seed(args.seed)
    model = ComposerClassifier(module=torch.nn.Linear(8, 3), num_classes=3)
    initial = weights_digest(model)
    gpu = args.device == "gpu"
    trainer = Trainer(
        model=model,
        train_dataloader=loader,
        optimizers=torch.optim.SGD(model.parameters(), lr=0.5),
        max_duration=f"{BATCHES}ba",
        device="gpu" if gpu else "cpu",
        precision="amp_bf16" if gpu else "fp32",
        save_folder=str(args.output_dir / "checkpoints"),
        save_interval=f"{BATCHES}ba",
        progress_bar=False,
        seed=args.seed,
    )
    trainer.fit()
    timestamp = trainer.state.timestamp
    write_result(args.output_dir, rank, {
        "world_size": world_size,
        "backend": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
        "batches": int(timestamp.batch), "samples": int(timestamp.sample),
        "consumed": consumed, "initial": initial, "final": weights_digest(model),
    })
    trainer.close()


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
    (directory / f"rank{rank}.json").write_text(json.dumps({"rank": rank, "pid": os.getpid(), **result}))


# ---------------------------------------------------------------- launcher side

def console_script(name: str, module: str) -> list[str]:
    """The launcher installed next to this Python (what a user types), else the same code through -m."""
    installed = Path(sys.executable).parent / name
    return [str(installed)] if installed.exists() else [sys.executable, "-m", module]


def worker_command(directory: Path, args) -> list[str]:
    return [str(Path(__file__).resolve()), "--worker", "--output-dir", str(directory),
            "--device", args.device_resolved, "--seed", str(args.seed)]


def launch(run, name: str, command: list[str], directory: Path) -> tuple[int, float, str, str]:
    """Run one launcher in its own process group; returns (exit code, seconds, stdout, stderr)."""
    directory.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ, MASTER_ADDR="127.0.0.1", PYTHONUNBUFFERED="1")
    env.setdefault("OMP_NUM_THREADS", "1")  # torchrun sets this too; N ranks x all cores oversubscribes a CPU
    stdout_path, stderr_path = directory / "launcher.stdout.txt", directory / "launcher.stderr.txt"
    started, children_before = time.perf_counter(), children_cpu_seconds()
    with open(stdout_path, "w") as stdout, open(stderr_path, "w") as stderr:
        process = subprocess.Popen(command, cwd=directory, env=env, stdout=stdout, stderr=stderr,
                                   stdin=subprocess.DEVNULL, start_new_session=True)
        try:
            code = process.wait(timeout=run.args.timeout)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise SmokeError(f"{name}: launch did not finish within --timeout {run.args.timeout}s "
                             f"(logs in {directory})") from None
    seconds = time.perf_counter() - started
    print(f"{name}: exit {code} in {seconds:.1f}s wall, {children_cpu_seconds() - children_before:.1f}s CPU "
          f"(launcher and ranks)", file=sys.stderr, flush=True)
    return code, seconds, stdout_path.read_text(errors="replace"), stderr_path.read_text(errors="replace")


def read_results(directory: Path) -> dict[int, dict]:
    return {result["rank"]: result for result in
            (json.loads(path.read_text()) for path in sorted(directory.glob("rank*.json")))}


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
    if not run.check(f"{name}.launch", code == 0, detail if code == 0 else f"{detail}; {first_error(stderr)}"):
        raise SmokeError(f"{name}: the launch failed with exit code {code}: {first_error(stderr)}")


def check_training(run, name: str, directory: Path, world_size: int, stdout: str, stderr: str) -> None:
    results = read_results(directory)
    run.check_equal(f"{name}.ranks", sorted(results), list(range(world_size)))
    if not results:
        return
    backend = "nccl" if run.device == "gpu" else "gloo"
    seen = sorted({(r["world_size"], r["backend"]) for r in results.values()}, key=str)
    # A single rank may run without a process group; two or more must share one on the expected backend.
    allowed = [[(world_size, backend)]] + ([[(1, None)]] if world_size == 1 else [])
    run.check(f"{name}.world_size", seen in allowed, f"(world size, backend) per rank: {seen}, expected {allowed[0]}")
    global_samples = BATCHES * BATCH_SIZE * world_size
    run.check_equal(f"{name}.global_samples",
                    sorted({(r["batches"], r["samples"]) for r in results.values()}), [(BATCHES, global_samples)])
    consumed = [index for r in results.values() for index in r["consumed"]]
    run.check(f"{name}.sampler_shards", sorted(consumed) == list(range(global_samples)),
              f"{len(consumed)} samples read by {len(results)} ranks, {len(set(consumed))} distinct "
              f"(expected each of {global_samples} exactly once)")
    finals = {r["final"] for r in results.values()}
    initials = {r["initial"] for r in results.values()}
    run.check(f"{name}.same_weights", len(finals) == 1 and finals.isdisjoint(initials),
              f"final weight digests {sorted(finals)}; trained away from {sorted(initials)}")
    saved = sorted(path.name for path in (directory / "checkpoints").glob("*"))
    run.check(f"{name}.checkpoint_rank0_only",
              any(n.endswith("-rank0.pt") and not n.startswith("latest") for n in saved)
              and not any("rank0" not in n for n in saved), f"checkpoint folder holds {saved}")
    rank_logs = "".join(path.read_text(errors="replace") for path in sorted(directory.glob("rank*.std*.txt")))
    captured = stdout + stderr + rank_logs
    missing = [marker(rank, world_size, stream) for rank in range(world_size) for stream in ("stdout", "stderr")
               if marker(rank, world_size, stream) not in captured]
    run.check(f"{name}.output_every_rank", not missing,
              f"missing: {missing}" if missing else f"stdout and stderr of all {world_size} ranks captured")


def body(run) -> None:
    args = run.args
    # Only auto and gpu need torch here to look for CUDA; the ranks import it anyway.
    run.device = args.device_resolved = "cpu" if args.device == "cpu" else run.resolve_device()
    import importlib.util

    if importlib.util.find_spec("composer") is None:
        raise SmokeError("missing dependency 'composer'; fix: pip install mosaicml==0.32.1", EXIT_MISSING_DEPENDENCY)
    if run.device == "gpu":
        import torch

        world_size = torch.cuda.device_count()
        log(f"plan: {world_size} rank(s) with NCCL and amp_bf16, one per GPU" + (
            "; with 1 GPU the 2-rank checks need --device cpu (NCCL runs one rank per GPU)" if world_size == 1 else ""))
    else:
        world_size = 2
        log("plan: 2 ranks on CPU with the gloo backend over 127.0.0.1")
    chosen = LAUNCHERS if args.launcher == "all" else (args.launcher,)
    for name in chosen:
        directory = run.output_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        if name == "composer":
            pattern = str(directory).replace("{", "{{").replace("}", "}}")
            # Without --stdout and --stderr the launcher throws away what ranks other than 0 print.
            command = [*console_script("composer", "composer.cli.launcher"), "-n", str(world_size),
                       "--stdout", f"{pattern}/rank{{rank}}.stdout.txt", "--stderr", f"{pattern}/rank{{rank}}.stderr.txt",
                       *worker_command(directory, args)]
        else:
            command = [*console_script("torchrun", "torch.distributed.run"), "--standalone",
                       "--nproc_per_node", str(world_size), *worker_command(directory, args)]
        code, seconds, stdout, stderr = launch(run, name, command, directory)
        check_launch(run, name, code, seconds, stderr, command)
        check_training(run, name, directory, world_size, stdout, stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_cli()
    argv = sys.argv[1:] if argv is None else argv
    if "--worker" in argv:  # one rank of a launch: plain errors, the launcher side reports them
        args = parser.parse_args(argv)
        args.output_dir = args.output_dir.resolve()
        worker_train(args)
        return 0
    return run_main(SCRIPT, parser, body, DISTRIBUTIONS, argv)


if __name__ == "__main__":
    sys.exit(main())
