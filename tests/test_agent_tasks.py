"""The agent-trial task set (issue #17, tests/agent_tasks, references/agent-trials.md): every grader passes its
task's reference solution and fails each naive solution on exactly the trap that solution declares, offline.

All gradings of the selected cases are submitted when the module starts (under xdist: each when its test runs),
to one worker per skill (it imports the skill's stack once and forks a child per solution run), so the
Transformers and Composer gradings run side by side on two cores; each test then waits for its own result. The
latest leg deselects the Composer cases (``composer``)."""

from __future__ import annotations

import os
import subprocess
import textwrap
from pathlib import Path

import pytest

from agent_tasks import Solution, harness, load_task, solutions, task_names
from agent_tasks import __main__
from agent_tasks.__main__ import main as cli
from support.harness import REPO, SKILLS_DIR, leg_marks

TASKS = {name: load_task(name) for name in task_names()}


def marks(task: str) -> list:
    return leg_marks(SKILLS_DIR / TASKS[task].SKILL)


CASES = [pytest.param(solution, id=solution.label, marks=marks(name)) for name in TASKS for solution in solutions(name)]

# A solution that breaks the rules every task shares and exits 0: whatever else it fails, it must fail those checks.
RULE_BREAKER = textwrap.dedent("""
    import pathlib, socket, sys
    args = dict(zip(sys.argv[1::2], sys.argv[2::2]))
    pathlib.Path(args["--data"], "note.txt").write_text("written into the data")
    pathlib.Path("stray.txt").write_text("written into the working directory")
    try:
        socket.getaddrinfo("huggingface.co", 443)
    except OSError:
        pass  # swallowed: the guard's log still has it
""")


class Gradings:
    """One grading worker per skill, started on first use; ``checks(solution)`` submits (if not yet) and waits."""

    def __init__(self, tmp_path_factory):
        self.tmp_path_factory = tmp_path_factory
        self.workers: dict[str, harness.Worker] = {}
        self.submitted: dict[str, tuple[harness.Worker, int]] = {}

    def worker(self, skill: str) -> harness.Worker:
        if skill not in self.workers:
            self.workers[skill] = harness.Worker(skill, self.tmp_path_factory.mktemp(f"agent-tasks-{skill}"))
        return self.workers[skill]

    def submit(self, solution: Solution) -> None:
        if solution.label not in self.submitted:
            worker = self.worker(TASKS[solution.task].SKILL)
            self.submitted[solution.label] = (worker, worker.submit(solution.task, solution.path))

    def checks(self, solution: Solution) -> list[dict]:
        self.submit(solution)
        worker, request_id = self.submitted[solution.label]
        return worker.result(request_id)


@pytest.fixture(scope="module")
def gradings(request, tmp_path_factory):
    """Without xdist, every selected case is submitted at once, so both skills' workers grade side by side; an xdist
    worker (which runs only some of the collected cases) submits each case when its test runs."""
    found = Gradings(tmp_path_factory)
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        for item in request.session.items:
            case = getattr(getattr(item, "callspec", None), "params", {}).get("case")
            if item.path == Path(__file__) and case is not None:
                found.submit(case)
    yield found
    for worker in found.workers.values():
        worker.close()


@pytest.fixture(scope="module")
def rule_breaker(tmp_path_factory) -> Solution:
    path = tmp_path_factory.mktemp("rule-breaker") / "solution.py"
    path.write_text(RULE_BREAKER)
    return Solution("hf_seq2seq", path, (), ())


def shown(checks: list[dict]) -> str:
    return "\n".join(f"{check['ok']} {check['name']}: {check['detail'][:600]}" for check in checks)


@pytest.mark.parametrize("case", CASES)
def test_grader_passes_the_reference_and_fails_each_naive_solution_on_its_trap(case, gradings):
    checks = gradings.checks(case)
    if not case.traps:
        assert case.path.name == "reference.py", f"{case.label}: a naive solution must declare its trap"
        assert harness.passed(checks), shown(checks)
        return
    failed = {check["name"]: check["detail"] for check in harness.failed(checks)}
    assert set(failed) == set(case.traps), f"{case.label} declares {case.traps}\n{shown(checks)}"
    for fragment in case.details:  # the failure names the trap, not an incidental error
        assert any(fragment in detail for detail in failed.values()), f"{fragment!r} not in\n{shown(checks)}"


@pytest.mark.parametrize("skill", [pytest.param(skill, marks=leg_marks(SKILLS_DIR / skill))
                                   for skill in sorted({task.SKILL for task in TASKS.values()})])
def test_each_skill_has_six_tasks_each_with_prompt_reference_and_a_naive_solution(skill):
    tasks = [name for name, task in TASKS.items() if task.SKILL == skill]
    assert len(tasks) >= 6, tasks
    for name in tasks:
        folder = TASKS[name].folder
        prompt = (folder / "prompt.md").read_text(encoding="utf-8")
        assert "solution.py" in prompt and "--data DATA" in prompt and "## Files you may read" in prompt, name
        lines = [line for line in (folder / "reference.py").read_text().splitlines() if line.strip()]
        assert len(lines) <= 40, f"{name}/reference.py has {len(lines)} lines: keep it as short as the library allows"
        assert len(solutions(name)) >= 2, f"{name} has no naive solution"


def test_the_shared_rules_are_checked_whatever_the_task(gradings, rule_breaker):
    """A solution that writes into DATA and its working directory and swallows a network error fails those checks."""
    failed = {check["name"] for check in harness.failed(gradings.checks(rule_breaker))}
    assert {"data_untouched", "writes_only_under_out", "no_network_attempts"} <= failed, failed
    assert "exit_zero" not in failed


def test_cli_lays_out_a_task_and_grades_a_solution_file(gradings, tmp_path, capsys):
    assert cli(["fixture", "composer_token_budget", str(tmp_path / "agent")]) == 0
    laid_out = sorted(path.relative_to(tmp_path / "agent").as_posix() for path in (tmp_path / "agent").rglob("*"))
    assert laid_out == ["data", "data/lm.py", "data/train.pt", "prompt.md"]
    with pytest.raises(SystemExit):
        cli(["fixture", "composer_token_budget", str(tmp_path / "agent")])  # refuses a folder that is not empty
    worker = gradings.worker("transformers-training")  # after its queued gradings: one more, a fast-failing one
    naive = TASKS["hf_best_model"].folder / "naive_4x_arguments.py"
    capsys.readouterr()
    assert cli(["grade", "hf_best_model", str(naive)], worker=worker) == 1
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("FAIL exit_zero: launch 1: exit 1: TypeError") and "evaluation_strategy" in printed[0]
    naive_lines = sum(1 for line in naive.read_text().splitlines() if line.strip())
    reference_lines = sum(1 for line in (naive.parent / "reference.py").read_text().splitlines() if line.strip())
    assert printed[-1] == (f"hf_best_model: FAIL (1 of 6 checks failed; {naive_lines} lines, "
                           f"reference {reference_lines})")


@pytest.mark.parametrize("mode", ["write", "run"])
def test_cli_lays_out_a_trial_session_and_prints_the_agents_prompt(mode, tmp_path, capsys):
    workspace = tmp_path / "session"
    assert cli(["session", "composer_token_budget", str(workspace), "--mode", mode, "--skill", "worktree"]) == 0
    prompt = capsys.readouterr().out
    assert f"Read {workspace}/prompt.md" in prompt and f"Rules for this session ({mode}" in prompt
    assert f"installed at {workspace}/.skills/composer-training/" in prompt
    skill_copy = workspace / ".skills" / "composer-training"
    assert (skill_copy / "SKILL.md").read_bytes() == (REPO / "skills" / "composer-training" / "SKILL.md").read_bytes()
    assert (workspace / "py").exists() == (mode == "run") == ("How many times you ran solution.py" in prompt)
    if mode == "run":  # the wrapper runs this interpreter and logs each call, which grade counts as runs
        (workspace / "solution.py").write_text("print('ran')\n")
        ran = subprocess.run([str(workspace / "py"), str(workspace / "solution.py")], capture_output=True, text=True)
        assert ran.stdout == "ran\n" and "solution.py" in (workspace / "runs.log").read_text()
        assert __main__.size("composer_token_budget", workspace / "solution.py")["runs"] == 1
    assert cli(["session", "hf_seq2seq", str(tmp_path / "bare"), "--mode", mode]) == 0
    assert not (tmp_path / "bare" / ".skills").exists() and "agent skill" not in capsys.readouterr().out
