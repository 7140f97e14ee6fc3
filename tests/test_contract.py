"""Every script in every skill follows the smoke-script contract (references/smoke-script-contract.md)."""

import ast
import json
import os
import re
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.checks import RECORD_KEYS, meets, same_value
from support.harness import DEVICES, SKILLS_DIR, assert_one_line_error, isolated_env, leg_marks, run_python
from support.shared_runs import CANONICAL_RUNS, canonical_run

# Each skill's own copy of the contract, the one its scripts import: a bug in either copy fails these tests
CONTRACTS = [pytest.param(path, id=path.parts[-3]) for path in sorted(SKILLS_DIR.glob("*/scripts/smoke_contract.py"))]
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


# Scripts whose main() still builds the parser itself; support/script_worker.py reads theirs by stopping main().
def test_every_script_builds_its_parser_in_make_parser():
    """One name for the parser factory: ``make_parser()`` returns the script's whole parser and main() parses with it,
    so the tests read a script's flags without running it."""
    built_in_main = []
    for script in SCRIPTS:
        functions = {node.name: node for node in ast.parse(script.read_text()).body
                     if isinstance(node, ast.FunctionDef)}
        called = {node.func.id for node in ast.walk(functions["main"])
                  if isinstance(node, ast.Call) and isinstance(node.func, ast.Name)}
        if "make_parser" not in functions or "make_parser" not in called:
            built_in_main.append(script.name)
    assert built_in_main == []


@pytest.mark.parametrize("script", SCRIPT_PARAMS)
def test_help_shows_an_example_and_exit_codes_without_heavy_imports(script, tmp_path):
    result = run_python(["-c", IMPORTS_AFTER_HELP, str(script), *HEAVY_MODULES], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "example:" in result.stdout and "exit codes:" in result.stdout
    assert f"python scripts/{script.name}" in result.stdout, "the example must be a command a user can paste"
    assert "EXIT 0 HEAVY -" in result.stdout, "--help must answer before torch or a training library is imported"


@pytest.mark.parametrize("script", SCRIPT_PARAMS)
def test_bad_arguments_get_one_line_and_exit_2(script, tmp_path):
    a_file = tmp_path / "not-a-dir"
    a_file.write_text("keep me")
    for args, fragment in ((["--no-such-flag"], "--no-such-flag"), (["--device", "tpu"], "tpu"),
                           (["--output-dir", str(a_file)], "not a directory")):
        result = run_python([str(script), *args], tmp_path)
        assert_one_line_error(result, 2, fragment)
        assert result.stray_files == [], (args, result.stray_files)
    assert a_file.read_text() == "keep me"


@pytest.mark.parametrize("script", SCRIPT_PARAMS)
def test_output_dirs_that_are_not_plain_folders_are_refused_saying_what_they_are(script, tmp_path):
    """'' is not the working folder; a dangling link is named as one (mkdir says only "File exists"); a brace would be
    expanded by Composer ({rank}, {run_name}), so checkpoints would land in sibling folders outside the output dir."""
    (tmp_path / "link").symlink_to(tmp_path / "gone")
    refused = [("", "an empty path is not a folder"),
               ("link/out", f"{str(Path('link'))!r} is a dangling symbolic link"),
               *((braced, "has a brace in its path") for braced in ("out/{rank}", "out/{run_name}", "out/x{"))]
    for output_dir, fragment in refused:
        result = run_python([str(script), "--output-dir", output_dir], tmp_path)
        assert_one_line_error(result, 2, fragment)
        assert result.stray_files == [], (output_dir, result.stray_files)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["home", "link", "tmpdir"], \
        "nothing is created for a refused output dir"


@pytest.mark.parametrize("script", SCRIPT_PARAMS)
def test_an_abbreviated_flag_is_not_taken_for_the_flag(script, tmp_path, script_worker):
    """`env_check.py --js` once ran without JSON and exit 0: argparse took the prefix for --json while run_main looked
    for the literal flag. Every long flag, one letter short, is refused and named."""
    worker = script_worker(script)
    for option in worker.options(script):
        for flag in (flag for flag in option["flags"] if flag.startswith("--")):
            value = {"flag": [], "choice": [(option["choices"] or ["x"])[0]], "count": ["1"], "seed": ["1"]}
            prefix = flag[:-1]
            result = worker.run(script, prefix, *value.get(option["kind"], ["x"]), cwd=tmp_path)
            assert result.returncode == 2, f"{script.name} {prefix}: exit {result.returncode}\n{result.stderr[-1500:]}"
            error_lines = [line for line in result.stderr.splitlines() if f"{script.name}: error: " in line]
            assert len(error_lines) == 1 and re.search(rf"{re.escape(prefix)}(\s|$)", error_lines[0]), \
                f"{script.name} {prefix}: {result.stderr[-1500:]}"


@pytest.mark.parametrize("contract", CONTRACTS)
def test_contract_module_behaviour(tmp_path, contract):
    """The shared contract, exercised directly: checks, JSON shape, temp dir removal, exit codes."""
    script = tmp_path / "demo_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(contract.parent)!r})
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


ENVIRONMENT_SMOKE = """
import json, os, sys, tempfile
sys.path.insert(0, sys.argv.pop(1))
from smoke_contract import build_parser, run_main

def body(run):
    seen = {name: os.environ.get(name) for name in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE",
                                                    "HF_HOME", "TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "RANK")}
    seen["tempfile"] = tempfile.gettempdir()
    (run.output_dir / "seen.json").write_text(json.dumps(seen))
    if "--no-check" not in sys.argv:
        run.check("ran", True)

parser = build_parser("env_smoke.py", "demo", "python scripts/env_smoke.py")
parser.add_argument("--no-check", action="store_true")
sys.exit(run_main("env_smoke.py", parser, body, []))
"""


@pytest.mark.parametrize("contract", CONTRACTS)
def test_the_body_runs_offline_with_caches_and_temp_files_in_its_output_dir(tmp_path, contract):
    """What the contract promises every script, held by each copy: the Hub and datasets offline, every cache and
    the temporary folder inside the output directory, an inherited RANK cleared; a used output directory refused,
    its file untouched; a body that checks nothing is a failure, not a pass."""
    script = tmp_path / "env_smoke.py"
    script.write_text(ENVIRONMENT_SMOKE)
    out = tmp_path / "out"
    result = run_python([str(script), str(contract.parent), "--output-dir", str(out)], tmp_path, env={"RANK": "3"})
    assert result.returncode == 0, result.stderr
    seen = json.loads((out / "seen.json").read_text())
    assert seen["HF_HUB_OFFLINE"] == seen["HF_DATASETS_OFFLINE"] == seen["TRANSFORMERS_OFFLINE"] == "1", seen
    for name in ("HF_HOME", "TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "tempfile"):
        assert Path(seen[name]).is_relative_to(out.resolve()), (name, seen[name])
    assert seen["RANK"] is None
    used = run_python([str(script), str(contract.parent), "--output-dir", str(out)], tmp_path)
    assert_one_line_error(used, 2, "is not empty")
    assert json.loads((out / "seen.json").read_text()) == seen
    nothing = run_python([str(script), str(contract.parent), "--no-check"], tmp_path)
    assert_one_line_error(nothing, 1, "no check ran")


@pytest.mark.parametrize("contract", CONTRACTS)
def test_checks_carry_their_values_as_json(tmp_path, contract):
    """actual and expected hold values, not text: plain JSON (no NaN, a tuple as a list, a numpy scalar as its number,
    a path as its text), null where a check compares none; the detail keeps its words."""
    script = tmp_path / "values_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import pathlib, signal, sys
        import numpy
        sys.path.insert(0, {str(contract.parent)!r})
        from smoke_contract import build_parser, run_main

        def body(run):
            run.check_equal("arithmetic", 1 + 1, 2)
            run.check("plain", True, "nothing to compare")
            run.check("loss", 0.5 < 0.7, "loss 0.5000", actual=0.5, expected={{"<": 0.7}})
            run.check("odd", True, "shown as JSON", actual=[(1, "a"), float("nan"), float("-inf"), pathlib.Path("/x"),
                                                            signal.SIGKILL, numpy.int64(3)], expected={{1: (2, None)}})

        parser = build_parser("values_smoke.py", "demo", "python scripts/values_smoke.py --json")
        sys.exit(run_main("values_smoke.py", parser, body, ["pytest"]))
    """))
    result = run_python([str(script), "--json"], tmp_path)
    assert result.returncode == 0, result.stderr

    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")

    checks = {check["name"]: check for check in json.loads(result.stdout, parse_constant=refuse)["checks"]}
    assert all(list(check) == RECORD_KEYS for check in checks.values()), checks
    assert checks["arithmetic"] == {"name": "arithmetic", "ok": True, "detail": "got 2, expected 2", "actual": 2,
                                    "expected": 2}
    assert checks["plain"]["actual"] is None and checks["plain"]["expected"] is None
    assert same_value(checks["loss"]["expected"], {"<": 0.7}) and meets(checks["loss"]["actual"], {"<": 0.7})
    assert checks["loss"]["detail"] == "loss 0.5000"
    assert same_value(checks["odd"]["actual"], [[1, "a"], "nan", "-inf", "/x", 9, 3])
    assert same_value(checks["odd"]["expected"], {"1": [2, None]})


# Scripts whose checks report decisions or findings in words, with no value measured against another.
NO_VALUES = {"composer-training/preflight.py", "composer-training/env_check.py", "composer-training/trap_check.py",
             "transformers-training/env_check.py", "transformers-training/trap_check.py",
             "transformers-training/training_args_smoke.py"}


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("script", [pytest.param(script, marks=leg_marks(SKILLS_DIR / script))
                                    for script in sorted(CANONICAL_RUNS)])
def test_every_check_of_a_full_run_carries_values_that_agree_with_its_outcome(script, device, tmp_path_factory):
    """Each script's shared full run: every check record has the five keys, a script that measures reports its
    values, and every check that carries values passed exactly when actual meets expected."""
    checks = canonical_run(tmp_path_factory, script, device).json["checks"]
    assert checks and all(list(check) == RECORD_KEYS for check in checks), checks
    carrying = [check for check in checks if check["actual"] is not None or check["expected"] is not None]
    assert carrying or script in NO_VALUES, f"{script}: no check reports its values"
    disagree = [check for check in carrying if meets(check["actual"], check["expected"]) != check["ok"]]
    assert not disagree, disagree


# A real script, run as users run it: the contract's summary is the last thing it writes.
ENV_CHECK = SKILLS_DIR / "transformers-training" / "scripts" / "env_check.py"


@pytest.mark.parametrize("stdout_kind", ["a closed pipe", "a full disk"])
def test_a_summary_that_cannot_be_written_is_one_error_line_and_a_failure(stdout_kind, tmp_path):
    """`env_check.py --json | true` and `> /dev/full` gave a traceback and left the temporary folder behind."""
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    env = isolated_env(tmp_path, {"TMPDIR": str(tmpdir)})
    if stdout_kind == "a closed pipe":
        reader, stdout = os.pipe()
        os.close(reader)
    else:
        stdout = os.open("/dev/full", os.O_WRONLY)
    try:
        completed = subprocess.run([sys.executable, str(ENV_CHECK), "--json"], stdout=stdout, stderr=subprocess.PIPE,
                                   stdin=subprocess.DEVNULL, env=env, cwd=tmp_path, text=True, timeout=240)
    finally:
        os.close(stdout)
    assert completed.returncode == 1, completed.stderr[-2000:]
    assert "Traceback" not in completed.stderr and "Exception ignored" not in completed.stderr, completed.stderr
    error_lines = [line for line in completed.stderr.splitlines() if "env_check.py: error: " in line]
    assert len(error_lines) == 1 and "could not write to stdout" in error_lines[0], completed.stderr[-2000:]
    assert list(tmpdir.iterdir()) == [], "the temporary output folder must be removed"


@pytest.mark.parametrize("script", [pytest.param(script, marks=leg_marks(SKILLS_DIR / script)) for script in
                                    ["composer-training/scripts/train_smoke.py",
                                     "transformers-training/scripts/training_args_smoke.py"]])
def test_inherited_distributed_variables_are_cleared_before_torch_sees_them(script, tmp_path):
    """Inside a cluster job RANK, WORLD_SIZE, MASTER_ADDR... are set: torch then tried to join that job (serve its
    store, connect to MASTER_ADDR) and Composer trained as one of two ranks. Reproduced on loopback only: MASTER_ADDR
    is 127.0.0.2 and MASTER_PORT a port this test holds there, listening and never answering, so serving on it fails
    and an attempt to connect to it is seen here (torch connects from C++, past the offline guard)."""
    listener = socket.socket()
    listener.bind(("127.0.0.2", 0))
    listener.listen(8)
    listener.setblocking(False)
    inherited = {"RANK": "0", "LOCAL_RANK": "0", "WORLD_SIZE": "2", "MASTER_ADDR": "127.0.0.2",
                 "MASTER_PORT": str(listener.getsockname()[1])}
    try:
        canonical = CANONICAL_RUNS[script.replace("/scripts/", "/")]
        result = run_python([str(SKILLS_DIR / script), *canonical, "--device", "cpu", "--json"], tmp_path,
                            env=inherited, timeout=120)
        try:
            listener.accept()[0].close()  # a connection attempt waits here
            connected = True
        except BlockingIOError:
            connected = False
    finally:
        listener.close()
    assert not connected, f"{script} connected to the inherited MASTER_ADDR"
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stray_files == [], result.stray_files
    assert result.network_attempts == []
    cleared = [line for line in result.stderr_lines if "cleared inherited distributed variables" in line]
    assert len(cleared) == 1 and all(name in cleared[0] for name in inherited), result.stderr[-3000:]


def test_main_runs_twice_in_one_process(tmp_path):
    """run_main points tempfile at the run's own temporary folder and removes that folder at the end: a second
    main() in the same process once died with FileNotFoundError because tempfile still pointed there."""
    code = textwrap.dedent(f"""
        import os, sys, tempfile
        sys.path.insert(0, {str(ENV_CHECK.parent)!r})
        sys.dont_write_bytecode = True
        import env_check
        codes = [env_check.main(["--device", "cpu"]) for _ in range(2)]
        assert os.path.isdir(tempfile.gettempdir()), tempfile.gettempdir()
        print(codes)
    """)
    result = run_python(["-c", code], tmp_path)
    assert result.returncode == 0 and result.stdout.strip() == "[0, 0]", result.stderr[-2000:]
