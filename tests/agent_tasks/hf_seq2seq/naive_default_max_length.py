"""Naive: predict_with_generate without generation_max_length: generation runs to the model's max_length (20).

Trap: predictions_are_generated
Detail: longer than max_length 8
"""

import argparse
import json
from pathlib import Path

import numpy as np
from datasets import Dataset
from transformers import (AutoModelForSeq2SeqLM, AutoTokenizer, DataCollatorForSeq2Seq, Seq2SeqTrainer,
                          Seq2SeqTrainingArguments)

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


training = Seq2SeqTrainingArguments(
    output_dir=str(args.out / "checkpoints"), max_steps=8, per_device_train_batch_size=8,
    per_device_eval_batch_size=8, learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_strategy="no",
    predict_with_generate=True)
trainer = Seq2SeqTrainer(model=model, args=training, train_dataset=load("train.jsonl")[1], processing_class=tokenizer,
                         data_collator=DataCollatorForSeq2Seq(tokenizer, model=model))
trainer.train()
trainer.save_model(args.out / "final")

rows, evaluation = load("eval.jsonl")
predictions = trainer.predict(evaluation).predictions
predictions = np.where(predictions < 0, tokenizer.pad_token_id, predictions)  # -100 pads batches of other lengths
texts = tokenizer.batch_decode(predictions, skip_special_tokens=True)
with open(args.out / "predictions.jsonl", "w") as file:
    file.writelines(json.dumps({"id": row["id"], "prediction": text.strip()}) + "\n" for row, text in zip(rows, texts))
