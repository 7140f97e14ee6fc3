"""Issue #23, "What agents had to guess", transformers-training items: each test proves on the installed libraries
what the skill now states: the multi-label recipe's metric, EOS with a tokenizer that appends none, the model's own
causal-LM loss on a padded batch, the best saved checkpoint at a fixed save cadence, the example-script route, and
a torch-less install. Tiny models from configs, CPU, offline, nothing mocked."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest

from support.docs import runnable_blocks
from support.harness import SKILLS_DIR, run_command
from support.quoted_errors_transformers import torch_less_probe, torch_less_python
from support.transformers_kit import arguments, rows, tiny_classifier, word_tokenizer

SKILL = SKILLS_DIR / "transformers-training"
RECIPES = SKILL / "references" / "task-recipes.md"
TROUBLESHOOTING = SKILL / "references" / "troubleshooting.md"
JOBS = SKILL / "references" / "jobs.md"


def doc_definition(doc: Path, name: str):
    """The function or class ``name`` exactly as the one runnable block of ``doc`` defining it has it, run with that
    block's own imports (nothing else of the block runs)."""
    [source] = [block.source for block in runnable_blocks(doc, "python")
                if re.search(rf"^(def|class) {name}\b", block.source, flags=re.M)]
    wanted = [node for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))
              or (isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == name)]
    namespace = {"np": __import__("numpy"), "torch": __import__("torch")}  # the recipes' shared setup imports them
    exec(compile(ast.Module(wanted, type_ignores=[]), str(doc), "exec"), namespace)  # noqa: S102
    return namespace[name]


# ---- 11. multi-label classification ----------------------------------------------------------------------------------

def test_recipe_micro_f1_thresholds_each_sigmoid_and_counts_every_label_decision_once():
    import numpy as np
    from transformers import EvalPrediction

    micro_f1 = doc_definition(RECIPES, "micro_f1")
    logits = np.array([[2.0, -1.0, 0.1], [-3.0, 4.0, -0.1]])  # sigmoid > 0.5 exactly where the logit > 0
    labels = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 1.0]])
    # on: (0,0) (0,2) (1,1); true: (0,0) (1,1) (1,2): 2 true positives, 1 false positive, 1 false negative
    precision = recall = 2 / 3
    expected = 2 * precision * recall / (precision + recall)
    assert micro_f1(EvalPrediction(predictions=logits, label_ids=labels))["micro_f1"] == pytest.approx(expected)
    nothing = EvalPrediction(predictions=np.full((2, 3), -5.0), label_ids=np.zeros((2, 3)))
    assert micro_f1(nothing)["micro_f1"] == 1.0  # nothing predicted, nothing true: no error, no division by 0


def test_float_multi_hot_labels_stack_as_float32_for_a_bce_head():
    import torch
    from transformers import DataCollatorWithPadding

    tokenizer = word_tokenizer(pad_token="[UNK]")
    batch = DataCollatorWithPadding(tokenizer)([{**tokenizer("a b"), "label": [1.0, 0.0, 1.0]},
                                                {**tokenizer("c"), "label": [0.0, 1.0, 0.0]}])
    assert batch["labels"].dtype == torch.float32 and batch["labels"].shape == (2, 3)  # "label" renamed too
    model = tiny_classifier(num_labels=3, problem_type="multi_label_classification")
    loss = model(**batch).loss
    assert type(loss.grad_fn).__name__.startswith("BinaryCrossEntropyWithLogits")


# ---- 15. causal LM with a tokenizer that appends no EOS --------------------------------------------------------------

def _eos_tokenizer():
    tokenizer = word_tokenizer(eos_token="</s>")  # "</s>" is id 1; the tokenizer adds no special token itself
    tokenizer.add_special_tokens({"pad_token": "[PAD]"})
    return tokenizer


def test_a_tokenizer_without_eos_gets_it_appended_and_the_collator_keeps_it_as_a_label():
    from transformers import DataCollatorForLanguageModeling

    tokenizer = _eos_tokenizer()
    assert tokenizer("a b")["input_ids"] == [2, 3]  # no EOS appended
    assert tokenizer("a b" + tokenizer.eos_token)["input_ids"] == [2, 3, 1]  # exactly one, at the end
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    bare = collator([tokenizer("a b c"), tokenizer("a")])["labels"]
    assert not (bare == tokenizer.eos_token_id).any()  # without appending, no label ever teaches the end
    labels = collator([tokenizer("a b c</s>"), tokenizer("a</s>")])["labels"]
    assert labels.tolist() == [[2, 3, 4, 1], [2, 1, -100, -100]]  # each line's last label is EOS, padding is not
    same = word_tokenizer(eos_token="</s>", pad_token="</s>")  # pad = eos masks the appended EOS too
    assert DataCollatorForLanguageModeling(same, mlm=False)([same("a b</s>")])["labels"].tolist() == [[2, 3, -100]]


def test_the_models_own_loss_on_a_right_padded_batch_is_per_predicted_token_eos_included(tmp_path):
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer

    tokenizer = _eos_tokenizer()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
        "gpt2", vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=1, n_positions=16, embd_pdrop=0.0,
        resid_pdrop=0.0, attn_pdrop=0.0, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id))
    data = [dict(tokenizer(line + tokenizer.eos_token)) for line in ("a b c a b c", "a", "c b", "b c a b")]
    batch = DataCollatorForLanguageModeling(tokenizer, mlm=False)(data)  # right-padded, padding labelled -100
    labels = batch["labels"]
    model.eval()
    with torch.no_grad():
        own = model(**batch).loss.item()
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    token_losses = torch.nn.functional.cross_entropy(logits[:, :-1].transpose(1, 2), labels[:, 1:], reduction="none")
    predicted = labels[:, 1:] != -100  # every token after a row's first, each row's EOS included
    assert int(predicted.sum()) == sum(len(row["input_ids"]) - 1 for row in data)
    assert own == pytest.approx(token_losses[predicted].mean().item(), rel=1e-5)  # per predicted token
    per_row = torch.stack([token_losses[row][predicted[row]].mean() for row in range(len(data))]).mean().item()
    assert own != pytest.approx(per_row, rel=1e-3)  # not a mean of row means
    eos_at = predicted & (labels[:, 1:] == tokenizer.eos_token_id)
    assert int(eos_at.sum()) == len(data)  # one EOS prediction per line counts in that mean (and the perplexity)

    # Only the Trainer's count is off: one step at learning rate 0 over the same batch logs sum / labelled tokens
    model.train()
    args = arguments(tmp_path, max_steps=1, per_device_train_batch_size=len(data), learning_rate=0.0, logging_steps=1)
    trainer = Trainer(model=model, args=args, train_dataset=data,
                      data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
    trainer.train()
    labelled = int((labels != -100).sum())  # each row's first token included, never predicted
    assert trainer.state.log_history[0]["loss"] == pytest.approx(token_losses[predicted].sum().item() / labelled,
                                                                 rel=1e-5)


# ---- 16, 17. the best saved checkpoint with eval every 5 and a save every 10 -----------------------------------------

def _cadence_run(output_dir: Path, scores, greater=True, callbacks=(), resume=None):
    """Steps 1-20, an evaluation every 5 whose metric ``score`` takes ``scores`` in turn, a save every 10."""
    from transformers import Trainer

    evaluations = iter(scores)
    args = arguments(output_dir.parent, output_dir=str(output_dir), max_steps=20, eval_strategy="steps", eval_steps=5,
                     save_strategy="steps", save_steps=10, load_best_model_at_end=True, metric_for_best_model="score",
                     greater_is_better=greater)
    trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows(), eval_dataset=rows(4),
                      callbacks=list(callbacks), compute_metrics=lambda prediction: {"score": next(evaluations)})
    trainer.train(resume_from_checkpoint=resume)
    return trainer


def _ends_on(trainer, tmp_path: Path, checkpoint: Path) -> bool:
    """The trainer's model is the checkpoint's, and save_model writes its weights byte for byte."""
    trainer.save_model(str(tmp_path / "final"))
    return (tmp_path / "final" / "model.safetensors").read_bytes() == (checkpoint / "model.safetensors").read_bytes()


@pytest.mark.parametrize("greater, scores, best_saved", [
    pytest.param(True, [0.9, 0.7, 0.6, 0.7], 10, id="best-unsaved-then-a-tie-the-first-wins"),  # as shipped: none
    pytest.param(False, [0.1, 0.3, 0.4, 0.3], 10, id="lower-is-better-tie-the-first-wins"),  # as shipped: none
    pytest.param(True, [0.5, 0.6, 0.9, 0.7], 20, id="best-at-15-the-better-saved-20"),  # as shipped: checkpoint-10
    pytest.param(True, [0.5, 0.9, 0.6, 0.7], 10, id="best-saved-at-10"),  # as shipped: checkpoint-10 too
])
def test_the_callback_ends_on_the_best_saved_checkpoint_keeping_the_cadence(tmp_path, greater, scores, best_saved):
    callback = doc_definition(TROUBLESHOOTING, "LoadBestSavedCheckpoint")
    out = tmp_path / "out"
    trainer = _cadence_run(out, scores, greater, callbacks=[callback()])
    assert sorted(path.name for path in out.glob("checkpoint-*")) == ["checkpoint-10", "checkpoint-20"]  # the cadence
    assert trainer.state.best_model_checkpoint == str(out / f"checkpoint-{best_saved}")
    assert _ends_on(trainer, tmp_path, out / f"checkpoint-{best_saved}")


def test_the_callback_reads_the_scores_of_a_resumed_run_from_its_log_history(tmp_path):
    """Steps 10 and 20 tie at 0.7: the resumed run must remember step 10's score, from before the resume."""
    callback = doc_definition(TROUBLESHOOTING, "LoadBestSavedCheckpoint")
    out = tmp_path / "out"
    _cadence_run(out, [0.9, 0.7, 0.6, 0.7], callbacks=[callback()])
    resumed = _cadence_run(out, [0.6, 0.7], callbacks=[callback()], resume=str(out / "checkpoint-10"))  # 15 and 20
    assert resumed.state.best_model_checkpoint == str(out / "checkpoint-10")
    assert _ends_on(resumed, tmp_path, out / "checkpoint-10")


# ---- 18. the official-example-script rule and a torch-less install ---------------------------------------------------

def test_the_fast_workflow_routes_to_an_example_script_before_trainer_code():
    text = (SKILL / "SKILL.md").read_text(encoding="utf-8")
    workflow = text.split("## Fast workflow", 1)[1].split("\n## ", 1)[0]
    step = re.search(r"^2\. (.*?)(?=^\d\. )", workflow, flags=re.M | re.S)[1]
    assert step.index("(#example-script-route)") < step.index("(references/jobs.md)")  # example script first
    assert "## Example-script route" in text and "run_classification.py" in text


def test_a_torch_less_install_imports_with_a_warning_and_fails_at_trainer(tmp_path):
    result = torch_less_probe(tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.json["torch_found"] is False
    assert ("[transformers] PyTorch was not found. Models won't be available and only tokenizers, configuration and "
            "file/data utilities can be used.") in result.stderr
    assert result.json["training_arguments"] == "TrainingArguments"  # builds without torch
    assert result.json["Trainer"].split()[:4] == ["ImportError:", "Trainer", "requires", "PyTorch"]
    assert " ".join(result.json["model"].split()).startswith(
        "ImportError: AutoModelForSequenceClassification requires PyTorch >= 2.6, but PyTorch was not found")
    assert result.network_attempts == []


# ---- the outside tester's guesses: a flat metric, the checkpoints' own state, padding side, float labels ----------

def test_a_flat_metric_makes_every_saved_checkpoint_tie_and_the_callback_keep_the_first(tmp_path):
    """Micro-F1 at 0.5 stays 0.0 while the sigmoids sit below 0.5: the callback then ends on the first save."""
    callback = doc_definition(TROUBLESHOOTING, "LoadBestSavedCheckpoint")
    trainer = _cadence_run(tmp_path / "out", [0.0, 0.0, 0.0, 0.0], callbacks=[callback()])
    assert trainer.state.best_model_checkpoint == str(tmp_path / "out" / "checkpoint-10")
    section = TROUBLESHOOTING.read_text(encoding="utf-8").split("### The best evaluation falls", 1)[1].split("\n## ")[0]
    assert "a metric that moves" in section and "eval_loss" in section


def test_each_checkpoints_trainer_state_keeps_the_trainers_own_best_not_the_callbacks(tmp_path):
    import json

    callback = doc_definition(TROUBLESHOOTING, "LoadBestSavedCheckpoint")
    out = tmp_path / "out"
    trainer = _cadence_run(out, [0.9, 0.7, 0.6, 0.7], callbacks=[callback()])
    assert trainer.state.best_model_checkpoint == str(out / "checkpoint-10")  # in memory: the callback's choice
    saved = {step: json.loads((out / f"checkpoint-{step}" / "trainer_state.json").read_text()) for step in (10, 20)}
    assert all((state["best_global_step"], state["best_metric"]) == (5, 0.9) for state in saved.values())  # unsaved
    # each file is written before its own save's on_save: checkpoint-10's holds the Trainer's own choice (none),
    # checkpoint-20's the callback's choice at the previous save
    assert saved[10]["best_model_checkpoint"] is None
    assert saved[20]["best_model_checkpoint"] == str(out / "checkpoint-10")
    section = TROUBLESHOOTING.read_text(encoding="utf-8").split("### The best evaluation falls", 1)[1].split("\n## ")[0]
    assert "is written before the callback\nruns at that save" in section
    assert "do not read those files as the answer" in section


def test_left_padding_makes_the_recipes_mask_and_the_models_loss_count_each_padded_rows_first_token():
    import numpy as np
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, DataCollatorForLanguageModeling, EvalPrediction

    token_losses = doc_definition(RECIPES, "token_losses")
    perplexity = doc_definition(RECIPES, "perplexity")
    tokenizer = _eos_tokenizer()
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
        "gpt2", vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=1, n_positions=16,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id)).eval()
    data = [dict(tokenizer(line + tokenizer.eos_token)) for line in ("a b c a", "a", "c b")]
    true_count = sum(len(row["input_ids"]) - 1 for row in data)
    counted, results = {}, {}
    for side in ("right", "left"):
        tokenizer.padding_side = side
        batch = DataCollatorForLanguageModeling(tokenizer, mlm=False)(data)
        with torch.no_grad():
            losses = token_losses(model(**batch).logits, batch["labels"])
        counted[side] = int((batch["labels"][:, 1:] != -100).sum())  # the recipe's mask of predicted tokens
        results[side] = perplexity(EvalPrediction(predictions=losses.numpy(), label_ids=batch["labels"].numpy()))
    assert counted["right"] == true_count
    assert counted["left"] == true_count + 2  # the two padded rows' first tokens, "predicted" from padding
    assert not np.isclose(results["left"]["perplexity"], results["right"]["perplexity"])
    text = RECIPES.read_text(encoding="utf-8").split("## Causal language modeling", 1)[1].split("\n## ", 1)[0]
    assert 'padding_side = "right"' in text


def test_float_labels_without_problem_type_train_a_multi_label_head_and_set_it_in_the_config():
    import torch
    from transformers import DataCollatorWithPadding

    tokenizer = word_tokenizer(pad_token="[UNK]")
    model = tiny_classifier(num_labels=3).eval()  # no problem_type; eval: no dropout between the two forwards
    assert model.config.problem_type is None
    batch = DataCollatorWithPadding(tokenizer)([{**tokenizer("a b"), "labels": [1.0, 0.0, 1.0]},
                                                {**tokenizer("c"), "labels": [0.0, 1.0, 1.0]}])
    loss = model(**batch).loss
    assert type(loss.grad_fn).__name__.startswith("BinaryCrossEntropyWithLogits")  # multi-label, inferred
    assert model.config.problem_type == "multi_label_classification"  # and written into the config
    logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    expected = torch.nn.functional.binary_cross_entropy_with_logits(logits, batch["labels"])
    assert loss.item() == pytest.approx(expected.item(), rel=1e-5)
    entry = TROUBLESHOOTING.read_text(encoding="utf-8").split("```error multi-label-without-problem-type", 1)[1]
    assert "Make the labels floats: that alone is\nthe fix" in entry.split("```error", 1)[0]


def _jobs_block(needle: str) -> str:
    [source] = [block.source for block in runnable_blocks(JOBS, "python") if needle in block.source]
    return source


def test_the_causal_lm_pattern_learns_and_counts_eos_with_a_tokenizer_that_appends_none(tmp_path, monkeypatch):
    """As an agent applies it: the pattern, with the stand-in folder swapped for one whose tokenizer appends no EOS."""
    from transformers import DataCollatorForLanguageModeling

    monkeypatch.chdir(tmp_path)
    exec(compile(_jobs_block("def stand_in("), str(JOBS), "exec"), {"__name__": "__main__"})  # noqa: S102
    pattern = _jobs_block('AutoTokenizer.from_pretrained(data / "gpt2")')
    for folder in ("gpt2", "gpt2-plain"):
        namespace = {"__name__": "__main__"}
        swapped = pattern.replace('data / "gpt2"', f'data / "{folder}"')  # the folder an agent changes
        exec(compile(swapped, str(JOBS), "exec"), namespace)  # noqa: S102
        tokenizer, train = namespace["tokenizer"], namespace["train"]
        labels = DataCollatorForLanguageModeling(tokenizer, mlm=False)([train[0], train[1]])["labels"]
        assert all(labels[row][labels[row] != -100][-1] == tokenizer.eos_token_id for row in range(2))  # EOS learned
        assert (labels == tokenizer.eos_token_id).sum() == 2  # once per line, not twice
        words = sum(len(line.split()) for line in Path("data/eval.txt").read_text().splitlines())
        assert namespace["predicted"] == words  # every word after the first, and the EOS
        assert math.isfinite(namespace["perplexity"])


def test_a_smoke_script_without_torch_asks_for_torch_alone_and_skill_md_says_why(tmp_path):
    python = torch_less_python(tmp_path)
    result = run_command([str(python), str(SKILL / "scripts" / "train_smoke.py"), "--output-dir", str(tmp_path / "o")],
                         tmp_path)
    assert result.returncode == 3, result.stderr[-2000:]  # the documented exit code of a missing package
    assert "pip install torch" in result.stderr
    install = (SKILL / "SKILL.md").read_text(encoding="utf-8").split("## Route here", 1)[0]
    assert "`pip install torch`" in install and "pip install 'transformers[torch]'" in install
