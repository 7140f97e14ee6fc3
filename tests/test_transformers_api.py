"""What the transformers-training skill states about the installed library, proved in-process on tiny models
(the transformers import is paid once per worker). Errors it quotes are proved by test_quoted_errors.py."""

from __future__ import annotations

import ast
import dataclasses
import importlib.metadata
import inspect
import math
import re
from pathlib import Path

import pytest

from support.harness import SKILLS_DIR
from support.quoted_errors_transformers import OFFLINE, PROBED_ENVIRONMENTS, evaluate_offline_probe
from support.surface_transformers import INVALID
from support.transformers_kit import arguments, rows, tiny_classifier, word_tokenizer

SKILL = SKILLS_DIR / "transformers-training"


def training_arguments_defaults() -> dict:
    from transformers import TrainingArguments

    defaults = {}
    for field in dataclasses.fields(TrainingArguments):
        if field.default is not dataclasses.MISSING:
            defaults[field.name] = field.default
        elif field.default_factory is not dataclasses.MISSING:
            defaults[field.name] = field.default_factory()
    return defaults


# ---- 5.x names ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name", sorted(INVALID))
def test_names_the_skill_calls_removed_are_rejected(name, tmp_path):
    from transformers import Trainer, TrainingArguments

    with pytest.raises(TypeError, match=f"unexpected keyword argument '{name}'"):
        if name == "tokenizer":
            Trainer(model=tiny_classifier(), args=arguments(tmp_path), tokenizer=None)
        else:
            TrainingArguments(output_dir=str(tmp_path), **{name: None})


def test_training_arguments_has_114_fields():
    assert len(training_arguments_defaults()) == 114


def test_api_reference_defaults_are_the_installed_defaults():
    """Every `| `field` | `literal` | ... |` row of api-reference.md matches dataclasses.fields(TrainingArguments)."""
    defaults = training_arguments_defaults()
    row = re.compile(r"^\| `(\w+)` \| `([^`]+)` \|")
    checked, in_field_table = 0, False
    for line in (SKILL / "references" / "api-reference.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("| field | default |"):
            in_field_table = True
        elif not line.startswith("|"):
            in_field_table = False
        match = row.match(line) if in_field_table else None
        if not match:
            continue
        name, literal = match.groups()
        assert name in defaults, f"api-reference.md lists {name!r}, not a TrainingArguments field"
        assert ast.literal_eval(literal) == defaults[name], f"{name}: doc says {literal}, installed {defaults[name]!r}"
        checked += 1
    assert checked >= 40, checked


def test_optim_default_depends_on_torch_version():
    import torch
    from packaging import version

    expected = "adamw_torch_fused" if version.parse(torch.__version__).release >= (2, 8) else "adamw_torch"
    assert training_arguments_defaults()["optim"] == expected


def test_report_to_defaults_to_none(tmp_path):
    from transformers import TrainingArguments

    assert training_arguments_defaults()["report_to"] == "none"
    assert TrainingArguments(output_dir=str(tmp_path)).report_to == []


def test_gradient_checkpointing_is_a_deprecated_alias(tmp_path):
    from transformers import TrainingArguments

    with pytest.warns(FutureWarning, match="`gradient_checkpointing` is deprecated .* Use `activation_checkpointing`"):
        args = TrainingArguments(output_dir=str(tmp_path), gradient_checkpointing=True)
    assert args.activation_checkpointing is True
    assert TrainingArguments(output_dir=str(tmp_path)).activation_checkpointing is False


# ---- argument rules ------------------------------------------------------------------------------------------------

def test_output_dir_default_and_who_creates_it(tmp_path, monkeypatch):
    from transformers import Trainer, TrainingArguments

    monkeypatch.chdir(tmp_path)
    assert TrainingArguments().output_dir == "trainer_output"
    args = arguments(tmp_path / "run")
    assert not Path(args.output_dir).exists(), "TrainingArguments(...) created output_dir"
    Trainer(model=tiny_classifier(), args=args)
    assert Path(args.output_dir).is_dir(), "Trainer(...) did not create output_dir"
    assert [path.name for path in tmp_path.iterdir()] == ["run"]


def test_eval_steps_falls_back_to_logging_steps(tmp_path):
    assert arguments(tmp_path, eval_strategy="steps").eval_steps == 500
    assert arguments(tmp_path, eval_strategy="steps", logging_steps=7).eval_steps == 7


def test_save_steps_multiple_rule_applies_only_with_load_best(tmp_path):
    args = arguments(tmp_path, eval_strategy="steps", eval_steps=10, save_strategy="steps", save_steps=15)
    assert (args.eval_steps, args.save_steps) == (10, 15)
    with pytest.raises(ValueError, match="round multiple"):
        arguments(tmp_path, eval_strategy="steps", eval_steps=10, save_strategy="steps", save_steps=15,
                  load_best_model_at_end=True)


def test_load_best_without_metric_uses_loss(tmp_path):
    args = arguments(tmp_path, eval_strategy="steps", save_strategy="steps", load_best_model_at_end=True)
    assert (args.metric_for_best_model, args.greater_is_better) == ("loss", False)


def test_best_save_strategy_passes_training_arguments(tmp_path):
    assert arguments(tmp_path, save_strategy="best").save_strategy == "best"  # Trainer(...) is what raises


def test_greater_is_better_follows_the_metric_name(tmp_path):
    assert arguments(tmp_path, metric_for_best_model="my_loss").greater_is_better is False
    assert arguments(tmp_path, metric_for_best_model="f1").greater_is_better is True


def test_float_warmup_steps_is_a_ratio(tmp_path):
    assert arguments(tmp_path, warmup_steps=0.1).get_warmup_steps(50) == 5
    assert arguments(tmp_path, warmup_steps=3).get_warmup_steps(50) == 3


def test_replacement_fields_exist(tmp_path):
    args = arguments(tmp_path, train_sampling_strategy="group_by_length", include_for_metrics=["inputs"],
                     hub_token="unused", torch_compile_backend="inductor")
    assert args.train_sampling_strategy == "group_by_length" and args.include_for_metrics == ["inputs"]
    assert args.torch_compile is True  # a backend (or a mode) turns torch_compile on


def test_bf16_on_cpu_is_accepted_with_use_cpu(tmp_path):
    assert arguments(tmp_path, bf16=True, use_cpu=True).bf16 is True


# ---- Trainer behaviour ---------------------------------------------------------------------------------------------

def test_default_collator_depends_on_processing_class(tmp_path):
    from transformers import DataCollatorWithPadding, Trainer, default_data_collator

    with_tokenizer = Trainer(model=tiny_classifier(), args=arguments(tmp_path),
                             processing_class=word_tokenizer(pad_token="[UNK]"))
    assert isinstance(with_tokenizer.data_collator, DataCollatorWithPadding)
    assert Trainer(model=tiny_classifier(), args=arguments(tmp_path)).data_collator is default_data_collator


def test_trainer_seeds_with_args_seed_at_init(tmp_path):
    import torch
    from transformers import Trainer, set_seed

    model = tiny_classifier()  # built before Trainer: its random head does not depend on args.seed
    torch.manual_seed(123)
    Trainer(model=model, args=arguments(tmp_path, seed=7))
    after_init = torch.rand(4)
    set_seed(7)
    assert torch.equal(after_init, torch.rand(4))


@pytest.mark.parametrize("label_column", ["label", "labels"])
def test_label_and_labels_columns_both_train(tmp_path, label_column):
    from datasets import Dataset
    from transformers import DataCollatorWithPadding, Trainer

    tokenizer = word_tokenizer(pad_token="[UNK]")
    data = Dataset.from_dict({"text": ["a b", "c", "a c b", "b"], label_column: [0, 1, 0, 1]})
    data = data.map(lambda batch: tokenizer(batch["text"]), batched=True)  # "text" stays: Trainer drops it
    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp_path), train_dataset=data,
                      data_collator=DataCollatorWithPadding(tokenizer))
    assert math.isfinite(trainer.train().training_loss)


def test_resume_helpers(tmp_path):
    from transformers import Trainer
    from transformers.trainer_utils import get_last_checkpoint

    args = arguments(tmp_path, save_strategy="steps", save_steps=1)
    assert get_last_checkpoint(str(tmp_path)) is None  # a fresh start: resume_from_checkpoint=None
    trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows())
    trainer.train()
    assert get_last_checkpoint(args.output_dir).endswith("checkpoint-2")
    with pytest.raises(ValueError, match="Can't find a valid checkpoint at"):  # output_dir is not a checkpoint
        Trainer(model=tiny_classifier(), args=args, train_dataset=rows()).train(resume_from_checkpoint=args.output_dir)


def test_save_only_model_checkpoint_resumes_with_a_fresh_schedule(tmp_path):
    from transformers import Trainer

    args = arguments(tmp_path, max_steps=4, save_strategy="steps", save_steps=2, save_only_model=True,
                     logging_steps=1, learning_rate=1e-3)
    Trainer(model=tiny_classifier(), args=args, train_dataset=rows(16)).train()
    checkpoint = Path(args.output_dir) / "checkpoint-2"
    assert not (checkpoint / "optimizer.pt").exists() and not (checkpoint / "scheduler.pt").exists()
    resumed = Trainer(model=tiny_classifier(), args=args, train_dataset=rows(16))
    resumed.train(resume_from_checkpoint=str(checkpoint))  # no error ...
    rates = {entry["step"]: entry["learning_rate"] for entry in resumed.state.log_history if "learning_rate" in entry}
    assert rates[3] == 1e-3  # ... but step 3 runs at the initial rate, not the schedule's 5e-4


@pytest.mark.parametrize("accumulation", [1, 4])
def test_gradient_accumulation_inflates_sequence_classification_loss(tmp_path, accumulation):
    """huggingface/transformers#47688: logged loss and gradient norm are N x with gradient_accumulation_steps=N;
    model.accepts_loss_kwargs = False fixes both. learning_rate=0 keeps the weights, so train == eval loss."""
    from transformers import Trainer

    def run(fixed: bool):
        import torch

        torch.manual_seed(0)
        model = tiny_classifier(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
        if fixed:
            model.accepts_loss_kwargs = False
        data = rows(4 * accumulation)
        args = arguments(tmp_path / str(fixed), max_steps=1, per_device_train_batch_size=4, learning_rate=0.0,
                         gradient_accumulation_steps=accumulation, logging_steps=1)
        trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=data)
        trainer.train()
        logged = next(entry for entry in trainer.state.log_history if "loss" in entry)
        return logged["loss"] / trainer.evaluate()["eval_loss"], logged["grad_norm"]

    (buggy_ratio, buggy_norm), (fixed_ratio, fixed_norm) = run(False), run(True)
    assert buggy_ratio == pytest.approx(accumulation, rel=1e-2)
    assert fixed_ratio == pytest.approx(1.0, rel=1e-2)
    assert buggy_norm / fixed_norm == pytest.approx(accumulation, rel=1e-2)


def test_pad_token_equal_to_eos_masks_real_eos_labels():
    from transformers import DataCollatorForLanguageModeling

    tokenizer = word_tokenizer(eos_token="</s>")
    examples = [tokenizer("a b </s>"), tokenizer("a </s>")]
    tokenizer.pad_token = tokenizer.eos_token
    labels = DataCollatorForLanguageModeling(tokenizer, mlm=False)(examples)["labels"]
    assert labels[0].tolist() == [2, 3, -100]  # the first example's real EOS is masked like padding
    tokenizer.pad_token = None
    tokenizer.add_special_tokens({"pad_token": "[PAD]"})
    labels = DataCollatorForLanguageModeling(tokenizer, mlm=False)(examples)["labels"]
    assert labels.tolist() == [[2, 3, 1], [2, 1, -100]]


def test_data_collator_for_language_modeling_defaults_to_mlm():
    from transformers import DataCollatorForLanguageModeling

    assert inspect.signature(DataCollatorForLanguageModeling).parameters["mlm"].default is True


# ---- evaluate offline ------------------------------------------------------------------------------------------------

def test_evaluate_offline_hub_name_fails_without_a_network_attempt():
    error, attempts = evaluate_offline_probe("hub_name")
    assert error.startswith("FileNotFoundError: Couldn't find a module script at")
    assert attempts == [], attempts


@pytest.mark.parametrize("variable", sorted(OFFLINE))
def test_a_hub_name_with_one_offline_variable_alone_still_reaches_for_the_network(variable):
    error, attempts = evaluate_offline_probe("hub_name", {variable: "1"})
    assert error and attempts, (error, attempts)


@pytest.mark.parametrize("env", PROBED_ENVIRONMENTS, ids=lambda env: "+".join(env) or "no-variable")
def test_a_local_metric_module_loads_without_a_network_attempt_whatever_the_variables(env):
    value, attempts = evaluate_offline_probe("local", env)
    assert value == {"accuracy": 0.5}
    assert attempts == [], attempts


# ---- install and example scripts -----------------------------------------------------------------------------------

def test_plain_transformers_install_does_not_pull_torch():
    requirements = importlib.metadata.requires("transformers")
    assert not [r for r in requirements if r.startswith("torch") and "extra ==" not in r]
    assert 'torch>=2.6; extra == "torch"' in requirements
    from transformers.utils import import_utils

    assert "Disabling PyTorch because PyTorch >= 2.6 is required" in inspect.getsource(import_utils)


def test_wheel_ships_no_example_scripts_and_no_train_command():
    import transformers
    from transformers.cli.transformers import app

    package = Path(transformers.__file__).parent
    assert not (package / "examples").exists() and not list(package.rglob("run_*.py"))
    assert set(app.commands) == {"add-new-model-like", "chat", "download", "env", "serve", "version"}


def test_hf_argument_parser_reads_training_flags_next_to_your_own_dataclass():
    from transformers import HfArgumentParser, TrainingArguments

    @dataclasses.dataclass
    class DataArguments:
        max_train_samples: int = 0

    parser = HfArgumentParser((DataArguments, TrainingArguments))
    data_args, training_args = parser.parse_args_into_dataclasses(
        args=["--max_train_samples", "50", "--output_dir", "unused", "--eval_strategy", "steps", "--report_to", "none"])
    assert data_args.max_train_samples == 50 and training_args.eval_strategy == "steps"


def test_early_stopping_callback_takes_patience():
    from transformers import EarlyStoppingCallback

    assert EarlyStoppingCallback(early_stopping_patience=3).early_stopping_patience == 3
