"""Fixture pieces the Transformers tasks share: a word-level tokenizer saved like a Hub one, tiny random models
saved with save_pretrained, sentences with a sentiment label, and what graders read back. Imports are lazy."""

from __future__ import annotations

import json
import random
from pathlib import Path

POSITIVE = ["good", "great", "fine", "nice"]
NEGATIVE = ["bad", "awful", "poor", "dull"]
NEUTRAL = ["the", "a", "movie", "plot", "was", "very", "film", "acting", "and", "but", "is", "not", "really"]
WORDS = POSITIVE + NEGATIVE + NEUTRAL


def write_jsonl(path: Path, rows: list[dict]) -> None:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def sentiment_rows(count: int, seed: int, classes: int = 2) -> list[dict]:
    """Short reviews; label 1 when positive words outnumber negative ones (classes=2), or with classes=4 also
    whether the review says "very" (0: negative, 1: positive, 2: very negative, 3: very positive)."""
    generator = random.Random(seed)
    rows = []
    for _ in range(count):
        positive = generator.random() < 0.5
        words = generator.choices(NEUTRAL, k=generator.randint(1, 4))
        words += generator.choices(POSITIVE if positive else NEGATIVE, k=generator.randint(1, 2))
        generator.shuffle(words)
        label = int(positive) + (2 * ("very" in words) if classes == 4 else 0)
        rows.append({"text": " ".join(words), "label": label})
    return rows


def build_tokenizer(eos: bool = False, pad: bool = True):
    """A BERT-style tokenizer ([CLS] text [SEP]); with ``eos`` a GPT-style one instead: each text gets ``</s>``
    appended, and without ``pad`` it has no pad token, like GPT-2's."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]"] * pad + ["[UNK]"] + (["</s>"] if eos else ["[CLS]", "[SEP]"])
    vocabulary = {token: index for index, token in enumerate([*specials, *WORDS])}
    backend = Tokenizer(models.WordLevel(vocabulary, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    if eos:
        backend.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[
            ("</s>", vocabulary["</s>"])])
        named = dict(eos_token="</s>", bos_token="</s>")
    else:
        backend.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", vocabulary["[CLS]"]), ("[SEP]", vocabulary["[SEP]"])])
        named = dict(cls_token="[CLS]", sep_token="[SEP]", eos_token="[SEP]")
    if pad:
        named["pad_token"] = "[PAD]"
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", **named)


def bert_config(tokenizer, **extra):
    from transformers import AutoConfig

    return AutoConfig.for_model("bert", vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2,
                                num_attention_heads=2, intermediate_size=64, max_position_embeddings=64,
                                pad_token_id=tokenizer.pad_token_id, **extra)


def with_label_noise(rows: list[dict], rate: float, seed: int) -> list[dict]:
    """Binary labels flipped at ``rate``: accuracy then moves between evaluations instead of sitting at 1.0."""
    generator = random.Random(seed)
    return [dict(row, label=1 - row["label"]) if generator.random() < rate else row for row in rows]


def save_classifier(folder: Path, tokenizer, num_labels: int = 2, pretrain_steps: int = 16) -> None:
    """A tiny BERT sentiment classifier, trained ``pretrain_steps`` steps (AdamW 3e-3, batches of 16) from a seeded
    random start, saved with its tokenizer as a Hub checkpoint would be."""
    import torch
    from transformers import AutoModelForSequenceClassification

    torch.manual_seed(0)
    model = AutoModelForSequenceClassification.from_config(bert_config(tokenizer, num_labels=num_labels))
    rows = sentiment_rows(256, seed=7)
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3)
    for step in range(pretrain_steps):
        batch = rows[step * 16 % 256:][:16]
        encoded = tokenizer([row["text"] for row in batch], padding=True, return_tensors="pt")
        model(**encoded, labels=torch.tensor([row["label"] for row in batch])).loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)


def load_safetensors(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(str(path))


def same_tensors(first: dict, second: dict) -> list[str]:
    """Names whose tensors differ (or exist in one only)."""
    return sorted(name for name in first.keys() | second.keys()
                  if name not in first or name not in second or not first[name].equal(second[name]))


def log_history(output_dir: Path) -> list[dict]:
    """The union of the log_history of every checkpoint's trainer_state.json under ``output_dir``, by step."""
    seen = {}
    for state in sorted(output_dir.glob("**/trainer_state.json")):
        for entry in json.loads(state.read_text())["log_history"]:
            seen[json.dumps(entry, sort_keys=True)] = entry
    return sorted(seen.values(), key=lambda entry: entry.get("step", 0))
