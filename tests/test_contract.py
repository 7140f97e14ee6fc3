"""Every script in every skill follows the smoke-script contract (references/smoke-script-contract.md)."""

import filecmp
import textwrap
from pathlib import Path

import pytest

from conftest import REPO, SKILLS_DIR, assert_one_line_error, leg_marks, run_python

CONTRACT = REPO / "scripts" / "smoke_contract.py"
SCRIPTS = sorted(path for path in SKILLS_DIR.glob("*/scripts/*.py")
                 if path.name != "smoke_contract.py" and not path.name.startswith("_"))
SCRIPT_PARAMS = [pytest.param(path, id=f"{path.parts[-3]}/{path.name}", marks=leg_marks(path)) for path in SCRIPTS]
HEAVY_MODULES = ("torch", "composer", "transformers", "datasets", "evaluate", "accelerate")

IMPORTS_AFTER_HELP = textwrap.dedent("""
    import runpy, sys
    script = sys.argv[1]
    sys.path.insert(0, script.rsplit("/", 1)[0])
    sys.argv = [script, "--help"]
    try:
        runpy.run_path(script, run_name="__main__")
    except SystemExit as exc:
        code = exc.code
    print("EXIT", code, "HEAVY", ",".join(m for m in sys.argv[2:] if m in sys.modules) or "-")
""")


@pytest.mark.parametrize("scripts_dir", sorted(SKILLS_DIR.glob("*/scripts")), ids=lambda path: path.parent.name)
def test_each_skill_carries_an_identical_contract_copy(scripts_dir):
    copy = scripts_dir / "smoke_contract.py"
    assert copy.exists(), f"{copy} is missing: run make sync-contract"
    assert filecmp.cmp(copy, CONTRACT, shallow=False), f"{copy} differs from scripts/smoke_contract.py: run make sync-contract"


@pytest.mark.parametrize("script", SCRIPT_PARAMS)
def test_help_shows_an_example_and_exit_codes_without_heavy_imports(script, tmp_path):
    result = run_python(["-c", IMPORTS_AFTER_HELP, str(script), *HEAVY_MODULES], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "example:" in result.stdout and "exit codes:" in result.stdout
    assert f"python scripts/{script.name}" in result.stdout, "the example must be a command a user can paste"
    assert "EXIT 0 HEAVY -" in result.stdout, "--help must answer before torch or a training library is imported"


@pytest.mark.parametrize("script", SCRIPT_PARAMS)
def test_bad_arguments_get_one_line_and_exit_2(script, tmp_path):
    assert_one_line_error(run_python([str(script), "--no-such-flag"], tmp_path), 2, "--no-such-flag")
    assert_one_line_error(run_python([str(script), "--device", "tpu"], tmp_path), 2, "tpu")
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("keep me")
    assert_one_line_error(run_python([str(script), "--output-dir", str(a_file)], tmp_path), 2, "not a directory")
    assert a_file.read_text() == "keep me"


def test_contract_module_behaviour(tmp_path):
    """The shared contract, exercised directly: checks, JSON shape, temp dir removal, exit codes."""
    script = tmp_path / "demo_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(CONTRACT.parent)!r})
        from smoke_contract import build_parser, run_main

        def body(run):
            (run.output_dir / "artifact.txt").write_text("x")
            print(run.output_dir, file=sys.stderr)
            run.check_equal("arithmetic", 1 + 1, 2)
            run.check("requested", "--fail" not in sys.argv, "asked to fail" if "--fail" in sys.argv else "fine")

        parser = build_parser("demo_smoke.py", "demo", "python scripts/demo_smoke.py --json")
        parser.add_argument("--fail", action="store_true")
        sys.exit(run_main("demo_smoke.py", parser, body, ["pytest"]))
    """))
    passed = run_python([str(script), "--json"], tmp_path)
    assert passed.returncode == 0, passed.stderr
    summary = passed.json
    assert set(summary) >= {"script", "ok", "device", "versions", "checks", "seconds"}
    assert summary["ok"] is True and summary["versions"]["pytest"]
    assert [check["name"] for check in summary["checks"]] == ["arithmetic", "requested"]
    temporary = Path([line for line in passed.stderr_lines if line.startswith("/")][0])
    assert not temporary.exists(), "the default output directory must be removed at exit"

    kept = tmp_path / "kept"
    failed = run_python([str(script), "--json", "--fail", "--output-dir", str(kept)], tmp_path)
    assert_one_line_error(failed, 1, "requested")
    assert failed.json["ok"] is False and (kept / "artifact.txt").exists(), "a given output dir is never removed"
