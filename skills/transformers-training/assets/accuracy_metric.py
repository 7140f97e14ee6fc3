"""Accuracy as a local `evaluate` metric module: `evaluate.load("assets/accuracy_metric.py")` reads this file and
never contacts the Hub (the Hub name `evaluate.load("accuracy")` needs the network).

evaluate copies this file into its cache and finds its imports with a regex, so keep one import per line.
"""

import datasets
import evaluate


class AccuracyMetric(evaluate.Metric):
    def _info(self):
        return evaluate.MetricInfo(
            description="Fraction of predictions equal to their references.",
            citation="",
            features=datasets.Features({"predictions": datasets.Value("int64"), "references": datasets.Value("int64")}),
        )

    def _compute(self, predictions, references):
        correct = sum(int(prediction == reference) for prediction, reference in zip(predictions, references))
        return {"accuracy": correct / len(references)}
