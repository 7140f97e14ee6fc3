#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "mosaicml==0.32.1",
#     "torch==2.7.0",
#     "torchvision==0.22.0",
# ]
# ///
"""Composer training smoke test: fit, eval and predict with a tiny ComposerClassifier on random data, then a
custom dict-batch ComposerModel whose DataSpec counts tokens, so a `tok` max_duration stops where it should.

Checks the timestamp (batches, samples, tokens), the eval metrics under their evaluator label, predict's output
count and shapes, and that without a token counter the same dict batches count 0 tokens (a `tok` duration would
never be reached). Random tensors only: nothing is downloaded.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import redirect_stdout

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from smoke_contract import EXIT_USAGE, SmokeError, build_parser, positive_int, require, run_main

SCRIPT = "train_smoke.py"
DISTRIBUTIONS = ["mosaicml", "torch", "torchmetrics"]
PIP_LINE = "pip install mosaicml==0.32.1 'torch>=2.6,<2.7.1'"
FEATURES, CLASSES, VOCAB, SEQ_LEN = 8, 3, 32, 6
EVAL_LABEL = "val"


def make_parser() -> argparse.ArgumentParser:
    parser = build_parser(SCRIPT, __doc__,
                          "python scripts/train_smoke.py --batches 2 --eval-batches 1 --predict --json")
    parser.add_argument("--batches", type=positive_int, default=2, help="training batches (default: 2)")
    parser.add_argument("--eval-batches", type=positive_int, default=1, help="evaluation batches (default: 1)")
    parser.add_argument("--predict", action="store_true", help="also run trainer.predict and check its outputs")
    parser.add_argument("--batch-size", type=positive_int, default=4, help="samples per batch (default: 4)")
    parser.add_argument("--microbatch-size", type=positive_int, default=None,
                        help="device_train_microbatch_size (default: none, the whole batch at once)")
    parser.add_argument("--precision", choices=["fp32", "amp_fp16", "amp_bf16"], default=None,
                        help="default: fp32 on cpu, amp_bf16 on gpu (AMP is GPU-only in Composer)")
    return parser


def validate(args) -> None:
    if args.device == "cpu" and args.precision not in (None, "fp32"):
        raise SmokeError(f"--precision {args.precision} needs --device gpu: Composer raises "
                         f"'Precision.{args.precision.upper()} is not supported for CPU training.'", EXIT_USAGE)


def body(run) -> None:
    device = run.resolve_device()
    precision = run.args.precision or ("amp_bf16" if device == "gpu" else "fp32")
    if device == "cpu" and precision != "fp32":  # --device auto that resolved to cpu
        raise SmokeError(f"--precision {precision} needs a GPU and CUDA is not available", EXIT_USAGE)
    require("torch", PIP_LINE)
    require("composer", PIP_LINE)
    with redirect_stdout(sys.stderr):  # stdout is reserved for the --json summary
        classifier_checks(run, device, precision)
        token_checks(run, device, precision)


def classifier_checks(run, device: str, precision: str) -> None:
    import torch
    from composer import Trainer
    from composer.core import Evaluator
    from composer.models import ComposerClassifier
    from torch.utils.data import DataLoader, TensorDataset

    args = run.args
    size = args.batch_size
    generator = torch.Generator().manual_seed(args.seed)

    def loader(samples: int) -> DataLoader:
        inputs = torch.randn(samples, FEATURES, generator=generator)
        targets = torch.randint(0, CLASSES, (samples,), generator=generator)
        return DataLoader(TensorDataset(inputs, targets), batch_size=size)

    with run.step("classifier.fit"):
        torch.manual_seed(args.seed)
        model = ComposerClassifier(module=torch.nn.Linear(FEATURES, CLASSES), num_classes=CLASSES)
        trainer = Trainer(
            model=model,
            train_dataloader=loader((args.batches + 1) * size),  # one batch more than trained: stays in epoch 0
            eval_dataloader=Evaluator(label=EVAL_LABEL, dataloader=loader(args.eval_batches * size)),
            optimizers=torch.optim.AdamW(model.parameters(), lr=1e-2),
            max_duration=f"{args.batches}ba",
            device=device,
            precision=precision,
            device_train_microbatch_size=args.microbatch_size,
            seed=args.seed,
            progress_bar=False,
        )
        trainer.fit()
    state = trainer.state
    stamp = state.timestamp
    run.check_equal("classifier.timestamp.batch", int(stamp.batch), args.batches)
    run.check_equal("classifier.timestamp.sample", int(stamp.sample), args.batches * size)
    run.check_equal("classifier.timestamp.batch_in_epoch", int(stamp.batch_in_epoch), args.batches)
    run.check_equal("classifier.timestamp.epoch", int(stamp.epoch), 0)
    run.check_equal("classifier.timestamp.token", int(stamp.token), 0)  # tuple batches: no token counter
    run.check_equal("classifier.precision", state.precision.value, precision)
    run.check_equal("classifier.device", next(state.model.parameters()).device.type,
                    "cuda" if device == "gpu" else "cpu")
    run.check("classifier.loss_finite", bool(torch.isfinite(state.loss).all()), f"loss {float(state.loss):.4f}",
              actual=float(state.loss), expected={"finite": True})
    run.check_equal("classifier.train_metrics", sorted(state.train_metrics), ["MulticlassAccuracy"])

    # Eval runs at the end of fit; its metrics are keyed by the evaluator's label.
    run.check_equal("eval.labels", sorted(state.eval_metrics), [EVAL_LABEL])
    run.check_equal("eval.metric_names", sorted(state.eval_metrics.get(EVAL_LABEL, {})),
                    ["CrossEntropy", "MulticlassAccuracy"])
    run.check_equal("eval.batches", int(state.eval_timestamp.batch), args.eval_batches)
    with run.step("eval.accuracy"):
        accuracy = float(state.eval_metrics[EVAL_LABEL]["MulticlassAccuracy"].compute())
    run.check("eval.accuracy", 0.0 <= accuracy <= 1.0, f"{accuracy:.3f}", actual=accuracy,
              expected={">=": 0.0, "<=": 1.0})

    if args.predict:
        samples = args.eval_batches * size + 1  # a short last batch
        with run.step("predict"):
            outputs = trainer.predict(loader(samples))
        expected = [[size, CLASSES]] * args.eval_batches + [[1, CLASSES]]
        run.check_equal("predict.batches", len(outputs), args.eval_batches + 1)
        run.check_equal("predict.shapes", [list(output.shape) for output in outputs], expected)
        run.check_equal("predict.device", sorted({output.device.type for output in outputs}), ["cpu"])
        # predict runs forward under the Trainer's precision: bf16 logits under amp_bf16, fp16 under amp_fp16
        dtypes = {"fp32": "torch.float32", "amp_bf16": "torch.bfloat16", "amp_fp16": "torch.float16"}
        run.check_equal("predict.dtype", str(outputs[0].dtype), dtypes[precision])
    trainer.close()


def token_checks(run, device: str, precision: str) -> None:
    import torch
    import torchmetrics
    from composer import Callback, ComposerModel, Trainer
    from composer.core import DataSpec
    from torch.utils.data import DataLoader

    args = run.args
    size = args.batch_size

    class TinyTokenModel(ComposerModel):
        """Dict batches {"tokens", "attention_mask", "label"}: forward takes the whole batch, loss gets it too."""

        def __init__(self):
            super().__init__()
            self.embed = torch.nn.Embedding(VOCAB, 8)
            self.head = torch.nn.Linear(8, 2)

        def forward(self, batch):
            mask = batch["attention_mask"].unsqueeze(-1).to(self.embed.weight.dtype)
            pooled = (self.embed(batch["tokens"]) * mask).sum(1) / mask.sum(1).clamp(min=1)
            return self.head(pooled)

        def loss(self, outputs, batch, *args, **kwargs):
            return torch.nn.functional.cross_entropy(outputs, batch["label"])

        def get_metrics(self, is_train=False):
            return {"MulticlassAccuracy": torchmetrics.classification.MulticlassAccuracy(num_classes=2)}

        def update_metric(self, batch, outputs, metric):
            metric.update(outputs.argmax(dim=-1), batch["label"])

    class StopAfter(Callback):
        """Ends fit after ``limit`` batches and records whether max_duration had been reached by then."""

        def __init__(self, limit: int):
            self.limit, self.would_continue = limit, False

        def batch_end(self, state, logger):
            if int(state.timestamp.batch) >= self.limit:
                self.would_continue = state.timestamp < state.max_duration
                state.stop_training()

    generator = torch.Generator().manual_seed(args.seed + 1)
    samples = (args.batches + 1) * size
    tokens = torch.randint(0, VOCAB, (samples, SEQ_LEN), generator=generator)
    lengths = torch.randint(1, SEQ_LEN + 1, (samples,), generator=generator)  # padded to SEQ_LEN
    mask = (torch.arange(SEQ_LEN) < lengths.unsqueeze(1)).long()
    labels = torch.randint(0, 2, (samples,), generator=generator)
    rows = [{"tokens": tokens[i], "attention_mask": mask[i], "label": labels[i]} for i in range(samples)]
    per_batch = [int(mask[start:start + size].sum()) for start in range(0, samples, size)]
    target = sum(per_batch[:args.batches])  # real (unpadded) tokens in the first --batches batches

    def count_tokens(batch) -> int:  # real tokens, padding excluded (the default counter would count padding)
        return int(batch["attention_mask"].sum())

    def trainer_for(train_data, callbacks=()):
        torch.manual_seed(args.seed)
        model = TinyTokenModel()
        return Trainer(
            model=model,
            train_dataloader=train_data,
            optimizers=torch.optim.AdamW(model.parameters(), lr=1e-2),
            max_duration=f"{target}tok",
            device=device,
            precision=precision,
            device_train_microbatch_size=args.microbatch_size,
            callbacks=list(callbacks),
            seed=args.seed,
            progress_bar=False,
        )

    with run.step("tokens.fit"):
        spec = DataSpec(DataLoader(rows, batch_size=size), get_num_tokens_in_batch=count_tokens)
        trainer = trainer_for(spec)
        trainer.fit()
    stamp = trainer.state.timestamp
    run.check_equal("tokens.stop_batch", int(stamp.batch), args.batches)
    run.check_equal("tokens.count", int(stamp.token), target)
    run.check_equal("tokens.samples", int(stamp.sample), args.batches * size)
    trainer.close()

    # Same batches, no counter: Composer counts 0 tokens, so a `tok` max_duration is never reached.
    with run.step("tokens.without_counter"):
        guard = StopAfter(args.batches + 1)
        trainer = trainer_for(DataLoader(rows, batch_size=size), callbacks=[guard])
        trainer.fit()
    run.check_equal("tokens.without_counter.count", int(trainer.state.timestamp.token), 0)
    run.check("tokens.without_counter.would_train_on", guard.would_continue,
              f"stopped by a guard after {guard.limit} batches with {trainer.state.timestamp.token} "
              f"of {target} tokens",
              actual={"batches": int(trainer.state.timestamp.batch), "tokens": int(trainer.state.timestamp.token)},
              expected={"batches": guard.limit, "tokens": {"<": target}})
    trainer.close()


def main(argv: list[str] | None = None) -> int:
    return run_main(SCRIPT, make_parser(), body, DISTRIBUTIONS, argv=argv, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
