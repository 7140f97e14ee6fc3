#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "transformers==5.24.0",
#     "torch==2.7.0",
#     "accelerate==1.16.0",
#     "datasets==5.2.0",
#     "evaluate==0.4.6",
# ]
# ///
"""Validate TrainingArguments flags before a run: parse them, build TrainingArguments and a Trainer around a tiny
model, and print the decisions they normalize to, without training and without writing anything.

Every flag this script does not define is a TrainingArguments field in its command-line spelling
(--per_device_train_batch_size 2, --bf16, --report_to none), parsed by HfArgumentParser as the example scripts
parse them, except that a prefix is not taken for the whole flag. Mind two look-alikes: --output_dir (underscore)
is the TrainingArguments field, checked but never created; --output-dir (hyphen) is the smoke contract's scratch
directory. --seed, when given, is forwarded as TrainingArguments.seed (without it, TrainingArguments keeps 42).

Checks, in order: removed 5.x flags (exit 2 naming the replacement), unknown, abbreviated or malformed flags (exit
2), numbers that are not finite (exit 2), the files given to --accelerator_config, --fsdp_config and --deepspeed (a
regular file of at most 1 MiB holding a JSON object, read before the library opens it: a FIFO would block it,
/dev/zero fill memory; else exit 2 naming the flag and the file), TrainingArguments' own validation (exit 1), values
it accepts but a run cannot use, such as a batch size below 1 (exit 2), report_to integrations (unknown: exit 1; not
installed: exit 3 with the pip line), and the checks that only fire at Trainer init (save_strategy="best" without a
metric, an eval strategy without an eval dataset, ...) by building a Trainer with a scratch output_dir and
push_to_hub off.
"""

from __future__ import annotations

import argparse
import base64
import binascii
import copy
import importlib.metadata
import json
import math
import os
import re
import stat
import sys
import warnings

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from smoke_contract import EXIT_MISSING_DEPENDENCY, EXIT_USAGE, SmokeError, build_parser, require, run_main

SCRIPT = "training_args_smoke.py"
DISTRIBUTIONS = ["transformers", "torch", "accelerate"]
EXAMPLE = (f"python scripts/{SCRIPT} --output_dir outputs/smoke --per_device_train_batch_size 2 "
           "--eval_strategy steps --eval_steps 50 --save_strategy steps --save_steps 50 "
           "--load_best_model_at_end --metric_for_best_model eval_loss --report_to none --json")

# Fields removed in Transformers 5, and what to do instead (tests prove the installed library rejects each).
REMOVED_FLAGS = {
    "evaluation_strategy": "use --eval_strategy",
    "no_cuda": "use --use_cpu",
    "overwrite_output_dir": "drop it: choose a new --output_dir, or resume with "
                            "trainer.train(resume_from_checkpoint=...)",
    "logging_dir": "drop it: set the TENSORBOARD_LOGGING_DIR environment variable (default <output_dir>/runs/...)",
    "warmup_ratio": "use --warmup_steps with a float below 1 (a ratio of the total steps)",
    "group_by_length": "use --train_sampling_strategy group_by_length",
    "include_inputs_for_metrics": "use --include_for_metrics inputs",
    "save_safetensors": "drop it: checkpoints are always safetensors",
    "use_mps_device": "drop it",
    "push_to_hub_token": "use --hub_token",
}
# Values TrainingArguments accepts but a run cannot use: (refused when, what the library does with them; proven in
# tests/test_hostile_transformers.py). Any number that is not finite (nan, inf) is refused as well.
UNUSABLE_VALUES = {
    "per_device_train_batch_size": (lambda value: value < 1,
                                    "below 1 the training DataLoader raises ValueError when training starts"),
    "per_device_eval_batch_size": (lambda value: value < 1,
                                   "below 1 the evaluation DataLoader raises ValueError at the first evaluation"),
    "gradient_accumulation_steps": (lambda value: value < 1, "0 raises ZeroDivisionError when training starts and a "
                                                             "negative value trains 0 steps"),
    "eval_accumulation_steps": (lambda value: value == 0, "0 raises ZeroDivisionError at the first evaluation"),
    "learning_rate": (lambda value: value < 0, "below 0 the optimizer raises ValueError (Invalid learning rate) when "
                                               "training starts"),
    "dataloader_num_workers": (lambda value: value < 0, "below 0 the DataLoader raises ValueError when training "
                                                        "starts"),
    # The default AdamW checks these only when it is built, at the start of training (a negative weight_decay goes
    # into the parameter groups, which it does not check: that one trains)
    "adam_beta1": (lambda value: not 0 <= value < 1, "outside [0, 1) AdamW raises ValueError when training starts"),
    "adam_beta2": (lambda value: not 0 <= value < 1, "outside [0, 1) AdamW raises ValueError when training starts"),
    "adam_epsilon": (lambda value: value < 0, "below 0 AdamW raises ValueError when training starts"),
}
# The fields TrainingArguments opens as a file when given a path (a string not starting with "{"): the library reads
# them in __post_init__ with open() and json.load, so a FIFO would block forever and /dev/zero read until memory ran
# out. tests/test_hostile_transformers.py finds them in the installed TrainingArguments by giving every field that
# takes a string a FIFO and watching which ones open it.
CONFIG_FILE_FLAGS = ("accelerator_config", "deepspeed", "fsdp_config")
MAX_CONFIG_BYTES = 1 << 20  # a JSON config is a few KiB; more is not a config

# pip lines for report_to integrations whose package name differs from the integration name.
INTEGRATION_PACKAGES = {"comet_ml": "comet-ml", "azure_ml": "azureml-core", "flyte": "flytekit",
                        "kubeflow": "kubeflow-training"}


def make_parser() -> argparse.ArgumentParser:
    parser = build_parser(SCRIPT, __doc__, EXAMPLE)
    own = parser.add_argument_group("this script's own flags (hyphenated; everything else goes to TrainingArguments)")
    own.add_argument("--seq2seq", action="store_true", help="parse Seq2SeqTrainingArguments and check Seq2SeqTrainer")
    own.add_argument("--no-eval-dataset", action="store_true",
                     help="the run passes no eval_dataset to Trainer (an eval strategy then fails at init)")
    own.add_argument("--metric-keys", default=None, metavar="KEY[,KEY]",
                     help="keys your compute_metrics returns (e.g. accuracy,f1): checks --metric_for_best_model")
    parse_known = parser.parse_known_args

    def parse_with_training_flags(args=None, namespace=None):
        # The contract parser takes its own flags; the rest are TrainingArguments flags for HfArgumentParser.
        known, training_flags = parse_known(args, namespace)
        known.training_flags = training_flags
        given = sys.argv[1:] if args is None else args
        known.seed_given = any(flag == "--seed" or flag.startswith("--seed=") for flag in given)
        return known

    parser.parse_args = parse_with_training_flags
    return parser


def validate(args) -> None:
    """Before any heavy import: removed 5.x flags are usage errors; --device cpu hides CUDA from torch."""
    for flag in args.training_flags:
        name = flag[2:].split("=", 1)[0].replace("-", "_") if flag.startswith("--") else None
        if name in REMOVED_FLAGS:
            raise SmokeError(f"--{name} was removed in Transformers 5: {REMOVED_FLAGS[name]}", EXIT_USAGE)
    if args.device == "cpu":
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # validate as on a CPU-only machine (set before torch loads)


def missing_package(exc: Exception) -> SmokeError:
    """A dependency TrainingArguments needs for a flag (deepspeed, ...): exit 3 with the pip line."""
    quoted = re.search(r"'([A-Za-z0-9_.\-]+[^']*)' distribution", str(exc))
    requirement = quoted.group(1) if quoted else getattr(exc, "name", None) or str(exc)
    # PackageNotFoundError prefixes its own sentence to Transformers' one: name the requirement alone
    message = f"{requirement} is not installed" if quoted else " ".join(str(exc).split())
    return SmokeError(f"missing dependency for these flags: {message}; fix: pip install '{requirement}'",
                      EXIT_MISSING_DEPENDENCY)


def parse_training_arguments(run):
    from transformers import HfArgumentParser, Seq2SeqTrainingArguments, TrainingArguments

    class OneLineHfArgumentParser(HfArgumentParser):
        def error(self, message):
            raise SmokeError(f"TrainingArguments flags: {message}", EXIT_USAGE)

    flags = list(run.args.training_flags)
    if run.args.seed_given:
        flags += ["--seed", str(run.args.seed)]
    # No prefixes: --see 5 would set TrainingArguments.seed while --seed (the contract's) stayed unset
    parser = OneLineHfArgumentParser(Seq2SeqTrainingArguments if run.args.seq2seq else TrainingArguments,
                                     allow_abbrev=False)
    parsed, _ = parser.parse_known_args(args=flags)
    for name in CONFIG_FILE_FLAGS:
        if problem := config_file_problem(name, getattr(parsed, name, None)):
            raise SmokeError(f"--{name} {getattr(parsed, name)!r}: {problem}", EXIT_USAGE)
    for name, number in vars(parsed).items():  # before TrainingArguments: int(inf) raises OverflowError there
        if isinstance(number, float) and not math.isfinite(number):
            raise SmokeError(f"--{name} {number} is not a finite number: depending on the field, training raises, "
                             "the weights become NaN, or the field silently does nothing", EXIT_USAGE)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            training_args, unknown = parser.parse_args_into_dataclasses(
                args=flags, return_remaining_strings=True, look_for_args_file=False)
        except (importlib.metadata.PackageNotFoundError, ImportError) as exc:
            raise missing_package(exc) from None
        except ValueError as exc:
            raise SmokeError(f"TrainingArguments rejected these flags: {' '.join(str(exc).split())}") from None
    if unknown:
        raise SmokeError(f"not TrainingArguments flags: {' '.join(unknown)} (see --help)", EXIT_USAGE)
    for name, (unusable, consequence) in UNUSABLE_VALUES.items():
        if unusable(getattr(training_args, name)):
            raise SmokeError(f"--{name} {getattr(training_args, name)}: TrainingArguments accepts it, but "
                             f"{consequence}", EXIT_USAGE)
    if training_args.max_steps <= 0 and training_args.num_train_epochs <= 0:
        raise SmokeError(f"--num_train_epochs {training_args.num_train_epochs} without --max_steps: training would "
                         "run 0 steps, without an error", EXIT_USAGE)
    deprecations = sorted({str(w.message) for w in caught if issubclass(w.category, (FutureWarning, DeprecationWarning))
                           and "transformers" in (w.filename or "")})
    return training_args, deprecations


def config_file_problem(name: str, given) -> str | None:
    """Why the path given to a config-file flag cannot be read as TrainingArguments reads it, or None: checked before
    the library opens it. Inline JSON ("{...}") and, for --deepspeed, base64-encoded JSON are not paths."""
    if not isinstance(given, str) or not given or given.startswith("{"):
        return None
    try:
        info = os.stat(given)
    except FileNotFoundError:
        if name == "deepspeed" and is_base64_json(given):
            return None
        also = " (nor base64-encoded JSON)" if name == "deepspeed" else ""
        return f"no such file{also}; give a JSON config file"
    except (OSError, ValueError) as exc:
        return f"cannot be read ({getattr(exc, 'strerror', None) or exc}); give a JSON config file"
    if stat.S_ISDIR(info.st_mode):
        return "is a folder; give a JSON config file"
    if not stat.S_ISREG(info.st_mode):
        return ("is not a regular file (a FIFO, a device or a socket: reading it could block forever or never end); "
                "give a JSON config file")
    if info.st_size > MAX_CONFIG_BYTES:
        return f"is {info.st_size} bytes, more than a config file's {MAX_CONFIG_BYTES}; give a JSON config file"
    try:
        with open(given, "rb") as file:
            config = json.loads(file.read(MAX_CONFIG_BYTES + 1), parse_constant=refuse_non_finite)
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc}); give a JSON config file"
    except RecursionError:
        return "is not valid JSON (nested too deeply)"
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        return f"is not valid JSON ({' '.join(str(exc).split())[:200]})"
    if not isinstance(config, dict):
        return f"holds a JSON {type(config).__name__}, not an object of settings"
    return None


def refuse_non_finite(name: str) -> None:
    """NaN, Infinity and -Infinity are not JSON (Python's json reads them): a learning rate of NaN trains nothing."""
    raise ValueError(f"{name} is not a JSON number")


def is_base64_json(text: str) -> bool:
    try:
        return isinstance(json.loads(base64.urlsafe_b64decode(text).decode("utf-8")), dict)
    except (binascii.Error, ValueError, RecursionError):
        return False


def check_integrations(run, training_args) -> None:
    from transformers.integrations import get_available_reporting_integrations, get_reporting_integration_callbacks

    with run.step("report_to.known"):
        get_reporting_integration_callbacks(training_args.report_to)  # the library's own ValueError for a typo
    available = set(get_available_reporting_integrations())
    for name in training_args.report_to:
        if name not in available:
            package = INTEGRATION_PACKAGES.get(name, name)
            raise SmokeError(f"report_to {name!r} is not installed; fix: pip install {package} (or --report_to none)",
                             EXIT_MISSING_DEPENDENCY)
    run.check("report_to.installed", True, training_args.report_to or "none")


def check_trainer_init(run, training_args) -> None:
    """Build the Trainer the run will build: the checks Trainer.__init__ makes fire here, not hours later."""
    from transformers import AutoConfig, AutoModelForSequenceClassification, Seq2SeqTrainer, Trainer

    trial_args = copy.copy(training_args)
    trial_args.output_dir = str(run.output_dir / "trainer-init")  # Trainer init creates output_dir: not the user's
    trial_args.push_to_hub = False  # with push_to_hub, Trainer init creates the Hub repo
    config = AutoConfig.for_model("bert", vocab_size=16, hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
                                  intermediate_size=8, max_position_embeddings=8)
    model = AutoModelForSequenceClassification.from_config(config)
    examples = [{"input_ids": [1, 2, 3], "labels": 0}, {"input_ids": [3, 2], "labels": 1}]
    trainer_class = Seq2SeqTrainer if run.args.seq2seq else Trainer
    with run.step("trainer_init"):
        trainer_class(model=model, args=trial_args, train_dataset=examples,
                      eval_dataset=None if run.args.no_eval_dataset else examples)
    run.check("trainer_init", True, f"{trainer_class.__name__}(...) accepted these arguments")


def check_best_metric(run, training_args) -> None:
    if not (run.args.metric_keys and training_args.metric_for_best_model):
        return
    known = {"loss", *(key.strip() for key in run.args.metric_keys.split(",") if key.strip())}
    metric = training_args.metric_for_best_model.removeprefix("eval_")
    # Trainer looks the metric up at the first evaluation (KeyError there), with or without the eval_ prefix.
    run.check("metric_for_best_model.known", metric in known,
              f"{training_args.metric_for_best_model!r} among eval metrics {sorted(f'eval_{key}' for key in known)}",
              actual=metric, expected={"in": sorted(known)})


def value(field):
    return getattr(field, "value", field)


def decisions(run, training_args, deprecations: list[str]) -> dict:
    flags = {flag[2:].split("=", 1)[0].replace("-", "_") for flag in run.args.training_flags if flag.startswith("--")}
    args = training_args
    precision = "bf16" if args.bf16 else "fp16" if args.fp16 else "fp32"
    notices = [f"deprecated: {message}" for message in deprecations]
    if value(args.eval_strategy) == "steps" and "eval_steps" not in flags:
        notices.append(f"eval_steps not given: evaluation runs every logging_steps ({args.logging_steps}) steps")
    if args.load_best_model_at_end and value(args.save_strategy) == "steps" and args.save_steps != args.eval_steps:
        notices.append(f"load_best_model_at_end with eval_steps {args.eval_steps} but save_steps {args.save_steps}: "
                       "a best evaluation between saves is never saved, so the end loads an older checkpoint or "
                       f"none (best_model_checkpoint None); save at every evaluation (--save_steps {args.eval_steps})"
                       " or at every improvement (--save_strategy best), or keep the cadence with the"
                       " LoadBestSavedCheckpoint callback (references/troubleshooting.md, \"The best evaluation falls"
                       " on a step that is not saved\")")
    if args.load_best_model_at_end and "metric_for_best_model" not in flags:
        notices.append("metric_for_best_model not given: load_best_model_at_end keeps the lowest eval_loss")
    custom_metric = (args.metric_for_best_model or "loss").removeprefix("eval_") != "loss"
    if custom_metric and not run.args.metric_keys:
        notices.append(f"metric_for_best_model={args.metric_for_best_model!r} must be a key compute_metrics returns; "
                       "a typo raises KeyError at the first evaluation (check it with --metric-keys)")
    if args.gradient_accumulation_steps > 1:
        notices.append("gradient_accumulation_steps > 1: *ForSequenceClassification models log and backpropagate an "
                       "N times too large loss (huggingface/transformers#47688); set model.accepts_loss_kwargs = False")
    if args.push_to_hub:
        notices.append(f"push_to_hub: Trainer init creates the Hub repo {args.hub_model_id or '<output_dir name>'} and "
                       "every save uploads (needs `hf auth login` or HF_TOKEN); checked here with push_to_hub off")
    if args.resume_from_checkpoint:
        notices.append("Trainer ignores the resume_from_checkpoint field: "
                       "pass trainer.train(resume_from_checkpoint=...)")
    if args.max_steps > 0 and "num_train_epochs" in flags:
        notices.append("max_steps > 0 overrides num_train_epochs")
    return {
        "arguments_class": type(args).__name__,
        "output_dir": args.output_dir,
        "output_dir_exists": os.path.isdir(args.output_dir),
        "device": str(args.device),
        "n_gpu": args.n_gpu,
        "world_size": args.world_size,
        "precision": precision,
        "per_device_train_batch_size": args.per_device_train_batch_size,
        "gradient_accumulation_steps": args.gradient_accumulation_steps,
        "effective_train_batch_size": args.per_device_train_batch_size * max(args.n_gpu, 1)
                                      * args.gradient_accumulation_steps * args.world_size,
        "duration": f"{args.max_steps} steps" if args.max_steps > 0 else f"{args.num_train_epochs} epochs",
        "learning_rate": args.learning_rate,
        "lr_scheduler_type": value(args.lr_scheduler_type),
        "warmup_steps": args.warmup_steps,
        "optim": value(args.optim),
        "eval_strategy": value(args.eval_strategy),
        "eval_steps": args.eval_steps,
        "eval_dataset": not run.args.no_eval_dataset,
        "logging_strategy": value(args.logging_strategy),
        "logging_steps": args.logging_steps,
        "save_strategy": value(args.save_strategy),
        "save_steps": args.save_steps,
        "save_total_limit": args.save_total_limit,
        "load_best_model_at_end": args.load_best_model_at_end,
        "metric_for_best_model": args.metric_for_best_model,
        "greater_is_better": args.greater_is_better,
        "report_to": args.report_to,
        "push_to_hub": args.push_to_hub,
        "hub_model_id": args.hub_model_id,
        "torch_compile": args.torch_compile,
        "torch_compile_backend": args.torch_compile_backend,
        "activation_checkpointing": args.activation_checkpointing,
        "fsdp": bool(args.fsdp),
        "deepspeed": args.deepspeed,
        "remove_unused_columns": args.remove_unused_columns,
        "label_names": args.label_names,
        "seed": args.seed,
        "notices": notices,
    }


def body(run) -> None:
    run.resolve_device()
    require("transformers", "pip install 'transformers[torch]'")
    require("accelerate", "pip install accelerate")  # Trainer needs it; a missing one is exit 3, not a traceback
    with run.step("training_arguments"):
        training_args, deprecations = parse_training_arguments(run)
        summary = decisions(run, training_args, deprecations)
    # --json carries the decisions in this check; otherwise they are printed on stdout below.
    run.check("training_arguments", True, summary if run.args.json else "built; decisions on stdout")
    check_integrations(run, training_args)
    check_trainer_init(run, training_args)
    check_best_metric(run, training_args)
    if not run.args.json:
        for key, item in summary.items():
            for line in item if key == "notices" else [item]:
                print(f"{'notice' if key == 'notices' else key}: {line}")


def main(argv=None) -> int:
    return run_main(SCRIPT, make_parser(), body, DISTRIBUTIONS, argv, validate=validate)


if __name__ == "__main__":
    sys.exit(main())
