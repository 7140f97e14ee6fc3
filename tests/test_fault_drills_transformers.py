"""Fault drills of the transformers-training skill: killed runs resume bit-exact, a kill during a save leaves what the
skill says and its advice works, and damaged checkpoints fail with one line before torch is imported and are left
byte-for-byte unchanged. What the Trainer itself does with each damage is proven here, in this process.

The kills run inside ``checkpoint_smoke.py --mode all`` (one run per device, shared with
tests/test_transformers_scripts.py); the damaged-input cases copy one of its checkpoints and fail in ~0.2 s each.
"""

from __future__ import annotations

import contextlib
import pickle
import random
import re
import shutil
from pathlib import Path

import pytest

from support.checks import assert_equal_check, same_value
from support.harness import DEVICES, assert_one_line_error, import_script, run_python
from support.transformers_scripts import (CHECKPOINT, COPY_AGAIN, KILL_AT, KILL_WHILE_SAVING, SCRIPTS,
                                          MkdirWhenUnpickled, assert_refused_before_torch, checkpoint_smoke_all,
                                          fingerprint, good_checkpoint)

SAVED_BEFORE_THE_OPTIMIZER = {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json",
                              "tokenizer_config.json", "training_args.bin"}


def drill_check(tmp_path_factory, device: str, name: str):
    result = checkpoint_smoke_all(tmp_path_factory, device)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.check(name)


@pytest.mark.parametrize("step", KILL_AT)
@pytest.mark.parametrize("device", DEVICES)
def test_killed_after_checkpoint_resumes_bit_exact(tmp_path_factory, device, step):
    check = f"crash.kill_at_{step}"
    assert drill_check(tmp_path_factory, device, f"{check}.killed")["ok"]
    resumed = drill_check(tmp_path_factory, device, f"{check}.resumed")
    assert_equal_check(resumed, {"from": f"checkpoint-{step}", "steps": list(range(step + 1, 7))})
    assert_equal_check(drill_check(tmp_path_factory, device, f"{check}.bitwise_equal"), [])  # no tensor differs


@pytest.mark.parametrize("step", KILL_WHILE_SAVING)
@pytest.mark.parametrize("device", DEVICES)
def test_killed_while_saving_leaves_a_checkpoint_without_trainer_state(tmp_path_factory, device, step):
    """What a SIGKILL inside Trainer._save_checkpoint leaves: checkpoint-N with the weights, tokenizer and
    training_args.bin, a half-written optimizer.pt, and no scheduler.pt, rng_state.pth or trainer_state.json (written
    last); no temporary folder; resume_from_checkpoint=True then picks that folder and raises."""
    check = f"crash.killed_while_saving_{step}"
    killed = drill_check(tmp_path_factory, device, f"{check}.killed")
    assert killed["ok"], killed
    on_disk = drill_check(tmp_path_factory, device, f"{check}.left_on_disk")
    assert on_disk["ok"], on_disk
    assert same_value(on_disk["actual"], {"files": sorted(SAVED_BEFORE_THE_OPTIMIZER | {"optimizer.pt"}),
                                          "optimizer_is_zip": False}), on_disk
    files = on_disk["detail"][f"checkpoint-{step}"]  # name -> size
    assert 0 < files["optimizer.pt"] < 100_000, files  # a complete optimizer.pt of this model is ~235 kB
    assert on_disk["detail"]["run_folder"] == [f"checkpoint-{n}" for n in range(1, step + 1)], on_disk
    raised = drill_check(tmp_path_factory, device, f"{check}.resume_true_raises")["actual"]
    assert re.fullmatch(rf"FileNotFoundError: \[Errno 2\] No such file or directory: '.*/checkpoint-{step}/"
                        r"trainer_state\.json'", raised), raised


@pytest.mark.parametrize("step", KILL_WHILE_SAVING)
@pytest.mark.parametrize("device", DEVICES)
def test_deleting_the_incomplete_checkpoint_resumes_bit_exact(tmp_path_factory, device, step):
    """The skill's advice (last_complete_checkpoint): delete the incomplete folder, resume from the one before it,
    or start fresh when it was the first."""
    check = f"crash.killed_while_saving_{step}"
    resumed = drill_check(tmp_path_factory, device, f"{check}.resumed")
    start = f"checkpoint-{step - 1}" if step > 1 else None
    assert_equal_check(resumed, {"from": start, "steps": list(range(step, 7))})
    assert_equal_check(drill_check(tmp_path_factory, device, f"{check}.bitwise_equal"), [])  # no tensor differs


def import_checkpoint_smoke():
    return import_script(SCRIPTS / "checkpoint_smoke.py")


def test_kill_points_parse_and_repeats_are_dropped_once_drawn():
    script = import_checkpoint_smoke()
    assert script.steps_between(1, 5)("4,random,1,4") == [4, "random", 1, 4]
    assert script.draw_steps([4, 1, 4], (1, 5), random.Random(0)) == [4, 1]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--mode", "crash", "--kill-at", "6"], "step 6 is not between 1 and 5"),
    (["--mode", "crash", "--kill-while-saving", "0"], "step 0 is not between 1 and 6"),
    (["--mode", "crash", "--kill-at", "two"], "'two' is not a comma list of steps or 'random'"),
    (["--kill-at", "2"], "--kill-at and --kill-while-saving need --mode crash or --mode all"),
    (["--mode", "all", "--resume-from", "somewhere"], "--resume-from runs on its own"),
], ids=["kill-at-past-last-checkpoint", "kill-while-saving-0", "kill-at-not-a-number", "kill-at-without-crash-mode",
        "resume-from-with-mode"])
def test_bad_drill_arguments(run_script, args, fragment):
    result = run_script(CHECKPOINT, *args)
    assert_one_line_error(result, 2, fragment)
    assert result.stray_files == [], result.stray_files


# ---- --resume-from: damaged checkpoints fail before torch loads, and are left as they were ----

def truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def swap_format(path: Path) -> None:
    """Put the other format's bytes in: a torch zip as model.safetensors, safetensors as a .pt file."""
    other = "optimizer.pt" if path.suffix == ".safetensors" else "model.safetensors"
    path.write_bytes((path.parent / other).read_bytes())


def zip_without_pickle(path: Path) -> None:
    import zipfile

    path.unlink()
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("notes.txt", "a zip archive, but not what torch.save writes")


DAMAGES = {  # id: (file, damage, what the one line says after naming the file)
    "safetensors-truncated": ("model.safetensors", truncate, "is truncated: its header describes"),
    "safetensors-empty": ("model.safetensors", lambda path: path.write_bytes(b""), "is empty (0 bytes)"),
    "safetensors-wrong-format": ("model.safetensors", swap_format, "is truncated or not a safetensors file"),
    "safetensors-missing": ("model.safetensors", Path.unlink, "is missing: the folder holds no weights"),
    "optimizer-truncated": ("optimizer.pt", truncate, "is truncated or not a torch.save file"),
    "optimizer-empty": ("optimizer.pt", lambda path: path.write_bytes(b""), "is empty (0 bytes)"),
    "optimizer-wrong-format": ("optimizer.pt", swap_format, "is truncated or not a torch.save file"),
    "optimizer-bit-flip": ("optimizer.pt", flip_a_byte, "is damaged: optimizer/data/19 fails its CRC check"),
    "optimizer-zip-not-torch": ("optimizer.pt", zip_without_pickle, "is a zip archive but not a torch.save file"),
    "optimizer-missing": ("optimizer.pt", Path.unlink, "is missing: the Trainer would silently resume with a fresh "
                                                       "optimizer and learning-rate schedule"),
    "scheduler-missing": ("scheduler.pt", Path.unlink, "is missing: the Trainer would silently resume with a fresh "
                                                       "optimizer and learning-rate schedule"),
    "rng-state-truncated": ("rng_state.pth", truncate, "is truncated or not a torch.save file"),
    "rng-state-missing": ("rng_state.pth", Path.unlink, "is missing: the Trainer would silently resume with other "
                                                        "random numbers, so the run is not reproduced"),
    "trainer-state-missing": ("trainer_state.json", Path.unlink, "is missing: the checkpoint is incomplete"),
    "trainer-state-truncated": ("trainer_state.json", truncate, "is damaged: not valid JSON"),
    "trainer-state-empty": ("trainer_state.json", lambda path: path.write_bytes(b""), "is empty (0 bytes)"),
    "config-truncated": ("config.json", truncate, "is damaged: not valid JSON"),
}


@pytest.mark.parametrize("case", DAMAGES)
def test_damaged_checkpoint_is_refused_with_one_line_and_left_unchanged(tmp_path_factory, tmp_path, case):
    name, damage, says = DAMAGES[case]
    folder = tmp_path / "given" / "checkpoint-3"
    shutil.copytree(good_checkpoint(tmp_path_factory), folder)
    damage(folder / name)
    before = fingerprint(folder)
    result = run_python(["-X", "importtime", str(CHECKPOINT), "--resume-from", str(folder)], tmp_path / "run")
    fragment = f"--resume-from: {str(folder / name)!r} {says}"
    assert_refused_before_torch(result, fragment)
    if case != "trainer-state-missing":  # that one says to resume from the previous checkpoint instead
        assert [line for line in result.stderr_lines if ": error: " in line][0].endswith(COPY_AGAIN)
    assert fingerprint(folder) == before


def test_checkpoint_as_the_kill_left_it_is_refused(tmp_path_factory, tmp_path):
    """The real folder a SIGKILL inside the save left (kept by the drill), passed as it is."""
    result = checkpoint_smoke_all(tmp_path_factory, "cpu")
    kept = Path(result.json["output_dir"]) / f"killed-while-saving-{KILL_WHILE_SAVING[-1]}-as-killed"
    folder = kept / f"checkpoint-{KILL_WHILE_SAVING[-1]}"
    before = fingerprint(kept)
    result = run_python(["-X", "importtime", str(CHECKPOINT), "--resume-from", str(folder)], tmp_path)
    assert_refused_before_torch(result, f"{str(folder / 'trainer_state.json')!r} is missing: the checkpoint is "
                                        "incomplete (the Trainer writes that file last, so the run was killed while "
                                        "saving); resume from the previous checkpoint-N and delete this folder")
    assert fingerprint(kept) == before


@pytest.mark.parametrize(("given", "says"), [
    ("missing", "does not exist"),
    ("output-dir", "holds checkpoint folders: pass one of them, for example"),
    ("a-file", "is not a folder"),
    ("empty-folder", "is not a checkpoint folder (no trainer_state.json, no model.safetensors)"),
])
def test_resume_from_something_else_than_a_checkpoint_folder(tmp_path_factory, tmp_path, given, says):
    folder = tmp_path / given
    if given == "output-dir":
        shutil.copytree(good_checkpoint(tmp_path_factory), folder / "checkpoint-3")
    elif given == "a-file":
        folder.write_text("not a folder")
    elif given == "empty-folder":
        folder.mkdir()
    before = fingerprint(tmp_path)
    result = run_python(["-X", "importtime", str(CHECKPOINT), "--resume-from", str(folder)], tmp_path / "run")
    assert_refused_before_torch(result, f"--resume-from: {str(folder)!r} {says}")
    assert {key: value for key, value in fingerprint(tmp_path).items() if not key.startswith("run/")} == before


@pytest.mark.parametrize("device", DEVICES)
def test_resume_from_a_kept_checkpoint_is_bit_exact_and_reads_only(tmp_path_factory, tmp_path, device):
    drill = checkpoint_smoke_all(tmp_path_factory, device)
    assert drill.returncode == 0, drill.stderr[-3000:]
    kept = Path(drill.json["output_dir"]) / "straight"
    folder = tmp_path / "copied from another machine" / "checkpoint-3"  # a space in the path, as copies often have
    shutil.copytree(kept / "checkpoint-3", folder)
    before = fingerprint(folder.parent)
    result = run_python([str(CHECKPOINT), "--resume-from", str(folder), "--device", device, "--json"], tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.network_attempts == []
    assert result.stray_files == [], result.stray_files
    assert [check["name"] for check in result.json["checks"]] == [
        "resume_from.weights_loaded", "resume_from.steps_run", "resume_from.bitwise_equal"]
    assert_equal_check(result.check("resume_from.weights_loaded"), [])  # no tensor differs from checkpoint-3
    assert_equal_check(result.check("resume_from.steps_run"), [4, 5, 6])
    assert_equal_check(result.check("resume_from.bitwise_equal"), [])
    assert fingerprint(folder.parent) == before


# ---- what the Trainer itself does with a checkpoint missing a file (the traps the script's lines name) ----

@pytest.fixture(scope="module")
def resume_damaged(tmp_path_factory):
    """``resume_damaged(name, damage)`` resumes the script's tiny GPT-2 in this process from a copy of the CPU run's
    straight/checkpoint-3 with ``damage(copy / name)`` applied (name None: intact). Returns what the Trainer raised,
    or (new steps, their learning rates, the tensors that differ from the end of the straight run)."""
    import gc

    import torch

    script = import_checkpoint_smoke()
    good = good_checkpoint(tmp_path_factory)
    setup = script.Kit(seed=0, output_dir=tmp_path_factory.mktemp("resumed"), device="cpu")
    final = setup.weights(good.parent / "checkpoint-6")

    def resume(name: str | None, damage=None):
        checkpoint = tmp_path_factory.mktemp("given") / "checkpoint-3"
        shutil.copytree(good, checkpoint)
        if name:
            damage(checkpoint / name)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # as the script runs on CPU: the comparison is bit for bit
        try:
            trainer = setup.trainer(f"from-{checkpoint.parent.name}")
            trainer.train(resume_from_checkpoint=str(checkpoint))
        except Exception as exc:  # noqa: BLE001 - the outcome under test
            return exc
        finally:
            torch.set_num_threads(threads)
        rates = {entry["step"]: entry["learning_rate"] for entry in trainer.state.log_history if "loss" in entry}
        new_steps = script.trained_steps(trainer)[3:]
        differing = script.differing_tensors(final, setup.weights(trainer.model))
        return new_steps, [rates[step] for step in new_steps], differing

    gc.freeze()  # as the script does: Trainer.train() calls gc.collect(), ~0.4 s a run over this process's heap
    yield resume
    gc.unfreeze()


@pytest.fixture
def resume_without(resume_damaged):
    return lambda missing: resume_damaged(missing, Path.unlink)


def test_intact_checkpoint_resumes_bit_exact_in_process(resume_without):
    outcome = resume_without(None)
    assert not isinstance(outcome, Exception), repr(outcome)
    steps, rates, differing = outcome
    assert steps == [4, 5, 6] and differing == []
    assert rates == pytest.approx([0.0005, 1 / 3 * 1e-3, 1 / 6 * 1e-3])  # linear decay from 1e-3 over 6 steps


def test_missing_rng_state_resumes_silently_but_not_reproducibly(resume_without):
    steps, rates, differing = resume_without("rng_state.pth")
    assert steps == [4, 5, 6] and rates == pytest.approx([0.0005, 1 / 3 * 1e-3, 1 / 6 * 1e-3])
    assert differing, "without rng_state.pth the resumed run still matched: the trap would not exist"


@pytest.mark.parametrize("missing", ["optimizer.pt", "scheduler.pt"])
def test_missing_optimizer_or_scheduler_restarts_both_silently(resume_without, missing):
    """Trainer loads optimizer.pt and scheduler.pt only when both are there; otherwise it starts both afresh: the
    learning rate jumps back to its first value at the resumed step."""
    steps, rates, differing = resume_without(missing)
    assert steps == [4, 5, 6] and rates == pytest.approx([1e-3, 5 / 6 * 1e-3, 4 / 6 * 1e-3])
    assert differing


RAISES = [  # the cells of the troubleshooting table where the Trainer raises: (file, damage, exception names)
    *[("model.safetensors", damage, {"SafetensorError"}) for damage in ("empty", "truncated", "other-format")],
    ("model.safetensors", "missing", {"ValueError"}),
    *[(name, damage, {"EOFError", "RuntimeError", "OSError", "UnpicklingError"})
      for name in ("optimizer.pt", "scheduler.pt", "rng_state.pth")
      for damage in ("empty", "truncated", "other-format")],
    ("trainer_state.json", "missing", {"FileNotFoundError"}),
    *[("trainer_state.json", damage, {"JSONDecodeError"}) for damage in ("empty", "truncated")],
]
DAMAGE_BY_NAME = {"empty": lambda path: path.write_bytes(b""), "truncated": truncate, "other-format": swap_format,
                  "missing": Path.unlink}


@pytest.mark.parametrize(("name", "damage", "exceptions"), RAISES, ids=[f"{n}-{d}" for n, d, _ in RAISES])
def test_the_trainer_raises_on_these_damages(resume_damaged, name, damage, exceptions):
    outcome = resume_damaged(name, DAMAGE_BY_NAME[damage])
    assert isinstance(outcome, BaseException), "the Trainer resumed from a damaged checkpoint without an error"
    assert type(outcome).__name__ in exceptions, repr(outcome)


@pytest.mark.parametrize("name", ["optimizer.pt", "scheduler.pt", "rng_state.pth"])
def test_the_trainer_refuses_a_pickle_that_asks_to_run_code_and_runs_none(resume_damaged, tmp_path, name):
    """Transformers 5 loads every pickle of a checkpoint with torch.load(weights_only=True): the payload is refused
    (tests/test_hostile_transformers.py shows it runs under weights_only=False)."""
    import torch

    marker = tmp_path / "payload-ran"
    outcome = resume_damaged(name, lambda path: torch.save({"payload": MkdirWhenUnpickled(marker)}, path))
    assert isinstance(outcome, pickle.UnpicklingError) and "posix.mkdir" in str(outcome), repr(outcome)
    assert not marker.exists()


def test_the_trainer_never_unpickles_training_args_bin(resume_damaged, tmp_path):
    import torch

    marker = tmp_path / "payload-ran"
    steps, _, differing = resume_damaged("training_args.bin",
                                         lambda path: torch.save({"payload": MkdirWhenUnpickled(marker)}, path))
    assert steps == [4, 5, 6] and differing == [] and not marker.exists()


def test_trainer_state_is_written_last(tmp_path_factory):
    """trainer_state.json marks a complete checkpoint: no file of the folder is newer (the drill's kill inside
    optimizer.pt shows scheduler.pt, rng_state.pth and trainer_state.json come after it)."""
    folder = good_checkpoint(tmp_path_factory)
    mtimes = {path.name: path.stat().st_mtime_ns for path in folder.iterdir()}
    assert max(mtimes.values()) == mtimes["trainer_state.json"], mtimes


class Checks:
    """What straight_run needs of a SmokeRun, without its process-wide setup: the checks it records, by name."""

    def __init__(self, output_dir: Path):
        self.output_dir, self.recorded = output_dir, {}

    def check(self, name, ok, detail="", *, actual=None, expected=None):
        self.recorded[name] = (bool(ok), detail)
        return ok

    def check_equal(self, name, actual, expected):
        return self.check(name, actual == expected, f"got {actual!r}")

    @contextlib.contextmanager
    def step(self, name):
        yield


def test_a_checkpoint_missing_one_training_state_file_fails_checkpoint_contents(tmp_path, monkeypatch):
    """A Trainer that saved the weights but not rng_state.pth cannot resume bit-exact: the straight run's
    checkpoint.contents check names the missing file, not only model.safetensors."""
    from transformers import Trainer

    monkeypatch.setattr(Trainer, "_save_rng_state", lambda self, output_dir: None)  # the fault: never written
    script = import_checkpoint_smoke()
    checks = Checks(tmp_path)
    script.straight_run(checks, script.Kit(0, tmp_path, "cpu"))
    assert checks.recorded["straight.checkpoints"][0], checks.recorded
    ok, detail = checks.recorded["checkpoint.contents"]
    assert not ok and "missing ['rng_state.pth']" in detail, detail
