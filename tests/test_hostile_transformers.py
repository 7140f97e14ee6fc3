"""What an outside hostile tester found in the transformers-training scripts (issues #15 and #16), each proven with
real files and real runs: crafted checkpoint files are exit 2 naming the file and are left byte for byte as they
were, a pickle that asks to run code is refused and runs none, TrainingArguments values that cannot train are exit 2
with strict JSON, flag prefixes are refused, 'random' kill points come from --seed, and load_best_model_at_end with
evaluations between saves gets a notice."""

from __future__ import annotations

import json
import os
import shutil
import struct
import zipfile
from pathlib import Path

import pytest

from support.checks import assert_equal_check
from support.harness import assert_one_line_error, import_script, run_python, run_with_full_disk_for_copies
from support.transformers_kit import arguments, rows, tiny_classifier
from support.transformers_scripts import (ARGS, CHECKPOINT, COPY_AGAIN, SCRIPTS, MkdirWhenUnpickled,
                                          assert_refused_before_torch, fingerprint, good_checkpoint)

checkpoint_smoke = import_script(SCRIPTS / "checkpoint_smoke.py")  # stdlib helpers; heavy imports only in body()
training_args_smoke = import_script(SCRIPTS / "training_args_smoke.py")


# ---- checkpoint_smoke.py --resume-from: crafted files ----

def patch_zip_member(path: Path, flag_bits: int = 0, compress_type: int | None = None) -> None:
    """Set bits of the general-purpose flags (bit 0: encrypted) or the compression method (9: deflate64) of the
    data.pkl entry in the zip's central directory, which is where zipfile reads them."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as archive:
        position = archive.start_dir
    while data[position:position + 4] == b"PK\x01\x02":  # a central directory entry
        name_length, extra_length, comment_length = struct.unpack_from("<HHH", data, position + 28)
        if data[position + 46:position + 46 + name_length].endswith(b"/data.pkl"):
            flags, method = struct.unpack_from("<HH", data, position + 8)
            struct.pack_into("<HH", data, position + 8, flags | flag_bits,
                             method if compress_type is None else compress_type)
        position += 46 + name_length + extra_length + comment_length
    path.write_bytes(bytes(data))


def nest_deeply(path: Path) -> None:
    path.write_text("[" * 100_000 + "]" * 100_000)


def set_state(**fields):
    def damage(path: Path) -> None:
        state = json.loads(path.read_text())
        path.write_text(json.dumps({**state, **fields}))

    return damage


def rewrite_safetensors_header(change):
    """Apply ``change(header)`` to a safetensors file's JSON header, the tensor bytes kept."""

    def damage(path: Path) -> None:
        data = path.read_bytes()
        (size,) = struct.unpack("<Q", data[:8])
        header = json.loads(data[8:8 + size])
        change({name: entry for name, entry in header.items() if name != "__metadata__"})
        encoded = json.dumps(header).encode()
        path.write_bytes(struct.pack("<Q", len(encoded)) + encoded + data[8 + size:])

    return damage


def offsets_as_strings(tensors: dict) -> None:
    for entry in tensors.values():
        entry["data_offsets"] = [str(offset) for offset in entry["data_offsets"]]


def swap_two_offsets(tensors: dict) -> None:
    first, second = list(tensors.values())[:2]
    first["data_offsets"], second["data_offsets"] = second["data_offsets"], first["data_offsets"]


REFUSED_BEFORE_TORCH = {  # id: (file, damage, what the one line says after naming the file)
    "zip-member-encrypted": ("optimizer.pt", lambda path: patch_zip_member(path, flag_bits=0x1),
                             "is not a torch.save file: its member 'optimizer/data.pkl' is encrypted"),
    "zip-member-deflate64": ("rng_state.pth", lambda path: patch_zip_member(path, compress_type=9),
                             "is not a torch.save file: its member 'rng_state/data.pkl' is compressed"),
    "trainer-state-nested-deeply": ("trainer_state.json", nest_deeply,
                                    "is damaged: not valid JSON (nested too deeply to parse)"),
    "safetensors-string-offsets": ("model.safetensors", rewrite_safetensors_header(offsets_as_strings),
                                   "is not a safetensors file (its header is not a safetensors JSON header)"),
    "global-step-true": ("trainer_state.json", set_state(global_step=True),
                         "is damaged: global_step True is not a step of this script's 6-step run"),
    "global-step-1e30": ("trainer_state.json", set_state(global_step=1e30),
                         "is damaged: global_step 1e+30 is not a step of this script's 6-step run"),
    "global-step-10**30": ("trainer_state.json", set_state(global_step=10**30),
                           f"is damaged: global_step {10**30} is not a step of this script's 6-step run"),
    "global-step-0": ("trainer_state.json", set_state(global_step=0),
                      "is damaged: global_step 0 is not a step of this script's 6-step run"),
    "global-step-minus-1": ("trainer_state.json", set_state(global_step=-1),
                            "is damaged: global_step -1 is not a step of this script's 6-step run"),
    "global-step-7": ("trainer_state.json", set_state(global_step=7),
                      "is damaged: global_step 7 is not a step of this script's 6-step run"),
    "stateful-callbacks-empty": ("trainer_state.json", set_state(stateful_callbacks={}),
                                 "is damaged: stateful_callbacks holds no TrainerControl state"),
}


def given_checkpoint(tmp_path_factory, tmp_path) -> Path:
    folder = tmp_path / "given" / "checkpoint-3"
    shutil.copytree(good_checkpoint(tmp_path_factory), folder)
    return folder


@pytest.mark.parametrize("case", REFUSED_BEFORE_TORCH)
def test_crafted_checkpoint_file_is_refused_before_torch_and_left_unchanged(tmp_path_factory, tmp_path, case):
    name, damage, says = REFUSED_BEFORE_TORCH[case]
    folder = given_checkpoint(tmp_path_factory, tmp_path)
    damage(folder / name)
    before = fingerprint(folder)
    result = run_python(["-X", "importtime", str(CHECKPOINT), "--resume-from", str(folder)], tmp_path / "run")
    assert_refused_before_torch(result, f"--resume-from: {str(folder / name)!r} {says}")
    assert [line for line in result.stderr_lines if ": error: " in line][0].endswith(COPY_AGAIN)
    assert fingerprint(folder) == before


def test_the_payload_runs_code_when_unpickled_without_weights_only(tmp_path):
    """The payload the tests below plant is live: torch.load(weights_only=False) runs it."""
    import torch

    marker = tmp_path / "payload-ran"
    torch.save({"payload": MkdirWhenUnpickled(marker)}, tmp_path / "payload.pt")
    torch.load(tmp_path / "payload.pt", weights_only=False)
    assert marker.is_dir()


@pytest.mark.parametrize("name", ["optimizer.pt", "scheduler.pt", "rng_state.pth"])
def test_a_pickle_that_asks_to_run_code_is_refused_and_runs_none(tmp_path_factory, tmp_path, name):
    """A valid torch.save zip (the standard-library check passes) whose pickle calls os.mkdir: exit 2 naming the file,
    the marker never created, the folder unchanged."""
    import torch

    folder = given_checkpoint(tmp_path_factory, tmp_path)
    marker = tmp_path / "payload-ran"
    torch.save({"payload": MkdirWhenUnpickled(marker)}, folder / name)
    before = fingerprint(folder)
    result = run_python([str(CHECKPOINT), "--resume-from", str(folder), "--device", "cpu"], tmp_path / "run")
    assert_one_line_error(result, 2, f"--resume-from: {str(folder / name)!r} asks to call posix.mkdir when "
                                     "unpickled: torch.load(weights_only=True), as the Trainer loads it, refused")
    assert not marker.exists()
    assert fingerprint(folder) == before
    assert result.stray_files == [], result.stray_files


@pytest.mark.parametrize(("name", "damage", "says"), [
    ("trainer_state.json", set_state(surprise=1),
     "cannot be loaded as the Trainer loads it (TypeError: TrainerState.__init__() got an unexpected keyword argument "
     "'surprise')"),
    ("model.safetensors", rewrite_safetensors_header(swap_two_offsets),
     "cannot be loaded as the Trainer loads it (SafetensorError: Error while deserializing header"),
], ids=["trainer-state-unknown-field", "safetensors-offsets-swapped"])
def test_damage_only_the_library_sees_is_named_before_training(tmp_path_factory, tmp_path, name, damage, says):
    folder = given_checkpoint(tmp_path_factory, tmp_path)
    damage(folder / name)
    before = fingerprint(folder)
    result = run_python([str(CHECKPOINT), "--resume-from", str(folder), "--device", "cpu"], tmp_path / "run")
    assert_one_line_error(result, 2, f"--resume-from: {str(folder / name)!r} {says}")
    assert fingerprint(folder) == before
    assert result.stray_files == [], result.stray_files


def test_log_history_entries_are_not_read(tmp_path_factory, tmp_path):
    """The Trainer only appends to log_history; the script counts the resumed steps itself, so entries that are not
    log dicts cannot crash it either."""
    folder = given_checkpoint(tmp_path_factory, tmp_path)
    set_state(log_history=[1, 2, 3])(folder / "trainer_state.json")
    before = fingerprint(folder)
    result = run_python([str(CHECKPOINT), "--resume-from", str(folder), "--device", "cpu", "--json"], tmp_path / "run")
    assert result.returncode == 0, result.stderr[-2000:]
    assert_equal_check(result.check("resume_from.steps_run"), [4, 5, 6])
    assert fingerprint(folder) == before
    assert result.stray_files == [], result.stray_files


# ---- checkpoint_smoke.py --kill-at random ----

def drawn_kill_points(seed: int) -> tuple[list[int], list[int]]:
    """The kill points the script's own parser and validation draw for 'random' with ``seed``."""
    args = checkpoint_smoke.make_parser().parse_args(
        ["--mode", "crash", "--kill-at", "random", "--kill-while-saving", "random,2", "--seed", str(seed)])
    checkpoint_smoke.validate(args)
    return args.kill_at, args.kill_while_saving


def test_random_kill_points_come_from_the_seed():
    draws = {seed: drawn_kill_points(seed) for seed in range(40)}
    assert all(drawn_kill_points(seed) == draws[seed] for seed in draws)  # the same seed, the same points
    assert {kill_at[0] for kill_at, _ in draws.values()} == {1, 2, 3, 4, 5}  # yet spread over every step
    assert {while_saving[0] for _, while_saving in draws.values()} == {1, 2, 3, 4, 5, 6}
    assert all(while_saving[-1] == 2 for _, while_saving in draws.values())  # the listed step stays, once


def test_a_random_kill_runs_the_drill_its_seed_draws(tmp_path):
    seed = 3
    kill_at, while_saving = drawn_kill_points(seed)
    result = run_python([str(CHECKPOINT), "--mode", "crash", "--kill-at", "random", "--kill-while-saving",
                         "random,2", "--seed", str(seed), "--device", "cpu", "--json"], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    killed = [check["name"].removesuffix(".killed") for check in result.json["checks"]
              if check["name"].endswith(".killed")]
    assert killed == [f"crash.kill_at_{step}" for step in kill_at] + \
        [f"crash.killed_while_saving_{step}" for step in while_saving]
    assert result.stray_files == [], result.stray_files


# ---- training_args_smoke.py: values that cannot train ----

def strict_json(text: str) -> dict:
    """json.loads that refuses NaN and Infinity, which are not JSON."""
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def library_outcome(tmp: Path, action: str = "train", **fields) -> str:
    """What the installed TrainingArguments and Trainer do with ``fields`` on a tiny classifier: the exception, or
    how many steps ran, whether the weights stayed finite and how many losses were logged."""
    import torch
    from transformers import Trainer

    try:
        trainer = Trainer(model=tiny_classifier(), args=arguments(tmp, **{"logging_steps": 1, **fields}),
                          train_dataset=rows(), eval_dataset=rows(4))
        getattr(trainer, action)()
    except Exception as exc:  # noqa: BLE001 - the outcome under test
        return f"{type(exc).__name__}: {exc}"
    finite = all(torch.isfinite(parameter).all() for parameter in trainer.model.parameters())
    losses = [entry for entry in trainer.state.log_history if "loss" in entry]
    return f"{trainer.state.global_step} steps, weights finite: {finite}, losses logged: {len(losses)}"


# (flag, value, the other flags the case needs, what the library does, proven by library_outcome with these fields)
UNUSABLE = [
    ("per_device_train_batch_size", "0", [], "ValueError: batch_size should be a positive integer value",
     dict(per_device_train_batch_size=0)),
    ("per_device_eval_batch_size", "-1", [], "ValueError: batch_size should be a positive integer value",
     dict(per_device_eval_batch_size=-1, action="evaluate")),
    ("gradient_accumulation_steps", "0", [], "ZeroDivisionError", dict(gradient_accumulation_steps=0)),
    ("gradient_accumulation_steps", "-2", [], "0 steps", dict(gradient_accumulation_steps=-2)),
    ("eval_accumulation_steps", "0", [], "ZeroDivisionError", dict(eval_accumulation_steps=0, action="evaluate")),
    ("learning_rate", "-0.001", [], "ValueError: Invalid learning rate: -0.001", dict(learning_rate=-0.001)),
    ("dataloader_num_workers", "-1", [], "ValueError: num_workers option should be non-negative",
     dict(dataloader_num_workers=-1)),
    ("adam_beta1", "2.0", [], "ValueError: Invalid beta parameter at index 0", dict(adam_beta1=2.0)),
    ("adam_beta2", "-0.5", [], "ValueError: Invalid beta parameter at index 1", dict(adam_beta2=-0.5)),
    ("adam_epsilon", "-1.0", [], "ValueError: Invalid epsilon value", dict(adam_epsilon=-1.0)),
]
NOT_FINITE = [
    ("learning_rate", "nan", [], "ValueError: Invalid learning rate: nan", dict(learning_rate=float("nan"))),
    ("learning_rate", "inf", [], "weights finite: False", dict(learning_rate=float("inf"))),
    ("weight_decay", "nan", [], "weights finite: False", dict(weight_decay=float("nan"))),
    ("logging_steps", "nan", [], "losses logged: 0", dict(logging_steps=float("nan"))),
    ("eval_steps", "inf", ["--eval_strategy", "steps"], "OverflowError",
     dict(eval_steps=float("inf"), eval_strategy="steps")),
    ("num_train_epochs", "inf", [], "OverflowError", dict(num_train_epochs=float("inf"), max_steps=-1)),
]
ZERO_STEPS = ("num_train_epochs", "0", [], "0 steps", dict(num_train_epochs=0, max_steps=-1))
ALL_CASES = [*UNUSABLE, *NOT_FINITE, ZERO_STEPS]


@pytest.mark.parametrize(("flag", "value", "others", "outcome", "fields"), ALL_CASES,
                         ids=[f"{flag}={value}" for flag, value, *_ in ALL_CASES])
def test_the_library_accepts_these_values_but_cannot_train_with_them(tmp_path, flag, value, others, outcome, fields):
    assert outcome in library_outcome(tmp_path, **fields)


def test_every_refused_value_is_proven():
    assert {flag for flag, *_ in UNUSABLE} == set(training_args_smoke.UNUSABLE_VALUES)


@pytest.mark.parametrize(("flag", "value", "others", "says"), [
    *[(flag, value, others, f"--{flag} {value}: TrainingArguments accepts it, but") for flag, value, others, *_ in
      UNUSABLE],
    *[(flag, value, others, f"--{flag} {value} is not a finite number") for flag, value, others, *_ in NOT_FINITE],
    ("num_train_epochs", "0", [], "--num_train_epochs 0.0 without --max_steps: training would run 0 steps"),
], ids=[f"{flag}={value}" for flag, value, *_ in ALL_CASES])
def test_values_that_cannot_train_are_usage_errors_with_strict_json(training_args, tmp_path, flag, value, others,
                                                                    says):
    result = training_args(f"--{flag}", value, *others, "--device", "cpu", "--json", cwd=tmp_path)
    assert_one_line_error(result, 2, says)
    summary = strict_json(result.stdout)
    assert summary["ok"] is False and summary["exit_code"] == 2


def test_learning_rate_nan_prints_strict_json_as_a_user_runs_it(run_script):
    result = run_script(ARGS, "--learning_rate", "nan", "--device", "cpu", "--json")
    assert_one_line_error(result, 2, "--learning_rate nan is not a finite number")
    assert strict_json(result.stdout)["ok"] is False
    assert result.stray_files == [], result.stray_files


# ---- training_args_smoke.py: no flag prefixes; the seed TrainingArguments gets ----

@pytest.mark.parametrize("flags", [["--see", "5"], ["--per_device_train", "2"], ["--load_best"], ["--js"]],
                         ids=["see", "per_device_train", "load_best", "js"])
def test_a_flag_prefix_is_refused(training_args, tmp_path, flags):
    result = training_args(*flags, "--device", "cpu", cwd=tmp_path)
    assert_one_line_error(result, 2, f"not TrainingArguments flags: {' '.join(flags)}")


@pytest.mark.parametrize(("flags", "seed"), [(["--seed", "5"], 5), (["--seed=7"], 7), ([], 42)],
                         ids=["seed-5", "seed=7", "no-seed-keeps-42"])
def test_the_reported_seed_is_the_one_training_arguments_gets(training_args, tmp_path, flags, seed):
    result = training_args(*flags, "--device", "cpu", "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert strict_json(result.stdout)["checks"][0]["detail"]["seed"] == seed


# ---- training_args_smoke.py: load_best_model_at_end with evaluations between saves ----

BEST_AT_END = ["--eval_strategy", "steps", "--eval_steps", "5", "--load_best_model_at_end",
               "--metric_for_best_model", "eval_loss", "--report_to", "none", "--device", "cpu", "--json"]


@pytest.mark.parametrize(("saving", "warned"), [
    (["--save_strategy", "steps", "--save_steps", "10"], True),
    (["--save_strategy", "steps", "--save_steps", "5"], False),
    (["--save_strategy", "best"], False),
], ids=["save-every-10", "save-every-5", "save-best"])
def test_best_model_with_evaluations_between_saves_gets_a_notice(training_args, tmp_path, saving, warned):
    result = training_args(*BEST_AT_END, *saving, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    summary = strict_json(result.stdout)
    assert summary["ok"] is True
    notices = summary["checks"][0]["detail"]["notices"]
    cadence = [notice for notice in notices if notice.startswith("load_best_model_at_end with eval_steps")]
    assert cadence == (["load_best_model_at_end with eval_steps 5 but save_steps 10: a best evaluation between saves "
                        "is never saved, so the end loads an older checkpoint or none (best_model_checkpoint None); "
                        "save at every evaluation (--save_steps 5) or at every improvement (--save_strategy best), or keep "
                        "the cadence with the LoadBestSavedCheckpoint callback (references/troubleshooting.md, \"The "
                        "best evaluation falls on a step that is not saved\")"]
                       if warned else []), notices


# ---- training_args_smoke.py: the flags TrainingArguments opens as files ----

# Fields that switch on the reading of another: fsdp_config is read only with fsdp set.
ENABLING = [{}, {"fsdp": "full_shard"}]


def opens_fifo(tmp_path: Path, name: str, build) -> bool:
    """Whether ``build(path)`` opens ``path`` for reading: it is given a FIFO, and a reader is seen here (then sent
    "{}" so it goes on). A build that never opens it finishes, or raises, without one."""
    import errno
    import threading

    fifo = tmp_path / f"{name}.fifo"
    os.mkfifo(fifo)
    opened = False
    building = threading.Thread(target=build_quietly, args=(build, str(fifo)), daemon=True)
    building.start()
    while building.is_alive() and not opened:
        try:
            writer = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)  # ENXIO while nobody reads it
        except OSError as exc:
            assert exc.errno == errno.ENXIO, exc
            building.join(0.01)
            continue
        os.write(writer, b"{}")
        os.close(writer)
        opened = True
    building.join(120)
    assert not building.is_alive(), f"{name}: building with a FIFO did not finish"
    return opened


def build_quietly(build, path: str) -> None:
    try:
        build(path)
    except Exception:  # noqa: BLE001 - a field that refuses the value did not open it; that is all this asks
        pass


def test_the_config_file_flags_are_the_fields_the_library_opens(tmp_path):
    """CONFIG_FILE_FLAGS is not a guess: every TrainingArguments field taking a string is given a FIFO (alone, and with
    each of ENABLING), and the fields the installed library opens are those flags. --deepspeed is opened by
    accelerate's HfDeepSpeedConfig, which TrainingArguments reaches only where the deepspeed package is installed
    (PackageNotFoundError first here): that class is given the FIFO itself."""
    import dataclasses
    import importlib.util

    from accelerate.utils.deepspeed import HfDeepSpeedConfig
    from transformers import TrainingArguments

    opened = {field.name for field in dataclasses.fields(TrainingArguments)
              if field.init and field.name != "output_dir" and "str" in str(field.type)
              and any(opens_fifo(tmp_path, f"{field.name}-{number}",
                                 lambda path, field=field, enabling=enabling: arguments(
                                     tmp_path, **enabling, **{field.name: path}))
                      for number, enabling in enumerate(ENABLING))}
    if importlib.util.find_spec("deepspeed") is None:
        assert "deepspeed" not in opened and opens_fifo(tmp_path, "HfDeepSpeedConfig", HfDeepSpeedConfig)
        opened.add("deepspeed")
    assert opened == set(training_args_smoke.CONFIG_FILE_FLAGS)


CONFIG_FILES = {
    "a FIFO": (lambda tmp: os.mkfifo(tmp / "config.json"), "is not a regular file (a FIFO, a device or a socket"),
    "/dev/zero": (None, "is not a regular file (a FIFO, a device or a socket"),
    "a missing file": (lambda tmp: None, "no such file"),
    "a folder": (lambda tmp: (tmp / "config.json").mkdir(), "is a folder"),
    "invalid JSON": (lambda tmp: (tmp / "config.json").write_text('{"a": '), "is not valid JSON"),
    "a JSON list": (lambda tmp: (tmp / "config.json").write_text("[1]"), "holds a JSON list, not an object"),
    "NaN": (lambda tmp: (tmp / "config.json").write_text('{"lr": NaN}'), "is not valid JSON (NaN is not a JSON number"),
    "a huge file": (lambda tmp: (tmp / "config.json").write_bytes(b" " * (2 << 20)),
                    f"is {2 << 20} bytes, more than a config file's 1048576"),
}


@pytest.mark.parametrize("flag", training_args_smoke.CONFIG_FILE_FLAGS)
@pytest.mark.parametrize("kind", list(CONFIG_FILES))
def test_a_config_file_that_cannot_be_read_as_json_is_named_before_the_library_opens_it(training_args, tmp_path,
                                                                                        flag, kind):
    """A FIFO blocked forever, /dev/zero was read until the OOM killer came (22 GB), and a missing file, a folder or
    invalid JSON were exit 1 with an error naming no file: now exit 2 naming the flag and the file."""
    make, says = CONFIG_FILES[kind]
    path = "/dev/zero" if make is None else str(tmp_path / "config.json")
    if make is not None:
        make(tmp_path)
    result = training_args(f"--{flag}", path, "--device", "cpu", "--json", cwd=tmp_path)
    assert_one_line_error(result, 2, f"--{flag} {path!r}: {says}")


def test_a_full_disk_while_copying_a_checkpoint_fails_a_named_check(tmp_path):
    """A copy outside every step ended with "unexpected Error: [(...)]" naming no check: every step belongs to one."""
    result = run_with_full_disk_for_copies("latest", CHECKPOINT, ["--device", "cpu", "--json"], tmp_path)
    assert_one_line_error(result, 1, "check 'resume.latest.copy' failed: Error: copying to ")
    assert "No space left on device" in result.stderr_lines[-1], result.stderr_lines[-1]
    failed = [check["name"] for check in result.json["checks"] if not check["ok"]]
    assert failed == ["resume.latest.copy"], failed
    assert result.stray_files == [], result.stray_files
