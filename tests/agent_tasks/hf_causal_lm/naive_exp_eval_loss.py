"""Naive: perplexity as exp(eval_loss), the recipe most examples print.

Trap: true_perplexity
Detail: exp(eval_loss)
"""

import argparse
import json
import math
from pathlib import Path

from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments)

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
tokenizer.add_special_tokens({"pad_token": "[PAD]"})  # not eos: the collator would mask every real </s> label
model = AutoModelForCausalLM.from_pretrained(args.data / "model")
model.resize_token_embeddings(len(tokenizer))
model.config.pad_token_id = tokenizer.pad_token_id


def load(name):
    lines = (args.data / name).read_text().splitlines()
    return Dataset.from_dict({"text": lines}).map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])


collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
training = TrainingArguments(output_dir=str(args.out / "checkpoints"), max_steps=8, per_device_train_batch_size=8,
                             per_device_eval_batch_size=8,
                             learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_strategy="no")
trainer = Trainer(model=model, args=training, train_dataset=load("train.txt"), processing_class=tokenizer,
                  data_collator=collator)
trainer.train()
trainer.save_model(args.out / "final")

metrics = trainer.evaluate(load("eval.txt"))
(args.out / "metrics.json").write_text(json.dumps({"perplexity": math.exp(metrics["eval_loss"])}))
