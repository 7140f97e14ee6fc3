import argparse
import sys
from pathlib import Path

import torch
from composer import Trainer
from composer.models import ComposerClassifier
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()
sys.path.insert(0, str(args.data))
from model_def import build_module  # noqa: E402

data = torch.load(args.data / "train.pt")
model = ComposerClassifier(module=build_module(5), num_classes=5)
trainer = Trainer(
    model=model, train_dataloader=DataLoader(TensorDataset(data["x"], data["y"]), batch_size=8),
    optimizers=torch.optim.SGD(model.parameters(), lr=0.05), max_duration="6ba", device="cpu", seed=0,
    save_folder=str(args.out / "checkpoints"), progress_bar=False,
    load_path=str(args.data / "pretrained.pt"),
    load_weights_only=True,                       # model tensors only: fresh optimizer and timestamp
    load_strict_model_weights=False,              # the new head is not in the checkpoint
    load_ignore_keys=["state/model/module.2.*"],  # the old 3-class head
)
trainer.fit()
trainer.close()
