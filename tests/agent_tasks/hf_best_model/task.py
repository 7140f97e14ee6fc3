"""Fine-tune a text classifier and end on the evaluation with the best accuracy (eval and save cadence)."""

from __future__ import annotations

from pathlib import Path

from .. import hf_kit

SKILL = "transformers-training"
SUMMARY = "fine-tune a classifier; OUT/final must be the best-accuracy evaluation's model"
STEPS, EVAL_EVERY = 16, 2


def make_fixture(data: Path) -> None:
    tokenizer = hf_kit.build_tokenizer()
    hf_kit.save_classifier(data / "model", tokenizer)
    # Noisy labels and these seeds give evaluations whose best accuracy (step 6, 3 of 80 examples ahead of any
    # other) is neither the lowest eval_loss nor on a step that checkpoints every 4 steps would save.
    hf_kit.write_jsonl(data / "train.jsonl", hf_kit.with_label_noise(hf_kit.sentiment_rows(128, seed=2), 0.25, seed=3))
    hf_kit.write_jsonl(data / "eval.jsonl", hf_kit.with_label_noise(hf_kit.sentiment_rows(80, seed=10), 0.25, seed=6))


def grade(ctx) -> None:
    out = ctx.work / "out"
    if not ctx.ran(ctx.run(out)):
        return ctx.skip("evaluated_every_2_steps", "best_model_loaded")
    evaluations = {entry["step"]: entry for entry in hf_kit.log_history(out / "checkpoints")
                   if "eval_accuracy" in entry}
    expected = list(range(EVAL_EVERY, STEPS + 1, EVAL_EVERY))
    ctx.check("evaluated_every_2_steps", sorted(evaluations) == expected,
              f"evaluations with eval_accuracy at steps {sorted(evaluations)}, expected {expected}")
    final = out / "final" / "model.safetensors"
    if not evaluations or not final.exists():
        return ctx.check("best_model_loaded", False, f"missing: {'OUT/final' if evaluations else 'evaluations'}")
    best = max(entry["eval_accuracy"] for entry in evaluations.values())
    best_steps = [step for step, entry in evaluations.items() if entry["eval_accuracy"] == best]
    lowest_loss = min(evaluations.values(), key=lambda entry: entry["eval_loss"])["step"]
    saved = {step: out / "checkpoints" / f"checkpoint-{step}" / "model.safetensors" for step in evaluations}
    saved = {step: path for step, path in saved.items() if path.exists()}
    weights = hf_kit.load_safetensors(final)
    holds = [step for step, path in saved.items() if not hf_kit.same_tensors(weights, hf_kit.load_safetensors(path))]
    if any(step in best_steps for step in holds):
        return ctx.check("best_model_loaded", True, f"OUT/final = checkpoint-{holds[0]} (eval_accuracy {best})")
    found = (f"OUT/final holds checkpoint-{holds[0]}'s weights (eval_accuracy "
             f"{evaluations[holds[0]]['eval_accuracy']}{', the lowest eval_loss' if holds[0] == lowest_loss else ''})"
             if holds else "OUT/final matches no checkpoint")
    unsaved = [step for step in best_steps if step not in saved]
    ctx.check("best_model_loaded", False, f"{found}; the best eval_accuracy {best} was at step(s) {best_steps}"
              + (f", never saved: steps {unsaved} have no checkpoint" if unsaved == best_steps else ""))
