"""Fixture pieces the Composer tasks share: the network definition agents import from the data folder, tensors
saved with torch.save, a pretrained Composer checkpoint, and what graders read back. Imports are lazy."""

from __future__ import annotations

from pathlib import Path

MODEL_DEF = '''"""The network of every model here: 8 features in, num_classes logits out. Wrapped in
ComposerClassifier its parameters are module.0.* (the backbone) and module.2.* (the head)."""

import torch


def build_module(num_classes: int) -> torch.nn.Module:
    return torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.ReLU(), torch.nn.Linear(16, num_classes))
'''


def write_model_def(data: Path) -> None:
    (data / "model_def.py").write_text(MODEL_DEF)


def build_module(num_classes: int):
    namespace: dict = {}
    exec(compile(MODEL_DEF, "model_def.py", "exec"), namespace)  # noqa: S102 - our own text
    return namespace["build_module"](num_classes)


def classification_tensors(samples: int, classes: int, seed: int) -> dict:
    """Features and the class a fixed random linear map puts first: learnable in a few batches."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    features = torch.randn(samples, 8, generator=generator)
    projection = torch.randn(8, classes, generator=torch.Generator().manual_seed(99))
    return {"x": features, "y": (features @ projection).argmax(dim=1)}


def save_tensors(path: Path, tensors: dict) -> None:
    import torch

    torch.save(tensors, path)


def pretrained_checkpoint(path: Path, classes: int = 3, batches: int = 4) -> None:
    """A Composer checkpoint of ComposerClassifier(build_module(classes)) after ``batches`` SGD steps, from a seed no
    solution uses (1234), so its backbone is recognizable."""
    import shutil
    import tempfile

    import torch
    from composer import Trainer
    from composer.models import ComposerClassifier
    from torch.utils.data import DataLoader, TensorDataset

    torch.manual_seed(1234)
    model = ComposerClassifier(module=build_module(classes), num_classes=classes)
    tensors = classification_tensors(32, classes, seed=7)
    folder = Path(tempfile.mkdtemp())
    trainer = Trainer(model=model, train_dataloader=DataLoader(TensorDataset(tensors["x"], tensors["y"]), batch_size=8),
                      optimizers=torch.optim.SGD(model.parameters(), lr=0.1), max_duration=f"{batches}ba",
                      device="cpu", progress_bar=False, run_name="pretrain", save_folder=str(folder), seed=1234)
    trainer.fit()
    trainer.close()
    shutil.copy(folder / f"ep0-ba{batches}-rank0.pt", path)
    shutil.rmtree(folder)


def checkpoint_state(path: Path) -> dict:
    """The ``state`` of a Composer checkpoint (a pickle: only ever the ones these tasks wrote)."""
    import torch

    return torch.load(path, map_location="cpu", weights_only=False)["state"]


def batch_of(state: dict) -> int:
    return int(state["timestamp"]["Timestamp"]["batch"])
