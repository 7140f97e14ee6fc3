"""Train for a budget of real (non-padding) tokens: Composer's token time with DataSpec(get_num_tokens_in_batch)."""

from __future__ import annotations

from pathlib import Path

from .. import cp_kit

SKILL = "composer-training"
SUMMARY = "train to a budget of 1000 real tokens (padding excluded); the timestamp counts them"
BUDGET, BATCH = 1000, 8

LM = '''"""A tiny sequence classifier for dict batches {"input_ids", "attention_mask", "labels"}; 0 pads."""

import torch
from composer.models import ComposerModel


class TokenClassifier(ComposerModel):
    def __init__(self, vocab_size: int = 32, classes: int = 2):
        super().__init__()
        self.embed = torch.nn.Embedding(vocab_size, 16, padding_idx=0)
        self.head = torch.nn.Linear(16, classes)

    def forward(self, batch):
        mask = batch["attention_mask"].unsqueeze(-1).float()
        pooled = (self.embed(batch["input_ids"]) * mask).sum(1) / mask.sum(1).clamp(min=1)
        return self.head(pooled)

    def loss(self, outputs, batch, *args, **kwargs):
        return torch.nn.functional.cross_entropy(outputs, batch["labels"])


def build_model() -> TokenClassifier:
    return TokenClassifier()
'''


def make_fixture(data: Path) -> None:
    import torch

    generator = torch.Generator().manual_seed(17)
    lengths = torch.randint(3, 17, (128,), generator=generator)
    mask = (torch.arange(16)[None, :] < lengths[:, None]).long()
    ids = torch.randint(1, 32, (128, 16), generator=generator) * mask  # right-padded with 0
    cp_kit.save_tensors(data / "train.pt", {"input_ids": ids, "attention_mask": mask,
                                            "labels": (ids == 7).any(dim=1).long()})
    (data / "lm.py").write_text(LM)


def grade(ctx) -> None:
    import torch

    out = ctx.work / "out"
    run = ctx.run(out)
    if not ctx.ran(run):
        return ctx.skip("stopped_at_token_budget", "timestamp_counts_real_tokens")
    real = torch.load(ctx.data / "train.pt")["attention_mask"].sum(dim=1)
    per_batch = [int(real[start:start + BATCH].sum()) for start in range(0, len(real), BATCH)]
    total, expected = 0, 0
    while total < BUDGET:
        total, expected = total + per_batch[expected], expected + 1
    padded = -(-BUDGET // (BATCH * 16))  # batches if every padded position counted
    ctx.check("stopped_at_token_budget", run.steps == expected,
              f"{run.steps} batches trained; {expected} reach {BUDGET} real tokens ({total})"
              + (f": {padded} batches is the budget with padding counted as tokens" if run.steps == padded else ""))
    latest = out / "checkpoints" / "latest-rank0.pt"
    if not latest.exists():
        return ctx.check("timestamp_counts_real_tokens", False, "no OUT/checkpoints/latest-rank0.pt")
    counted = int(cp_kit.checkpoint_state(latest)["timestamp"]["Timestamp"]["token"])
    trained = sum(per_batch[:run.steps or 0])
    ctx.check("timestamp_counts_real_tokens", counted == trained,
              f"the final timestamp counts {counted} tokens; the {run.steps} batches trained hold {trained} real ones"
              + (" (padding counted)" if counted == (run.steps or 0) * BATCH * 16 else ""))
