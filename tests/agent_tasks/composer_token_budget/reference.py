import argparse
import sys
from pathlib import Path

import torch
from composer import Trainer
from composer.core import DataSpec
from torch.utils.data import DataLoader

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()
sys.path.insert(0, str(args.data))
from lm import build_model  # noqa: E402

tensors = torch.load(args.data / "train.pt")
rows = [{name: tensor[index] for name, tensor in tensors.items()} for index in range(len(tensors["labels"]))]
train = DataSpec(DataLoader(rows, batch_size=8),  # without it Composer counts input_ids.numel(): padding included
                 get_num_tokens_in_batch=lambda batch: int(batch["attention_mask"].sum()))
model = build_model()
trainer = Trainer(model=model, train_dataloader=train, optimizers=torch.optim.SGD(model.parameters(), lr=0.1),
                  max_duration="1000tok", device="cpu", seed=0, save_folder=str(args.out / "checkpoints"),
                  progress_bar=False)
trainer.fit()
trainer.close()
