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
--mode crash       for each --kill-at point, a child process trains 2 epochs (8 batches) with autoresume and a
                   checkpoint every batch and dies by SIGKILL; the same Trainer settings then resume the run and the
                   final weights must be bitwise equal to an uninterrupted run's (--batches does not apply)
--mode both        save, then resume          --mode all   every mode (default)

--kill-at POINTS   comma list for --mode crash (default: every step, 1 to 8, and save:3): N kills the job right after
                   optimizer step N, before checkpoint N is written (1: no checkpoint yet; 4 and 5: either side of the
                   epoch boundary, 4 batches per epoch); save:N kills it halfway through writing checkpoint N, which
                   leaves a torn file that blocks the relaunch until it is set aside; random: one batch from --seed

--load-path PATH resumes or fine-tunes from a checkpoint written by this script (`--mode save --keep`, for example
on another machine or Composer build) instead of a fresh one; the file is only read, never modified. An empty,
truncated, corrupted or foreign file is refused (exit 2) before torch is imported; a file that holds more than plain
data (code would run when Composer unpickles it) or a checkpoint of another model is refused (exit 2) before Composer
opens it.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import pickletools
import shutil
import signal
import sys
import zipfile
import zlib
from contextlib import redirect_stdout
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
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
DEFAULT_KILL_AT = ",".join([*map(str, range(1, CRASH_BATCHES + 1)), "save:3"])  # every step, one torn save
TRUST_FLAG = "--trust-checkpoint"  # preflight.py's: opens a checkpoint as Composer does, running its code
CHILD_TIMEOUT_S = 300
ENCRYPTED_FLAGS = 0x1 | 0x40  # a zip member's general purpose flags: encrypted, strongly encrypted
# what zipfile raises on damaged archives: bad records, bad names (UnicodeDecodeError), bad compressed data
ZIP_READ_ERRORS = (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError, zlib.error)


def kill_points(text: str) -> list[str]:
    """argparse type for --kill-at: batch numbers, save:N and random, comma-separated."""
    points = []
    for item in (part.strip().lower() for part in text.split(",")):
        number = item.removeprefix("save:")
        if item != "random" and not (number.isdecimal() and 1 <= int(number) <= CRASH_BATCHES):
            raise argparse.ArgumentTypeError(
                f"{item!r} is not a batch 1 to {CRASH_BATCHES}, save:<batch> or random")
        points.append(item if item == "random" else item.removesuffix(number) + str(int(number)))
    return points


def build():
    parser = build_parser(SCRIPT, __doc__,
                          "python scripts/checkpoint_smoke.py --mode crash --kill-at 1,4,save:3 --json")
    parser.add_argument("--mode", choices=MODES, default="all", help="what to check (default: all)")
    parser.add_argument("--batches", type=positive_int, default=3,
                        help="batches before the checkpoint; resume trains to a total of twice this (default: 3)")
    parser.add_argument("--kill-at", type=kill_points, default=None, metavar="POINTS",
                        help=f"--mode crash kill points: N, save:N or random, comma-separated (default: "
                             f"{DEFAULT_KILL_AT})")
    parser.add_argument("--load-path", type=Path, default=None,
                        help="resume or fine-tune from this checkpoint (from this script) instead of a fresh one")
    return parser


def validate(args) -> None:
    if args.kill_at is not None and args.mode not in ("crash", "all"):
        raise SmokeError(f"--kill-at works with --mode crash or --mode all, not --mode {args.mode}", EXIT_USAGE)
    if args.load_path is None:
        return
    if args.mode not in ("resume", "finetune"):
        raise SmokeError(f"--load-path works with --mode resume or --mode finetune, not --mode {args.mode}",
                         EXIT_USAGE)
    problem = checkpoint_problem(args.load_path)
    if problem:
        raise SmokeError(f"--load-path {str(args.load_path)!r} {problem}", EXIT_USAGE)


def checkpoint_problem(path: Path) -> str | None:
    """Why ``path`` is not a usable Composer checkpoint, found with the standard library alone (nothing is
    unpickled, torch is not imported, the file is only read), or None. torch.save writes a zip archive whose end
    record comes last, so a write cut short (a kill during the save, a full disk) leaves a file without one."""
    if path.is_symlink() and not path.exists():
        return f"is a symlink to {os.readlink(path)!r}, which does not exist; point it at a checkpoint that exists"
    if not path.is_file():
        return "is not a file"
    size = path.stat().st_size
    if size == 0:
        return ("is empty (0 bytes): its write was cut short before the first byte (a kill as the save began, a "
                "full disk); use the checkpoint saved before it")
    if not is_zip_archive(path):
        with open(path, "rb") as file:
            started_as_zip = file.read(4) == b"PK\x03\x04"
        if started_as_zip:
            return (f"is truncated ({size} bytes, its zip archive has no end record): its write was cut short (a kill "
                    "during the save, a full disk, an interrupted copy); use the checkpoint saved before it")
        return "is not a torch.save checkpoint (not a zip archive); pass a .pt file a Composer Trainer saved"
    try:
        with zipfile.ZipFile(path) as archive:
            unreadable = unreadable_member(archive)
            if unreadable:
                return unreadable
            corrupted = archive.testzip()  # torch.load does not check CRCs: a flipped byte would load silently
            pickles = [name for name in archive.namelist() if name.endswith("/data.pkl")]
            data = archive.read(pickles[0]) if len(pickles) == 1 and not corrupted else b""
    except ZIP_READ_ERRORS as exc:
        return f"is a damaged zip archive ({exc}); use the checkpoint saved before it"
    if corrupted:
        return f"is corrupted (archive member {corrupted!r} fails its CRC check); use another checkpoint"
    if len(pickles) != 1:
        return "is a zip archive but not a torch.save file (no data.pkl); pass a .pt file a Composer Trainer saved"
    try:  # read the pickle's opcodes without running them
        strings = {argument for _, argument, _ in pickletools.genops(data) if isinstance(argument, str)}
    except Exception as exc:  # noqa: BLE001 - any parse failure means a damaged pickle
        return f"holds a damaged pickle ({type(exc).__name__}: {exc}); use another checkpoint"
    if not {"state", "timestamp"} <= strings:
        return ("is a torch.save file but not a Composer checkpoint (no state/timestamp); pass a .pt file a "
                "Composer Trainer saved")
    return None


def is_zip_archive(path: Path) -> bool:
    """Whether ``path`` ends with a zip end record; zipfile.is_zipfile raises on some damaged ones instead of
    answering (they are zip archives: opening one reports the damage)."""
    try:
        return zipfile.is_zipfile(path)
    except zipfile.BadZipFile:
        return True


def unreadable_member(archive: zipfile.ZipFile) -> str | None:
    """Why torch.load cannot read a member of ``archive`` (encrypted, or compressed other than deflate: torch.save
    stores members as they are), or None."""
    for member in archive.infolist():
        if member.flag_bits & ENCRYPTED_FLAGS:
            return (f"is an encrypted zip archive (member {member.filename!r}), which torch.load cannot read; "
                    "torch.save never encrypts: use the checkpoint as the Trainer saved it")
        if member.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
            method = zipfile.compressor_names.get(member.compress_type, "unknown")
            return (f"is a zip archive whose member {member.filename!r} is compressed with method "
                    f"{member.compress_type} ({method}), which torch.load cannot read; torch.save stores members "
                    "uncompressed: use the checkpoint as the Trainer saved it")
    return None


def read_checkpoint(path: Path, named: str, trust: bool = False,
                    if_untrusted: str = f"open it only if you trust it (then add {TRUST_FLAG})"):
    """A Composer checkpoint's ``state`` dict and Timestamp, read with torch.load(weights_only=True) and an allowlist
    of the plain-data types Composer saves, so no code from the file runs; ``trust`` reads it as Composer does
    (weights_only=False: any code stored in the file runs). A file that holds more than plain data, that torch.load
    cannot read or that is no Composer checkpoint is exit 2, its message starting with ``named``."""
    import datetime
    import pickle

    import numpy
    import torch
    from composer.core import Timestamp

    numpy_core = getattr(numpy, "_core", None) or numpy.core
    plain_data = [datetime.timedelta, torch.torch_version.TorchVersion, numpy_core.multiarray._reconstruct,
                  numpy.ndarray, numpy.dtype, *(getattr(numpy.dtypes, name) for name in dir(numpy.dtypes)
                                                if name.endswith("DType"))]
    try:
        if trust:
            saved = torch.load(path, map_location="cpu", weights_only=False)
        else:
            with torch.serialization.safe_globals(plain_data):
                saved = torch.load(path, map_location="cpu", weights_only=True)
    except Exception as exc:  # noqa: BLE001 - whatever torch.load raises, the file is refused with the reason
        # torch wraps the unpickler's reason in advice: keep its last line before the link to the documentation
        lines = [line.strip() for line in str(exc).split("Check the documentation")[0].splitlines() if line.strip()]
        reason = lines[-1].removeprefix("WeightsUnpickler error: ").rstrip(".")[:300] if lines else type(exc).__name__
        if isinstance(exc, pickle.UnpicklingError) and not trust:  # the weights-only unpickler stopped first
            raise SmokeError(f"{named} holds objects beyond plain data ({reason}): Composer unpickles checkpoints with "
                             f"torch.load(weights_only=False), which would run code stored in the file; {if_untrusted}",
                             EXIT_USAGE) from None
        raise SmokeError(f"{named} cannot be read by torch.load ({type(exc).__name__}: {reason}); use another "
                         "checkpoint", EXIT_USAGE) from None
    state = saved.get("state") if isinstance(saved, dict) else None
    try:
        timestamp = Timestamp()
        timestamp.load_state_dict(state["timestamp"]["Timestamp"])
        if not isinstance(state["model"], dict):
            raise TypeError("state/model is not a dict")
    except (KeyError, TypeError, ValueError) as exc:
        raise SmokeError(f"{named} is not a Composer checkpoint (no readable state/timestamp and state/model: "
                         f"{type(exc).__name__}: {exc}); pass a .pt file a Composer Trainer saved",
                         EXIT_USAGE) from None
    return state, timestamp


def torn_checkpoints(folder: Path) -> list[Path]:
    """Checkpoint files whose write was cut short: no zip end record (empty files included)."""
    return sorted(path for path in folder.glob("*.pt")
                  if path.is_file() and not path.is_symlink() and not is_zip_archive(path))


def set_aside_torn_checkpoints(folder: Path) -> list[Path]:
    """What the skill tells users to run before relaunching a killed autoresume job: rename torn checkpoints to
    <name>.partial (kept for a look, out of Composer's way), so the relaunch resumes from `latest`."""
    torn = torn_checkpoints(folder)
    for path in torn:
        path.rename(path.with_name(path.name + ".partial"))
    return torn


def fingerprint(path: Path) -> tuple[str, int]:
    return hashlib.sha256(path.read_bytes()).hexdigest(), path.stat().st_mtime_ns


def body(run) -> None:
    device = run.resolve_device()
    require("torch", PIP_LINE)
    require("composer", PIP_LINE)
    mode, load_path = run.args.mode, run.args.load_path
    before = fingerprint(load_path) if load_path else None
    kit = Kit(device, run.args.seed, run.args.batches, run.output_dir / "checkpoints", run)
    with redirect_stdout(sys.stderr):  # stdout is reserved for the --json summary
        checkpoint = checked_copy(kit, load_path) if load_path else None
        if mode in ("save", "both", "all") or (checkpoint is None and mode in ("resume", "finetune")):
            checkpoint = save_checks(kit, checks=mode in ("save", "both", "all"))
        if mode in ("resume", "both", "all"):
            resume_checks(kit, checkpoint, compare=load_path is None)
        if mode in ("autoresume", "all"):
            autoresume_checks(kit)
        if mode in ("finetune", "all"):
            finetune_checks(kit, checkpoint)
        if mode in ("crash", "all"):
            crash_checks(kit, resolve_kill_points(run.args.kill_at or kill_points(DEFAULT_KILL_AT), run.args.seed))
    if load_path:
        run.check("load_path.unchanged", fingerprint(load_path) == before, "sha256 and mtime as before the run")


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

    def weights(self, trainer) -> list:
        return [parameter.detach().cpu().clone() for parameter in trainer.state.model.parameters()]


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
    shutil.copytree(folder, rerun, symlinks=True)
    message = raised(lambda: kit.trainer(max_duration=f"{batches}ba", save_folder=str(rerun),
                                         save_interval="1ba").fit())
    run.check("save.rerun_raises", message.startswith("FileExistsError") and "may conflict with a future "
              "checkpoint of the current run" in message, message)
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
              f"than or equal to the elapsed training duration ({start}ba)"), message)

    with run.step("resume.fit"):
        resumed = kit.trainer(load_path=str(checkpoint), max_duration=f"{total}ba")
        resumed.fit()
    run.check_equal("resume.end", int(resumed.state.timestamp.batch), total)
    run.check_equal("resume.epoch", int(resumed.state.timestamp.epoch), total // PER_EPOCH)
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
        message)

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
    run.check("finetune.weights_only_alone_fails", "size mismatch for module.3.weight" in message, message)
    message = raised(lambda: kit.trainer(model=kit.model(NEW_CLASSES), max_duration="1ba", load_path=path,
                                         load_weights_only=True, load_ignore_keys=HEAD_KEYS))
    run.check("finetune.strict_with_ignored_keys_fails", "Missing key(s) in state_dict" in message, message)

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


def crash_child(device: str, seed: int, root: str, point: str) -> None:
    """The killed job (a child process): trains until SIGKILL lands at ``point``, then is gone without cleanup."""
    os.dup2(2, 1)  # stdout carries the parent's JSON summary
    import torch
    from composer import Callback

    torch.set_num_threads(1)
    kit = Kit(device, seed, CRASH_BATCHES, Path(root))
    batch = int(point.removeprefix("save:"))
    callbacks = []
    if point.startswith("save:"):
        tear_save(expected_names(batch)[-1])
    else:
        class KillAfterStep(Callback):
            def batch_end(self, state, logger):  # step `batch` is done; its checkpoint is written after this event
                if int(state.timestamp.batch) == batch:
                    os.kill(os.getpid(), signal.SIGKILL)

        callbacks.append(KillAfterStep())
    crash_job(kit, Path(root), callbacks=callbacks).fit()


def tear_save(name: str) -> None:
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


def crash_checks(kit: Kit, points: list[str]) -> None:
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
    for point in points:
        crash_point(kit, context, point, reference)


def crash_point(kit: Kit, context, point: str, reference: list) -> None:
    import torch

    run = kit.run
    tearing, batch = point.startswith("save:"), int(point.removeprefix("save:"))
    label = f"save{batch}" if tearing else f"ba{batch}"
    root = kit.root / "crash" / label
    folder = root / CRASH_RUN
    with run.step(f"crash.{label}.child"):
        child = context.Process(target=crash_child, args=(kit.device, kit.seed, str(root), point))
        child.start()
        child.join(CHILD_TIMEOUT_S)
        if child.is_alive():
            child.kill()
            child.join()
    where = f"halfway through writing checkpoint {batch}" if tearing else f"after step {batch}, before its checkpoint"
    run.check(f"crash.{label}.killed", child.exitcode == -signal.SIGKILL,
              f"child exit code {child.exitcode}; SIGKILL {where}")

    written = expected_names(batch if tearing else batch - 1)
    latest = folder / "latest-rank0.pt"
    run.check_equal(f"crash.{label}.files", sorted(path.name for path in folder.iterdir()) if folder.is_dir() else None,
                    sorted(written + (["latest-rank0.pt"] if batch > 1 else [])))
    run.check_equal(f"crash.{label}.latest", latest.readlink().name if latest.is_symlink() else None,
                    expected_names(batch - 1)[-1] if batch > 1 else None)
    if tearing:
        torn = folder / written[-1]
        run.check(f"crash.{label}.torn_file", torn_checkpoints(folder) == [torn],
                  f"{torn.name}: {torn.stat().st_size} bytes under its final name, no zip end record")
        with run.step(f"crash.{label}.relaunch"):
            relaunched = crash_job(kit, root)
        message = raised(relaunched.fit)
        relaunched.close()
        run.check(f"crash.{label}.relaunch_raises", message.startswith("FileExistsError") and
                  f"{torn} may conflict with a future checkpoint" in message, message)
        run.check_equal(f"crash.{label}.set_aside", [path.name for path in set_aside_torn_checkpoints(folder)],
                        [torn.name])

    with run.step(f"crash.{label}.resume"):
        resumed = crash_job(kit, root)
        start = int(resumed.state.timestamp.batch)
        resumed.fit()
        resumed.close()
    run.check_equal(f"crash.{label}.resumed_from", start, batch - 1)
    run.check_equal(f"crash.{label}.end", int(resumed.state.timestamp.batch), CRASH_BATCHES)
    run.check(f"crash.{label}.bitwise_equal", all(torch.equal(a, b) for a, b in zip(reference, kit.weights(resumed))),
              f"killed {where}, relaunched from {start}ba to {CRASH_BATCHES}ba vs {CRASH_BATCHES}ba uninterrupted, "
              "same seed")


def main(argv: list[str] | None = None) -> int:
    return run_main(SCRIPT, build(), body, DISTRIBUTIONS, argv=argv, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
