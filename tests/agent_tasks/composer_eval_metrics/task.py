"""Evaluation metrics of a custom ComposerModel on two labelled eval sets."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from .. import cp_kit

SKILL = "composer-training"
SUMMARY = "a custom ComposerModel evaluated on val and test: accuracy from Composer's evaluators"

NET = '''"""A classifier for dict batches {"features": float (B, 8), "label": long (B,)}."""

import torch
from composer.models import ComposerModel


class Net(ComposerModel):
    def __init__(self):
        super().__init__()
        self.layers = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, 3))

    def forward(self, batch):
        return self.layers(batch["features"])

    def loss(self, outputs, batch, *args, **kwargs):
        return torch.nn.functional.cross_entropy(outputs, batch["label"])
'''


def make_fixture(data: Path) -> None:
    import torch

    (data / "net.py").write_text(NET)
    for name, seed in (("train", 1), ("val", 2), ("test", 3)):
        tensors = cp_kit.classification_tensors(64 if name == "train" else 160, 3, seed=seed)
        if name != "train":  # 30 of class 0, 10 others: the mean of per-class accuracies is not the fraction correct
            labels = tensors["y"]
            keep = torch.cat([(labels == 0).nonzero().flatten()[:30], (labels != 0).nonzero().flatten()[:10]])
            tensors = {"x": tensors["x"][keep], "y": labels[keep]}
        cp_kit.save_tensors(data / f"{name}.pt", {"features": tensors["x"], "label": tensors["y"]})


def accuracies(data: Path, weights: dict) -> dict:
    """{set: (fraction correct, mean of per-class recalls)} of the Net holding ``weights``."""
    import torch

    spec = importlib.util.spec_from_file_location("agent_task_net", data / "net.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    net = module.Net()
    net.load_state_dict(weights)
    found = {}
    with torch.no_grad():
        for name in ("val", "test"):
            tensors = torch.load(data / f"{name}.pt")
            predicted, labels = net.layers(tensors["features"]).argmax(1), tensors["label"]
            recalls = [float((predicted[labels == c] == c).float().mean()) for c in labels.unique()]
            found[name] = (float((predicted == labels).float().mean()), sum(recalls) / len(recalls))
    return found


def grade(ctx) -> None:
    import torch

    out = ctx.work / "out"
    if not ctx.ran(ctx.run(out)):
        return ctx.skip("metrics_reported", "accuracy_is_fraction_correct")
    metrics = ctx.read_json(out / "metrics.json", "metrics_reported")
    if metrics is None:
        return ctx.skip("accuracy_is_fraction_correct")
    reported = {name: (metrics.get(name) or {}).get("accuracy") for name in ("val", "test")}
    missing = [name for name, value in reported.items() if not isinstance(value, (int, float))]
    if not ctx.check("metrics_reported", not missing, f"no accuracy for {missing} in metrics.json: {metrics}"[:300]
                     if missing else ""):
        return ctx.skip("accuracy_is_fraction_correct")
    try:
        expected = accuracies(ctx.data, torch.load(out / "final.pt", map_location="cpu"))
    except (OSError, RuntimeError) as error:
        return ctx.check("accuracy_is_fraction_correct", False, f"OUT/final.pt: {str(error)[:200]}")
    wrong = [f"{name}: {reported[name]:.4f}, the fraction correct is {fraction:.4f}"
             + (" (that is the macro average of per-class accuracies)" if abs(reported[name] - macro) < 1e-6 else "")
             for name, (fraction, macro) in expected.items() if abs(reported[name] - fraction) > 1e-6]
    ctx.check("accuracy_is_fraction_correct", not wrong, "; ".join(wrong) or ", ".join(
        f"{name} {fraction:.4f}" for name, (fraction, _) in expected.items()))
