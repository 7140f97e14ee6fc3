"""Naive: f1.compute() without average=: the binary F1 of label 1, not the macro F1 asked for.

Trap: metric_values
Detail: binary F1
"""

import argparse
import json
from pathlib import Path

import evaluate
from datasets import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
model = AutoModelForSequenceClassification.from_pretrained(args.data / "model")
data = {name: Dataset.from_list([json.loads(line) for line in open(args.data / f"{name}.jsonl")]).map(
    lambda batch: tokenizer(batch["text"]), batched=True) for name in ("train", "eval")}
accuracy = evaluate.load(str(args.data / "metrics" / "accuracy.py"))  # a path: never the Hub
f1 = evaluate.load(str(args.data / "metrics" / "f1.py"))


def compute_metrics(prediction):
    predicted, labels = prediction.predictions.argmax(-1), prediction.label_ids
    return {**accuracy.compute(predictions=predicted, references=labels),
            **f1.compute(predictions=predicted, references=labels)}


training = TrainingArguments(output_dir=str(args.out / "checkpoints"), max_steps=8, per_device_train_batch_size=8,
                             learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_strategy="no")
trainer = Trainer(model=model, args=training, train_dataset=data["train"], processing_class=tokenizer,
                  compute_metrics=compute_metrics)
trainer.train()
trainer.save_model(args.out / "final")
metrics = trainer.evaluate(data["eval"])
(args.out / "metrics.json").write_text(json.dumps({"accuracy": metrics["eval_accuracy"], "f1": metrics["eval_f1"]}))
