"""A Composer job relaunched after SIGKILL, including the two states a kill during a save leaves behind."""

from __future__ import annotations

from pathlib import Path

from .. import cp_kit

SKILL = "composer-training"
SUMMARY = "relaunch after SIGKILL: past a torn checkpoint and a missing latest link, bit-exact"
BATCHES = 8


def make_fixture(data: Path) -> None:
    cp_kit.write_model_def(data)
    cp_kit.save_tensors(data / "train.pt", cp_kit.classification_tensors(BATCHES * 8, 3, seed=9))


def final_weights(out: Path) -> dict | None:
    import torch

    path = out / "final.pt"
    return torch.load(path, map_location="cpu") if path.exists() else None


def relaunch(ctx, name: str, check: str, kill_after: int, damage, resumed_steps: int, reference: dict) -> bool:
    out = ctx.work / name
    first = ctx.run(out, label=f"{name} launch 1", kill_after_steps=kill_after)
    folder = out / "checkpoints"
    if not first.killed or not (folder / "latest-rank0.pt").exists():
        return ctx.check(check, False, f"to be killed after a checkpoint in OUT/checkpoints: "
                                       f"{first.error() if not first.killed else 'no latest-rank0.pt there'}")
    what = damage(folder)
    second = ctx.run(out, label=f"{name} relaunch")
    if not second.ok:
        return ctx.check(check, False, f"{what}; {second.error()}")
    if not ctx.check(check, second.steps == resumed_steps,
                     f"{what}; the relaunch took {second.steps} optimizer steps, {resumed_steps} were left"
                     + (" (it started over)" if second.steps == BATCHES else "")):
        return False
    weights = final_weights(out)
    differ = ["final.pt"] if weights is None else [k for k in reference if not reference[k].equal(weights.get(k))]
    return ctx.check("resumed_weights_match", not differ, f"{name}: differs in {differ[:3]}" if differ else "")


def torn(folder: Path) -> str:
    """What a kill while torch.save writes checkpoint 4 leaves: the start of a zip archive under the final name."""
    (folder / "ep0-ba4-rank0.pt").write_bytes((folder / "ep0-ba3-rank0.pt").read_bytes()[:4000])
    return "ep0-ba4-rank0.pt torn, latest-rank0.pt -> ep0-ba3-rank0.pt"


def unlinked(folder: Path) -> str:
    """A kill after checkpoint 4 is written, between the saver removing latest-rank0.pt and re-creating it."""
    (folder / "latest-rank0.pt").unlink()
    return "ep0-ba4-rank0.pt complete, no latest-rank0.pt"


def finished(ctx, reference: dict) -> None:
    """A kill after the last checkpoint, before final.pt: the relaunch has nothing left to train."""
    out, state = ctx.work / "finished", "every checkpoint written, final.pt not yet"
    first = ctx.run(out, label="finished launch 1")
    if not first.ok:
        return ctx.check("relaunch_after_last_checkpoint", False, first.error())
    (out / "final.pt").unlink(missing_ok=True)
    second = ctx.run(out, label="finished relaunch")
    if not second.ok:
        return ctx.check("relaunch_after_last_checkpoint", False, f"{state}: {second.error()}")
    weights = final_weights(out)
    differ = ["final.pt"] if weights is None else [k for k in reference if not reference[k].equal(weights.get(k))]
    ctx.check("relaunch_after_last_checkpoint", second.steps == 0 and not differ,
              f"{state}: the relaunch took {second.steps} optimizer steps (0 were left)"
              + (f", final.pt differs in {differ[:3]}" if differ else ""))


def grade(ctx) -> None:
    later = ("resumes_past_torn_checkpoint", "resumes_without_latest_link", "resumed_weights_match",
             "relaunch_after_last_checkpoint")
    uninterrupted = ctx.run(ctx.work / "uninterrupted", label="uninterrupted")
    reference = final_weights(ctx.work / "uninterrupted") if uninterrupted.ok else None
    if not ctx.check("fresh_start_runs", reference is not None and uninterrupted.steps == BATCHES,
                     uninterrupted.error() if not uninterrupted.ok else
                     f"{uninterrupted.steps} optimizer steps, OUT/final.pt {'saved' if reference else 'missing'}"):
        return ctx.skip(*later)
    # killed after step 4: checkpoints 1 to 3 complete; then as if the kill had hit the save of checkpoint 4
    resumed = [relaunch(ctx, "torn", "resumes_past_torn_checkpoint", 4, torn, BATCHES - 3, reference)]
    # killed after step 5: checkpoints 1 to 4 complete; then as if the kill had hit between unlink and symlink
    resumed.append(relaunch(ctx, "unlinked", "resumes_without_latest_link", 5, unlinked, BATCHES - 4,
                            reference))
    if not any(resumed):
        ctx.skip("resumed_weights_match", because="no relaunch resumed")
    finished(ctx, reference)
