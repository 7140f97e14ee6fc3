"""Autoresume when several jobs share one checkpoint root: run_name and {run_name} in save_folder."""

from __future__ import annotations

from pathlib import Path

from .. import cp_kit

SKILL = "composer-training"
SUMMARY = "jobs sharing a checkpoint root: each autoresumes its own checkpoints, never another job's"
BATCHES = 6


def make_fixture(data: Path) -> None:
    cp_kit.write_model_def(data)
    cp_kit.save_tensors(data / "train.pt", cp_kit.classification_tensors(BATCHES * 8, 3, seed=5))


def grade(ctx) -> None:
    root = ctx.work / "root"
    later = ("job_starts_fresh", "job_resumes_its_own_checkpoint", "resumed_weights_match")
    # job a is killed after its 4th step: its checkpoints after batches 1 to 3 are complete
    first = ctx.run(root, label="job a", extra_args=("--job", "a"), kill_after_steps=4)
    if not ctx.check("first_launch_trains", first.killed,
                     "" if first.killed else f"{first.error()} (it was to be killed at step 4)"):
        return ctx.skip(*later)
    other = ctx.run(root, label="job b", extra_args=("--job", "b"))
    fresh = ctx.check("job_starts_fresh", other.ok and other.steps == BATCHES, other.error() if not other.ok else
                      f"job b, launched for the first time, took {other.steps} optimizer steps of {BATCHES}"
                      + (": it resumed job a's checkpoint" if other.steps != BATCHES else ""))
    again = ctx.run(root, label="job a relaunch", extra_args=("--job", "a"))
    resumed = ctx.check("job_resumes_its_own_checkpoint", again.ok and again.steps == BATCHES - 3,
                        again.error() if not again.ok else f"job a's relaunch took {again.steps} optimizer steps; "
                        f"from its checkpoint after batch 3 it needs {BATCHES - 3}")
    if not (fresh and resumed):
        return ctx.skip("resumed_weights_match")
    finals = [root / f"final-{job}.pt" for job in "ab"]
    if not all(path.exists() for path in finals):
        return ctx.check("resumed_weights_match", False, f"missing {[p.name for p in finals if not p.exists()]}")
    import torch

    a, b = (torch.load(path, map_location="cpu") for path in finals)
    differ = [name for name in b if name not in a or not a[name].equal(b[name])]
    ctx.check("resumed_weights_match", not differ,
              f"job a (killed and resumed) and job b (never killed) differ in {differ[:3]}" if differ else "")
