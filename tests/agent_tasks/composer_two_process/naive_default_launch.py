"""Naive: `composer solution.py`, trusting the launcher's default process count.

Trap: launch_command
Detail: starts 1 process on a machine without GPUs
"""

import argparse
import sys
from pathlib import Path

import torch
from composer import Trainer
from composer.models import ComposerClassifier
from composer.utils import dist, reproducibility
from torch.utils.data import DataLoader, TensorDataset

LAUNCH = "composer solution.py --data {data} --out {out}"

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()
sys.path.insert(0, str(args.data))
from model_def import build_module  # noqa: E402

data = torch.load(args.data / "train.pt")
dataset = TensorDataset(data["x"], data["y"])
reproducibility.seed_all(0)
model = ComposerClassifier(module=build_module(3), num_classes=3)
loader = DataLoader(dataset, batch_size=4, sampler=dist.get_sampler(dataset, shuffle=False))  # a shard per rank
trainer = Trainer(model=model, train_dataloader=loader, optimizers=torch.optim.SGD(model.parameters(), lr=0.1),
                  max_duration="1ep", device="cpu", seed=0, save_folder=str(args.out / "checkpoints"),
                  progress_bar=False)
trainer.fit()  # with WORLD_SIZE=2 set by the launcher: gloo, DDP, checkpoints written by rank 0
if dist.get_global_rank() == 0:
    torch.save(model.state_dict(), args.out / "final.pt")
trainer.close()
