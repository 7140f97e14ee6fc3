"""The main job (scripts/smoke_runner.py): table and JSON, non-zero exit when a script fails or when nothing runs,
rows printed as their scripts finish."""

import json
import os
import pty
import select
import shutil
import subprocess
import sys
import textwrap
import time

import pytest

from support.harness import REPO, assert_one_line_error, isolated_env, run_python
from support.manifest import SKILLS

RUNNER = REPO / "scripts" / "smoke_runner.py"
FAKE_SCRIPT = textwrap.dedent("""
    import sys
    from smoke_contract import build_parser, run_main

    def body(run):
        run.check("fails-on-request", "FAIL" not in __file__, __file__)

    parser = build_parser("x_smoke.py", "fake", "python scripts/x_smoke.py")
    sys.exit(run_main(__file__, parser, body, []))
""")
# Fails its first run only (each run adds a line to $RUNS_FILE): a --repeat row must show that failure.
FIRST_RUN_FAILS_SCRIPT = textwrap.dedent("""
    import os
    import sys
    from smoke_contract import build_parser, run_main

    def body(run):
        with open(os.environ["RUNS_FILE"], "a+") as runs:
            runs.seek(0)
            earlier = len(runs.readlines())
            runs.write("run\\n")
        run.check("first-run-fails", earlier > 0, f"run {earlier + 1}")

    parser = build_parser("f_smoke.py", "fails once", "python scripts/f_smoke.py")
    sys.exit(run_main(__file__, parser, body, []))
""")
# Finishes only once the test creates the file named by $RELEASE_FILE (or after a minute, failing).
WAITING_SCRIPT = textwrap.dedent("""
    import os
    import sys
    import time
    from smoke_contract import build_parser, run_main

    def body(run):
        deadline = time.monotonic() + 60
        while not os.path.exists(os.environ["RELEASE_FILE"]) and time.monotonic() < deadline:
            time.sleep(0.05)
        run.check("released", os.path.exists(os.environ["RELEASE_FILE"]), "the test let it finish")

    parser = build_parser("z_smoke.py", "waits for the test", "python scripts/z_smoke.py")
    sys.exit(run_main(__file__, parser, body, []))
""")
# Counts its runs in $RUNS_FILE; the run numbered $FAIL_RUN (if set) fails.
COUNTING_SCRIPT = textwrap.dedent("""
    import os
    import sys
    from smoke_contract import build_parser, run_main

    def body(run):
        with open(os.environ["RUNS_FILE"], "a") as runs:
            runs.write("run\\n")
        with open(os.environ["RUNS_FILE"]) as runs:
            number = len(runs.readlines())
        run.check("not-the-failing-run", str(number) != os.environ.get("FAIL_RUN"), f"run {number}")

    parser = build_parser("count_smoke.py", "counts its runs", "python scripts/count_smoke.py")
    sys.exit(run_main(__file__, parser, body, []))
""")

# Runs the runner (argv[1]) as its command line does, naming on stderr every process it starts (an audit hook).
WATCH_PROCESSES = textwrap.dedent("""
    import os, runpy, sys

    def name_started(event, args):
        if event == "subprocess.Popen":
            print("started a process:", args[1], file=sys.stderr)

    sys.addaudithook(name_started)
    sys.argv = sys.argv[1:]
    sys.path.insert(0, os.path.dirname(sys.argv[0]))
    runpy.run_path(sys.argv[0], run_name="__main__")
""")


def make_skill(root, name, scripts):
    folder = root / name / "scripts"
    folder.mkdir(parents=True)
    (root / name / "SKILL.md").write_text("---\nname: x\n---\n")
    shutil.copy(REPO / "skill_common" / "smoke_contract.py", folder)
    for script in scripts:
        (folder / script).write_text(FAKE_SCRIPT)


def test_runner_reports_every_script_and_fails_when_one_fails(tmp_path):
    make_skill(tmp_path / "skills", "demo-skill", ["good_smoke.py", "FAIL_smoke.py"])
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu", "--json"], tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    rows = {row["script"]: row for row in report["rows"]}
    assert set(rows) == {"good_smoke.py", "FAIL_smoke.py"}
    assert rows["good_smoke.py"]["ok"] and rows["good_smoke.py"]["checks"] == 1
    assert not rows["FAIL_smoke.py"]["ok"] and "fails-on-request" in rows["FAIL_smoke.py"]["error"]
    assert report["ok"] is False and report["devices"] == ["cpu"]
    assert "running" not in result.stderr, "no progress line when stderr is not a terminal"


def test_runner_table_names_skill_script_device_result_seconds_and_ratio(tmp_path):
    make_skill(tmp_path / "skills", "demo-skill", ["good_smoke.py"])
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu"], tmp_path)
    assert result.returncode == 0, result.stderr
    header, rule, row = result.stdout.splitlines()[:3]
    assert header.split() == ["skill", "script", "device", "result", "seconds", "x", "import"]
    assert row.split()[:4] == ["demo-skill", "good_smoke.py", "cpu", "pass"]


def test_repeat_fails_a_script_whose_failing_run_is_not_the_last(tmp_path):
    """--repeat 3 runs each script three times for the median time: one failed run fails the row and the exit
    status, though the last run passed."""
    make_skill(tmp_path / "skills", "demo-skill", [])
    (tmp_path / "skills" / "demo-skill" / "scripts" / "f_smoke.py").write_text(FIRST_RUN_FAILS_SCRIPT)
    runs = tmp_path / "runs.txt"
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu", "--repeat", "3",
                         "--json"], tmp_path, env={"RUNS_FILE": str(runs)})
    assert runs.read_text().count("run") == 3, "three runs"
    assert result.returncode == 1, result.stderr
    row, = json.loads(result.stdout)["rows"]
    assert not row["ok"] and row["exit_code"] == 1 and "first-run-fails" in row["error"], row


def test_the_ratio_is_the_scripts_time_over_its_skills_bare_import(tmp_path):
    """A skill named in skills.toml gets its baseline import timed: the row's ratio is seconds / baseline_seconds."""
    make_skill(tmp_path / "skills", "transformers-training", ["good_smoke.py"])
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu", "--json"], tmp_path)
    assert result.returncode == 0, result.stderr
    row, = json.loads(result.stdout)["rows"]
    assert row["baseline_import"] == SKILLS["transformers-training"].baseline_import, row
    assert row["baseline_seconds"] > 0, row
    assert row["ratio"] == pytest.approx(row["seconds"] / row["baseline_seconds"], abs=0.02), row


def test_a_run_with_no_smoke_scripts_is_not_a_pass(tmp_path):
    (tmp_path / "skills").mkdir()
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu", "--json"], tmp_path)
    assert_one_line_error(result, 2, "no smoke scripts under")
    assert result.stdout == ""


@pytest.mark.parametrize("args, named", [
    (["--skill", "composer-trainin"], "composer-training, transformers-training"),
    (["--script", "env_check"], "train_smoke"),
    (["--skill", "composer-training", "--script", "training_args_smoke"], "smoke scripts of composer-training: "),
    # A prefix of a flag is not that flag (the unknown skill keeps the run short wherever --rep is taken).
    (["--rep", "1", "--skill", "composer-trainin"], "unrecognized arguments: --rep"),
])
def test_an_unknown_name_runs_nothing_and_names_the_valid_ones(tmp_path, args, named):
    """Checked before anything runs (not even the CUDA probe of --device all), so a typo answers at once: proven
    by the processes the runner starts (none), not by a clock."""
    result = run_python(["-c", WATCH_PROCESSES, str(RUNNER), *args, "--json"], tmp_path)
    assert_one_line_error(result, 2, named)
    assert result.stdout == "" and "started a process:" not in result.stderr, result.stderr


def read_until(fd: int, wanted: bytes, seconds: float) -> bytes:
    """What ``fd`` gives until ``wanted`` shows up, the writer closes it, or ``seconds`` pass."""
    seen, deadline = b"", time.monotonic() + seconds
    while wanted not in seen and select.select([fd], [], [], max(0.0, deadline - time.monotonic()))[0]:
        try:
            chunk = os.read(fd, 4096)
        except OSError:  # a pty whose other end has closed
            break
        if not chunk:
            break
        seen += chunk
    return seen


def test_rows_print_as_scripts_finish_with_a_progress_line_on_a_terminal(tmp_path):
    make_skill(tmp_path / "skills", "demo-skill", ["a_smoke.py"])
    (tmp_path / "skills" / "demo-skill" / "scripts" / "z_smoke.py").write_text(WAITING_SCRIPT)
    release = tmp_path / "release"
    terminal, runner_stderr = pty.openpty()
    runner = subprocess.Popen([sys.executable, str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu"],
                              cwd=tmp_path, env=isolated_env(tmp_path, {"RELEASE_FILE": str(release)}),
                              stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=runner_stderr)
    os.close(runner_stderr)
    try:
        shown = read_until(runner.stdout.fileno(), b"a_smoke.py", 30).decode()
        assert runner.poll() is None, "z_smoke.py waits for the test"
        assert "a_smoke.py" in shown and "pass" in shown.splitlines()[-1], shown
        progress = read_until(terminal, b"z_smoke.py", 30).decode()
        assert "[2/2] running demo-skill/z_smoke.py on cpu" in progress and "\r" in progress, progress
        release.touch()
        assert runner.wait(timeout=60) == 0
        rest = runner.stdout.read().decode()
        assert "z_smoke.py" in rest and "pass" in rest, rest
    finally:
        release.touch()  # a runner that failed the test must not leave z_smoke.py waiting
        runner.kill()
        runner.wait()
        runner.stdout.close()
        os.close(terminal)


@pytest.mark.parametrize("fail_run, code", [(None, 0), ("2", 1)])
def test_repeat_runs_each_script_that_often_and_only_a_failed_run_fails(tmp_path, fail_run, code):
    """`make bench` (--repeat 3) reports the median time of three runs: each run is counted, and the exit code
    follows the scripts' results alone (no time is ever a failure)."""
    make_skill(tmp_path / "skills", "demo-skill", [])
    (tmp_path / "skills" / "demo-skill" / "scripts" / "count_smoke.py").write_text(COUNTING_SCRIPT)
    runs = tmp_path / "runs.txt"
    env = {"RUNS_FILE": str(runs), **({"FAIL_RUN": fail_run} if fail_run else {})}
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu", "--repeat", "3",
                         "--json"], tmp_path, env=env)
    assert result.returncode == code, result.stderr
    [row] = json.loads(result.stdout)["rows"]
    assert runs.read_text().count("run") == 3 and isinstance(row["seconds"], float)
    assert row["ok"] == (fail_run is None) and ("not-the-failing-run" in row["error"]) == (fail_run is not None)


def test_a_baseline_import_that_fails_gives_no_ratio(tmp_path):
    """A skill whose bare import fails (its stack missing from this venv) has no baseline: the row's ratio is None,
    '-' in the table, never a multiple of the time the failing import took."""
    make_skill(tmp_path / "skills", "composer-training", ["good_smoke.py"])
    shadow = tmp_path / "shadow" / "composer"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError('composer is not installed here')\n")
    python_path = os.pathsep.join([str(shadow.parent), isolated_env(tmp_path)["PYTHONPATH"]])
    command = [str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu"]
    result = run_python([*command, "--json"], tmp_path, env={"PYTHONPATH": python_path})
    assert result.returncode == 0, result.stderr
    row, = json.loads(result.stdout)["rows"]
    assert row["ratio"] is None, row
    table = run_python(command, tmp_path, env={"PYTHONPATH": python_path})
    assert table.returncode == 0 and table.stdout.splitlines()[2].split()[5] == "-", table.stdout
