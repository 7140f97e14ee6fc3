"""The questions agents asked after using the composer-training skill, answered in its references/questions.md and
proved here against the installed mosaicml 0.32.1 (tiny models, CPU, offline). support/claims_index.py binds each
line of questions.md to the tests below. Composer is imported inside the tests: the latest leg has no mosaicml."""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.composer_kit import classifier, loader, trainer, weights
from support.docs import REPO, runnable_blocks
from support.harness import run_command
from support.tensors import differing

pytestmark = pytest.mark.composer

QUESTIONS = REPO / "skills" / "composer-training" / "references" / "questions.md"
JOBS = QUESTIONS.with_name("jobs.md")  # the patterns; repair_before_relaunch is defined there


def _error(action) -> str:
    try:
        action()
    except Exception as exc:  # noqa: BLE001
        return f"{type(exc).__name__}: {exc}"
    return "no error"


def _equal(a, b) -> bool:
    return differing(weights(a), weights(b)) == []


class _Counting:
    """A map-style dataset that records every index read, to count what a resume replays."""

    def __init__(self, samples=16):
        import torch

        generator = torch.Generator().manual_seed(0)
        self.x = torch.randn(samples, 8, generator=generator)
        self.y = torch.randint(0, 3, (samples,), generator=generator)
        self.reads: list[int] = []

    def __len__(self):
        return len(self.x)

    def __getitem__(self, index):
        self.reads.append(index)
        return self.x[index], self.y[index]


# ---- 1. token counters ------------------------------------------------------------------------------------------

def test_a_token_counter_gets_the_batch_alone_and_must_return_an_int():
    import numpy
    import torch
    from composer.core import DataSpec

    calls = []

    def count(*args, **kwargs):
        calls.append((len(args), sorted(kwargs)))
        return 7

    counted = trainer(train_dataloader=DataSpec(loader(), get_num_tokens_in_batch=count), max_duration="2ba",
                      eval_dataloader=DataSpec(loader(8), get_num_tokens_in_batch=count))
    counted.fit()
    evaluated = len(calls) - 2
    assert int(counted.state.timestamp.token) == 14 and evaluated == 2  # 2 training batches, 2 eval batches
    assert set(map(str, calls)) == {"(1, [])"}  # one positional argument (the batch), no keywords, every call

    split = {"total": 7, "loss_generating": 5}
    by_dict = trainer(train_dataloader=DataSpec(loader(), get_num_tokens_in_batch=lambda batch: split),
                      max_duration="2ba")
    by_dict.fit()
    assert int(by_dict.state.timestamp.token) == 14  # "total" counts
    spec = DataSpec(loader(), get_num_tokens_in_batch=lambda batch: split)
    batch = next(iter(spec.dataloader))  # DataSpec's own method takes the token type and picks it from the dict
    assert spec.get_num_tokens_in_batch(batch) == 7 and spec.get_num_tokens_in_batch(batch, "loss_generating") == 5

    def fails_with(counter):
        return _error(lambda: trainer(train_dataloader=DataSpec(loader(), get_num_tokens_in_batch=counter),
                                      max_duration="1ba").fit())

    assert fails_with(lambda batch: torch.tensor(7)) == (
        "ValueError: Unexpected return type from get_num_tokens_in_batch: <class 'torch.Tensor'>")
    assert "numpy.int64" in fails_with(lambda batch: numpy.int64(7))
    assert fails_with(lambda batch: 7.0) == "ValueError: Unexpected return type from get_num_tokens_in_batch: " \
                                            "<class 'float'>"
    assert fails_with(lambda batch: {"total": torch.tensor(7)}) == "no error"  # a dict's values are not checked

    def two(batch, token_type):
        return 7

    assert fails_with(two) == "TypeError: test_a_token_counter_gets_the_batch_alone_and_must_return_an_int." \
                              "<locals>.two() missing 1 required positional argument: 'token_type'"


# ---- 2 and 10. a finished autoresume run, and load_path through the link ----------------------------------------

@pytest.fixture(scope="module")
def finished(tmp_path_factory):
    """A finished autoresume job (4 of 4 batches): its save folder and the launch command."""
    root = tmp_path_factory.mktemp("finished")

    def launch(**extra):
        return trainer(max_duration="4ba", autoresume=True, run_name="done", save_folder=str(root / "{run_name}"),
                       save_interval="2ba", **extra)

    first = launch()
    first.fit()
    first.close()
    return root / "done", launch


def test_a_finished_run_relaunched_raises_at_fit_and_the_timestamp_guard_skips_it(finished):
    folder, launch = finished
    run_is_finished = _doc_function("run_is_finished")
    again = launch()
    assert int(again.state.timestamp.batch) == 4 and not again.state.timestamp < again.state.max_duration
    assert run_is_finished(again)
    error = _error(again.fit)
    assert error.startswith("ValueError: The max_duration (4ba) is less than or equal to the elapsed training "
                            "duration (4ba)"), error
    again.close()
    guarded = launch()
    if not run_is_finished(guarded):  # the guard of questions.md
        guarded.fit()
    guarded.close()
    assert sorted(path.name for path in folder.iterdir()) == ["ep0-ba2-rank0.pt", "ep0-ba4-rank0.pt",
                                                               "latest-rank0.pt"]
    fresh = trainer(max_duration="4ba", autoresume=True, run_name="new", save_folder=str(folder.parent / "{run_name}"))
    assert not run_is_finished(fresh)  # an unfinished (here: new) run still trains
    fresh.close()


def _epoch_job(root, dataset=None):
    """2 epochs of 4 batches, saved every batch: the last checkpoint is ep1-ba8, at epoch 1's last batch."""
    from torch.utils.data import DataLoader

    return trainer(max_duration="2ep", autoresume=True, run_name="job", save_folder=str(root / "{run_name}"),
                   save_interval="1ba", train_dataloader=DataLoader(dataset or _Counting(), batch_size=4))


def test_a_finished_epoch_run_saved_by_a_batch_interval_refits_its_last_epoch_unless_guarded(tmp_path):
    import warnings

    run_is_finished = _doc_function("run_is_finished")
    first = _epoch_job(tmp_path)
    assert not run_is_finished(first)
    first.fit()
    first.close()
    folder = tmp_path / "job"
    assert (folder / "latest-rank0.pt").readlink().name == "ep1-ba8-rank0.pt"
    guarded = _epoch_job(tmp_path)
    assert (int(guarded.state.timestamp.epoch), int(guarded.state.timestamp.batch)) == (1, 8)
    assert guarded.state.timestamp < guarded.state.max_duration  # Composer's condition alone: not reached
    assert run_is_finished(guarded)
    guarded.close()
    dataset = _Counting()
    unguarded = _epoch_job(tmp_path, dataset)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        unguarded.fit()  # raises nothing
    unguarded.close()
    assert any("No batches were trained for global rank 0" in str(warning.message) for warning in caught)
    assert dataset.reads == [0, 1, 2, 3] + list(range(16))  # the spin's one batch of epoch 0, then all of epoch 1
    assert int(unguarded.state.timestamp.batch) == 8 and int(unguarded.state.timestamp.epoch) == 2
    assert {"ep1-ba8-rank0.pt", "ep2-ba8-rank0.pt"} <= {path.name for path in folder.iterdir()}
    assert (folder / "latest-rank0.pt").readlink().name == "ep2-ba8-rank0.pt"


def test_load_path_can_be_the_latest_link_and_autoresume_loads_through_it(finished, tmp_path):
    folder, launch = finished
    link = folder / "latest-rank0.pt"
    assert link.is_symlink()
    manual = trainer(max_duration="6ba", load_path=str(link))
    assert int(manual.state.timestamp.batch) == 4 and manual.state.load_path == str(link)
    manual.close()
    resumed = launch()
    assert resumed.state.load_path == str(link.absolute())
    resumed.close()
    dangling = tmp_path / "latest-rank0.pt"
    dangling.symlink_to("ep9-ba9-rank0.pt")
    error = _error(lambda: trainer(max_duration="6ba", load_path=str(dangling)))
    assert error == f"FileNotFoundError: Local path {dangling} does not exist", error


# ---- 3. the repair after a kill ---------------------------------------------------------------------------------

def _doc_function(name: str, doc: Path = QUESTIONS):
    """Run the block of ``doc`` that defines ``name`` (only its imports and that definition) and return it."""
    import ast

    block = next(block for block in runnable_blocks(doc, "python") if f"def {name}(" in block.source)
    tree = ast.parse(block.source)
    kept = [node for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
            or (isinstance(node, ast.FunctionDef) and node.name == name)]
    namespace = {"Path": Path}
    exec(compile(ast.Module(body=kept, type_ignores=[]), str(doc), "exec"), namespace)  # noqa: S102
    return namespace[name]


def test_the_repair_fixes_every_state_a_kill_leaves_and_the_relaunch_ends_bitwise_equal(tmp_path):
    """Every row of the table in question 3, from one 4-batch job stopped after 2 checkpoints (+ the kill's damage)."""
    repair = _doc_function("repair_before_relaunch", JOBS)
    straight = trainer(max_duration="4ba")
    straight.fit()

    def job(root):
        return trainer(max_duration="4ba", autoresume=True, run_name="job", save_folder=str(root / "{run_name}"),
                       save_interval="1ba")

    base = tmp_path / "base"
    first = job(base)
    first.fit(duration="2ba")  # checkpoints 1 and 2, the link on 2
    first.close()
    complete_3 = tmp_path / "complete"  # a complete checkpoint 3 to copy in
    third = trainer(max_duration="3ba", save_folder=str(complete_3), save_interval="1ba")
    third.fit()
    third.close()

    def torn(folder):
        (folder / "ep0-ba3-rank0.pt").write_bytes((folder / "ep0-ba2-rank0.pt").read_bytes()[:10_000])

    def complete(folder):
        shutil.copy(complete_3 / "ep0-ba3-rank0.pt", folder / "ep0-ba3-rank0.pt")

    def no_link(folder):
        complete(folder)
        (folder / "latest-rank0.pt").unlink()

    def dangling(folder):
        no_link(folder)
        (folder / "latest-rank0.pt").symlink_to("ep0-ba9-rank0.pt")

    states = {  # name: (damage, batch the relaunch starts from, the error of its fit(), batch after the repair)
        "healthy": (lambda folder: None, 2, None, 2),
        "torn": (torn, 2, "ep0-ba3-rank0.pt may conflict with a future checkpoint", 2),
        "complete-not-linked": (complete, 2, "ep0-ba3-rank0.pt may conflict with a future checkpoint", 3),
        "no-link": (no_link, 0, "may conflict with a future checkpoint", 3),
        "dangling-link": (dangling, 0, "may conflict with a future checkpoint", 3),
    }
    for name, (damage, start, error, repaired_start) in states.items():
        root = tmp_path / name
        shutil.copytree(base, root, symlinks=True)
        folder = root / "job"
        damage(folder)
        if error:
            relaunch = job(root)
            assert int(relaunch.state.timestamp.batch) == start, name  # never an older checkpoint than the link's
            raised = _error(relaunch.fit)
            assert raised.startswith("FileExistsError: ") and error in raised, name
            named = Path(raised.removeprefix("FileExistsError: ").split(" may conflict")[0])
            assert named.parent == folder and named.is_file() and named.name.startswith("ep0-ba"), raised
            relaunch.close()
        if name == "no-link":  # what the repair is not: save_overwrite=True restarts and overwrites, silently
            shutil.copytree(root, tmp_path / "overwritten", symlinks=True)
            overwriting = trainer(max_duration="4ba", autoresume=True, run_name="job", save_overwrite=True,
                                  save_folder=str(tmp_path / "overwritten" / "{run_name}"), save_interval="1ba")
            assert int(overwriting.state.timestamp.batch) == 0
            overwriting.fit()
            overwriting.close()
        linked = (folder / "latest-rank0.pt").readlink() if name == "healthy" else None
        repair(folder)
        assert name != "healthy" or (folder / "latest-rank0.pt").readlink() == linked  # the same link again
        repaired = job(root)
        assert int(repaired.state.timestamp.batch) == repaired_start, name
        repaired.fit()
        repaired.close()
        assert int(repaired.state.timestamp.batch) == 4 and _equal(straight, repaired), name
        assert (folder / "ep0-ba3-rank0.pt.partial").exists() == (name == "torn"), name


def test_the_repair_links_the_newest_checkpoint_by_epoch_then_batch(tmp_path, monkeypatch):
    """Two files of one batch (ep1-ba8 and ep2-ba8, from relaunching a run finished at an epoch's last batch): the
    repair links the later epoch whatever order the folder lists them in; a link to the earlier one fails."""
    from torch.utils.data import DataLoader

    repair = _doc_function("repair_before_relaunch", JOBS)
    straight = trainer(max_duration="2ep", train_dataloader=DataLoader(_Counting(), batch_size=4))
    straight.fit()
    for launch in range(2):  # the second launch, unguarded, saves batch 8 again as ep2-ba8
        job = _epoch_job(tmp_path / "base")
        job.fit()
        job.close()
    wrong = tmp_path / "wrong"
    shutil.copytree(tmp_path / "base", wrong, symlinks=True)
    (wrong / "job" / "latest-rank0.pt").unlink()
    (wrong / "job" / "latest-rank0.pt").symlink_to("ep1-ba8-rank0.pt")
    relaunch = _epoch_job(wrong)
    assert _error(relaunch.fit).startswith(f"FileExistsError: {wrong / 'job' / 'ep2-ba8-rank0.pt'} may conflict")
    relaunch.close()
    listed = Path.glob
    for order in (False, True):
        root = tmp_path / f"listed-{order}"
        shutil.copytree(tmp_path / "base", root, symlinks=True)
        (root / "job" / "latest-rank0.pt").unlink()
        monkeypatch.setattr(Path, "glob", lambda self, pattern, order=order: iter(
            sorted(listed(self, pattern), key=lambda path: path.name, reverse=order)))
        repair(root / "job")
        monkeypatch.undo()
        assert (root / "job" / "latest-rank0.pt").readlink().name == "ep2-ba8-rank0.pt", order
        repaired = _epoch_job(root)
        assert _doc_function("run_is_finished")(repaired) and _equal(straight, repaired)
        repaired.close()


# ---- 4. spin_dataloaders ----------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def counted_checkpoints(tmp_path_factory):
    """12 batches of a 4-batch-per-epoch loader, saved every batch and, in another folder, every epoch."""
    from torch.utils.data import DataLoader

    root = tmp_path_factory.mktemp("spin")
    for interval in ("1ba", "1ep"):
        saver = trainer(train_dataloader=DataLoader(_Counting(), batch_size=4), max_duration="12ba",
                        save_folder=str(root / interval), save_interval=interval)
        saver.fit()
        saver.close()
    return root


def _resume(checkpoint, **settings):
    """(trainer after fit, the timestamp at construction, indices read before the first step, batches trained,
    the warnings of fit)."""
    import warnings

    from composer import Callback
    from torch.utils.data import DataLoader

    dataset, eval_dataset = _Counting(), _Counting(8)

    class Watch(Callback):
        def __init__(self):
            self.before, self.trained, self.evaluated = None, [], 0

        def eval_batch_start(self, state, logger):
            self.evaluated += 1

        def batch_start(self, state, logger):
            if self.before is None:
                self.before = list(dataset.reads[:-4])  # without the batch about to be trained
                self.eval_before = list(eval_dataset.reads)
            self.trained.append((int(state.timestamp.epoch), int(state.timestamp.batch_in_epoch),
                                 state.batch[1].tolist()))

    watch, model = Watch(), classifier()
    forwards = []
    model.module.register_forward_hook(lambda module, inputs, output: forwards.append(1))
    resumed = trainer(model=model, train_dataloader=DataLoader(dataset, batch_size=4), load_path=str(checkpoint),
                      callbacks=[watch], eval_dataloader=DataLoader(eval_dataset, batch_size=4), **settings)
    start = resumed.state.timestamp
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        resumed.fit()
    resumed.close()
    assert len(forwards) == len(watch.trained) + watch.evaluated  # none for the replayed batches
    spun = settings.get("spin_dataloaders", True)
    assert len(eval_dataset.reads) == 4 * (watch.evaluated + spun)  # spinning read one eval batch, before any step
    assert watch.eval_before[:4] == ([0, 1, 2, 3] if spun else []), watch.eval_before
    return resumed, start, watch.before, watch.trained, [str(warning.message) for warning in caught]


@pytest.mark.parametrize(("interval", "name", "epoch", "batch_in_epoch"), [
    ("1ba", "ep0-ba1-rank0.pt", 0, 1), ("1ba", "ep1-ba6-rank0.pt", 1, 2), ("1ba", "ep0-ba4-rank0.pt", 0, 4),
    ("1ep", "ep1-ba4-rank0.pt", 1, 0), ("1ep", "ep2-ba8-rank0.pt", 2, 0)])
def test_a_resume_replays_one_batch_per_finished_epoch_and_the_current_epoch(
        counted_checkpoints, interval, name, epoch, batch_in_epoch):
    resumed, start, before, _, warned = _resume(counted_checkpoints / interval / name, max_duration="13ba")
    assert (int(start.epoch), int(start.batch_in_epoch)) == (epoch, batch_in_epoch)
    assert len(before) == 4 * (epoch + batch_in_epoch)  # batches of 4, read and dropped before the first step
    assert before == [0, 1, 2, 3] * epoch + list(range(4 * batch_in_epoch))
    empty_epoch = "No batches were trained for global rank 0"  # the replayed epoch had no batch left to train
    assert any(empty_epoch in message for message in warned) == (batch_in_epoch == 4), warned
    assert int(resumed.state.timestamp.batch) == 13


def test_spin_dataloaders_false_retrains_the_epoch_from_its_start_and_changes_the_result(counted_checkpoints):
    from torch.utils.data import DataLoader

    straight = trainer(train_dataloader=DataLoader(_Counting(), batch_size=4), max_duration="10ba")
    straight.fit()
    checkpoint = counted_checkpoints / "1ba" / "ep1-ba6-rank0.pt"  # epoch 1, 2 of its 4 batches done
    spun, _, _, spun_batches, _ = _resume(checkpoint, max_duration="10ba")
    unspun, _, before, unspun_batches, _ = _resume(checkpoint, max_duration="10ba", spin_dataloaders=False)
    assert before == []  # nothing replayed
    labels = [batch for _, _, batch in unspun_batches]
    first_two = [batch for _, _, batch in spun_batches[2:4]]  # epoch 2's first two batches = epoch 1's first two
    assert labels[:2] == first_two  # epoch 1 again from its first batch: those batches are trained twice
    assert [(epoch, position) for epoch, position, _ in unspun_batches] == [(1, 2), (1, 3), (1, 4), (1, 5)]
    assert int(unspun.state.timestamp.epoch) == 1 and int(unspun.state.timestamp.batch_in_epoch) == 6  # > 4
    assert [(epoch, position) for epoch, position, _ in spun_batches] == [(1, 2), (1, 3), (2, 0), (2, 1)]
    assert _equal(straight, spun) and not _equal(straight, unspun)


# ---- 5. braces in save_folder -----------------------------------------------------------------------------------

def test_save_folder_is_formatted_and_a_literal_brace_breaks_the_autoresume_relaunch(tmp_path):
    for written, made in [("{run_name}-{rank}", "r-0"), ("a{x}", "a{x}"), ("b{{x}}", "b{x}")]:
        saver = trainer(max_duration="1ba", run_name="r", save_folder=str(tmp_path / written))
        saver.fit()
        saver.close()
        assert (tmp_path / made / "ep0-ba1-rank0.pt").is_file(), written
    for brace in ("c{", "c}"):
        error = _error(lambda: trainer(max_duration="1ba", save_folder=str(tmp_path / brace)))
        assert error == f"ValueError: Single '{brace[-1]}' encountered in format string", error

    for written, key in [("d{x}", "x"), ("e{{y}}", "y")]:
        def job():
            return trainer(max_duration="2ba", autoresume=True, run_name="r", save_folder=str(tmp_path / written))

        first = job()
        first.fit(duration="1ba")  # the first launch saves
        first.close()
        assert _error(job) == f"KeyError: '{key}'", written


# ---- 6. F1 without scikit-learn ---------------------------------------------------------------------------------

def test_f1_comes_from_torchmetrics_which_composer_requires_and_scikit_learn_is_not_needed():
    import importlib.metadata

    import torch
    from composer.models import ComposerClassifier
    from torchmetrics.classification import MulticlassF1Score

    requires = [line for line in importlib.metadata.requires("mosaicml") if "extra ==" not in line]
    assert any(line.startswith("torchmetrics") for line in requires)
    assert not [line for line in importlib.metadata.requires("mosaicml") if "scikit" in line or "sklearn" in line]
    assert not any(line.startswith("evaluate") for line in requires)

    model = ComposerClassifier(module=torch.nn.Linear(8, 3), num_classes=3,
                               val_metrics=MulticlassF1Score(num_classes=3, average="macro"))
    scored = trainer(model=model, eval_dataloader=loader(16), max_duration="2ba")
    scored.fit()
    metrics = scored.state.eval_metrics["eval"]
    assert list(metrics) == ["MulticlassF1Score"]  # val_metrics replaced CrossEntropy and MulticlassAccuracy
    predicted = torch.cat(scored.predict(loader(16))).argmax(dim=1)
    labels = torch.cat([targets for _, targets in loader(16)])
    scores = []
    for cls in range(3):  # macro F1 by hand
        hits = int(((predicted == cls) & (labels == cls)).sum())
        support = int((predicted == cls).sum()) + int((labels == cls).sum())
        scores.append(2 * hits / support if support else 0.0)
    assert abs(float(metrics["MulticlassF1Score"].compute()) - sum(scores) / 3) < 1e-6
    scored.close()


# ---- 7. one file per save point ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("duration", "interval", "files"), [
    ("6ba", "3ba", ["ep0-ba3-rank0.pt", "ep0-ba6-rank0.pt"]),
    ("6ba", "1ep", ["ep0-ba6-rank0.pt"]),
    ("6ba", "6ba", ["ep0-ba6-rank0.pt"]),
    ("1ep", "1ep", ["ep1-ba6-rank0.pt"]),
    ("1ep", "2ba", ["ep0-ba2-rank0.pt", "ep0-ba4-rank0.pt", "ep0-ba6-rank0.pt"])])  # the batch interval came first
def test_an_interval_save_and_the_end_of_training_save_write_one_file(tmp_path, duration, interval, files):
    saver = trainer(train_dataloader=loader(24), max_duration=duration, save_folder=str(tmp_path),
                    save_interval=interval)  # 6 batches per epoch: batch 6 ends the epoch and the run
    saver.fit()
    saver.close()
    assert sorted(path.name for path in tmp_path.glob("ep*.pt")) == files
    assert [Path(path).name for path in saver.saved_checkpoints] == files
    assert (tmp_path / "latest-rank0.pt").readlink().name == files[-1]


# ---- 8. no scheduler --------------------------------------------------------------------------------------------

def test_without_schedulers_the_learning_rate_stays_the_optimizers():
    from composer import Callback

    rates = []

    class Rates(Callback):
        def batch_end(self, state, logger):
            rates.append(state.optimizers[0].param_groups[0]["lr"])

    run = trainer(max_duration="2ep", callbacks=[Rates()])  # the kit's SGD, lr 0.1
    assert run.state.schedulers == []
    run.fit()
    assert rates == [0.1] * 8


# ---- 9. files outside save_folder -------------------------------------------------------------------------------

_FIT_TWICE = """
import json, os, sys
sys.path.insert(0, {tests!r})
events = []


def writes(event, args):  # folders made, and files opened to write (by open() or os.open())
    if event == "os.mkdir" or (event == "open" and isinstance(args[0], str) and (
            args[1][:1] in "wax" if isinstance(args[1], str) else args[2] & (os.O_WRONLY | os.O_RDWR | os.O_CREAT))):
        events.append([event, args[0]])


sys.addaudithook(writes)
from support.composer_kit import loader, trainer
for duration in ("2ba", "4ba"):  # train, then resume
    run = trainer(max_duration=duration, run_name="job", autoresume=True, save_folder={save!r}, save_interval="1ba",
                  eval_dataloader=loader(8))
    run.fit()
    run.close()
print(json.dumps(events))
"""


def test_a_run_leaves_files_only_in_save_folder(tmp_path):
    folders = {name: tmp_path / name for name in ("home", "tmpdir", "cache", "cwd")}
    for folder in folders.values():
        folder.mkdir()
    save = tmp_path / "save"
    code = _FIT_TWICE.format(tests=str(REPO / "tests"), save=str(save / "{run_name}"))
    result = run_command([sys.executable, "-c", textwrap.dedent(code)], tmp_path, cwd=folders["cwd"],
                         env={"HOME": str(folders["home"]), "TMPDIR": str(folders["tmpdir"]),
                              "XDG_CACHE_HOME": str(folders["cache"])})
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.network_attempts == []
    left = sorted(str(Path(path).relative_to(tmp_path)) for path in result.stray_files)
    assert left == ["save", "save/job", "save/job/ep0-ba1-rank0.pt", "save/job/ep0-ba2-rank0.pt",
                    "save/job/ep0-ba3-rank0.pt", "save/job/ep0-ba4-rank0.pt", "save/job/latest-rank0.pt"], left
    for folder in folders.values():
        assert not any(folder.iterdir()), folder
    events = json.loads(result.stdout.splitlines()[-1])
    made = [path for event, path in events if event == "os.mkdir"]
    opened = [path for event, path in events if event == "open"]
    assert any(Path(path).parent == folders["tmpdir"] for path in made)  # temporary folders came and went
    assert any(Path(path).parent == save / "job" and Path(path).name.startswith("._signal_file_node0_")
               for path in opened)
    inside = (str(save), str(folders["tmpdir"]))
    assert [path for path in made + opened if not path.startswith(inside) and path != "/dev/null"] == []


_KILLED_FIT = """
import os, signal, sys
sys.path.insert(0, {tests!r})
from composer import Callback
from support.composer_kit import trainer


class Kill(Callback):
    def batch_end(self, state, logger):
        if {kill} and int(state.timestamp.batch) == 2:
            os.kill(os.getpid(), signal.SIGKILL)


trainer(max_duration="3ba", save_folder={save!r}, save_interval="1ba", callbacks=[Kill()]).fit()
"""


def test_a_killed_run_leaves_torchs_and_the_checkpoint_savers_temporary_folders_in_tmpdir(tmp_path):
    """torch.distributed.nn, which Composer imports, makes a TemporaryDirectory at import, and the CheckpointSaver
    one at construction (for its latest.N.symlink files); both go at exit, which a SIGKILL skips."""
    leftovers = {}
    for ending in ("clean", "killed"):
        tmpdir = tmp_path / ending
        tmpdir.mkdir()
        save = tmp_path / f"save-{ending}"
        code = _KILLED_FIT.format(tests=str(REPO / "tests"), kill=ending == "killed", save=str(save))
        result = run_command([sys.executable, "-c", code], tmp_path, env={"TMPDIR": str(tmpdir)})
        assert result.returncode == (-9 if ending == "killed" else 0), result.stderr[-2000:]
        leftovers[ending] = sorted(
            (path.name[:3], sorted(child.name for child in path.iterdir())) for path in tmpdir.iterdir())
    assert leftovers["clean"] == []
    assert (tmp_path / "save-killed" / "ep0-ba1-rank0.pt").is_file()  # the killed run had saved
    (torchs, torch_files), (savers, [symlink]) = leftovers["killed"]  # exactly two folders, the saver's: one file
    assert (torchs, savers) == ("tmp", "tmp") and torch_files == ["_remote_module_non_scriptable.py"], leftovers
    assert re.fullmatch(r"latest\.\d+\.symlink", symlink), leftovers


# ---- 11. names, and when Trainer(seed=...) seeds ----------------------------------------------------------------

def test_the_names_exist_and_trainer_seed_acts_after_the_model_is_built():
    import torch
    from composer import Trainer
    from composer.models import ComposerClassifier
    from composer.utils.reproducibility import seed_all

    defaults = {name: p.default for name, p in inspect.signature(Trainer).parameters.items()}
    assert defaults["log_to_console"] is False and defaults["deterministic_mode"] is False
    assert {"save_filename", "save_latest_filename", "save_num_checkpoints_to_keep", "seed"} <= set(defaults)

    def build():
        return ComposerClassifier(module=torch.nn.Linear(8, 3), num_classes=3)

    unseeded = [build(), build()]
    trainers = [trainer(model=model, max_duration="2ba", seed=0) for model in unseeded]
    assert not torch.equal(unseeded[0].module.weight, unseeded[1].module.weight)  # seed=0 came too late for init
    seeded = []
    for _ in range(2):
        seed_all(0)
        seeded.append(build())
    assert torch.equal(seeded[0].module.weight, seeded[1].module.weight)
    trainers = [trainer(model=model, max_duration="2ba", seed=0) for model in seeded]
    for run in trainers:
        run.fit()
    assert _equal(*trainers)  # same init + the same Trainer seed: the same training


# ---- 12. bit-exact resume without deterministic algorithms ------------------------------------------------------

def test_a_resume_is_bit_exact_on_cpu_without_deterministic_algorithms(tmp_path):
    import torch
    from composer.models import ComposerClassifier

    assert not torch.are_deterministic_algorithms_enabled()

    def run(**settings):
        torch.manual_seed(0)
        model = ComposerClassifier(module=torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(),
                                                              torch.nn.Dropout(0.5), torch.nn.Linear(16, 3)),
                                   num_classes=3)
        return trainer(model=model, optimizers=torch.optim.Adam(model.parameters(), lr=1e-2), max_duration="10ba",
                       **settings)  # the kit's loader is unshuffled; dropout draws random numbers every step

    straight = run()
    straight.fit()
    saver = run(save_folder=str(tmp_path), save_interval="1ba")
    saver.fit()
    saver.close()
    for name in ("ep0-ba2-rank0.pt", "ep0-ba4-rank0.pt", "ep1-ba6-rank0.pt", "ep2-ba9-rank0.pt"):
        resumed = run(load_path=str(tmp_path / name))
        resumed.fit()
        resumed.close()
        assert _equal(straight, resumed), name
    assert not torch.are_deterministic_algorithms_enabled()


# ---- 13. what a changed-head load reports -----------------------------------------------------------------------

def test_a_changed_head_load_fills_a_same_named_backbone_raises_on_a_shape_and_skips_renamed_layers_silently(
        tmp_path, caplog):
    import logging
    import warnings

    import torch
    from composer.models import ComposerClassifier

    source = classifier(3)
    saver = trainer(model=source, max_duration="1ba", save_folder=str(tmp_path))
    saver.fit()
    saver.close()
    settings = dict(max_duration="1ba", load_path=str(tmp_path / "latest-rank0.pt"), load_weights_only=True,
                    load_strict_model_weights=False, load_ignore_keys=["state/model/module.2*"])

    def network(hidden=16, classes=5):
        torch.manual_seed(1)  # another init than the source's
        return torch.nn.Sequential(torch.nn.Linear(8, hidden), torch.nn.ReLU(), torch.nn.Linear(hidden, classes))

    same = ComposerClassifier(module=network(), num_classes=5)
    before = same.module[0].weight.detach().clone()
    trainer(model=same, **settings).close()
    assert not torch.equal(before, same.module[0].weight)  # the check of questions.md: changed means loaded
    assert torch.equal(same.module[0].weight, source.module[0].weight)
    assert torch.equal(same.module[0].bias, source.module[0].bias)

    wider = ComposerClassifier(module=network(hidden=32), num_classes=5)
    error = _error(lambda: trainer(model=wider, **settings))
    assert error.startswith("RuntimeError: Error(s) in loading state_dict"), error

    class Renamed(torch.nn.Module):
        def __init__(self):
            super().__init__()
            torch.manual_seed(1)
            self.body, self.head = torch.nn.Linear(8, 16), torch.nn.Linear(16, 5)

        def forward(self, x):
            return self.head(torch.relu(self.body(x)))

    renamed = ComposerClassifier(module=Renamed(), num_classes=5)
    before = renamed.module.body.weight.detach().clone()
    caplog.set_level(logging.DEBUG)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        trainer(model=renamed, **settings).close()  # nothing raised
    assert torch.equal(before, renamed.module.body.weight)  # nothing loaded
    said = [str(warning.message) for warning in caught] + [record.getMessage() for record in caplog.records
                                                           if record.levelno >= logging.WARNING]
    assert not [line for line in said if re.search(r"missing|unexpected|body|module\.0", line)], said


# ---- 14. stale signal files after a kill ------------------------------------------------------------------------

_KILLED_AT_SIGNAL_FILE = """
import os, signal, sys
sys.path.insert(0, {tests!r})
import torch
from support.composer_kit import trainer, weights


def kill_before_the_signal_file_goes(event, args):
    if {kill} and event == "os.remove" and os.path.basename(str(args[0])).startswith("._signal_file"):
        os.kill(os.getpid(), signal.SIGKILL)


sys.addaudithook(kill_before_the_signal_file_goes)
run = trainer(max_duration={duration!r}, autoresume=True, run_name="job", save_folder={save!r}, save_interval="1ba")
print("START", int(run.state.timestamp.batch), flush=True)
run.fit()
run.close()
torch.save(weights(run), {out!r})
"""


def test_stale_signal_files_of_a_killed_autoresume_change_nothing_on_the_relaunch(tmp_path):
    import torch

    save = tmp_path / "save"

    def launch(duration, kill):
        code = _KILLED_AT_SIGNAL_FILE.format(tests=str(REPO / "tests"), kill=kill, duration=duration, save=str(save),
                                             out=str(tmp_path / "weights.pt"))
        return run_command([sys.executable, "-c", code], tmp_path / "run")

    first = launch("2ba", kill=False)
    assert first.returncode == 0 and "START 0" in first.stdout, first.stderr[-2000:]
    killed = launch("4ba", kill=True)  # killed while autoresume's signal file exists
    assert killed.returncode == -9 and "START" not in killed.stdout, killed.stderr[-2000:]
    stale = sorted(path.name for path in save.glob("._signal_file*"))
    assert len(stale) == 1 and re.fullmatch(r"\._signal_file_node0_[A-Za-z0-9]{6}", stale[0]), stale
    relaunch = launch("4ba", kill=False)
    assert relaunch.returncode == 0 and "START 2" in relaunch.stdout, relaunch.stderr[-2000:]
    assert sorted(path.name for path in save.glob("._signal_file*")) == stale  # left in place, never deleted
    straight = trainer(max_duration="4ba")
    straight.fit()
    assert differing(weights(straight), torch.load(tmp_path / "weights.pt")) == []


# ---- 15. a pre-created save_folder ------------------------------------------------------------------------------

def test_a_pre_created_save_folder_empty_or_holding_other_files_is_accepted(tmp_path):
    for autoresume in (False, True):
        for contents in ({}, {"notes.txt": "x", "other-job/ep0-ba9-rank0.pt": "y"}):
            folder = tmp_path / f"{autoresume}-{len(contents)}"
            folder.mkdir()
            for name, text in contents.items():
                (folder / name).parent.mkdir(exist_ok=True)
                (folder / name).write_text(text)
            run = trainer(max_duration="2ba", autoresume=autoresume, run_name="r", save_folder=str(folder))
            assert int(run.state.timestamp.batch) == 0
            run.fit()
            run.close()
            assert sorted(path.name for path in folder.iterdir()) == sorted(
                {"ep0-ba2-rank0.pt", "latest-rank0.pt", *(name.split("/")[0] for name in contents)})
    clashing = tmp_path / "clashing"
    clashing.mkdir()
    (clashing / "ep0-ba9-rank0.pt").write_text("y")  # a name of the save_filename pattern, later than batch 0
    run = trainer(max_duration="2ba", save_folder=str(clashing))
    assert _error(run.fit).startswith(f"FileExistsError: {clashing / 'ep0-ba9-rank0.pt'} may conflict")
    run.close()


# ---- 16. an Evaluator without metric_names ----------------------------------------------------------------------

def test_an_evaluator_without_metric_names_computes_every_eval_metric_under_its_key():
    import torch
    from composer import ComposerModel
    from composer.core import Evaluator
    from torchmetrics.classification import MulticlassAccuracy, MulticlassF1Score

    class Net(ComposerModel):
        def __init__(self):
            super().__init__()
            torch.manual_seed(0)
            self.layer = torch.nn.Linear(8, 3)

        def forward(self, batch):
            return self.layer(batch[0])

        def loss(self, outputs, batch):
            return torch.nn.functional.cross_entropy(outputs, batch[1])

        def get_metrics(self, is_train=False):
            return {} if is_train else {"accuracy": MulticlassAccuracy(num_classes=3, average="micro"),
                                        "f1": MulticlassF1Score(num_classes=3)}

        def update_metric(self, batch, outputs, metric):
            metric.update(outputs, batch[1])

    sets = {"val": loader(12, batch_size=8), "test": loader(20, batch_size=8)}
    model = Net()
    run = trainer(model=model, max_duration="2ba", eval_dataloader=[
        Evaluator(label=label, dataloader=data) for label, data in sets.items()])
    run.fit()
    assert {label: list(metrics) for label, metrics in run.state.eval_metrics.items()} == {
        "val": ["accuracy", "f1"], "test": ["accuracy", "f1"]}
    model.eval()
    with torch.no_grad():
        for label, data in sets.items():
            right = sum(int((model(batch).argmax(dim=1) == batch[1]).sum()) for batch in data)
            assert float(run.state.eval_metrics[label]["accuracy"].compute()) == pytest.approx(right / len(
                data.dataset)), label
    run.close()
    fewer = trainer(model=Net(), max_duration="1ba", eval_dataloader=Evaluator(
        label="val", dataloader=sets["val"], metric_names=["f1"]))
    fewer.fit()
    assert list(fewer.state.eval_metrics["val"]) == ["f1"]
    fewer.close()
    plain = trainer(max_duration="1ba", eval_dataloader=Evaluator(label="val", dataloader=sets["val"]))
    plain.fit()
    assert list(plain.state.eval_metrics["val"]) == ["CrossEntropy", "MulticlassAccuracy"]  # ComposerClassifier's
    plain.close()


# ---- 17. a relative or an absolute latest link ------------------------------------------------------------------

def test_composer_writes_a_relative_latest_link_and_an_absolute_one_loads(tmp_path, monkeypatch):
    def job():
        return trainer(max_duration="4ba", autoresume=True, run_name="job", save_folder=str(tmp_path / "{run_name}"),
                       save_interval="1ba")

    first = job()
    first.fit(duration="2ba")
    first.close()
    link = tmp_path / "job" / "latest-rank0.pt"
    assert str(link.readlink()) == "ep0-ba2-rank0.pt"  # relative: the bare name
    link.unlink()
    link.symlink_to(tmp_path / "job" / "ep0-ba2-rank0.pt")  # absolute
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    resumed = job()
    assert int(resumed.state.timestamp.batch) == 2
    resumed.fit()
    resumed.close()
    assert str(link.readlink()) == "ep0-ba4-rank0.pt"  # the next save wrote a relative link again
    moved = tmp_path / "moved"
    shutil.copytree(tmp_path / "job", moved / "job", symlinks=True)
    again = trainer(max_duration="5ba", autoresume=True, run_name="job", save_folder=str(moved / "{run_name}"))
    assert int(again.state.timestamp.batch) == 4  # the copied folder's relative link still loads
    again.close()


# ---- 18. braces in shell commands -------------------------------------------------------------------------------

def test_the_shells_leave_run_name_and_rank_braces_unexpanded():
    import subprocess

    line = "printf '%s\\n' checkpoints/{run_name} logs/rank{rank}.out x{a,b} {1..2}"
    bash = subprocess.run(["bash", "-c", line], capture_output=True, text=True, check=True).stdout.split()
    assert bash == ["checkpoints/{run_name}", "logs/rank{rank}.out", "xa", "xb", "1", "2"]
    sh = subprocess.run(["sh", "-c", line], capture_output=True, text=True, check=True).stdout.split()
    assert sh == ["checkpoints/{run_name}", "logs/rank{rank}.out", "x{a,b}", "{1..2}"]


# ---- 19. two processes on one CPU machine, no network variables -------------------------------------------------

def test_the_jobs_ddp_script_runs_as_two_processes_with_only_loopback_and_no_network_variables(tmp_path):
    import os
    import subprocess

    import torch

    from support.harness import isolated_env

    ddp = next(block.source for block in runnable_blocks(JOBS, "python") if "dist.get_sampler" in block.source)
    script = tmp_path / "train.py"
    script.write_text(f"import torch\n\n{_jobs_function_source('build_module')}\n\n{ddp}\n"
                      "print('RESULT', dist.get_global_rank(), dist.get_world_size(), torch.distributed.get_backend(),"
                      " int(trainer.state.timestamp.sample), int(trainer.state.timestamp.epoch), flush=True)\n")
    (tmp_path / "home").mkdir()
    (tmp_path / "tmpdir").mkdir()
    env = isolated_env(tmp_path, {"HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmpdir")})
    for name in ("GLOO_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS", "RANK", "WORLD_SIZE"):
        env.pop(name, None)
    launch = ["composer", "-n", "2", "--stdout", "rank{rank}.out", "--stderr", "rank{rank}.err", "train.py"]
    if shutil.which("unshare") and subprocess.run(["unshare", "-rn", "true"], capture_output=True).returncode == 0:
        launch = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *launch]  # loopback only
    done = subprocess.run(launch, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    printed = done.stdout + "".join(path.read_text() for path in tmp_path.glob("rank*.out"))  # rank 0: the console
    results = sorted(line.split()[1:] for line in printed.splitlines() if line.startswith("RESULT"))
    assert results == [["0", "2", "gloo", "64", "1"], ["1", "2", "gloo", "64", "1"]], results
    assert sorted(path.name for path in (tmp_path / "ddp-run" / "checkpoints").iterdir()) == [
        "ep1-ba8-rank0.pt", "latest-rank0.pt"]
    assert set(torch.load(tmp_path / "ddp-run" / "final.pt")) == {"module.0.weight", "module.0.bias",
                                                                   "module.2.weight", "module.2.bias"}
    log = Path(env["OFFLINE_GUARD_LOG"])
    assert not log.exists() or log.read_text() == ""
    assert not {"GLOO_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT", "OMP_NUM_THREADS"} & set(env)


def _jobs_function_source(name: str) -> str:
    """The source of the function ``name`` as jobs.md defines it (its set-up block stands in for a task's files)."""
    import ast

    block = next(block for block in runnable_blocks(JOBS, "python") if f"def {name}(" in block.source)
    node = next(node for node in ast.parse(block.source).body if isinstance(node, ast.FunctionDef) and node.name == name)
    return ast.get_source_segment(block.source, node)


def test_importing_a_module_writes_its_pycache_beside_it_unless_bytecode_writing_is_off(tmp_path):
    """jobs.md's "not covered" line: plain Python writes __pycache__ next to an imported file it may write to."""
    (tmp_path / "model_def.py").write_text("VALUE = 1\n")
    load = f"import sys; sys.path.insert(0, {str(tmp_path)!r}); import model_def"
    environ = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-c", load], check=True, env={**environ, "PYTHONDONTWRITEBYTECODE": "1"})
    assert not (tmp_path / "__pycache__").exists()
    subprocess.run([sys.executable, "-c", load], check=True, env=environ)
    assert (tmp_path / "__pycache__").is_dir()
