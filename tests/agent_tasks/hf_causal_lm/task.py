"""Causal LM from a tokenizer without a pad token; report the true per-token perplexity."""

from __future__ import annotations

import math
import random
from pathlib import Path

from .. import hf_kit

SKILL = "transformers-training"
SUMMARY = "causal LM, tokenizer without pad token; report the per-token perplexity"


def make_fixture(data: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    tokenizer = hf_kit.build_tokenizer(eos=True, pad=False)
    config = AutoConfig.for_model("gpt2", vocab_size=len(tokenizer), n_embd=32, n_layer=2, n_head=2, n_positions=64,
                                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0,
                                  bos_token_id=tokenizer.eos_token_id, eos_token_id=tokenizer.eos_token_id)
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(data / "model")
    tokenizer.save_pretrained(data / "model")
    generator = random.Random(5)  # lines of 1 to 11 words: batches of unequal lengths
    for name, count in (("train.txt", 64), ("eval.txt", 20)):
        lines = [" ".join(generator.choices(hf_kit.WORDS, k=generator.randint(1, 11))) for _ in range(count)]
        (data / name).write_text("\n".join(lines) + "\n")


def token_losses(model, tokenizer, lines: list[str]) -> list[tuple[float, int, int]]:
    """Per line, unpadded: (summed NLL of every token after the first, their count, how many of them are </s>)."""
    import torch

    found = []
    model.eval()
    with torch.no_grad():
        for line in lines:
            ids = torch.tensor([tokenizer(line)["input_ids"]])
            logits = model(input_ids=ids).logits[0, :-1]
            losses = torch.nn.functional.cross_entropy(logits, ids[0, 1:], reduction="none")
            eos = ids[0, 1:] == tokenizer.eos_token_id
            found.append((losses.sum().item(), len(losses), losses[eos].sum().item(), int(eos.sum())))
    return found


def trainer_eval_perplexity(model, tokenizer, data: Path) -> float:
    """exp(eval_loss) as Trainer.evaluate computes it, batches of 8 (a mean of per-batch means)."""
    import tempfile

    from datasets import Dataset
    from transformers import DataCollatorForLanguageModeling, Trainer, TrainingArguments

    lines = (data / "eval.txt").read_text().splitlines()
    dataset = Dataset.from_dict({"text": lines}).map(lambda batch: tokenizer(batch["text"]), batched=True,
                                                     remove_columns=["text"])
    with tempfile.TemporaryDirectory() as scratch:
        args = TrainingArguments(output_dir=scratch, per_device_eval_batch_size=8, use_cpu=True, report_to="none")
        trainer = Trainer(model=model, args=args, eval_dataset=dataset,
                          data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
        return math.exp(trainer.evaluate()["eval_loss"])


def grade(ctx) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    out = ctx.work / "out"
    fixture_tokenizer = AutoTokenizer.from_pretrained(ctx.data / "model")  # the ids every solution trains on
    run = ctx.run(out, watch_target=fixture_tokenizer.eos_token_id)
    if not ctx.ran(run):
        return ctx.skip("eos_is_trained", "true_perplexity")
    try:
        tokenizer = AutoTokenizer.from_pretrained(out / "final")
        model = AutoModelForCausalLM.from_pretrained(out / "final")
    except OSError as error:
        return ctx.check("eos_is_trained", False, f"OUT/final: {error}"), ctx.skip("true_perplexity")
    eos_targets, trained_targets = run.targets or (0, 0)
    if trained_targets:  # what the training losses saw: every line ends in </s>, so some targets must be </s>
        ctx.check("eos_is_trained", eos_targets > 0, f"{eos_targets} of the {trained_targets} trained targets are </s>"
                  + ("" if eos_targets else ": every real </s> label was set to -100 (the pad token is </s>?)"))
    else:  # a loss without torch's cross_entropy: judge by the saved tokenizer
        ctx.check("eos_is_trained", tokenizer.pad_token is not None and tokenizer.pad_token != tokenizer.eos_token,
                  f"OUT/final's tokenizer: pad_token {tokenizer.pad_token!r}, eos_token {tokenizer.eos_token!r}")
    metrics = ctx.read_json(out / "metrics.json", "true_perplexity")
    if metrics is None:
        return
    reported = metrics.get("perplexity")
    losses = token_losses(model, fixture_tokenizer, (ctx.data / "eval.txt").read_text().splitlines())
    true = math.exp(sum(loss for loss, *_ in losses) / sum(count for _, count, *_ in losses))
    without_eos = math.exp(sum(loss - eos for loss, _, eos, _ in losses) / sum(n - k for _, n, _, k in losses))
    if isinstance(reported, (int, float)) and math.isclose(reported, true, rel_tol=1e-3):
        return ctx.check("true_perplexity", True, f"{reported:.4f}")
    explained = ""
    if isinstance(reported, (int, float)):
        if math.isclose(reported, without_eos, rel_tol=1e-3):
            explained = ": it leaves out every </s> (eos used as the pad token?)"
        elif math.isclose(reported, trainer_eval_perplexity(model, tokenizer, ctx.data), rel_tol=1e-3):
            explained = ": it is exp(eval_loss), which weighs batches by rows, not by predicted tokens"
    ctx.check("true_perplexity", False, f"reported {reported!r}, the per-token perplexity of OUT/final on eval.txt "
              f"is {true:.4f}{explained}")
