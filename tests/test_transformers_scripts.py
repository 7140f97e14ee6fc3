"""The transformers-training smoke scripts. Each runs once per device (the shared canonical run, also across xdist
workers); per script one test asserts its exact check list and that it passed, and each claim read from its JSON is a
test of its own. Bad inputs get the contracted exit code and one line. tests/test_contract.py covers --help and the
contract flags; tests/test_confinement.py, that these runs write nothing outside their output dir and stay offline."""

from __future__ import annotations

import importlib.metadata
import importlib.util

import pytest

from support.checks import assert_equal_check
from support.harness import DEVICES, assert_one_line_error, import_script
from support.shared_runs import TRAINING_ARGS_SEED_EXAMPLE, canonical_run
from support.transformers_scripts import ARGS, KILL_AT, KILL_WHILE_SAVING, SCRIPTS, TRAIN, checkpoint_smoke_all

SEED_EXAMPLE = TRAINING_ARGS_SEED_EXAMPLE  # the seed document's example command
TRAIN_CHECKS = [f"{task}.{name}" for task, names in {
    "text-classification": ["metric.local_module", "train.global_step", "train.loss_finite", "eval.accuracy",
                            "predict.logits_shape"],
    "causal-lm": ["train.global_step", "train.loss_finite", "eval.exp_loss", "predict.logits_last_dim"],
    "seq2seq": ["train.global_step", "train.loss_finite", "eval.exact_match", "predict.generated"],
}.items() for name in names] + ["offline.nothing_downloaded"]
CHECKPOINT_CHECKS = ["straight.checkpoints", "checkpoint.contents", "save_model.contents",
                     "resume.by_path.bitwise_equal", "resume.latest.steps_run", "resume.latest.bitwise_equal",
                     "resume.larger_max_steps.first_learning_rate", "best.checkpoint", "best.loaded_at_end",
                     "best.only_best_kept_with_save_total_limit_1"]
CRASH_CHECKS = [
    f"crash.kill_at_{step}.{name}" for step in KILL_AT for name in ("killed", "resumed", "bitwise_equal")] + [
    f"crash.killed_while_saving_{step}.{name}" for step in KILL_WHILE_SAVING
    for name in ("killed", "left_on_disk", "resume_true_raises", "resumed", "bitwise_equal")]


def assert_all_checks_pass(result, expected_names: list[str]) -> dict:
    """Exit 0 (by the contract: every check passed) with exactly these checks, in order."""
    assert result.returncode == 0, result.stderr[-3000:]
    assert [check["name"] for check in result.json["checks"]] == expected_names
    return result.json


def train_run(tmp_path_factory, device: str):
    return canonical_run(tmp_path_factory, "transformers-training/train_smoke.py", device)


@pytest.mark.parametrize("device", DEVICES)
def test_train_smoke(tmp_path_factory, device):
    summary = assert_all_checks_pass(train_run(tmp_path_factory, device), TRAIN_CHECKS)
    assert summary["device"] == device
    for name in ("transformers", "torch", "datasets", "evaluate"):
        assert summary["versions"][name] == importlib.metadata.version(name)


@pytest.mark.parametrize("device", DEVICES)
def test_train_smoke_loads_the_metric_from_its_local_module(tmp_path_factory, device):
    result = train_run(tmp_path_factory, device)
    # The metric went through the real evaluate API, loaded from the local module file.
    assert_equal_check(result.check("text-classification.metric.local_module"), "accuracy_metric")
    accuracy = result.check("text-classification.eval.accuracy")["actual"]  # eval_accuracy, reported
    assert isinstance(accuracy, float) and 0.0 <= accuracy <= 1.0, accuracy


@pytest.mark.parametrize("device", DEVICES)
def test_train_smoke_trains_the_steps_asked(tmp_path_factory, device):
    result = train_run(tmp_path_factory, device)
    assert_equal_check(result.check("causal-lm.train.global_step"), 4)


@pytest.mark.parametrize("device", DEVICES)
def test_seq2seq_predictions_are_padded_to_generation_config_max_length(tmp_path_factory, device):
    result = train_run(tmp_path_factory, device)
    # Seq2SeqTrainer pads generated ids to generation_config.max_length (20), not to generation_max_length (12).
    generated = result.check("seq2seq.predict.generated")["detail"]
    assert generated["generation_max_length"] == 12
    assert generated["shape"][1] == generated["generation_config.max_length"] == 20, generated


@pytest.mark.parametrize("device", DEVICES)
def test_checkpoint_smoke(tmp_path_factory, device):
    assert_all_checks_pass(checkpoint_smoke_all(tmp_path_factory, device), CHECKPOINT_CHECKS + CRASH_CHECKS)


@pytest.mark.parametrize("device", DEVICES)
def test_a_checkpoint_holds_weights_training_state_and_tokenizer(tmp_path_factory, device):
    result = checkpoint_smoke_all(tmp_path_factory, device)
    contents = result.check("checkpoint.contents")["actual"]
    for name in ("config.json", "generation_config.json", "model.safetensors", "optimizer.pt", "scheduler.pt",
                 "rng_state.pth", "trainer_state.json", "training_args.bin", "tokenizer.json"):
        assert name in contents, contents


@pytest.mark.parametrize("device", DEVICES)
def test_resume_by_path_and_by_true_ends_bitwise_equal(tmp_path_factory, device):
    result = checkpoint_smoke_all(tmp_path_factory, device)
    for name in ("resume.by_path.bitwise_equal", "resume.latest.bitwise_equal"):
        assert_equal_check(result.check(name), [])  # no tensor differs from the straight run


@pytest.mark.parametrize("device", DEVICES)
def test_resuming_with_a_larger_max_steps_starts_at_learning_rate_0(tmp_path_factory, device):
    result = checkpoint_smoke_all(tmp_path_factory, device)
    assert_equal_check(result.check("resume.larger_max_steps.first_learning_rate"), 0.0)


@pytest.mark.parametrize("device", DEVICES)
def test_save_total_limit_1_keeps_only_the_best_checkpoint(tmp_path_factory, device):
    result = checkpoint_smoke_all(tmp_path_factory, device)
    assert_equal_check(result.check("best.only_best_kept_with_save_total_limit_1"), ["checkpoint-4"])


@pytest.mark.parametrize("device", DEVICES)
def test_training_args_smoke(tmp_path_factory, device):
    result = canonical_run(tmp_path_factory, "transformers-training/training_args_smoke.py", device)
    assert_all_checks_pass(result, ["training_arguments", "report_to.installed", "trainer_init"])


@pytest.mark.parametrize("device", DEVICES)
def test_training_args_smoke_seed_example_decides_as_trainer_would(tmp_path_factory, device):
    result = canonical_run(tmp_path_factory, "transformers-training/training_args_smoke.py", device)
    decisions = result.check("training_arguments")["detail"]
    assert decisions["eval_strategy"] == "steps" and decisions["eval_steps"] == 50
    assert decisions["save_strategy"] == "steps" and decisions["save_steps"] == 50
    assert decisions["load_best_model_at_end"] is True
    assert decisions["metric_for_best_model"] == "eval_loss" and decisions["greater_is_better"] is False
    assert decisions["report_to"] == [] and decisions["effective_train_batch_size"] == 2
    assert decisions["precision"] == "fp32"
    # A save at every evaluation: the best one is always on disk, so no notice (save every 100 would warn)
    assert decisions["notices"] == []


@pytest.mark.parametrize("device", DEVICES)
def test_training_args_smoke_writes_nothing_not_even_its_output_dir(tmp_path_factory, device):
    # The canonical run's working directory is fresh and watched: not even --output_dir may appear there.
    result = canonical_run(tmp_path_factory, "transformers-training/training_args_smoke.py", device)
    assert result.stray_files == [], result.stray_files


@pytest.mark.parametrize(("flags", "message"), [
    (["--save_strategy", "best"], "`args.metric_for_best_model` must be provided when using 'best' save_strategy"),
    (["--eval_strategy", "epoch", "--no-eval-dataset"], "but you didn't pass an `eval_dataset` to `Trainer`"),
], ids=["best-without-metric", "eval-without-dataset"])
def test_training_args_smoke_reports_what_trainer_init_would_raise(training_args, tmp_path, flags, message):
    result = training_args("--output_dir", "out", *flags, "--device", "cpu", cwd=tmp_path)
    assert_one_line_error(result, 1, message)
    assert not (tmp_path / "out").exists()


def test_training_args_smoke_missing_integration_gives_pip_line(training_args, tmp_path):
    result = training_args("--report_to", "wandb", "--device", "cpu", cwd=tmp_path)
    assert_one_line_error(result, 3, "report_to 'wandb' is not installed; fix: pip install wandb")


@pytest.mark.parametrize(("flag", "replacement"), [("--evaluation_strategy", "use --eval_strategy"),
                                                   ("--no-cuda", "use --use_cpu"),
                                                   ("--warmup_ratio=0.1", "--warmup_steps with a float below 1")])
def test_training_args_smoke_names_the_replacement_of_a_removed_flag(run_script, flag, replacement):
    result = run_script(ARGS, flag, "steps")
    assert_one_line_error(result, 2, replacement)
    assert result.stray_files == [], result.stray_files


def import_training_args_smoke():
    return import_script(SCRIPTS / "training_args_smoke.py")


def test_training_args_smoke_removed_flags_are_really_removed():
    """Every flag the smoke reports as removed is rejected by the installed TrainingArguments."""
    training_args_smoke = import_training_args_smoke()
    from transformers import TrainingArguments

    for name in training_args_smoke.REMOVED_FLAGS:
        with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
            TrainingArguments(output_dir="unused", **{name: None})


@pytest.mark.parametrize(("args", "fragment"), [(["--steps", "0"], "'0' must be between 1 and 10000"),
                                                (["--task", "vision"], "invalid choice: 'vision'")])
def test_train_smoke_bad_argument(run_script, args, fragment):
    result = run_script(TRAIN, *args)
    assert_one_line_error(result, 2, fragment)
    assert result.stray_files == [], result.stray_files


@pytest.mark.skipif(importlib.util.find_spec("deepspeed") is not None, reason="deepspeed is installed here")
def test_training_args_smoke_turns_a_missing_deepspeed_into_exit_3_with_its_pip_line():
    """The real exception TrainingArguments raises for --deepspeed without deepspeed, through the smoke's handler."""
    training_args_smoke = import_training_args_smoke()
    from transformers import TrainingArguments

    from transformers.integrations.deepspeed import unset_hf_deepspeed_config

    try:
        with pytest.raises(importlib.metadata.PackageNotFoundError) as raised:
            TrainingArguments(output_dir="unused", deepspeed={"train_batch_size": 8})
    finally:  # the half-built config stays registered while the traceback lives; later Trainers here would see it
        unset_hf_deepspeed_config()
    error = training_args_smoke.missing_package(raised.value)
    assert error.exit_code == 3
    assert str(error) == ("missing dependency for these flags: deepspeed>=0.9.3 is not installed; "
                          "fix: pip install 'deepspeed>=0.9.3'"), str(error)  # not PackageNotFoundError's prefix
