"""What an outside hostile tester found in the composer-training scripts (issue #16), each proven with real files and
real runs: a checkpoint whose pickle runs code is refused before anything unpickles it, resumes are bit-exact from
every checkpoint position, damaged and foreign checkpoints are exit 2 naming the file, and an empty duration is named
as empty. Most runs go through the skill's worker process (support/script_worker.py), which imports Composer once."""

from __future__ import annotations

import os
import shlex
import zipfile
from pathlib import Path

import pytest

from support.checks import assert_equal_check, same_value
from support.composer_kit import classifier, loader, trainer, weights
from support.composer_scripts import CHECKPOINT, PREFLIGHT, SCRIPTS, state_of
from support.harness import assert_one_line_error, import_script, run_python, run_with_full_disk_for_copies
from support.tensors import differing

pytestmark = pytest.mark.composer

checkpoint_smoke = import_script(SCRIPTS / "checkpoint_smoke.py")  # stdlib helpers; heavy imports only in body()
PER_EPOCH = 4  # batches per epoch: 16 samples in batches of 4, in the script and in composer_kit.loader()

@pytest.fixture(scope="module")
def worker(script_worker):
    return script_worker(CHECKPOINT)


@pytest.fixture(scope="module")
def own_checkpoint(worker, tmp_path_factory) -> Path:
    """A checkpoint checkpoint_smoke.py saved (one batch), as `--mode save --keep` leaves it for --load-path."""
    folder = tmp_path_factory.mktemp("own")
    result = worker.run(CHECKPOINT, "--mode", "save", "--batches", "1", "--output-dir", str(folder / "out"), "--json",
                        cwd=folder)
    assert result.returncode == 0, result.stderr[-2000:]
    return folder / "out" / "checkpoints" / "save" / "ep0-ba1-rank0.pt"


# ---- 1. a checkpoint whose pickle runs code ----

class TouchMarker:
    """Unpickling this runs a shell command, as the reported checkpoint did; the command only creates ``marker``."""

    def __init__(self, marker: Path):
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {shlex.quote(str(self.marker))}",)


@pytest.fixture
def malicious(own_checkpoint, tmp_path) -> tuple[Path, Path]:
    """The script's own checkpoint with a payload among its plain data: it passes the standard-library check (a
    torch.save zip archive whose pickle names state and timestamp) and creates ``marker`` when unpickled."""
    import torch

    marker = tmp_path / "payload-ran"
    saved = torch.load(own_checkpoint, map_location="cpu", weights_only=False)  # the script's own file
    saved["state"]["integrations"]["payload"] = TouchMarker(marker)
    evil = tmp_path / "evil.pt"
    torch.save(saved, evil)
    assert checkpoint_smoke.checkpoint_problem(evil) is None, "the payload must reach the unpickling step"
    return evil, marker


REFUSED = ("holds objects beyond plain data (Trying to load unsupported GLOBAL posix.system whose module posix is "
           "blocked)")


def test_checkpoint_smoke_refuses_a_load_path_that_would_run_code(malicious, tmp_path):
    """As reported: --mode resume --load-path FILE, in a process of its own, as a user runs it."""
    evil, marker = malicious
    before = state_of([evil])
    result = run_python([str(CHECKPOINT), "--mode", "resume", "--load-path", str(evil), "--json"], tmp_path / "run")
    assert_one_line_error(result, 2, f"--load-path {str(evil)!r} {REFUSED}: Composer unpickles checkpoints")
    assert "this script saves plain data only" in result.stderr and not marker.exists()
    assert state_of([evil]) == before
    assert result.stray_files == [], result.stray_files


@pytest.mark.parametrize("args, fragment", [
    (["--mode", "finetune"], REFUSED),
    (["--mode", "resume", "--trust-checkpoint"], "unrecognized arguments: --trust-checkpoint"),
], ids=["finetune", "no trust flag"])
def test_checkpoint_smoke_offers_no_way_to_run_a_checkpoints_code(args, fragment, malicious, worker, tmp_path):
    """The script resumes only checkpoints it saved, which are plain data: trusting more would only run code."""
    evil, marker = malicious
    result = worker.run(CHECKPOINT, *args, "--load-path", str(evil), "--json", cwd=tmp_path)
    assert_one_line_error(result, 2, fragment)
    assert not marker.exists()


def test_preflight_refuses_code_unless_trusted_and_trusting_runs_it(malicious, worker, tmp_path):
    evil, marker = malicious
    result = worker.run(PREFLIGHT, "--max-duration", "4ba", "--load-path", str(evil), "--json", cwd=tmp_path)
    assert_one_line_error(result, 2, f"--load-path {str(evil)!r} {REFUSED}")
    assert "open it only if you trust it (then add --trust-checkpoint)" in result.stderr
    assert not marker.exists()

    latest = tmp_path / "runs" / "job" / "latest-rank0.pt"  # autoresume reads the same file through the link
    latest.parent.mkdir(parents=True)
    latest.symlink_to(evil)
    result = worker.run(PREFLIGHT, "--max-duration", "4ba", "--autoresume", "--run-name", "job", "--save-folder",
                        str(tmp_path / "runs" / "{run_name}"), "--json", cwd=tmp_path)
    assert_one_line_error(result, 2, f"autoresume's {str(latest)!r} -> 'evil.pt' {REFUSED}")
    assert not marker.exists()

    result = worker.run(PREFLIGHT, "--max-duration", "4ba", "--load-path", str(evil), "--trust-checkpoint", "--json",
                        cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert marker.exists(), "--trust-checkpoint opens the file as Composer does: its code runs"


# ---- 3. bit-exact resumes from every checkpoint position ----

@pytest.mark.parametrize("batches", range(1, 2 * PER_EPOCH + 2))  # every position in epochs 0 and 1, then epoch 2
def test_resume_is_bitwise_equal_from_every_checkpoint_position(batches, worker, tmp_path):
    """--batches N saves N batches and resumes to 2N (as reported: N = 5, 6 and 30 were not bit-exact). Autoresume
    after a kill at every step of two epochs is the shared --mode all run (test_fault_drills_composer.py)."""
    result = worker.run(CHECKPOINT, "--mode", "resume", "--batches", str(batches), "--json", cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert same_value(result.check("resume.start")["actual"], batches)
    assert_equal_check(result.check("resume.end"), 2 * batches)
    assert_equal_check(result.check("resume.bitwise_equal"), [])  # no tensor differs from the straight run


def shuffled_weights(distributed: bool, dropout: bool, total: int, **settings) -> list:
    """The weights after ``total`` batches on shuffled data, a RandomSampler (shuffle=True) or a DistributedSampler,
    with a model whose dropout draws from the CPU RNG in every step, or one without."""
    from composer.utils import dist
    from torch.utils.data import DataLoader

    dataset = loader().dataset
    data = DataLoader(dataset, batch_size=len(dataset) // PER_EPOCH, shuffle=not distributed,
                      sampler=dist.get_sampler(dataset, shuffle=True) if distributed else None)
    model = checkpoint_smoke.Kit("cpu", 0, 1, Path()).model() if dropout else classifier()
    job = trainer(model=model, train_dataloader=data, max_duration=f"{total}ba", **settings)
    job.fit()
    job.close()
    return weights(job)


@pytest.mark.parametrize("distributed, dropout, exact_from", [
    (False, True, [1, 2, 3, 4, 8]),  # inside epoch 0, or from an epoch's last batch (the next order is drawn after)
    (False, False, list(range(1, 9))),
    (True, True, list(range(1, 9))),
], ids=["RandomSampler-dropout", "RandomSampler", "DistributedSampler-dropout"])
def test_a_random_sampler_resumes_inside_a_later_epoch_bit_exact_only_if_training_draws_no_random_numbers(
        distributed, dropout, exact_from, tmp_path):
    """Why the script shuffles with a DistributedSampler, and the condition SKILL.md states: shuffle=True draws each
    epoch's order from the CPU RNG as the epoch starts, after the draws of the epochs before (dropout's too); a resume
    replays the sampler's draws of the earlier epochs, not the training's. Composer replays a DistributedSampler's
    order by epoch (set_epoch)."""
    total = 2 * PER_EPOCH + 1  # checkpoints inside epoch 0, at its end, inside epoch 1, at its end
    straight = shuffled_weights(distributed, dropout, total, save_folder=str(tmp_path), save_interval="1ba")
    resumed = {batch: shuffled_weights(distributed, dropout, total, load_path=str(
        tmp_path / f"ep{(batch - 1) // PER_EPOCH}-ba{batch}-rank0.pt")) for batch in range(1, total)}
    assert [batch for batch, ended in resumed.items() if not differing(straight, ended)] == exact_from


# ---- 11. damaged and foreign checkpoints that only torch.load or Composer would notice ----

@pytest.fixture(scope="module")
def foreign(own_checkpoint, tmp_path_factory) -> dict[str, Path]:
    """Checkpoints that pass the standard-library check: Composer's of other models, and torch.save files that only
    torch.load or Composer would find wrong."""
    import torch

    folder = tmp_path_factory.mktemp("foreign é")
    other = trainer(max_duration="1ba", save_folder=str(folder / "other"), save_interval="1ba")  # module.2 is its head
    other.fit()
    other.close()
    model = checkpoint_smoke.Kit("cpu", 0, 1, folder).model()
    same_model = trainer(model=model, optimizers=torch.optim.SGD(model.parameters(), lr=0.1), max_duration="1ba",
                         save_folder=str(folder / "sgd"), save_interval="1ba")
    same_model.fit()
    same_model.close()
    no_timestamp = folder / "no-timestamp.pt"  # plain data, torch.save format, the names the pre-check looks for
    torch.save({"state": {"timestamp": {}, "model": {}}}, no_timestamp)
    missing_tensor = folder / "missing-tensor.pt"  # its pickle points at a tensor file the archive lacks
    with zipfile.ZipFile(own_checkpoint) as source, zipfile.ZipFile(missing_tensor, "w") as target:
        for member in source.infolist():
            if member.filename != "archive/data/0":
                target.writestr(member, source.read(member))
    return {"other-model": folder / "other" / "ep0-ba1-rank0.pt", "sgd": folder / "sgd" / "ep0-ba1-rank0.pt",
            "no-timestamp": no_timestamp, "missing-tensor": missing_tensor}


FOREIGN = {  # file: what the one line says after "--load-path '<file>' "
    "other-model": "is a Composer checkpoint of another model (no module.3.weight; no module.3.bias; module.2.weight: "
                   "not in this script's model; module.2.bias: not in this script's model); pass one this script saved",
    "sgd": "is a Composer checkpoint of another model (optimizer SGD, here Adam)",
    "no-timestamp": "is not a Composer checkpoint (no readable state/timestamp and state/model: KeyError: 'Timestamp')",
    "missing-tensor": "cannot be read by torch.load (RuntimeError: PytorchStreamReader failed locating file data/0: "
                      "file not found); use another checkpoint",
}


@pytest.mark.parametrize("mode", ["resume", "finetune"])
@pytest.mark.parametrize("name", FOREIGN)
def test_checkpoint_smoke_refuses_a_foreign_or_unreadable_checkpoint_naming_it(name, mode, foreign, worker, tmp_path):
    given = foreign[name]
    before = state_of([given])
    result = worker.run(CHECKPOINT, "--mode", mode, "--load-path", str(given), "--json", cwd=tmp_path)
    assert_one_line_error(result, 2, f"--load-path {str(given)!r} {FOREIGN[name]}")
    assert state_of([given]) == before


@pytest.mark.parametrize("name", ["no-timestamp", "missing-tensor"])
def test_preflight_refuses_an_unreadable_checkpoint_naming_it(name, foreign, worker, tmp_path):
    given = foreign[name]
    result = worker.run(PREFLIGHT, "--max-duration", "4ba", "--load-path", str(given), "--json", cwd=tmp_path)
    assert_one_line_error(result, 2, f"--load-path {str(given)!r} {FOREIGN[name]}")
    assert not result.check("load.checkpoint")["ok"]


# ---- 17. messages ----

@pytest.mark.parametrize("duration", ["", "  "])
def test_preflight_names_an_empty_max_duration_and_the_units(duration, worker, tmp_path):
    result = worker.run(PREFLIGHT, "--max-duration", duration, "--json", cwd=tmp_path)
    assert_one_line_error(result, 1, f"1 problem: max_duration: {duration!r} is empty: give a total in ep, ba, sp or "
                                     "tok, such as 2ep or 10ba (a bare integer means epochs)")


def test_a_full_disk_while_copying_checkpoints_fails_a_named_check(tmp_path):
    """`checkpoint_smoke.py --mode save` ended with "unexpected Error: [(...)]" naming no check when the disk filled up
    during its copy of the checkpoint folder: every step belongs to a named check."""
    result = run_with_full_disk_for_copies("rerun", CHECKPOINT, ["--mode", "save", "--batches", "2", "--device", "cpu",
                                                                 "--json"], tmp_path)
    assert_one_line_error(result, 1, "check 'save.rerun.copy' failed: Error: copying to ")
    assert "No space left on device" in result.stderr_lines[-1], result.stderr_lines[-1]
    failed = [check["name"] for check in result.json["checks"] if not check["ok"]]
    assert failed == ["save.rerun.copy"], failed
    assert result.stray_files == [], result.stray_files
