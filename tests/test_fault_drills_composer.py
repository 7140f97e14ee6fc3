"""Fault drills for the composer-training skill: killed jobs resume bit-exact, a kill during a save leaves a torn
checkpoint that the skill's advice clears, and damaged checkpoints are refused in one line before torch is imported,
with the given files left byte-for-byte as they were.

The kill drill runs inside checkpoint_smoke.py --mode all (the run test_composer_scripts.py shares, once per
device): real SIGKILLs in forked (CPU) or spawned (GPU) children. Damaged-input runs block the torch, numpy and
composer imports, so they prove the check happens before any heavy import (an import would be exit 3)."""

from __future__ import annotations

import json
import logging
import shutil
import zipfile
from pathlib import Path

import pytest

from support.checks import assert_equal_check
from support.composer_kit import trainer
from support.composer_scripts import CHECKPOINT, PREFLIGHT, SCRIPTS, checkpoint_smoke_all, got, state_of
from support.harness import assert_one_line_error, import_script, run_python

pytestmark = pytest.mark.composer

checkpoint_smoke = import_script(SCRIPTS / "checkpoint_smoke.py")  # stdlib helpers; heavy imports only in body()
preflight_script = import_script(SCRIPTS / "preflight.py")

CRASH_BATCHES = 8  # 2 epochs of 4 batches


def saved_up_to(batch: int) -> list[str]:
    """The checkpoint files of steps 1 to ``batch``: one at an epoch's last step still carries that epoch."""
    return [f"ep{(step - 1) // 4}-ba{step}-rank0.pt" for step in range(1, batch + 1)]


KILL_POINTS = {  # label: (resumed from, on disk after the kill); after every step, and halfway through writing ckpt 3
    **{f"ba{batch}": (batch - 1, saved_up_to(batch - 1)) for batch in range(1, CRASH_BATCHES + 1)},
    "save3": (2, saved_up_to(3)),
}


@pytest.fixture(scope="module")
def drill_root(tmp_path_factory) -> Path:
    """The files of the CPU run: the damaged-input tests need them once, not once per device."""
    return checkpoint_smoke_all(tmp_path_factory, "cpu")[1]


# ---- killed mid-run ----

def test_the_default_kill_points_are_every_step_of_both_epochs_and_a_save():
    assert checkpoint_smoke.CRASH_BATCHES == CRASH_BATCHES and checkpoint_smoke.PER_EPOCH == 4
    labels = [f"ba{p}" for p in checkpoint_smoke.kill_points(checkpoint_smoke.DEFAULT_KILL_AT)] + \
        [f"save{p}" for p in checkpoint_smoke.kill_points(checkpoint_smoke.DEFAULT_KILL_WHILE_SAVING)]
    assert labels == list(KILL_POINTS)


@pytest.mark.parametrize("label", KILL_POINTS)
def test_a_killed_job_relaunched_with_autoresume_ends_bitwise_equal(checkpoints, label):
    device, result, root = checkpoints
    resumed_from, on_disk = KILL_POINTS[label]
    killed = result.check(f"crash.{label}.killed")
    assert_equal_check(killed, -9)  # the child's exit code: SIGKILL
    got(result, f"crash.{label}.files", sorted(on_disk + (["latest-rank0.pt"] if resumed_from else [])))
    got(result, f"crash.{label}.latest", saved_up_to(resumed_from)[-1] if resumed_from else None)
    got(result, f"crash.{label}.resumed_from", resumed_from)
    got(result, f"crash.{label}.end", CRASH_BATCHES)
    equal = result.check(f"crash.{label}.bitwise_equal")
    assert_equal_check(equal, [])  # no tensor differs from the uninterrupted run's
    folder = root / "crash" / label / "smoke-crash"
    assert (folder / "latest-rank0.pt").readlink().name == "ep1-ba8-rank0.pt"


def test_a_kill_during_a_save_leaves_a_torn_file_that_blocks_the_relaunch_until_set_aside(checkpoints):
    _, result, root = checkpoints
    folder = root / "crash" / "save3" / "smoke-crash"
    torn = result.check("crash.save3.torn_file")
    assert_equal_check(torn, [str(folder / "ep0-ba3-rank0.pt")])  # the one file without a zip end record
    raised = result.check("crash.save3.relaunch_raises")
    assert raised["ok"] and raised["actual"].startswith(
        f"FileExistsError: {folder}/ep0-ba3-rank0.pt may conflict with a future checkpoint"), raised
    got(result, "crash.save3.set_aside", ["ep0-ba3-rank0.pt"])
    partial = folder / "ep0-ba3-rank0.pt.partial"  # what the child left, kept by the advice
    whole = folder / "ep0-ba3-rank0.pt"            # rewritten by the resumed run
    assert not zipfile.is_zipfile(partial) and zipfile.is_zipfile(whole)
    assert 0 < partial.stat().st_size < whole.stat().st_size
    assert whole.read_bytes()[:100] == partial.read_bytes()[:100]  # the same file, cut short


def test_kill_at_values_are_parsed_and_random_comes_from_the_seed():
    assert checkpoint_smoke.kill_points(" 2, 08 ,RANDOM") == ["2", "8", "random"]
    drawn = checkpoint_smoke.resolve_kill_points(["random", "1"], seed=7)
    assert drawn == checkpoint_smoke.resolve_kill_points(["random", "1"], seed=7)
    assert 1 <= int(drawn[0]) <= 8 and drawn[-1] == "1"
    assert {checkpoint_smoke.resolve_kill_points(["random"], seed)[0] for seed in range(40)} == \
        {str(batch) for batch in range(1, 9)}
    assert checkpoint_smoke.resolve_kill_points(["3", "5", "3"], seed=0) == ["3", "5"]  # repeats dropped, in order


@pytest.mark.parametrize("args, fragment", [
    (["--kill-at", "9"], "--kill-at: '9' is not a batch 1 to 8 or random"),
    (["--kill-at", "save:3"], "--kill-at: 'save:3' is not a batch 1 to 8 or random (a kill while saving is "
                              "--kill-while-saving 3)"),
    (["--kill-at", "1,,2"], "--kill-at: '' is not a batch 1 to 8"),
    (["--kill-while-saving", "0"], "--kill-while-saving: '0' is not a batch 1 to 8 or random"),
    (["--mode", "resume", "--kill-at", "1"], "--kill-at works with --mode crash or --mode all, not --mode resume"),
    (["--mode", "save", "--kill-while-saving", "3"],
     "--kill-while-saving works with --mode crash or --mode all, not --mode save"),
])
def test_bad_kill_points_are_usage_errors(args, fragment, capsys):
    assert checkpoint_smoke.main([*args, "--json"]) == 2  # in-process: argparse and validate() import nothing heavy
    out, err = capsys.readouterr()
    errors = [line for line in err.splitlines() if line.strip()]
    assert len(errors) == 1 and errors[0].startswith("checkpoint_smoke.py: error: ") and fragment in errors[0], err
    assert json.loads(out)["exit_code"] == 2


# ---- damaged checkpoints: one line, exit 2, before any heavy import, files untouched ----

BLOCK_HEAVY_IMPORTS = ("import runpy, sys; sys.modules.update(torch=None, numpy=None, composer=None); "
                       "sys.path.insert(0, sys.argv[1]); sys.argv = sys.argv[2:]; "
                       "runpy.run_path(sys.argv[0], run_name='__main__')")


def run_without_heavy_imports(script: Path, args: list[str], tmp: Path):
    return run_python(["-c", BLOCK_HEAVY_IMPORTS, str(script.parent), str(script), *args], tmp)


@pytest.fixture(scope="module")
def damaged(drill_root, tmp_path_factory):
    """Damaged checkpoint files, the truncated one a real SIGKILL during a save left."""
    import torch

    crashed = drill_root / "crash" / "save3" / "smoke-crash"
    folder = tmp_path_factory.mktemp("damaged inputs é")  # a space and non-ASCII in the path
    shutil.copy(crashed / "ep0-ba3-rank0.pt.partial", folder / "torn.pt")
    (folder / "empty.pt").write_bytes(b"")
    (folder / "notes.pt").write_text("not a checkpoint\n")
    with zipfile.ZipFile(folder / "other.pt", "w") as archive:
        archive.writestr("readme.txt", "a zip archive, not torch.save")
    torch.save({"weight": torch.ones(2)}, folder / "weights.pt")
    (folder / "dangling.pt").symlink_to("ep0-ba9-rank0.pt")
    good = crashed / "ep0-ba2-rank0.pt"
    with zipfile.ZipFile(good) as archive:
        offset = archive.getinfo("archive/data/0").header_offset
    data = bytearray(good.read_bytes())
    data[offset + 30 + int.from_bytes(data[offset + 26:offset + 28], "little") +
         int.from_bytes(data[offset + 28:offset + 30], "little")] ^= 0xFF  # first byte of the first tensor
    (folder / "flipped.pt").write_bytes(data)
    relabel_member(good, folder / "encrypted.pt", "archive/data.pkl", flag_bits=0x1)
    relabel_member(good, folder / "deflate64.pt", "archive/data/0", method=9)
    relabel_member(good, folder / "bad-deflate.pt", "archive/data/0", method=zipfile.ZIP_DEFLATED)
    return folder


def relabel_member(source: Path, target: Path, member: str, flag_bits: int = 0, method: int | None = None) -> None:
    """A copy of ``source`` whose ``member`` claims more general purpose flag bits (0x1: encrypted) or another
    compression method in its local and central headers; its bytes stay as torch.save stored them."""
    data = bytearray(source.read_bytes())
    with zipfile.ZipFile(source) as archive:
        local, central = archive.getinfo(member).header_offset, archive.start_dir
        for info in archive.infolist():  # central directory entries follow each other in this order
            if info.filename == member:
                break
            central += 46 + len(info.filename.encode()) + len(info.extra) + len(info.comment)
    for header, signature, flags_at in ((local, b"PK\x03\x04", 6), (central, b"PK\x01\x02", 8)):
        assert data[header:header + 4] == signature
        flags = int.from_bytes(data[header + flags_at:header + flags_at + 2], "little") | flag_bits
        data[header + flags_at:header + flags_at + 2] = flags.to_bytes(2, "little")
        if method is not None:  # the method field follows the flags
            data[header + flags_at + 2:header + flags_at + 4] = method.to_bytes(2, "little")
    target.write_bytes(data)
    with zipfile.ZipFile(target) as archive:
        relabeled = archive.getinfo(member)
    assert relabeled.flag_bits & flag_bits == flag_bits and relabeled.compress_type == (method or 0)


DAMAGED = {  # file: what the one line must say
    "torn.pt": "is truncated (",
    "empty.pt": "is empty (0 bytes)",
    "notes.pt": "is not a torch.save checkpoint (not a zip archive)",
    "other.pt": "is a zip archive but not a torch.save file (no data.pkl)",
    "weights.pt": "is a torch.save file but not a Composer checkpoint",
    "dangling.pt": "is a symlink to 'ep0-ba9-rank0.pt', which does not exist; point it at a checkpoint that exists",
    "flipped.pt": "is corrupted (archive member 'archive/data/0' fails its CRC check)",
    "encrypted.pt": "is an encrypted zip archive (member 'archive/data.pkl'), which torch.load cannot read",
    "deflate64.pt": "is a zip archive whose member 'archive/data/0' is compressed with method 9 (deflate64), which "
                    "torch.load cannot read",
    "bad-deflate.pt": "is a damaged zip archive (Error -3 while decompressing data: ",
}
SCRIPT_ARGS = {CHECKPOINT: ["--mode", "resume"], PREFLIGHT: ["--max-duration", "4ba"]}


@pytest.mark.parametrize("script", SCRIPT_ARGS, ids=lambda path: path.name)
@pytest.mark.parametrize("name", DAMAGED)
def test_a_damaged_load_path_is_one_line_and_exit_2_and_stays_unchanged(script, name, damaged, tmp_path):
    given = damaged / name
    before = state_of([given, damaged])
    result = run_without_heavy_imports(script, [*SCRIPT_ARGS[script], "--load-path", str(given), "--json"], tmp_path)
    assert_one_line_error(result, 2, f"--load-path {str(given)!r} {DAMAGED[name]}")
    assert result.json["exit_code"] == 2 and result.json["checks"] == []
    assert state_of([given, damaged]) == before
    assert {path.name for path in tmp_path.iterdir()} <= {"home", "tmpdir", "cache"}  # cwd: nothing written
    assert not any((tmp_path / "tmpdir").iterdir()), "no output directory was even created"


def test_torch_load_reads_a_flipped_byte_without_complaint(damaged, drill_root):
    """Why the scripts check CRCs themselves (SKILL.md: `torch.load` does not): the damaged tensor loads silently."""
    import torch

    good = drill_root / "crash" / "save3" / "smoke-crash" / "ep0-ba2-rank0.pt"
    flipped, intact = (torch.load(path, map_location="cpu", weights_only=False)["state"]["model"]
                       for path in (damaged / "flipped.pt", good))
    assert flipped.keys() == intact.keys()
    assert [name for name in intact if not torch.equal(flipped[name], intact[name])], "the flipped byte changed nothing"


def test_blocking_the_heavy_imports_would_show_a_late_check(drill_root, tmp_path):
    """The control for the tests above: a good checkpoint passes the check and reaches the torch import."""
    good = drill_root / "save" / "ep0-ba2-rank0.pt"
    result = run_without_heavy_imports(CHECKPOINT, ["--mode", "resume", "--load-path", str(good)], tmp_path)
    assert_one_line_error(result, 3, "missing dependency 'torch'")


def test_the_checks_pass_a_good_checkpoint(drill_root):
    root = drill_root
    for folder in (root / "save", root / "crash" / "save3" / "smoke-crash"):
        for path in folder.glob("*.pt"):
            assert checkpoint_smoke.checkpoint_problem(path) is None, path
    assert checkpoint_smoke.torn_checkpoints(root / "crash" / "save3" / "smoke-crash") == []  # .partial is aside


def autoresume_folder(root: Path, tmp: Path, latest: str, torn_name: str | None = None) -> Path:
    """A run folder as a killed job leaves it: checkpoints 1 and 2 of the drill, a `latest` link, maybe a torn file."""
    source = root / "crash" / "save3" / "smoke-crash"
    folder = tmp / "runs" / "job"
    folder.mkdir(parents=True)
    for name in ("ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt"):
        shutil.copy2(source / name, folder / name)
    if torn_name:
        shutil.copy2(source / "ep0-ba3-rank0.pt.partial", folder / torn_name)
    (folder / "latest-rank0.pt").symlink_to(latest)
    return folder


AUTORESUME = ["--max-duration", "8ba", "--autoresume", "--run-name", "job", "--save-interval", "1ba"]


@pytest.mark.parametrize("case", ["dangling", "torn target"])
def test_preflight_refuses_a_latest_link_autoresume_cannot_use(case, drill_root, tmp_path):
    root = drill_root
    if case == "dangling":
        folder = autoresume_folder(root, tmp_path, "ep0-ba9-rank0.pt")
        fragment = (f"autoresume's '{folder}/latest-rank0.pt' points at 'ep0-ba9-rank0.pt', which does not exist: "
                    "Composer would start this run from batch 0 without a word")
    else:
        folder = autoresume_folder(root, tmp_path, "ep0-ba3-rank0.pt", torn_name="ep0-ba3-rank0.pt")
        fragment = f"autoresume's '{folder}/latest-rank0.pt' points at 'ep0-ba3-rank0.pt', which is truncated ("
    files = [folder, *folder.iterdir()]
    before = state_of(files)
    result = run_without_heavy_imports(
        PREFLIGHT, [*AUTORESUME, "--save-folder", str(tmp_path / "runs" / "{run_name}")], tmp_path / "run")
    assert_one_line_error(result, 2, fragment)
    assert state_of(files) == before


def test_preflight_names_a_torn_checkpoint_and_passes_once_it_is_set_aside(drill_root, preflight, tmp_path):
    root = drill_root
    folder = autoresume_folder(root, tmp_path, "ep0-ba2-rank0.pt", torn_name="ep0-ba3-rank0.pt")
    arguments = [*AUTORESUME, "--save-folder", str(tmp_path / "runs" / "{run_name}")]
    code, checks = preflight(*arguments)
    assert code == 1 and not checks["save"]["ok"]
    assert checks["save"]["detail"].startswith(f"FileExistsError: {folder}/ep0-ba3-rank0.pt may conflict")
    assert "(ep0-ba3-rank0.pt: torn, a kill landed while saving it; rename it aside" in checks["save"]["detail"]

    assert checkpoint_smoke.set_aside_torn_checkpoints(folder) == [folder / "ep0-ba3-rank0.pt"]
    code, checks = preflight(*arguments)
    assert code == 0, checks
    assert checks["autoresume"]["detail"].startswith(f"resumes from {folder}/latest-rank0.pt -> ep0-ba2-rank0.pt")
    assert "autoresume from ep0-ba2-rank0.pt (2ba)" in checks["max_duration"]["detail"]


def test_preflight_knows_composers_latest_filename():
    import inspect

    from composer import Trainer

    assert inspect.signature(Trainer).parameters["save_latest_filename"].default == preflight_script.LATEST_FILENAME


def test_a_dangling_latest_link_restarts_autoresume_from_zero_with_only_an_info_log(tmp_path, caplog):
    folder = tmp_path / "job"
    folder.mkdir()
    (folder / "latest-rank0.pt").symlink_to("ep0-ba9-rank0.pt")
    with caplog.at_level(logging.INFO, logger="composer.trainer.trainer"):
        restarted = trainer(max_duration="2ba", autoresume=True, run_name="job",
                            save_folder=str(tmp_path / "{run_name}"))
    assert int(restarted.state.timestamp.batch) == 0
    messages = [record.getMessage() for record in caplog.records if record.levelno >= logging.INFO]
    assert "No previous autoresume checkpoint found" in messages
    assert not any(record.levelno >= logging.WARNING for record in caplog.records
                   if record.name.startswith("composer")), messages
    restarted.fit()  # nothing else in the folder: it trains from scratch without an error
    restarted.close()
    assert (folder / "latest-rank0.pt").readlink().name == "ep0-ba2-rank0.pt"
