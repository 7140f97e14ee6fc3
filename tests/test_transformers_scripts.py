"""The transformers-training smoke scripts. Each runs once per device, in ONE test that reads its JSON check by
check (tests spread over xdist workers would each start the script again); bad inputs get the contracted exit
code and one line. tests/test_contract.py covers --help and the contract flags."""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from conftest import (CANONICAL_RUNS, DEVICES, SKILLS_DIR, TRAINING_ARGS_SEED_EXAMPLE,
                      assert_one_line_error, canonical_run, import_script)

SCRIPTS = SKILLS_DIR / "transformers-training" / "scripts"
TRAIN, CHECKPOINT, ARGS = SCRIPTS / "train_smoke.py", SCRIPTS / "checkpoint_smoke.py", SCRIPTS / "training_args_smoke.py"
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
# The crash drills the suite runs: killed after checkpoint 1 (the first step), 2 (mid-epoch) and 4 (the epoch
# boundary: 16 rows at batch 4), and killed while writing checkpoint 1 (nothing complete is left) and 3.
KILL_AT, KILL_WHILE_SAVING = [1, 2, 4], [1, 3]
CRASH_CHECKS = [
    f"crash.kill_at_{step}.{name}" for step in KILL_AT for name in ("killed", "resumed", "bitwise_equal")] + [
    f"crash.killed_while_saving_{step}.{name}" for step in KILL_WHILE_SAVING
    for name in ("killed", "left_on_disk", "resume_true_raises", "resumed", "bitwise_equal")]


def checkpoint_smoke_all(tmp_path_factory, device: str):
    """checkpoint_smoke.py --mode all (the resume checks and the crash drills at KILL_AT and KILL_WHILE_SAVING): the
    shared canonical run, also read by tests/test_fault_drills_transformers.py; its files stay in its output dir."""
    result = canonical_run(tmp_path_factory, "transformers-training/checkpoint_smoke.py", device)
    args = CANONICAL_RUNS["transformers-training/checkpoint_smoke.py"]
    assert args[args.index("--kill-at") + 1] == ",".join(map(str, KILL_AT))
    assert args[args.index("--kill-while-saving") + 1] == ",".join(map(str, KILL_WHILE_SAVING))
    return result


def assert_all_checks_pass(result, expected_names: list[str]) -> dict:
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.network_attempts == [], result.network_attempts
    summary = result.json
    assert summary["ok"] and summary["exit_code"] == 0
    assert [check["name"] for check in summary["checks"]] == expected_names
    failed = [check for check in summary["checks"] if not check["ok"]]
    assert not failed, failed
    return summary


@pytest.mark.parametrize("device", DEVICES)
def test_train_smoke(tmp_path_factory, device):
    result = canonical_run(tmp_path_factory, "transformers-training/train_smoke.py", device)
    summary = assert_all_checks_pass(result, TRAIN_CHECKS)
    assert summary["device"] == device
    for name in ("transformers", "torch", "datasets", "evaluate"):
        assert summary["versions"][name] == importlib.metadata.version(name)
    # The metric went through the real evaluate API, loaded from the local module file.
    assert result.check("text-classification.metric.local_module")["detail"] == "evaluate module 'accuracy_metric'"
    assert "eval_accuracy" in result.check("text-classification.eval.accuracy")["detail"]
    assert result.check("causal-lm.train.global_step")["detail"] == "got 4, expected 4"
    # Seq2SeqTrainer pads generated ids to generation_config.max_length (20), not to generation_max_length (12).
    generated = result.check("seq2seq.predict.generated")["detail"]
    assert generated["generation_max_length"] == 12
    assert generated["shape"][1] == generated["generation_config.max_length"] == 20, generated


@pytest.mark.parametrize("device", DEVICES)
def test_checkpoint_smoke(tmp_path_factory, device):
    result = checkpoint_smoke_all(tmp_path_factory, device)
    assert_all_checks_pass(result, CHECKPOINT_CHECKS + CRASH_CHECKS)
    contents = result.check("checkpoint.contents")["detail"]
    for name in ("config.json", "generation_config.json", "model.safetensors", "optimizer.pt", "scheduler.pt",
                 "rng_state.pth", "trainer_state.json", "training_args.bin", "tokenizer.json"):
        assert name in contents, contents
    for name in ("resume.by_path.bitwise_equal", "resume.latest.bitwise_equal"):
        assert result.check(name)["detail"] == "0 tensors differ from the straight run"
    assert result.check("resume.larger_max_steps.first_learning_rate")["detail"] == "got 0.0, expected 0.0"
    assert result.check("best.only_best_kept_with_save_total_limit_1")["detail"] == \
        "got ['checkpoint-4'], expected ['checkpoint-4']"


@pytest.mark.parametrize("device", DEVICES)
def test_training_args_smoke_seed_example_decides_and_writes_nothing(tmp_path_factory, device):
    # The canonical run's working directory is fresh and watched: not even --output_dir may appear there.
    result = canonical_run(tmp_path_factory, "transformers-training/training_args_smoke.py", device)
    assert_all_checks_pass(result, ["training_arguments", "report_to.installed", "trainer_init"])
    decisions = result.check("training_arguments")["detail"]
    assert decisions["eval_strategy"] == "steps" and decisions["eval_steps"] == 50
    assert decisions["save_strategy"] == "steps" and decisions["save_steps"] == 50
    assert decisions["load_best_model_at_end"] is True
    assert decisions["metric_for_best_model"] == "eval_loss" and decisions["greater_is_better"] is False
    assert decisions["report_to"] == [] and decisions["effective_train_batch_size"] == 2
    assert decisions["precision"] == "fp32"
    # A save at every evaluation: the best one is always on disk, so no notice (save every 100 would warn)
    assert decisions["notices"] == []
    assert result.stray_files == []  # nothing written, not even --output_dir


@pytest.fixture
def training_args(script_worker):
    """training_args_smoke.py's main() in the skill's worker process: the cases below pay the Transformers import
    once (with the fuzz tests of tests/test_bad_input.py)."""
    def run(*argv: str, cwd: Path):
        result = script_worker(ARGS).run(ARGS, *argv, cwd=cwd)
        assert result.network_attempts == [], result.network_attempts
        return result

    return run


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
    assert_one_line_error(run_script(ARGS, flag, "steps"), 2, replacement)


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
    assert_one_line_error(run_script(TRAIN, *args), 2, fragment)


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
