"""The trap checker's recall misses found on real code (issue #25, second round): imports 5.x removed
(removed-import, TF035), and the spellings the existing rules missed (functools.partial(Trainer, tokenizer=...), an
aliased evaluate.load, predict_with_generate set on the arguments, a removed field set on parsed arguments, a mixin's
self.tokenizer, launch commands joined from f-strings), each with a look-alike that must stay clean."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from support.harness import SKILLS_DIR, import_script
from support.manifest import SKILLS

HF = "transformers-training"
COPIES = {skill: import_script(SKILLS_DIR / skill / "scripts" / "trap_check.py") for skill in SKILLS}
TC = COPIES[HF]


@pytest.fixture(autouse=True, params=sorted(COPIES))
def copy(request, monkeypatch):
    """Every test runs on each skill's copy of the checker (the mutation drill breaks one copy at a time)."""
    monkeypatch.setitem(globals(), "TC", COPIES[request.param])
    return request.param


def findings(sources: dict[str, str]) -> list:
    found, broken = TC.check_sources({name: textwrap.dedent(text) for name, text in sources.items()}, HF, "cpu")
    assert broken == [], broken
    return found


def rules(code: str) -> set[str]:
    return {finding.rule for finding in findings({"t.py": code})}


def project(tmp_path: Path, files: dict[str, str], given: list[str]) -> set:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    found, broken = TC.check_sources({str(tmp_path / name): (tmp_path / name).read_text() for name in given}, HF,
                                     "cpu")
    assert broken == [], broken
    return {(finding.rule, Path(finding.path).name, finding.line) for finding in found}


# ---------------------------------------------------------------- removed-import (TF035)

@pytest.mark.parametrize("code, note", [
    ("import transformers.deepspeed\n", "transformers.deepspeed (5.x: transformers.integrations.deepspeed)"),
    ("from transformers.deepspeed import HfDeepSpeedConfig\n", "transformers.integrations.deepspeed"),
    ("from transformers.trainer_utils import EvaluationStrategy\n", "transformers.trainer_utils.IntervalStrategy"),
    ("from transformers import AdamW, get_linear_schedule_with_warmup\n", "transformers.AdamW (5.x: torch.optim.AdamW)"),
    ("from datasets import load_dataset, load_metric\n", "datasets.load_metric (5.x: evaluate.load)"),
    ("import datasets\nmetric = datasets.load_metric('glue', 'mrpc')\n", "datasets.load_metric"),
    ("import transformers as tf\nopt = tf.optimization.AdamW(params)\n", "transformers.optimization.AdamW"),
    ("from transformers.utils import check_min_version, send_example_telemetry\n", "drop the call"),
    ("from transformers import TFAutoModelForSequenceClassification\n", "TensorFlow and Flax are gone"),
    ("import transformers\nds = transformers.deepspeed.HfDeepSpeedConfig(cfg)\n", "transformers.deepspeed"),
])
def test_an_import_5x_removed_is_named_with_its_replacement(code, note):
    found = findings({"t.py": code})
    assert [finding.rule for finding in found] == ["removed-import"], found
    assert note in found[0].note, found[0].note


@pytest.mark.parametrize("code", [
    # the 5.x name first, the 4.x one as the fallback a 5.x run never reaches (and the other way round)
    "try:\n    from transformers.integrations.deepspeed import HfDeepSpeedConfig\nexcept ImportError:\n"
    "    from transformers.deepspeed import HfDeepSpeedConfig\n",
    "try:\n    from transformers import AdamW\nexcept (ImportError, AttributeError):\n    from torch.optim import AdamW\n",
    "try:\n    from datasets import load_metric\nexcept Exception:\n    load_metric = None\n",
    "import contextlib\nwith contextlib.suppress(ImportError):\n    from transformers import AdamW\n",
    "import transformers\nfrom packaging import version\nif version.parse(transformers.__version__) < version.parse('5'):\n"
    "    from transformers.trainer_utils import EvaluationStrategy\nelse:\n"
    "    from transformers.trainer_utils import IntervalStrategy as EvaluationStrategy\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from transformers.deepspeed import HfDeepSpeedConfig\n",
    "import transformers\nif hasattr(transformers, 'AdamW'):\n    opt = transformers.AdamW(params)\n",
    "import transformers, torch\ntransformers.AdamW = torch.optim.AdamW\nopt = transformers.AdamW(params)\n",  # a shim
    "from datasets import load_dataset\ndatasets = load_dataset('imdb')\nprint(datasets.Metric)\n",  # a variable
    "from torch.optim import AdamW\nfrom transformers import get_scheduler, IntervalStrategy\nimport evaluate\n",
])
def test_a_guarded_import_or_a_name_5x_has_is_not_reported(code):
    assert findings({"t.py": code}) == []


def test_an_import_in_a_try_that_handles_another_error_is_reported():
    code = "try:\n    from transformers import AdamW\nexcept ValueError:\n    pass\n"
    assert rules(code) == {"removed-import"}
    code = "try:\n    import evaluate\nexcept ImportError:\n    pass\nelse:\n    from datasets import load_metric\n"
    assert rules(code) == {"removed-import"}  # try's else runs when the import worked: no guard


def test_a_package_of_the_project_s_own_is_not_the_library(tmp_path):
    """A `datasets/` folder next to the script (a project's own data package): `from datasets import load_metric`
    reads it, not Hugging Face datasets; a removed import in a helper the script imports is named at its line."""
    files = {"datasets/__init__.py": "def load_metric(name):\n    return name\n",
             "train.py": "from datasets import load_metric\nimport helpers\n",
             "helpers.py": "\nfrom transformers import AdamW\n"}
    assert project(tmp_path, files, ["train.py"]) == {("removed-import", "helpers.py", 2)}


# ---------------------------------------------------------------- recall misses of the existing rules

def test_a_trainer_made_through_functools_partial_with_tokenizer():
    """partial(Trainer, tokenizer=tok) calls Trainer(tokenizer=...) later: the TypeError of trainer-tokenizer."""
    code = "import functools\nfrom transformers import {cls}\nmake = functools.partial({cls}, {kw}=tok)\n"
    assert rules(code.format(cls="Trainer", kw="tokenizer")) == {"trainer-tokenizer"}
    assert rules(code.format(cls="Seq2SeqTrainer", kw="tokenizer").replace("functools.partial", "partial")
                 .replace("import functools", "from functools import partial")) == {"trainer-tokenizer"}
    assert rules(code.format(cls="Trainer", kw="processing_class")) == set()
    assert rules(code.format(cls="DataCollatorWithPadding", kw="tokenizer")) == set()  # not a Trainer


def test_evaluate_load_bound_by_a_fallback_import_is_the_hub_load():
    """`from evaluate import load as load_metric` first, datasets' load_metric as the fallback 4.x code needs: on
    5.x the first runs, so load_metric("accuracy") is evaluate.load("accuracy")."""
    code = ("try:\n    from evaluate import load as load_metric\nexcept ImportError:\n"
            "    from datasets import load_metric\nmetric = load_metric({})\n")
    assert rules(code.format("'accuracy'")) == {"evaluate-hub-load"}
    assert rules(code.format("'assets/accuracy_metric.py'")) == set()


def test_predict_with_generate_set_on_the_arguments():
    """`args.predict_with_generate = True` without a generation length anywhere: generate-max-length, for built
    arguments, and for parsed ones when every launch read here leaves --generation_max_length out."""
    built = "from transformers import Seq2SeqTrainingArguments\nargs = Seq2SeqTrainingArguments(output_dir='o')\n" \
            "args.predict_with_generate = True\n"
    assert rules(built) == {"generate-max-length"}
    assert rules(built + "args.generation_max_length = 64\n") == set()
    assert rules(built.replace("predict_with_generate = True", "predict_with_generate = False")) == set()
    parsed = ("from transformers import HfArgumentParser, Seq2SeqTrainingArguments\n"
              "model_args, training_args = HfArgumentParser((M, Seq2SeqTrainingArguments))"
              ".parse_args_into_dataclasses()\ntraining_args.predict_with_generate = True\n")
    assert rules(parsed) == set()  # no launch read: the length may come on a command line not seen


def test_predict_with_generate_set_on_parsed_arguments_of_a_launch_read_here(tmp_path):
    parsed = ("from transformers import HfArgumentParser, Seq2SeqTrainingArguments\n"
              "model_args, training_args = HfArgumentParser((M, Seq2SeqTrainingArguments))"
              ".parse_args_into_dataclasses()\ntraining_args.predict_with_generate = True\n")
    files = {"train.py": parsed, "run.sh": "python train.py --output_dir o\n"}
    assert project(tmp_path / "a", files, ["train.py", "run.sh"]) == {("generate-max-length", "train.py", 3)}
    files["run.sh"] = "python train.py --output_dir o --generation_max_length 128\n"
    assert project(tmp_path / "b", files, ["train.py", "run.sh"]) == set()


def test_a_removed_field_set_on_the_arguments_is_silently_ignored():
    """`training_args.evaluation_strategy = "steps"` after parsing: 5.x raises nothing and never reads it
    (measured in test_setting_a_removed_field_raises_nothing_and_changes_nothing). Not a field the project reads
    back itself, nor a field the project's subclass declares, nor overwrite_output_dir (no Trainer ever read it)."""
    parsed = ("from transformers import HfArgumentParser, TrainingArguments\n"
              "model_args, training_args = HfArgumentParser((M, TrainingArguments)).parse_args_into_dataclasses()\n"
              "training_args.{} = {}\n")
    found = findings({"t.py": parsed.format("evaluation_strategy", "'steps'")})
    assert [(f.rule, f.line) for f in found] == [("removed-field-set", 3)] and 'eval_strategy="steps"' in found[0].note
    assert rules(parsed.format("eval_strategy", "'steps'")) == set()
    assert rules(parsed.format("overwrite_output_dir", "True")) == set()
    assert rules(parsed.format("warmup_ratio", "0.1") + "print(training_args.warmup_ratio)\n") == {
        "removed-argument-read"}  # read back: the read raises nothing either, but the project uses its own value
    assert rules(parsed.format("warmup_ratio", "0.1").replace("(M, TrainingArguments)", "(M, Opts)") +
                 "from dataclasses import dataclass\n@dataclass\nclass Opts(TrainingArguments):\n"
                 "    warmup_ratio: float = 0.0\n") == set()
    assert rules("cfg = load()\ncfg.evaluation_strategy = 'steps'\n") == set()  # not training arguments


def test_setting_a_removed_field_raises_nothing_and_changes_nothing(tmp_path):
    """The fact removed-field-set rests on, on the installed transformers."""
    from support.harness import run_python
    code = ("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', report_to=[])\n"
            "args.evaluation_strategy = 'steps'\nargs.warmup_ratio = 0.5\n"
            "print(args.eval_strategy.value, args.get_warmup_steps(100))\n")
    result = run_python(["-c", code], tmp_path, timeout=300)
    assert result.returncode == 0 and result.stdout.split()[-2:] == ["no", "0"], result.stderr[-2000:]


def test_self_tokenizer_in_a_mixin_of_a_trainer_subclass(tmp_path):
    """A mixin (no Trainer itself) whose methods read self.tokenizer, mixed into a Trainer subclass: the read
    raises on the 5.x Trainer. Not when the mixin (or the subclass) gives itself a tokenizer, nor a mixin used only
    by other classes."""
    mixin = "class LoggingMixin:\n    def pad(self):\n        return self.tokenizer.pad_token_id\n"
    trainer = "from transformers import Trainer\nclass MyTrainer(LoggingMixin, Trainer):\n    pass\n"
    found = findings({"t.py": mixin + trainer})
    assert [(f.rule, f.line) for f in found] == [("trainer-self-tokenizer", 3)] and "mixin LoggingMixin" in found[0].note
    assert rules(mixin + trainer.replace("Trainer):", "Trainer):\n    def __init__(self, tokenizer):\n"
                                         "        self.tokenizer = tokenizer\n")) == set()
    assert rules(mixin + "class Logger(LoggingMixin):\n    pass\n") == set()
    files = {"mixins.py": mixin, "train.py": "from mixins import LoggingMixin\n" + trainer}
    assert project(tmp_path, files, ["train.py"]) == {("trainer-self-tokenizer", "mixins.py", 3)}


@pytest.mark.parametrize("command", [
    'cmd = f"torchrun --nproc_per_node {n} " + f"train.py --evaluation_strategy steps"\nos.system(cmd)\n',
    'cmd = f"torchrun --nproc_per_node {n} train.py --evaluation_strategy {how}"\nsubprocess.run(cmd, shell=True)\n',
    'cmd = "torchrun --nproc_per_node 2 " + "train.py " + f"--evaluation_strategy {how}"\nos.system(cmd)\n',
])
def test_a_launch_joined_from_f_strings_is_read_whole(command):
    found = findings({"t.py": "import os, subprocess\n" + command})
    assert [(f.rule, f.line) for f in found] == [("removed-evaluation_strategy", 2)], found


@pytest.mark.parametrize("command", [
    'cmd = f"torchrun --nproc_per_node {n} " + f"train.py --eval_strategy steps"\n',
    'print(f"to evaluate, launch torchrun --nproc_per_node {n} train.py --evaluation_strategy steps")\n',
    'cmd = f"torchrun --nproc_per_node {n} " + script + " --evaluation_strategy steps"\n',  # the script not known
])
def test_a_joined_string_that_is_no_such_launch_finds_nothing(command):
    assert findings({"t.py": command}) == []


def test_a_store_true_resume_flag_every_launch_passes_is_true(tmp_path):
    """`--resume` (store_true) passed by every launch read here makes train(resume_from_checkpoint=args.resume)
    train(resume_from_checkpoint=True): it raises on the first launch. Passed by some launches, by none, or with no
    launch read here, its value is not known (or False): nothing is said."""
    train = ("import argparse\nfrom transformers import Trainer, TrainingArguments\np = argparse.ArgumentParser()\n"
             "p.add_argument('--resume', action='store_true')\nargs = p.parse_args()\n"
             "trainer = Trainer(model=m, args=TrainingArguments(output_dir='o'))\n"
             "trainer.train(resume_from_checkpoint=args.resume)\n")
    cases = {"python train.py --resume\n": {("resume-true-unconditional", "train.py", 7)},
             "python train.py\n": set(), "python train.py --resume\npython train.py\n": set()}
    for index, (launch, expected) in enumerate(cases.items()):
        assert project(tmp_path / str(index), {"train.py": train, "run.sh": launch}, ["train.py", "run.sh"]) == \
            expected, launch
    assert findings({"train.py": train}) == []


def test_a_name_imported_from_a_removed_path_is_named_at_its_import_only():
    """`from transformers.trainer_utils import EvaluationStrategy` raises at the import; a later
    `EvaluationStrategy.NO` never runs, so it is no second finding (seen at NOrangeeroli/story_dataset)."""
    code = "from transformers.trainer_utils import EvaluationStrategy\nif s != EvaluationStrategy.NO:\n    pass\n"
    assert [(f.rule, f.line) for f in findings({"t.py": code})] == [("removed-import", 1)]


# ---------------------------------------------------------------- outside test 5: guards, field forms, lengths

GUARDED = "from transformers import Trainer\nclass T(Trainer):\n    def save(self):\n{}"


@pytest.mark.parametrize("body", [
    '        if getattr(self, "tokenizer", None) is not None:\n            self.tokenizer.save_pretrained("o")\n',
    '        if not hasattr(self, "tokenizer"):\n            return\n        self.tokenizer.save_pretrained("o")\n',
    '        tok = self.tokenizer if hasattr(self, "tokenizer") else None\n',
    # tc6 N5: the branch the question picks, the rest of an and/or, after an exit or an assert
    '        if getattr(self, "tokenizer", None) is None:\n            tok = None\n        else:\n'
    '            tok = self.tokenizer\n',
    '        ok = hasattr(self, "tokenizer") and self.tokenizer.pad_token_id\n',
    '        ok = getattr(self, "tokenizer", None) is None or self.tokenizer.pad_token_id\n',
    '        if getattr(self, "tokenizer", None) is None:\n            raise ValueError("none")\n'
    '        self.tokenizer.save_pretrained("o")\n',
    '        assert hasattr(self, "tokenizer")\n        self.tokenizer.save_pretrained("o")\n',
    # an answer kept in a name or returned cannot be followed: the method is guarded
    '        has = hasattr(self, "tokenizer")\n        if has:\n            self.tokenizer.save_pretrained("o")\n',
    '        tok = getattr(self, "tokenizer", None)\n        if tok is not None:\n'
    '            self.tokenizer.save_pretrained("o")\n',
])
def test_a_guarded_self_tokenizer_read_raises_nothing(body):
    """hasattr(self, "tokenizer") or getattr(self, "tokenizer", None) in the method (the if test, an early return)
    asks first: on 5.x the read is never reached (tevatron's trainer.py)."""
    assert rules(GUARDED.format(body)) == set()


@pytest.mark.parametrize("body", [
    '        if getattr(self, "tokenizer") is not None:\n            self.tokenizer.save_pretrained("o")\n',
    '        if getattr(self.model, "tokenizer", None) is not None:\n            self.tokenizer.save_pretrained("o")\n',
    '        self.tokenizer.save_pretrained("o")\n    def other(self):\n        return hasattr(self, "tokenizer")\n',
    # tc6 N5: a read after the guarded if, before the question, under an inverted or always-true test
    '        if getattr(self, "tokenizer", None) is not None:\n            print("has")\n'
    '        self.tokenizer.save_pretrained("o")\n',
    '        self.tokenizer.save_pretrained("o")\n        if hasattr(self, "tokenizer"):\n            pass\n',
    '        if not hasattr(self, "tokenizer"):\n            return self.tokenizer.decode([1])\n',
    '        if hasattr(self, "tokenizer") or True:\n            self.tokenizer.save_pretrained("o")\n',
    '        if not hasattr(self, "tokenizer"):\n            print("none")\n        self.tokenizer.save_pretrained("o")\n',
])
def test_a_look_alike_guard_leaves_the_read_reported(body):
    """getattr without a default raises as the read does; another object's attribute, or a question asked in
    another method, guards nothing."""
    assert rules(GUARDED.format(body)) == {"trainer-self-tokenizer"}


PARSED = ("from transformers import HfArgumentParser, TrainingArguments\n"
          "model_args, training_args = HfArgumentParser((M, TrainingArguments)).parse_args_into_dataclasses()\n")


def test_an_augmented_assignment_reads_the_removed_field_first():
    """`args.warmup_ratio += 0.1` reads the field: AttributeError on 5.x (measured in
    test_the_field_forms_raise_or_are_ignored_as_reported)."""
    found = findings({"t.py": PARSED + "training_args.warmup_ratio += 0.1\n"})
    assert [(f.rule, f.line, f.note) for f in found] == [("removed-argument-read", 3, "training_args.warmup_ratio")]
    assert rules(PARSED + "training_args.warmup_steps += 0.1\n") == set()
    assert rules("cfg = load()\ncfg.warmup_ratio += 0.1\n") == set()  # not training arguments


@pytest.mark.parametrize("statement, note", [
    ("training_args.no_cuda: bool = True\n", "training_args.no_cuda"),
    ('setattr(training_args, "no_cuda", True)\n', 'setattr(training_args, "no_cuda", ...)'),
])
def test_an_annotated_or_setattr_set_of_a_removed_field_is_ignored(statement, note):
    found = findings({"t.py": PARSED + statement})
    assert [(f.rule, f.line) for f in found] == [("removed-field-set", 3)] and found[0].note.startswith(note)
    assert rules(PARSED + statement.replace("no_cuda", "use_cpu")) == set()
    assert rules(PARSED + "training_args.no_cuda: bool\n") == set()  # an annotation alone sets nothing
    assert rules(PARSED + 'setattr(training_args, name, True)\n') == set()  # a name not read
    assert rules(PARSED + 'setattr(other, "no_cuda", True)\n') == set()  # not training arguments


def test_the_field_forms_raise_or_are_ignored_as_reported(tmp_path):
    """On the installed transformers: += raises AttributeError; the annotated set and setattr raise nothing and
    change nothing."""
    from support.harness import run_python
    code = ("from transformers import TrainingArguments\nargs = TrainingArguments(output_dir='o', report_to=[])\n"
            "try:\n    args.warmup_ratio += 0.1\nexcept AttributeError as error:\n    print('raised', error)\n"
            "args.no_cuda: bool = True\nsetattr(args, 'evaluation_strategy', 'steps')\n"
            "print(args.use_cpu, args.eval_strategy.value)\n")
    result = run_python(["-c", code], tmp_path, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "raised 'TrainingArguments' object has no attribute 'warmup_ratio'" in result.stdout
    assert result.stdout.split()[-2:] == ["False", "no"]


EVALUATES = ("from transformers import HfArgumentParser, Seq2SeqTrainer, Seq2SeqTrainingArguments\n"
             "data_args, training_args = HfArgumentParser((D, Seq2SeqTrainingArguments))"
             ".parse_args_into_dataclasses()\n"
             "trainer = Seq2SeqTrainer(model=m, args=training_args)\n"
             "if training_args.do_train:\n    trainer.train()\n"
             "metrics = trainer.evaluate(max_length=data_args.val_max_target_length)\n"
             "results = trainer.predict(test, max_new_tokens=64)\n")


def test_an_evaluation_only_launch_whose_calls_pass_the_length(tmp_path):
    """--do_train false and every evaluate()/predict() passes max_length or max_new_tokens: the length is explicit
    (Dingdong-LIU's evaluate.sh). Training, or a call that passes none, generates with the model's default."""
    launch = "python train.py --output_dir o --predict_with_generate --do_train {}\n"
    files = {"train.py": EVALUATES, "run.sh": launch.format("false")}
    assert project(tmp_path / "a", files, ["train.py", "run.sh"]) == set()
    files["run.sh"] = launch.format("true")
    assert project(tmp_path / "b", files, ["train.py", "run.sh"]) == {("generate-max-length", "run.sh", 1)}
    files = {"train.py": EVALUATES.replace("max_new_tokens=64", "num_beams=4"), "run.sh": launch.format("false")}
    assert project(tmp_path / "c", files, ["train.py", "run.sh"]) == {("generate-max-length", "run.sh", 1)}
    files = {"train.py": EVALUATES.replace("max_length=data_args.val_max_target_length", "max_length=None"),
             "run.sh": launch.format("false")}
    assert project(tmp_path / "d", files, ["train.py", "run.sh"]) == {("generate-max-length", "run.sh", 1)}


def test_an_evaluation_only_run_without_do_train_trains_nothing(tmp_path):
    """tc6 N7: do_train is False by default, so a launch without --do_train of a script that trains only under
    `if training_args.do_train:` trains nothing; so do arguments built with do_train=False (or without it) whose
    train() sits under that if. A train() outside the if trains whatever do_train says."""
    launch = "python train.py --output_dir o --predict_with_generate --do_eval\n"
    files = {"train.py": EVALUATES, "run.sh": launch}
    assert project(tmp_path / "a", files, ["train.py", "run.sh"]) == set()
    files["train.py"] = EVALUATES.replace("if training_args.do_train:\n    trainer.train()", "trainer.train()")
    assert project(tmp_path / "b", files, ["train.py", "run.sh"]) == {("generate-max-length", "run.sh", 1)}
    built = ("from transformers import Seq2SeqTrainer, Seq2SeqTrainingArguments\n"
             "args = Seq2SeqTrainingArguments(output_dir='o', predict_with_generate=True{})\n"
             "trainer = Seq2SeqTrainer(model=m, args=args)\n{}trainer.evaluate(max_length=128)\n")
    assert "generate-max-length" not in rules(built.format(", do_train=False", ""))
    assert "generate-max-length" not in rules(built.format("", "if args.do_train:\n    trainer.train()\n"))
    assert "generate-max-length" in rules(built.format(", do_train=False", "trainer.train()\n"))
    assert "generate-max-length" in rules(built.format(", do_train=True", "if args.do_train:\n    trainer.train()\n"))
    assert "generate-max-length" in rules(built.format(", do_train=False", "").replace("max_length=128", ""))
    kwargs = built.format(", do_train=False", "gen_kwargs = load_generation_settings()\n")  # tc6 e05
    assert "generate-max-length" not in rules(kwargs.replace("max_length=128", "**gen_kwargs"))


def test_evaluate_and_predict_generate_with_the_length_they_are_given(tmp_path):
    """The fact the evaluation-only leg rests on: Seq2SeqTrainer.evaluate/predict(max_length=, max_new_tokens=)
    bound generate() (decoder steps counted, EOS off so nothing stops early); without them, 20 steps."""
    from transformers import (AutoConfig, AutoModelForSeq2SeqLM, DataCollatorForSeq2Seq, Seq2SeqTrainer,
                              Seq2SeqTrainingArguments)

    from support.transformers_kit import word_tokenizer
    config = AutoConfig.for_model("t5", vocab_size=5, d_model=8, d_ff=8, d_kv=4, num_layers=1, num_heads=1,
                                  pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)

    def decoder_steps(method: str, **lengths) -> int:
        model = AutoModelForSeq2SeqLM.from_config(config)
        model.generation_config.eos_token_id = None
        steps = []
        model.decoder.register_forward_hook(lambda *_: steps.append(1))
        args = Seq2SeqTrainingArguments(output_dir=str(tmp_path / "out"), predict_with_generate=True,
                                        report_to="none", use_cpu=True, disable_tqdm=True)
        trainer = Seq2SeqTrainer(model=model, args=args, compute_metrics=lambda prediction: {},
                                 data_collator=DataCollatorForSeq2Seq(word_tokenizer(pad_token="[UNK]"), model=model))
        getattr(trainer, method)([{"input_ids": [2, 3], "labels": [3, 1]}], **lengths)
        return len(steps) - 1  # one forward computes the loss

    for method in ("evaluate", "predict"):
        assert (decoder_steps(method), decoder_steps(method, max_length=6), decoder_steps(method, max_new_tokens=4)) \
            == (20, 5, 4)
