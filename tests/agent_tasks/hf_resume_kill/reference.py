import argparse
import json
import os
import shutil
from pathlib import Path

from datasets import Dataset
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
from transformers.trainer_utils import get_last_checkpoint

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()


def last_complete_checkpoint(output_dir):
    """The newest checkpoint-N with trainer_state.json (written last); deletes newer ones a kill cut short."""
    last = get_last_checkpoint(output_dir)
    while last is not None and not os.path.exists(os.path.join(last, "trainer_state.json")):
        shutil.rmtree(last)
        last = get_last_checkpoint(output_dir)
    return last  # None on the first launch: train from scratch


tokenizer = AutoTokenizer.from_pretrained(args.data / "model")
model = AutoModelForSequenceClassification.from_pretrained(args.data / "model")
rows = [json.loads(line) for line in open(args.data / "train.jsonl")]
train = Dataset.from_list(rows).map(lambda batch: tokenizer(batch["text"], truncation=True), batched=True)
training = TrainingArguments(output_dir=str(args.out / "checkpoints"), max_steps=6, per_device_train_batch_size=8,
                             learning_rate=1e-3, seed=0, use_cpu=True, report_to="none", save_steps=2)
trainer = Trainer(model=model, args=training, train_dataset=train, processing_class=tokenizer)
trainer.train(resume_from_checkpoint=last_complete_checkpoint(training.output_dir))
trainer.save_model(args.out / "final")
