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
parser.add_argument("--job", required=True)
args = parser.parse_args()
sys.path.insert(0, str(args.data))
from model_def import build_module  # noqa: E402

data = torch.load(args.data / "train.pt")
reproducibility.seed_all(0)  # before the model: Trainer(seed=0) seeds only after it exists
model = ComposerClassifier(module=build_module(3), num_classes=3)
trainer = Trainer(
    model=model, train_dataloader=DataLoader(TensorDataset(data["x"], data["y"]), batch_size=8),
    optimizers=torch.optim.SGD(model.parameters(), lr=0.1), max_duration="6ba", device="cpu", seed=0,
    progress_bar=False, save_interval="1ba",
    autoresume=True, run_name=args.job,  # the same name on every launch of this job
    save_folder=str(args.out / "{run_name}"),  # autoresume looks in the folder, whatever the run name: one per job
)
if trainer.state.timestamp < trainer.state.max_duration:  # a relaunch after the last checkpoint
    trainer.fit()
torch.save(model.state_dict(), args.out / f"final-{args.job}.pt")
trainer.close()
