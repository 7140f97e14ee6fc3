#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "mosaicml==0.32.1",
#     "torch==2.7.0",
#     "torchvision==0.22.0",
# ]
# ///
"""Composer checkpoint smoke test: save, resume, autoresume, weights-only fine-tuning and killed-job drills on a tiny
classifier.

--mode save        train --batches batches, a checkpoint every batch; check the files, the `latest` symlink, and
                   that re-running into the used folder raises unless save_overwrite (which leaves stale files)
--mode resume      resume to a total max_duration of 2 x --batches; check where it starts and stops, that a
                   max_duration not past the checkpoint raises, and that the final weights are bitwise equal to an
                   uninterrupted run's
--mode autoresume  interrupt a run, re-run the same command (stable run_name + save_folder) and check it continues;
                   check that autoresume finds the checkpoint by folder, not by run name, and wins over load_path
--mode finetune    load the checkpoint into a model with a changed head (load_weights_only + non-strict +
                   load_ignore_keys) and check what fails without all three
--mode crash       for each --kill-at and --kill-while-saving step, a child process trains 2 epochs (8 batches)
                   with autoresume and a checkpoint every batch and dies by SIGKILL; the same Trainer settings then
                   resume the run and the final weights must be bitwise equal to an uninterrupted run's (--batches
                   does not apply)
--mode both        save, then resume          --mode all   every mode (default)

--kill-at STEPS    comma list for --mode crash (default: every step, 1 to 8): N kills the job right after optimizer
                   step N, before checkpoint N is written (1: no checkpoint yet; 4 and 5: either side of the epoch
                   boundary, 4 batches per epoch); random: one batch drawn from --seed
--kill-while-saving STEPS
                   comma list for --mode crash (default: 3): N kills the job halfway through writing checkpoint N,
                   which leaves a torn file that blocks the relaunch until it is set aside; random as for --kill-at

--load-path PATH resumes or fine-tunes from a checkpoint written by this script (`--mode save --keep`, for example
on another machine or Composer build) instead of a fresh one; the file is only read, never modified. An empty,
truncated, corrupted or foreign file is refused (exit 2) before torch is imported; a file that holds more than plain
data (code would run when Composer unpickles it) or a checkpoint of another model is refused (exit 2) before Composer
opens it. The flag is named after the Trainer argument it sets, load_path (the transformers-training skill's
checkpoint_smoke.py says --resume-from, after its train(resume_from_checkpoint=)).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import signal
import sys
from contextlib import redirect_stdout
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from _checkpoint_files import (TRUST_FLAG, checkpoint_problem, read_checkpoint, set_aside_torn_checkpoints,
                               torn_checkpoints)
from _tensors import differing_tensors
from smoke_contract import EXIT_USAGE, SmokeError, build_parser, positive_int, require, run_main

SCRIPT = "checkpoint_smoke.py"
DISTRIBUTIONS = ["mosaicml", "torch"]
PIP_LINE = "pip install mosaicml==0.32.1 'torch>=2.6,<2.7.1'"
MODES = ["save", "resume", "autoresume", "finetune", "crash", "both", "all"]
FEATURES, HIDDEN, CLASSES, NEW_CLASSES = 8, 16, 3, 5
SAMPLES, BATCH_SIZE = 16, 4  # 4 batches per epoch: resuming to 2 x 3 batches crosses an epoch boundary
PER_EPOCH = SAMPLES // BATCH_SIZE
OPTIMIZER = "Adam"  # a torch.optim class: checkpoints name their optimizer by it
HEAD_KEYS = ["state/model/module.3.*"]  # module.3 is the last Linear of the Sequential below
RUN_NAME = "smoke-autoresume"
CRASH_RUN, CRASH_EPOCHS = "smoke-crash", 2
CRASH_BATCHES = CRASH_EPOCHS * PER_EPOCH
DEFAULT_KILL_AT = ",".join(map(str, range(1, CRASH_BATCHES + 1)))  # every step
DEFAULT_KILL_WHILE_SAVING = "3"  # one torn save
CHILD_TIMEOUT_S = 300


def kill_points(text: str) -> list[str]:
    """argparse type for --kill-at and --kill-while-saving: batch numbers and random, comma-separated."""
    points = []
    for item in (part.strip().lower() for part in text.split(",")):
        if item != "random" and not (item.isdecimal() and 1 <= int(item) <= CRASH_BATCHES):
            moved = item.removeprefix("save:") if item.startswith("save:") else None
            raise argparse.ArgumentTypeError(f"{item!r} is not a batch 1 to {CRASH_BATCHES} or random" + (
                f" (a kill while saving is --kill-while-saving {moved})" if moved else ""))
        points.append(item if item == "random" else str(int(item)))
    return points


def make_parser() -> argparse.ArgumentParser:
    parser = build_parser(SCRIPT, __doc__,
                          "python scripts/checkpoint_smoke.py --mode crash --kill-at 1,4 --kill-while-saving 3 "
                          "--json")
    parser.add_argument("--mode", choices=MODES, default="all", help="what to check (default: all)")
    parser.add_argument("--batches", type=positive_int, default=3,
                        help="batches before the checkpoint; resume trains to a total of twice this (default: 3)")
    parser.add_argument("--kill-at", type=kill_points, default=None, metavar="STEPS",
                        help=f"--mode crash: SIGKILL after step N, before its checkpoint, for each N (or random) in a "
                             f"comma list (default: {DEFAULT_KILL_AT})")
    parser.add_argument("--kill-while-saving", type=kill_points, default=None, metavar="STEPS",
                        help="--mode crash: SIGKILL halfway through writing checkpoint N, for each N (or random) in a "
                             f"comma list (default: {DEFAULT_KILL_WHILE_SAVING})")
    parser.add_argument("--load-path", type=Path, default=None,
                        help="resume or fine-tune from this checkpoint (from this script) instead of a fresh one "
                             "(named after the Trainer's load_path, which it sets)")
    return parser


def validate(args) -> None:
    for flag, given in (("--kill-at", args.kill_at), ("--kill-while-saving", args.kill_while_saving)):
        if given is not None and args.mode not in ("crash", "all"):
            raise SmokeError(f"{flag} works with --mode crash or --mode all, not --mode {args.mode}", EXIT_USAGE)
    if args.load_path is None:
        return
    if args.mode not in ("resume", "finetune"):
        raise SmokeError(f"--load-path works with --mode resume or --mode finetune, not --mode {args.mode}",
                         EXIT_USAGE)
    problem = checkpoint_problem(args.load_path)
    if problem:
        raise SmokeError(f"--load-path {str(args.load_path)!r} {problem}", EXIT_USAGE)


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def body(run) -> None:
    """Each mode runs inside a step named after it: an error outside that mode's own steps (a file system that
    fails, a listing that raises) fails that named check, never an unnamed "unexpected" error."""
    device = run.resolve_device()
    require("torch", PIP_LINE)
    require("composer", PIP_LINE)
    mode, load_path = run.args.mode, run.args.load_path
    with run.step("setup"):
        before = fingerprint(load_path) if load_path else None
        kit = Kit(device, run.args.seed, run.args.batches, run.output_dir / "checkpoints", run)
    with redirect_stdout(sys.stderr):  # stdout is reserved for the --json summary
        checkpoint = None
        if load_path:
            with run.step("load_path.copy"):
                checkpoint = checked_copy(kit, load_path)
        if mode in ("save", "both", "all") or (checkpoint is None and mode in ("resume", "finetune")):
            with run.step("save"):
                checkpoint = save_checks(kit, checks=mode in ("save", "both", "all"))
        if mode in ("resume", "both", "all"):
            with run.step("resume"):
                resume_checks(kit, checkpoint, compare=load_path is None)
        if mode in ("autoresume", "all"):
            with run.step("autoresume"):
                autoresume_checks(kit)
        if mode in ("finetune", "all"):
            with run.step("finetune"):
                finetune_checks(kit, checkpoint)
        if mode in ("crash", "all"):
            drawn = [resolve_kill_points(given or kill_points(default), run.args.seed) for given, default in
                     [(run.args.kill_at, DEFAULT_KILL_AT), (run.args.kill_while_saving, DEFAULT_KILL_WHILE_SAVING)]]
            with run.step("crash"):
                crash_drills(kit, *drawn)
    if load_path:
        with run.step("load_path.unchanged"):
            after = fingerprint(load_path)
        run.check("load_path.unchanged", after == before, "sha256 and mtime as before the run", actual=after,
                  expected=before)


def checked_copy(kit: Kit, given: Path) -> Path:
    """A copy of the given checkpoint in the output directory, read without running code from it and compared with
    this script's model and optimizer. Composer unpickles the copy (weights_only=False): the very bytes checked."""
    named = f"--load-path {str(given)!r}"
    copy = kit.run.output_dir / "given" / given.name
    copy.parent.mkdir()
    shutil.copyfile(given, copy)
    state, _ = read_checkpoint(copy, named, if_untrusted="this script saves plain data only, so the file is not one of "
                               f"its checkpoints (preflight.py {TRUST_FLAG} opens a file you trust)")
    difference = foreign_model(state, kit)
    if difference:
        raise SmokeError(f"{named} is a Composer checkpoint of another model ({difference}); pass one this script "
                         "saved (--mode save --keep)", EXIT_USAGE)
    return copy


def foreign_model(state: dict, kit: Kit) -> str | None:
    """How a checkpoint's model tensors and optimizer differ from this script's, or None. Composer would not say:
    a full resume loads the model non-strictly, so tensors of other names are skipped without a word."""
    ours = {name: list(tensor.shape) for name, tensor in kit.model().state_dict().items()}
    theirs = {name: list(getattr(tensor, "shape", [])) for name, tensor in state["model"].items()}
    differences = [f"no {name}" for name in ours if name not in theirs]
    differences += [f"{name}: not in this script's model" for name in theirs if name not in ours]
    differences += [f"{name} is {theirs[name]}, here {shape}" for name, shape in ours.items()
                    if theirs.get(name, shape) != shape]
    optimizers = list(state["optimizers"]) if isinstance(state.get("optimizers"), dict) else []
    if optimizers != [OPTIMIZER]:
        differences.append(f"optimizer {', '.join(map(str, optimizers)) or 'none'}, here {OPTIMIZER}")
    return "; ".join(differences[:4]) or None


class Kit:
    """The tiny model, data and Trainer settings every mode shares (same seed: runs are comparable)."""

    def __init__(self, device: str, seed: int, batches: int, root: Path, run=None):
        import torch
        from torch.utils.data import TensorDataset

        self.device, self.seed, self.batches, self.root, self.run = device, seed, batches, root, run
        generator = torch.Generator().manual_seed(self.seed)
        self.dataset = TensorDataset(torch.randn(SAMPLES, FEATURES, generator=generator),
                                     torch.randint(0, CLASSES, (SAMPLES,), generator=generator))

    def model(self, classes: int = CLASSES):
        import torch
        from composer.models import ComposerClassifier

        torch.manual_seed(self.seed)
        module = torch.nn.Sequential(torch.nn.Linear(FEATURES, HIDDEN), torch.nn.ReLU(), torch.nn.Dropout(0.1),
                                     torch.nn.Linear(HIDDEN, classes))
        return ComposerClassifier(module=module, num_classes=classes)

    def trainer(self, model=None, **kwargs):
        """A Trainer on shuffled data with Adam and dropout, so resuming has RNG and optimizer state to restore. The
        shuffle is a DistributedSampler: Composer replays its epoch order on resume (set_epoch); a RandomSampler
        (shuffle=True) draws each epoch's order from the global RNG when the epoch starts, a state no checkpoint
        after that point holds, so a resume inside a later epoch would reorder that epoch's remaining batches."""
        import torch
        from composer import Trainer
        from composer.utils import dist
        from torch.utils.data import DataLoader

        model = model or self.model()
        sampler = dist.get_sampler(self.dataset, shuffle=True, seed=self.seed)
        settings = dict(
            model=model,
            train_dataloader=DataLoader(self.dataset, batch_size=BATCH_SIZE, sampler=sampler),
            optimizers=getattr(torch.optim, OPTIMIZER)(model.parameters(), lr=1e-2),
            device=self.device,
            precision="fp32",
            seed=self.seed,
            progress_bar=False,
        )
        settings.update(kwargs)
        return Trainer(**settings)

    def weights(self, trainer) -> dict:
        return {name: parameter.detach().cpu().clone() for name, parameter in trainer.state.model.named_parameters()}


def raised(action) -> str:
    """The exception ``action`` raises, on one line: long enough to keep Composer's sentence after a long path."""
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - the message is what the check looks at
        return " ".join(f"{type(exc).__name__}: {exc}".split())[:1000]
    return "nothing raised"


def expected_names(batches: int) -> list[str]:
    # a checkpoint at an epoch's last batch still carries that epoch
    return [f"ep{(batch - 1) // PER_EPOCH}-ba{batch}-rank0.pt" for batch in range(1, batches + 1)]


def save_checks(kit: Kit, checks: bool) -> Path:
    import torch

    run, batches = kit.run, kit.batches
    folder = kit.root / "save"
    with run.step("save.fit"):
        trainer = kit.trainer(max_duration=f"{batches}ba", save_folder=str(folder), save_interval="1ba")
        trainer.fit()
        trainer.close()
    names = expected_names(batches)
    last = folder / names[-1]
    if not checks:
        return last
    latest = folder / "latest-rank0.pt"
    run.check_equal("save.files", sorted(path.name for path in folder.iterdir()),
                    sorted([*names, "latest-rank0.pt"]))
    run.check_equal("save.latest_symlink", latest.readlink().name if latest.is_symlink() else None, names[-1])
    run.check_equal("save.saved_checkpoints", trainer.saved_checkpoints, [str(folder / name) for name in names])
    with run.step("save.content"):
        saved = torch.load(last, map_location="cpu", weights_only=False)  # our own file, written just now
    run.check_equal("save.content.keys", sorted(saved), ["rng", "state"])
    run.check_equal("save.content.batch", saved["state"]["timestamp"]["Timestamp"]["batch"], batches)

    # A second run into a folder that already holds this run's checkpoints.
    rerun = kit.root / "rerun"
    with run.step("save.rerun.copy"):
        shutil.copytree(folder, rerun, symlinks=True)
    message = raised(lambda: kit.trainer(max_duration=f"{batches}ba", save_folder=str(rerun),
                                         save_interval="1ba").fit())
    raises = {"startswith": "FileExistsError", "contains": "may conflict with a future checkpoint of the current run"}
    run.check("save.rerun_raises", message.startswith(raises["startswith"]) and raises["contains"] in message, message,
              actual=message, expected=raises)
    with run.step("save.overwrite"):
        trainer = kit.trainer(max_duration="1ba", save_folder=str(rerun), save_interval="1ba", save_overwrite=True)
        trainer.fit()
        trainer.close()
    run.check_equal("save.overwrite.latest_symlink", (rerun / "latest-rank0.pt").readlink().name, names[0])
    run.check("save.overwrite.leaves_stale_files", (rerun / names[-1]).exists(),
              f"{names[-1]} of the earlier run is still in the folder")
    return last


def resume_checks(kit: Kit, checkpoint: Path, compare: bool) -> None:
    run, batches = kit.run, kit.batches
    with run.step("resume.load"):
        trainer = kit.trainer(load_path=str(checkpoint), max_duration="1ba")
    start = int(trainer.state.timestamp.batch)
    trainer.close()
    run.check("resume.start", start > 0, f"the checkpoint restores the timestamp: starts at {start}ba", actual=start,
              expected={">": 0})
    total = start + batches

    message = raised(lambda: kit.trainer(load_path=str(checkpoint), max_duration=f"{start}ba").fit())
    raises = (f"ValueError: The max_duration ({start}ba) is less than or equal to the elapsed training duration "
              f"({start}ba)")
    run.check("resume.max_duration_is_total", message.startswith(raises), message, actual=message,
              expected={"startswith": raises})

    with run.step("resume.fit"):
        resumed = kit.trainer(load_path=str(checkpoint), max_duration=f"{total}ba")
        resumed.fit()
    run.check_equal("resume.end", int(resumed.state.timestamp.batch), total)
    run.check_equal("resume.epoch", int(resumed.state.timestamp.epoch), total // PER_EPOCH)
    if compare:
        with run.step("resume.uninterrupted"):
            straight = kit.trainer(max_duration=f"{total}ba")
            straight.fit()
        differing = differing_tensors(kit.weights(straight), kit.weights(resumed))
        run.check("resume.bitwise_equal", not differing,
                  f"{start}ba + resume to {total}ba vs {total}ba straight, same seed", actual=differing, expected=[])


class Interrupt(Exception):
    """Stands in for a killed job."""


def autoresume_checks(kit: Kit) -> None:
    from composer import Callback

    run, batches = kit.run, kit.batches
    total = 2 * batches
    template = str(kit.root / "autoresume" / "{run_name}")
    folder = kit.root / "autoresume" / RUN_NAME

    class KillAfter(Callback):
        def batch_start(self, state, logger):
            if int(state.timestamp.batch) == batches:  # checkpoint `batches` is on disk by now
                raise Interrupt

    def same_command(**extra):
        return kit.trainer(max_duration=f"{total}ba", autoresume=True, run_name=RUN_NAME, save_folder=template,
                           save_interval="1ba", **extra)

    with run.step("autoresume.first_run"):
        first = same_command(callbacks=[KillAfter()])
        message = raised(first.fit)
        first.close()
    run.check("autoresume.first_run_interrupted", message.startswith("Interrupt"),
              f"killed after {batches}ba; latest -> {(folder / 'latest-rank0.pt').readlink().name}", actual=message,
              expected={"startswith": "Interrupt"})

    with run.step("autoresume.second_run"):
        second = same_command()
        start = int(second.state.timestamp.batch)
        second.fit()
        second.close()
    run.check_equal("autoresume.start", start, batches)
    run.check_equal("autoresume.end", int(second.state.timestamp.batch), total)
    with run.step("autoresume.uninterrupted"):
        straight = kit.trainer(max_duration=f"{total}ba")
        straight.fit()
    differing = differing_tensors(kit.weights(straight), kit.weights(second))
    run.check("autoresume.bitwise_equal", not differing, "interrupted + autoresumed vs uninterrupted, same seed",
              actual=differing, expected=[])

    message = raised(lambda: same_command().fit())
    raises = f"ValueError: The max_duration ({total}ba) is less than or equal to the elapsed training duration"
    run.check("autoresume.rerun_after_finish_raises", message.startswith(raises), message, actual=message,
              expected={"startswith": raises})

    with run.step("autoresume.other_run_name"):
        other = kit.trainer(max_duration=f"{total}ba", autoresume=True, run_name="another-run",
                            save_folder=str(folder))
        picked_up = int(other.state.timestamp.batch)
        other.close()
    run.check("autoresume.by_folder_not_run_name", picked_up == total,
              f"run_name 'another-run' pointed at {folder.name}/ resumed that run at {picked_up}ba", actual=picked_up,
              expected=total)

    with run.step("autoresume.with_load_path"):
        early = folder / expected_names(1)[0]
        both = same_command(load_path=str(early))
        loaded_at = int(both.state.timestamp.batch)
        both.close()
    run.check("autoresume.wins_over_load_path", loaded_at == total,
              f"load_path {early.name} ignored: loaded latest at {loaded_at}ba", actual=loaded_at, expected=total)


def finetune_checks(kit: Kit, checkpoint: Path) -> None:
    import torch

    run, batches = kit.run, kit.batches
    path = str(checkpoint)

    message = raised(lambda: kit.trainer(model=kit.model(NEW_CLASSES), max_duration="1ba", load_path=path,
                                         load_weights_only=True))
    run.check("finetune.weights_only_alone_fails", "size mismatch for module.3.weight" in message, message,
              actual=message, expected={"contains": "size mismatch for module.3.weight"})
    message = raised(lambda: kit.trainer(model=kit.model(NEW_CLASSES), max_duration="1ba", load_path=path,
                                         load_weights_only=True, load_ignore_keys=HEAD_KEYS))
    run.check("finetune.strict_with_ignored_keys_fails", "Missing key(s) in state_dict" in message, message,
              actual=message, expected={"contains": "Missing key(s) in state_dict"})

    with run.step("finetune.reference"):  # the checkpoint's weights, loaded into the old architecture
        reference = kit.trainer(max_duration="1ba", load_path=path, load_weights_only=True)
        old_backbone = reference.state.model.module[0].weight.detach().cpu().clone()
        reference.close()
    with run.step("finetune.load"):
        trainer = kit.trainer(model=kit.model(NEW_CLASSES), max_duration=f"{batches}ba", load_path=path,
                              load_weights_only=True, load_strict_model_weights=False, load_ignore_keys=HEAD_KEYS)
    module = trainer.state.model.module
    run.check("finetune.backbone_loaded", torch.equal(module[0].weight.detach().cpu(), old_backbone),
              "module.0.weight equals the checkpoint's")
    run.check_equal("finetune.head_shape", list(module[3].weight.shape), [NEW_CLASSES, HIDDEN])
    run.check_equal("finetune.starts_at", int(trainer.state.timestamp.batch), 0)
    with run.step("finetune.fit"):
        trainer.fit()
        trainer.close()
    run.check_equal("finetune.end", int(trainer.state.timestamp.batch), batches)


def resolve_kill_points(points: list[str], seed: int) -> list[str]:
    """Replace `random` by a batch drawn from the seed; drop repeats, keep the order."""
    import random

    drawn = [str(random.Random(seed).randint(1, CRASH_BATCHES)) if point == "random" else point for point in points]
    return list(dict.fromkeys(drawn))


def crash_job(kit: Kit, root: Path, **extra):
    """The job's command, identical on every launch: the autoresume settings the skill teaches."""
    return kit.trainer(max_duration=f"{CRASH_EPOCHS}ep", autoresume=True, run_name=CRASH_RUN,
                       save_folder=str(root / "{run_name}"), save_interval="1ba", **extra)


def crash_child(device: str, seed: int, root: str, batch: int, while_saving: bool) -> None:
    """The killed job (a child process): trains until SIGKILL lands after step ``batch`` or while writing its
    checkpoint, then is gone without cleanup."""
    os.dup2(2, 1)  # stdout carries the parent's JSON summary
    import torch
    from composer import Callback

    torch.set_num_threads(1)
    kit = Kit(device, seed, CRASH_BATCHES, Path(root))
    callbacks = []
    if while_saving:
        die_inside_save(expected_names(batch)[-1])
    else:
        class KillAfterStep(Callback):
            def batch_end(self, state, logger):  # step `batch` is done; its checkpoint is written after this event
                if int(state.timestamp.batch) == batch:
                    os.kill(os.getpid(), signal.SIGKILL)

        callbacks.append(KillAfterStep())
    crash_job(kit, Path(root), callbacks=callbacks).fit()


def die_inside_save(name: str) -> None:
    """Fault injection: torch.save dies by SIGKILL halfway through writing the checkpoint file ``name``, as when a
    kill lands during the save. Composer's own save code runs unchanged around it."""
    import io

    import torch

    save = torch.save

    class DyingWriter:
        def __init__(self, file, limit: int):
            self.file, self.limit, self.written = file, limit, 0

        def write(self, data) -> int:
            data = bytes(data)
            if self.written + len(data) >= self.limit:
                self.file.write(data[:self.limit - self.written])
                self.file.flush()  # what reached the OS before the kill stays in the file
                os.kill(os.getpid(), signal.SIGKILL)
            self.written += len(data)
            return self.file.write(data)

        def flush(self) -> None:
            self.file.flush()

    def torn_save(obj, file, *args, **kwargs):
        if Path(getattr(file, "name", "")).name != name:
            return save(obj, file, *args, **kwargs)
        whole = io.BytesIO()
        save(obj, whole, *args, **kwargs)
        return save(obj, DyingWriter(file, whole.tell() // 2), *args, **kwargs)

    torch.save = torn_save


def crash_drills(kit: Kit, kill_at: list[str], kill_while_saving: list[str]) -> None:
    import multiprocessing

    import torch

    run = kit.run
    torch.set_num_threads(1)  # as in the children: every run does the same arithmetic
    # fork starts the child from this already-imported process; CUDA cannot be forked, so GPU children are spawned
    context = multiprocessing.get_context("spawn" if kit.device == "gpu" else "fork")
    with run.step("crash.uninterrupted"):
        straight = kit.trainer(max_duration=f"{CRASH_EPOCHS}ep")
        straight.fit()
        straight.close()
    reference = kit.weights(straight)
    for batch in kill_at:
        crash_drill(kit, context, int(batch), False, reference)
    for batch in kill_while_saving:
        crash_drill(kit, context, int(batch), True, reference)


def crash_drill(kit: Kit, context, batch: int, while_saving: bool, reference: dict) -> None:
    run = kit.run
    label = f"save{batch}" if while_saving else f"ba{batch}"
    root = kit.root / "crash" / label
    folder = root / CRASH_RUN
    with run.step(f"crash.{label}.child"):
        child = context.Process(target=crash_child, args=(kit.device, kit.seed, str(root), batch, while_saving))
        child.start()
        child.join(CHILD_TIMEOUT_S)
        if child.is_alive():
            child.kill()
            child.join()
    where = (f"halfway through writing checkpoint {batch}" if while_saving else
             f"after step {batch}, before its checkpoint")
    run.check(f"crash.{label}.killed", child.exitcode == -signal.SIGKILL,
              f"child exit code {child.exitcode}; SIGKILL {where}", actual=child.exitcode, expected=-signal.SIGKILL)

    written = expected_names(batch if while_saving else batch - 1)
    latest = folder / "latest-rank0.pt"
    run.check_equal(f"crash.{label}.files", sorted(path.name for path in folder.iterdir()) if folder.is_dir() else None,
                    sorted(written + (["latest-rank0.pt"] if batch > 1 else [])))
    run.check_equal(f"crash.{label}.latest", latest.readlink().name if latest.is_symlink() else None,
                    expected_names(batch - 1)[-1] if batch > 1 else None)
    if while_saving:
        torn = folder / written[-1]
        found = torn_checkpoints(folder)
        run.check(f"crash.{label}.torn_file", found == [torn],
                  f"{torn.name}: {torn.stat().st_size} bytes under its final name, no zip end record", actual=found,
                  expected=[torn])
        with run.step(f"crash.{label}.relaunch"):
            relaunched = crash_job(kit, root)
        message = raised(relaunched.fit)
        relaunched.close()
        raises = {"startswith": "FileExistsError", "contains": f"{torn} may conflict with a future checkpoint"}
        run.check(f"crash.{label}.relaunch_raises", message.startswith(raises["startswith"]) and
                  raises["contains"] in message, message, actual=message, expected=raises)
        run.check_equal(f"crash.{label}.set_aside", [path.name for path in set_aside_torn_checkpoints(folder)],
                        [torn.name])

    with run.step(f"crash.{label}.resume"):
        resumed = crash_job(kit, root)
        start = int(resumed.state.timestamp.batch)
        resumed.fit()
        resumed.close()
    run.check_equal(f"crash.{label}.resumed_from", start, batch - 1)
    run.check_equal(f"crash.{label}.end", int(resumed.state.timestamp.batch), CRASH_BATCHES)
    differing = differing_tensors(reference, kit.weights(resumed))
    run.check(f"crash.{label}.bitwise_equal", not differing,
              f"killed {where}, relaunched from {start}ba to {CRASH_BATCHES}ba vs {CRASH_BATCHES}ba uninterrupted, "
              "same seed", actual=differing, expected=[])


def main(argv: list[str] | None = None) -> int:
    return run_main(SCRIPT, make_parser(), body, DISTRIBUTIONS, argv=argv, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
