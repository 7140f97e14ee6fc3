"""Naive: autoresume with a stable run name and nothing else: a checkpoint torn by the kill stops the relaunch.

Trap: resumes_past_torn_checkpoint, resumes_without_latest_link, relaunch_after_last_checkpoint
Detail: may conflict with a future checkpoint
"""

import argparse
import sys
from pathlib import Path

import torch
from composer import Trainer
from composer.models import ComposerClassifier
from composer.utils import reproducibility
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()
sys.path.insert(0, str(args.data))
from model_def import build_module  # noqa: E402


data = torch.load(args.data / "train.pt")
reproducibility.seed_all(0)  # before the model: Trainer(seed=0) seeds only after it exists
model = ComposerClassifier(module=build_module(3), num_classes=3)
trainer = Trainer(
    model=model, train_dataloader=DataLoader(TensorDataset(data["x"], data["y"]), batch_size=8),
    optimizers=torch.optim.SGD(model.parameters(), lr=0.1), max_duration="8ba", device="cpu", seed=0,
    progress_bar=False, save_folder=str(args.out / "checkpoints"), save_interval="1ba",
    autoresume=True, run_name="job")  # relaunches load checkpoints/latest-rank0.pt
trainer.fit()
torch.save(model.state_dict(), args.out / "final.pt")
trainer.close()
