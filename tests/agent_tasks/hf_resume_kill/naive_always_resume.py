"""Naive: trainer.train(resume_from_checkpoint=True) on every launch, the first one included.

Trap: fresh_start_runs
Detail: No valid checkpoint found
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
model = AutoModelForSequenceClassification.from_pretrained(args.data / "model")
rows = [json.loads(line) for line in open(args.data / "train.jsonl")]
train = Dataset.from_list(rows).map(lambda batch: tokenizer(batch["text"], truncation=True), batched=True)
training = TrainingArguments(output_dir=str(args.out / "checkpoints"), max_steps=6, per_device_train_batch_size=8,
                             learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_steps=2)
trainer = Trainer(model=model, args=training, train_dataset=train, processing_class=tokenizer)
trainer.train(resume_from_checkpoint=True)
trainer.save_model(args.out / "final")
