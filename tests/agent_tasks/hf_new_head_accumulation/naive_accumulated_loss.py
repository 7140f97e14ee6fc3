"""Naive: the new head loaded right, gradient accumulation as documented, no accepts_loss_kwargs fix.

Trap: logged_loss_scale
Detail: accepts_loss_kwargs
"""

import argparse
import json
from pathlib import Path

from datasets import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
model = AutoModelForSequenceClassification.from_pretrained(args.data / "model", num_labels=4,
                                                           ignore_mismatched_sizes=True)  # a new, random 4-label head
rows = [json.loads(line) for line in open(args.data / "train.jsonl")]
train = Dataset.from_list(rows).map(lambda batch: tokenizer(batch["text"], truncation=True), batched=True)
training = TrainingArguments(output_dir=str(args.out / "checkpoints"), max_steps=8, per_device_train_batch_size=4,
                             gradient_accumulation_steps=4, learning_rate=5e-4, seed=0, logging_steps=1,
                             use_cpu=True, report_to="none")
trainer = Trainer(model=model, args=training, train_dataset=train, processing_class=tokenizer)
trainer.train()
trainer.save_model(args.out / "final")
