"""Producers for the errors the transformers-training skill quotes: each makes the installed library raise it.

They run in the pytest process with tiny models (the transformers import is paid once per worker); the two
that depend on process-wide state run a child process instead: the Hub lookup of `evaluate.load` (offline
variables are read at import) and bf16 without a GPU (CUDA must be hidden before torch loads).
"""

from __future__ import annotations

import functools
import json
import shutil
import site
import subprocess
import sys
from pathlib import Path

from .harness import CUDA, ScriptResult, run_command, run_python
from .quoted_errors import produces, raised
from .shared_runs import run_once, session_tmp_path_factory
from .transformers_kit import arguments, multi_label_rows, rows, text_dataset, tiny_classifier, word_tokenizer


@produces("removed-training-argument")
def _(tmp):
    from transformers import TrainingArguments

    return raised(lambda: TrainingArguments(output_dir=str(tmp), evaluation_strategy="steps"))


@produces("trainer-tokenizer-keyword")
def _(tmp):
    from transformers import Trainer

    return raised(lambda: Trainer(model=tiny_classifier(), args=arguments(tmp), tokenizer=None))


@produces("load-best-strategies-differ")
def _(tmp):
    return raised(lambda: arguments(tmp, eval_strategy="steps", save_strategy="epoch", load_best_model_at_end=True))


@produces("save-steps-not-multiple")
def _(tmp):
    return raised(lambda: arguments(tmp, eval_strategy="steps", eval_steps=10, save_strategy="steps", save_steps=15,
                                    load_best_model_at_end=True))


@produces("best-without-metric")
def _(tmp):
    from transformers import Trainer

    return raised(lambda: Trainer(model=tiny_classifier(), args=arguments(tmp, save_strategy="best")))


@produces("eval-strategy-without-dataset")
def _(tmp):
    from transformers import Trainer

    return raised(lambda: Trainer(model=tiny_classifier(), args=arguments(tmp, eval_strategy="steps"),
                                  train_dataset=rows()))


@produces("metric-for-best-model-typo")
def _(tmp):
    from transformers import Trainer

    def accuracy(prediction):
        return {"accuracy": float((prediction.predictions.argmax(-1) == prediction.label_ids).mean())}

    trainer = Trainer(model=tiny_classifier(), compute_metrics=accuracy, train_dataset=rows(), eval_dataset=rows(),
                      args=arguments(tmp, eval_strategy="steps", eval_steps=1, save_strategy="steps", save_steps=1,
                                     load_best_model_at_end=True, metric_for_best_model="eval_acc"))
    return raised(trainer.train, KeyError)


@produces("early-stopping-without-metric")
def _(tmp):
    from transformers import EarlyStoppingCallback, Trainer

    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp, eval_strategy="steps", eval_steps=1),
                      train_dataset=rows(), eval_dataset=rows(), callbacks=[EarlyStoppingCallback()])
    return raised(trainer.train, AssertionError)


@produces("invalid-optimizer")
def _(tmp):
    return raised(lambda: arguments(tmp, optim="adamw_hf"))


@produces("report-to-not-installed")
def _(tmp):
    from transformers import Trainer

    return raised(lambda: Trainer(model=tiny_classifier(), args=arguments(tmp, report_to="wandb")))


@produces("push-to-hub-at-init")
def _(tmp):
    import huggingface_hub.constants as hub_constants
    from transformers import Trainer

    saved_offline = hub_constants.HF_HUB_OFFLINE
    hub_constants.HF_HUB_OFFLINE = True  # Hub offline mode: the request raises instead of leaving the machine
    try:
        return raised(lambda: Trainer(model=tiny_classifier(), args=arguments(tmp, push_to_hub=True,
                                                                              hub_model_id="someone/tiny")))
    finally:
        hub_constants.HF_HUB_OFFLINE = saved_offline


@produces("no-pad-token")
def _(tmp):
    from transformers import DataCollatorForLanguageModeling

    tokenizer = word_tokenizer(eos_token="</s>")
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    return raised(lambda: collator([tokenizer("a b c"), tokenizer("a")]))


@produces("mlm-without-mask-token")
def _(tmp):
    from transformers import DataCollatorForLanguageModeling

    tokenizer = word_tokenizer(eos_token="</s>", pad_token="</s>")
    return raised(lambda: DataCollatorForLanguageModeling(tokenizer)([tokenizer("a b c")]))


@produces("no-loss-returned")
def _(tmp):
    from transformers import DataCollatorWithPadding, Trainer

    tokenizer, data = text_dataset("target")
    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp), train_dataset=data,
                      data_collator=DataCollatorWithPadding(tokenizer))
    return raised(trainer.train)


@produces("string-column-kept")
def _(tmp):
    from transformers import DataCollatorWithPadding, Trainer

    tokenizer, data = text_dataset("label")
    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp, remove_unused_columns=False), train_dataset=data,
                      data_collator=DataCollatorWithPadding(tokenizer))
    return raised(trainer.train)


def _multi_label_batch(problem_type: str | None):
    """A tiny 3-label classifier (problem_type as given) and a batch of 2 rows whose multi-hot labels are ints."""
    import torch

    model = tiny_classifier(num_labels=3, **({"problem_type": problem_type} if problem_type else {}))
    batch = multi_label_rows(2)
    return model, {"input_ids": torch.stack([row["input_ids"] for row in batch]),
                   "labels": torch.stack([row["labels"] for row in batch]).long()}


@produces("multi-label-int-labels")
def _(tmp):
    model, batch = _multi_label_batch("multi_label_classification")
    return raised(lambda: model(**batch), RuntimeError)


@produces("multi-label-without-problem-type")
def _(tmp):
    model, batch = _multi_label_batch(None)  # int labels: the head infers single_label_classification
    return raised(lambda: model(**batch), ValueError)


@produces("no-checkpoint-in-output-dir")
def _(tmp):
    from transformers import Trainer

    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp), train_dataset=rows())
    return raised(lambda: trainer.train(resume_from_checkpoint=True))


@produces("no-checkpoint-at-path")
def _(tmp):
    from transformers import Trainer

    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp), train_dataset=rows())
    return raised(lambda: trainer.train(resume_from_checkpoint=str(tmp / "checkpoint-500")))


_saved_checkpoints: dict[str, Path] = {}


def damaged_checkpoint(tmp: Path, name: str, damage) -> Path:
    """A copy of a real checkpoint-1 (a 1-step run of the tiny classifier, made once per worker) in
    ``tmp/out``, with ``damage(tmp/out/checkpoint-1/name)`` applied."""
    from transformers import Trainer

    if "checkpoint-1" not in _saved_checkpoints:
        source = tmp / "source"
        Trainer(model=tiny_classifier(), train_dataset=rows(),
                args=arguments(source, max_steps=1, save_strategy="steps", save_steps=1)).train()
        _saved_checkpoints["checkpoint-1"] = source / "out" / "checkpoint-1"
    checkpoint = tmp / "out" / "checkpoint-1"
    shutil.copytree(_saved_checkpoints["checkpoint-1"], checkpoint)
    damage(checkpoint / name)
    return checkpoint


def resume_raises(tmp: Path, name: str, damage) -> str:
    """What trainer.train(resume_from_checkpoint=True) raises with that damage (max_steps=2: one step to go)."""
    from transformers import Trainer

    damaged_checkpoint(tmp, name, damage)
    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp), train_dataset=rows())
    return raised(lambda: trainer.train(resume_from_checkpoint=True))


def cut_in_half(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def empty(path: Path) -> None:
    path.write_bytes(b"")


def other_format(path: Path) -> None:
    """The bytes of the other format: optimizer.pt (a zip) as model.safetensors, model.safetensors as a .pt file."""
    path.write_bytes((path.parent / ("optimizer.pt" if path.suffix == ".safetensors" else "model.safetensors"))
                     .read_bytes())


# Damage to one file of a saved checkpoint -> what resuming from it raises.
# scheduler.pt is 1.5 kB here: a truncated file under 4 kB or over 64 kB gives "torch-file-truncated"; rng_state.pth
# is 14 kB: torch 2.7 and 2.13 raise "torch-file-truncated-mid-size" for a truncated file between 4 and 64 kB.
RESUME_DAMAGE = {
    "resume-incomplete-checkpoint": ("trainer_state.json", Path.unlink),
    "trainer-state-empty": ("trainer_state.json", empty),
    "safetensors-truncated": ("model.safetensors", cut_in_half),
    "safetensors-empty": ("model.safetensors", empty),
    "safetensors-wrong-format": ("model.safetensors", other_format),
    "torch-file-truncated": ("scheduler.pt", cut_in_half),
    "torch-file-truncated-mid-size": ("rng_state.pth", cut_in_half),
    "torch-file-empty": ("optimizer.pt", empty),
    "torch-file-wrong-format": ("optimizer.pt", other_format),
}
for error_id, (name, damage) in RESUME_DAMAGE.items():
    produces(error_id)(functools.partial(resume_raises, name=name, damage=damage))


@produces("example-script-needs-newer-transformers")
def _(tmp):
    from transformers.utils import check_min_version

    return raised(lambda: check_min_version("99.0.0.dev0"), ImportError)


@produces("bf16-without-gpu")
def _(tmp):
    if not CUDA:
        return raised(lambda: arguments(tmp, use_cpu=False, bf16=True))
    code = ("from transformers import TrainingArguments\n"
            "try:\n    TrainingArguments(output_dir='out', bf16=True)\n"
            "except ValueError as exc:\n    print(f'ValueError: {exc}')\n")
    return run_python(["-c", code], tmp, env={"CUDA_VISIBLE_DEVICES": ""}).stdout.strip()


TORCH_LESS_PROBE = """
import importlib.util, json
from transformers import AutoModelForSequenceClassification, Trainer, TrainingArguments

result = {"torch_found": importlib.util.find_spec("torch") is not None,
          "training_arguments": type(TrainingArguments(output_dir="out", report_to="none")).__name__}
for name, build in (("Trainer", Trainer), ("model", lambda: AutoModelForSequenceClassification.from_config(None))):
    try:
        build()
    except ImportError as exc:
        result[name] = f"ImportError: {exc}"
print(json.dumps(result))
"""


def torch_less_python(tmp: Path) -> Path:
    """The python of a venv that sees this suite's packages except torch and those built on it (a plain
    `pip install transformers`)."""
    packages = tmp / "packages-without-torch"
    packages.mkdir()
    for entry in Path(site.getsitepackages()[0]).iterdir():
        if not entry.name.lower().startswith(("torch", "functorch", "pytorch", "nvidia", "triton")):
            (packages / entry.name).symlink_to(entry)
    venv = tmp / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    python = venv / "bin" / "python"
    venv_site = subprocess.run([python, "-c", "import site; print(site.getsitepackages()[0])"], check=True,
                               capture_output=True, text=True).stdout.strip()
    (Path(venv_site) / "without-torch.pth").write_text(f"{packages}\n")
    return python


def torch_less_probe(tmp: Path) -> ScriptResult:
    """TORCH_LESS_PROBE run without torch: its stdout is one JSON object, its stderr what importing transformers
    printed."""
    return run_command([str(torch_less_python(tmp)), "-c", TORCH_LESS_PROBE], tmp)


@produces("trainer-without-torch")
def _(tmp):
    result = torch_less_probe(tmp)
    assert result.returncode == 0, result.stderr[-2000:]
    return result.json["Trainer"]


EVALUATE_PROBE = """
import importlib, importlib.util, json, os, sys
# The offline variables are read when huggingface_hub and evaluate are imported, so each environment imports them
# in its own fork. What they pull in that reads no HF_* variable (torch, torchvision, pandas) is loaded once before.
for name in ("torch", "torchvision", "pandas"):
    if importlib.util.find_spec(name):
        importlib.import_module(name)
assert not {"huggingface_hub", "transformers", "datasets", "evaluate"} & set(sys.modules)
for variables in map(json.loads, sys.argv[2:]):
    for call in ("hub_name", "local"):  # one fork each: the guard's log tells the two calls' attempts apart by pid
        pid = os.fork()
        if pid == 0:
            os.environ.update(variables)
            import evaluate
            result = {"env": variables, "call": call, "pid": os.getpid()}
            if call == "local":
                metric = evaluate.load(sys.argv[1])
                result["value"] = metric.compute(predictions=[1, 0, 1, 1], references=[1, 1, 1, 0])
            else:
                try:
                    evaluate.load("accuracy")
                except Exception as exc:
                    result["value"] = f"{type(exc).__name__}: {exc}"
            print(json.dumps(result), flush=True)
            os._exit(0)
        if os.waitpid(pid, 0)[1]:
            sys.exit(f"the {call} probe with {variables} failed")
"""
METRIC_MODULE = Path(__file__).resolve().parent.parent.parent / "skills/transformers-training/assets/accuracy_metric.py"
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1"}
PROBED_ENVIRONMENTS = [OFFLINE, *({name: value} for name, value in OFFLINE.items()), {}]


def evaluate_offline_probe(call: str, env: dict | None = None) -> tuple[object, list[str]]:
    """``call`` is "hub_name" (`evaluate.load("accuracy")`) or "local" (the skill's metric module file), made under
    ``env`` (both offline variables by default) in a guarded fork: (its result or error text, its network attempts).
    One child per session probes every call in every environment of PROBED_ENVIRONMENTS; the quoted-error gate and
    the evaluate tests share it."""
    env = OFFLINE if env is None else env
    result = run_once(session_tmp_path_factory(), "evaluate-offline-probe",
                      ["-c", EVALUATE_PROBE, str(METRIC_MODULE), *map(json.dumps, PROBED_ENVIRONMENTS)])
    assert result.returncode == 0, result.stderr[-2000:]
    probes = {(json.dumps(probe["env"]), probe["call"]): probe
              for probe in map(json.loads, (line for line in result.stdout.splitlines() if line.startswith("{")))}
    assert len(probes) == 2 * len(PROBED_ENVIRONMENTS), result.stdout
    probe = probes[json.dumps(env), call]
    return probe.get("value"), [attempt for attempt in result.network_attempts
                                if attempt.split()[0] == str(probe["pid"])]


@produces("evaluate-hub-metric-offline")
def _(tmp):
    return evaluate_offline_probe("hub_name")[0]


if __name__ == "__main__":  # cd tests && python -m support.quoted_errors_transformers: every message, for the quotes
    import tempfile

    from .quoted_errors import PRODUCERS

    for error_id, producer in PRODUCERS.items():
        print(f"{error_id}:\n  {producer(Path(tempfile.mkdtemp()))}", file=sys.stderr)
