"""Confinement: every skill script, run in full from a copy of its skill folder with a fresh HOME, HF_HOME, TMPDIR
and working directory, writes nothing outside its output directory (not even __pycache__ next to itself) and
attempts no network connection. The runs are the shared ones the route tests read (shared_runs.CANONICAL_RUNS)."""

import pytest

from support.harness import DEVICES, SKILLS_DIR, leg_marks
from support.shared_runs import CANONICAL_RUNS, canonical_run

SCRIPTS = sorted(f"{path.parent.parent.name}/{path.name}" for path in SKILLS_DIR.glob("*/scripts/*.py")
                 if path.name != "smoke_contract.py" and not path.name.startswith("_"))  # _*.py: modules, not scripts


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("script", [pytest.param(script, marks=leg_marks(SKILLS_DIR / script)) for script in SCRIPTS])
def test_script_writes_only_inside_its_output_dir_and_stays_offline(script, device, tmp_path_factory):
    assert script in CANONICAL_RUNS, f"add a full run of {script} to support.shared_runs.CANONICAL_RUNS"
    result = canonical_run(tmp_path_factory, script, device)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stray_files == [], result.stray_files
    assert result.network_attempts == [], result.network_attempts


def test_a_stray_file_is_caught(tmp_path):
    """The check above can fail: a script that writes into HOME and next to itself is reported, and a file inside
    its output directory is not."""
    from support.harness import run_python

    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: skill\n---\n")
    script = skill / "scripts" / "leaky.py"
    script.write_text("import os, pathlib, sys\npathlib.Path(os.environ['HOME'], 'leak').write_text('x')\n"
                      "pathlib.Path(__file__).with_name('leak2').write_text('x')\n"
                      "pathlib.Path(sys.argv[2], 'kept').write_text('x')\n")
    (tmp_path / "out").mkdir()
    result = run_python([str(script), "--output-dir", "out"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stray_files == [str(tmp_path / "home" / "leak"), str(script.with_name("leak2"))]
