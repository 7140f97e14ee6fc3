"""What every tiny Trainer run of this skill's smoke scripts sets up first (train_smoke.py, checkpoint_smoke.py)."""

from __future__ import annotations


def speed_up_tiny_runs(run) -> None:
    import gc

    import torch
    import transformers.trainer  # noqa: F401 - the heavy import, before the heap is frozen

    if run.device == "cpu":
        torch.set_num_threads(1)  # tiny tensors: one thread beats several that synchronize on every op
    gc.freeze()  # Trainer.train() calls gc.collect(): keeping the imported modules out of it saves ~0.4 s a run
