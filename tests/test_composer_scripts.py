"""composer-training scripts, run as users run them: each script once per device (shared by every test here, even
across xdist workers); per script one test asserts its exact check list, and each claim read from its JSON summary is
a test of its own, with expected values from the command line. Bad inputs get the contracted exit code and one
line."""

from __future__ import annotations

import hashlib

import pytest

from support.checks import assert_equal_check, same_value
from support.composer_scripts import CHECKPOINT, PREFLIGHT, TRAIN, got, passed
from support.harness import CUDA, DEVICES, assert_one_line_error, run_python
from support.shared_runs import COMPOSER_TRAIN, canonical_run, run_once

pytestmark = pytest.mark.composer

BATCHES, EVAL_BATCHES, BATCH_SIZE, MICROBATCH = COMPOSER_TRAIN.values()  # the canonical run's
# The checks of each script's canonical run, in order.
TRAIN_CHECKS = [f"{part}.{name}" for part, names in {
    "classifier": ["timestamp.batch", "timestamp.sample", "timestamp.batch_in_epoch", "timestamp.epoch",
                   "timestamp.token", "precision", "device", "loss_finite", "train_metrics"],
    "eval": ["labels", "metric_names", "batches", "accuracy"],
    "predict": ["batches", "shapes", "device", "dtype"],
    "tokens": ["stop_batch", "count", "samples", "without_counter.count", "without_counter.would_train_on"],
}.items() for name in names]
CRASHED = ["killed", "files", "latest"]
RESUMED = ["resumed_from", "end", "bitwise_equal"]
CHECKPOINT_CHECKS = [f"{mode}.{name}" for mode, names in {
    "save": ["files", "latest_symlink", "saved_checkpoints", "content.keys", "content.batch", "rerun_raises",
             "overwrite.latest_symlink", "overwrite.leaves_stale_files"],
    "resume": ["start", "max_duration_is_total", "end", "epoch", "bitwise_equal"],
    "autoresume": ["first_run_interrupted", "start", "end", "bitwise_equal", "rerun_after_finish_raises",
                   "by_folder_not_run_name", "wins_over_load_path"],
    "finetune": ["weights_only_alone_fails", "strict_with_ignored_keys_fails", "backbone_loaded", "head_shape",
                 "starts_at", "end"],
    # the default drills: killed after each of the 8 steps, and while writing checkpoint 3
    **{f"crash.ba{batch}": CRASHED + RESUMED for batch in range(1, 9)},
    "crash.save3": CRASHED + ["torn_file", "relaunch_raises", "set_aside"] + RESUMED,
}.items() for name in names]
PREFLIGHT_CHECKS = ["device", "precision", "device_train_microbatch_size", "autoresume", "max_duration", "save"]


# ---- train_smoke.py ----

@pytest.fixture(scope="module", params=DEVICES)
def train(request, tmp_path_factory):
    device = request.param
    result = canonical_run(tmp_path_factory, "composer-training/train_smoke.py", device)
    passed(result)
    return device, result


def test_train_smoke_runs_exactly_its_checks_on_the_device(train):
    device, result = train
    assert [check["name"] for check in result.json["checks"]] == TRAIN_CHECKS
    assert result.json["device"] == device


def test_classifier_timestamp_counts_batches_and_samples(train):
    _, result = train
    got(result, "classifier.timestamp.batch", BATCHES)
    got(result, "classifier.timestamp.sample", BATCHES * BATCH_SIZE)  # microbatching does not change counting
    got(result, "classifier.timestamp.batch_in_epoch", BATCHES)
    got(result, "classifier.timestamp.epoch", 0)
    got(result, "classifier.timestamp.token", 0)  # tuple batches: Composer counts no tokens


def test_precision_defaults_per_device(train):
    device, result = train
    got(result, "classifier.precision", "amp_bf16" if device == "gpu" else "fp32")
    got(result, "classifier.device", "cuda" if device == "gpu" else "cpu")
    assert result.check("classifier.loss_finite")["ok"]


def test_eval_metrics_sit_under_the_evaluator_label(train):
    _, result = train
    got(result, "eval.labels", ["val"])
    got(result, "eval.metric_names", ["CrossEntropy", "MulticlassAccuracy"])
    got(result, "eval.batches", EVAL_BATCHES)  # evaluation ran at the end of fit, inside epoch 0
    got(result, "classifier.train_metrics", ["MulticlassAccuracy"])


def test_predict_returns_one_output_per_batch(train):
    device, result = train
    got(result, "predict.batches", EVAL_BATCHES + 1)
    got(result, "predict.shapes", [[BATCH_SIZE, 3]] * EVAL_BATCHES + [[1, 3]])
    got(result, "predict.device", ["cpu"])
    got(result, "predict.dtype", "torch.bfloat16" if device == "gpu" else "torch.float32")


def test_tok_duration_stops_where_the_counter_says(train):
    _, result = train
    count = result.check("tokens.count")
    tokens = count["actual"]
    assert_equal_check(count, tokens)
    assert isinstance(tokens, int) and BATCHES * BATCH_SIZE <= tokens <= BATCHES * BATCH_SIZE * 6  # 1..6 a row
    got(result, "tokens.stop_batch", BATCHES)
    got(result, "tokens.samples", BATCHES * BATCH_SIZE)


def test_tok_duration_without_counter_would_never_end(train):
    _, result = train
    got(result, "tokens.without_counter.count", 0)
    guard = result.check("tokens.without_counter.would_train_on")
    assert guard["ok"] and same_value(guard["actual"], {"batches": BATCHES + 1, "tokens": 0}), guard


def test_train_smoke_rejects_bad_counts_before_importing(tmp_path):
    result = run_python([str(TRAIN), "--batches", "-1"], tmp_path)
    assert_one_line_error(result, 2, "--batches: '-1' must be between 1 and 10000")
    assert result.stray_files == [], result.stray_files


@pytest.mark.skipif(CUDA, reason="CUDA is present: AMP is allowed")
def test_train_smoke_refuses_amp_on_cpu(tmp_path):
    result = run_python([str(TRAIN), "--device", "cpu", "--precision", "amp_bf16"], tmp_path)
    assert_one_line_error(result, 2, "Precision.AMP_BF16 is not supported for CPU training.")
    assert result.stray_files == [], result.stray_files


def test_train_smoke_refuses_amp_when_auto_finds_no_gpu(tmp_path):
    """--device auto (the default) resolves to cpu only in the body: the refusal is made there, before Composer
    fails deep in its trainer. CUDA is hidden, so the case runs on a GPU machine too."""
    result = run_python([str(TRAIN), "--precision", "amp_bf16"], tmp_path, env={"CUDA_VISIBLE_DEVICES": ""})
    assert_one_line_error(result, 2, "--precision amp_bf16 needs a GPU and CUDA is not available")
    assert result.stray_files == [], result.stray_files


# ---- checkpoint_smoke.py (the shared run: conftest's ``checkpoints``) ----

def test_checkpoint_smoke_runs_exactly_its_checks(checkpoints):
    _, result, _ = checkpoints
    assert [check["name"] for check in result.json["checks"]] == CHECKPOINT_CHECKS


def test_save_writes_every_checkpoint_and_the_latest_symlink(checkpoints):
    _, result, root = checkpoints
    names = ["ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt", "ep0-ba3-rank0.pt"]
    got(result, "save.files", [*names, "latest-rank0.pt"])
    got(result, "save.latest_symlink", "ep0-ba3-rank0.pt")
    got(result, "save.saved_checkpoints", [str(root / "save" / name) for name in names])
    assert (root / "save" / "latest-rank0.pt").is_symlink()
    got(result, "save.content.keys", ["rng", "state"])
    got(result, "save.content.batch", 3)


def test_rerun_into_a_used_folder_raises_unless_save_overwrite(checkpoints):
    _, result, root = checkpoints
    assert "may conflict with a future checkpoint of the current run" in result.check("save.rerun_raises")["actual"]
    got(result, "save.overwrite.latest_symlink", "ep0-ba1-rank0.pt")
    assert result.check("save.overwrite.leaves_stale_files")["ok"]
    assert (root / "rerun" / "ep0-ba3-rank0.pt").exists()


def test_resume_continues_to_a_total_max_duration(checkpoints):
    _, result, _ = checkpoints
    assert same_value(result.check("resume.start")["actual"], 3)
    assert "The max_duration (3ba) is less than or equal to the elapsed training duration (3ba)" in \
        result.check("resume.max_duration_is_total")["actual"]
    got(result, "resume.end", 6)
    got(result, "resume.epoch", 1)  # 4 batches per epoch: the resume crossed an epoch boundary
    assert result.check("resume.bitwise_equal")["ok"]


def test_autoresume_continues_by_folder_and_wins_over_load_path(checkpoints):
    _, result, root = checkpoints
    assert result.check("autoresume.first_run_interrupted")["ok"]
    got(result, "autoresume.start", 3)
    got(result, "autoresume.end", 6)
    assert result.check("autoresume.bitwise_equal")["ok"]
    assert "The max_duration (6ba) is less than" in result.check("autoresume.rerun_after_finish_raises")["actual"]
    assert_equal_check(result.check("autoresume.by_folder_not_run_name"), 6)  # resumed that run at 6ba
    assert_equal_check(result.check("autoresume.wins_over_load_path"), 6)  # loaded latest at 6ba
    assert (root / "autoresume" / "smoke-autoresume" / "latest-rank0.pt").readlink().name == "ep1-ba6-rank0.pt"


def test_changed_head_needs_all_three_load_options(checkpoints):
    _, result, _ = checkpoints
    assert "size mismatch for module.3.weight" in result.check("finetune.weights_only_alone_fails")["actual"]
    assert "Missing key(s) in state_dict" in result.check("finetune.strict_with_ignored_keys_fails")["actual"]
    assert result.check("finetune.backbone_loaded")["ok"]
    got(result, "finetune.head_shape", [5, 16])
    got(result, "finetune.starts_at", 0)
    got(result, "finetune.end", 3)


@pytest.fixture(scope="module")
def resumed_from_file(checkpoints, tmp_path_factory):
    """A second process resumes a checkpoint the first one saved: --load-path must only read the file."""
    device, _, root = checkpoints
    given = root / "save" / "ep0-ba2-rank0.pt"
    before = (hashlib.sha256(given.read_bytes()).hexdigest(), given.stat().st_mtime_ns, sorted(given.parent.iterdir()))
    result = run_once(tmp_path_factory, f"composer-resume-file-{device}", [
        str(CHECKPOINT), "--device", device, "--mode", "resume", "--load-path", str(given), "--json"])
    after = (hashlib.sha256(given.read_bytes()).hexdigest(), given.stat().st_mtime_ns, sorted(given.parent.iterdir()))
    return result, before, after


def test_resume_from_a_given_checkpoint_in_a_new_process(resumed_from_file):
    result, before, after = resumed_from_file
    passed(result)
    assert same_value(result.check("resume.start")["actual"], 2)
    got(result, "resume.end", 2 + 3)
    assert result.check("load_path.unchanged")["ok"]
    assert before == after, "the given checkpoint or its folder changed"
    assert result.stray_files == [], result.stray_files


def test_checkpoint_smoke_missing_load_path_is_a_usage_error(tmp_path):
    result = run_python([str(CHECKPOINT), "--mode", "resume", "--load-path", str(tmp_path / "gone.pt")], tmp_path)
    assert_one_line_error(result, 2, "gone.pt' is not a file")
    assert result.stray_files == [], result.stray_files
    result = run_python([str(CHECKPOINT), "--mode", "save", "--load-path", str(CHECKPOINT)], tmp_path)
    assert_one_line_error(result, 2, "--load-path works with --mode resume or --mode finetune")
    assert result.stray_files == [], result.stray_files


# ---- preflight.py (its decisions are asserted in-process in test_composer_claims.py) ----

@pytest.mark.parametrize("device", DEVICES)
def test_preflight_runs_exactly_its_checks(tmp_path_factory, device):
    result = canonical_run(tmp_path_factory, "composer-training/preflight.py", device)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [check["name"] for check in result.json["checks"]] == PREFLIGHT_CHECKS


def test_preflight_reports_every_problem_in_one_line(tmp_path, checkpoints, script_worker):
    device, _, root = checkpoints
    if device != "cpu":
        pytest.skip("settings checked for --device cpu: runs once, with the cpu checkpoint")
    # in the skill's worker process, with Composer imported once (the canonical run covers a real process)
    result = script_worker(PREFLIGHT).run(
        PREFLIGHT, "--device", "cpu", "--max-duration", "2iter", "--precision", "amp_bf16",
        "--device-train-microbatch-size", "auto", "--autoresume", "--load-path", str(root / "save" / "ep0-ba3-rank0.pt"),
        "--changed-head", "--load-weights-only", "--save-folder", str(tmp_path / "ck"), "--save-interval", "abc",
        "--json", cwd=tmp_path)
    assert_one_line_error(result, 1, "6 problems: ")
    assert not (tmp_path / "ck").exists(), "preflight writes nothing, not even the save folder"
    failed = {check["name"]: check["detail"] for check in result.json["checks"] if not check["ok"]}
    assert failed == {
        "precision": "ValueError: Precision.AMP_BF16 is not supported for CPU training.",
        "device_train_microbatch_size": "ValueError: Can only use adaptive device_train_microbatch_size on GPU. "
                                        "Please set device_train_microbatch_size >= 1.",
        "autoresume": "ValueError: When autoresume=True, the `run_name` must be specified.",
        "changed_head": failed.get("changed_head", ""),
        "max_duration": failed.get("max_duration", ""),
        "save_interval": "ValueError: Invalid time string: abc",
    }
    assert "missing: load_strict_model_weights=False, load_ignore_keys" in failed["changed_head"]
    assert failed["max_duration"].startswith("2iter: Composer accepts iterations") and "never ends" in \
        failed["max_duration"]
    assert result.network_attempts == []


def test_preflight_missing_load_path_is_a_usage_error(tmp_path):
    result = run_python([str(PREFLIGHT), "--max-duration", "1ep", "--load-path", str(tmp_path / "gone.pt")], tmp_path)
    assert_one_line_error(result, 2, "gone.pt' is not a file")
    assert result.stray_files == [], result.stray_files
