"""The trap checker (issue #14): skills/<skill>/scripts/trap_check.py reads training code and launch commands without
running them and names each documented trap. Every rule has a snippet that trips it and a fixed one that does not;
the agent-trial naive solutions trip their trap and the references nothing; the skills' own code blocks and scripts
trip nothing; the rule table's links resolve; the copies equal the bundle's source; it is fast and imports no
training library."""

from __future__ import annotations

import re
import sys
import textwrap
import time
from pathlib import Path

import pytest

from conftest import REPO, SKILLS_DIR, assert_one_line_error, import_script, run_python
from docs import blocks

sys.path.insert(0, str(REPO / "tests"))
from agent_tasks import solutions, task_names  # noqa: E402

SOURCE = REPO / "skill_common" / "trap_check.py"
CHECKERS = {skill: SKILLS_DIR / skill / "scripts" / "trap_check.py" for skill in
            ("composer-training", "transformers-training")}

TC = import_script(CHECKERS["transformers-training"])  # the rule table and engine (the copies are equal)
HEADER = re.compile(r"(?m)^# /// script\n(?:^#(?: .*)?\n)*?^# ///\n")
HEAVY = ("torch", "composer", "transformers", "datasets", "evaluate", "accelerate", "numpy")


def found(skill: str, sources: dict[str, str], device: str = "cpu") -> list:
    findings, broken = TC.check_sources({name: textwrap.dedent(text) for name, text in sources.items()}, skill,
                                        device)
    assert broken == [], broken
    return findings


def rules_found(skill: str, sources: dict[str, str]) -> set[str]:
    return {finding.rule for finding in found(skill, sources)}


# ---------------------------------------------------------------- one tripping and one fixed snippet per rule

HF, CP = "transformers-training", "composer-training"
ARGS = 'TrainingArguments(output_dir="o", {})'
REMOVED_FIXED = {
    "evaluation_strategy": 'eval_strategy="steps"', "no_cuda": "use_cpu=True", "overwrite_output_dir": "",
    "logging_dir": "", "warmup_ratio": "warmup_steps=0.1", "group_by_length": 'train_sampling_strategy="group_by_length"',
    "include_inputs_for_metrics": 'include_for_metrics=["inputs"]', "save_safetensors": "", "use_mps_device": "",
    "push_to_hub_token": 'hub_token="x"'}
CASES = {  # rule: (skill, tripping sources, fixed sources)
    **{f"removed-{name}": (HF, {"t.py": ARGS.format(f"{name}=True")}, {"t.py": ARGS.format(fixed)})
       for name, fixed in REMOVED_FIXED.items()},
    "trainer-tokenizer": (HF, {"t.py": "Trainer(model=m, args=a, tokenizer=tok)"},
                          {"t.py": "Trainer(model=m, args=a, processing_class=tok)"}),
    "optim-adamw-hf": (HF, {"t.py": ARGS.format('optim="adamw_hf"')}, {"t.py": ARGS.format('optim="adamw_torch"')}),
    "seqcls-loss-scaling": (HF, {"t.py": """
        from transformers import AutoModelForSequenceClassification as Auto, TrainingArguments
        model_class = Auto  # a variable that holds the class
        model = model_class.from_pretrained("m", num_labels=3)
        args = dict(output_dir="o", gradient_accumulation_steps=4)
        TrainingArguments(**args)
        """}, {"t.py": """
        from transformers import AutoModelForSequenceClassification as Auto, TrainingArguments
        model_class = Auto
        model = model_class.from_pretrained("m", num_labels=3)
        model.accepts_loss_kwargs = False
        args = dict(output_dir="o", gradient_accumulation_steps=4)
        TrainingArguments(**args)
        """}),
    "pad-token-eos": (HF, {"t.py": """
        model = AutoModelForCausalLM.from_pretrained("m")
        tokenizer.pad_token = tokenizer.eos_token
        """}, {"t.py": """
        model = AutoModelForCausalLM.from_pretrained("m")
        tokenizer.add_special_tokens({"pad_token": "[PAD]"})
        model.resize_token_embeddings(len(tokenizer))
        """}),
    "evaluate-hub-load": (HF, {"t.py": 'import evaluate\nname = "accuracy"\nmetric = evaluate.load(name)'},
                          {"t.py": 'import evaluate\nmetric = evaluate.load("assets/accuracy_metric.py")'}),
    "best-strategy-mismatch": (HF, {"t.py": ARGS.format(
        'eval_strategy="epoch", save_strategy="steps", load_best_model_at_end=True, metric_for_best_model="f1"')},
        {"t.py": ARGS.format('eval_strategy="epoch", save_strategy="epoch", load_best_model_at_end=True, '
                             'metric_for_best_model="f1"')}),
    "best-save-not-multiple": (HF, {"t.py": ARGS.format(
        'eval_strategy="steps", eval_steps=3, save_steps=5, load_best_model_at_end=True, metric_for_best_model="f1"')},
        {"t.py": ARGS.format('eval_strategy="steps", eval_steps=5, save_steps=5, load_best_model_at_end=True, '
                             'metric_for_best_model="f1"')}),
    "best-unsaved-eval": (HF, {"t.py": ARGS.format(
        'eval_strategy="steps", eval_steps=2, save_steps=4, load_best_model_at_end=True, metric_for_best_model="f1"')},
        {"t.py": ARGS.format('eval_strategy="steps", eval_steps=2, save_strategy="best", '
                             'load_best_model_at_end=True, metric_for_best_model="f1"')}),
    "best-default-metric": (HF, {"t.py": ARGS.format('eval_strategy="steps", eval_steps=2, save_steps=2, '
                                                     'load_best_model_at_end=True')},
                            {"t.py": ARGS.format('eval_strategy="steps", eval_steps=2, save_steps=2, '
                                                 'load_best_model_at_end=True, metric_for_best_model="eval_loss"')}),
    "best-save-no-metric": (HF, {"t.py": ARGS.format('eval_strategy="steps", save_strategy="best"')},
                            {"t.py": ARGS.format('eval_strategy="steps", save_strategy="best", '
                                                 'metric_for_best_model="f1"')}),
    "best-save-total-limit-1": (HF, {"t.py": ARGS.format(
        'eval_strategy="epoch", save_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="f1", '
        'save_total_limit=1')}, {"t.py": ARGS.format(
            'eval_strategy="epoch", save_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="f1", '
            'save_total_limit=2')}),
    "token-collator-label": (HF, {"t.py": """
        data = Dataset.from_dict({"tokens": [["a"]], "label": [[0]]})
        collator = DataCollatorForTokenClassification(tokenizer)
        """}, {"t.py": """
        data = Dataset.from_dict({"tokens": [["a"]], "label": [[0]]}).rename_column("label", "labels")
        collator = DataCollatorForTokenClassification(tokenizer)
        """}),
    "accelerate-cpu-processes": (HF, {"run.sh": "accelerate launch --cpu --num_processes 2 train.py\n"},
                                 {"run.sh": "torchrun --nproc_per_node 2 train.py\n"}),
    "resume-changed-max-steps": (HF, {"t.py": """
        first = TrainingArguments(output_dir="o", max_steps=100)
        longer = TrainingArguments(output_dir="o", max_steps=200)
        Trainer(model=m, args=longer).train(resume_from_checkpoint=last)
        """}, {"t.py": """
        same = TrainingArguments(output_dir="o", max_steps=100)
        Trainer(model=m, args=same).train(resume_from_checkpoint=last)
        """}),
    "perplexity-exp-eval-loss": (HF, {"t.py": """
        import math
        model = AutoModelForCausalLM.from_pretrained("m")
        metrics = trainer.evaluate()
        print({"perplexity": math.exp(metrics["eval_loss"])})
        """}, {"t.py": """
        import math
        model = AutoModelForCausalLM.from_pretrained("m")
        print({"perplexity": math.exp(nll / predicted_tokens)})
        """}),
    "load-dataset-online": (HF, {"t.py": """
        from datasets import load_dataset
        data = load_dataset("json", data_files="train.jsonl")
        """}, {"t.py": """
        import os
        os.environ["HF_HUB_OFFLINE"] = "1"
        from datasets import load_dataset
        data = load_dataset("json", data_files="train.jsonl")
        """}),
    "resume-true-unconditional": (HF, {"t.py": "trainer.train(resume_from_checkpoint=True)"},
                                  {"t.py": "trainer.train(resume_from_checkpoint=last_complete_checkpoint('o'))"}),
    "resume-unchecked-checkpoint": (HF, {"t.py": """
        from transformers.trainer_utils import get_last_checkpoint
        trainer.train(resume_from_checkpoint=get_last_checkpoint("o"))
        """}, {"t.py": """
        from transformers.trainer_utils import get_last_checkpoint
        last = get_last_checkpoint("o")
        if last and not os.path.exists(os.path.join(last, "trainer_state.json")):
            last = None
        trainer.train(resume_from_checkpoint=last)
        """}),
    "generate-max-length": (HF, {"t.py": 'Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True)'},
                            {"t.py": 'Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True, '
                                     'generation_max_length=8)'}),
    "seq2seq-plain-trainer": (HF, {"t.py": """
        from transformers import AutoModelForSeq2SeqLM, Trainer
        model = AutoModelForSeq2SeqLM.from_pretrained("m")
        Trainer(model=model, args=a).predict(data)
        """}, {"t.py": """
        from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer
        model = AutoModelForSeq2SeqLM.from_pretrained("m")
        Seq2SeqTrainer(model=model, args=a).predict(data)
        """}),
    "positional-trainer": (CP, {"t.py": "from composer import Trainer\nTrainer(model, optimizers=opt, max_duration='1ep')"},
                           {"t.py": "from composer import Trainer\nTrainer(model=model, optimizers=opt, max_duration='1ep')"}),
    "duration-unit": (CP, {"t.py": "Trainer(model=m, optimizers=o, max_duration='2iter')\n"
                                   "Trainer(model=m, optimizers=o, max_duration='0.5dur')\n"
                                   "Trainer(model=m, optimizers=o, max_duration='1h30m')"},
                      {"t.py": "Trainer(model=m, optimizers=o, max_duration='2ep')"}),
    "tok-uncounted": (CP, {"t.py": "Trainer(model=m, optimizers=o, train_dataloader=loader, max_duration='1000tok')"},
                      {"t.py": "spec = DataSpec(loader, get_num_tokens_in_batch=count)\n"
                               "Trainer(model=m, optimizers=o, train_dataloader=spec, max_duration='1000tok')"}),
    "changed-head-load": (CP, {"t.py": "Trainer(model=m, optimizers=o, load_path='p.pt', load_strict_model_weights=False,"
                                       " load_ignore_keys=['state/model/head*'])"},
                          {"t.py": "Trainer(model=m, optimizers=o, load_path='p.pt', load_weights_only=True, "
                                   "load_strict_model_weights=False, load_ignore_keys=['state/model/head*'])"}),
    "autoresume-no-run-name": (CP, {"t.py": "Trainer(model=m, optimizers=o, autoresume=True, save_folder='ck')"},
                               {"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='job', "
                                        "save_folder='ck/{run_name}')"}),
    "autoresume-shared-folder": (CP, {"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name=args.job, "
                                              "save_folder=str(args.out))"},
                                 {"t.py": "folder = str(args.out / '{run_name}')\nTrainer(model=m, optimizers=o, "
                                          "autoresume=True, run_name=args.job, save_folder=folder)"}),
    "save-overwrite": (CP, {"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='j', save_folder='c', "
                                    "save_overwrite=True)"},
                       {"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='j', save_folder='c')"}),
    "gpu-only-setting-on-cpu": (CP, {"t.py": "Trainer(model=m, optimizers=o, device='cpu', precision='amp_bf16', "
                                             "device_train_microbatch_size='auto')"},
                                {"t.py": "Trainer(model=m, optimizers=o, device='cpu', precision='fp32', "
                                         "device_train_microbatch_size=2)"}),
    "no-optimizer": (CP, {"t.py": "Trainer(model=m, train_dataloader=loader, max_duration='2ba')"},
                     {"t.py": "Trainer(model=m, train_dataloader=loader, max_duration='2ba', optimizers=opt)"}),
    "shuffle-resume": (CP, {"t.py": "loader = DataLoader(data, batch_size=4, shuffle=True)\nTrainer(model=m, "
                                    "optimizers=o, train_dataloader=loader, autoresume=True, run_name='j')"},
                       {"t.py": "loader = DataLoader(data, batch_size=4, sampler=dist.get_sampler(data, shuffle=True))"
                                "\nTrainer(model=m, optimizers=o, train_dataloader=loader, autoresume=True, "
                                "run_name='j')"}),
    "launch-default-processes": (CP, {"run.sh": "composer train.py --epochs 2\n"},
                                 {"run.sh": "composer -n 2 train.py --epochs 2\n"}),
    "loader-without-sampler": (CP, {"t.py": "LAUNCH = ['composer', '-n', '2', 'train.py']\nloader = DataLoader(data, "
                                            "batch_size=4)\nTrainer(model=m, optimizers=o, train_dataloader=loader)"},
                               {"t.py": "LAUNCH = ['composer', '-n', '2', 'train.py']\nloader = DataLoader(data, "
                                        "batch_size=4, sampler=dist.get_sampler(data))\nTrainer(model=m, optimizers=o, "
                                        "train_dataloader=loader)"}),
    "eval-without-metrics": (CP, {"t.py": "model = Net()\nTrainer(model=model, optimizers=o, "
                                          "eval_dataloader=Evaluator(label='val', dataloader=loader))"},
                             {"t.py": "class Scored(Net):\n    def get_metrics(self, is_train=False):\n        return {}\n"
                                      "model = Scored()\nTrainer(model=model, optimizers=o, "
                                      "eval_dataloader=Evaluator(label='val', dataloader=loader))"}),
}


def test_every_rule_has_a_case_and_ids_are_unique():
    ids = [rule.id for rule in TC.RULES]
    assert len(ids) == len(set(ids))
    assert set(CASES) == set(ids), f"rules without a case: {set(ids) - set(CASES)}; cases without a rule: " \
                                   f"{set(CASES) - set(ids)}"
    assert all(CASES[rule.id][0] == rule.skill for rule in TC.RULES)


@pytest.mark.parametrize("rule", sorted(CASES))
def test_a_snippet_trips_the_rule_and_the_fixed_one_does_not(rule):
    skill, tripping, fixed = CASES[rule]
    assert rule in rules_found(skill, tripping), found(skill, tripping)
    assert found(skill, fixed) == [], found(skill, fixed)


def test_a_launch_in_a_shell_script_checks_the_file_it_runs(tmp_path):
    """The .sh gives the process count; the Python file it launches has the model."""
    (tmp_path / "train.py").write_text("model = AutoModelForSequenceClassification.from_pretrained('m')\n")
    (tmp_path / "run.sh").write_text("#!/bin/bash\nexport HF_HUB_OFFLINE=1\ntorchrun \\\n  --nproc_per_node 2 "
                                     "train.py --evaluation_strategy steps  # two ranks\n")
    sources = {str(tmp_path / name): (tmp_path / name).read_text() for name in ("train.py", "run.sh")}
    findings = TC.check_sources(sources, HF, "cpu")[0]
    assert {(f.rule, Path(f.path).name, f.line) for f in findings} == {
        ("seqcls-loss-scaling", "run.sh", 3), ("removed-evaluation_strategy", "run.sh", 3)}


@pytest.mark.parametrize("skill", sorted(CHECKERS))
def test_each_rule_link_resolves_to_a_heading(skill):
    def slug(heading: str) -> str:  # GitHub's anchors: lower case, punctuation dropped, spaces to hyphens
        return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")

    for rule in (rule for rule in TC.RULES if rule.skill == skill):
        target, _, anchor = rule.see.partition("#")
        document = SKILLS_DIR / skill / target
        assert document.is_file(), f"{rule.id}: {rule.see}"
        text = re.sub(r"^```.*?^```", "", document.read_text(), flags=re.S | re.M)  # a # comment is no heading
        headings = {slug(line.lstrip("#")) for line in text.splitlines() if re.match(r"^#{1,6} ", line)}
        assert anchor in headings, f"{rule.id}: no heading #{anchor} in {target}"


@pytest.mark.parametrize("skill", sorted(CHECKERS))
def test_the_skill_copies_equal_the_bundle_source(skill):
    copy = CHECKERS[skill].read_text()
    assert HEADER.search(copy), f"{CHECKERS[skill]} lacks its PEP 723 header: run make sync-contract"
    assert HEADER.sub("", copy, count=1) == SOURCE.read_text(), \
        f"{CHECKERS[skill]} differs from skill_common/trap_check.py: run make sync-contract"


# ---------------------------------------------------------------- the agent-trial tasks

NOT_STATIC = {  # naive solutions whose trap cannot be seen without the data or the checkpoint they run on
    "composer_changed_head/naive_load_path_only": "the head size of the checkpoint is in the file, not the code",
    "composer_eval_metrics/naive_macro_accuracy": "torchmetrics' macro default: not a trap the skill documents",
    "composer_resume_kill/naive_plain_autoresume": "a torn checkpoint is left by a kill; every autoresume risks it",
    "hf_new_head_accumulation/naive_mismatched_head": "the label count of the checkpoint is in its config file",
    "hf_offline_metrics/naive_binary_f1": "f1.compute() without average=: not a trap the skill documents",
    "hf_resume_kill/naive_no_resume": "not resuming is a missing call, not a pattern in the code",
}
EXPECTED = {
    "composer_autoresume_jobs/naive_no_run_name": "autoresume-no-run-name",
    "composer_autoresume_jobs/naive_shared_folder": "autoresume-shared-folder",
    "composer_changed_head/naive_not_weights_only": "changed-head-load",
    "composer_eval_metrics/naive_no_metrics": "eval-without-metrics",
    "composer_resume_kill/naive_save_overwrite": "save-overwrite",
    "composer_token_budget/naive_padded_tokens": "tok-uncounted",
    "composer_two_process/naive_default_launch": "launch-default-processes",
    "composer_two_process/naive_plain_loader": "loader-without-sampler",
    "hf_best_model/naive_4x_arguments": "removed-evaluation_strategy",
    "hf_best_model/naive_default_metric": "best-default-metric",
    "hf_best_model/naive_sparse_saves": "best-unsaved-eval",
    "hf_causal_lm/naive_eos_as_pad": "pad-token-eos",
    "hf_causal_lm/naive_exp_eval_loss": "perplexity-exp-eval-loss",
    "hf_new_head_accumulation/naive_accumulated_loss": "seqcls-loss-scaling",
    "hf_offline_metrics/naive_hub_metrics": "evaluate-hub-load",
    "hf_offline_metrics/naive_load_dataset_online": "load-dataset-online",
    "hf_resume_kill/naive_always_resume": "resume-true-unconditional",
    "hf_resume_kill/naive_last_checkpoint": "resume-unchecked-checkpoint",
    "hf_seq2seq/naive_default_max_length": "generate-max-length",
    "hf_seq2seq/naive_teacher_forced": "seq2seq-plain-trainer",
}
SOLUTIONS = [pytest.param(solution, id=solution.label) for task in task_names() for solution in solutions(task)]


@pytest.mark.parametrize("solution", SOLUTIONS)
def test_naive_solutions_trip_their_trap_and_references_trip_nothing(solution):
    skill = CP if solution.task.startswith("composer") else HF
    findings = found(skill, {str(solution.path): solution.path.read_text()})
    if solution.path.name == "reference.py":
        assert findings == []
    elif solution.label in NOT_STATIC:
        assert findings == [], "now found: move it to EXPECTED"
    else:
        assert solution.label in EXPECTED, f"{solution.label}: add its rule to EXPECTED (or a reason to NOT_STATIC)"
        assert EXPECTED[solution.label] in {finding.rule for finding in findings}, findings


# ---------------------------------------------------------------- the skills' own code and scripts

def skill_sources(skill: str) -> list[pytest.param]:
    params = []
    for document in [SKILLS_DIR / skill / "SKILL.md", *sorted((SKILLS_DIR / skill / "references").glob("*.md"))]:
        code = [block for block in blocks(document) if block.language in ("python", "bash")]
        for block in code:
            suffix = ".py" if block.language == "python" else ".sh"
            params.append(pytest.param(skill, {f"{block.where}{suffix}": block.source}, id=block.where))
        notebook = "".join(block.source for block in code if block.language == "python")  # they run as one
        params.append(pytest.param(skill, {f"{document.name}.py": notebook}, id=f"{skill}/{document.name}:all"))
    for script in sorted((SKILLS_DIR / skill / "scripts").glob("*.py")):
        params.append(pytest.param(skill, {str(script): script.read_text()}, id=f"{skill}/scripts/{script.name}"))
    return params


@pytest.mark.parametrize("skill, sources", [param for skill in sorted(CHECKERS) for param in skill_sources(skill)])
def test_no_finding_in_the_skills_own_code(skill, sources):
    assert found(skill, sources) == []


# ---------------------------------------------------------------- as a user runs it

NAIVE = REPO / "tests" / "agent_tasks" / "hf_best_model" / "naive_4x_arguments.py"


def test_findings_are_failed_checks_with_the_fix_and_exit_1(tmp_path):
    result = run_python([str(CHECKERS[HF]), str(NAIVE), "--json"], tmp_path)
    assert_one_line_error(result, 1, "removed-evaluation_strategy@")
    checks = {check["name"].split("@")[0]: check for check in result.json["checks"]}
    assert set(checks) == {"removed-evaluation_strategy", "trainer-tokenizer"}
    detail = checks["trainer-tokenizer"]["detail"]
    assert "Fix: Trainer(processing_class=tokenizer)" in detail and "See: SKILL.md#what-5x-changed" in detail
    assert checks["trainer-tokenizer"]["name"].endswith(f"{NAIVE}:39")


def test_a_clean_folder_passes_and_a_broken_file_is_named(tmp_path):
    project = tmp_path / "project"
    (project / ".venv").mkdir(parents=True)
    (project / ".venv" / "bad.py").write_text("evaluation_strategy=(")  # skipped: an environment, not the project
    (project / "train.py").write_text("TrainingArguments(output_dir='o', eval_strategy='epoch')\n")
    clean = run_python([str(CHECKERS[HF]), str(project), "--json"], tmp_path)
    assert clean.returncode == 0, clean.stderr
    assert [check["name"] for check in clean.json["checks"]] == [f"clean@{project / 'train.py'}"]
    (project / "broken.py").write_text("def f(:\n")
    assert_one_line_error(run_python([str(CHECKERS[HF]), str(project)], tmp_path), 2, "broken.py:1: does not parse")
    assert_one_line_error(run_python([str(CHECKERS[CP]), str(tmp_path / "missing.py")], tmp_path), 2,
                          "no such file or folder")
    assert_one_line_error(run_python([str(CHECKERS[CP])], tmp_path), 2, "give the Python files")
    assert_one_line_error(run_python([str(SOURCE), str(project)], tmp_path), 2, "no skill found")


def test_a_thousand_lines_take_well_under_a_second_without_a_training_library(tmp_path):
    snippet = textwrap.dedent(CASES["seqcls-loss-scaling"][1]["t.py"]) + textwrap.dedent(
        CASES["best-unsaved-eval"][1]["t.py"]) + "\n"
    big = tmp_path / "big.py"
    big.write_text((snippet * (1000 // snippet.count("\n") + 1)))
    assert big.read_text().count("\n") >= 1000
    started = time.perf_counter()
    findings, _ = TC.check_sources({str(big): big.read_text()}, HF, "cpu")
    elapsed = time.perf_counter() - started
    assert findings and elapsed < 0.5, f"{elapsed:.2f}s"
    probe = ("import runpy, sys; sys.argv = [sys.argv[1], sys.argv[2], '--json']; sys.path.insert(0, "
             "sys.argv[0].rsplit('/', 1)[0])\ntry:\n    runpy.run_path(sys.argv[0], run_name='__main__')\n"
             "except SystemExit as exc:\n    print('HEAVY', [m for m in %r if m in sys.modules], file=sys.stderr)\n"
             % (HEAVY,))
    result = run_python(["-c", probe, str(CHECKERS[HF]), str(big)], tmp_path)
    assert "HEAVY []" in result.stderr, result.stderr[-2000:]
    assert result.json["exit_code"] == 1 and result.json["seconds"] < 1.0, result.json["seconds"]


# ---- hostile inputs an outside review found (each hung, crashed or was misread before) ----

def test_a_name_reassigned_from_itself_many_times_is_followed_once():
    """Names were followed into every value assigned to them, to depth 6: time grew exponentially (10 lines: 17 s)."""
    lines = ["from transformers import Trainer", "ckpt = args.resume",
             *[f'ckpt = ckpt.strip("/{index}") + ckpt' for index in range(40)],
             "Trainer(model=model).train(resume_from_checkpoint=ckpt)"]
    started = time.perf_counter()
    found(HF, {"chain.py": "\n".join(lines)})
    assert time.perf_counter() - started < 1.0


def test_special_files_are_named_never_read(tmp_path):
    """A FIFO in a folder blocked forever and a link to /dev/zero read until memory ran out."""
    import os

    fifo_folder, zero_folder = tmp_path / "fifo", tmp_path / "zero"
    fifo_folder.mkdir()
    zero_folder.mkdir()
    os.mkfifo(fifo_folder / "a.py")
    (zero_folder / "z.py").symlink_to("/dev/zero")
    for folder, name in ((fifo_folder, "a.py"), (zero_folder, "z.py")):
        result = run_python([str(CHECKERS[HF]), str(folder)], tmp_path, timeout=30)
        assert_one_line_error(result, 2, f"{folder / name}: cannot be read (not a regular file: never read)")
    assert_one_line_error(run_python([str(CHECKERS[HF]), "/dev/zero"], tmp_path, timeout=30), 2,
                          "'/dev/zero' is not a regular file or folder")


def test_odd_but_valid_sources_are_checked_not_crashed_on(tmp_path):
    deep = ("from composer import Trainer\nTrainer(model=m, train_dataloader=d, max_duration='1ep', optimizers=o, "
            f"autoresume=True, run_name={'+'.join(['a'] * 2000)}, save_folder='ckpt')\n")
    (tmp_path / "deep.py").write_text(deep)  # ast.dump of run_name recursed past the limit: exit 1 "unexpected"
    assert_one_line_error(run_python([str(CHECKERS[CP]), str(tmp_path / "deep.py")], tmp_path), 2,
                          "deep.py: an expression is nested too deeply to check")
    (tmp_path / "launch.sh").write_text("accelerate launch --cpu --num_processes ² train.py\n")  # int("²") raised
    assert run_python([str(CHECKERS[HF]), str(tmp_path / "launch.sh")], tmp_path).returncode == 0
    (tmp_path / "bom.py").write_bytes(b"\xef\xbb\xbfx = 1\n")  # CPython runs a UTF-8 file with a byte-order mark
    assert run_python([str(CHECKERS[HF]), str(tmp_path / "bom.py")], tmp_path).returncode == 0
