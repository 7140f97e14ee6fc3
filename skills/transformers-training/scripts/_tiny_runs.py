"""What every tiny Trainer run of this skill's smoke scripts sets up first (train_smoke.py, checkpoint_smoke.py)."""

from __future__ import annotations

import gc

from smoke_contract import require


def speed_up_tiny_runs(run) -> None:
    torch = require("torch", "pip install torch")
    # The heavy import, before the heap is frozen; through require, so a memory limit that keeps it from loading
    # is exit 3 "installed but failed to load", never an "unexpected MemoryError"
    require("transformers.trainer", "pip install 'transformers[torch]'")

    if run.device == "cpu":
        torch.set_num_threads(1)  # tiny tensors: one thread beats several that synchronize on every op
    gc.freeze()  # Trainer.train() calls gc.collect(): keeping the imported modules out of it saves ~0.4 s a run
