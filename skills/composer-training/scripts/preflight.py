#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "mosaicml==0.32.1",
#     "torch==2.7.0",
#     "torchvision==0.22.0",
# ]
# ///
"""Composer preflight: check the Trainer settings you are about to use, without training.

Give the values you would pass to Trainer (max_duration, precision, device_train_microbatch_size, run_name,
save_*/load_*/autoresume); --device is the device the run will use (auto: gpu when CUDA is here, as Composer's
device=None). Each setting is parsed with Composer's own code and printed as a decision, or as the problem with the
message Composer would raise (exit 1). A --load-path checkpoint, and with --autoresume the checkpoint the `latest`
link in the save folder points at, is first checked with the standard library (an empty, truncated, corrupted or
foreign file, or a link to nothing, is exit 2 before torch is imported), then opened with torch.load(weights_only=True)
and a short allowlist of plain-data types, so no code from the file runs: a file that holds more is exit 2 unless
--trust-checkpoint (checkpoint_smoke.py reads a --load-path the same way); the file is never modified and no folder
is created; its run name and timestamp are the `actual` of the load.checkpoint (autoresume.checkpoint) check in
--json. A full resume (--load-path without --load-weights-only) into a save folder with {run_name} and no run name
is a problem: Composer restores no run name, so the run would save into a new folder; pass the checkpoint's name
with --run-name. Torn checkpoints that a job killed while saving left in the save folder are named, with what to
do, when they would make fit() raise. Some traps Composer accepts are reported as problems too: `iter` durations
never end, `tok` durations never end unless tokens are counted, and a changed head needs three load options together.
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # importing sibling modules must not write __pycache__ into the skill folder
from _checkpoint_files import TRUST_FLAG, checkpoint_problem, read_checkpoint, torn_checkpoints
from smoke_contract import EXIT_CHECK_FAILED, EXIT_USAGE, SmokeError, build_parser, require, run_main

SCRIPT = "preflight.py"
DISTRIBUTIONS = ["mosaicml", "torch"]
PIP_LINE = "pip install mosaicml==0.32.1 'torch>=2.6,<2.7.1'"
LATEST_FILENAME = "latest-rank{rank}.pt"  # Trainer's save_latest_filename default (a test compares them)
SINGLE_PROCESS = dict(rank=0, local_rank=0, node_rank=0, world_size=1, local_world_size=1)
TOKEN_SOURCES = ("batches that are dicts with 'input_ids', a dataset with a max_seq_len attribute, or a DataSpec "
                 "with get_num_tokens_in_batch")


def make_parser() -> argparse.ArgumentParser:
    parser = build_parser(
        SCRIPT, __doc__,
        "python scripts/preflight.py --max-duration 2ep --autoresume --run-name my-run "
        "--save-folder 'checkpoints/{run_name}'")
    trainer = parser.add_argument_group("Trainer settings (as you would pass them)")
    trainer.add_argument("--max-duration", default=None,
                         help="a time string such as 10ba, 2ep, 512sp, 4096tok; a bare integer means epochs")
    trainer.add_argument("--tokens-counted", action="store_true",
                         help=f"your train data reports tokens ({TOKEN_SOURCES}); needed for tok durations")
    trainer.add_argument("--precision", default=None, help="fp32, amp_fp16, amp_bf16 or amp_fp8 (default: Composer's)")
    trainer.add_argument("--device-train-microbatch-size", default=None, help="an integer or 'auto'")
    trainer.add_argument("--run-name", default=None, help="default: $COMPOSER_RUN_NAME, then $RUN_NAME, as Composer")
    trainer.add_argument("--save-folder", default=None, help="may contain {run_name}")
    trainer.add_argument("--save-filename", default=None, help="default: Composer's")
    trainer.add_argument("--save-latest-filename", default=None, help="default: Composer's; 'none' for None")
    trainer.add_argument("--save-interval", default=None, help="default: Composer's")
    trainer.add_argument("--save-overwrite", action="store_true")
    trainer.add_argument("--autoresume", action="store_true")
    trainer.add_argument("--load-path", type=Path, default=None, help="a local checkpoint file (only read)")
    trainer.add_argument("--load-weights-only", action="store_true")
    trainer.add_argument("--no-load-strict-model-weights", dest="load_strict_model_weights", action="store_false",
                         help="load_strict_model_weights=False")
    trainer.add_argument("--load-ignore-keys", nargs="+", default=None, metavar="PATTERN",
                         help="glob patterns over checkpoint paths, e.g. 'state/model/head.*'")
    parser.add_argument("--changed-head", action="store_true",
                        help="the model's layers differ from the checkpoint's (e.g. a new num_classes head)")
    parser.add_argument(TRUST_FLAG, action="store_true",
                        help="open a checkpoint that holds more than plain data with weights_only=False (runs code "
                             "from the file: only for checkpoints you trust)")
    return parser


def validate(args) -> None:
    """Input files, checked with the standard library before anything heavy is imported."""
    if args.load_path is not None:
        problem = checkpoint_problem(args.load_path)
        if problem:
            raise SmokeError(f"--load-path {str(args.load_path)!r} {problem}", EXIT_USAGE)
    latest = autoresume_latest(args)
    if latest is None or not latest.is_symlink() and not latest.exists():
        return  # no checkpoint to resume yet: the run starts fresh (reported later)
    if not latest.exists():
        raise SmokeError(
            f"autoresume's {str(latest)!r} points at {os.readlink(latest)!r}, which does not exist: Composer would "
            "start this run from batch 0 without a word (and fit() raises FileExistsError if older checkpoints are "
            f"there); point it at the newest complete checkpoint (ln -sfn <checkpoint> {latest.name}) or delete it "
            "to start over", EXIT_USAGE)
    problem = checkpoint_problem(latest.resolve())
    if problem:
        raise SmokeError(f"autoresume's {str(latest)!r} points at {latest.resolve().name!r}, which {problem}",
                         EXIT_USAGE)


def autoresume_latest(args) -> Path | None:
    """The `latest` link autoresume would read (Composer's formatting, one process), or None when it cannot tell."""
    run_name = args.run_name or os.environ.get("COMPOSER_RUN_NAME") or os.environ.get("RUN_NAME")
    latest_name = args.save_latest_filename or LATEST_FILENAME
    if not (args.autoresume and run_name and args.save_folder) or latest_name.lower() == "none":
        return None
    try:
        return Path(args.save_folder.format(run_name=run_name, **SINGLE_PROCESS)) / latest_name.format(
            run_name=run_name, **SINGLE_PROCESS)
    except (KeyError, IndexError, ValueError):  # other placeholders: Composer's own formatting reports them later
        return None


def error_text(exc: BaseException) -> str:
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def parse_time(text: str):
    """Composer's parsing: an integer is epochs (as Trainer's ensure_time), anything else a time string."""
    from composer.core import Time, TimeUnit

    if text.strip().lstrip("-").isdigit():
        return Time.from_input(int(text), TimeUnit.EPOCH)
    return Time.from_timestring(text)


class Preflight:
    def __init__(self, run, args, device: str):
        import inspect

        from composer import Trainer
        from composer.core import Timestamp

        self.run, self.args, self.device = run, args, device
        defaults = inspect.signature(Trainer).parameters
        self.save_filename = args.save_filename or defaults["save_filename"].default
        latest = args.save_latest_filename or defaults["save_latest_filename"].default
        self.save_latest_filename = None if latest.lower() == "none" else latest
        self.save_interval = args.save_interval or defaults["save_interval"].default
        self.run_name = args.run_name or os.environ.get("COMPOSER_RUN_NAME") or os.environ.get("RUN_NAME")
        self.start = Timestamp()  # where training starts: 0, or a checkpoint's timestamp when resuming
        self.start_reason = "a fresh run starts at 0"
        self.problems: list[str] = []

    def decide(self, name: str, detail: str) -> None:
        self.run.check(name, True, detail)

    def problem(self, name: str, detail: str, **values) -> None:
        self.run.check(name, False, detail, **values)
        self.problems.append(f"{name}: {detail}")

    def checkpoint(self, path: Path, named: str, label: str):
        """The checkpoint's timestamp and state; one that cannot be read safely stops the run (exit 2). The check's
        actual carries the run name and timestamp read, for --json readers; expected holds what any readable
        checkpoint has (a text name, counts from 0)."""
        try:
            state, stamp = read_checkpoint(path, named, self.args.trust_checkpoint)
        except SmokeError as refusal:
            self.run.check(label, False, str(refusal))
            raise
        metadata = state.get("metadata", {})
        versions = (metadata.get("composer_env_info", {}).get("composer_version"), metadata.get("torch_version"))
        run_name = state.get("run_name")
        counts = {unit: int(getattr(stamp, unit)) for unit in ("epoch", "batch", "sample", "token")}
        self.run.check(label, True, f"{path}: run {run_name!r} at {stamp.batch}, {stamp.sample}, {stamp.epoch}; saved "
                       f"by composer {versions[0]}, torch {versions[1]}; {len(state['model'])} model tensors",
                       actual={"run_name": run_name, **counts},
                       expected={"run_name": {"startswith": ""} if isinstance(run_name, str) else None,
                                 **{unit: {">=": 0} for unit in counts}})
        return stamp, state

    def device_and_precision(self):
        from composer.core.precision import Precision, _validate_precision
        from composer.devices import DeviceCPU, DeviceGPU

        import torch

        composer_device = DeviceGPU() if self.device == "gpu" else DeviceCPU()
        default = "gpu" if torch.cuda.is_available() else "cpu"
        same = "the same" if default == self.device else f"{default}: pass device={self.device!r}"
        self.decide("device", f"{self.device} (Composer's device=None picks {same})")
        text = self.args.precision
        if text is None:
            default = "amp_fp16" if self.device == "gpu" else "fp32"
            note = "; on Ampere or newer GPUs pass precision='amp_bf16'" if self.device == "gpu" else ""
            self.decide("precision", f"{default} (Composer's default on {self.device}){note}")
        else:
            try:
                precision = Precision(text)
                _validate_precision(precision, composer_device)
            except ValueError as exc:
                self.problem("precision", error_text(exc))
            else:
                if precision == Precision.AMP_FP8 and not _has_module("transformer_engine"):
                    self.problem("precision", "amp_fp8 needs NVIDIA transformer_engine, which is not installed")
                else:
                    self.decide("precision", f"{precision.value}")

        size = self.args.device_train_microbatch_size
        if size is None:
            self.decide("device_train_microbatch_size", "None: each batch runs in one forward/backward")
        elif size == "auto":
            if self.device == "gpu":
                self.decide("device_train_microbatch_size", "auto: Composer adjusts the microbatch after CUDA "
                            "out-of-memory errors (it warns this may fail with CUDA errors; an integer is safer)")
            else:
                self.problem("device_train_microbatch_size", "ValueError: Can only use adaptive "
                             "device_train_microbatch_size on GPU. Please set device_train_microbatch_size >= 1.")
        elif size.strip().lstrip("-").isdigit():
            if int(size) >= 1:
                self.decide("device_train_microbatch_size", f"{int(size)} samples per forward/backward; gradients "
                            "accumulate over the batch")
            else:
                self.problem("device_train_microbatch_size", f"{int(size)}: Composer accepts it here and fails at "
                             "the first batch (RuntimeError from tensor.split); use an integer >= 1")
        else:
            self.problem("device_train_microbatch_size",
                         "ValueError: device_train_microbatch_size must be an int or ``'auto'``")

    def resume_point(self):
        """Autoresume and load_path decide where training starts."""
        args = self.args
        resumed = self.autoresume() if args.autoresume else False
        if args.load_path and not resumed:
            self.load(args.load_path)
        elif not args.load_path and (args.changed_head or args.load_ignore_keys):
            self.problem("load", "--changed-head / --load-ignore-keys need --load-path")

    def autoresume(self) -> bool:
        """True when autoresume will load a checkpoint (which then replaces load_path)."""
        from composer.utils import format_name_with_dist

        args = self.args
        if self.run_name is None:
            self.problem("autoresume", "ValueError: When autoresume=True, the `run_name` must be specified.")
            return False
        message = ""
        if args.save_folder is None:
            message += "The `save_folder` must be specified when autoresume is enabled. "
        if self.save_latest_filename is None:
            message += ("The `save_latest_filename` must be specified so autoresume knows where to load "
                        "checkpoints from. ")
        if message:
            self.problem("autoresume", f"ValueError: {message.strip()}")
            return False
        folder = Path(format_name_with_dist(args.save_folder, self.run_name))
        latest = folder / format_name_with_dist(self.save_latest_filename, self.run_name)
        shared = "" if "{run_name}" in args.save_folder else (
            "; save_folder has no {run_name}: any run pointed at this folder resumes its latest checkpoint")
        if not latest.exists():
            first = f"from load_path {args.load_path}" if args.load_path else "from scratch"
            self.decide("autoresume", f"no {latest} yet: this run starts {first}; a re-run of the same command "
                        f"resumes from the latest checkpoint{shared}")
            return False
        stamp, _ = self.checkpoint(latest.resolve(), f"autoresume's {str(latest)!r} -> {latest.resolve().name!r}",
                                   "autoresume.checkpoint")
        ignored = "; load_path and the load_* options are ignored" if args.load_path else ""
        self.decide("autoresume", f"resumes from {latest} -> {latest.resolve().name}{ignored}{shared}")
        self.start, self.start_reason = stamp, f"autoresume from {latest.resolve().name}"
        return True

    def load(self, path: Path):
        args = self.args
        stamp, state = self.checkpoint(path.resolve(), f"--load-path {str(path)!r}", "load.checkpoint")
        model_state = state["model"]
        if args.load_weights_only:
            self.decide("load", "weights only: model tensors from the checkpoint; timestamp, optimizer, schedulers "
                        "and RNG start fresh (max_duration counts from 0)")
        else:
            self.start, self.start_reason = stamp, f"a full load of {path.name}"
            self.decide("load", f"full resume: model, optimizer, schedulers, RNG and timestamp ({stamp.batch}) "
                        "restored; max_duration is the total, not the extra")
            self.continued_run_name(state.get("run_name"))

        keys = [f"state/model/{key}" for key in model_state]
        ignored: set[str] = set()
        for pattern in args.load_ignore_keys or []:
            matched = fnmatch.filter(keys, pattern)
            if not matched:
                self.problem("load_ignore_keys", f"{pattern!r} matches nothing in the checkpoint (Composer only "
                             f"warns); model keys look like {keys[0] if keys else 'state/model/<name>'}")
            ignored.update(matched)
        if ignored:
            shown = ", ".join(sorted(key.removeprefix("state/model/") for key in ignored)[:6])
            if len(ignored) == len(keys):
                self.problem("load_ignore_keys", "the patterns drop every model tensor: nothing would be loaded")
            else:
                self.decide("load_ignore_keys", f"drops {len(ignored)} of {len(keys)} model tensors: {shown}")

        if args.changed_head:
            missing = [option for option, given in (("load_weights_only=True", args.load_weights_only),
                                                    ("load_strict_model_weights=False",
                                                     not args.load_strict_model_weights),
                                                    ("load_ignore_keys=[<the head's keys>]", bool(ignored)))
                       if not given]
            if missing:
                self.problem("changed_head", f"a changed head needs load_weights_only=True, "
                             f"load_strict_model_weights=False and load_ignore_keys together; missing: "
                             f"{', '.join(missing)} (else 'size mismatch for ...' or 'Missing key(s) in state_dict')")
            else:
                self.decide("changed_head", "weights-only, non-strict, head keys ignored: the new head keeps its "
                            "fresh initialization")

    def continued_run_name(self, saved: str | None) -> None:
        """A full resume into a save_folder with {run_name}: Composer restores no run name, so without one given the
        run gets a generated name and saves into a new folder instead of the checkpoint's."""
        folder = self.args.save_folder
        if not folder or "{run_name}" not in folder or saved is None:
            return
        if self.run_name == saved:
            self.run.check("load.run_name", True, f"{saved!r}, the checkpoint's: saves into its folder",
                           actual=self.run_name, expected=saved)
        elif self.run_name is None:
            self.problem("load.run_name", f"no run_name: Composer generates a new one, so save_folder {folder!r} "
                         f"saves into a new folder, not the checkpoint's; to continue run {saved!r} pass "
                         f"--run-name {saved} (run_name={saved!r})", actual=None, expected=saved)
        else:
            self.decide("load.run_name", f"{self.run_name!r} saves into its own folder, not that of the checkpoint's "
                        f"run {saved!r} (pass --run-name {saved} to continue there)")

    def durations(self):
        from composer.core import TimeUnit

        args = self.args
        if args.max_duration is None:
            self.decide("max_duration", "not set: pass fit(duration=...), else fit() raises 'ValueError: "
                        "max_duration is a required argument and must be specified ...'")
            return
        if not args.max_duration.strip():  # Composer reads '' as 0 seconds and complains about wall clock time
            self.problem("max_duration", f"{args.max_duration!r} is empty: give a total in ep, ba, sp or tok, such "
                         "as 2ep or 10ba (a bare integer means epochs)")
            return
        try:
            duration = parse_time(args.max_duration)
        except (TypeError, ValueError) as exc:
            self.problem("max_duration", error_text(exc))
            return
        unit = duration.unit
        if unit == TimeUnit.DURATION:
            self.problem("max_duration", "ValueError: TimeUnit.DURATION is not allowed as a unit for max_duration")
        elif unit == TimeUnit.SECOND:
            self.problem("max_duration", "ValueError: Wall clock time not an allowed time unit.")
        elif unit == TimeUnit.ITERATION:
            self.problem("max_duration", f"{duration}: Composer accepts iterations but the Trainer has no public "
                         "iteration length, so the run never ends; use ep, ba, sp or tok")
        elif unit == TimeUnit.TOKEN and not args.tokens_counted:
            self.problem("max_duration", f"{duration}: tokens count 0 unless the train data gives them "
                         f"({TOKEN_SOURCES}), and then the run never ends; add --tokens-counted once it does")
        elif duration <= self.start.get(unit):
            self.problem("max_duration", f"ValueError: The max_duration ({duration}) is less than or equal to the "
                         f"elapsed training duration ({self.start.get(unit)}). No training would occur. Please "
                         "provide the `duration` or specify `reset_time=True` in Trainer.fit(). "
                         f"(start: {self.start_reason})")
        else:
            meaning = {TimeUnit.EPOCH: "epochs", TimeUnit.BATCH: "batches (optimizer steps)",
                       TimeUnit.SAMPLE: "samples", TimeUnit.TOKEN: "tokens"}[unit]
            self.decide("max_duration", f"{duration} = {duration.value} {meaning} in total; "
                        f"{self.start_reason} ({self.start.get(unit)})")

    def saving(self):
        from composer.utils import create_interval_scheduler, ensure_folder_has_no_conflicting_files
        from composer.utils import format_name_with_dist

        args = self.args
        if args.save_folder is None:
            self.decide("save", "save_folder not set: no checkpoints are written")
            return
        try:
            interval = parse_time(self.save_interval)
            create_interval_scheduler(interval)
        except (TypeError, ValueError, NotImplementedError) as exc:
            self.problem("save_interval", error_text(exc))
            return
        if interval.unit.value != "dur" and interval.value <= 0:
            self.problem("save_interval", f"{interval}: an interval <= 0 saves nothing, not even at the end")
            return
        folder = Path(format_name_with_dist(args.save_folder, self.run_name or "<run_name>"))
        where = f"{folder}/{self.save_filename} every {interval} and at the end; latest -> {self.save_latest_filename}"
        if args.save_overwrite or not folder.is_dir():
            overwrite = "; save_overwrite leaves older files of other runs in place" if args.save_overwrite else ""
            self.decide("save", f"{where}{overwrite}")
            return
        try:
            ensure_folder_has_no_conflicting_files(folder, self.save_filename, self.start)
        except FileExistsError as exc:
            torn = ", ".join(path.name for path in torn_checkpoints(folder))
            advice = (f" ({torn}: torn, a kill landed while saving it; rename it aside, e.g. to <name>.partial, and "
                      "relaunch: autoresume continues from latest)") if torn else ""
            self.problem("save", error_text(exc) + advice)
        else:
            self.decide("save", f"{where}; files already there are older than the start ({self.start.batch})")


def _has_module(name: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(name) is not None


def body(run) -> None:
    device = run.resolve_device()
    require("torch", PIP_LINE)
    require("composer", PIP_LINE)
    from contextlib import redirect_stdout

    with redirect_stdout(sys.stderr):  # stdout is reserved for the --json summary
        preflight = Preflight(run, run.args, device)
        preflight.device_and_precision()
        preflight.resume_point()  # before durations and saving: a resume moves the start
        preflight.durations()
        preflight.saving()
    if preflight.problems:
        count = len(preflight.problems)
        raise SmokeError(f"{count} problem{'s' if count > 1 else ''}: " + " | ".join(preflight.problems),
                         EXIT_CHECK_FAILED)


def main(argv: list[str] | None = None) -> int:
    return run_main(SCRIPT, make_parser(), body, DISTRIBUTIONS, argv=argv, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
