"""training_args_smoke.py's decisions: every notice triggered once and absent without its cause, and every JSON
field computed from several flags given a case where each flag changes it (a notice dropped or a field computed
without one of its inputs passed the suite before: issue #24). The runs share the skill's worker process."""

from __future__ import annotations

import pytest

# A run whose flags raise no notice: each case below adds the flags that raise one.
QUIET = ["--output_dir", "out", "--report_to", "none", "--device", "cpu", "--json"]


@pytest.fixture
def decide(training_args, tmp_path):
    """The decisions training_args_smoke.py prints for QUIET plus ``flags`` (it must pass)."""
    def run(*flags: str) -> dict:
        result = training_args(*QUIET, *flags, cwd=tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
        return result.check("training_arguments")["detail"]

    return run


NOTICES = {
    "eval-steps-missing": (["--eval_strategy", "steps", "--logging_steps", "7"],
                           "eval_steps not given: evaluation runs every logging_steps (7) steps"),
    "best-between-saves": (["--eval_strategy", "steps", "--eval_steps", "5", "--save_steps", "10",
                            "--load_best_model_at_end", "--metric_for_best_model", "eval_loss"],
                           "load_best_model_at_end with eval_steps 5 but save_steps 10: a best evaluation"),
    "metric-missing": (["--eval_strategy", "epoch", "--save_strategy", "epoch", "--load_best_model_at_end"],
                       "metric_for_best_model not given: load_best_model_at_end keeps the lowest eval_loss"),
    "metric-unchecked": (["--metric_for_best_model", "eval_f1"],
                         "metric_for_best_model='eval_f1' must be a key compute_metrics returns"),
    "accumulation": (["--gradient_accumulation_steps", "2"], "gradient_accumulation_steps > 1: "),
    "push-to-hub": (["--push_to_hub", "--hub_model_id", "me/model"],
                    "push_to_hub: Trainer init creates the Hub repo me/model and every save uploads"),
    "resume-field": (["--resume_from_checkpoint", "out/checkpoint-5"],
                     "Trainer ignores the resume_from_checkpoint field: pass trainer.train(resume_from_checkpoint="),
    "max-steps-over-epochs": (["--max_steps", "10", "--num_train_epochs", "3"],
                              "max_steps > 0 overrides num_train_epochs"),
    "deprecated": (["--gradient_checkpointing"], "deprecated: `gradient_checkpointing` is deprecated"),
}


@pytest.mark.parametrize("case", NOTICES)
def test_each_notice_fires_on_its_cause_alone(decide, case):
    flags, notice = NOTICES[case]
    notices = decide(*flags)["notices"]
    assert len(notices) == 1 and notices[0].startswith(notice), notices


@pytest.mark.parametrize(("flags", "why_quiet"), [
    (["--eval_strategy", "steps", "--eval_steps", "5"], "eval_steps given"),
    (["--eval_strategy", "steps", "--eval_steps", "5", "--save_steps", "5", "--load_best_model_at_end",
      "--metric_for_best_model", "eval_loss"], "a save at every evaluation"),
    (["--metric_for_best_model", "eval_f1", "--metric-keys", "f1"], "the metric key checked"),
    (["--gradient_accumulation_steps", "1"], "no accumulation"),
    (["--max_steps", "10"], "epochs left at their default"),
], ids=["eval-steps", "save-at-each-eval", "metric-keys", "accumulation-1", "max-steps-alone"])
def test_no_notice_without_its_cause(decide, flags, why_quiet):
    assert decide(*flags)["notices"] == [], why_quiet


def test_effective_batch_size_multiplies_batch_and_accumulation(decide):
    assert decide("--per_device_train_batch_size", "3")["effective_train_batch_size"] == 3
    decisions = decide("--per_device_train_batch_size", "3", "--gradient_accumulation_steps", "4")
    assert decisions["effective_train_batch_size"] == 12 and decisions["gradient_accumulation_steps"] == 4
    assert decisions["world_size"] == 1 and decisions["n_gpu"] == 0


@pytest.mark.parametrize(("flags", "field", "expected"), [
    (["--bf16", "--use_cpu"], "precision", "bf16"),
    ([], "precision", "fp32"),
    (["--max_steps", "7"], "duration", "7 steps"),
    (["--num_train_epochs", "2"], "duration", "2.0 epochs"),
    (["--seq2seq"], "arguments_class", "Seq2SeqTrainingArguments"),
    ([], "arguments_class", "TrainingArguments"),
    (["--seed", "9"], "seed", 9),
    ([], "seed", 42),
    (["--gradient_checkpointing"], "activation_checkpointing", True),
    ([], "eval_dataset", True),
    (["--no-eval-dataset"], "eval_dataset", False),
    ([], "push_to_hub", False),
    (["--push_to_hub"], "push_to_hub", True),
], ids=lambda value: " ".join(value) if isinstance(value, list) else str(value))
def test_each_field_follows_its_flags(decide, flags, field, expected):
    assert decide(*flags)[field] == expected


def test_output_dir_exists_is_read_not_made(decide, tmp_path):
    assert decide()["output_dir_exists"] is False and not (tmp_path / "out").exists()
    (tmp_path / "out").mkdir()
    assert decide()["output_dir_exists"] is True


@pytest.mark.parametrize("metric", ["loss", "eval_loss"])
def test_the_eval_loss_is_a_known_metric_without_being_a_metric_key(decide, metric):
    """Trainer logs eval_loss whatever compute_metrics returns: --metric-keys accuracy must not refuse it."""
    assert decide("--metric_for_best_model", metric, "--metric-keys", "accuracy")["notices"] == []
