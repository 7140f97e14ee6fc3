"""Signals, sent for real to real script processes: SIGINT to the script's process group, as Ctrl-C sends it, and
SIGTERM to the script, as `kill`, `timeout` or a cancelled CI job sends it. Afterwards no process of the script is
left and no file outside its output folder (the default temporary one is removed); a run the signal interrupted ends
with one error line naming the signal, the JSON summary and exit 130 / 143, never a traceback.

Every single-process smoke script of both skills gets both signals at random moments (the distributed smokes have
their own tests). The moments come from a seeded RNG (SIGNAL_TEST_SEED picks another seed) and every assertion
prints them, so a failure is reproducible. A delay counts from a point the script reached: the contract holding
SIGTERM (read from /proc/<pid>/status, so the moment falls inside run_main, imports included) or its first check
line. The scripts of a skill run four at a time. Then the contract's own promises, on a small script that uses it:
the body sees the signal as a KeyboardInterrupt (Composer imported or not), and a signal during an import is raised
once the import is done.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.harness import REPO, isolated_env, skill_dirs, skill_param, stray_files, tree_state
from support.shared_runs import CANONICAL_RUNS

SEED = int(os.environ.get("SIGNAL_TEST_SEED", "20240917"))
PARALLEL_RUNS = 4
RUN_TIMEOUT_S = 180
MARKER = "SIGNAL_TEST_RUN"  # in each run's environment, so every process it starts can be found in /proc
CONTRACT_ANCHOR = "the contract holds SIGTERM"


@dataclass
class Moment:
    signum: int
    to_group: bool
    anchor: str  # CONTRACT_ANCHOR, or the start of a line on stderr
    delay: float

    def __str__(self) -> str:
        target = "its process group" if self.to_group else "the script"
        return (f"{signal.Signals(self.signum).name} to {target} {self.delay:.2f}s after {self.anchor!r} "
                f"(SIGNAL_TEST_SEED={SEED})")


@dataclass
class SignalledRun:
    code: int
    stdout: str
    stderr: str
    sent: bool
    problems: list[str]  # processes left, files left outside the output folder, network attempts, no anchor


def handles_sigterm(pid: int) -> bool:
    """Whether the process has a SIGTERM handler: the contract's, from the start of run_main to its end."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    caught = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt:")), 16)
    return bool(caught & (1 << (signal.SIGTERM - 1)))


def marked_processes(marker: str) -> list[str]:
    """Live processes whose environment holds ``marker`` (zombies have none), each as 'pid command'."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0"):
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                found.append(f"{pid} {command[:200]}")
        except OSError:
            continue
    return found


def signal_a_run(command: list[str], root: Path, moment: Moment) -> SignalledRun:
    """Run ``command`` offline with HOME, TMPDIR and the working folder under ``root``, send the signal at the
    moment, and wait for it to end."""
    cwd, home, tmpdir = root / "cwd", root / "home", root / "tmpdir"
    for folder in (cwd, home, tmpdir):
        folder.mkdir(parents=True, exist_ok=True)
    marker = f"{MARKER}={root}"
    env = isolated_env(root, {"HOME": str(home), "TMPDIR": str(tmpdir), MARKER: str(root)})
    before = tree_state(root)
    process = subprocess.Popen(command, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    stderr_lines, stdout_parts, anchor_line = [], [], threading.Event()

    def read_stderr():
        for line in process.stderr:
            stderr_lines.append(line)
            if line.startswith(moment.anchor):
                anchor_line.set()

    readers = [threading.Thread(target=read_stderr, daemon=True),
               threading.Thread(target=lambda: stdout_parts.append(process.stdout.read()), daemon=True)]
    for reader in readers:
        reader.start()
    deadline = time.monotonic() + RUN_TIMEOUT_S
    anchored = False
    while not anchored and process.poll() is None and time.monotonic() < deadline:
        anchored = handles_sigterm(process.pid) if moment.anchor == CONTRACT_ANCHOR else anchor_line.is_set()
        time.sleep(0.005)
    sent = False
    if anchored:
        time.sleep(moment.delay)
        try:
            (os.killpg if moment.to_group else os.kill)(process.pid, moment.signum)
            sent = True
        except ProcessLookupError:  # it ended during the delay
            pass
    try:
        process.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
        return SignalledRun(process.returncode, "", "", sent, [f"still running {RUN_TIMEOUT_S}s after its start"])
    for reader in readers:
        reader.join(timeout=10)  # a process that outlived the script may hold the pipes open
    problems = []
    survivors = marked_processes(marker)
    if survivors:
        problems.append(f"processes outlived the script: {survivors}")
        for survivor in survivors:
            os.kill(int(survivor.split()[0]), signal.SIGKILL)
    after = {path: state for path, state in tree_state(root).items() if path != env["OFFLINE_GUARD_LOG"]}
    strays = stray_files(before, after, None)
    if strays:
        problems.append(f"files left outside its output folder: {strays[:5]}")
    if Path(env["OFFLINE_GUARD_LOG"]).exists():
        problems.append(f"network attempts: {Path(env['OFFLINE_GUARD_LOG']).read_text()[:300]}")
    if not anchored:
        problems.append(f"ended (exit {process.returncode}) before {moment.anchor!r}")
    return SignalledRun(process.returncode, "".join(stdout_parts), "".join(stderr_lines), sent, problems)


def interrupted_problems(run: SignalledRun, script: str, signum: int) -> list[str]:
    """What an interrupted run's output lacks: one error line naming the signal, no traceback, the JSON summary."""
    name = signal.Signals(signum).name
    problems = []
    if run.code != 128 + signum:
        problems.append(f"exit {run.code}, expected {128 + signum}")
    error_lines = [line for line in run.stderr.splitlines() if f"{script}: error: " in line]
    if len(error_lines) != 1 or f"interrupted by {name}" not in error_lines[0]:
        problems.append(f"not one error line naming {name}: {error_lines}")
    if "Traceback" in run.stderr:
        problems.append("a traceback")
    try:
        summary = json.loads(run.stdout)
    except ValueError:
        summary = {}
    if summary.get("exit_code") != 128 + signum or summary.get("ok") is not False:
        problems.append(f"no JSON summary with exit_code {128 + signum}: {run.stdout[-300:]!r}")
    return problems


# ---------------------------------------------------------------- every single-process smoke script

def single_process_scripts(skill: Path) -> list[Path]:
    return sorted(path for path in (skill / "scripts").glob("*.py")
                  if path.name != "smoke_contract.py" and not path.name.startswith(("distributed_", "_")))


def canonical_command(skill: Path, script: Path) -> list[str]:
    """The canonical run without --output-dir, so the default temporary output folder is the one that must go."""
    args = list(CANONICAL_RUNS[f"{skill.name}/{script.name}"])
    if "--output-dir" in args:
        del args[args.index("--output-dir"):args.index("--output-dir") + 2]
    # A canonical run starts in the skill folder (trap_check.py reads "scripts"); this one starts in an empty folder
    args = [str(skill / arg) if not arg.startswith("-") and (skill / arg).exists() else arg for arg in args]
    return [sys.executable, str(script), *args, "--device", "cpu", "--json"]


def random_moments(skill: Path) -> list[tuple[Path, Moment]]:
    rng = random.Random(f"{SEED}-{skill.name}")
    cases = []
    for script in single_process_scripts(skill):
        # Ctrl-C at any moment, imports included; SIGTERM while the checks run (the library is imported)
        cases.append((script, Moment(signal.SIGINT, True, CONTRACT_ANCHOR, rng.uniform(0.0, 8.0))))
        cases.append((script, Moment(signal.SIGTERM, False, "[ok]", rng.uniform(0.0, 2.0))))
    return cases


def outcome_problems(run: SignalledRun, script: str, signum: int) -> list[str]:
    """A run the signal interrupted follows the contract. One it missed, or hit after the summary was written (the
    default handlers are back by then), has its complete, passing summary on stdout."""
    if run.code == 128 + signum:
        return interrupted_problems(run, script, signum)
    if run.code == 0 or (run.code == -signum and run.sent):
        try:
            passed = json.loads(run.stdout)["exit_code"] == 0
        except (ValueError, KeyError):
            passed = False
        return [] if passed else [f"exit {run.code} without a complete passing summary"]
    return [f"exit {run.code}, expected {128 + signum} (or a run that had finished)"]


@pytest.mark.parametrize("skill", [skill_param(skill) for skill in skill_dirs()])
def test_signals_at_random_moments_leave_no_process_and_no_file(skill, tmp_path):
    cases = random_moments(skill)

    def signal_case(numbered):
        number, (script, moment) = numbered
        run = signal_a_run(canonical_command(skill, script), tmp_path / f"case-{number}", moment)
        return run.problems + outcome_problems(run, script.name, moment.signum)

    with ThreadPoolExecutor(PARALLEL_RUNS) as pool:
        results = list(pool.map(signal_case, enumerate(cases)))
    failures = [f"{script.name}: {moment}: {'; '.join(problems)}"
                for (script, moment), problems in zip(cases, results) if problems]
    assert not failures, "\n".join(failures)


# ---------------------------------------------------------------- the contract's promises, on a small script

DEMO = textwrap.dedent(f"""
    import multiprocessing, sys, time
    sys.path.insert(0, {str(REPO / "skill_common")!r})
    from smoke_contract import build_parser, log, require, run_main

    def drill(folder):  # a crash drill's child: writes into the output dir for a while
        for step in range(100):
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"step-{{step}}").write_text("x")
            time.sleep(0.05)

    def body(run):
        mode = run.args.mode
        if mode == "require-composer":
            require("composer", "pip install mosaicml")
        elif mode == "import-composer":
            import composer  # noqa: F401 - a plain import leaves Composer's own signal handler in place
        elif mode == "slow-import":
            sys.path.insert(0, str(run.output_dir))
            (run.output_dir / "slow_module.py").write_text(
                "import sys, time\\nprint('ready', file=sys.stderr, flush=True)\\ntime.sleep(2)\\n"
                "print('import done', file=sys.stderr, flush=True)\\n")
            import slow_module  # noqa: F401
            run.check("imported", True)  # an interrupt point: a signal held during the import is raised here
        elif mode == "child":
            child = multiprocessing.get_context("fork").Process(target=drill, args=(run.output_dir / "drill",))
            child.start()
        log("ready")
        try:
            time.sleep(60)
        finally:
            log(f"finally: {{type(sys.exc_info()[1]).__name__}}, a KeyboardInterrupt: "
                f"{{isinstance(sys.exc_info()[1], KeyboardInterrupt)}}")
        run.check("slept", True)

    def validate(args):
        if args.mode == "slow-setup":
            time.sleep(2)

    parser = build_parser("demo_smoke.py", "demo", "python scripts/demo_smoke.py --json")
    parser.add_argument("--mode", choices=["plain", "require-composer", "import-composer", "slow-import", "slow-setup",
                                           "child"])
    sys.exit(run_main("demo_smoke.py", parser, body, [], validate=validate))
""")


def run_demo(tmp_path: Path, mode: str, moment: Moment) -> SignalledRun:
    script = tmp_path / "demo_smoke.py"
    script.write_text(DEMO)
    run = signal_a_run([sys.executable, str(script), "--mode", mode, "--json"], tmp_path / "run", moment)
    assert not run.problems, f"{mode}, {moment}: {run.problems}\n{run.stderr[-2000:]}"
    assert not interrupted_problems(run, "demo_smoke.py", moment.signum), \
        f"{mode}, {moment}: {interrupted_problems(run, 'demo_smoke.py', moment.signum)}\n{run.stderr[-2000:]}"
    return run


@pytest.mark.composer
@pytest.mark.parametrize(("mode", "signum", "seen"), [
    ("require-composer", signal.SIGINT, "Interrupted"),  # require() takes the signals back from Composer
    ("import-composer", signal.SIGTERM, "SystemExit"),  # Composer's own handler: sys.exit(143), reported the same
], ids=["require-then-SIGINT", "import-then-SIGTERM"])
def test_the_body_sees_the_signal_as_an_exception_after_composer_is_imported(tmp_path, mode, signum, seen):
    run = run_demo(tmp_path, mode, Moment(signum, signum == signal.SIGINT, "ready", 0.1))
    assert f"finally: {seen}" in run.stderr, run.stderr[-2000:]


def test_the_body_sees_the_signal_as_a_keyboard_interrupt(tmp_path):
    run = run_demo(tmp_path, "plain", Moment(signal.SIGTERM, False, "ready", 0.1))
    assert "finally: Interrupted, a KeyboardInterrupt: True" in run.stderr, run.stderr[-2000:]


def test_a_closed_terminal_s_sighup_ends_the_run_like_sigterm(tmp_path):
    """SIGHUP left the temporary output folder behind (the process died by the signal) before the contract held it."""
    run = run_demo(tmp_path, "plain", Moment(signal.SIGHUP, False, "ready", 0.1))
    assert "finally: Interrupted, a KeyboardInterrupt: True" in run.stderr, run.stderr[-2000:]


def test_a_signal_during_an_import_is_raised_once_the_import_is_done(tmp_path):
    """An exception raised inside an import can abort the process (torch's C++ initialisation) or leave a module
    half imported, so the contract holds the signal until the next interrupt point after the import."""
    run = run_demo(tmp_path, "slow-import", Moment(signal.SIGTERM, False, "ready", 0.3))
    assert "import done" in run.stderr and "[ok] imported" not in run.stderr, run.stderr[-2000:]


def test_a_signal_during_the_set_up_stops_the_body_before_it_starts(tmp_path):
    """Arguments, validation, the output folder: a signal there is held, so no half-made folder is left behind."""
    run = run_demo(tmp_path, "slow-setup", Moment(signal.SIGINT, True, CONTRACT_ANCHOR, 0.5))
    assert "ready" not in run.stderr, run.stderr[-2000:]


def test_a_child_process_left_running_is_ended_before_the_output_folder_goes(tmp_path):
    """SIGTERM to the script alone leaves a crash drill's forked child running: it went on writing into the removed
    temporary folder (making it again outside any output folder) while the script waited for it at exit."""
    run = run_demo(tmp_path, "child", Moment(signal.SIGTERM, False, "ready", 0.3))
    assert "finally: Interrupted" in run.stderr, run.stderr[-2000:]


@pytest.mark.parametrize("skill", [skill_param(skill) for skill in skill_dirs()])
def test_each_skills_copy_of_the_contract_ends_a_run_on_sighup(skill, tmp_path):
    """A user runs the copy in the skill's scripts/, not skill_common's: a closed terminal must end the run there too
    (exit 129, one line, the temporary folder gone)."""
    script = tmp_path / "demo_smoke.py"
    script.write_text(DEMO.replace(repr(str(REPO / "skill_common")), repr(str(skill / "scripts"))))
    moment = Moment(signal.SIGHUP, False, "ready", 0.1)
    run = signal_a_run([sys.executable, str(script), "--mode", "plain", "--json"], tmp_path / "run", moment)
    problems = run.problems + interrupted_problems(run, "demo_smoke.py", signal.SIGHUP)
    assert not problems, f"{problems}\n{run.stderr[-2000:]}"


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_after_the_summary_does_not_change_the_outcome(tmp_path, signum):
    """A late Ctrl-C, once the default handlers were back while the process shut down, gave exit 130 after a summary
    saying ok, with no error line. The script signals itself right after run_main returns: the window, made exact."""
    script = tmp_path / "late_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(REPO / "skill_common")!r})
        from smoke_contract import build_parser, run_main

        parser = build_parser("late_smoke.py", "demo", "python scripts/late_smoke.py --json")
        code = run_main("late_smoke.py", parser, lambda run: run.check("ran", True, "done"), [])
        os.kill(os.getpid(), {int(signum)})
        sys.exit(code)
    """))
    result = subprocess.run([sys.executable, str(script), "--json"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=60, env=isolated_env(tmp_path))
    assert result.returncode == 0 and json.loads(result.stdout)["exit_code"] == 0, (result.returncode, result.stderr)
    assert "Traceback" not in result.stderr and ": error: " not in result.stderr, result.stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP], ids=["SIGTERM", "SIGHUP"])
def test_an_import_stuck_in_c_is_ended_by_sigterm_or_sighup(tmp_path, signum):
    """Under `ulimit -v 3500000` numpy's import hung in OpenBLAS (its thread start retrying ENOMEM forever, inside
    dlopen, holding the interpreter) and SIGTERM did nothing: the contract's Python handler never ran, or held the
    signal until an import that never ends was done. Here an import calls libc's sleep through ctypes.PyDLL (which
    keeps the GIL) again and again. During require's import SIGTERM and SIGHUP keep their default action: the
    process dies by the signal, leaving its temporary folder (documented) with the marker naming it."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "stuck_in_c.py").write_text(textwrap.dedent("""
        import ctypes, sys
        print("importing", file=sys.stderr, flush=True)
        libc = ctypes.PyDLL(None)
        while True:  # like OpenBLAS retrying: each return goes straight back into C
            libc.sleep(600)
    """))
    script = tmp_path / "stuck_smoke.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        sys.path[:0] = [{str(REPO / "skill_common")!r}, {str(site)!r}]
        from smoke_contract import build_parser, require, run_main

        parser = build_parser("stuck_smoke.py", "demo", "python scripts/stuck_smoke.py --json")
        sys.exit(run_main("stuck_smoke.py", parser, lambda run: require("stuck_in_c", "pip install stuck"), []))
    """))
    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    process = subprocess.Popen([sys.executable, str(script), "--json"], cwd=tmp_path, text=True,
                               env=isolated_env(tmp_path, {"TMPDIR": str(tmpdir)}), stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert process.stderr.readline().strip() == "importing"
        process.send_signal(signum)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        process.stdout.close()
        process.stderr.close()
    assert process.returncode == -signum, process.returncode
    left = list(tmpdir.glob("smoke-*/.smoke-run"))
    assert len(left) == 1 and left[0].read_text().startswith(f"stuck_smoke.py, pid {process.pid}, "), left
