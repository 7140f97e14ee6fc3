"""Every script in every skill follows the smoke-script contract (references/smoke-script-contract.md)."""

import ast
import contextlib
import importlib.util
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from support.checks import RECORD_KEYS, meets, same_value
from support.harness import (DEVICES, REPO, SKILLS_DIR, assert_one_line_error, isolated_env, leg_marks, run_command,
                             run_python, tree_state)
from support.shared_runs import CANONICAL_RUNS, canonical_run

CONTRACT = REPO / "skill_common" / "smoke_contract.py"  # the holder and loading tests run the one source
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
from smoke_contract import OFFLINE_ENV, build_parser, run_main

def body(run):
    seen = {name: os.environ.get(name) for name in ("HF_HOME", "TMPDIR", "TORCHINDUCTOR_CACHE_DIR", "RANK")}
    seen["offline"] = {name: os.environ.get(name) for name in OFFLINE_ENV}
    seen["tempfile"] = tempfile.gettempdir()
    (run.output_dir / "seen.json").write_text(json.dumps(seen))
    if "--no-check" not in sys.argv:
        run.check("ran", True)

parser = build_parser("env_smoke.py", "demo", "python scripts/env_smoke.py")
parser.add_argument("--no-check", action="store_true")
sys.exit(run_main("env_smoke.py", parser, body, []))
"""
# What every script runs under, stated here apart from the copies: a copy that loses or flips one is caught.
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "HF_EVALUATE_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "HF_HUB_DISABLE_TELEMETRY": "1", "HF_HUB_DISABLE_UPDATE_CHECK": "1", "DISABLE_MLFLOW_INTEGRATION": "TRUE",
           "WANDB_DISABLED": "true", "TOKENIZERS_PARALLELISM": "false"}


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
    assert seen["offline"] == OFFLINE, seen
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


# ---- the output folder is claimed for the length of a run ----

HOLDER = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(CONTRACT.parent)!r})
    from smoke_contract import build_parser, run_main

    def body(run):  # like a run importing torch: only the contract's empty .cache folders in its output folder yet
        print("holding", file=sys.stderr, flush=True)
        sys.stdin.readline()  # holds the folder until the test closes stdin
        (run.output_dir / "result.txt").write_text("written by the holder")
        run.check("held", True, "released")

    parser = build_parser("holder_smoke.py", "holds its output folder", "python scripts/holder_smoke.py")
    sys.exit(run_main("holder_smoke.py", parser, body, []))
""")


@contextlib.contextmanager
def holding(tmp_path: Path, output_dir: Path):
    """A smoke run (the contract's) that holds ``output_dir`` in its checks until the block ends."""
    script = tmp_path / "holder_smoke.py"
    script.write_text(HOLDER)
    holder = subprocess.Popen([sys.executable, str(script), "--output-dir", str(output_dir)], cwd=tmp_path, text=True,
                              env=isolated_env(tmp_path), stdin=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        for line in holder.stderr:  # its checks run once this line comes: the folder is claimed
            if line.strip() == "holding":
                break
        assert holder.poll() is None, holder.stderr.read()
        yield holder
    finally:
        if holder.poll() is None:
            holder.stdin.close()
        holder.wait(timeout=60)
        holder.stderr.close()


def test_a_folder_another_run_holds_is_refused_naming_that_run(tmp_path):
    """Two runs given one empty folder both passed the "new or empty" check (1 pair in 30) and one failed later with
    FileExistsError. A run claims its folder: a second one is exit 2, naming the run that holds it, and changes nothing;
    the holder finishes untouched and releases the folder."""
    out = tmp_path / "out"
    with holding(tmp_path, out) as holder:
        state = tree_state(out)
        second = run_python([str(ENV_CHECK), "--output-dir", str(out), "--json"], tmp_path)
        assert_one_line_error(second, 2, f"--output-dir {str(out)!r} is in use by another run (holder_smoke.py, "
                                         f"pid {holder.pid}, started ")
        assert second.json["exit_code"] == 2 and tree_state(out) == state, "the refused run changed the folder"
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    assert (out / "result.txt").read_text() == "written by the holder"
    assert not (out / ".smoke-run").exists(), "the claim is released at exit"


def test_a_folder_is_claimed_before_anything_is_written_in_it(tmp_path):
    """The race's window: a run that holds a folder still empty (it claimed it, nothing written yet). A second run
    found it empty and went ahead; it is refused the same way."""
    spec = importlib.util.spec_from_file_location("contract_under_test", CONTRACT)
    contract = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(contract)
    out = tmp_path / "out"
    out.mkdir()
    claim = contract._Claim.take(out, "first_smoke.py", "the first run")
    try:
        claim.write_holder()
        second = run_python([str(ENV_CHECK), "--output-dir", str(out)], tmp_path)
    finally:
        claim.release()
    assert_one_line_error(second, 2, f"is in use by another run (first_smoke.py, pid {os.getpid()}, started ")
    assert os.listdir(out) == []


def test_a_killed_runs_marker_binds_no_one(tmp_path):
    """A run killed by SIGKILL (or the OOM killer) leaves its marker, but the lock was the kernel's: its folder is
    refused as not empty, saying whose files those are, never as in use; with nothing else in it, it is taken over."""
    out = tmp_path / "out"
    with holding(tmp_path, out) as holder:
        holder.kill()
    assert (out / ".smoke-run").exists()
    refused = run_python([str(ENV_CHECK), "--output-dir", str(out)], tmp_path)
    assert_one_line_error(refused, 2, f"is not empty (files of a run that ended without cleaning up, killed perhaps: "
                                      f"holder_smoke.py, pid {holder.pid}, started ")
    for entry in out.iterdir():
        if entry.name != ".smoke-run":
            shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
    taken_over = run_python([str(ENV_CHECK), "--output-dir", str(out), "--device", "cpu"], tmp_path)
    assert taken_over.returncode == 0, taken_over.stderr[-2000:]
    assert not (out / ".smoke-run").exists()


NOTHING_SMOKE = textwrap.dedent(f"""
    import sys
    sys.path.insert(0, {str(CONTRACT.parent)!r})
    from smoke_contract import build_parser, run_main

    parser = build_parser("nothing_smoke.py", "demo", "python scripts/nothing_smoke.py")
    sys.exit(run_main("nothing_smoke.py", parser, lambda run: run.check("ran", True, "done"), []))
""")


def test_a_marker_is_taken_over_only_when_a_run_left_it(tmp_path):
    """A hard link named .smoke-run had its outside file truncated and rewritten (and removed from the folder at
    exit), a file of the user's notes with that name was taken over and deleted, a named pipe gave "unexpected
    OSError", a directory "is not writable". Only a regular file with no other link holding a run's holder line, or
    nothing (a run killed before writing it), is taken over; anything else is refused as not empty, left as it was."""
    script = tmp_path / "nothing_smoke.py"
    script.write_text(NOTHING_SMOKE)
    outside = tmp_path / "precious.txt"
    outside.write_text("precious\n")
    for folder in ("home", "tmpdir"):  # run_python's, made before the first look
        (tmp_path / folder).mkdir()
    makers = {
        "a file with 1 other hard link(s)": lambda marker: os.link(outside, marker),
        "a symbolic link": lambda marker: marker.symlink_to(outside),
        "a file that is not a smoke run's marker": lambda marker: marker.write_text("my notes\n"),
        "a named pipe": os.mkfifo,
        "a directory": os.mkdir,
    }
    for what, make in makers.items():
        out = tmp_path / what.replace(" ", "-")
        out.mkdir()
        make(out / ".smoke-run")
        before = tree_state(tmp_path)
        result = run_python([str(script), "--output-dir", str(out)], tmp_path)
        assert_one_line_error(result, 2, f"is not empty (.smoke-run there is {what}, not a smoke run's marker")
        assert tree_state(tmp_path) == before, what
        assert outside.read_text() == "precious\n"
    for content in ("", "nothing_smoke.py, pid 12, started 2026-12-04 21:00:00 UTC\n"):  # runs killed before / after
        out = tmp_path / f"left-{len(content)}"
        out.mkdir()
        (out / ".smoke-run").write_text(content)
        result = run_python([str(script), "--output-dir", str(out)], tmp_path)
        assert result.returncode == 0 and os.listdir(out) == [".cache"], result.stderr[-2000:]


def test_a_checker_given_a_folder_another_run_holds_removes_nothing_in_it(tmp_path):
    """`trap_check.py --output-dir X` removed the empty .cache folders of a smoke run importing torch in X, which then
    failed with FileNotFoundError: what another run holds is refused, and nothing in it is removed."""
    trap_check = SKILLS_DIR / "transformers-training" / "scripts" / "trap_check.py"
    (tmp_path / "train.py").write_text("print('hello')\n")
    out = tmp_path / "out"
    with holding(tmp_path, out):
        state = tree_state(out)
        assert any(path.endswith(os.sep + "hf") for path in state), state
        result = run_python([str(trap_check), "--output-dir", str(out), str(tmp_path / "train.py")], tmp_path)
        assert tree_state(out) == state, "the checker changed a folder another run holds"
    assert_one_line_error(result, 2, "is in use by another run (holder_smoke.py")


def test_a_script_that_writes_nothing_removes_only_the_empty_cache_folders_of_its_own_run(tmp_path):
    """run.remove_empty_cache(), for trap_check.py: the empty folders the contract made under .cache go, a folder with
    a file stays; a second run may then be given the same folder when the first left it empty."""
    script = tmp_path / "tidy_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(CONTRACT.parent)!r})
        from smoke_contract import build_parser, run_main

        def body(run):
            if "--write" in sys.argv:
                (run.output_dir / ".cache" / "hf" / "kept.txt").write_text("x")
            run.remove_empty_cache()
            run.check("tidied", True, "done")

        parser = build_parser("tidy_smoke.py", "demo", "python scripts/tidy_smoke.py")
        parser.add_argument("--write", action="store_true")
        sys.exit(run_main("tidy_smoke.py", parser, body, []))
    """))
    out = tmp_path / "out"
    for _ in range(2):
        result = run_python([str(script), "--output-dir", str(out)], tmp_path)
        assert result.returncode == 0, result.stderr[-2000:]
        assert os.listdir(out) == []
    result = run_python([str(script), "--output-dir", str(tmp_path / "kept"), "--write"], tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert sorted(os.listdir(tmp_path / "kept" / ".cache")) == ["hf"]
    assert os.listdir(tmp_path / "kept" / ".cache" / "hf") == ["kept.txt"]


# ---- the environment a script starts in ----

@pytest.mark.parametrize("script", SCRIPT_PARAMS)
def test_a_deleted_working_directory_is_one_line_and_exit_2(script, tmp_path):
    """Started from a working directory that was deleted, every torch-importing script died inside torch's import
    (Intel oneMKL FATAL ERROR, exit 2, no error line, no JSON) and left its temporary folder behind."""
    gone = tmp_path / "gone"
    gone.mkdir()
    command = f"cd {shlex.quote(str(gone))} && rmdir {shlex.quote(str(gone))} && " \
              f"exec {shlex.quote(sys.executable)} {shlex.quote(str(script))} --json"
    result = run_command(["bash", "-c", command], tmp_path)
    assert_one_line_error(result, 2, "the working directory no longer exists")
    assert result.json["exit_code"] == 2
    assert result.stray_files == [] and os.listdir(tmp_path / "tmpdir") == [], "nothing is left behind"


def test_a_package_that_fails_to_load_is_told_from_a_missing_one(tmp_path):
    """Under `ulimit -v` torch's shared libraries fail to load, which was reported as "missing dependency 'torch'
    ... fix: pip install torch". A package not installed gets the pip line; one installed that fails to load (an
    OSError from a library, a missing module inside it) gets its real error and no pip line."""
    site = tmp_path / "site"
    (site / "unloadable_pkg").mkdir(parents=True)
    (site / "unloadable_pkg" / "__init__.py").write_text(
        "raise OSError('libunloadable.so: failed to map segment from shared object')\n")
    (site / "half_installed_pkg").mkdir()
    (site / "half_installed_pkg" / "__init__.py").write_text("import no_such_module_inside_it\n")
    script = tmp_path / "require_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(CONTRACT.parent)!r}, {str(site)!r}]
        from smoke_contract import build_parser, require, run_main

        def body(run):
            require(sys.argv[1], "pip install " + sys.argv[1])

        parser = build_parser("require_smoke.py", "demo", "python scripts/require_smoke.py")
        parser.add_argument("module")
        sys.exit(run_main("require_smoke.py", parser, body, [], sys.argv[1:]))
    """))
    missing = run_python([str(script), "not_installed_pkg"], tmp_path)
    assert_one_line_error(missing, 3, "missing dependency 'not_installed_pkg' (No module named 'not_installed_pkg'); "
                                      "fix: pip install not_installed_pkg")
    for module, error in (("unloadable_pkg", "OSError: libunloadable.so: failed to map segment from shared object"),
                          ("half_installed_pkg", "ModuleNotFoundError: No module named 'no_such_module_inside_it'")):
        result = run_python([str(script), module], tmp_path)
        assert_one_line_error(result, 3, f"dependency {module!r} is installed but failed to load ({error})")
        assert "pip install " + module not in result.stderr, result.stderr


def test_out_of_memory_and_an_unreadable_version_are_one_line_and_a_summary(tmp_path):
    """Under `ulimit -v` a bare MemoryError (no message) was "error: unexpected MemoryError:" and, with --json, reading
    a package's version raised inside the summary: a traceback. A version that cannot be read (here a broken
    METADATA, a real one on sys.path) is null; a MemoryError is named "out of memory", in a check or in an import."""
    site = tmp_path / "site"
    (site / "broken_dist-1.0.dist-info").mkdir(parents=True)
    (site / "broken_dist-1.0.dist-info" / "METADATA").write_bytes(b"Metadata-Version: 2.1\nName: broken-dist\n"
                                                                  b"Version: \xff\xfe\n")
    (site / "memory_hungry_pkg.py").write_text("raise MemoryError\n")
    script = tmp_path / "memory_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(CONTRACT.parent)!r}, {str(site)!r}]
        from smoke_contract import build_parser, require, run_main

        def body(run):
            if run.args.mode == "import":
                require("memory_hungry_pkg", "pip install memory-hungry-pkg")
            raise MemoryError

        parser = build_parser("memory_smoke.py", "demo", "python scripts/memory_smoke.py")
        parser.add_argument("mode", choices=["import", "check"])
        sys.exit(run_main("memory_smoke.py", parser, body, ["broken-dist"]))
    """))
    for mode, code, error in (("check", 1, "memory_smoke.py: error: unexpected MemoryError: out of memory"),
                              ("import", 3, "'memory_hungry_pkg' is installed but failed to load (MemoryError: out "
                                            "of memory)")):
        result = run_python([str(script), mode, "--json"], tmp_path)
        assert_one_line_error(result, code, error)
        assert result.json["versions"] == {"broken-dist": None} and result.json["exit_code"] == code


@pytest.mark.composer  # the limit is measured on the first leg's stack (torch 2.7); the latest stack trains under it
def test_a_memory_limit_that_lets_torch_load_but_not_the_trainer_is_exit_3_with_a_summary(tmp_path):
    """The outside tester's `ulimit -v 4000000`: torch loads, then transformers.trainer (imported by _tiny_runs.py
    outside require) raised a bare MemoryError: "unexpected MemoryError:", exit 1, and with --json a traceback from
    the versions of the summary."""
    script = SKILLS_DIR / "transformers-training" / "scripts" / "train_smoke.py"
    command = f"ulimit -v 4000000 && exec {shlex.quote(sys.executable)} {shlex.quote(str(script))} --device cpu --json"
    result = run_command(["bash", "-c", command], tmp_path)
    assert_one_line_error(result, 3, "is installed but failed to load (")
    assert result.json["exit_code"] == 3 and result.stray_files == []


def test_torch_kept_out_by_a_memory_limit_is_not_called_missing(tmp_path):
    """The outside tester's run, with a limit so low (300 MB of address space) that torch's own library cannot map."""
    script = SKILLS_DIR / "transformers-training" / "scripts" / "training_args_smoke.py"
    command = f"ulimit -v 300000 && exec {shlex.quote(sys.executable)} {shlex.quote(str(script))} --device cpu"
    result = run_command(["bash", "-c", command], tmp_path)
    assert_one_line_error(result, 3, "dependency 'torch' is installed but failed to load (")
    assert "pip install torch" not in result.stderr and result.stray_files == []


@pytest.mark.parametrize("skill", [pytest.param(path.parents[1], id=path.parts[-3], marks=leg_marks(path))
                                   for path in sorted(SKILLS_DIR.glob("*/scripts/trap_check.py"))])
def test_keep_names_the_temporary_output_dir_in_the_json_and_keeps_it(skill, tmp_path):
    """--keep without --output-dir: the folder stays, and the JSON is the only place that says where it is."""
    (tmp_path / "clean.py").write_text("x = 1\n")
    command = [str(skill / "scripts" / "trap_check.py"), "clean.py", "--json"]
    (tmp_path / "tmp").mkdir()
    kept = run_python([*command, "--keep"], tmp_path, cwd=tmp_path, env={"TMPDIR": str(tmp_path / "tmp")})
    assert kept.returncode == 0, kept.stderr
    assert "output_dir" in kept.json and Path(kept.json["output_dir"]).is_dir(), kept.json
    shutil.rmtree(kept.json["output_dir"])
    plain = run_python(command, tmp_path, cwd=tmp_path, env={"TMPDIR": str(tmp_path / "tmp")})
    assert plain.returncode == 0 and "output_dir" not in plain.json, plain.json
