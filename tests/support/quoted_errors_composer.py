"""Producers for the error messages the composer-training skill quotes: each makes mosaicml 0.32.1 raise (or warn)
the real message. Imports are inside the producers, so collecting this module does not import composer."""

from __future__ import annotations

import warnings
from pathlib import Path

from .composer_kit import classifier as _classifier, loader as _loader, trainer as _trainer
from .quoted_errors import produces, raised


def _checkpoint(tmp: Path, batches: int = 3) -> Path:
    """A real checkpoint after ``batches`` batches; returns the last file."""
    trainer = _trainer(max_duration=f"{batches}ba", save_folder=str(tmp / "saved"), save_interval="1ba")
    trainer.fit()
    trainer.close()
    return tmp / "saved" / f"ep0-ba{batches}-rank0.pt"


def _warned(action) -> str:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        action()
    messages = [f"{w.category.__name__}: {w.message}" for w in caught]
    assert messages, "no warning"
    return " | ".join(messages)


@produces("trainer-positional")
def _(tmp):
    from composer import Trainer

    return raised(lambda: Trainer(_classifier()))


@produces("no-optimizer")
def _(tmp):
    from composer import Trainer

    return _warned(lambda: Trainer(model=_classifier(), train_dataloader=_loader(), max_duration="1ba",
                                   progress_bar=False))


@produces("max-duration-dur")
def _(tmp):
    return raised(lambda: _trainer(max_duration="0.5dur"))


@produces("max-duration-wall-clock")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1h"))


@produces("time-not-integer")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1.5ba"))


@produces("invalid-time-string")
def _(tmp):
    return raised(lambda: _trainer(max_duration="10"))


@produces("max-duration-elapsed")
def _(tmp):
    checkpoint = _checkpoint(tmp)
    return raised(lambda: _trainer(max_duration="3ba", load_path=str(checkpoint)).fit())


@produces("epochs-without-length")
def _(tmp):
    import torch
    from torch.utils.data import DataLoader, IterableDataset

    class Stream(IterableDataset):
        def __iter__(self):
            while True:
                yield torch.randn(8), torch.tensor(0)

    return raised(lambda: _trainer(train_dataloader=DataLoader(Stream(), batch_size=4), max_duration="1ep").fit())


@produces("autoresume-no-run-name")
def _(tmp):
    return raised(lambda: _trainer(max_duration="2ba", autoresume=True, save_folder=str(tmp / "runs")))


@produces("autoresume-no-save-folder")
def _(tmp):
    return raised(lambda: _trainer(max_duration="2ba", autoresume=True, run_name="job"))


@produces("autoresume-no-latest-filename")
def _(tmp):
    return raised(lambda: _trainer(max_duration="2ba", autoresume=True, run_name="job", save_folder=str(tmp / "runs"),
                                   save_latest_filename=None))


@produces("folder-conflict")
def _(tmp):
    _checkpoint(tmp)
    return raised(lambda: _trainer(max_duration="3ba", save_folder=str(tmp / "saved"), save_interval="1ba").fit())


@produces("load-path-missing")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1ba", load_path=str(tmp / "nowhere.pt")))


@produces("head-size-mismatch")
def _(tmp):
    checkpoint = _checkpoint(tmp)
    return raised(lambda: _trainer(model=_classifier(5), max_duration="1ba", load_path=str(checkpoint),
                                   load_weights_only=True))


@produces("head-missing-keys")
def _(tmp):
    checkpoint = _checkpoint(tmp)
    return raised(lambda: _trainer(model=_classifier(5), max_duration="1ba", load_path=str(checkpoint),
                                   load_weights_only=True, load_ignore_keys=["state/model/module.2.*"]))


@produces("head-stale-optimizer-state")
def _(tmp):
    import torch

    model = _classifier()
    saver = _trainer(model=model, optimizers=torch.optim.Adam(model.parameters()), max_duration="1ba",
                     save_folder=str(tmp / "saved"))
    saver.fit()
    saver.close()
    changed = _classifier(5)
    return raised(_trainer(model=changed, optimizers=torch.optim.Adam(changed.parameters()), max_duration="2ba",
                           load_path=str(tmp / "saved" / "ep0-ba1-rank0.pt"),
                           load_ignore_keys=["state/model/module.2.*"]).fit)


@produces("ignore-every-key-strict")
def _(tmp):
    import torch
    from composer.models import ComposerClassifier

    checkpoint = _checkpoint(tmp)
    single_layer = ComposerClassifier(module=torch.nn.Linear(8, 16), num_classes=16)  # the whole model is "the head"
    return raised(lambda: _trainer(model=single_layer, max_duration="1ba", load_path=str(checkpoint),
                                   load_weights_only=True, load_ignore_keys=["state/model/*"]))


@produces("ignore-key-matches-nothing")
def _(tmp):
    checkpoint = _checkpoint(tmp)
    return _warned(lambda: _trainer(max_duration="1ba", load_path=str(checkpoint), load_weights_only=True,
                                    load_strict_model_weights=False, load_ignore_keys=["state/model/head.*"]))


@produces("torch-load-refuses-checkpoint")
def _(tmp):
    import torch

    checkpoint = _checkpoint(tmp)
    return raised(lambda: torch.load(checkpoint))


@produces("amp-on-cpu")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1ba", device="cpu", precision="amp_bf16"))


@produces("precision-unknown")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1ba", precision="bf16"))


@produces("gpu-without-cuda")
def _(tmp):
    import pytest
    import torch

    if torch.cuda.is_available():
        pytest.skip("this message only exists on a machine without CUDA")
    return raised(lambda: _trainer(max_duration="1ba", device="gpu"))


@produces("auto-microbatch-on-cpu")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1ba", device="cpu", device_train_microbatch_size="auto"))


@produces("microbatch-float")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1ba", device_train_microbatch_size=0.5).fit())


@produces("batch-size-ambiguous")
def _(tmp):
    import torch
    from composer import ComposerModel

    class Pairs(ComposerModel):
        def __init__(self):
            super().__init__()
            self.net = torch.nn.Linear(8, 1)

        def forward(self, batch):
            return self.net(batch["features"]).sum()

        def loss(self, outputs, batch, *args, **kwargs):
            return outputs

    rows = [{"features": torch.randn(8), "neighbours": torch.randn(8)} for _ in range(8)]

    def collate(items):  # 4 samples but 8 neighbour rows: dim 0 disagrees
        return {"features": torch.stack([item["features"] for item in items]),
                "neighbours": torch.stack([item["neighbours"] for item in items] * 2)}

    from torch.utils.data import DataLoader

    model = Pairs()
    return raised(lambda: _trainer(model=model, train_dataloader=DataLoader(rows, batch_size=4, collate_fn=collate),
                                   optimizers=torch.optim.SGD(model.parameters(), lr=0.1), max_duration="1ba").fit())


@produces("dataloader-active-iterator")
def _(tmp):
    from composer.core import DataSpec
    from torch.utils.data import DataLoader

    loader = DataLoader(_loader().dataset, batch_size=4, num_workers=1, persistent_workers=True)
    next(iter(loader))  # leaves the persistent worker's iterator running
    try:
        return raised(lambda: DataSpec(loader))
    finally:
        loader._iterator._shutdown_workers()


@produces("auto-microbatch-warning")
def _(tmp):
    def construct():
        try:
            _trainer(max_duration="1ba", device="cpu", device_train_microbatch_size="auto")
        except ValueError:
            pass  # on CPU the warning comes first, then the error quoted as auto-microbatch-on-cpu

    return _warned(construct)


@produces("max-duration-missing")
def _(tmp):
    return raised(lambda: _trainer().fit())


# ---- killed jobs and damaged checkpoints ----

def _damaged(tmp: Path, name: str, content: bytes) -> Path:
    path = tmp / name
    path.write_bytes(content)
    return path


def _load(path: Path):
    return _trainer(max_duration="1ba", load_path=str(path))


@produces("autoresume-torn-checkpoint")
def _(tmp):
    """The folder a kill during the save of checkpoint 3 leaves (measured by checkpoint_smoke.py --mode crash):
    checkpoints 1 and 2, latest -> 2, and part of checkpoint 3 under its final name; then the same command again."""
    def job():
        return _trainer(max_duration="4ba", autoresume=True, run_name="job", save_folder=str(tmp / "{run_name}"),
                        save_interval="1ba")

    first = job()
    first.fit(duration="2ba")
    first.close()
    folder = tmp / "job"
    _damaged(folder, "ep0-ba3-rank0.pt", (folder / "ep0-ba2-rank0.pt").read_bytes()[:10_000])
    relaunched = job()
    assert int(relaunched.state.timestamp.batch) == 2
    return raised(relaunched.fit)


@produces("checkpoint-truncated")
def _(tmp):
    import torch
    from composer.models import ComposerClassifier

    wide = ComposerClassifier(module=torch.nn.Sequential(torch.nn.Linear(8, 8192), torch.nn.ReLU(),
                                                         torch.nn.Linear(8192, 3)), num_classes=3)
    saver = _trainer(model=wide, max_duration="1ba", save_folder=str(tmp / "saved"))
    saver.fit()
    saver.close()
    whole = (tmp / "saved" / "ep0-ba1-rank0.pt").read_bytes()
    assert len(whole) > 300_000, len(whole)  # a realistic size: the cut lands far from the start
    return raised(lambda: _load(_damaged(tmp, "cut.pt", whole[:len(whole) // 2])))


@produces("checkpoint-truncated-small")
def _(tmp):
    whole = _checkpoint(tmp).read_bytes()
    return raised(lambda: _load(_damaged(tmp, "cut.pt", whole[:len(whole) // 2])))


@produces("checkpoint-empty")
def _(tmp):
    return raised(lambda: _load(_damaged(tmp, "empty.pt", b"")))


@produces("checkpoint-not-torch")
def _(tmp):
    return raised(lambda: _load(_damaged(tmp, "notes.pt", b"not a checkpoint\n")))


@produces("checkpoint-not-composer")
def _(tmp):
    import torch

    path = tmp / "weights.pt"
    torch.save(_classifier().state_dict(), path)
    return raised(lambda: _load(path))


# ---- references/questions.md ----

@produces("token-counter-returns-tensor")
def _(tmp):
    from composer.core import DataSpec

    spec = DataSpec(_loader(), get_num_tokens_in_batch=lambda batch: batch[0].new_tensor(7))
    return raised(lambda: _trainer(train_dataloader=spec, max_duration="1ba").fit())


@produces("save-folder-lone-brace")
def _(tmp):
    return raised(lambda: _trainer(max_duration="1ba", save_folder=str(tmp / "runs{")))


@produces("save-folder-brace-autoresume")
def _(tmp):
    def job():
        return _trainer(max_duration="2ba", autoresume=True, run_name="job", save_folder=str(tmp / "runs{x}"))

    first = job()
    first.fit(duration="1ba")
    first.close()
    return raised(job)


@produces("eval-loader-without-batch-size")
def _(tmp):
    from torch.utils.data import BatchSampler, DataLoader, SequentialSampler

    data = _loader(10).dataset
    batches = DataLoader(data, batch_sampler=BatchSampler(SequentialSampler(data), batch_size=4, drop_last=False))
    return raised(lambda: _trainer(eval_dataloader=batches).eval())


@produces("classifier-num-classes-mismatch")
def _(tmp):
    import torch
    from composer.models import ComposerClassifier

    class Net(torch.nn.Linear):
        num_classes = 3

    return _warned(lambda: ComposerClassifier(module=Net(8, 3), num_classes=5))


def torchless_site(tmp: Path) -> Path:
    """tmp/site-packages: a link to every installed distribution but torch's, to be an interpreter's only site
    folder (python -I -S, the folder appended to sys.path): the installed files, with torch not installed."""
    import importlib.util

    installed = Path(importlib.util.find_spec("composer").origin).parent.parent
    site = tmp / "site-packages"
    site.mkdir(parents=True)
    for entry in installed.iterdir():
        if entry.name != "torch" and not entry.name.startswith("torch-"):
            (site / entry.name).symlink_to(entry)
    return site


@produces("composer-without-torch")
def _(tmp):
    import subprocess
    import sys

    probe = f"import sys; sys.path.append({str(torchless_site(tmp))!r}); import composer"
    done = subprocess.run([sys.executable, "-I", "-S", "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0, "composer imported without torch"
    return done.stderr.strip().splitlines()[-1]
