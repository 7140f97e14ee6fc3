import os

os.environ["HF_HUB_OFFLINE"] = "1"  # before the first Hugging Face import: datasets and evaluate read them then
os.environ["HF_EVALUATE_OFFLINE"] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
from pathlib import Path  # noqa: E402

import evaluate  # noqa: E402
from datasets import load_dataset  # noqa: E402
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments  # noqa: E402

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()

tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
model = AutoModelForSequenceClassification.from_pretrained(args.data / "model")
files = {"train": str(args.data / "train.jsonl"), "eval": str(args.data / "eval.jsonl")}
data = load_dataset("json", data_files=files).map(lambda batch: tokenizer(batch["text"]), batched=True)
accuracy = evaluate.load(str(args.data / "metrics" / "accuracy.py"))  # a path: never the Hub
f1 = evaluate.load(str(args.data / "metrics" / "f1.py"))


def compute_metrics(prediction):
    predicted, labels = prediction.predictions.argmax(-1), prediction.label_ids
    return {**accuracy.compute(predictions=predicted, references=labels),
            **f1.compute(predictions=predicted, references=labels, average="macro")}  # the default is binary


training = TrainingArguments(output_dir=str(args.out / "checkpoints"), max_steps=8, per_device_train_batch_size=8,
                             learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_strategy="no")
trainer = Trainer(model=model, args=training, train_dataset=data["train"], processing_class=tokenizer,
                  compute_metrics=compute_metrics)
trainer.train()
trainer.save_model(args.out / "final")
metrics = trainer.evaluate(data["eval"])
(args.out / "metrics.json").write_text(json.dumps({"accuracy": metrics["eval_accuracy"], "f1": metrics["eval_f1"]}))
