"""Seq2seq fine-tuning whose predictions must be generated text, not teacher-forced argmax."""

from __future__ import annotations

from pathlib import Path

from .. import hf_kit

SKILL = "transformers-training"
SUMMARY = "seq2seq fine-tune; write the generated (greedy, max_length 8) predictions"
MAX_LENGTH = 8
PRETRAIN_STEPS = 60


def rows(count: int, seed: int) -> list[dict]:
    """A review as source, its words reversed as target (a toy translation): outputs of 3 to 9 words."""
    return [{"id": index, "source": row["text"], "target": " ".join(reversed(row["text"].split()))}
            for index, row in enumerate(hf_kit.sentiment_rows(count, seed))]


def pretrain(model, tokenizer, steps: int) -> None:
    """A start that already half knows the task, so generations are words, not an immediate end of text."""
    import torch
    from transformers import DataCollatorForSeq2Seq

    collator = DataCollatorForSeq2Seq(tokenizer, model=model)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    examples = [tokenizer(row["source"], text_target=row["target"]) for row in rows(256, seed=13)]
    for step in range(steps):
        model(**collator(examples[step * 16 % 256:][:16])).loss.backward()
        optimizer.step()
        optimizer.zero_grad()


def make_fixture(data: Path) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    tokenizer = hf_kit.build_tokenizer()
    config = AutoConfig.for_model("t5", vocab_size=len(tokenizer), d_model=32, d_ff=64, d_kv=16, num_layers=2,
                                  num_heads=2, dropout_rate=0.0, pad_token_id=tokenizer.pad_token_id,
                                  eos_token_id=tokenizer.eos_token_id, decoder_start_token_id=tokenizer.pad_token_id)
    torch.manual_seed(0)
    model = AutoModelForSeq2SeqLM.from_config(config)
    pretrain(model, tokenizer, steps=PRETRAIN_STEPS)
    model.save_pretrained(data / "model")
    tokenizer.save_pretrained(data / "model")
    hf_kit.write_jsonl(data / "train.jsonl", rows(96, seed=11))
    hf_kit.write_jsonl(data / "eval.jsonl", rows(16, seed=12))


def reference_texts(model, tokenizer, evaluation: list[dict]) -> tuple[list[str], list[str]]:
    """(greedy generation with max_length 8, the argmax of teacher-forced logits), decoded, in batches of 8."""
    import torch
    from transformers import DataCollatorForSeq2Seq

    collator = DataCollatorForSeq2Seq(tokenizer, model=model)
    generated, forced = [], []
    model.eval()
    with torch.no_grad():
        for start in range(0, len(evaluation), 8):
            rows = evaluation[start:start + 8]
            encoded = tokenizer([row["source"] for row in rows], padding=True, return_tensors="pt")
            outputs = model.generate(**encoded, max_length=MAX_LENGTH, num_beams=1, do_sample=False)
            generated += tokenizer.batch_decode(outputs, skip_special_tokens=True)
            batch = collator([tokenizer(row["source"], text_target=row["target"]) for row in rows])
            forced += tokenizer.batch_decode(model(**batch).logits.argmax(-1), skip_special_tokens=True)
    return [text.strip() for text in generated], [text.strip() for text in forced]


def grade(ctx) -> None:
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    out = ctx.work / "out"
    if not ctx.ran(ctx.run(out)):
        return ctx.skip("predictions_cover_eval", "predictions_are_generated")
    try:
        written = {row["id"]: row["prediction"] for row in hf_kit.read_jsonl(out / "predictions.jsonl")}
        model = AutoModelForSeq2SeqLM.from_pretrained(out / "final")
    except (OSError, KeyError, ValueError) as error:
        return ctx.check("predictions_cover_eval", False, str(error)[:300]), ctx.skip("predictions_are_generated")
    evaluation = hf_kit.read_jsonl(ctx.data / "eval.jsonl")
    missing = [row["id"] for row in evaluation if row["id"] not in written]
    if not ctx.check("predictions_cover_eval", not missing, f"no prediction for ids {missing[:5]}" if missing else ""):
        return ctx.skip("predictions_are_generated")
    tokenizer = AutoTokenizer.from_pretrained(ctx.data / "model")
    generated, forced = reference_texts(model, tokenizer, evaluation)
    predicted = [str(written[row["id"]]).strip() for row in evaluation]
    wrong = [index for index, (p, g) in enumerate(zip(predicted, generated)) if p != g]
    detail = f"{len(wrong)} of {len(predicted)} differ from OUT/final's greedy generation (max_length 8)"
    if wrong:
        first = wrong[0]
        detail += f", e.g. id {evaluation[first]['id']}: {predicted[first]!r} instead of {generated[first]!r}"
        if sum(p == f for p, f in zip(predicted, forced)) > len(predicted) // 2:
            detail += "; they are the argmax of teacher-forced logits, not generated"
        elif sum(p.startswith(g) and len(p) > len(g) for p, g in zip(predicted, generated)):
            detail += "; some run longer than max_length 8 allows"
    ctx.check("predictions_are_generated", not wrong, detail)
