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
import math
import os
import random
import socket
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
import _distributed_launch as launch_kit
from smoke_contract import EXIT_MISSING_DEPENDENCY, SmokeError, run_main

SCRIPT = "distributed_smoke.py"
LAUNCHERS = ("torchrun", "accelerate")
DISTRIBUTIONS = ["transformers", "torch", "accelerate"]
BATCH_SIZE = 8  # per rank; the dataset is one global batch, so every step reads every sample once
STEPS = 3


def make_parser() -> argparse.ArgumentParser:
    return launch_kit.launch_parser(SCRIPT, __doc__, LAUNCHERS)


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    launch_kit.run_rank_and_exit_if_launched(parser, argv, worker_train)
    return run_main(SCRIPT, parser, body, DISTRIBUTIONS, argv, validate=launch_kit.refuse_worker)


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
    initial = launch_kit.weights_digest(model)
    trainer = Trainer(model=model, args=arguments("trainer", STEPS, save=True), train_dataset=samples,
                      data_collator=collate)
    launch_kit.say(trainer.args.process_index, trainer.args.world_size)
    trainer.train()
    rank = trainer.args.process_index
    launch_kit.write_result(args.output_dir, rank, {
        "world_size": trainer.args.world_size,
        "backend": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
        "should_save": trainer.args.should_save, "global_step": trainer.state.global_step,
        "batches": batches, "initial": initial, "final": launch_kit.weights_digest(model), "reference_loss": reference,
        "shipped": first_log(shipped), "fixed": first_log(trainer),
    })


def first_log(trainer) -> dict:
    """Loss and gradient norm (before clipping) the Trainer logged for step 1."""
    entry = next(entry for entry in trainer.state.log_history if "loss" in entry)
    return {"loss": entry["loss"], "grad_norm": float(entry["grad_norm"])}


# ---------------------------------------------------------------- launcher side

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


def close(actual: float, expected: float, tolerance: float) -> bool:
    return math.isclose(actual, expected, rel_tol=tolerance)


def check_training(run, name: str, directory: Path, world_size: int, stdout: str, stderr: str) -> None:
    results = launch_kit.read_results(directory)
    if not launch_kit.check_world(run, name, results, world_size):
        return
    global_batch = BATCH_SIZE * world_size
    steps = sorted({r["global_step"] for r in results.values()})
    # Step s of every rank together must read each sample of the dataset (one global batch) exactly once.
    per_step = [sorted(index for r in results.values() if s < len(r["batches"]) for index in r["batches"][s])
                for s in range(STEPS)]
    read = sum(len(step) for step in per_step)
    run.check(f"{name}.global_samples",
              steps == [STEPS] and all(step == list(range(global_batch)) for step in per_step),
              f"{steps} optimizer steps; {read} samples read by {len(results)} ranks (expected {STEPS} steps x "
              f"{BATCH_SIZE} per rank x {world_size} ranks = {STEPS * global_batch}, each sample once a step)",
              actual={"steps": steps, "samples_per_step": per_step},
              expected={"steps": [STEPS], "samples_per_step": [list(range(global_batch))] * STEPS})
    launch_kit.check_same_weights(run, name, results)
    writers = sorted(rank for rank, r in results.items() if r["should_save"])
    checkpoint = directory / "trainer" / f"checkpoint-{STEPS}"
    files = sorted(path.name for path in checkpoint.glob("*"))
    rng_files = sorted(f for f in files if f.startswith("rng_state"))
    expected_rng = [f"rng_state_{rank}.pth" for rank in range(world_size)] if world_size > 1 else ["rng_state.pth"]
    run.check(f"{name}.checkpoint_written_once",
              writers == [0] and "model.safetensors" in files and "optimizer.pt" in files and rng_files == expected_rng,
              f"ranks with should_save: {writers}; {checkpoint.name} holds {files}",
              actual={"should_save": writers, "files": files, "rng_files": rng_files},
              expected={"should_save": [0], "files": {"contains": ["model.safetensors", "optimizer.pt"]},
                        "rng_files": expected_rng})
    # The as-shipped loss is the true loss times the number of ranks; the fixed one is the true loss.
    tolerance = 0.05 if run.device == "gpu" else 1e-3  # bf16 on GPU, exact arithmetic on CPU
    rank0 = results[min(results)]
    reference, shipped, fixed = rank0["reference_loss"], rank0["shipped"], rank0["fixed"]
    gradient_ratio = shipped["grad_norm"] / fixed["grad_norm"]
    run.check(f"{name}.loss_scaled_by_ranks_as_shipped",
              close(shipped["loss"], reference * world_size, tolerance) and close(gradient_ratio, world_size, tolerance),
              f"logged step-1 loss {shipped['loss']:.4f} = {shipped['loss'] / reference:.3f} x the single-process loss "
              f"{reference:.4f} with {world_size} rank(s); gradient norm {gradient_ratio:.3f} x the fixed run's",
              actual={"loss_ratio": shipped["loss"] / reference, "gradient_ratio": gradient_ratio},
              expected={"loss_ratio": {"isclose": world_size, "rel_tol": tolerance},
                        "gradient_ratio": {"isclose": world_size, "rel_tol": tolerance}})
    run.check(f"{name}.loss_fixed_by_accepts_loss_kwargs_false", close(fixed["loss"], reference, tolerance),
              f"with model.accepts_loss_kwargs = False the logged step-1 loss is {fixed['loss']:.4f} = "
              f"{fixed['loss'] / reference:.3f} x {reference:.4f}", actual={"loss_ratio": fixed["loss"] / reference},
              expected={"loss_ratio": {"isclose": 1.0, "rel_tol": tolerance}})
    launch_kit.check_output_every_rank(run, name, world_size, stdout + stderr)


def body(run) -> None:
    args = run.args
    launch_kit.resolve_launch_device(run)
    import importlib.util

    for module, pip_line in (("transformers", "pip install 'transformers[torch]'"), ("accelerate", "pip install accelerate")):
        if importlib.util.find_spec(module) is None:
            raise SmokeError(f"missing dependency {module!r}; fix: {pip_line}", EXIT_MISSING_DEPENDENCY)
    world_size = launch_kit.planned_world_size(run, "bf16")
    chosen = LAUNCHERS if args.launcher == "all" else (args.launcher,)
    for name in chosen:
        directory = run.output_dir / name
        if name == "torchrun":
            command = [*launch_kit.console_script("torchrun", "torch.distributed.run"), "--standalone",
                       "--nproc_per_node", str(world_size), *launch_kit.worker_command(__file__, directory, args)]
        else:  # --multi_gpu is accelerate's DDP launcher, on CPU too; it refuses fewer than 2 processes
            flags = ("--multi_gpu",) if world_size > 1 else ()
            command = [*accelerate_command(world_size, *flags), *launch_kit.worker_command(__file__, directory, args)]
        code, seconds, stdout, stderr = launch_kit.launch(run, name, command, directory)
        launch_kit.check_launch(run, name, code, seconds, stderr, command)
        check_training(run, name, directory, world_size, stdout, stderr)


if __name__ == "__main__":
    sys.exit(main())
