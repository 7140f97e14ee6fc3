"""scripts/check_latest.py, the maintainer's look at the newest Transformers stack. Its real run needs downloads,
so these tests prove its parts on the current venv and pins without any: the plan, the version diff, the API
snapshot of the surface the Transformers skill cites, and the reading of a real pytest JUnit report."""

from __future__ import annotations

import importlib.metadata
import json
import importlib.util
import sys
import textwrap

import pytest

from support.harness import REPO, assert_one_line_error, run_python

SCRIPT = REPO / "scripts" / "check_latest.py"
spec = importlib.util.spec_from_file_location("check_latest", SCRIPT)
checker = importlib.util.module_from_spec(spec)
spec.loader.exec_module(checker)

# The leg this venv was locked for: the default leg holds composer and its torch, the latest leg neither. The
# throwaway venv this script builds is neither, and the tests that compare a venv with its own pins skip there.
TORCH = importlib.metadata.version("torch").split("+")[0]
LEG = next((leg for leg in ("default", "latest") if (importlib.util.find_spec("composer") is not None) ==
            (leg == "default") and checker.read_pins(REPO / "constraints" / f"{leg}.txt")["torch"] == TORCH), None)
locked_leg = pytest.mark.skipif(LEG is None, reason="this venv is not one of the pinned legs (check_latest.py's own)")
THIS_LEG_PINS = REPO / "constraints" / f"{LEG}.txt"
OTHER_LEG_PINS = REPO / "constraints" / f"{'latest' if LEG == 'default' else 'default'}.txt"


@locked_leg
def test_dry_run_prints_the_plan_and_finds_this_venv_equal_to_its_pins(tmp_path):
    result = run_python([str(SCRIPT), "--dry-run", "--json", "--pins", str(THIS_LEG_PINS)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.network_attempts == []
    report = result.json
    assert report["versions"] == {}, "this venv was locked from this pin file (make lock)"
    create, install, suite = report["plan"]
    assert " -m venv " in create and create.endswith("/venv")
    assert "pip install" in install and install.endswith("[transformers,test]'") and " -c " not in install, \
        "the newest releases inside pyproject.toml's ranges: no constraint file"
    assert "-m pytest -m 'not composer'" in suite and "--junitxml=" in suite


@locked_leg
def test_the_version_diff_against_the_other_legs_pins_names_torch():
    found = checker.installed_versions(sys.executable)
    other = checker.read_pins(OTHER_LEG_PINS)
    diff = checker.version_diff(other, found)
    assert diff["torch"] == {"pinned": other["torch"], "found": found["torch"]}
    assert found["torch"] == checker.read_pins(THIS_LEG_PINS)["torch"], "local labels such as +cpu are dropped"
    composer_side, other_side = ("found", "pinned") if LEG == "default" else ("pinned", "found")
    assert diff["mosaicml"] == {composer_side: "0.32.1", other_side: None}, "only the default leg has composer"
    assert "transformers" not in diff, "both legs pin the same transformers"


def test_pin_reading_and_diff_rules(tmp_path):
    pins = tmp_path / "pins.txt"
    pins.write_text("# a comment\ntyping_extensions==4.16.0\nFoo.Bar==1.0+cpu\n-e .\nkeep==2 ; python_version>'3'\n")
    assert checker.read_pins(pins) == {"typing-extensions": "4.16.0", "foo-bar": "1.0", "keep": "2"}
    diff = checker.version_diff({"a": "1", "b": "2", "gone": "3"}, {"a": "1", "b": "2.1", "new": "4", "pip": "24"})
    assert diff == {"b": {"pinned": "2", "found": "2.1"}, "gone": {"pinned": "3", "found": None},
                    "new": {"pinned": None, "found": "4"}}
    text = checker.report_text({"pins": "p", "versions": {"torch": {"pinned": "2.13.0", "found": "2.14.1"},
                                                          "numpy": {"pinned": "2.4.6", "found": "2.5.0"}},
                                "broken": {"test_x": ["test_y: boom"]}, "api_changes": ["T: parameter z removed"]})
    assert text.splitlines() == ["versions against p: torch 2.13.0 -> 2.14.1",
                                 "  and 1 other distributions differ (--json lists them)",
                                 "tests: 1 broke", "  test_x: test_y: boom",
                                 "documented API facts: changed", "  T: parameter z removed"]


@pytest.fixture(scope="module")
def surface_snapshot():
    """The installed transformers' view of every callable the Transformers skill cites."""
    return checker.snapshot_here(checker.load_surface())


def test_the_snapshot_reads_the_documented_surface(surface_snapshot):
    surface = checker.load_surface()
    assert set(surface_snapshot) == set(surface) and "transformers.TrainingArguments" in surface
    assert not [name for name, parameters in surface_snapshot.items() if "<error>" in parameters]
    arguments = surface_snapshot["transformers.TrainingArguments"]
    assert arguments["eval_strategy"] == "'no'" and "evaluation_strategy" not in arguments
    assert "processing_class" in surface_snapshot["transformers.Trainer"]
    assert "tokenizer" not in surface_snapshot["transformers.Trainer"]


def test_the_api_diff_reports_each_changed_fact(surface_snapshot):
    assert checker.api_diff(surface_snapshot, surface_snapshot) == []
    moved = {name: dict(parameters) for name, parameters in surface_snapshot.items()}
    arguments = moved["transformers.TrainingArguments"]
    del arguments["eval_strategy"]
    arguments["evaluation_strategy"] = "'no'"
    arguments["seed"] = "0"
    del moved["transformers.Trainer.train"]
    assert checker.api_diff(surface_snapshot, moved) == [
        "transformers.Trainer.train: gone",
        "transformers.TrainingArguments: parameter eval_strategy removed",
        "transformers.TrainingArguments: parameter evaluation_strategy added (default 'no')",
        "transformers.TrainingArguments: seed default 42 -> 0",
    ]


def test_another_interpreter_takes_the_same_snapshot(tmp_path):
    snapshot = checker.api_snapshot(sys.executable, ["json.dumps", "no_such_module.thing"])
    assert snapshot["json.dumps"]["obj"] == "<required>" and snapshot["json.dumps"]["kw"] == "<**kwargs>"
    assert snapshot["json.dumps"]["indent"] == "None"
    assert snapshot["no_such_module.thing"] == {"<error>": "ImportError: cannot import no_such_module.thing"}


def test_failed_tests_are_read_from_a_real_junit_report(tmp_path):
    (tmp_path / "test_sample.py").write_text(textwrap.dedent("""
        import pytest

        @pytest.fixture
        def broken():
            raise RuntimeError("fixture broke")

        def test_passes():
            assert True

        def test_fails():
            assert 1 == 2

        def test_errors(broken):
            pass
    """))
    run_python(["-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml=junit.xml", "test_sample.py"], tmp_path,
               cwd=tmp_path, env={"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"})
    broken = checker.failed_tests(tmp_path / "junit.xml")
    assert list(broken) == ["test_sample"]
    assert [line.split(":")[0] for line in broken["test_sample"]] == ["test_fails", "test_errors"]
    assert "assert 1 == 2" in broken["test_sample"][0] and "fixture broke" in broken["test_sample"][1]


def test_bad_arguments_are_one_line(tmp_path):
    result = run_python([str(SCRIPT), "--dry-run", "--pins", str(tmp_path / "missing.txt")], tmp_path)
    assert_one_line_error(result, 2, "is not a file")
    assert_one_line_error(run_python([str(SCRIPT), "--frobnicate"], tmp_path), 2, "--frobnicate")


@pytest.mark.parametrize("script, prefix", [("check_latest.py", "--dry"), ("sync_inline_metadata.py", "--che")])
def test_a_prefix_of_a_flag_is_not_that_flag(tmp_path, script, prefix):
    """The maintainer tools take --dry-run and --check only spelled out: a prefix such as --che is an error."""
    result = run_python([str(REPO / "scripts" / script), prefix], tmp_path)
    assert_one_line_error(result, 2, f"unrecognized arguments: {prefix}")


def interpreter(path, lines: str):
    """An executable standing in for a venv's python: runs ``lines`` of shell, then this interpreter."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\n{lines}\nexec {sys.executable} \"$@\"\n")
    path.chmod(0o755)
    return path


def test_the_snapshot_interpreter_runs_offline(tmp_path, monkeypatch):
    """The other venv imports transformers to read its signatures: without the offline variables it may call the
    Hub, whatever this process's environment says."""
    for name in ("HF_HUB_OFFLINE", "TRANSFORMERS_OFFLINE"):
        monkeypatch.delenv(name, raising=False)
    seen = tmp_path / "env.txt"
    python = interpreter(tmp_path / "bin" / "python", f"env > {seen}")
    checker.api_snapshot(python, ["json.dumps"])
    variables = dict(line.split("=", 1) for line in seen.read_text().splitlines() if "=" in line)
    assert variables.get("HF_HUB_OFFLINE") == "1" and variables.get("TRANSFORMERS_OFFLINE") == "1"


def test_an_api_change_with_nothing_broken_exits_1(tmp_path, monkeypatch, capfd):
    """The real run's venv and suite are stood in for (a python whose module path holds another signature, a suite
    that passes); the API comparison and the exit status are the script's own."""
    for name, signature in (("old", "a"), ("new", "a, b=1")):
        (tmp_path / name).mkdir()
        (tmp_path / name / "surface_mod.py").write_text(f"def function({signature}):\n    pass\n")
    baseline = interpreter(tmp_path / "baseline" / "bin" / "python", f"export PYTHONPATH={tmp_path / 'old'}")
    venv = tmp_path / "venv"
    interpreter(venv / "bin" / "python", f"export PYTHONPATH={tmp_path / 'new'}")
    passing = ('import sys; open(sys.argv[1], "w").write(\'<testsuite><testcase classname="t" name="ok"/>'
               '</testsuite>\')')
    monkeypatch.setattr(checker, "plan", lambda venv, junit_xml, pytest_args: [
        ["false"], ["true"], [sys.executable, "-c", passing, str(junit_xml)]])
    monkeypatch.setattr(checker, "load_surface", lambda: ["surface_mod.function"])
    code = checker.main(["--json", "--pins", str(REPO / "constraints" / "default.txt"), "--baseline-python",
                         str(baseline), "--venv", str(venv)])
    report = json.loads(capfd.readouterr().out)
    assert report["broken"] == {} and report["api_changes"] == ["surface_mod.function: parameter b added (default 1)"]
    assert code == 1
