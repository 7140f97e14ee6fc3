#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "transformers==5.24.0",
#     "torch==2.7.0",
#     "accelerate==1.16.0",
#     "datasets==5.2.0",
#     "evaluate==0.4.6",
# ]
# ///
"""Launch a tiny Transformers Trainer DDP run with `torchrun` and `accelerate launch`, then check every rank.

On CPU: 2 ranks, gloo backend, rendezvous on 127.0.0.1. On GPU: one rank per GPU with NCCL and bf16 (with a single
GPU only 1 rank can run: NCCL takes one GPU per rank, and `accelerate launch --multi_gpu` needs 2 processes). The
script re-runs itself as the worker of each launch (a tiny random BertForSequenceClassification, 3 steps, a
checkpoint) and checks, per launcher: every rank ran, the world size and backend, the global sample count, identical
final weights, that the checkpoint was written once (each rank adds only its own rng_state_<rank>.pth), that the
output of every rank was captured, and the DDP loss trap: the logged loss of a *ForSequenceClassification model is
multiplied by the number of ranks (the gradient too) unless `model.accepts_loss_kwargs = False`; both are measured.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import random
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from smoke_contract import EXIT_MISSING_DEPENDENCY, EXIT_USAGE, SmokeError, build_parser, log, positive_int, run_main

SCRIPT = "distributed_smoke.py"
LAUNCHERS = ("torchrun", "accelerate")
LAUNCH_TOKEN_ENV = "DISTRIBUTED_SMOKE_LAUNCH_TOKEN"  # set in every process of a launch; --worker needs it
LAUNCH_TOKEN_FILE = ".launch-token"  # the same token, written by the launch into its folder
STOP_GRACE_SECONDS = 5  # between TERM and KILL when a launch is stopped
DISTRIBUTIONS = ["transformers", "torch", "accelerate"]
BATCH_SIZE = 8  # per rank; the dataset is one global batch, so every step reads every sample once
STEPS = 3


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
    """One rank: the Trainer finds RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR... set by the launcher."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

    gpu = args.device == "gpu"
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    generator = torch.Generator().manual_seed(args.seed)
    count = BATCH_SIZE * world_size
    input_ids = torch.randint(5, 64, (count, 8), generator=generator)
    labels = torch.randint(0, 2, (count,), generator=generator)
    samples = [{"idx": index, "input_ids": input_ids[index], "label": int(labels[index])} for index in range(count)]
    batches: list[list[int]] = []  # the sample indices of every batch this rank trained on

    def collate(features):
        batches.append([feature["idx"] for feature in features])
        return {"input_ids": torch.stack([f["input_ids"] for f in features]),
                "labels": torch.tensor([f["label"] for f in features])}

    # Dropout off so a step's loss can be recomputed exactly outside the Trainer.
    config = BertConfig(vocab_size=64, hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=64, max_position_embeddings=16, num_labels=2,
                        hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)

    def fresh_model():
        torch.manual_seed(args.seed)
        return BertForSequenceClassification(config)

    def arguments(name: str, steps: int, save: bool) -> TrainingArguments:
        return TrainingArguments(
            output_dir=str(args.output_dir / name), max_steps=steps, per_device_train_batch_size=BATCH_SIZE,
            learning_rate=1e-3, logging_steps=1, save_strategy="steps" if save else "no", save_steps=steps,
            report_to="none", disable_tqdm=True, seed=args.seed,
            remove_unused_columns=False,  # keep "idx" for the collator, which records what each rank read
            use_cpu=not gpu, bf16=gpu,
            ddp_find_unused_parameters=False,  # every parameter is used; True only costs an extra graph pass
        )

    # The loss of the untrained model on the whole dataset, computed in one process: what step 1 should log.
    with torch.no_grad():
        reference = fresh_model().eval()(input_ids=input_ids, labels=labels).loss.item()

    # As shipped: one step, to read the loss the Trainer logs for it.
    shipped = Trainer(model=fresh_model(), args=arguments("as-shipped", 1, save=False), train_dataset=samples,
                      data_collator=collate)
    shipped.train()
    batches.clear()

    # The fix: the model's loss ignores num_items_in_batch, so the Trainer must not scale it by the rank count.
    model = fresh_model()
    model.accepts_loss_kwargs = False
    initial = weights_digest(model)
    trainer = Trainer(model=model, args=arguments("trainer", STEPS, save=True), train_dataset=samples,
                      data_collator=collate)
    say(trainer.args.process_index, trainer.args.world_size)
    trainer.train()
    rank = trainer.args.process_index
    write_result(args.output_dir, rank, {
        "world_size": trainer.args.world_size,
        "backend": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
        "should_save": trainer.args.should_save, "global_step": trainer.state.global_step,
        "batches": batches, "initial": initial, "final": weights_digest(model), "reference_loss": reference,
        "shipped": first_log(shipped), "fixed": first_log(trainer),
    })


def write_result(directory: Path, rank: int, result: dict) -> None:
    with open(directory / f"rank{rank}.json", "x") as file:  # "x": never over a file that is already there
        file.write(json.dumps({"rank": rank, "pid": os.getpid(), **result}))


def first_log(trainer) -> dict:
    """Loss and gradient norm (before clipping) the Trainer logged for step 1."""
    entry = next(entry for entry in trainer.state.log_history if "loss" in entry)
    return {"loss": entry["loss"], "grad_norm": float(entry["grad_norm"])}


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


# ---------------------------------------------------------------- launcher side

def console_script(name: str, module: str) -> list[str]:
    """The launcher installed next to this Python (what a user types), else the same code through -m."""
    installed = Path(sys.executable).parent / name
    return [str(installed)] if installed.exists() else [sys.executable, "-m", module]


def worker_command(directory: Path, args) -> list[str]:
    return [str(Path(__file__).resolve()), "--worker", "--output-dir", str(directory),
            "--device", args.device_resolved, "--seed", str(args.seed)]


def free_port_below_ephemeral_range() -> int:
    """A free port that no outgoing connection can take before the launcher binds it.

    `--main_process_port 0` makes accelerate bind port 0, read the port and release it; torchrun binds it again
    seconds later. That port comes from the kernel's ephemeral range, the one every outgoing connection (gloo opens
    many) draws from, so on a busy machine it can be taken in between and the rendezvous fails with EADDRINUSE.
    """
    try:
        first_ephemeral = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        first_ephemeral = 32768  # Linux's default
    for port in random.Random().sample(range(20000, max(first_ephemeral, 20001)), 50):
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    return 0  # nothing free there: let accelerate pick one


def accelerate_command(world_size: int, *flags: str) -> list[str]:
    installed = Path(sys.executable).parent / "accelerate"
    base = [str(installed), "launch"] if installed.exists() else [sys.executable, "-m", "accelerate.commands.launch"]
    # Spelling out machines, precision and dynamo keeps accelerate from warning that it picked defaults; its
    # default port, 29500, may be taken by another job on this machine.
    return [*base, *flags, "--num_machines", "1", "--num_processes", str(world_size), "--mixed_precision", "no",
            "--dynamo_backend", "no", "--main_process_port", str(free_port_below_ephemeral_range())]


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
    if not run.check(f"{name}.launch", code == 0, detail if code == 0 else f"{detail}; {first_error(stderr)}"):
        raise SmokeError(f"{name}: the launch failed with exit code {code}: {first_error(stderr)}")


def close(actual: float, expected: float, tolerance: float) -> bool:
    return math.isclose(actual, expected, rel_tol=tolerance)


def check_training(run, name: str, directory: Path, world_size: int, stdout: str, stderr: str) -> None:
    results = {r["rank"]: r for r in (json.loads(p.read_text()) for p in sorted(directory.glob("rank*.json")))}
    run.check_equal(f"{name}.ranks", sorted(results), list(range(world_size)))
    if not results:
        return
    backend = "nccl" if run.device == "gpu" else "gloo"
    seen = sorted({(r["world_size"], r["backend"]) for r in results.values()}, key=str)
    # A single rank may run without a process group; two or more must share one on the expected backend.
    allowed = [[(world_size, backend)]] + ([[(1, None)]] if world_size == 1 else [])
    run.check(f"{name}.world_size", seen in allowed, f"(world size, backend) per rank: {seen}, expected {allowed[0]}")
    global_batch = BATCH_SIZE * world_size
    steps = sorted({r["global_step"] for r in results.values()})
    # Step s of every rank together must read each sample of the dataset (one global batch) exactly once.
    per_step = [sorted(index for r in results.values() if s < len(r["batches"]) for index in r["batches"][s])
                for s in range(STEPS)]
    read = sum(len(step) for step in per_step)
    run.check(f"{name}.global_samples",
              steps == [STEPS] and all(step == list(range(global_batch)) for step in per_step),
              f"{steps} optimizer steps; {read} samples read by {len(results)} ranks (expected {STEPS} steps x "
              f"{BATCH_SIZE} per rank x {world_size} ranks = {STEPS * global_batch}, each sample once a step)")
    finals = {r["final"] for r in results.values()}
    initials = {r["initial"] for r in results.values()}
    run.check(f"{name}.same_weights", len(finals) == 1 and finals.isdisjoint(initials),
              f"final weight digests {sorted(finals)}; trained away from {sorted(initials)}")
    writers = sorted(rank for rank, r in results.items() if r["should_save"])
    checkpoint = directory / "trainer" / f"checkpoint-{STEPS}"
    files = sorted(path.name for path in checkpoint.glob("*"))
    rng_files = sorted(f for f in files if f.startswith("rng_state"))
    expected_rng = [f"rng_state_{rank}.pth" for rank in range(world_size)] if world_size > 1 else ["rng_state.pth"]
    run.check(f"{name}.checkpoint_written_once",
              writers == [0] and "model.safetensors" in files and "optimizer.pt" in files and rng_files == expected_rng,
              f"ranks with should_save: {writers}; {checkpoint.name} holds {files}")
    # The as-shipped loss is the true loss times the number of ranks; the fixed one is the true loss.
    tolerance = 0.05 if run.device == "gpu" else 1e-3  # bf16 on GPU, exact arithmetic on CPU
    rank0 = results[min(results)]
    reference, shipped, fixed = rank0["reference_loss"], rank0["shipped"], rank0["fixed"]
    gradient_ratio = shipped["grad_norm"] / fixed["grad_norm"]
    run.check(f"{name}.loss_scaled_by_ranks_as_shipped",
              close(shipped["loss"], reference * world_size, tolerance) and close(gradient_ratio, world_size, tolerance),
              f"logged step-1 loss {shipped['loss']:.4f} = {shipped['loss'] / reference:.3f} x the single-process loss "
              f"{reference:.4f} with {world_size} rank(s); gradient norm {gradient_ratio:.3f} x the fixed run's")
    run.check(f"{name}.loss_fixed_by_accepts_loss_kwargs_false", close(fixed["loss"], reference, tolerance),
              f"with model.accepts_loss_kwargs = False the logged step-1 loss is {fixed['loss']:.4f} = "
              f"{fixed['loss'] / reference:.3f} x {reference:.4f}")
    captured = stdout + stderr
    missing = [marker(rank, world_size, stream) for rank in range(world_size) for stream in ("stdout", "stderr")
               if marker(rank, world_size, stream) not in captured]
    run.check(f"{name}.output_every_rank", not missing,
              f"missing: {missing}" if missing else f"stdout and stderr of all {world_size} ranks captured")


def body(run) -> None:
    args = run.args
    # Only auto and gpu need torch here to look for CUDA; the ranks import it anyway.
    run.device = args.device_resolved = "cpu" if args.device == "cpu" else run.resolve_device()
    import importlib.util

    for module, pip_line in (("transformers", "pip install 'transformers[torch]'"), ("accelerate", "pip install accelerate")):
        if importlib.util.find_spec(module) is None:
            raise SmokeError(f"missing dependency {module!r}; fix: {pip_line}", EXIT_MISSING_DEPENDENCY)
    if run.device == "gpu":
        import torch

        world_size = torch.cuda.device_count()
        log(f"plan: {world_size} rank(s) with NCCL and bf16, one per GPU" + (
            "; with 1 GPU the 2-rank checks need --device cpu (NCCL runs one rank per GPU)" if world_size == 1 else ""))
    else:
        world_size = 2
        log("plan: 2 ranks on CPU with the gloo backend over 127.0.0.1")
    chosen = LAUNCHERS if args.launcher == "all" else (args.launcher,)
    for name in chosen:
        directory = run.output_dir / name
        if name == "torchrun":
            command = [*console_script("torchrun", "torch.distributed.run"), "--standalone",
                       "--nproc_per_node", str(world_size), *worker_command(directory, args)]
        else:  # --multi_gpu is accelerate's DDP launcher, on CPU too; it refuses fewer than 2 processes
            flags = ("--multi_gpu",) if world_size > 1 else ()
            command = [*accelerate_command(world_size, *flags), *worker_command(directory, args)]
        code, seconds, stdout, stderr = launch(run, name, command, directory)
        check_launch(run, name, code, seconds, stderr, command)
        check_training(run, name, directory, world_size, stdout, stderr)


def main(argv: list[str] | None = None) -> int:
    parser = build_cli()
    argv = sys.argv[1:] if argv is None else argv
    worker_args = launched_worker(parser, argv)
    if worker_args is not None:  # one rank of a launch: plain errors, the launcher side reports them
        worker_train(worker_args)
        return 0
    return run_main(SCRIPT, parser, body, DISTRIBUTIONS, argv, validate=refuse_worker)


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


if __name__ == "__main__":
    sys.exit(main())
