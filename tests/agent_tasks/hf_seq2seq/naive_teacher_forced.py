"""Naive: the plain Trainer and TrainingArguments, predictions read as the argmax of predict()'s logits.

Trap: predictions_are_generated
Detail: teacher-forced
"""

import argparse
import json
from pathlib import Path

from datasets import Dataset
from transformers import AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, Trainer, TrainingArguments

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
model = AutoModelForSeq2SeqLM.from_pretrained(args.data / "model")


def load(name):
    rows = [json.loads(line) for line in open(args.data / name)]
    encode = lambda batch: tokenizer(batch["source"], text_target=batch["target"], truncation=True)  # noqa: E731
    return rows, Dataset.from_list(rows).map(encode, batched=True, remove_columns=["id", "source", "target"])


training = TrainingArguments(
    output_dir=str(args.out / "checkpoints"), max_steps=8, per_device_train_batch_size=8,
    per_device_eval_batch_size=8, learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_strategy="no")
trainer = Trainer(model=model, args=training, train_dataset=load("train.jsonl")[1], processing_class=tokenizer,
                         data_collator=DataCollatorForSeq2Seq(tokenizer, model=model))
trainer.train()
trainer.save_model(args.out / "final")

rows, evaluation = load("eval.jsonl")
predictions = trainer.predict(evaluation).predictions[0].argmax(-1)  # logits -> token ids
texts = tokenizer.batch_decode(predictions, skip_special_tokens=True)
with open(args.out / "predictions.jsonl", "w") as file:
    file.writelines(json.dumps({"id": row["id"], "prediction": text.strip()}) + "\n" for row, text in zip(rows, texts))
