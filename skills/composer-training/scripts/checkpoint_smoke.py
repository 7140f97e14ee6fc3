#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "mosaicml==0.32.1",
#     "torch==2.7.0",
#     "torchvision==0.22.0",
# ]
# ///
"""Composer checkpoint smoke test: save, resume, autoresume and weights-only fine-tuning on a tiny classifier.

--mode save        train --batches batches, a checkpoint every batch; check the files, the `latest` symlink, and
                   that re-running into the used folder raises unless save_overwrite (which leaves stale files)
--mode resume      resume to a total max_duration of 2 x --batches; check where it starts and stops, that a
                   max_duration not past the checkpoint raises, and that the final weights are bitwise equal to an
                   uninterrupted run's
--mode autoresume  interrupt a run, re-run the same command (stable run_name + save_folder) and check it continues;
                   check that autoresume finds the checkpoint by folder, not by run name, and wins over load_path
--mode finetune    load the checkpoint into a model with a changed head (load_weights_only + non-strict +
                   load_ignore_keys) and check what fails without all three
--mode both        save, then resume          --mode all   every mode (default)

--load-path PATH resumes or fine-tunes from a checkpoint written by this script (`--mode save --keep`, for example
on another machine or Composer build) instead of a fresh one; the file is only read, never modified.
"""

from __future__ import annotations

import hashlib
import sys
from contextlib import redirect_stdout
from pathlib import Path

from smoke_contract import EXIT_USAGE, SmokeError, build_parser, positive_int, require, run_main

SCRIPT = "checkpoint_smoke.py"
DISTRIBUTIONS = ["mosaicml", "torch"]
PIP_LINE = "pip install mosaicml==0.32.1 'torch>=2.6,<2.7.1'"
MODES = ["save", "resume", "autoresume", "finetune", "both", "all"]
FEATURES, HIDDEN, CLASSES, NEW_CLASSES = 8, 16, 3, 5
SAMPLES, BATCH_SIZE = 16, 4  # 4 batches per epoch: resuming to 2 x 3 batches crosses an epoch boundary
HEAD_KEYS = ["state/model/module.3.*"]  # module.3 is the last Linear of the Sequential below
RUN_NAME = "smoke-autoresume"


def build():
    parser = build_parser(SCRIPT, __doc__, "python scripts/checkpoint_smoke.py --mode both --json")
    parser.add_argument("--mode", choices=MODES, default="all", help="what to check (default: all)")
    parser.add_argument("--batches", type=positive_int, default=3,
                        help="batches before the checkpoint; resume trains to a total of twice this (default: 3)")
    parser.add_argument("--load-path", type=Path, default=None,
                        help="resume or fine-tune from this checkpoint (from this script) instead of a fresh one")
    return parser


def validate(args) -> None:
    if args.load_path is None:
        return
    if args.mode not in ("resume", "finetune"):
        raise SmokeError(f"--load-path works with --mode resume or --mode finetune, not --mode {args.mode}",
                         EXIT_USAGE)
    if not args.load_path.is_file():
        raise SmokeError(f"--load-path {str(args.load_path)!r} is not a file", EXIT_USAGE)


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def body(run) -> None:
    device = run.resolve_device()
    require("torch", PIP_LINE)
    require("composer", PIP_LINE)
    mode, load_path = run.args.mode, run.args.load_path
    before = fingerprint(load_path) if load_path else None
    kit = Kit(run, device)
    with redirect_stdout(sys.stderr):  # stdout is reserved for the --json summary
        checkpoint = load_path.resolve() if load_path else None
        if mode in ("save", "both", "all") or checkpoint is None:
            checkpoint = save_checks(kit, checks=mode in ("save", "both", "all"))
        if mode in ("resume", "both", "all"):
            resume_checks(kit, checkpoint, compare=load_path is None)
        if mode in ("autoresume", "all"):
            autoresume_checks(kit)
        if mode in ("finetune", "all"):
            finetune_checks(kit, checkpoint)
    if load_path:
        run.check("load_path.unchanged", fingerprint(load_path) == before, "sha256 and mtime as before the run")


class Kit:
    """The tiny model, data and Trainer settings every mode shares (same seed: runs are comparable)."""

    def __init__(self, run, device: str):
        import torch
        from torch.utils.data import TensorDataset

        self.run, self.device, self.seed = run, device, run.args.seed
        self.batches = run.args.batches
        self.root = run.output_dir / "checkpoints"
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
        """A Trainer on shuffled data with Adam and dropout, so resuming has RNG and optimizer state to restore."""
        import torch
        from composer import Trainer
        from torch.utils.data import DataLoader

        model = model or self.model()
        settings = dict(
            model=model,
            train_dataloader=DataLoader(self.dataset, batch_size=BATCH_SIZE, shuffle=True),
            optimizers=torch.optim.Adam(model.parameters(), lr=1e-2),
            device=self.device,
            precision="fp32",
            seed=self.seed,
            progress_bar=False,
        )
        settings.update(kwargs)
        return Trainer(**settings)

    def weights(self, trainer) -> list:
        return [parameter.detach().cpu().clone() for parameter in trainer.state.model.parameters()]


def raised(action) -> str:
    try:
        action()
    except Exception as exc:  # noqa: BLE001 - the message is what the check looks at
        return " ".join(f"{type(exc).__name__}: {exc}".split())
    return "nothing raised"


def expected_names(batches: int) -> list[str]:
    per_epoch = SAMPLES // BATCH_SIZE  # a checkpoint at an epoch's last batch still carries that epoch
    return [f"ep{(batch - 1) // per_epoch}-ba{batch}-rank0.pt" for batch in range(1, batches + 1)]


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
    import shutil

    rerun = kit.root / "rerun"
    shutil.copytree(folder, rerun, symlinks=True)
    message = raised(lambda: kit.trainer(max_duration=f"{batches}ba", save_folder=str(rerun),
                                         save_interval="1ba").fit())
    run.check("save.rerun_raises", message.startswith("FileExistsError") and "may conflict with a future "
              "checkpoint of the current run" in message, message[:200])
    with run.step("save.overwrite"):
        trainer = kit.trainer(max_duration="1ba", save_folder=str(rerun), save_interval="1ba", save_overwrite=True)
        trainer.fit()
        trainer.close()
    run.check_equal("save.overwrite.latest_symlink", (rerun / "latest-rank0.pt").readlink().name, names[0])
    run.check("save.overwrite.leaves_stale_files", (rerun / names[-1]).exists(),
              f"{names[-1]} of the earlier run is still in the folder")
    return last


def resume_checks(kit: Kit, checkpoint: Path, compare: bool) -> None:
    import torch

    run, batches = kit.run, kit.batches
    with run.step("resume.load"):
        trainer = kit.trainer(load_path=str(checkpoint), max_duration="1ba")
    start = int(trainer.state.timestamp.batch)
    trainer.close()
    run.check("resume.start", start > 0, f"the checkpoint restores the timestamp: starts at {start}ba")
    total = start + batches

    message = raised(lambda: kit.trainer(load_path=str(checkpoint), max_duration=f"{start}ba").fit())
    run.check("resume.max_duration_is_total", message.startswith(f"ValueError: The max_duration ({start}ba) is less "
              f"than or equal to the elapsed training duration ({start}ba)"), message[:200])

    with run.step("resume.fit"):
        resumed = kit.trainer(load_path=str(checkpoint), max_duration=f"{total}ba")
        resumed.fit()
    run.check_equal("resume.end", int(resumed.state.timestamp.batch), total)
    run.check_equal("resume.epoch", int(resumed.state.timestamp.epoch), total // (SAMPLES // BATCH_SIZE))
    if compare:
        with run.step("resume.uninterrupted"):
            straight = kit.trainer(max_duration=f"{total}ba")
            straight.fit()
        equal = all(torch.equal(a, b) for a, b in zip(kit.weights(straight), kit.weights(resumed)))
        run.check("resume.bitwise_equal", equal, f"{start}ba + resume to {total}ba vs {total}ba straight, same seed")


class Interrupt(Exception):
    """Stands in for a killed job."""


def autoresume_checks(kit: Kit) -> None:
    import torch
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
              f"killed after {batches}ba; latest -> {(folder / 'latest-rank0.pt').readlink().name}")

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
    run.check("autoresume.bitwise_equal", all(torch.equal(a, b) for a, b in zip(kit.weights(straight),
                                                                                kit.weights(second))),
              "interrupted + autoresumed vs uninterrupted, same seed")

    message = raised(lambda: same_command().fit())
    run.check("autoresume.rerun_after_finish_raises", message.startswith(
        f"ValueError: The max_duration ({total}ba) is less than or equal to the elapsed training duration"),
        message[:200])

    with run.step("autoresume.other_run_name"):
        other = kit.trainer(max_duration=f"{total}ba", autoresume=True, run_name="another-run",
                            save_folder=str(folder))
        picked_up = int(other.state.timestamp.batch)
        other.close()
    run.check("autoresume.by_folder_not_run_name", picked_up == total,
              f"run_name 'another-run' pointed at {folder.name}/ resumed that run at {picked_up}ba")

    with run.step("autoresume.with_load_path"):
        early = folder / expected_names(1)[0]
        both = same_command(load_path=str(early))
        loaded_at = int(both.state.timestamp.batch)
        both.close()
    run.check("autoresume.wins_over_load_path", loaded_at == total,
              f"load_path {early.name} ignored: loaded latest at {loaded_at}ba")


def finetune_checks(kit: Kit, checkpoint: Path) -> None:
    import torch

    run, batches = kit.run, kit.batches
    path = str(checkpoint)

    message = raised(lambda: kit.trainer(model=kit.model(NEW_CLASSES), max_duration="1ba", load_path=path,
                                         load_weights_only=True))
    run.check("finetune.weights_only_alone_fails", "size mismatch for module.3.weight" in message, message[:200])
    message = raised(lambda: kit.trainer(model=kit.model(NEW_CLASSES), max_duration="1ba", load_path=path,
                                         load_weights_only=True, load_ignore_keys=HEAD_KEYS))
    run.check("finetune.strict_with_ignored_keys_fails", "Missing key(s) in state_dict" in message, message[:200])

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


def main(argv: list[str] | None = None) -> int:
    return run_main(SCRIPT, build(), body, DISTRIBUTIONS, argv=argv, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
