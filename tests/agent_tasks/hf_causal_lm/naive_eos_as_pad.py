"""Naive: the pad token the no-pad error message suggests, tokenizer.pad_token = tokenizer.eos_token.

Trap: eos_is_trained, true_perplexity
Detail: leaves out every </s>
"""

import argparse
import json
import math
from pathlib import Path

import torch
from datasets import Dataset
from transformers import (AutoModelForCausalLM, AutoTokenizer, DataCollatorForLanguageModeling, Trainer,
                          TrainingArguments)

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
tokenizer.pad_token = tokenizer.eos_token
model = AutoModelForCausalLM.from_pretrained(args.data / "model")
model.config.pad_token_id = tokenizer.pad_token_id


def load(name):
    lines = (args.data / name).read_text().splitlines()
    return Dataset.from_dict({"text": lines}).map(lambda b: tokenizer(b["text"]), batched=True, remove_columns=["text"])


collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
training = TrainingArguments(output_dir=str(args.out / "checkpoints"), max_steps=8, per_device_train_batch_size=8,
                             learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_strategy="no")
trainer = Trainer(model=model, args=training, train_dataset=load("train.txt"), processing_class=tokenizer,
                  data_collator=collator)
trainer.train()
trainer.save_model(args.out / "final")

# exp(eval_loss) would average per-batch means; perplexity is a mean over predicted tokens
evaluation, nll, tokens = load("eval.txt"), 0.0, 0
model.eval()
with torch.no_grad():
    for start in range(0, len(evaluation), 8):
        batch = collator([evaluation[i] for i in range(start, min(start + 8, len(evaluation)))])
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits[:, :-1]
        labels = batch["labels"][:, 1:]  # -100 on padding
        nll += torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels, reduction="sum").item()
        tokens += int((labels != -100).sum())
(args.out / "metrics.json").write_text(json.dumps({"perplexity": math.exp(nll / tokens)}))
