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
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
import _distributed_launch as launch_kit
from smoke_contract import EXIT_MISSING_DEPENDENCY, SmokeError, run_main

SCRIPT = "distributed_smoke.py"
LAUNCHERS = ("composer", "torchrun")
DISTRIBUTIONS = ["mosaicml", "torch"]
BATCH_SIZE = 4  # per rank
BATCHES = 3  # one epoch: the dataset holds BATCHES * BATCH_SIZE samples per rank


def make_parser() -> argparse.ArgumentParser:
    return launch_kit.launch_parser(SCRIPT, __doc__, LAUNCHERS)


def main(argv: list[str] | None = None) -> int:
    parser = make_parser()
    launch_kit.run_rank_and_exit_if_launched(parser, argv, worker_train)
    return run_main(SCRIPT, parser, body, DISTRIBUTIONS, argv, validate=launch_kit.refuse_worker)


# ---------------------------------------------------------------- worker side (runs once per rank)

def worker_train(args) -> None:
    """One rank of the DDP run. Composer reads RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR... set by the launcher."""
    import torch
    from composer import Trainer
    from composer.models import ComposerClassifier
    from composer.utils import dist
    from torch.utils.data import DataLoader

    rank, world_size = dist.get_global_rank(), dist.get_world_size()
    launch_kit.say(rank, world_size)
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
    initial = launch_kit.weights_digest(model)
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
    launch_kit.write_result(args.output_dir, rank, {
        "world_size": world_size,
        "backend": torch.distributed.get_backend() if torch.distributed.is_initialized() else None,
        "batches": int(timestamp.batch), "samples": int(timestamp.sample),
        "consumed": consumed, "initial": initial, "final": launch_kit.weights_digest(model),
    })
    trainer.close()


# ---------------------------------------------------------------- launcher side

def check_training(run, name: str, directory: Path, world_size: int, stdout: str, stderr: str) -> None:
    results = launch_kit.read_results(directory)
    if not launch_kit.check_world(run, name, results, world_size):
        return
    global_samples = BATCHES * BATCH_SIZE * world_size
    run.check_equal(f"{name}.global_samples",
                    sorted({(r["batches"], r["samples"]) for r in results.values()}), [(BATCHES, global_samples)])
    consumed = [index for r in results.values() for index in r["consumed"]]
    run.check(f"{name}.sampler_shards", sorted(consumed) == list(range(global_samples)),
              f"{len(consumed)} samples read by {len(results)} ranks, {len(set(consumed))} distinct "
              f"(expected each of {global_samples} exactly once)", actual=sorted(consumed),
              expected=list(range(global_samples)))
    launch_kit.check_same_weights(run, name, results)
    saved = sorted(path.name for path in (directory / "checkpoints").glob("*"))
    rank0 = [n for n in saved if n.endswith("-rank0.pt") and not n.startswith("latest")]
    others = [n for n in saved if "rank0" not in n]
    run.check(f"{name}.checkpoint_rank0_only", bool(rank0) and not others, f"checkpoint folder holds {saved}",
              actual={"rank0_checkpoints": len(rank0), "other_files": others},
              expected={"rank0_checkpoints": {">": 0}, "other_files": []})
    rank_logs = "".join(path.read_text(errors="replace") for path in sorted(directory.glob("rank*.std*.txt")))
    launch_kit.check_output_every_rank(run, name, world_size, stdout + stderr + rank_logs)


def body(run) -> None:
    args = run.args
    launch_kit.resolve_launch_device(run)
    import importlib.util

    if importlib.util.find_spec("composer") is None:
        raise SmokeError("missing dependency 'composer'; fix: pip install mosaicml==0.32.1", EXIT_MISSING_DEPENDENCY)
    world_size = launch_kit.planned_world_size(run, "amp_bf16")
    chosen = LAUNCHERS if args.launcher == "all" else (args.launcher,)
    for name in chosen:
        directory = run.output_dir / name
        directory.mkdir(parents=True, exist_ok=True)
        if name == "composer":
            pattern = str(directory).replace("{", "{{").replace("}", "}}")
            # Without --stdout and --stderr the launcher throws away what ranks other than 0 print.
            command = [*launch_kit.console_script("composer", "composer.cli.launcher"), "-n", str(world_size),
                       "--stdout", f"{pattern}/rank{{rank}}.stdout.txt", "--stderr", f"{pattern}/rank{{rank}}.stderr.txt",
                       *launch_kit.worker_command(__file__, directory, args)]
        else:
            command = [*launch_kit.console_script("torchrun", "torch.distributed.run"), "--standalone",
                       "--nproc_per_node", str(world_size), *launch_kit.worker_command(__file__, directory, args)]
        code, seconds, stdout, stderr = launch_kit.launch(run, name, command, directory)
        launch_kit.check_launch(run, name, code, seconds, stderr, command)
        check_training(run, name, directory, world_size, stdout, stderr)


if __name__ == "__main__":
    sys.exit(main())
