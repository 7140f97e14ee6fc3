#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "transformers==5.24.0",
#     "torch==2.7.0",
#     "accelerate==1.16.0",
#     "datasets==5.2.0",
#     "evaluate==0.4.6",
# ]
# ///
"""Train, evaluate and predict with the Transformers Trainer on tiny random models, offline, in seconds.

Each task builds its model from a config (random weights) and a word-level tokenizer built in memory, makes its
data with `datasets`, trains --steps optimizer steps, evaluates, predicts, and checks the results:
  text-classification  AutoModelForSequenceClassification + DataCollatorWithPadding; accuracy computed by the
                       `evaluate` API on the local metric module assets/accuracy_metric.py (no Hub)
  causal-lm            AutoModelForCausalLM + DataCollatorForLanguageModeling(mlm=False); exp(eval_loss)
  seq2seq              AutoModelForSeq2SeqLM + DataCollatorForSeq2Seq + Seq2SeqTrainer(predict_with_generate)
--task all (default) runs the three in one process. On a GPU the Trainer runs in bf16 (`bf16=True`).
"""

from __future__ import annotations

import argparse
import contextlib
import math
import os
import random
import sys
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from _tiny_runs import speed_up_tiny_runs
from smoke_contract import build_parser, positive_int, require, run_main

SCRIPT = "train_smoke.py"
TASKS = ("text-classification", "causal-lm", "seq2seq")
DISTRIBUTIONS = ["transformers", "torch", "accelerate", "datasets", "evaluate", "tokenizers"]
METRIC_MODULE = Path(__file__).resolve().parent.parent / "assets" / "accuracy_metric.py"
SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "</s>"]
POSITIVE, NEGATIVE = ["good", "great", "fine"], ["bad", "awful", "dull"]
NEUTRAL = "the a this movie film plot story was is very quite".split()


def make_parser() -> argparse.ArgumentParser:
    parser = build_parser(SCRIPT, __doc__.split("\n\n")[0],
                          f"python scripts/{SCRIPT} --task all --steps 4 --device auto --json")
    parser.add_argument("--task", choices=["all", *TASKS], default="all", help="which task to run (default: all)")
    parser.add_argument("--steps", type=positive_int, default=4, help="optimizer steps per task (default: 4)")
    parser.add_argument("--batch-size", type=positive_int, default=8, help="per-device batch size (default: 8)")
    return parser


def build_tokenizer():
    """A word-level tokenizer built in memory; with a Hub checkpoint this is AutoTokenizer.from_pretrained(name)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocabulary = {token: index for index, token in enumerate([*SPECIAL_TOKENS, *NEUTRAL, *POSITIVE, *NEGATIVE])}
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    # Append the end-of-sequence token, as GPT-2 style LM data and T5 tokenizers do.
    backend.post_processor = processors.TemplateProcessing(single="$A </s>",
                                                           special_tokens=[("</s>", vocabulary["</s>"])])
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", cls_token="[CLS]",
                                   sep_token="[SEP]", mask_token="[MASK]", eos_token="</s>")


def sentences(count: int, rng: random.Random) -> tuple[list[str], list[int]]:
    """Made-up sentences; the label says whether the sentiment word is positive."""
    texts, labels = [], []
    for _ in range(count):
        label = rng.randint(0, 1)
        words = rng.choices(NEUTRAL, k=rng.randint(3, 7)) + [rng.choice(POSITIVE if label else NEGATIVE)]
        rng.shuffle(words)
        texts.append(" ".join(words))
        labels.append(label)
    return texts, labels


def training_arguments(run, task: str, seq2seq: bool = False, **extra):
    from transformers import Seq2SeqTrainingArguments, TrainingArguments

    arguments_class = Seq2SeqTrainingArguments if seq2seq else TrainingArguments
    return arguments_class(
        output_dir=str(run.output_dir / task),
        max_steps=run.args.steps,
        per_device_train_batch_size=run.args.batch_size,
        per_device_eval_batch_size=run.args.batch_size,
        learning_rate=1e-3,
        logging_steps=1,
        save_strategy="no",
        report_to="none",  # the 5.x default, spelled out so a copied config stays quiet
        seed=run.args.seed,
        use_cpu=run.device == "cpu",
        bf16=run.device == "gpu",
        disable_tqdm=True,
        **extra,
    )


def check_training(run, task: str, trainer, train_output) -> None:
    run.check_equal(f"{task}.train.global_step", train_output.global_step, run.args.steps)
    losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
    finite = len(losses) == run.args.steps and all(math.isfinite(loss) and loss > 0 for loss in losses)
    run.check(f"{task}.train.loss_finite", finite, f"logged losses {[round(loss, 4) for loss in losses]}",
              actual=losses, expected=[{"finite": True, ">": 0}] * run.args.steps)


def text_classification(run, tokenizer, datasets, evaluate) -> None:
    import numpy as np
    from transformers import AutoConfig, AutoModelForSequenceClassification, DataCollatorWithPadding, Trainer

    task = "text-classification"
    rng = random.Random(run.args.seed)
    # With a Hub checkpoint: AutoModelForSequenceClassification.from_pretrained(name, num_labels=2).
    config = AutoConfig.for_model("bert", vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                  num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                                  num_labels=2, pad_token_id=tokenizer.pad_token_id)
    model = AutoModelForSequenceClassification.from_config(config)

    def tokenize(batch):
        return tokenizer(batch["text"], truncation=True, max_length=32)

    def split(count):
        texts, labels = sentences(count, rng)
        return datasets.Dataset.from_dict({"text": texts, "label": labels}).map(tokenize, batched=True)

    train_data, eval_data = split(4 * run.args.batch_size), split(2 * run.args.batch_size)
    accuracy = evaluate.load(str(METRIC_MODULE))  # a local module: works offline; "accuracy" would need the Hub
    run.check(f"{task}.metric.local_module", accuracy.name == "accuracy_metric", f"evaluate module {accuracy.name!r}",
              actual=accuracy.name, expected="accuracy_metric")

    def compute_metrics(eval_prediction):
        logits, labels = eval_prediction
        return accuracy.compute(predictions=np.argmax(logits, axis=-1), references=labels)

    trainer = Trainer(model=model, args=training_arguments(run, task), train_dataset=train_data,
                      eval_dataset=eval_data, processing_class=tokenizer,
                      data_collator=DataCollatorWithPadding(tokenizer), compute_metrics=compute_metrics)
    check_training(run, task, trainer, trainer.train())
    metrics = trainer.evaluate()
    run.check(f"{task}.eval.accuracy", 0.0 <= metrics.get("eval_accuracy", -1) <= 1.0,
              {key: round(value, 4) for key, value in metrics.items() if key in ("eval_loss", "eval_accuracy")},
              actual=metrics.get("eval_accuracy"), expected={">=": 0.0, "<=": 1.0})
    # The "text" column is not a model input: Trainer drops it (remove_unused_columns=True, the default).
    prediction = trainer.predict(eval_data)
    run.check_equal(f"{task}.predict.logits_shape", list(prediction.predictions.shape), [len(eval_data), 2])


def causal_lm(run, tokenizer, datasets) -> None:
    from transformers import AutoConfig, AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer

    task = "causal-lm"
    rng = random.Random(run.args.seed + 1)
    config = AutoConfig.for_model("gpt2", vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=64,
                                  bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id,
                                  pad_token_id=tokenizer.pad_token_id)
    model = AutoModelForCausalLM.from_config(config)

    def split(count):
        texts, _ = sentences(count, rng)
        return datasets.Dataset.from_dict({"text": texts}).map(
            lambda batch: tokenizer(batch["text"], truncation=True, max_length=32), batched=True,
            remove_columns=["text"])

    train_data, eval_data = split(4 * run.args.batch_size), split(2 * run.args.batch_size)
    # mlm=False: labels are a copy of input_ids with padding set to -100; the model shifts them itself.
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    trainer = Trainer(model=model, args=training_arguments(run, task), train_dataset=train_data,
                      eval_dataset=eval_data, processing_class=tokenizer, data_collator=collator)
    check_training(run, task, trainer, trainer.train())
    metrics = trainer.evaluate()
    # Random weights over this vocabulary: exp(eval_loss) stays near the vocabulary size, far from 0 and infinity.
    # Not the true perplexity: GPT-2's token count includes each row's first token (references/task-recipes.md).
    exp_loss = math.exp(metrics["eval_loss"])
    run.check(f"{task}.eval.exp_loss", 1.0 < exp_loss < 10 * len(tokenizer),
              f"exp(eval_loss) {exp_loss:.2f} (vocabulary {len(tokenizer)})", actual=exp_loss,
              expected={">": 1.0, "<": 10 * len(tokenizer)})
    prediction = trainer.predict(eval_data)
    run.check_equal(f"{task}.predict.logits_last_dim", prediction.predictions.shape[-1], len(tokenizer))


def seq2seq(run, tokenizer, datasets) -> None:
    import numpy as np
    from transformers import AutoConfig, AutoModelForSeq2SeqLM, DataCollatorForSeq2Seq, Seq2SeqTrainer

    task = "seq2seq"
    rng = random.Random(run.args.seed + 2)
    config = AutoConfig.for_model("t5", vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=16, num_layers=2,
                                  num_heads=2, pad_token_id=tokenizer.pad_token_id,
                                  eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id)
    model = AutoModelForSeq2SeqLM.from_config(config)

    def tokenize(batch):
        return tokenizer(batch["source"], text_target=batch["target"], truncation=True, max_length=32)

    def split(count):
        texts, _ = sentences(count, rng)  # the task: copy the sentence
        return datasets.Dataset.from_dict({"source": texts, "target": texts}).map(
            tokenize, batched=True, remove_columns=["source", "target"])

    train_data, eval_data = split(4 * run.args.batch_size), split(2 * run.args.batch_size)

    def compute_metrics(eval_prediction):
        predictions, labels = eval_prediction
        labels = np.where(labels == -100, tokenizer.pad_token_id, labels)  # -100 marks padding in labels
        decoded = tokenizer.batch_decode(predictions, skip_special_tokens=True)
        references = tokenizer.batch_decode(labels, skip_special_tokens=True)
        return {"exact_match": float(np.mean([p == r for p, r in zip(decoded, references)]))}

    max_new = 12
    arguments = training_arguments(run, task, seq2seq=True, predict_with_generate=True, generation_max_length=max_new)
    trainer = Seq2SeqTrainer(model=model, args=arguments, train_dataset=train_data, eval_dataset=eval_data,
                             processing_class=tokenizer, data_collator=DataCollatorForSeq2Seq(tokenizer, model=model),
                             compute_metrics=compute_metrics)
    check_training(run, task, trainer, trainer.train())
    metrics = trainer.evaluate()
    run.check(f"{task}.eval.exact_match", 0.0 <= metrics.get("eval_exact_match", -1) <= 1.0,
              {key: round(value, 4) for key, value in metrics.items() if key in ("eval_loss", "eval_exact_match")},
              actual=metrics.get("eval_exact_match"), expected={">=": 0.0, "<=": 1.0})
    generated = trainer.predict(eval_data).predictions
    # Generation stops at generation_max_length, but the rows come back padded to the model's
    # generation_config.max_length (20 unless set): only padding may follow position max_new.
    padding_only = bool((generated[:, max_new:] == tokenizer.pad_token_id).all())
    run.check(f"{task}.predict.generated", generated.shape[0] == len(eval_data) and padding_only,
              {"shape": list(generated.shape), "generation_max_length": max_new,
               "generation_config.max_length": model.generation_config.max_length},
              actual={"rows": generated.shape[0], "padding_only_after_generation_max_length": padding_only},
              expected={"rows": len(eval_data), "padding_only_after_generation_max_length": True})


def body(run) -> None:
    run.resolve_device()
    require("transformers", "pip install 'transformers[torch]'")
    datasets = require("datasets", "pip install datasets")
    speed_up_tiny_runs(run)
    tasks = TASKS if run.args.task == "all" else (run.args.task,)
    with contextlib.redirect_stdout(sys.stderr):  # Trainer prints log dicts; stdout stays for --json
        tokenizer = build_tokenizer()
        for task in tasks:
            with run.step(f"{task}.run"):
                if task == "text-classification":
                    text_classification(run, tokenizer, datasets, require("evaluate", "pip install evaluate"))
                elif task == "causal-lm":
                    causal_lm(run, tokenizer, datasets)
                else:
                    seq2seq(run, tokenizer, datasets)
    hub_cache = Path(os.environ["HF_HOME"]) / "hub"
    downloaded = [str(path) for path in hub_cache.rglob("*") if path.is_file()] if hub_cache.exists() else []
    run.check("offline.nothing_downloaded", not downloaded and os.environ.get("HF_HUB_OFFLINE") == "1",
              f"HF_HUB_OFFLINE={os.environ.get('HF_HUB_OFFLINE')}; files in the Hub cache: {downloaded[:3]}",
              actual={"HF_HUB_OFFLINE": os.environ.get("HF_HUB_OFFLINE"), "hub_cache_files": downloaded},
              expected={"HF_HUB_OFFLINE": "1", "hub_cache_files": []})


def main(argv=None) -> int:
    return run_main(SCRIPT, make_parser(), body, DISTRIBUTIONS, argv)


if __name__ == "__main__":
    sys.exit(main())
