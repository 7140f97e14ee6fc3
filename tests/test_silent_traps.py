"""Four traps that pass without an error or a warning (issue #15), proved on the installed libraries: the best
model of load_best_model_at_end never loaded, datasets.load_dataset reaching the network for local files, the
causal-LM eval_loss biased low, and a Composer manual resume into the folder it was saved to."""

from __future__ import annotations

import ast
import json
import logging
import math
import warnings
from pathlib import Path
from typing import NamedTuple

import pytest

from support.composer_kit import trainer as composer_trainer
from support.docs import blocks
from support.harness import SKILLS_DIR, run_python
from support.transformers_kit import arguments, rows, tiny_classifier

RECIPES = SKILLS_DIR / "transformers-training" / "references" / "task-recipes.md"


# ---- 1. load_best_model_at_end with eval_steps=5, save_steps=10 -----------------------------------------------------

def best_model_run(tmp: Path, scores: list[float], **saving):
    """20 steps, an evaluation every 5 whose metric ``score`` takes ``scores`` in turn, load_best_model_at_end."""
    from transformers import Trainer

    evaluations = iter(scores)
    args = arguments(tmp, max_steps=20, eval_strategy="steps", eval_steps=5, load_best_model_at_end=True,
                     metric_for_best_model="score", **saving)
    trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows(), eval_dataset=rows(4),
                      compute_metrics=lambda prediction: {"score": next(evaluations)})
    trainer.train()
    return trainer


def checkpoints(trainer) -> list[str]:
    return sorted(path.name for path in Path(trainer.args.output_dir).glob("checkpoint-*"))


def holds_weights_of(trainer, checkpoint: str) -> bool:
    from safetensors.torch import load_file

    saved = load_file(Path(trainer.args.output_dir) / checkpoint / "model.safetensors")
    state = trainer.model.state_dict()
    return all(state[name].equal(tensor) for name, tensor in saved.items())


class Recorded(logging.Handler):
    def __init__(self):
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record):
        self.messages.append(record.getMessage())


@pytest.mark.parametrize("scores, best_step, loaded", [
    pytest.param([0.9, 0.5, 0.6, 0.7], 5, None, id="best-at-5-nothing-loaded"),
    # checkpoint-10 is recorded as the best only because step 10 improved on step 5 when it was saved ...
    pytest.param([0.5, 0.6, 0.9, 0.7], 15, "checkpoint-10", id="best-at-15-after-a-best-at-10-checkpoint-10-loaded"),
    # ... without that improvement nothing is recorded at step 10, nor at step 20 (no checkpoint-15): nothing loaded
    pytest.param([0.6, 0.5, 0.9, 0.7], 15, None, id="best-at-15-no-best-at-10-nothing-loaded"),
])
def test_best_evaluation_on_an_unsaved_step_is_never_loaded(tmp_path, scores, best_step, loaded):
    recorded = Recorded()
    logging.getLogger("transformers").addHandler(recorded)
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            trainer = best_model_run(tmp_path, scores, save_strategy="steps", save_steps=10)
    finally:
        logging.getLogger("transformers").removeHandler(recorded)
    state = json.loads((Path(trainer.args.output_dir) / "checkpoint-20" / "trainer_state.json").read_text())
    assert checkpoints(trainer) == ["checkpoint-10", "checkpoint-20"]
    assert (state["best_global_step"], state["best_metric"]) == (best_step, 0.9)
    assert state["best_model_checkpoint"] == (str(Path(trainer.args.output_dir) / loaded) if loaded else None)
    # the model ends on the last step's weights, or on checkpoint-10's (score 0.6), never on the best evaluation's
    assert holds_weights_of(trainer, loaded or "checkpoint-20")
    said = [*recorded.messages, *(str(warning.message) for warning in caught)]
    assert not [message for message in said if "best" in message.lower()], said


@pytest.mark.parametrize("saving, saved", [
    pytest.param(dict(save_strategy="steps", save_steps=5), [5, 10, 15, 20], id="save_steps-equal-eval_steps"),
    pytest.param(dict(save_strategy="best"), [5], id="save_strategy-best"),
])
def test_saving_at_every_improving_evaluation_loads_the_best(tmp_path, saving, saved):
    trainer = best_model_run(tmp_path, [0.9, 0.5, 0.6, 0.7], **saving)
    assert checkpoints(trainer) == sorted(f"checkpoint-{step}" for step in saved)
    assert trainer.state.best_model_checkpoint == str(Path(trainer.args.output_dir) / "checkpoint-5")
    assert holds_weights_of(trainer, "checkpoint-5")


# ---- 2. datasets.load_dataset on local files -------------------------------------------------------------------------

LOAD_LOCAL_JSON = """
import os, sys
import datasets, huggingface_hub

os.environ.update(arg.split("=") for arg in sys.argv[1:])  # after the import: too late
rows = datasets.load_dataset("json", data_files="train.jsonl", split="train").num_rows
print(rows, datasets.config.HF_HUB_OFFLINE, huggingface_hub.constants.HF_HUB_OFFLINE)
"""


@pytest.mark.parametrize("before_import, after_import, offline", [
    pytest.param({}, [], (False, False), id="no-variable"),
    pytest.param({"HF_HUB_OFFLINE": "1"}, [], (True, True), id="HF_HUB_OFFLINE"),
    pytest.param({"HF_DATASETS_OFFLINE": "1"}, [], (True, False), id="HF_DATASETS_OFFLINE"),
    pytest.param({"HF_UPDATE_DOWNLOAD_COUNTS": "0"}, [], (False, False), id="HF_UPDATE_DOWNLOAD_COUNTS"),
    pytest.param({}, ["HF_HUB_OFFLINE=1"], (False, False), id="HF_HUB_OFFLINE-after-import"),
])
def test_load_dataset_from_a_local_file_looks_up_s3_unless_told_not_to(tmp_path, before_import, after_import,
                                                                        offline):
    (tmp_path / "train.jsonl").write_text('{"text": "a", "label": 1}\n{"text": "b", "label": 0}\n')
    result = run_python(["-c", LOAD_LOCAL_JSON, *after_import], tmp_path, env=before_import)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.split() == ["2", *map(str, offline)]  # the file loads in every case
    lookups = [attempt.split(" ", 1)[1] for attempt in result.network_attempts]
    assert lookups == ([] if before_import else ["getaddrinfo('s3.amazonaws.com')"])


# ---- 3. causal-LM eval_loss and perplexity --------------------------------------------------------------------------

WORDS = "the a movie film plot was is very good bad paris london berlin where".split()
LINES, EVAL_BATCH = 40, 8


def causal_lm(kind: str):
    """A word-level tokenizer, LINES short lines and a tiny random causal LM (``gpt2`` or ``llama``) without dropout."""
    import numpy as np
    import torch
    from datasets import Dataset
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import AutoConfig, AutoModelForCausalLM, PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({token: i for i, token in enumerate(["[PAD]", "[UNK]", *WORDS])},
                                         unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]")
    generator = np.random.default_rng(0)
    lines = [" ".join(generator.choice(WORDS, size=generator.integers(3, 12))) for _ in range(LINES)]
    data = Dataset.from_dict({"text": lines}).map(lambda batch: tokenizer(batch["text"]), batched=True,
                                                  remove_columns=["text"])
    sizes = dict(vocab_size=len(tokenizer), pad_token_id=tokenizer.pad_token_id)
    if kind == "gpt2":
        config = AutoConfig.for_model("gpt2", n_embd=32, n_layer=2, n_head=2, n_positions=64, resid_pdrop=0.0,
                                      embd_pdrop=0.0, attn_pdrop=0.0, **sizes)
    else:
        config = AutoConfig.for_model("llama", hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                      num_attention_heads=2, num_key_value_heads=2, **sizes)
    torch.manual_seed(0)
    return tokenizer, data, AutoModelForCausalLM.from_config(config)


class BatchLoss(NamedTuple):
    rows: int
    summed: float  # the loss summed over the predicted tokens
    predicted: int  # tokens the model predicts: labels[:, 1:] that are not -100
    labelled: int  # labels that are not -100: each row's first token too


def batch_losses(model, collator, data, batch_size: int) -> list[BatchLoss]:
    """Computed by hand, batch by batch as Trainer's evaluation loop cuts them."""
    import torch

    found = []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(data), batch_size):
            batch = collator([data[index] for index in range(start, min(start + batch_size, len(data)))])
            logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
            labels = batch["labels"]
            summed = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, 1:],
                                                       reduction="sum").item()
            found.append(BatchLoss(len(labels), summed, int((labels[:, 1:] != -100).sum()),
                                   int((labels != -100).sum())))
    return found


def true_loss(losses: list[BatchLoss]) -> float:
    """The mean loss per predicted token: what exp() turns into the perplexity."""
    return sum(batch.summed for batch in losses) / sum(batch.predicted for batch in losses)


def per_row_mean(losses: list[BatchLoss], count: str) -> float:
    """Each batch's summed loss over its ``count`` ("predicted" or "labelled"), averaged with one weight per row."""
    weighted = sum(batch.rows * batch.summed / getattr(batch, count) for batch in losses)
    return weighted / sum(batch.rows for batch in losses)


def recipe_perplexity_functions():
    """token_losses and perplexity exactly as the causal-LM recipe of task-recipes.md defines them."""
    import numpy as np
    import torch

    source = next(block.source for block in blocks(RECIPES) if "def token_losses" in block.source)
    definitions = [node for node in ast.parse(source).body
                   if isinstance(node, ast.FunctionDef) and node.name in ("token_losses", "perplexity")]
    namespace = {"np": np, "torch": torch}
    exec(compile(ast.Module(definitions, type_ignores=[]), str(RECIPES), "exec"), namespace)  # noqa: S102
    return namespace["token_losses"], namespace["perplexity"]


def evaluation(tmp: Path, kind: str, loss_type: str | None = None, batch_size: int = EVAL_BATCH, **trainer_extra):
    """(Trainer.evaluate() metrics, the same numbers computed by hand batch by batch, the model)."""
    from transformers import DataCollatorForLanguageModeling, Trainer

    tokenizer, data, model = causal_lm(kind)
    if loss_type:
        model.loss_type = loss_type
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    trainer = Trainer(model=model, args=arguments(tmp, per_device_eval_batch_size=batch_size), eval_dataset=data,
                      data_collator=collator, **trainer_extra)
    return trainer.evaluate(), batch_losses(model, collator, data, batch_size), model


def test_gpt2_eval_loss_counts_each_rows_first_token(tmp_path):
    metrics, losses, model = evaluation(tmp_path, "gpt2")
    assert model.loss_type is None  # so Trainer counts labels, not labels[:, 1:]
    assert metrics["eval_loss"] == pytest.approx(per_row_mean(losses, "labelled"), rel=1e-5)
    measured = (round(math.exp(metrics["eval_loss"]), 1), round(math.exp(true_loss(losses)), 1),
                sum(batch.predicted for batch in losses))
    assert measured == (10.9, 16.5, 236)  # the numbers task-recipes.md quotes


@pytest.mark.parametrize("kind, loss_type", [pytest.param("llama", None, id="LlamaForCausalLM"),
                                             pytest.param("gpt2", "ForCausalLM", id="gpt2-loss_type-set")])
def test_for_causal_lm_loss_type_counts_predicted_tokens_but_weighs_batches_per_row(tmp_path, kind, loss_type):
    metrics, losses, model = evaluation(tmp_path, kind, loss_type)
    assert model.loss_type == "ForCausalLM"
    assert metrics["eval_loss"] == pytest.approx(per_row_mean(losses, "predicted"), rel=1e-5)
    assert metrics["eval_loss"] != pytest.approx(true_loss(losses), rel=1e-5)  # batches of unequal row lengths
    one_batch, whole, _ = evaluation(tmp_path / "one-batch", kind, loss_type, batch_size=LINES)
    assert one_batch["eval_loss"] == pytest.approx(true_loss(whole), rel=1e-5)


@pytest.mark.parametrize("loss_type, count", [pytest.param(None, "labelled", id="gpt2"),
                                              pytest.param("ForCausalLM", "predicted", id="gpt2-loss_type-set")])
def test_gpt2_training_loss_uses_the_same_count(tmp_path, loss_type, count):
    from transformers import DataCollatorForLanguageModeling, Trainer

    tokenizer, data, model = causal_lm("gpt2")
    if loss_type:
        model.loss_type = loss_type
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    expected = per_row_mean(batch_losses(model, collator, data, len(data)), count)
    args = arguments(tmp_path, max_steps=1, per_device_train_batch_size=len(data), learning_rate=0.0, logging_steps=1)
    trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=collator)
    trainer.train()  # one step over every row, weights unchanged
    assert trainer.state.log_history[0]["loss"] == pytest.approx(expected, rel=1e-5)


def test_recipe_perplexity_is_the_per_token_perplexity(tmp_path):
    token_losses, perplexity = recipe_perplexity_functions()
    metrics, losses, _ = evaluation(tmp_path, "gpt2", compute_metrics=perplexity,
                                    preprocess_logits_for_metrics=token_losses)
    assert metrics["eval_perplexity"] == pytest.approx(math.exp(true_loss(losses)), rel=1e-5)


# ---- 4. Composer: a manual resume into the folder it was saved to ---------------------------------------------------

def checkpoint_run_name(path: Path) -> str:
    import torch

    return torch.load(path, map_location="cpu", weights_only=False)["state"]["run_name"]  # our own file


def saved_names(folder: Path) -> list[str]:
    return sorted(path.name for path in folder.iterdir())


# 4 batches an epoch (composer_kit.loader): a first run of 3 batches, then a resume to 5
FIRST_RUN = ["ep0-ba1-rank0.pt", "ep0-ba2-rank0.pt", "ep0-ba3-rank0.pt", "latest-rank0.pt"]
RESUMED_RUN = ["ep0-ba4-rank0.pt", "ep1-ba5-rank0.pt", "latest-rank0.pt"]


@pytest.mark.composer
def test_composer_manual_resume_into_the_same_folder_needs_no_save_overwrite(tmp_path):
    folder = tmp_path / "run"
    first = composer_trainer(max_duration="3ba", run_name="first-run", save_folder=str(folder), save_interval="1ba")
    first.fit()
    first.close()
    resumed = composer_trainer(max_duration="5ba", save_folder=str(folder), save_interval="1ba",
                               load_path=str(folder / "latest-rank0.pt"))
    assert int(resumed.state.timestamp.batch) == 3
    assert resumed.state.run_name != "first-run"  # not restored: a fresh generated name
    resumed.fit()
    resumed.close()
    assert saved_names(folder) == sorted({*FIRST_RUN, *RESUMED_RUN})  # the first run's checkpoints are kept
    assert (folder / "latest-rank0.pt").readlink().name == "ep1-ba5-rank0.pt"
    assert checkpoint_run_name(folder / "ep0-ba3-rank0.pt") == "first-run"
    assert checkpoint_run_name(folder / "ep1-ba5-rank0.pt") == resumed.state.run_name


@pytest.mark.composer
def test_composer_resume_from_an_older_checkpoint_conflicts_with_the_later_ones(tmp_path):
    folder = tmp_path / "run"
    first = composer_trainer(max_duration="3ba", save_folder=str(folder), save_interval="1ba")
    first.fit()
    first.close()
    before = saved_names(folder)
    older = composer_trainer(max_duration="5ba", save_folder=str(folder), save_interval="1ba",
                             load_path=str(folder / "ep0-ba1-rank0.pt"))
    with pytest.raises(FileExistsError, match=r"ep0-ba[23]-rank0\.pt may conflict with a future checkpoint"):
        older.fit()
    older.close()
    assert saved_names(folder) == before


@pytest.mark.composer
@pytest.mark.parametrize("run_name", [pytest.param(None, id="no-run_name"),
                                      pytest.param("first-run", id="same-run_name")])
def test_composer_run_name_in_save_folder_follows_the_new_run_name(tmp_path, run_name):
    first = composer_trainer(max_duration="3ba", run_name="first-run", save_folder=str(tmp_path / "{run_name}"),
                             save_interval="1ba")
    first.fit()
    first.close()
    resumed = composer_trainer(max_duration="5ba", run_name=run_name, save_folder=str(tmp_path / "{run_name}"),
                               save_interval="1ba", load_path=str(tmp_path / "first-run" / "latest-rank0.pt"))
    resumed.fit()
    resumed.close()
    folders = {path.name: saved_names(path) for path in tmp_path.iterdir() if path.is_dir()}
    if run_name:  # the same folder goes on
        assert folders == {"first-run": sorted({*FIRST_RUN, *RESUMED_RUN})}
    else:  # a generated run name, so a new folder beside the old one
        assert folders == {"first-run": FIRST_RUN, resumed.state.run_name: RESUMED_RUN}
