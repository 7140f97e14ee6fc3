"""trap_check.py --fix and --diff (issue #26): the exact 5.x rewrites of skills/*/scripts/_trap_fix.py. Each rename is
one the installed library made (the old name raises, the new one takes the same value and means the same); a 4.x
script using every rename at once raises, and trains to the end once fixed; what has no exact rewrite is left; the
bytes around a rewrite, the encoding and the mode stay; a rewrite that would not parse is not written; a second
--fix changes nothing; --diff writes nothing."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import math
import os
import stat
import sys
import textwrap
from pathlib import Path

import pytest

from support.harness import REPO, SKILLS_DIR, assert_one_line_error, import_script, run_command, run_python

SCRIPTS = SKILLS_DIR / "transformers-training" / "scripts"
CHECKER = SCRIPTS / "trap_check.py"
TC = import_script(CHECKER)
FIX = TC._trap_fix  # the module the checker imported from its own folder
RENAMING = sys.modules["transformers_training__trap_fix_renames"]  # its rename table, imported with it
OLD_VALUES = {"evaluation_strategy": "steps", "no_cuda": True, "push_to_hub_token": "hf_unused", "warmup_ratio": 0.5,
              "group_by_length": True, "include_inputs_for_metrics": True}


def fixed(source: str, name: str = "train.py", folder: Path | None = None) -> str:
    """The text --fix makes of ``source`` (dedented), read as the file ``name`` in ``folder``."""
    text = textwrap.dedent(source)
    return FIX.fixed_text((folder or Path("/nonexistent")) / name, text.encode())[1]


# ---------------------------------------------------------------- each rename is the library's

def test_the_renames_are_the_removed_arguments_with_an_exact_replacement():
    removed = {name for name, _what, _fix in sys.modules["transformers_training__trap_hf_removed"].REMOVED_ARGUMENTS}
    no_replacement = {"overwrite_output_dir", "logging_dir", "save_safetensors", "use_mps_device"}
    assert set(RENAMING.RENAMES) == removed - no_replacement == set(OLD_VALUES)


@pytest.mark.parametrize("old", sorted(OLD_VALUES))
def test_the_old_name_raises_and_the_new_one_means_the_same(old, tmp_path):
    """On the installed TrainingArguments the old keyword and flag raise; the rewritten keyword and the rewritten
    command line give the value the 4.x name stood for."""
    from transformers import HfArgumentParser, TrainingArguments

    rename = RENAMING.RENAMES[old]
    fields = {field.name for field in dataclasses.fields(TrainingArguments)}
    assert rename.new in fields and old not in fields
    with pytest.raises(TypeError, match=old):
        TrainingArguments(output_dir=str(tmp_path), **{old: OLD_VALUES[old]})
    with pytest.raises(ValueError, match=old):
        HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(["--output_dir", "o", f"--{old}",
                                                                         str(OLD_VALUES[old])])
    new_value = ast.literal_eval(rename.value) if rename.value else OLD_VALUES[old]
    keyword = TrainingArguments(output_dir=str(tmp_path), **{rename.new: new_value})
    argv = ["--output_dir", "o", f"--{old}", str(OLD_VALUES[old])]
    source = fixed("from transformers import HfArgumentParser, TrainingArguments\n"
                   f"HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(args={argv!r})\n")
    flags = ast.literal_eval(next(node for node in ast.walk(ast.parse(source)) if isinstance(node, ast.List)))
    assert f"--{old}" not in flags, source
    parsed, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(flags)
    default = TrainingArguments(output_dir=str(tmp_path))
    assert getattr(keyword, rename.new) == getattr(parsed, rename.new) != getattr(default, rename.new)


def test_warmup_steps_below_one_is_the_4x_ratio_and_one_is_a_step(tmp_path):
    from transformers import TrainingArguments

    for ratio in (0.0, 0.1, 0.5, 0.99):  # 4.x: math.ceil(num_training_steps * warmup_ratio)
        assert TrainingArguments(str(tmp_path), warmup_steps=ratio).get_warmup_steps(10) == math.ceil(10 * ratio)
        assert RENAMING.is_ratio(ratio)
    assert TrainingArguments(str(tmp_path), warmup_steps=1.0).get_warmup_steps(10) == 1  # a 4.x ratio of 1.0 was 10
    source = "from transformers import TrainingArguments\nTrainingArguments(warmup_ratio={})\n"
    assert fixed(source.format(1.0)) == source.format(1.0) and not RENAMING.is_ratio(1.0)
    assert fixed(source.format(0.99)) == source.format(0.99).replace("warmup_ratio", "warmup_steps")


@pytest.mark.parametrize("trainer", ["Trainer", "Seq2SeqTrainer"])
def test_the_trainers_take_processing_class_not_tokenizer(trainer):
    import transformers

    parameters = inspect.signature(getattr(transformers, trainer).__init__).parameters
    assert "processing_class" in parameters and "tokenizer" not in parameters and not any(
        parameter.kind is parameter.VAR_KEYWORD for parameter in parameters.values())


# ---------------------------------------------------------------- a 4.x script, before and after --fix

TRAIN_4X = '''\
import sys
sys.path.insert(0, {tests!r})
from support.transformers_kit import rows, tiny_classifier, word_tokenizer
from transformers import HfArgumentParser, Trainer, TrainingArguments


class RunArguments(TrainingArguments):  # a project subclass: its keywords are TrainingArguments'
    pass


def compute_metrics(prediction):
    return {{"saw_inputs": float(prediction.inputs is not None)}}


out = sys.argv[sys.argv.index("--output_dir") + 1]
settings = dict(output_dir=out, evaluation_strategy="steps", eval_steps=1, max_steps=2, per_device_train_batch_size=4,
                report_to="none", save_strategy="no", disable_tqdm=True)
settings["warmup_ratio"] = 0.5  # 4.x: ceil(2 steps * 0.5) = 1 warmup step
args = RunArguments(**settings, no_cuda=True, group_by_length=True, include_inputs_for_metrics=True,
                    push_to_hub_token="hf_unused")
cli, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()
listed, = HfArgumentParser(TrainingArguments).parse_args_into_dataclasses(args=[
    "--output_dir", out, "--evaluation_strategy", "steps", "--eval_steps", "1", "--no_cuda", "--warmup_ratio", "0.5",
    "--group_by_length", "--include_inputs_for_metrics", "--push_to_hub_token", "hf_unused"])
decisions = [(a.eval_strategy, a.use_cpu, a.get_warmup_steps(2), a.train_sampling_strategy, a.include_for_metrics,
              a.hub_token) for a in (args, cli, listed)]
assert decisions == [("steps", True, 1, "group_by_length", ["inputs"], "hf_unused")] * 3, decisions
trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows(8), eval_dataset=rows(4),
                  tokenizer=word_tokenizer(pad_token="[UNK]"), compute_metrics=compute_metrics)
trainer.train()
metrics = trainer.evaluate()
assert trainer.state.global_step == 2 and metrics["eval_saw_inputs"] == 1.0, metrics
print("trained", trainer.state.global_step, "steps")
'''
LAUNCH_4X = '''\
#!/bin/bash
# the 4.x flags of the same run
python train.py --output_dir "$OUT" --evaluation_strategy steps --eval_steps 1 --no_cuda \\
  --warmup_ratio 0.5 --group_by_length --include_inputs_for_metrics --push_to_hub_token hf_unused
'''


def test_a_4x_script_using_every_rename_raises_and_trains_to_the_end_once_fixed(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "train.py").write_text(TRAIN_4X.format(tests=str(REPO / "tests")))
    (project / "launch.sh").write_text(LAUNCH_4X)

    def launch():
        return run_command(["bash", "launch.sh"], tmp_path / "run", cwd=project, env={"OUT": str(tmp_path / "out")})

    before = launch()
    assert before.returncode != 0 and "TypeError" in before.stderr and "evaluation_strategy" in before.stderr, \
        before.stderr[-2000:]
    fix = run_python([str(CHECKER), "--fix", str(project)], tmp_path / "fix")
    assert fix.returncode == 0, fix.stderr  # every finding was an exact migration: none is left
    assert fix.stderr.count("trap_check.py: fixed ") == 2, fix.stderr
    after = launch()
    assert after.returncode == 0 and "trained 2 steps" in after.stdout, after.stderr[-3000:]
    assert after.network_attempts == []


PARTIAL_4X = """\
import functools, sys
sys.path.insert(0, {tests!r})
from support.transformers_kit import tiny_classifier, word_tokenizer
from transformers import Trainer, TrainingArguments
make = functools.partial(Trainer, tokenizer=word_tokenizer(pad_token="[UNK]"))
trainer = make(model=tiny_classifier(), args=TrainingArguments(output_dir=sys.argv[1], report_to="none"))
print("built", type(trainer).__name__, type(trainer.processing_class).__name__)
"""


def test_a_partial_of_the_trainer_raises_and_builds_the_trainer_once_fixed(tmp_path):
    """functools.partial(Trainer, tokenizer=tok) raises TypeError when it is called on 5.x; --fix renames its keyword
    as the Trainer's own, and the partial called builds a Trainer with the tokenizer."""
    script = tmp_path / "build.py"
    script.write_text(PARTIAL_4X.format(tests=str(REPO / "tests")))
    before = run_python([str(script), str(tmp_path / "out")], tmp_path / "before")
    assert before.returncode != 0 and "unexpected keyword argument 'tokenizer'" in before.stderr, before.stderr[-2000:]
    fix = run_python([str(CHECKER), "--fix", str(script)], tmp_path / "fix")
    assert fix.returncode == 0 and "tokenizer= -> processing_class=" in fix.stderr, fix.stderr
    after = run_python([str(script), str(tmp_path / "out")], tmp_path / "after")
    assert after.returncode == 0 and "built Trainer" in after.stdout, after.stderr[-2000:]


# ---------------------------------------------------------------- the rewriter, unit by unit

REWRITTEN = {  # before -> after, every import from transformers
    "keywords": ('TrainingArguments(output_dir="o", evaluation_strategy="epoch", no_cuda=flag, warmup_ratio=0.1)',
                 'TrainingArguments(output_dir="o", eval_strategy="epoch", use_cpu=flag, warmup_steps=0.1)'),
    "values": ("Seq2SeqTrainingArguments('o', group_by_length = True, include_inputs_for_metrics=True)",
               "Seq2SeqTrainingArguments('o', train_sampling_strategy = \"group_by_length\", "
               "include_for_metrics=[\"inputs\"])"),
    "module attribute": ("transformers.TrainingArguments(push_to_hub_token=token)",
                         "transformers.TrainingArguments(hub_token=token)"),
    "trainer": ("Seq2SeqTrainer(model=m, args=a,\n    tokenizer=tok)",
                "Seq2SeqTrainer(model=m, args=a,\n    processing_class=tok)"),
    "trainer none": ("Trainer(model=m, args=a, tokenizer=None)", "Trainer(model=m, args=a, processing_class=None)"),
    "partial": ("import functools\nmake = functools.partial(Trainer, tokenizer=tok)",
                "import functools\nmake = functools.partial(Trainer, processing_class=tok)"),
    "partial imported": ("from functools import partial\nmake = partial(transformers.Seq2SeqTrainer, tokenizer=None)",
                         "from functools import partial\nmake = partial(transformers.Seq2SeqTrainer, "
                         "processing_class=None)"),
    "dict literal": ("cfg = {'output_dir': 'o', \"evaluation_strategy\": 'no'}\ncfg['warmup_ratio'] = 0\n"
                     "TrainingArguments(**cfg)",
                     "cfg = {'output_dir': 'o', \"eval_strategy\": 'no'}\ncfg['warmup_steps'] = 0\n"
                     "TrainingArguments(**cfg)"),
    "subclass": ("class A(TrainingArguments):\n    pass\nclass B(A):\n    x: int = 1\nB(no_cuda=True)",
                 "class A(TrainingArguments):\n    pass\nclass B(A):\n    x: int = 1\nB(use_cpu=True)"),
    "sys.argv": ("sys.argv = [sys.argv[0], '--no-cuda', '--group_by_length=true']\nHfArgumentParser(TrainingArguments)",
                 "sys.argv = [sys.argv[0], '--use-cpu', '--train_sampling_strategy=group_by_length']\n"
                 "HfArgumentParser(TrainingArguments)"),
}
LEFT = {  # stays as it is: no exact rewrite
    "no replacement": 'TrainingArguments(overwrite_output_dir=True, logging_dir="l", save_safetensors=True, '
                      "use_mps_device=True)",
    "ratio and steps": "TrainingArguments(warmup_ratio=0.1, warmup_steps=10)",
    "ratio unread": "TrainingArguments(warmup_ratio=args.warmup)",
    "false": "TrainingArguments(group_by_length=False, include_inputs_for_metrics=False)",
    "bool unread": "TrainingArguments(group_by_length=flag)",
    "both names": 'TrainingArguments(evaluation_strategy="steps", eval_strategy="no")',
    "none": "TrainingArguments(evaluation_strategy=None)",
    "its own field": "@dataclass\nclass TrainingArguments(Base):\n    no_cuda: bool = False\n"
                     "TrainingArguments(no_cuda=1)",
    "own init": "class T(Trainer):\n    def __init__(self, tokenizer, **kw):\n        pass\nT(tokenizer=tok)",
    "another trainer": "SFTTrainer(model=m, tokenizer=tok)",
    "partial of another": "import functools\nfunctools.partial(DataCollatorWithPadding, tokenizer=tok)",
    "another partial": "from mylib import partial\npartial(Trainer, tokenizer=tok)",
    "dict used elsewhere": 'cfg = dict(evaluation_strategy="steps")\nprint(cfg)\nTrainingArguments(**cfg)',
    "dict unpacks another": 'cfg = {**base, "warmup_ratio": 0.1}\nTrainingArguments(**cfg)',
    "key in pieces": 'cfg = {"evaluation_" "strategy": "steps"}\nTrainingArguments(**cfg)',
    "unknown argv word": "sys.argv = ['t.py', *extra, '--no_cuda']\nHfArgumentParser(TrainingArguments)",
}


@pytest.mark.parametrize("before, after", REWRITTEN.values(), ids=REWRITTEN)
def test_exact_rewrites(before, after):
    header = "import sys, transformers\nfrom transformers import *\n"
    assert fixed(header + before + "\n") == header + after + "\n"
    assert fixed(header + after + "\n") == header + after + "\n"  # a second --fix changes nothing


@pytest.mark.parametrize("source", LEFT.values(), ids=LEFT)
def test_what_has_no_exact_rewrite_is_left(source):
    text = "import sys\nfrom dataclasses import dataclass\nfrom transformers import *\n" + source + "\n"
    assert fixed(text) == text


def test_nothing_is_renamed_for_a_class_not_from_transformers():
    text = "from composer import Trainer\nfrom mylib import TrainingArguments\nTrainer(tokenizer=t)\n" \
           "TrainingArguments(no_cuda=True)\n"
    assert fixed(text) == text


def test_command_lines_of_a_script_that_parses_training_arguments(tmp_path):
    (tmp_path / "hf.py").write_text("from transformers import HfArgumentParser, TrainingArguments\n"
                                    "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    (tmp_path / "own.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                     "p.add_argument('--no_cuda', action='store_true')\n")
    (tmp_path / "fields.py").write_text((tmp_path / "hf.py").read_text() + "@dataclass\nclass M:\n    no_cuda: int\n")
    shell = ("python hf.py --evaluation-strategy=steps \\\n  --warmup_ratio 0.25 --no_cuda; echo --no_cuda\r\n"
             "torchrun --nproc_per_node 2 hf.py --group_by_length 1 --model \"$M\"  # --no_cuda\n"
             "python hf.py $EXTRA --no_cuda\npython hf.py --warmup_ratio 2 --group_by_length false\n"
             "python hf.py \"--no_cuda\" \"$X\" '--push_to_hub_token=a b' --group_by_length \"True\"\n"
             "python hf.py --group_by_length \"$V\" --no_cuda\n"
             "python own.py --no_cuda\npython fields.py --no_cuda\npython missing.py --no_cuda\n")
    assert fixed(shell, "run.sh", tmp_path) == (
        "python hf.py --eval-strategy=steps \\\n  --warmup_steps 0.25 --use_cpu; echo --no_cuda\r\n"
        "torchrun --nproc_per_node 2 hf.py --train_sampling_strategy group_by_length --model \"$M\"  # --no_cuda\n"
        "python hf.py $EXTRA --no_cuda\npython hf.py --warmup_ratio 2 --group_by_length false\n"
        "python hf.py --use_cpu \"$X\" '--hub_token=a b' --train_sampling_strategy group_by_length\n"
        "python hf.py --group_by_length \"$V\" --use_cpu\n"
        "python own.py --no_cuda\npython fields.py --no_cuda\npython missing.py --no_cuda\n")
    launch = 'import subprocess, sys\nsubprocess.run([sys.executable, "hf.py", "--no_cuda", "--group_by_length"])\n'
    assert fixed(launch, "go.py", tmp_path) == launch.replace(
        '"--no_cuda", "--group_by_length"', '"--use_cpu", "--train_sampling_strategy", "group_by_length"')
    assert fixed(launch.replace("hf.py", "own.py"), "go.py", tmp_path) == launch.replace("hf.py", "own.py")


# ---------------------------------------------------------------- files: bytes, encoding, mode, links, --diff

LATIN_1 = ("# -*- coding: latin-1 -*-\r\n# r\xe9glages: evaluation_strategy stays in a comment\r\n"
           "from transformers import TrainingArguments\r\n"
           "args = TrainingArguments(  # caf\xe9\r\n    'r\xe9p', no_cuda=True,\r\n"
           "    evaluation_strategy = 'steps' ,\r\n"
           "    warmup_ratio=.1)\r\nlabel = 'evaluation_strategy=\xe9'")  # no newline at the end


def test_only_the_rewritten_tokens_change_and_the_mode_stays(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(LATIN_1.encode("latin-1"))
    path.chmod(0o751)
    result = run_python([str(CHECKER), "--fix", str(path)], tmp_path / "run")
    assert result.returncode == 0, result.stderr
    expected = LATIN_1.replace("evaluation_strategy = ", "eval_strategy = ").replace("warmup_ratio", "warmup_steps") \
        .replace("no_cuda", "use_cpu")  # after a latin-1 character on its line: ast counts UTF-8 bytes
    assert path.read_bytes() == expected.encode("latin-1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(os.listdir(tmp_path)) == ["run", "train.py"]  # the temporary file was renamed over it
    again = run_python([str(CHECKER), "--fix", str(path)], tmp_path / "run")
    assert again.returncode == 0 and "fixed" not in again.stderr and path.read_bytes() == expected.encode("latin-1")


def test_diff_prints_the_change_and_writes_nothing(tmp_path):
    path = tmp_path / "train.py"
    path.write_bytes(LATIN_1.encode("latin-1"))
    before = path.stat()
    result = run_python([str(CHECKER), "--fix", "--diff", str(path)], tmp_path / "run")
    assert result.returncode == 1  # nothing was fixed: the findings stand
    assert f"--- {path}\n+++ {path}\n" in result.stdout  # (stdout read as text: CRLF shows as LF)
    assert "\n-    evaluation_strategy = 'steps' ,\n-    warmup_ratio=.1)\n+    'r\xe9p', use_cpu=True,\n" \
        "+    eval_strategy = 'steps' ,\n" in result.stdout
    assert result.stdout.endswith(
        "+    warmup_steps=.1)\n label = 'evaluation_strategy=\xe9'\n\\ No newline at end of file\n")
    assert path.read_bytes() == LATIN_1.encode("latin-1") and path.stat().st_mtime_ns == before.st_mtime_ns
    assert "removed-evaluation_strategy@" in result.stderr


def test_a_rewrite_that_would_not_parse_is_left_and_named(tmp_path):
    path = tmp_path / "train.py"
    text = 'from transformers import TrainingArguments\nprint(f"{TrainingArguments(group_by_length=True)}")\n'
    path.write_text(text)  # on Python 3.11 (this project's) the inserted "group_by_length" ends the f-string
    assert sys.version_info[:2] == (3, 11), "3.12 parses quotes inside an f-string: find another case"
    result = run_python([str(CHECKER), "--fix", str(path)], tmp_path / "run")
    assert_one_line_error(result, 2, "train.py: left as it was: the rewritten file would not parse")
    assert path.read_text() == text


def test_links_and_composer_files_are_left(tmp_path):
    target = tmp_path / "real.py"
    target.write_text("from transformers import Trainer\nTrainer(tokenizer=t)\n")
    (tmp_path / "link.py").symlink_to(target)
    result = run_python([str(CHECKER), "--fix", str(tmp_path / "link.py")], tmp_path / "run")
    assert_one_line_error(result, 2, "link.py: left as it was: cannot be read for --fix (a symbolic link")
    assert target.read_text() == "from transformers import Trainer\nTrainer(tokenizer=t)\n"
    composer = tmp_path / "composer_train.py"
    composer.write_text("from composer import Trainer\nTrainer(model, max_duration='2ep')\n")
    result = run_python([str(SKILLS_DIR / "composer-training" / "scripts" / "trap_check.py"), "--fix",
                         str(composer)], tmp_path / "run2")
    assert "--fix changes nothing in composer-training" in result.stderr and result.returncode == 1
    assert composer.read_text() == "from composer import Trainer\nTrainer(model, max_duration='2ep')\n"


def test_a_flag_keeps_its_value_s_quotes_and_a_ratio_named_once_is_read(tmp_path):
    """`--evaluation_strategy="steps"` lost its quotes (the whole word was rewritten); `warmup_ratio=warmup_ratio`
    with `warmup_ratio = 0.03` above was left though the value is known. A name bound twice, or to a number of
    steps, is still left."""
    (tmp_path / "hf.py").write_text("from transformers import HfArgumentParser, TrainingArguments\n"
                                    "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    shell = "python hf.py \\\n  --evaluation_strategy=\"steps\" \\\n  --no-cuda='true'\n"
    assert fixed(shell, "run.sh", tmp_path) == "python hf.py \\\n  --eval_strategy=\"steps\" \\\n  --use-cpu='true'\n"
    code = "from transformers import TrainingArguments\nwarmup_ratio = {}\n" \
           "TrainingArguments(output_dir='o', warmup_ratio=warmup_ratio)\n"
    assert fixed(code.format("0.03")) == code.format("0.03").replace("warmup_ratio=warmup", "warmup_steps=warmup")
    for left in (code.format("10"), code.format("0.03") + "warmup_ratio = 0.1\n", code.format("float(x)")):
        assert fixed(left) == left


# ---------------------------------------------------------------- files that are not ours to replace

TRAINER_CALL = "from transformers import Trainer\nTrainer(tokenizer=t)\n"


def test_a_read_only_file_is_left_and_named(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAINER_CALL)
    path.chmod(0o444)
    result = run_python([str(CHECKER), "--fix", str(path)], tmp_path / "run")
    assert_one_line_error(result, 2, "train.py: left as it was: not rewritten because it is read-only")
    assert path.read_text() == TRAINER_CALL and stat.S_IMODE(path.stat().st_mode) == 0o444


def test_a_hard_linked_file_is_left_and_named(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAINER_CALL)
    os.link(path, tmp_path / "copy.py")
    result = run_python([str(CHECKER), "--fix", str(path)], tmp_path / "run")
    assert_one_line_error(result, 2, "train.py: left as it was: not rewritten because it has 2 hard links")
    assert path.read_text() == TRAINER_CALL and path.stat().st_nlink == 2


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="only root can give a file away")
def test_owner_and_group_stay_when_run_as_root(tmp_path):
    path = tmp_path / "train.py"
    path.write_text(TRAINER_CALL)
    os.chown(path, 65534, 65534)  # nobody
    tmp_path.chmod(0o777)
    FIX.fix_paths([path], "transformers-training")
    assert path.read_text() == TRAINER_CALL.replace("tokenizer", "processing_class")
    assert (path.stat().st_uid, path.stat().st_gid) == (65534, 65534)


def test_an_owner_that_cannot_be_kept_leaves_the_file(tmp_path, monkeypatch):
    path = tmp_path / "train.py"
    path.write_text(TRAINER_CALL)
    status = path.stat()
    moved = os.stat_result((*status[:4], status.st_uid + 1, *status[5:]))  # a file someone else owns
    monkeypatch.setattr(FIX, "read_regular", lambda _path, real=FIX.read_regular: (real(_path)[0], moved))
    monkeypatch.setattr(FIX.os, "chown", lambda *_: (_ for _ in ()).throw(PermissionError(1, "not permitted")))
    problems = FIX.fix_paths([path], "transformers-training")
    assert problems == [f"{path}: left as it was: not rewritten because its owner and group cannot be kept"]
    assert path.read_text() == TRAINER_CALL and sorted(os.listdir(tmp_path)) == ["train.py"]


def test_an_edit_made_while_fix_runs_is_kept(tmp_path, monkeypatch):
    """The file is edited after --fix read it and before the rename: the edit stays and the file is named."""
    path = tmp_path / "train.py"
    path.write_text(TRAINER_CALL)
    edited = TRAINER_CALL + "print('an edit made meanwhile')\n"

    def edit_meanwhile(file, data, real=FIX.fixed_text):
        path.write_text(edited)
        return real(file, data)

    monkeypatch.setattr(FIX, "fixed_text", edit_meanwhile)
    problems = FIX.fix_paths([path], "transformers-training")
    assert problems == [f"{path}: left as it was: not rewritten because it changed while --fix ran"]
    assert path.read_text() == edited and sorted(os.listdir(tmp_path)) == ["train.py"]


def test_a_file_that_never_compiled_is_left_and_named(tmp_path):
    path = tmp_path / "train.py"
    text = "from transformers import Trainer\nTrainer(tokenizer=t, model=m, model=m)\n"  # ast.parse accepts it
    path.write_text(text)
    result = run_python([str(CHECKER), "--fix", str(path)], tmp_path / "run")
    assert_one_line_error(result, 2, "train.py: left as it was: it does not compile as Python")
    assert path.read_text() == text


# ---------------------------------------------------------------- whose class a call builds

SHADOWED = {  # the name at the call is the project's own class, though transformers' was imported first
    "imported again": "from transformers import Trainer\nfrom own_trainer import Trainer\nTrainer(tokenizer=t)\n",
    "assigned": "from transformers import Trainer\nimport own_trainer\nTrainer = own_trainer.Trainer\n"
                "Trainer(tokenizer=t)\n",
    "a function": "from transformers import TrainingArguments\ndef TrainingArguments(**kw):\n    return kw\n"
                  "TrainingArguments(evaluation_strategy='steps', no_cuda=True)\n",
    "imported in a function": "from transformers import TrainingArguments\ndef build():\n"
                              "    from own_args import TrainingArguments\n"
                              "    return TrainingArguments(evaluation_strategy='steps')\n",
}


@pytest.mark.parametrize("source", SHADOWED.values(), ids=SHADOWED)
def test_a_project_class_that_shadows_the_transformers_name_is_left(source, tmp_path):
    (tmp_path / "own_trainer.py").write_text("class Trainer:\n    def __init__(self, tokenizer=None):\n"
                                             "        self.tokenizer = tokenizer\n")
    (tmp_path / "own_args.py").write_text("def TrainingArguments(**kw):\n    return kw\n")
    assert fixed(source, folder=tmp_path) == source


def test_a_subclass_in_a_project_module_is_followed(tmp_path):
    (tmp_path / "args_helper.py").write_text("import transformers\nclass TrainingArguments(transformers."
                                             "TrainingArguments):\n    pass\n")
    (tmp_path / "own_field.py").write_text("import transformers\nclass TrainingArguments(transformers."
                                           "TrainingArguments):\n    warmup_steps: int = 100\n")
    source = "from args_helper import TrainingArguments\nTrainingArguments(evaluation_strategy='steps')\n"
    assert fixed(source, folder=tmp_path) == source.replace("evaluation_strategy", "eval_strategy")
    own = source.replace("args_helper", "own_field").replace("evaluation_strategy", "warmup_ratio").replace(
        "'steps'", "0.1")
    assert fixed(own, folder=tmp_path) == own
    (tmp_path / "train.py").write_text("from transformers import HfArgumentParser\n"
                                       "from args_helper import TrainingArguments\n"
                                       "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    assert fixed("python train.py --evaluation_strategy steps\n", "run.sh", tmp_path) == \
        "python train.py --eval_strategy steps\n"
    (tmp_path / "args_helper.py").write_text(  # the subclass takes the name it derives from
        "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n@dataclass\n"
        "class TrainingArguments(TrainingArguments):\n    output_dir: str = 'save'\n")
    FIX.hf_script_flags.cache_clear()  # as each --fix run does
    FIX.project_module.cache_clear()
    assert fixed("python train.py --group_by_length\n", "run.sh", tmp_path) == \
        "python train.py --train_sampling_strategy group_by_length\n"
    with (tmp_path / "args_helper.py").open("a") as module:  # a dataclass of that module declares the flag
        module.write("@dataclass\nclass DataArguments:\n    group_by_length: bool = False\n")
    FIX.hf_script_flags.cache_clear()
    FIX.project_module.cache_clear()
    assert fixed("python train.py --group_by_length\n", "run.sh", tmp_path) == "python train.py --group_by_length\n"


def test_a_project_field_of_the_new_name_keeps_the_old_one(tmp_path):
    """warmup_steps: int in the project's subclass would refuse the ratio the rewrite gives it."""
    (tmp_path / "train.py").write_text(
        "from dataclasses import dataclass, field\nimport transformers\nfrom transformers import HfArgumentParser\n"
        "@dataclass\nclass TrainingArguments(transformers.TrainingArguments):\n"
        "    warmup_steps: int = field(default=100)\n"
        "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n")
    shell = "python train.py --warmup_ratio 0.03 --evaluation_strategy steps\n"
    assert fixed(shell, "run.sh", tmp_path) == "python train.py --warmup_ratio 0.03 --eval_strategy steps\n"
    source = "from transformers import TrainingArguments\nclass Args(TrainingArguments):\n    warmup_steps: int = 1\n" \
             "Args(warmup_ratio=0.1)\n"
    assert fixed(source) == source


# ---------------------------------------------------------------- which script a shell line runs

HF_SCRIPT = "from transformers import HfArgumentParser, TrainingArguments\n" \
            "HfArgumentParser(TrainingArguments).parse_args_into_dataclasses()\n"


def test_a_launch_after_cd_is_left(tmp_path):
    """After `cd sub` the train.py run is sub/train.py (its own argparse flags), not the one next to run.sh."""
    (tmp_path / "train.py").write_text(HF_SCRIPT)
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "train.py").write_text("import argparse\np = argparse.ArgumentParser()\n"
                                               "p.add_argument('--evaluation_strategy')\np.parse_args()\n")
    for move in ("cd sub", "pushd sub", "cd sub && cd .."):
        shell = f"#!/bin/bash\n{move}\npython train.py --evaluation_strategy steps --warmup_ratio 0.1\n"
        assert fixed(shell, "run.sh", tmp_path) == shell
    shell = "python train.py --no_cuda\ncd sub\npython train.py --no_cuda\n"
    assert fixed(shell, "run.sh", tmp_path) == shell.replace("--no_cuda", "--use_cpu", 1)


def test_a_script_path_naming_two_files_is_left(tmp_path, monkeypatch):
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "train.py").write_text(HF_SCRIPT)
    (tmp_path / "train.py").write_text(HF_SCRIPT)
    shell = "python train.py --no_cuda\n"
    monkeypatch.chdir(tmp_path)  # from here train.py is another file than the one next to scripts/run.sh
    assert fixed(shell, "run.sh", tmp_path / "scripts") == shell
    monkeypatch.chdir(tmp_path / "scripts")
    assert fixed(shell, "run.sh", tmp_path / "scripts") == "python train.py --use_cpu\n"


def test_a_flag_with_an_unread_value_does_not_stop_the_other_renames(tmp_path):
    (tmp_path / "train.py").write_text(HF_SCRIPT)
    shell = ('python train.py --output_dir=$OUT --no_cuda --model="$MODEL" --evaluation_strategy steps '
             '--warmup_ratio="$R" --group_by_length\n')
    assert fixed(shell, "run.sh", tmp_path) == (
        'python train.py --output_dir=$OUT --use_cpu --model="$MODEL" --eval_strategy steps --warmup_ratio="$R" '
        '--train_sampling_strategy group_by_length\n')
    given = 'python train.py --use_cpu=$CPU --no_cuda\n'  # the new name is given: the old one is not renamed
    assert fixed(given, "run.sh", tmp_path) == given
    hidden = "python train.py $EXTRA --no_cuda\n"  # a bare $EXTRA may be any flag: left
    assert fixed(hidden, "run.sh", tmp_path) == hidden
