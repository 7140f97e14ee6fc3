"""Fine-tune a Composer checkpoint into a model with a changed head (more classes)."""

from __future__ import annotations

from pathlib import Path

from .. import cp_kit

SKILL = "composer-training"
SUMMARY = "fine-tune a 3-class Composer checkpoint into a 5-class head: backbone kept, 6 fresh batches"
BATCHES = 6


def make_fixture(data: Path) -> None:
    cp_kit.write_model_def(data)
    cp_kit.pretrained_checkpoint(data / "pretrained.pt", classes=3)
    cp_kit.save_tensors(data / "train.pt", cp_kit.classification_tensors(96, 5, seed=3))


def grade(ctx) -> None:
    out = ctx.work / "out"
    run = ctx.run(out)
    checks = ("head_has_5_classes", "backbone_from_pretrained", "trained_6_batches")
    if not ctx.ran(run):
        return ctx.skip(*checks)
    latest = out / "checkpoints" / "latest-rank0.pt"
    if not latest.exists():
        return ctx.check("head_has_5_classes", False, "no OUT/checkpoints/latest-rank0.pt"), ctx.skip(*checks[1:])
    state = cp_kit.checkpoint_state(latest)
    model, pretrained = state["model"], cp_kit.checkpoint_state(ctx.data / "pretrained.pt")["model"]
    head = model.get("module.2.weight")
    ctx.check("head_has_5_classes", head is not None and tuple(head.shape) == (5, 16),
              f"module.2.weight {tuple(head.shape) if head is not None else 'missing'}")
    before, after = pretrained["module.0.weight"], model.get("module.0.weight")
    change = float((after - before).norm() / before.norm()) if after is not None else float("inf")
    ctx.check("backbone_from_pretrained", change < 0.3,
              f"module.0.weight moved {change:.2f} of its norm from data/pretrained.pt's"
              + (" (it did not start from the checkpoint)" if change >= 0.3 else ""))
    ctx.check("trained_6_batches", run.steps == BATCHES and cp_kit.batch_of(state) == BATCHES,
              f"{run.steps} optimizer steps, final timestamp {cp_kit.batch_of(state)}ba"
              + (": the pretraining timestamp was restored, so fewer batches ran (not weights-only)"
                 if run.steps is not None and run.steps < BATCHES else ""))
