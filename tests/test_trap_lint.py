"""The trap checker as a linter people keep in CI (issue #25): stable codes and severities, --select / --ignore,
inline suppression, --strict, --list-rules, --format github, --json with code and severity, and a pre-commit hook;
and the checker's shape (no file over 600 lines, each rule in the module that finds it). The rules themselves are
tests/test_trap_check.py's."""

from __future__ import annotations

import ast
import inspect
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import yaml

from support.harness import REPO, SKILLS_DIR, import_script

HF, CP = "transformers-training", "composer-training"
CHECKERS = {skill: import_script(SKILLS_DIR / skill / "scripts" / "trap_check.py") for skill in (HF, CP)}
RULES = CHECKERS[HF].RULES
# the modules that hold rules (each rule's entry and examples next to the code that finds it)
FAMILIES = sys.modules["transformers_training__trap_families"].FAMILIES
RULE_MODULES = [Path(family.__file__).name for family in FAMILIES]

# The codes are a promise: a code once given names that rule for good (a CI config says --ignore CP009). Renumbering
# or reusing one fails here; a new rule takes the next free code.
CODES = {
    "TF001": "removed-evaluation_strategy", "TF002": "removed-no_cuda", "TF003": "removed-overwrite_output_dir",
    "TF004": "removed-logging_dir", "TF005": "removed-warmup_ratio", "TF006": "removed-group_by_length",
    "TF007": "removed-include_inputs_for_metrics", "TF008": "removed-save_safetensors",
    "TF009": "removed-use_mps_device", "TF010": "removed-push_to_hub_token", "TF011": "trainer-tokenizer",
    "TF012": "optim-adamw-hf", "TF013": "seqcls-loss-scaling", "TF014": "pad-token-eos", "TF015": "evaluate-hub-load",
    "TF016": "best-strategy-mismatch", "TF017": "best-save-not-multiple", "TF018": "best-unsaved-eval",
    "TF019": "best-default-metric", "TF020": "best-save-no-metric", "TF021": "best-save-total-limit-1",
    "TF022": "token-collator-label", "TF023": "accelerate-cpu-processes", "TF024": "resume-changed-max-steps",
    "TF025": "perplexity-exp-eval-loss", "TF026": "load-dataset-online", "TF027": "resume-true-unconditional",
    "TF028": "resume-unchecked-checkpoint", "TF029": "generate-max-length", "TF030": "seq2seq-plain-trainer",
    "TF031": "removed-legacy-argument", "TF032": "removed-argument-read", "TF033": "trainer-self-tokenizer",
    "TF034": "arguments-subclass-removed-field", "TF035": "removed-import",
    "TF036": "removed-field-set",
    "CP001": "positional-trainer", "CP002": "duration-unit", "CP003": "tok-uncounted", "CP004": "changed-head-load",
    "CP005": "autoresume-no-run-name", "CP006": "autoresume-shared-folder", "CP007": "save-overwrite",
    "CP008": "gpu-only-setting-on-cpu", "CP009": "no-optimizer", "CP010": "shuffle-resume",
    "CP011": "launch-default-processes", "CP012": "loader-without-sampler", "CP013": "eval-without-metrics",
}
ERROR_LINE = 'TrainingArguments(output_dir="o", no_cuda=True)\n'  # removed-no_cuda, TF002: an error
WARNING_LINE = 'import evaluate\nmetric = evaluate.load("accuracy")\n'  # evaluate-hub-load, TF015: a warning


def lint(skill: str, argv: list[str], capsys) -> tuple[int, str, str]:
    """main(argv) of the skill's checker in this process: (exit code, stdout, stderr)."""
    code = CHECKERS[skill].main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def failed(stderr: str) -> list[str]:
    return [line.split(" ", 1)[1].split(":")[0] for line in stderr.splitlines() if line.startswith("[FAIL]")]


def test_every_rule_has_its_stable_code_a_kebab_case_name_a_severity_and_why():
    assert {rule.code: rule.id for rule in RULES} == CODES
    for rule in RULES:
        assert rule.code.startswith({HF: "TF", CP: "CP"}[rule.skill]), rule
        assert re.fullmatch(r"[a-z0-9_]+(-[a-z0-9_]+)*", rule.id), rule.id
        assert rule.severity in ("error", "warning") and len(rule.why) > 5, rule


@pytest.mark.parametrize("skill", [HF, CP])
def test_list_rules_shows_code_name_severity_what_and_section(skill, capsys, tmp_path):
    code, out, _ = lint(skill, ["--list-rules"], capsys)
    rules = [rule for rule in RULES if rule.skill == skill]
    assert code == 0 and len(out.splitlines()) == len(rules)
    for line, rule in zip(out.splitlines(), rules):
        assert line.split()[:3] == [rule.code, rule.id, rule.severity] and f"See: {rule.see}" in line, line
    assert len({line.index(f" {rule.severity} ") for line, rule in zip(out.splitlines(), rules)}) == 1, \
        "the severity column does not line up"
    code, out, _ = lint(skill, ["--list-rules", "--json"], capsys)
    table = json.loads(out)["checks"][0]["detail"]
    assert code == 0 and [(row["code"], row["name"], row["severity"]) for row in table] == \
        [(rule.code, rule.id, rule.severity) for rule in rules]


def test_an_error_exits_1_a_warning_exits_0_and_strict_fails_on_it(tmp_path, capsys):
    (tmp_path / "warn.py").write_text(WARNING_LINE)
    code, _, err = lint(HF, [str(tmp_path / "warn.py")], capsys)
    assert code == 0 and "[warn] evaluate-hub-load@" in err and not failed(err), err
    code, _, err = lint(HF, [str(tmp_path / "warn.py"), "--strict"], capsys)
    assert code == 1 and failed(err) == ["evaluate-hub-load@" + str(tmp_path / "warn.py")], err
    (tmp_path / "error.py").write_text(ERROR_LINE)
    code, _, err = lint(HF, [str(tmp_path / "error.py")], capsys)
    assert code == 1 and failed(err) == ["removed-no_cuda@" + str(tmp_path / "error.py")], err


def test_json_names_each_finding_rule_at_path_line_with_code_and_severity(tmp_path, capsys):
    (tmp_path / "t.py").write_text(WARNING_LINE + ERROR_LINE)
    code, out, _ = lint(HF, [str(tmp_path / "t.py"), "--json"], capsys)
    checks = {check["name"]: check for check in json.loads(out)["checks"]}
    assert code == 1 and set(checks) == {f"evaluate-hub-load@{tmp_path / 't.py'}:2",
                                         f"removed-no_cuda@{tmp_path / 't.py'}:3"}
    warning, error = checks[f"evaluate-hub-load@{tmp_path / 't.py'}:2"], checks[f"removed-no_cuda@{tmp_path / 't.py'}:3"]
    assert (warning["code"], warning["severity"], warning["ok"]) == ("TF015", "warning", True)
    assert (error["code"], error["severity"], error["ok"]) == ("TF002", "error", False)


@pytest.mark.parametrize("argv, left", [
    (["--ignore", "TF002"], {"evaluate-hub-load"}),
    (["--ignore", "removed-no_cuda,evaluate-hub-load"], set()),
    (["--ignore", "TF0"], set()),  # a code prefix
    (["--select", "TF015"], {"evaluate-hub-load"}),
    (["--select", "removed-no_cuda", "--select", "evaluate-hub-load", "--ignore", "TF015"], {"removed-no_cuda"}),
])
def test_select_and_ignore_take_codes_names_and_prefixes(tmp_path, capsys, argv, left):
    (tmp_path / "t.py").write_text(WARNING_LINE + ERROR_LINE)
    code, out, _ = lint(HF, [str(tmp_path / "t.py"), "--json", *argv], capsys)
    names = {check["name"].split("@")[0] for check in json.loads(out)["checks"]}
    assert names - {"clean"} == left and code == (1 if "removed-no_cuda" in left else 0)


def test_an_unknown_rule_word_is_one_line_and_exit_2(tmp_path, capsys):
    (tmp_path / "t.py").write_text(ERROR_LINE)
    code, _, err = lint(HF, [str(tmp_path / "t.py"), "--ignore", "removed-no-cuda"], capsys)  # a typo of the name
    assert code == 2 and err.strip().splitlines() == [
        "trap_check.py: error: no rule is named 'removed-no-cuda': give codes or names from --list-rules (a code "
        "prefix such as TF or CP0 selects every code it starts)"]


def test_a_code_of_the_other_skill_is_one_line_and_exit_2(tmp_path, capsys):
    """--select CP001 to the transformers checker ran no rule and passed: now it names the skill whose checker has it
    (for a code prefix of the other skill too); a prefix both skills share still selects this skill's."""
    (tmp_path / "t.py").write_text(ERROR_LINE)
    for skill, option, word, other in ((HF, "--select", "CP001", CP), (CP, "--ignore", "TF0", HF)):
        code, _, err = lint(skill, [str(tmp_path / "t.py"), option, word], capsys)
        assert code == 2 and err.strip().splitlines() == [
            f"trap_check.py: error: {word!r} names rules of {other}, not of {skill}: run "
            f"skills/{other}/scripts/trap_check.py for them"], err


@pytest.mark.parametrize("text, found", [
    ('TrainingArguments(output_dir="o", no_cuda=True)  # trap-check: ignore[removed-no_cuda]\n', False),
    ('TrainingArguments(output_dir="o", no_cuda=True)  # trap-check: ignore[TF011, TF002]\n', False),
    ('# trap-check: ignore[TF002] the CPU flag of our 4.x branch\nTrainingArguments(output_dir="o", no_cuda=True)\n',
     False),
    ('TrainingArguments(output_dir="o", no_cuda=True)  # trap-check: ignore[TF011]\n', True),  # another rule
    ('x = 1  # trap-check: ignore[TF002]\nTrainingArguments(output_dir="o", no_cuda=True)\n', True),  # not alone
    ('TrainingArguments(output_dir="o", no_cuda=True)\n# trap-check: ignore[TF002]\n', True),  # the line below
])
def test_an_inline_comment_on_the_line_or_alone_above_it_suppresses_that_rule(tmp_path, capsys, text, found):
    (tmp_path / "t.py").write_text(text)
    code, _, err = lint(HF, [str(tmp_path / "t.py")], capsys)
    assert (code, bool(failed(err))) == ((1, True) if found else (0, False)), err



@pytest.mark.parametrize("skill, head, rule, statement", [
    (HF, "", "TF002", 'TrainingArguments(output_dir="o", no_cuda=True)\n'),
    (CP, "from composer import Trainer\n", "CP002", "Trainer(model=m, optimizers=o, max_duration='2iter')\n"),
])
def test_in_both_checkers_a_comment_alone_above_suppresses_and_one_trailing_a_statement_does_not(
        tmp_path, capsys, skill, head, rule, statement):
    """Each skill's checker, not only the transformers one: only a comment alone on the line above counts."""
    for prefix, code in (("", 0), ("x = 1  ", 1)):
        (tmp_path / "t.py").write_text(f"{head}{prefix}# trap-check: ignore[{rule}]\n{statement}")
        assert lint(skill, [str(tmp_path / "t.py")], capsys)[0] == code, prefix

def test_an_inline_comment_suppresses_in_shell_scripts_too(tmp_path, capsys):
    launch = "accelerate launch --cpu --num_processes 2 train.py"
    for text, code in ((f"{launch}\n", 1), (f"{launch}  # trap-check: ignore[accelerate-cpu-processes]\n", 0),
                       (f"# trap-check: ignore[TF023]\n{launch}\n", 0)):
        (tmp_path / "run.sh").write_text(text)
        assert lint(HF, [str(tmp_path / "run.sh")], capsys)[0] == code, text


def test_a_shell_flag_is_reported_at_its_own_line_where_its_comment_suppresses(tmp_path, capsys):
    """A flag on the fourth line of a continued launch was reported at the command's first line: its annotation
    pointed there and a comment next to the flag suppressed nothing."""
    (tmp_path / "train.py").write_text("from transformers import HfArgumentParser, TrainingArguments\n"
                                       "HfArgumentParser((TrainingArguments,)).parse_args_into_dataclasses()\n")
    launch = "python train.py \\\n  --output_dir o \\\n  --evaluation_strategy=\"steps\" \\\n  --overwrite-output-dir{}\n"
    (tmp_path / "run.sh").write_text(launch.format(""))
    code, out, _ = lint(HF, [str(tmp_path), "--format", "github"], capsys)
    assert code == 1 and [line.split(",title=")[0].rsplit(",", 1)[1] for line in out.splitlines()] == [
        "line=3", "line=4"], out
    (tmp_path / "run.sh").write_text(launch.format("  # trap-check: ignore[TF003]"))
    code, out, _ = lint(HF, [str(tmp_path), "--format", "github"], capsys)
    assert out.count("::error") == 1 and "TF001" in out, out


@pytest.mark.parametrize("text, found", [
    ('TrainingArguments(\n    output_dir="o",\n    no_cuda=True,\n)  # trap-check: ignore[TF002]\n', False),
    ('# trap-check: ignore[TF002]\nTrainingArguments(\n    output_dir="o",\n    no_cuda=True,\n)\n', False),
    ('TrainingArguments(  # TRAP-CHECK: IGNORE[tf002]\n    output_dir="o",\n    no_cuda=True,\n)\n', False),
    ('TrainingArguments(\n    output_dir="o",\n    no_cuda=True,\n)\nx = 1  # trap-check: ignore[TF002]\n', True),
    ('if True:  # trap-check: ignore[TF002]\n    TrainingArguments(output_dir="o", no_cuda=True)\n', True),
])
def test_a_comment_on_any_line_of_a_python_statement_suppresses_within_it(tmp_path, capsys, text, found):
    """As ruff's noqa on the reported line, widened to the statement: a call of several lines takes its comment on
    any of its lines or alone above its first; a compound statement's header covers none of its body."""
    (tmp_path / "t.py").write_text(text)
    code, _, err = lint(HF, [str(tmp_path / "t.py")], capsys)
    assert (code, bool(failed(err))) == ((1, True) if found else (0, False)), err


def test_format_github_prints_workflow_annotations(tmp_path, capsys):
    (tmp_path / "t.py").write_text(WARNING_LINE + ERROR_LINE)
    code, out, _ = lint(HF, [str(tmp_path / "t.py"), "--format", "github"], capsys)
    lines = out.splitlines()
    assert code == 1 and len(lines) == 2, out
    assert lines[0].startswith(f"::warning file={tmp_path / 't.py'},line=2,title=TF015 evaluate-hub-load::")
    assert lines[1].startswith(f"::error file={tmp_path / 't.py'},line=3,title=TF002 removed-no_cuda::")
    code, out, _ = lint(HF, [str(tmp_path / "t.py"), "--format", "github", "--strict"], capsys)
    assert out.startswith("::error file=") and out.count("::error") == 2
    code, _, err = lint(HF, [str(tmp_path / "t.py"), "--format", "github", "--json"], capsys)
    assert code == 2 and "--format github and --json both write to stdout" in err


def test_annotation_escapes_what_github_would_split_on(tmp_path):
    rule = next(rule for rule in RULES if rule.code == "TF002")
    line = CHECKERS[HF].report.annotation(rule, "a,b:c.py", 3, "50% done\nnext", strict=False)
    assert line == "::error file=a%2Cb%3Ac.py,line=3,title=TF002 removed-no_cuda::50%25 done%0Anext"


def test_the_pre_commit_hooks_are_valid_and_their_entries_run(tmp_path):
    """pre-commit runs a `language: script` entry from the hook repository's root as an executable with the staged
    files as arguments: each entry is an executable checker of its skill, exit 1 on an error and 0 on clean code."""
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert {hook["id"] for hook in hooks} == {"trap-check-transformers", "trap-check-composer"}
    tripping = {"trap-check-transformers": ERROR_LINE, "trap-check-composer": "Trainer(model, max_duration='2ep')\n"}
    for hook in hooks:
        assert {"id", "name", "entry", "language"} <= set(hook) and hook["language"] == "script"
        assert set(hook["types_or"]) == {"python", "shell"}
        entry = REPO / hook["entry"]
        assert entry.is_file() and os.access(entry, os.X_OK), entry
        (tmp_path / "bad.py").write_text(tripping[hook["id"]])
        (tmp_path / "good.py").write_text("x = 1\n")
        for name, expected in (("bad.py", 1), ("good.py", 0)):
            result = subprocess.run([str(entry), name], cwd=tmp_path, capture_output=True, text=True, timeout=60)
            assert result.returncode == expected, (hook["id"], name, result.stderr)


@pytest.mark.parametrize("skill", [HF, CP])
def test_the_skills_own_scripts_folder_is_clean_under_strict_rule_table_included(skill, capsys, monkeypatch):
    """The rule examples written as launch strings trip their rules by design; they carry inline ignores, so
    `trap_check.py scripts` (the canonical run, and a pre-commit hook over a project that vendors the skill) passes,
    every module that holds rules included."""
    monkeypatch.chdir(SKILLS_DIR / skill)
    code, _, err = lint(skill, ["scripts", "--strict"], capsys)
    assert code == 0 and "[FAIL]" not in err and "[warn]" not in err, err
    assert all(f"clean@scripts/{name}" in err for name in RULE_MODULES), (RULE_MODULES, err)


def test_the_legacy_arguments_are_not_arguments_of_the_installed_training_arguments(tmp_path):
    """removed-legacy-argument's list holds only names the installed TrainingArguments refuses, each named in a
    finding from a call and from an HfArgumentParser flag (a run in a subprocess: transformers is not imported here)."""
    from support.harness import run_python

    legacy = sorted(sys.modules["transformers_training__trap_hf_removed"].LEGACY_ARGUMENTS)
    probe = ("import inspect, sys; from transformers import TrainingArguments; "
             "print(sorted(set(sys.argv[1:]) & set(inspect.signature(TrainingArguments).parameters)))")
    result = run_python(["-c", probe, *legacy], tmp_path, timeout=300)
    assert result.returncode == 0 and result.stdout.strip() == "[]", (result.stdout, result.stderr[-2000:])
    checker = CHECKERS[HF]
    calls = {"t.py": "TrainingArguments(output_dir='o',\n" + ",\n".join(f"{name}=1" for name in legacy) + ")"}  # a line each
    findings, _ = checker.check_sources(calls, HF, "cpu")
    assert [(f.rule, f.note) for f in findings] == [("removed-legacy-argument", f"{name}=") for name in legacy]
    launch = {"train.py": "from transformers import HfArgumentParser\n",
              "run.sh": "python train.py --per_gpu_train_batch_size 3\npython train.py --sharded_ddp zero_dp_2\n"}
    findings, _ = checker.check_sources(launch, HF, "cpu")
    assert {f.note for f in findings} == {"--per_gpu_train_batch_size on the command line",
                                          "--sharded_ddp on the command line"}


# ---------------------------------------------------------------- the checker's shape: a newcomer changes one family

TRAP_FILES = sorted([REPO / "skill_common" / "trap_check.py", *(REPO / "skill_common").glob("_trap_*.py")])
MAX_LINES = 600  # read in one sitting
HOME = {rule.id: Path(family.__file__).name for family in FAMILIES for rule in family.RULES}  # rule -> its module
PASSING_ON = {"_trap_families.py"}  # runs the families: every Transformers finding passes through its `yield from`


def rule_ids_named(path: Path, literal_anywhere: frozenset = frozenset()) -> set[str]:
    """The rule ids a module's code names (its own RULES entries left out): a string constant that is an id, or a
    yielded finding's f-string that formats into ids (f"removed-{name}"). A finding is made by naming its rule. An
    id some checker module names whole (``literal_anywhere``) is not one an f-string names: f"removed-{name}" formats
    into removed-evaluation_strategy, not into removed-import."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    table = [node for node in tree.body if isinstance(node, ast.Assign) and
             any(isinstance(target, ast.Name) and target.id == "RULES" for target in node.targets)]
    skipped = {id(node) for entry in table for node in ast.walk(entry)}
    named = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Constant) and node.value in HOME:
            named.add(node.value)
        elif isinstance(node, ast.Yield) and isinstance(node.value, ast.Tuple) and node.value.elts and \
                isinstance(node.value.elts[0], ast.JoinedStr):
            pattern = "".join(re.escape(part.value) if isinstance(part, ast.Constant) else ".+"
                              for part in node.value.elts[0].values)
            named |= {rule for rule in HOME.keys() - literal_anywhere if re.fullmatch(pattern, rule)}
    return named


def test_no_file_of_the_checker_is_longer_than_a_newcomer_reads_in_one_sitting():
    lines = {path.name: len(path.read_text(encoding="utf-8").splitlines()) for path in TRAP_FILES}
    assert len(lines) > 10 and not {name: count for name, count in lines.items() if count > MAX_LINES}, lines


def test_each_rule_is_defined_in_the_one_module_that_names_it_in_code():
    """A family module's code names exactly the rules its table holds; no other module of the checker names one."""
    assert {rule.id for rule in RULES} == set(HOME) and len(RULES) == len(HOME)  # each rule in one family only
    literal = frozenset(rule for path in TRAP_FILES for rule in rule_ids_named(path, frozenset(HOME)))
    for path in TRAP_FILES:
        own = {rule for rule, home in HOME.items() if home == path.name}
        assert rule_ids_named(path, literal) == own, path.name


def test_each_finding_is_made_in_the_module_that_defines_its_rule(tmp_path):
    """Each rule's tripping example, checked under a tracer: the generators that yield its findings are its own
    module's (and the families' runner, which only passes them on), never another family's or the core's."""
    yielded: dict[str, set[str]] = {}

    def trace(frame, event, arg):
        if event == "return" and frame.f_code.co_flags & inspect.CO_GENERATOR and isinstance(arg, tuple) and \
                arg and arg[0] in HOME:
            yielded.setdefault(arg[0], set()).add(Path(frame.f_code.co_filename).name)
        return trace

    checker = CHECKERS[HF]
    for rule in RULES:
        yielded.clear()
        sources = {name: textwrap.dedent(text) for name, text in rule.trips.items()}
        sys.settrace(trace)
        try:
            findings, _ = checker.check_sources(sources, rule.skill, "cpu")
        finally:
            sys.settrace(None)
        assert rule.id in {finding.rule for finding in findings}, rule.id
        assert HOME[rule.id] in yielded[rule.id] and yielded[rule.id] <= {HOME[rule.id], *PASSING_ON}, \
            (rule.id, yielded)
