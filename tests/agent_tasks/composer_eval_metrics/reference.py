import argparse
import json
import sys
from pathlib import Path

import torch
from composer import Trainer
from composer.core import Evaluator
from composer.utils import reproducibility
from torch.utils.data import DataLoader
from torchmetrics.classification import MulticlassAccuracy

parser = argparse.ArgumentParser()
parser.add_argument("--data", type=Path, required=True)
parser.add_argument("--out", type=Path, required=True)
args = parser.parse_args()
sys.path.insert(0, str(args.data))
from net import Net  # noqa: E402


class EvaluatedNet(Net):  # the default get_metrics returns {}: evaluation would run and report nothing
    def get_metrics(self, is_train=False):
        return {"accuracy": MulticlassAccuracy(num_classes=3, average="micro")}  # the default "macro" is per class

    def update_metric(self, batch, outputs, metric):
        metric.update(outputs, batch["label"])


def loader(name):
    tensors = torch.load(args.data / f"{name}.pt")
    return DataLoader([{key: value[i] for key, value in tensors.items()} for i in range(len(tensors["label"]))],
                      batch_size=8)


reproducibility.seed_all(0)
model = EvaluatedNet()
trainer = Trainer(model=model, train_dataloader=loader("train"), max_duration="8ba", device="cpu", seed=0,
                  eval_dataloader=[Evaluator(label=name, dataloader=loader(name)) for name in ("val", "test")],
                  optimizers=torch.optim.SGD(model.parameters(), lr=0.1), progress_bar=False)
trainer.fit()  # evaluates both sets when it ends
args.out.mkdir(parents=True)
metrics = {label: {name: float(metric.compute()) for name, metric in found.items()}
           for label, found in trainer.state.eval_metrics.items()}
(args.out / "metrics.json").write_text(json.dumps(metrics))
torch.save(model.state_dict(), args.out / "final.pt")
trainer.close()
