"""A new classification head on a pretrained encoder, trained with gradient accumulation (the loss-scaling trap)."""

from __future__ import annotations

import math
from pathlib import Path

from .. import hf_kit

SKILL = "transformers-training"
SUMMARY = "2-label checkpoint into a 4-label head with gradient accumulation; logged loss at its true scale"
LABELS, STEPS, ACCUMULATION = 4, 8, 4


def make_fixture(data: Path) -> None:
    hf_kit.save_classifier(data / "model", hf_kit.build_tokenizer())  # a 2-label sentiment model
    hf_kit.write_jsonl(data / "train.jsonl", hf_kit.sentiment_rows(160, seed=31, classes=LABELS))


def grade(ctx) -> None:
    import torch
    from transformers import AutoConfig

    out = ctx.work / "out"
    run = ctx.run(out)
    checks = ("head_has_4_labels", "encoder_from_pretrained", "logged_loss_scale")
    if not ctx.ran(run):
        return ctx.skip(*checks)
    try:
        config = AutoConfig.from_pretrained(out / "final")
        final = hf_kit.load_safetensors(out / "final" / "model.safetensors")
    except OSError as error:
        return ctx.check("head_has_4_labels", False, f"OUT/final: {error}"), ctx.skip(*checks[1:])
    head = final.get("classifier.weight")
    ctx.check("head_has_4_labels", config.num_labels == LABELS and head is not None and head.shape[0] == LABELS,
              f"num_labels {config.num_labels}, classifier.weight {tuple(head.shape) if head is not None else None}")
    name = "bert.embeddings.word_embeddings.weight"
    pretrained = hf_kit.load_safetensors(ctx.data / "model" / "model.safetensors")[name]
    similarity = torch.nn.functional.cosine_similarity(final[name].flatten(), pretrained.flatten(), dim=0).item()
    ctx.check("encoder_from_pretrained", similarity > 0.9,
              f"cosine similarity of the word embeddings to data/model's: {similarity:.3f}")
    losses = [entry["loss"] for entry in hf_kit.log_history(out / "checkpoints") if "loss" in entry]
    if not losses:
        return ctx.check("logged_loss_scale", False, "no training loss in OUT/checkpoints/*/trainer_state.json")
    # A fresh head puts near-zero logits on 4 labels: the first true loss is close to ln 4 (1.386).
    first, chance = losses[0], math.log(LABELS)
    ctx.check("logged_loss_scale", first < 2 * chance and run.steps == STEPS,
              f"first logged loss {first:.3f} (ln 4 = {chance:.3f}), {run.steps} optimizer steps"
              + (f": {first / chance:.1f}x, each of the {ACCUMULATION} micro-batch mean losses summed, not averaged "
                 "(accepts_loss_kwargs)" if first >= 2 * chance else ""))
