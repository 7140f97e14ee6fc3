"""Metrics with the evaluate library on a machine without network: local metric modules, local data files."""

from __future__ import annotations

from pathlib import Path

from .. import hf_kit

SKILL = "transformers-training"
SUMMARY = "fine-tune and report accuracy and macro F1 with evaluate, offline (local modules)"

ACCURACY = '''"""Accuracy: the fraction of predictions equal to their references."""

import datasets
import evaluate


class Accuracy(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="accuracy", citation="", features=datasets.Features(
            {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}))

    def _compute(self, predictions, references):
        return {"accuracy": sum(int(p == r) for p, r in zip(predictions, references)) / len(references)}
'''

F1 = '''"""F1 score with the Hub "f1" metric's arguments: average="binary" (of pos_label) by default, or "macro"."""

import datasets
import evaluate


def f1_of(predictions, references, label):
    true_positive = sum(1 for p, r in zip(predictions, references) if p == label and r == label)
    predicted = sum(1 for p in predictions if p == label)
    actual = sum(1 for r in references if r == label)
    return 0.0 if true_positive == 0 else 2 * true_positive / (predicted + actual)


class F1(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(description="f1", citation="", features=datasets.Features(
            {"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}))

    def _compute(self, predictions, references, average="binary", pos_label=1):
        if average == "binary":
            return {"f1": f1_of(predictions, references, pos_label)}
        if average == "macro":
            labels = sorted(set(references) | set(predictions))
            return {"f1": sum(f1_of(predictions, references, label) for label in labels) / len(labels)}
        raise ValueError(f"average={average!r}: use 'binary' or 'macro'")
'''


def make_fixture(data: Path) -> None:
    hf_kit.save_classifier(data / "model", hf_kit.build_tokenizer(), pretrain_steps=14)
    hf_kit.write_jsonl(data / "train.jsonl", hf_kit.sentiment_rows(64, seed=41))
    hf_kit.write_jsonl(data / "eval.jsonl", hf_kit.sentiment_rows(40, seed=42))
    (data / "metrics").mkdir()
    (data / "metrics" / "accuracy.py").write_text(ACCURACY)
    (data / "metrics" / "f1.py").write_text(F1)


def scores(predictions: list[int], references: list[int]) -> dict:
    def f1(label):
        hits = sum(p == r == label for p, r in zip(predictions, references))
        return 0.0 if not hits else 2 * hits / (predictions.count(label) + references.count(label))

    return {"accuracy": sum(p == r for p, r in zip(predictions, references)) / len(references),
            "f1": (f1(0) + f1(1)) / 2, "binary_f1": f1(1)}


def grade(ctx) -> None:
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    out = ctx.work / "out"
    if not ctx.ran(ctx.run(out)):
        return ctx.skip("metric_values")
    metrics = ctx.read_json(out / "metrics.json", "metric_values")
    if metrics is None:
        return
    try:
        model = AutoModelForSequenceClassification.from_pretrained(out / "final").eval()
    except OSError as error:
        return ctx.check("metric_values", False, f"OUT/final: {error}")
    tokenizer = AutoTokenizer.from_pretrained(ctx.data / "model")
    rows = hf_kit.read_jsonl(ctx.data / "eval.jsonl")
    with torch.no_grad():
        encoded = tokenizer([row["text"] for row in rows], padding=True, return_tensors="pt")
        predictions = model(**encoded).logits.argmax(-1).tolist()
    expected = scores(predictions, [row["label"] for row in rows])
    wrong = [f"{name} {metrics.get(name)!r} (expected {expected[name]:.4f})" for name in ("accuracy", "f1")
             if not isinstance(metrics.get(name), (int, float)) or abs(metrics[name] - expected[name]) > 1e-6]
    if wrong and isinstance(metrics.get("f1"), (int, float)) and abs(metrics["f1"] - expected["binary_f1"]) < 1e-6:
        wrong.append("the f1 reported is the binary F1 of label 1, not the macro average")
    ctx.check("metric_values", not wrong, "; ".join(wrong) or f"accuracy {expected['accuracy']:.4f}, "
              f"macro F1 {expected['f1']:.4f} of OUT/final on eval.jsonl")
