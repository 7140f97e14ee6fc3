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
"""Prove checkpointing, resume and crash recovery with the Transformers Trainer on a tiny random GPT-2, offline.

The data is 16 rows at batch 4: 4 steps an epoch, so step 4 ends the first epoch. Every run trains 6 steps.

--mode resume (the default) runs, all in --output-dir:
  straight/    6 steps, a checkpoint every 3: checkpoint-3/ and checkpoint-6/; checks what a checkpoint holds
  by-path/     train(resume_from_checkpoint="straight/checkpoint-3"): final weights bitwise equal to straight's
  latest/      a copy of checkpoint-3, then train(resume_from_checkpoint=True): picks it up, same final weights
  extended/    resume from straight/checkpoint-6 with max_steps raised to 8: the first resumed step runs at the
               old schedule's final learning rate, 0 (why a resume must keep max_steps)
  best/        evaluation and a save every 2 steps, load_best_model_at_end with a scripted metric: the model in
               memory at the end is checkpoint-4 (the best), and save_total_limit=1 still keeps it
--mode crash runs the kill drills. A child process (forked on CPU, spawned on GPU) trains with a checkpoint every
step and dies by SIGKILL; the parent then resumes in the same output_dir the way the skill teaches
(last_complete_checkpoint below, which is resume_from_checkpoint=True plus the two cases True gets wrong):
  uninterrupted/          6 steps, never killed: the reference weights
  kill-at-K/              killed right after checkpoint-K is written (--kill-at, default 1,2,4: the first step,
                          mid-epoch, the epoch boundary; 'random' draws K from --seed): resumes at step K+1, final
                          weights bitwise equal
  killed-while-saving-N/  killed in the middle of writing checkpoint-N/optimizer.pt (--kill-while-saving, default 3):
                          checkpoint-N is left without trainer_state.json (a copy stays in
                          killed-while-saving-N-as-killed/), resume_from_checkpoint=True raises FileNotFoundError;
                          deleting that folder and resuming gives bitwise-equal weights again
--mode all runs both.
--resume-from DIR resumes from a checkpoint-N folder this script wrote (kept with --keep, maybe on another machine)
and checks the final weights against an uninterrupted run with the same --seed on this device type. The flag is named
after train(resume_from_checkpoint=), which it calls (the composer-training skill's checkpoint_smoke.py says
--load-path, after its Trainer(load_path=)). The folder is only read, and it is checked with the standard library
first: a missing, empty, truncated or wrong-format file is exit 2 with one line naming the file, before torch is
imported. Then every file the Trainer loads is loaded the way
it loads it (torch.load(weights_only=True) for the pickles, which refuses a pickle that asks to call code, so none
runs); a file that fails is exit 2 with one line naming it, before training.
On a GPU the runs use bf16 and full_determinism=True so the bitwise comparisons hold there too.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import re
import shutil
import signal
import struct
import sys
import zipfile
from pathlib import Path

sys.dont_write_bytecode = True  # importing sibling modules must not write __pycache__ into the skill folder
from _tiny_runs import speed_up_tiny_runs  # one thread and a frozen heap: the same for every tiny run
from _tensors import differing_tensors
from smoke_contract import EXIT_USAGE, SmokeError, build_parser, require, run_main

SCRIPT = "checkpoint_smoke.py"
DISTRIBUTIONS = ["transformers", "torch", "accelerate", "safetensors", "tokenizers"]
VOCABULARY = ["[PAD]", "[UNK]", "</s>", *"the a movie film plot was is very good bad fine dull".split()]
CHECKPOINT_FILES = {"config.json", "generation_config.json", "model.safetensors", "optimizer.pt", "scheduler.pt",
                    "rng_state.pth", "trainer_state.json", "training_args.bin", "tokenizer.json",
                    "tokenizer_config.json"}
MAX_STEPS, BATCH_SIZE = 6, 4
# The steps a drill may kill at: after checkpoint-6, the last, there would be nothing left to resume
KILL_AT_STEPS, KILL_WHILE_SAVING_STEPS = (1, MAX_STEPS - 1), (1, MAX_STEPS)
CHILD_TIMEOUT_S = 300
EXAMPLES = [f"python scripts/{SCRIPT} --device auto --json",
            f"python scripts/{SCRIPT} --mode crash --kill-at 1,2,4 --kill-while-saving 3 --json",
            f"python scripts/{SCRIPT} --output-dir kept && "
            f"python scripts/{SCRIPT} --resume-from kept/straight/checkpoint-3"]


def steps_between(low: int, high: int):
    """argparse type for --kill-at and --kill-while-saving: a comma list of steps and 'random' (drawn from --seed)."""

    def parse(text: str) -> list[int | str]:
        steps = []
        for item in text.split(","):
            if item == "random":
                steps.append(item)
                continue
            try:
                step = int(item)
            except ValueError:
                raise argparse.ArgumentTypeError(f"{text!r} is not a comma list of steps or 'random'") from None
            if not low <= step <= high:
                raise argparse.ArgumentTypeError(f"step {step} is not between {low} and {high}")
            steps.append(step)
        return steps

    return parse


def draw_steps(steps: list[int | str], bounds: tuple[int, int], rng: random.Random) -> list[int]:
    """Replace 'random' by a step drawn from ``rng`` (seeded by --seed, so a run can be repeated); drop repeats."""
    drawn = []
    for step in steps:
        step = rng.randint(*bounds) if step == "random" else step
        if step not in drawn:
            drawn.append(step)
    return drawn


def make_parser() -> argparse.ArgumentParser:
    parser = build_parser(SCRIPT, __doc__.split("\n\n")[0], "\n  ".join(EXAMPLES))
    parser.add_argument("--mode", choices=["resume", "crash", "all"], default=None,
                        help="resume: the checkpoint and resume checks (default); crash: the kill drills; all: both")
    parser.add_argument("--kill-at", type=steps_between(*KILL_AT_STEPS), default=None, metavar="STEPS",
                        help="crash drills: SIGKILL right after checkpoint-K is written, for each K in a comma list "
                             f"(1 to {MAX_STEPS - 1}; 'random' draws one from --seed) (default: 1,2,4)")
    parser.add_argument("--kill-while-saving", type=steps_between(*KILL_WHILE_SAVING_STEPS), default=None,
                        metavar="STEPS", help="crash drills: SIGKILL in the middle of writing checkpoint-N, for each "
                        f"N in a comma list (1 to {MAX_STEPS}; 'random' draws one from --seed) (default: 3)")
    parser.add_argument("--resume-from", type=Path, default=None, metavar="DIR",
                        help="resume from this checkpoint-N folder written by this script (only read) and compare "
                             "with an uninterrupted run; runs alone, without the drills (named after "
                             "train(resume_from_checkpoint=), which it calls)")
    return parser


def validate(args) -> None:
    """Usage errors and a damaged --resume-from folder, found with the standard library before torch loads."""
    if args.resume_from is not None:
        if args.mode is not None or args.kill_at is not None or args.kill_while_saving is not None:
            raise SmokeError("--resume-from runs on its own: leave out --mode, --kill-at and --kill-while-saving",
                             EXIT_USAGE)
        problem = checkpoint_problem(args.resume_from)
        if problem:
            raise SmokeError(f"--resume-from: {problem}", EXIT_USAGE)
        if args.output_dir is not None and args.resume_from.resolve() in args.output_dir.resolve().parents:
            raise SmokeError("--output-dir is inside --resume-from, which is only read: give a folder elsewhere",
                             EXIT_USAGE)
        return
    args.mode = args.mode or "resume"
    if args.mode == "resume" and (args.kill_at is not None or args.kill_while_saving is not None):
        raise SmokeError("--kill-at and --kill-while-saving need --mode crash or --mode all", EXIT_USAGE)
    rng = random.Random(args.seed)  # the same --seed draws the same 'random' kill points
    args.kill_at = draw_steps([1, 2, 4] if args.kill_at is None else args.kill_at, KILL_AT_STEPS, rng)
    args.kill_while_saving = draw_steps([3] if args.kill_while_saving is None else args.kill_while_saving,
                                        KILL_WHILE_SAVING_STEPS, rng)


# What the Trainer does when a file of the checkpoint it resumes from is missing
# (proven by tests/test_fault_drills_transformers.py).
IF_MISSING = {
    "model.safetensors": "the folder holds no weights",
    "optimizer.pt": "the Trainer would silently resume with a fresh optimizer and learning-rate schedule",
    "scheduler.pt": "the Trainer would silently resume with a fresh optimizer and learning-rate schedule",
    "rng_state.pth": "the Trainer would silently resume with other random numbers, so the run is not reproduced",
}
COPY_AGAIN = "copy the checkpoint folder again, or resume from an earlier complete checkpoint-N"
ZIP_ENCRYPTED = 0x1  # bit 0 of a zip member's general-purpose flags


def checkpoint_problem(folder: Path) -> str | None:
    """One line naming what makes ``folder`` unfit to resume from and what to do, or None. Reads, never writes."""
    try:
        return _checkpoint_problem(folder)
    except OSError as exc:
        return f"{str(exc.filename or folder)!r} cannot be read ({exc.strerror or exc}); {COPY_AGAIN}"
    except ValueError as exc:  # a path the OS cannot take, such as one with a NUL character
        return f"{str(folder)!r} is not a usable path ({exc})"


def _checkpoint_problem(folder: Path) -> str | None:
    if not folder.is_dir():
        return f"{str(folder)!r} {'is not a folder' if folder.exists() else 'does not exist'}"
    state_file = folder / "trainer_state.json"
    if not state_file.exists():
        if (folder / "model.safetensors").exists():
            return (f"{str(state_file)!r} is missing: the checkpoint is incomplete (the Trainer writes that file "
                    "last, so the run was killed while saving); resume from the previous checkpoint-N and delete "
                    "this folder")
        inside = sorted((path for path in folder.glob("checkpoint-*") if path.is_dir()), key=checkpoint_step)
        if inside:
            return f"{str(folder)!r} holds checkpoint folders: pass one of them, for example {str(inside[-1])!r}"
        return f"{str(folder)!r} is not a checkpoint folder (no trainer_state.json, no model.safetensors)"
    if problem := json_problem(state_file):
        return f"{problem}; {COPY_AGAIN}"
    state = parse_json(state_file.read_text(encoding="utf-8"))
    if not (isinstance(state, dict) and is_int(state.get("max_steps"), MAX_STEPS, MAX_STEPS)
            and is_int(state.get("train_batch_size"), BATCH_SIZE, BATCH_SIZE)
            and isinstance(state.get("log_history"), list)):  # the Trainer appends to it
        return (f"{str(state_file)!r} is not from a run of this script (max_steps {MAX_STEPS}, batch size "
                f"{BATCH_SIZE}); pass a checkpoint-N folder that {SCRIPT} wrote")
    if not is_int(state.get("global_step"), 1, MAX_STEPS):
        return (f"{str(state_file)!r} is damaged: global_step {state.get('global_step')!r} is not a step of this "
                f"script's {MAX_STEPS}-step run; {COPY_AGAIN}")
    callbacks = state.get("stateful_callbacks")
    if not (isinstance(callbacks, dict) and isinstance(callbacks.get("TrainerControl"), dict)):
        # The Trainer saves the control state there; resumed without it, its first save raises KeyError
        return (f"{str(state_file)!r} is damaged: stateful_callbacks holds no TrainerControl state; {COPY_AGAIN}")
    for name, if_missing in IF_MISSING.items():
        path = folder / name
        if not path.exists():
            return f"{str(path)!r} is missing: {if_missing}; {COPY_AGAIN}"
        if problem := (safetensors_problem if name.endswith(".safetensors") else torch_file_problem)(path):
            return f"{problem}; {COPY_AGAIN}"
    config = folder / "config.json"  # optional, but the Trainer reads it when it is there
    if config.exists() and (problem := json_problem(config)):
        return f"{problem}; {COPY_AGAIN}"
    return None


def checkpoint_step(path: Path) -> int:
    suffix = path.name.split("-", 1)[1]
    return int(suffix) if suffix.isdigit() else -1


def is_int(value, low: int, high: int) -> bool:
    """An integer from low to high; JSON's true, 6.0 and 1e30 are not (Python counts True as 1)."""
    return type(value) is int and low <= value <= high


def parse_json(text: str | bytes):
    """json.loads, where JSON nested deeper than Python's parser can recurse is a ValueError like other damage."""
    try:
        return json.loads(text)
    except RecursionError:
        raise ValueError("nested too deeply to parse") from None


def json_problem(path: Path) -> str | None:
    if path.stat().st_size == 0:
        return f"{str(path)!r} is empty (0 bytes)"
    try:
        parse_json(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        return f"{str(path)!r} is damaged: not valid JSON ({exc})"
    return None


def safetensors_problem(path: Path) -> str | None:
    """A safetensors file: an 8-byte little-endian header length, a JSON header, then the tensor bytes."""
    size = path.stat().st_size
    if size == 0:
        return f"{str(path)!r} is empty (0 bytes)"
    with open(path, "rb") as file:
        (header_size,) = struct.unpack("<Q", file.read(8).ljust(8, b"\0"))
        if size < 8 or header_size > size - 8:
            return (f"{str(path)!r} is truncated or not a safetensors file (header of {header_size} bytes, "
                    f"file of {size})")
        try:
            end = tensors_end(parse_json(file.read(header_size)))
        except (ValueError, UnicodeDecodeError):
            end = None
    if end is None:
        return f"{str(path)!r} is not a safetensors file (its header is not a safetensors JSON header)"
    if 8 + header_size + end != size:
        return f"{str(path)!r} is truncated: its header describes {8 + header_size + end} bytes, the file has {size}"
    return None


def tensors_end(header) -> int | None:
    """Where the last tensor of a safetensors header ends, or None unless every entry has a dtype, a shape of
    counts and two ordered integer data_offsets (how the tensors fit together is left to the safetensors loader)."""
    if not isinstance(header, dict):
        return None
    end = 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if not isinstance(entry, dict):
            return None
        shape, offsets = entry.get("shape"), entry.get("data_offsets")
        if not (isinstance(entry.get("dtype"), str) and isinstance(shape, list)
                and all(is_int(count, 0, sys.maxsize) for count in shape)
                and isinstance(offsets, list) and len(offsets) == 2
                and all(is_int(offset, 0, sys.maxsize) for offset in offsets) and offsets[0] <= offsets[1]):
            return None
        end = max(end, offsets[1])
    return end


def torch_file_problem(path: Path) -> str | None:
    """A torch.save file is a zip archive holding <name>/data.pkl; every member carries a CRC."""
    if path.stat().st_size == 0:
        return f"{str(path)!r} is empty (0 bytes)"
    if not zipfile.is_zipfile(path):
        return f"{str(path)!r} is truncated or not a torch.save file (no complete zip archive)"
    try:
        with zipfile.ZipFile(path) as archive:
            if not any(name.endswith("/data.pkl") for name in archive.namelist()):
                return f"{str(path)!r} is a zip archive but not a torch.save file (no data.pkl)"
            # torch.save stores every member as is: an encrypted or compressed one was not written by it
            packed = [member for member in archive.infolist()
                      if member.flag_bits & ZIP_ENCRYPTED or member.compress_type != zipfile.ZIP_STORED]
            if packed:
                return (f"{str(path)!r} is not a torch.save file: its member {packed[0].filename!r} is "
                        f"{'encrypted' if packed[0].flag_bits & ZIP_ENCRYPTED else 'compressed'}")
            damaged = archive.testzip()
    except (zipfile.BadZipFile, EOFError, ValueError) as exc:
        return f"{str(path)!r} is damaged ({exc})"
    return f"{str(path)!r} is damaged: {damaged} fails its CRC check" if damaged else None


def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({token: i for i, token in enumerate(VOCABULARY)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="</s>")


class Kit:
    """Everything the runs share: the tokenizer, the data and how to build a fresh model and Trainer."""

    def __init__(self, seed: int, output_dir: Path, device: str):
        import torch

        self.seed, self.output_dir, self.device = seed, output_dir, device
        self.torch = torch
        self.tokenizer = build_tokenizer()
        generator = torch.Generator().manual_seed(seed)
        token_ids = torch.randint(3, len(VOCABULARY), (16, 8), generator=generator)
        # Causal LM data: the labels are the inputs (the model shifts them). 16 rows, batch 4: 4 steps an epoch.
        self.train_data = [{"input_ids": row, "labels": row} for row in token_ids]
        self.eval_data = self.train_data[:4]
        self._uninterrupted = None

    def model(self):
        from transformers import AutoConfig, AutoModelForCausalLM

        self.torch.manual_seed(self.seed)  # the same initial weights in every run
        config = AutoConfig.for_model("gpt2", vocab_size=len(VOCABULARY), n_embd=32, n_layer=2, n_head=2,
                                      n_positions=16, bos_token_id=2, eos_token_id=2, pad_token_id=0)
        return AutoModelForCausalLM.from_config(config)

    def trainer(self, name: str, max_steps: int = MAX_STEPS, compute_metrics=None, **extra):
        from transformers import Trainer, TrainingArguments

        gpu = self.device == "gpu"
        arguments = dict(output_dir=str(self.output_dir / name), max_steps=max_steps,
                         per_device_train_batch_size=BATCH_SIZE, per_device_eval_batch_size=BATCH_SIZE,
                         learning_rate=1e-3, save_strategy="steps", save_steps=3, logging_steps=1, report_to="none",
                         seed=self.seed, use_cpu=not gpu, bf16=gpu, full_determinism=gpu, disable_tqdm=True)
        arguments.update(extra)
        return Trainer(model=self.model(), args=TrainingArguments(**arguments), train_dataset=self.train_data,
                       eval_dataset=self.eval_data, processing_class=self.tokenizer, compute_metrics=compute_metrics)

    def weights(self, source) -> dict:
        """The weights of a checkpoint folder (model.safetensors) or of a model in memory."""
        if isinstance(source, Path):
            from safetensors.torch import load_file

            return load_file(str(source / "model.safetensors"))
        return {name: tensor.detach().cpu().clone() for name, tensor in source.state_dict().items()}

    def uninterrupted(self) -> dict:
        """The final weights of a run that is never killed: what every resumed run must end with, bit for bit."""
        if self._uninterrupted is None:
            trainer = self.trainer("uninterrupted", save_strategy="no")
            trainer.train()
            self._uninterrupted = self.weights(trainer.model)
        return self._uninterrupted


def checkpoint_names(folder: Path) -> list[str]:
    return [path.name for path in sorted(folder.glob("checkpoint-*"), key=checkpoint_step)]


def trained_steps(trainer) -> list[int]:
    return [entry["step"] for entry in trainer.state.log_history if "loss" in entry]


def has_trainer_state(checkpoint: str) -> bool:
    try:
        with open(os.path.join(checkpoint, "trainer_state.json"), encoding="utf-8") as file:
            json.load(file)
        return True
    except (OSError, ValueError):  # missing, or cut short by the kill
        return False


def last_complete_checkpoint(output_dir: str) -> str | None:
    """What to resume from after a kill, as references/troubleshooting.md teaches: resume_from_checkpoint=True
    picks the newest checkpoint-N even when the kill landed while it was written (no trainer_state.json, which the
    Trainer writes last) and raises when there is none; this deletes incomplete ones and returns None (start fresh)
    when nothing complete is left."""
    from transformers.trainer_utils import get_last_checkpoint

    last = get_last_checkpoint(output_dir)
    while last is not None and not has_trainer_state(last):
        shutil.rmtree(last)  # killed while saving: optimizer, schedule and RNG state are missing or partial
        last = get_last_checkpoint(output_dir)
    return last


def straight_run(run, kit):
    with run.step("straight.train"):
        trainer = kit.trainer("straight")
        trainer.train()
    folder = Path(trainer.args.output_dir)
    # A final checkpoint is written even when max_steps is not a multiple of save_steps; here it is one.
    run.check_equal("straight.checkpoints", checkpoint_names(folder), ["checkpoint-3", "checkpoint-6"])
    present = {path.name for path in (folder / "checkpoint-3").iterdir()}
    run.check("checkpoint.contents", CHECKPOINT_FILES <= present,
              f"missing {sorted(CHECKPOINT_FILES - present)}; present {sorted(present)}", actual=sorted(present),
              expected={"contains": sorted(CHECKPOINT_FILES)})
    with run.step("save_model.contents"):
        trainer.save_model(str(run.output_dir / "saved-model"))  # weights, config, tokenizer: no training state
    saved = {path.name for path in (run.output_dir / "saved-model").iterdir()}
    training_state = ["optimizer.pt", "rng_state.pth", "scheduler.pt"]
    run.check("save_model.contents", "model.safetensors" in saved and not saved & set(training_state),
              f"save_model wrote {sorted(saved)}", actual=sorted(saved),
              expected={"contains": ["model.safetensors"], "excludes": training_state})
    return folder


def resumed_runs(run, kit, straight: Path) -> None:
    final = kit.weights(straight / "checkpoint-6")
    with run.step("resume.by_path"):
        trainer = kit.trainer("by-path")
        trainer.train(resume_from_checkpoint=str(straight / "checkpoint-3"))
    differing = differing_tensors(final, kit.weights(trainer.model))
    run.check("resume.by_path.bitwise_equal", not differing, f"{len(differing)} tensors differ from the straight run",
              actual=differing, expected=[])

    latest = run.output_dir / "latest"
    with run.step("resume.latest.copy"):
        shutil.copytree(straight / "checkpoint-3", latest / "checkpoint-3")
    with run.step("resume.latest"):
        trainer = kit.trainer("latest")
        trainer.train(resume_from_checkpoint=True)  # the newest checkpoint-* in output_dir
    run.check_equal("resume.latest.steps_run", trained_steps(trainer)[3:], [4, 5, 6])
    differing = differing_tensors(final, kit.weights(trainer.model))
    run.check("resume.latest.bitwise_equal", not differing, f"{len(differing)} tensors differ from the straight run",
              actual=differing, expected=[])

    with run.step("resume.larger_max_steps"):
        trainer = kit.trainer("extended", max_steps=8)
        trainer.train(resume_from_checkpoint=str(straight / "checkpoint-6"))
    rates = {entry["step"]: entry["learning_rate"] for entry in trainer.state.log_history if "learning_rate" in entry}
    run.check_equal("resume.larger_max_steps.first_learning_rate", rates.get(7), 0.0)


def best_model_run(run, kit) -> None:
    scores = iter([0.5, 0.9, 0.7])  # evaluations at steps 2, 4, 6: step 4 is the best

    def compute_metrics(_):
        return {"score": next(scores)}

    with run.step("best.train"):
        trainer = kit.trainer("best", compute_metrics=compute_metrics, eval_strategy="steps", eval_steps=2,
                                save_steps=2, save_total_limit=1, load_best_model_at_end=True,
                                metric_for_best_model="score", greater_is_better=True)
        trainer.train()
    folder = Path(trainer.args.output_dir)
    run.check_equal("best.checkpoint", Path(trainer.state.best_model_checkpoint or "").name, "checkpoint-4")
    differing = differing_tensors(kit.weights(folder / "checkpoint-4"), kit.weights(trainer.model))
    run.check("best.loaded_at_end", not differing, f"{len(differing)} tensors differ from checkpoint-4",
              actual=differing, expected=[])
    run.check_equal("best.only_best_kept_with_save_total_limit_1", checkpoint_names(folder), ["checkpoint-4"])


def crash_child(job: dict) -> None:
    """The child of a crash drill: train with a checkpoint every step until a SIGKILL ends this process.

    ``job`` holds plain values, because on GPU this runs in a spawned interpreter (CUDA cannot be forked)."""
    import torch
    from transformers import TrainerCallback

    class KillAfterSave(TrainerCallback):
        def on_save(self, args, state, control, **kwargs):
            if state.global_step == job["step"]:
                os.kill(os.getpid(), signal.SIGKILL)

    with contextlib.redirect_stdout(sys.stderr):  # Trainer prints log dicts; the parent's stdout carries --json
        if job["device"] == "cpu":
            torch.set_num_threads(1)
        kit = Kit(job["seed"], Path(job["output_dir"]), job["device"])
        trainer = kit.trainer(job["folder"], save_steps=1)
        if job["while_saving"]:
            die_inside_save(torch, Path(trainer.args.output_dir, f"checkpoint-{job['step']}", "optimizer.pt"))
        else:
            trainer.add_callback(KillAfterSave())
        try:
            trainer.train()
        except Exception as exc:  # noqa: BLE001 - one line for the parent's log; the parent fails the check
            print(f"the child's training failed: {type(exc).__name__}: {exc}", file=sys.stderr)
            sys.exit(1)


def die_inside_save(torch, target: Path) -> None:
    """Make torch.save SIGKILL this process once 4 KiB of ``target`` are written: a kill that lands inside
    Trainer._save_checkpoint, in the middle of optimizer.pt: after the weights, before the scheduler, RNG and state."""
    save = torch.save

    class DyingFile:
        def __init__(self, file):
            self.file = file

        def write(self, data) -> int:
            written = self.file.write(data)
            if self.file.tell() >= 4096:  # the zip header and the first records are out: die mid-file
                self.file.flush()  # these bytes reach the OS, as a real half-written file's would
                os.kill(os.getpid(), signal.SIGKILL)
            return written

        def flush(self) -> None:
            self.file.flush()

    def dying_save(obj, destination, *args, **kwargs):
        if not isinstance(destination, (str, os.PathLike)) or Path(destination) != target:
            return save(obj, destination, *args, **kwargs)
        with open(destination, "wb") as file:
            return save(obj, DyingFile(file), *args, **kwargs)

    torch.save = dying_save


def crash_drill(run, kit, context, step: int, while_saving: bool) -> None:
    name = f"killed-while-saving-{step}" if while_saving else f"kill-at-{step}"
    check = f"crash.{name.replace('-', '_')}"
    job = dict(seed=kit.seed, output_dir=str(kit.output_dir), device=kit.device, folder=name, step=step,
               while_saving=while_saving)
    child = context.Process(target=crash_child, args=(job,))
    child.start()
    child.join(CHILD_TIMEOUT_S)
    exit_code = child.exitcode if child.exitcode is not None else f"still running after {CHILD_TIMEOUT_S} s"
    if child.is_alive():
        child.kill()
        child.join()
    folder = run.output_dir / name
    left = checkpoint_names(folder)
    run.check_equal(f"{check}.killed", {"exit_code": exit_code, "checkpoints": left},
                    {"exit_code": -signal.SIGKILL, "checkpoints": [f"checkpoint-{n}" for n in range(1, step + 1)]})
    if exit_code != -signal.SIGKILL:
        return
    if while_saving:
        incomplete = folder / f"checkpoint-{step}"
        files = {path.name: path.stat().st_size for path in sorted(incomplete.iterdir())}
        optimizer = incomplete / "optimizer.pt"
        run.check(f"{check}.left_on_disk", "trainer_state.json" not in files and "model.safetensors" in files and
                  optimizer.exists() and not zipfile.is_zipfile(optimizer),
                  {"run_folder": sorted(path.name for path in folder.iterdir()), incomplete.name: files},
                  actual={"files": list(files), "optimizer_is_zip": zipfile.is_zipfile(optimizer)},
                  expected={"files": {"contains": ["model.safetensors", "optimizer.pt"],
                                      "excludes": ["trainer_state.json"]}, "optimizer_is_zip": False})
        with run.step(f"{check}.copy_as_killed"):  # to inspect (--keep)
            shutil.copytree(incomplete, run.output_dir / f"{name}-as-killed" / incomplete.name)
        try:  # what resume_from_checkpoint=True does with it
            kit.trainer(name, save_steps=1).train(resume_from_checkpoint=True)
            outcome = "no error"
        except Exception as exc:  # noqa: BLE001 - the outcome is the check
            outcome = f"{type(exc).__name__}: {exc}"
        raises = {"startswith": "FileNotFoundError", "contains": str(incomplete / "trainer_state.json")}
        run.check(f"{check}.resume_true_raises", outcome.startswith(raises["startswith"]) and
                  raises["contains"] in outcome, outcome, actual=outcome, expected=raises)
    with run.step(f"{check}.resume"):
        trainer = kit.trainer(name, save_steps=1)
        start = last_complete_checkpoint(trainer.args.output_dir)
        trainer.train(resume_from_checkpoint=start)
    resumed_at = step - 1 if while_saving else step
    # log_history starts with the resumed checkpoint's entries; the steps after them ran in this process
    run.check_equal(f"{check}.resumed", {"from": start and Path(start).name,
                                         "steps": trained_steps(trainer)[resumed_at:]},
                    {"from": f"checkpoint-{resumed_at}" if resumed_at else None,
                     "steps": list(range(resumed_at + 1, MAX_STEPS + 1))})
    differing = differing_tensors(kit.uninterrupted(), kit.weights(trainer.model))
    run.check(f"{check}.bitwise_equal", not differing, f"{len(differing)} tensors differ from the uninterrupted run",
              actual=differing, expected=[])


def crash_drills(run, kit) -> None:
    import multiprocessing

    with run.step("crash.uninterrupted"):
        kit.uninterrupted()
    # One target function; only the start: a fork shares the imported libraries (fast), CUDA needs a fresh process.
    context = multiprocessing.get_context("fork" if run.device == "cpu" else "spawn")
    for step in run.args.kill_at:
        crash_drill(run, kit, context, step, while_saving=False)
    for step in run.args.kill_while_saving:
        crash_drill(run, kit, context, step, while_saving=True)


def loading_problem(folder: Path) -> str | None:
    """Load each file of ``folder`` the Trainer loads, as it loads it, and name the first it cannot: damage the
    standard-library checks do not see. The pickles go through torch.load(weights_only=True), as in the Trainer,
    which refuses to call anything a pickle names beyond tensors and plain containers: no code in them runs."""
    import pickle

    import torch
    from safetensors.torch import load_file
    from transformers import PreTrainedConfig
    from transformers.trainer_callback import TrainerState
    from transformers.trainer_pt_utils import safe_globals

    def load_pickle(path: str):
        return torch.load(path, map_location="cpu", weights_only=True)

    def load_rng_state(path: str):
        with safe_globals():  # the numpy types of the RNG state, which Trainer._load_rng_state allows too
            return load_pickle(path)

    loaders = {"trainer_state.json": TrainerState.load_from_json, "config.json": PreTrainedConfig.from_json_file,
               "model.safetensors": load_file, "optimizer.pt": load_pickle, "scheduler.pt": load_pickle,
               "rng_state.pth": load_rng_state}
    for name, load in loaders.items():
        path = folder / name
        if not path.exists():  # config.json is optional; the others were checked
            continue
        try:
            load(str(path))
        except Exception as exc:  # noqa: BLE001 - whatever the library's loader raises, the Trainer cannot resume
            called = re.search(r"GLOBAL ([\w.]+)", str(exc)) if isinstance(exc, pickle.UnpicklingError) else None
            if called:
                return (f"{str(path)!r} asks to call {called.group(1)} when unpickled: torch.load(weights_only=True), "
                        "as the Trainer loads it, refused, so nothing ran; a checkpoint holds tensors and plain "
                        "values only: never load this file with weights_only=False, resume from a checkpoint-N you "
                        "trust")
            return (f"{str(path)!r} cannot be loaded as the Trainer loads it "
                    f"({type(exc).__name__}: {' '.join(str(exc).split())[:200]}); {COPY_AGAIN}")
    return None


def resume_from_folder(run, kit) -> None:
    from transformers import TrainerCallback

    source = run.args.resume_from.resolve()
    if problem := loading_problem(source):
        raise SmokeError(f"--resume-from: {problem}", EXIT_USAGE)
    start = json.loads((source / "trainer_state.json").read_text(encoding="utf-8"))["global_step"]
    loaded, steps_run = {}, []

    class Observe(TrainerCallback):
        def on_train_begin(self, args, state, control, model=None, **kwargs):
            loaded.update(kit.weights(model))

        def on_step_end(self, args, state, control, **kwargs):
            steps_run.append(state.global_step)  # not from log_history: the given file's entries are not read

    with run.step("resume_from.train"):
        trainer = kit.trainer("resumed")
        trainer.add_callback(Observe())
        trainer.train(resume_from_checkpoint=str(source))
    differing = differing_tensors(kit.weights(source), loaded)
    run.check("resume_from.weights_loaded", not differing, f"{len(differing)} tensors differ from {source.name}",
              actual=differing, expected=[])
    run.check_equal("resume_from.steps_run", steps_run, list(range(start + 1, MAX_STEPS + 1)))
    differing = differing_tensors(kit.uninterrupted(), kit.weights(trainer.model))
    run.check("resume_from.bitwise_equal", not differing, f"{len(differing)} tensors differ from an uninterrupted run"
              f" with --seed {kit.seed} on {kit.device} (was the checkpoint written with them?)", actual=differing,
              expected=[])


def body(run) -> None:
    """Each part runs inside a step named after it: an error outside that part's own steps (a file system that fails,
    a listing that raises) fails that named check, never an unnamed "unexpected" error."""
    run.resolve_device()
    require("transformers", "pip install 'transformers[torch]'")
    require("safetensors", "pip install safetensors")
    speed_up_tiny_runs(run)
    with contextlib.redirect_stdout(sys.stderr):  # Trainer prints log dicts; stdout stays for --json
        with run.step("setup"):
            kit = Kit(run.args.seed, run.output_dir, run.device)
        if run.args.resume_from is not None:
            with run.step("resume_from"):
                resume_from_folder(run, kit)
            return
        if run.args.mode in ("resume", "all"):
            with run.step("resume"):
                straight = straight_run(run, kit)
                resumed_runs(run, kit, straight)
            with run.step("best"):
                best_model_run(run, kit)
        if run.args.mode in ("crash", "all"):
            with run.step("crash"):
                crash_drills(run, kit)


def main(argv=None) -> int:
    return run_main(SCRIPT, make_parser(), body, DISTRIBUTIONS, argv, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
