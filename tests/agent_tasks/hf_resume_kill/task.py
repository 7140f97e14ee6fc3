"""Resume a Trainer run after SIGKILL, between checkpoints and while a checkpoint is written."""

from __future__ import annotations

from pathlib import Path

from .. import hf_kit

SKILL = "transformers-training"
SUMMARY = "relaunch after SIGKILL continues from the newest complete checkpoint, bit-exact"
STEPS = 6  # checkpoints at 2, 4 and 6


def make_fixture(data: Path) -> None:
    hf_kit.save_classifier(data / "model", hf_kit.build_tokenizer())
    hf_kit.write_jsonl(data / "train.jsonl", hf_kit.sentiment_rows(96, seed=21))


def relaunch(ctx, name: str, check: str, kill: dict, resumed_steps: int, reference: dict) -> bool:
    """Kill a launch as ``kill`` says, relaunch the same command, and check it redid only ``resumed_steps``."""
    out = ctx.work / name
    first = ctx.run(out, label=f"{name} launch 1", **kill)
    if not first.killed:
        return ctx.check(check, False, f"the launch was to be killed ({kill}) but ended: {first.error()}")
    second = ctx.run(out, label=f"{name} relaunch")
    if not second.ok:
        return ctx.check(check, False, second.error())
    if not ctx.check(check, second.steps == resumed_steps,
                     f"the relaunch took {second.steps} optimizer steps; from the newest complete checkpoint it needs "
                     f"{resumed_steps}" + (" (it started over)" if second.steps == STEPS else "")):
        return False
    final = out / "final" / "model.safetensors"
    differ = hf_kit.same_tensors(reference, hf_kit.load_safetensors(final)) if final.exists() else ["OUT/final"]
    return ctx.check("resumed_weights_match", not differ,
                     f"{name}: {len(differ)} tensors differ from the uninterrupted run's, e.g. {differ[:2]}"
                     if differ else "")


def grade(ctx) -> None:
    later = ("resumes_after_kill", "resumes_after_kill_during_save", "resumed_weights_match")
    uninterrupted = ctx.run(ctx.work / "uninterrupted", label="uninterrupted")
    if not ctx.ran(uninterrupted, "fresh_start_runs"):
        return ctx.skip(*later)
    final = ctx.work / "uninterrupted" / "final" / "model.safetensors"
    if not ctx.check("fresh_start_runs", final.exists() and uninterrupted.steps == STEPS,
                     f"{uninterrupted.steps} optimizer steps, OUT/final {'saved' if final.exists() else 'missing'}"):
        return ctx.skip(*later)
    reference = hf_kit.load_safetensors(final)
    # killed after step 5: checkpoints 2 and 4 are complete, so the relaunch takes steps 5 and 6
    resumed = [relaunch(ctx, "killed", "resumes_after_kill", {"kill_after_steps": 5}, 2, reference)]
    # killed while writing checkpoint 4 (trainer_state.json comes last): checkpoint-4 is incomplete
    resumed.append(relaunch(ctx, "killed-saving", "resumes_after_kill_during_save",
                            {"kill_on_open": "checkpoint-4/trainer_state.json"}, 4, reference))
    if not any(resumed):
        ctx.skip("resumed_weights_match", because="no relaunch resumed")
