"""The main job (scripts/smoke_runner.py): table and JSON, non-zero exit when a script fails."""

import json
import shutil
import textwrap

from conftest import REPO, run_python

RUNNER = REPO / "scripts" / "smoke_runner.py"
FAKE_SCRIPT = textwrap.dedent("""
    import sys
    from smoke_contract import build_parser, run_main

    def body(run):
        run.check("fails-on-request", "FAIL" not in __file__, __file__)

    parser = build_parser("x_smoke.py", "fake", "python scripts/x_smoke.py")
    sys.exit(run_main(__file__, parser, body, []))
""")


def make_skill(root, name, scripts):
    folder = root / name / "scripts"
    folder.mkdir(parents=True)
    (root / name / "SKILL.md").write_text("---\nname: x\n---\n")
    shutil.copy(REPO / "scripts" / "smoke_contract.py", folder)
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


def test_runner_table_names_skill_script_device_result_seconds_and_ratio(tmp_path):
    make_skill(tmp_path / "skills", "demo-skill", ["good_smoke.py"])
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu"], tmp_path)
    assert result.returncode == 0, result.stderr
    header, rule, row = result.stdout.splitlines()[:3]
    assert header.split() == ["skill", "script", "device", "result", "seconds", "x", "import"]
    assert row.split()[:4] == ["demo-skill", "good_smoke.py", "cpu", "pass"]


def test_runner_says_when_there_are_no_smoke_scripts(tmp_path):
    (tmp_path / "skills").mkdir()
    result = run_python([str(RUNNER), "--skills-dir", str(tmp_path / "skills"), "--device", "cpu"], tmp_path)
    assert result.returncode == 0 and "no smoke scripts yet" in result.stdout
