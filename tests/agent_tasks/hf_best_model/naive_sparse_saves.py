"""Naive: checkpoints every 4 steps, evaluations every 2 (a valid round multiple): a best evaluation on an unsaved
step is never loaded.

Trap: best_model_loaded
Detail: never saved
"""

import argparse
import json
from pathlib import Path

from datasets import Dataset
from transformers import (AutoModelForSequenceClassification, AutoTokenizer, DataCollatorWithPadding, Trainer,
                          TrainingArguments)

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
model = AutoModelForSequenceClassification.from_pretrained(args.data / "model")


def load(name):
    rows = [json.loads(line) for line in open(args.data / name)]
    return Dataset.from_list(rows).map(lambda batch: tokenizer(batch["text"], truncation=True), batched=True)


def accuracy(prediction):
    return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}


training = TrainingArguments(
    output_dir=str(args.out / "checkpoints"), max_steps=16, per_device_train_batch_size=8,
    per_device_eval_batch_size=8, learning_rate=8e-3, seed=0, use_cpu=True, report_to="none",
    eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=4,
    load_best_model_at_end=True, metric_for_best_model="accuracy")  # without it: the lowest eval_loss
trainer = Trainer(model=model, args=training, train_dataset=load("train.jsonl"), eval_dataset=load("eval.jsonl"),
                  processing_class=tokenizer, data_collator=DataCollatorWithPadding(tokenizer),
                  compute_metrics=accuracy)
trainer.train()
trainer.save_model(args.out / "final")
