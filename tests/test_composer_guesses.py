"""Issue #23, "What agents had to guess", the Composer items, proved on the installed mosaicml 0.32.1: how evaluation
is split into microbatches (12), reading a generated run name back without unpickling code (13), job names and the
repair in jobs.md's shared-root pattern (14), `ComposerClassifier`'s `num_classes`, an install without torch and a
first run kept small (18). Item 17's plain-SGD case is test_truth_pass.py's
test_ignoring_the_head_without_weights_only_keeps_the_old_optimizer_state. Composer is imported inside the tests:
the latest leg has no mosaicml."""

from __future__ import annotations

import ast
import contextlib
import os
import re
import threading
import warnings
from pathlib import Path

import pytest

from support.composer_kit import classifier, loader, trainer
from support.docs import REPO, blocks, runnable_blocks
from support.harness import run_command
from support.quoted_errors import PRODUCERS
from support.quoted_errors_composer import torchless_site

pytestmark = pytest.mark.composer

SKILL = REPO / "skills" / "composer-training"
JOBS = SKILL / "references" / "jobs.md"
CHECKPOINTING = SKILL / "references" / "checkpointing-and-time.md"


def doc_definitions(doc: Path, *names: str) -> dict:
    """Every import of ``doc``'s runnable python blocks and the functions ``names`` it defines, run in one namespace
    (what a reader copies from the page), without the blocks' other statements."""
    kept = []
    for block in runnable_blocks(doc, "python"):
        kept += [node for node in ast.parse(block.source).body if isinstance(node, (ast.Import, ast.ImportFrom))
                 or (isinstance(node, ast.FunctionDef) and node.name in names)]
    namespace: dict = {}
    exec(compile(ast.Module(body=kept, type_ignores=[]), str(doc), "exec"), namespace)  # noqa: S102
    assert set(names) <= set(namespace), f"{doc.name} defines no {set(names) - set(namespace)}"
    return namespace


# ---- 12. eval microbatches ----------------------------------------------------------------------------------------

def recording_classifier(seen: list[int]):
    """The kit's classifier, recording the number of samples of every batch its eval_forward gets."""
    from composer.models import ComposerClassifier

    class Recording(ComposerClassifier):
        def eval_forward(self, batch, outputs=None):
            seen.append(len(batch[0]))
            return super().eval_forward(batch, outputs)

    return Recording(module=classifier().module, num_classes=3)


def evaluate(eval_dataloader, **settings) -> tuple[list[int], dict[str, float]]:
    """The batch sizes eval_forward saw and the metrics of ``trainer.eval()`` (eval alone: no training step)."""
    seen: list[int] = []
    run = trainer(model=recording_classifier(seen), eval_dataloader=eval_dataloader, **settings)
    run.eval()
    (metrics,) = run.state.eval_metrics.values()
    return seen, {name: float(metric.compute()) for name, metric in metrics.items()}


def batch_sampler_loader():
    """Batches of 4 of 10 samples from a batch_sampler: the DataLoader's batch_size is None."""
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    data = loader(10).dataset
    return DataLoader(data, batch_sampler=BatchSampler(SequentialSampler(data), batch_size=4, drop_last=False))


def mean_of_piece_means(pieces: list[int]) -> float:
    """The kit's classifier's cross-entropy on loader(10): the mean over pieces of each piece's mean."""
    import torch

    inputs, targets = loader(10).dataset.tensors
    with torch.no_grad():
        losses = torch.nn.functional.cross_entropy(classifier().module(inputs), targets, reduction="none")
    return float(torch.stack([piece.mean() for piece in losses.split(pieces)]).mean())


def test_eval_forwards_each_eval_batch_whole_unless_its_evaluator_sets_a_microbatch_size():
    import inspect

    from composer import Trainer
    from composer.core import Evaluator

    assert "device_eval_microbatch_size" not in inspect.signature(Trainer).parameters  # the Evaluator's alone
    assert inspect.signature(Evaluator).parameters["device_eval_microbatch_size"].default is None
    whole, whole_metrics = evaluate(loader(10, batch_size=4))
    assert whole == [4, 4, 2]  # the eval loader's batches, as they come
    assert evaluate(loader(10, batch_size=4), device_train_microbatch_size=2)[0] == [4, 4, 2]  # not the train size
    default = Evaluator(label="val", dataloader=loader(10, batch_size=4))
    assert default.device_eval_microbatch_size == 4  # None -> the loader's batch_size
    split, split_metrics = evaluate(Evaluator(label="val", dataloader=loader(10, batch_size=4),
                                              device_eval_microbatch_size=3))
    assert split == [3, 1, 3, 1, 2]  # each batch cut into pieces of 3; the rest of a batch is a piece of its own
    # Accuracy counts samples: the same however the set is cut. Composer's CrossEntropy averages the pieces' means.
    one_batch = evaluate(loader(10, batch_size=10))[1]
    assert whole_metrics["MulticlassAccuracy"] == split_metrics["MulticlassAccuracy"] == one_batch["MulticlassAccuracy"]
    assert one_batch["CrossEntropy"] == pytest.approx(mean_of_piece_means([10]))  # the mean over samples
    assert whole_metrics["CrossEntropy"] == pytest.approx(mean_of_piece_means([4, 4, 2]))
    assert split_metrics["CrossEntropy"] == pytest.approx(mean_of_piece_means([3, 1, 3, 1, 2]))
    assert len({round(metrics["CrossEntropy"], 4) for metrics in (one_batch, whole_metrics, split_metrics)}) == 3


def test_training_runs_eval_forward_on_its_own_microbatches_for_the_train_metrics():
    from composer.core import Evaluator

    seen: list[int] = []
    run = trainer(model=recording_classifier(seen), max_duration="1ba", device_train_microbatch_size=2,
                  eval_dataloader=Evaluator(label="val", dataloader=loader(10, batch_size=4),
                                            device_eval_microbatch_size=3))
    run.fit()  # one training batch of 4 in microbatches of 2, then the eval at the end of fit
    assert seen == [2, 2] + [3, 1, 3, 1, 2]


def test_an_eval_loader_without_a_batch_size_needs_the_evaluators_microbatch_size(tmp_path):
    from composer.core import Evaluator

    assert batch_sampler_loader().batch_size is None
    message = PRODUCERS["eval-loader-without-batch-size"](tmp_path)
    assert message == "TypeError: '<' not supported between instances of 'int' and 'NoneType'"
    sized = Evaluator(label="val", dataloader=batch_sampler_loader(), device_eval_microbatch_size=4)
    assert evaluate(sized)[0] == [4, 4, 2]


def test_automatic_eval_microbatching_is_gpu_only():
    from composer.core import Evaluator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "auto" is experimental: Composer warns first
        automatic = Evaluator(label="val", dataloader=loader(8), device_eval_microbatch_size="auto")
    with pytest.raises(ValueError, match="Can only use adaptive device_eval_microbatch_size on GPU"):
        evaluate(automatic)


# ---- 13. a generated run name, read back ---------------------------------------------------------------------------

def test_a_generated_run_name_reads_back_without_unpickling_code(tmp_path, preflight):
    inspect_checkpoint = doc_definitions(CHECKPOINTING, "plain_data_types", "inspect_checkpoint")["inspect_checkpoint"]
    generated = trainer(max_duration="2ba", save_folder=str(tmp_path / "{run_name}"))
    generated.fit()
    generated.close()
    name, checkpoint = generated.state.run_name, Path(generated.saved_checkpoints[-1])
    assert checkpoint.parent == tmp_path / name
    assert inspect_checkpoint(checkpoint)["state"]["run_name"] == name  # torch.load(weights_only=True) + plain types
    code, checks = preflight("--max-duration", "4ba", "--load-path", str(checkpoint))
    assert code == 0 and f"run {name!r} at 2ba" in checks["load.checkpoint"]["detail"]
    fresh = trainer(max_duration="4ba", save_folder=str(tmp_path / "{run_name}"), load_path=str(checkpoint))
    assert fresh.state.run_name != name  # not restored: without run_name=, a new name and a new folder
    fresh.close()


def test_the_resume_sections_block_continues_a_generated_run_in_its_folder(tmp_path):
    """The block of checkpointing-and-time.md that reads the name back, run on its own with the page's set-up."""
    (block,) = [block for block in runnable_blocks(CHECKPOINTING, "python")
                if 'inspect_checkpoint(checkpoint)["state"]["run_name"]' in block.source]
    page = doc_definitions(CHECKPOINTING, "plain_data_types", "inspect_checkpoint", "make_model", "make_trainer")
    page.update(root=tmp_path, data=loader().dataset)
    exec(compile(block.source, block.where, "exec"), page)  # noqa: S102 - the documented code is the subject
    folder = page["checkpoint"].parent
    assert page["name"] == folder.name and page["name"] == page["generated"].state.run_name
    assert [path.name for path in (tmp_path / "gen").iterdir()] == [folder.name]  # one run, one folder
    assert sorted(path.name for path in folder.iterdir()) == ["ep0-ba2-rank0.pt", "ep0-ba4-rank0.pt",
                                                              "latest-rank0.pt"]


def test_the_checkpoint_allowlist_names_numpy_1_and_numpy_2_types_as_each_installs_them(tmp_path, monkeypatch):
    """mosaicml 0.32.1 allows numpy 1.21.5 to 2.2: numpy 2 is installed here; numpy 1.x is run by its logic."""
    import types

    import numpy

    from support.harness import import_script

    page = doc_definitions(CHECKPOINTING, "plain_data_types", "inspect_checkpoint")
    now = page["plain_data_types"]()
    assert numpy._core.multiarray._reconstruct in now
    assert {numpy.dtypes.UInt32DType, numpy.dtypes.Float32DType, numpy.dtypes.Int64DType} <= set(now)
    # numpy 1.x's name for the function, as numpy 2 keeps it for old pickles (numpy/core is its shim)
    numpy_core_files = Path(numpy.__file__).parent / "core"
    assert "The original `core` was renamed to `_core`" in (numpy_core_files / "__init__.py").read_text()
    shim = " ".join((numpy_core_files / "multiarray.py").read_text().split())
    assert ('from numpy.core.multiarray to # support old pickle files for item in ["_reconstruct", "scalar"]'
            in shim)
    reconstruct_1x = object()
    numpy_1x = types.SimpleNamespace(core=types.SimpleNamespace(multiarray=types.SimpleNamespace(
        _reconstruct=reconstruct_1x)), ndarray=numpy.ndarray, dtype=numpy.dtype)  # 1.21-1.24: no numpy.dtypes
    page["numpy"] = numpy_1x
    assert page["plain_data_types"]()[2:] == [reconstruct_1x, numpy.ndarray, numpy.dtype]
    numpy_1x.dtypes = types.SimpleNamespace(UInt32DType=numpy.dtypes.UInt32DType,
                                            Float32DType=numpy.dtypes.Float32DType)
    assert page["plain_data_types"]()[2:] == [reconstruct_1x, numpy.ndarray, numpy.dtype, numpy.dtypes.Float32DType,
                                              numpy.dtypes.UInt32DType]  # 1.25, 1.26
    # the script's reader: without numpy.dtypes (numpy < 1.25) it still reads a checkpoint that needs none
    checkpoint_files = import_script(SKILL / "scripts" / "_checkpoint_files.py")
    monkeypatch.delattr(numpy, "dtypes")

    def numpy_1x_getattr(name):  # numpy 2 would import numpy.dtypes again on first use
        raise AttributeError(f"module 'numpy' has no attribute {name!r}")

    monkeypatch.setattr(numpy, "__getattr__", numpy_1x_getattr)
    import torch
    from composer.core import Timestamp

    plain = tmp_path / "plain.pt"
    torch.save({"state": {"timestamp": {"Timestamp": Timestamp(batch=2).state_dict()}, "model": {}}}, plain)
    state, stamp = checkpoint_files.read_checkpoint(plain, "plain.pt")
    assert int(stamp.batch) == 2


def test_preflight_flags_a_full_resume_that_would_save_into_a_new_generated_folder(tmp_path, preflight):
    generated = trainer(max_duration="2ba", save_folder=str(tmp_path / "{run_name}"))
    generated.fit()
    generated.close()
    name, checkpoint = generated.state.run_name, generated.saved_checkpoints[-1]
    resume = ("--max-duration", "4ba", "--load-path", checkpoint, "--save-folder", str(tmp_path / "{run_name}"))
    code, checks = preflight(*resume)
    assert code == 1 and not checks["load.run_name"]["ok"]
    assert f"--run-name {name}" in checks["load.run_name"]["detail"]
    assert checks["load.run_name"]["actual"] is None and checks["load.run_name"]["expected"] == name
    code, checks = preflight(*resume, "--run-name", name)
    assert code == 0 and checks["load.run_name"]["ok"] and checks["load.run_name"]["actual"] == name
    for fine in (("--load-weights-only",), ("--run-name", "fork")):  # a new run on purpose: no problem
        code, checks = preflight(*resume, *fine)
        assert code == 0, (fine, checks)
    code, checks = preflight("--max-duration", "4ba", "--load-path", checkpoint)  # no save folder: nothing saved
    assert code == 0 and "load.run_name" not in checks


def test_preflight_json_carries_the_checkpoints_run_name_and_the_documented_line_reads_it(tmp_path, preflight):
    import sys

    generated = trainer(max_duration="2ba", save_folder=str(tmp_path / "{run_name}"))
    generated.fit()
    generated.close()
    name, checkpoint = generated.state.run_name, generated.saved_checkpoints[-1]
    code, checks = preflight("--max-duration", "4ba", "--load-path", checkpoint)
    assert code == 0
    assert checks["load.checkpoint"]["actual"] == {"run_name": name, "epoch": 0, "batch": 2, "sample": 8, "token": 0}
    (block,) = [block for block in blocks(CHECKPOINTING) if block.language == "bash" and "load.checkpoint" in
                block.source]
    line = block.source.replace("FILE", checkpoint).replace("python ", f"{sys.executable} ")
    result = run_command(["bash", "-c", line + 'printf %s "$name"'], tmp_path / "shell", cwd=SKILL)
    assert result.returncode == 0 and result.stdout == name, result.stderr[-2000:]


def dropout_run(seed, **settings):
    """The kit's trainer on a shuffled loader (32 samples, 8 batches an epoch) with dropout: both draw randomness."""
    import torch
    from composer.models import ComposerClassifier

    torch.manual_seed(0)
    layers = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Dropout(0.5), torch.nn.Linear(16, 3))
    return trainer(model=ComposerClassifier(module=layers, num_classes=3), train_dataloader=loader(32, shuffle=True),
                   max_duration="6ba", seed=seed, **settings)


def test_a_resumed_run_takes_the_checkpoints_seed_whatever_seed_it_is_given(tmp_path):
    import torch

    from support.composer_kit import weights

    straight = dropout_run(3, save_folder=str(tmp_path / "straight"), save_interval="1ba")
    straight.fit()
    straight.close()
    other_seed = dropout_run(5)
    other_seed.fit()
    assert not all(map(torch.equal, weights(other_seed), weights(straight)))  # the seed matters in this run
    for seed in (0, 5, None):
        resumed = dropout_run(seed, load_path=str(tmp_path / "straight" / "ep0-ba3-rank0.pt"))
        assert resumed.state.seed == 3, seed
        resumed.fit()
        assert all(map(torch.equal, weights(resumed), weights(straight))), seed  # bit for bit
        resumed.close()


# ---- 14. job names and the repair in the shared-root pattern -------------------------------------------------------

def test_a_run_name_goes_into_the_path_so_a_hostile_one_escapes_the_root_or_breaks_the_relaunch(tmp_path):
    root = tmp_path / "root"

    def job(name, **extra):
        return trainer(max_duration="2ba", run_name=name, save_folder=str(root / "{run_name}"), autoresume=True,
                       **extra)

    escaping = job("../escaped")
    escaping.fit()
    escaping.close()
    assert (tmp_path / "escaped" / "latest-rank0.pt").is_symlink()  # beside the root, not in it
    braced = job("a{b}")
    braced.fit(duration="1ba")
    braced.close()
    with pytest.raises(KeyError, match="'b'"):  # the relaunch formats the found path again
        job("a{b}")


HOSTILE_NAMES = ["../x", "..", ".", "a/b", "/tmp/x", "a{b}", "{rank}", "x{", "a}b", "", "-rf", "a\nb", "a" * 101,
                 "Job-A"]  # one folder with job-a where file names ignore case


def test_the_shared_root_pattern_refuses_a_job_name_that_is_not_one_plain_folder_name():
    checked_job_name = doc_definitions(JOBS, "checked_job_name")["checked_job_name"]
    for good in ("job-a", "run_2.v1", "a", "final-x.pt", "a" * 100):
        assert checked_job_name(good) == good
    for hostile in HOSTILE_NAMES:
        with pytest.raises(ValueError) as refused:
            checked_job_name(hostile)
        assert str(refused.value).startswith(f"job name {hostile!r}: ") and "\n" not in str(refused.value), hostile
    pattern = next(block.source for block in runnable_blocks(JOBS, "python") if "def checked_job_name(" in block.source)
    assert 'job = Path("shared-root"), checked_job_name(' in pattern  # the pattern calls it on the name it uses


def finishes(function, *args, seconds: float = 20) -> tuple[bool, BaseException | None]:
    """Whether ``function(*args)`` returned within ``seconds``, and what it raised."""
    raised: list[BaseException] = []

    def call():
        try:
            function(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            raised.append(exc)

    worker = threading.Thread(target=call, daemon=True)
    worker.start()
    worker.join(seconds)
    return not worker.is_alive(), (raised or [None])[0]


def test_the_repair_reads_only_regular_checkpoint_files(tmp_path):
    repair = doc_definitions(JOBS, "repair_before_relaunch")["repair_before_relaunch"]
    saved = trainer(max_duration="2ba", save_folder=str(tmp_path / "other"), save_interval="1ba")
    saved.fit()
    saved.close()
    folder = tmp_path / "job"
    folder.mkdir()
    for name in ("ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt"):
        (folder / name).write_bytes((tmp_path / "other" / name).read_bytes())
    (folder / "ep0-ba3-rank0.pt").write_bytes((folder / "ep0-ba2-rank0.pt").read_bytes()[:10_000])  # torn
    odd = {"ep0-ba9-rank0.pt": "a folder", "ep0-ba8-rank0.pt": "a pipe", "ep0-ba7-rank0.pt": "a link",
           "epX-ba1-rank0.pt": "a zip under another name"}
    (folder / "ep0-ba9-rank0.pt").mkdir()
    os.mkfifo(folder / "ep0-ba8-rank0.pt")  # opening it to read blocks until someone writes
    (folder / "ep0-ba7-rank0.pt").symlink_to(tmp_path / "other" / "ep0-ba2-rank0.pt")  # a file outside the folder
    (folder / "epX-ba1-rank0.pt").write_bytes((folder / "ep0-ba1-rank0.pt").read_bytes())
    done, error = finishes(repair, folder)
    if not done:  # release the reader stuck on the pipe, then fail
        with contextlib.suppress(OSError):
            os.close(os.open(folder / "ep0-ba8-rank0.pt", os.O_WRONLY | os.O_NONBLOCK))
    assert done, "the repair opened the pipe and blocked"
    assert error is None, repr(error)
    assert sorted(path.name for path in folder.iterdir()) == sorted(
        ["ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt", "ep0-ba3-rank0.pt.partial", "latest-rank0.pt", *odd])
    assert (folder / "latest-rank0.pt").readlink() == Path("ep0-ba2-rank0.pt")  # not the link to another folder


def test_the_repair_never_replaces_a_torn_file_an_earlier_kill_set_aside(tmp_path):
    repair = doc_definitions(JOBS, "repair_before_relaunch")["repair_before_relaunch"]
    folder = tmp_path / "job"
    folder.mkdir()
    earlier = {"ep0-ba3-rank0.pt.partial": b"PK\x03\x04 first kill", "ep0-ba3-rank0.pt.partial.1": b"PK\x03\x04 second"}
    for name, torn in earlier.items():
        (folder / name).write_bytes(torn)
    (folder / "ep0-ba3-rank0.pt").write_bytes(b"PK\x03\x04 third kill")  # torn again at the same batch
    repair(folder)
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == {
        **earlier, "ep0-ba3-rank0.pt.partial.2": b"PK\x03\x04 third kill"}


def pattern_source(heading: str) -> str:
    """The python block under jobs.md's section ``heading``."""
    section = JOBS.read_text(encoding="utf-8").split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    (source,) = [block.source for block in runnable_blocks(JOBS, "python") if block.source in section]
    return source


def free_names(source: str) -> set[str]:
    """Names ``source`` reads but neither defines, imports, assigns nor gets from builtins."""
    import builtins

    tree = ast.parse(source)
    bound = {alias.asname or alias.name.split(".")[0] for node in ast.walk(tree)
             if isinstance(node, (ast.Import, ast.ImportFrom)) for alias in node.names}
    bound |= {node.name for node in ast.walk(tree) if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
    bound |= {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
    bound |= {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)}
    read = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)}
    return read - bound - set(dir(builtins))


def test_each_jobs_pattern_needs_only_the_names_the_page_says_it_takes_from_elsewhere():
    intro = JOBS.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert "`build_module` and `TinyLM`" in intro and "`repair_before_relaunch`" in intro
    headings = re.findall(r"^## (.+)$", JOBS.read_text(encoding="utf-8"), flags=re.MULTILINE)
    assert len(headings) == 6
    for heading in headings:
        allowed = {"build_module", "TinyLM"} | ({"repair_before_relaunch"} if "sharing one checkpoint root" in heading
                                                else set())
        assert free_names(pattern_source(heading)) <= allowed, heading


def run_shared_root_job(job: str) -> None:
    """jobs.md's shared-root pattern, as written, for the job ``job`` (in the current folder's shared-root)."""
    source = pattern_source("Several jobs sharing one checkpoint root")
    assert source.count('checked_job_name("job-a")') == 1
    namespace = doc_definitions(JOBS, "build_module", "repair_before_relaunch")
    named = source.replace('checked_job_name("job-a")', f"checked_job_name({job!r})")
    exec(compile(named, str(JOBS), "exec"), namespace)  # noqa: S102 - the documented code is the subject
    namespace["trainer"].close()


@pytest.mark.parametrize("order", [["x", "final-x.pt"], ["final-x.pt", "x"]])
def test_shared_root_jobs_whose_names_look_like_each_others_files_do_not_collide(order, tmp_path, monkeypatch):
    import torch

    monkeypatch.chdir(tmp_path)
    for job in order:
        run_shared_root_job(job)
    root = tmp_path / "shared-root"
    assert sorted(path.name for path in root.iterdir()) == sorted(order)  # one folder per job, nothing else
    for job in order:
        assert (root / job / "latest-rank0.pt").resolve().name == "ep0-ba6-rank0.pt"
        final = torch.load(root / job / "final.pt")
        assert set(final) == {"module.0.weight", "module.0.bias", "module.2.weight", "module.2.bias"}


# ---- 18. ComposerClassifier's num_classes, an install without torch, a small first run -----------------------------

def test_a_modules_own_num_classes_wins_over_the_argument_with_a_warning():
    import torch
    from composer.models import ComposerClassifier

    class Net(torch.nn.Linear):
        num_classes = 3

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model = ComposerClassifier(module=Net(8, 3), num_classes=5)
    assert [str(warning.message) for warning in caught] == [
        "Specified num_classes=5 does not match model num_classes=3.Using model num_classes."]
    assert model.num_classes == 3
    assert {metric.num_classes for name, metric in model.get_metrics(is_train=False).items()
            if name == "MulticlassAccuracy"} == {3}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert ComposerClassifier(module=Net(8, 3)).num_classes == 3  # no argument: no warning
        assert ComposerClassifier(module=torch.nn.Linear(8, 5), num_classes=5).num_classes == 5  # no attribute


def test_composer_without_torch_fails_at_import_and_env_check_names_the_fix(tmp_path):
    import sys

    message = PRODUCERS["composer-without-torch"](tmp_path / "import")
    assert message == "ModuleNotFoundError: No module named 'torch'"
    site = torchless_site(tmp_path / "doctor")
    assert not (site / "torch").exists() and (site / "composer").is_dir() and (site / "torchvision").is_dir()
    scripts = SKILL / "scripts"
    bootstrap = (f"import runpy, sys; sys.path[:0] = [{str(scripts)!r}]; sys.path.append({str(site)!r}); "
                 f"sys.argv = ['env_check.py', '--json', '--device', 'cpu']; "
                 f"runpy.run_path({str(scripts / 'env_check.py')!r}, run_name='__main__')")
    result = run_command([sys.executable, "-I", "-S", "-c", bootstrap], tmp_path / "run")
    assert result.returncode == 3, result.stderr[-2000:]
    assert result.json["error"] == "missing torch; fix: pip install torch==2.7.0"


def env_check_without(tmp_path: Path, packages: tuple[str, ...], keep_metadata: bool = False):
    """env_check.py --json run with only the installed files, less the import packages ``packages`` and, unless
    ``keep_metadata``, their distributions' metadata (what pip uninstall removes)."""
    import importlib.util
    import sys

    installed = Path(importlib.util.find_spec("composer").origin).parent.parent
    site = tmp_path / "site-packages"
    site.mkdir(parents=True)
    for entry in installed.iterdir():
        distribution = entry.name.split("-")[0] if entry.name.endswith(".dist-info") else None
        if entry.name not in packages and not (distribution in packages and not keep_metadata):
            (site / entry.name).symlink_to(entry)
    scripts = SKILL / "scripts"
    bootstrap = (f"import runpy, sys; sys.path[:0] = [{str(scripts)!r}]; sys.path.append({str(site)!r}); "
                 f"sys.argv = ['env_check.py', '--json', '--device', 'cpu']; "
                 f"runpy.run_path({str(scripts / 'env_check.py')!r}, run_name='__main__')")
    return run_command([sys.executable, "-I", "-S", "-c", bootstrap], tmp_path / "run")


def test_env_check_names_torchvision_too_and_a_torch_that_is_installed_but_does_not_import(tmp_path):
    both = env_check_without(tmp_path / "no-deps", ("torch", "torchvision"))
    assert both.returncode == 3, both.stderr[-2000:]
    assert both.json["error"] == "missing torch, torchvision; fix: pip install torch==2.7.0 torchvision==0.22.0"
    blocked = env_check_without(tmp_path / "blocked", ("torch",), keep_metadata=True)
    assert blocked.returncode == 1, blocked.stderr[-2000:]
    assert blocked.json["error"] == ("torch does not import (ModuleNotFoundError: No module named 'torch'); fix: "
                                     "pip install --force-reinstall torch==2.7.0")
    section = (SKILL / "references" / "troubleshooting.md").read_text(encoding="utf-8").split(
        "```error composer-without-torch", 1)[1].split("\n```error ", 1)[0]
    prose = " ".join(section.split())
    for quoted in (both.json["error"], blocked.json["error"]):
        assert f"`{quoted}`" in prose, quoted


def test_fast_start_keeps_the_first_run_small_before_algorithms_launchers_or_loggers():
    text = (SKILL / "SKILL.md").read_text(encoding="utf-8")
    fast_start = text.split("## Fast start", 1)[1].split("\n## ", 1)[0]
    assert re.search(r"no algorithms,\s+launchers or loggers", fast_start), fast_start
    minimal = next(block for block in blocks(SKILL / "SKILL.md") if "trainer.fit()" in block.source)
    calls = [node for node in ast.walk(ast.parse(minimal.source))
             if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Trainer"]
    keywords = {keyword.arg for call in calls for keyword in call.keywords}
    assert calls and not keywords & {"algorithms", "loggers", "callbacks", "profiler", "parallelism_config"}
