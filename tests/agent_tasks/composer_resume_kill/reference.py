import argparse
import re
import sys
import zipfile
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


def repair(folder):
    """After a kill: set aside checkpoints cut short (torch.save writes a zip whose directory comes last) and point
    latest-rank0.pt at the newest complete one (the kill may have hit between removing and re-creating it)."""
    complete = [path for path in folder.glob("ep*-ba*-rank0.pt") if zipfile.is_zipfile(path)]
    for path in set(folder.glob("ep*-ba*-rank0.pt")) - set(complete):
        path.rename(path.with_name(path.name + ".partial"))
    if complete:
        newest = max(complete, key=lambda path: int(re.search(r"-ba(\d+)-", path.name)[1]))
        (folder / "latest-rank0.pt").unlink(missing_ok=True)
        (folder / "latest-rank0.pt").symlink_to(newest.name)


repair(args.out / "checkpoints")
data = torch.load(args.data / "train.pt")
reproducibility.seed_all(0)  # before the model: Trainer(seed=0) seeds only after it exists
model = ComposerClassifier(module=build_module(3), num_classes=3)
trainer = Trainer(
    model=model, train_dataloader=DataLoader(TensorDataset(data["x"], data["y"]), batch_size=8),
    optimizers=torch.optim.SGD(model.parameters(), lr=0.1), max_duration="8ba", device="cpu", seed=0,
    progress_bar=False, save_folder=str(args.out / "checkpoints"), save_interval="1ba",
    autoresume=True, run_name="job")  # relaunches load checkpoints/latest-rank0.pt
if trainer.state.timestamp < trainer.state.max_duration:  # a relaunch after the last checkpoint
    trainer.fit()
torch.save(model.state_dict(), args.out / "final.pt")
trainer.close()
