"""Naive: a plain DataLoader, as in a single-process script: every rank would read every sample (Composer refuses it
when the world size is above 1).

Trap: ranks_run
Detail: DistributedSampler
"""

import argparse
import sys
from pathlib import Path

import torch
from composer import Trainer
from composer.models import ComposerClassifier
from composer.utils import dist, reproducibility
from torch.utils.data import DataLoader, TensorDataset

LAUNCH = "composer -n 2 solution.py --data {data} --out {out}"  # -n defaults to the GPU count: 1 on a CPU machine

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
loader = DataLoader(dataset, batch_size=4)
trainer = Trainer(model=model, train_dataloader=loader, optimizers=torch.optim.SGD(model.parameters(), lr=0.1),
                  max_duration="1ep", device="cpu", seed=0, save_folder=str(args.out / "checkpoints"),
                  progress_bar=False)
trainer.fit()  # with WORLD_SIZE=2 set by the launcher: gloo, DDP, checkpoints written by rank 0
if dist.get_global_rank() == 0:
    torch.save(model.state_dict(), args.out / "final.pt")
trainer.close()
