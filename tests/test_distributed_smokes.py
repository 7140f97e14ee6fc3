"""What both distributed smokes prove, launcher by launcher (each skill's scripts/distributed_smoke.py, run once per
device as the shared canonical run; tests read its checks): every rank ran in one world, the ranks end with the
same weights, the output of every rank is captured, and bad arguments are refused before the heavy imports (the
launch code both scripts use is skill_common/_distributed_launch.py). With launches of their own: Ctrl-C, SIGTERM
and --timeout leave no process of a launch behind, --worker runs nowhere but in a launch, and (seen with strace) no
process of a launch, native code included, sends anything off the machine. What only one skill proves is in
tests/test_distributed_<skill>.py."""

import ipaddress
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support import manifest
from support.checks import assert_equal_check, same_value
from support.harness import (DEVICES, SKILLS_DIR, ScriptResult, assert_one_line_error, import_script, isolated_env,
                             leg_marks, live_processes, run_command, run_python, tree_state)
from support.shared_runs import canonical_run, smoke_world_size

# Each skill with a distributed smoke, and the launchers that smoke runs under.
LAUNCHERS = {name: skill.launchers for name, skill in manifest.SKILLS.items() if skill.launchers}
SKILLS = [pytest.param(skill, id=skill, marks=leg_marks(SKILLS_DIR / skill)) for skill in LAUNCHERS]
LAUNCHES = [pytest.param(skill, launcher, id=f"{skill}-{launcher}", marks=leg_marks(SKILLS_DIR / skill))
            for skill, launchers in LAUNCHERS.items() for launcher in launchers]


# The checks of one launch, in order, per skill (prefixed by the launcher's name in the summary).
LAUNCH_CHECKS = {
    "composer-training": ["launch", "ranks", "world_size", "global_samples", "sampler_shards", "same_weights",
                          "checkpoint_rank0_only", "output_every_rank"],
    "transformers-training": ["launch", "ranks", "world_size", "global_samples", "same_weights",
                              "checkpoint_written_once", "loss_scaled_by_ranks_as_shipped",
                              "loss_fixed_by_accepts_loss_kwargs_false", "output_every_rank"],
}


def smoke(tmp_path_factory, skill: str, device: str):
    return canonical_run(tmp_path_factory, f"{skill}/distributed_smoke.py", device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("skill", SKILLS)
def test_every_launcher_runs_exactly_its_checks_and_passes(skill, device, tmp_path_factory):
    """(Offline: tests/test_confinement.py asserts it of this very run.)"""
    result = smoke(tmp_path_factory, skill, device)
    assert result.returncode == 0, result.stderr[-3000:]
    assert [check["name"] for check in result.json["checks"]] == [
        f"{launcher}.{name}" for launcher in LAUNCHERS[skill] for name in LAUNCH_CHECKS[skill]]


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("skill", "launcher"), LAUNCHES)
def test_every_rank_ran_in_one_world(skill, launcher, device, tmp_path_factory):
    result = smoke(tmp_path_factory, skill, device)
    ranks, world = result.check(f"{launcher}.ranks"), result.check(f"{launcher}.world_size")
    assert world["ok"], world
    expected = list(range(smoke_world_size(result)))
    assert_equal_check(ranks, expected)
    if device == "cpu":
        assert same_value(world["actual"], [[2, "gloo"]]), world


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("skill", "launcher"), LAUNCHES)
def test_ranks_end_with_identical_trained_weights(skill, launcher, device, tmp_path_factory):
    check = smoke(tmp_path_factory, skill, device).check(f"{launcher}.same_weights")
    assert check["ok"], check


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("skill", "launcher"), LAUNCHES)
def test_output_of_every_rank_is_captured(skill, launcher, device, tmp_path_factory):
    check = smoke(tmp_path_factory, skill, device).check(f"{launcher}.output_every_rank")
    assert check["ok"], check


@pytest.mark.parametrize("skill", SKILLS)
def test_bad_launcher_is_a_usage_error_before_heavy_imports(skill, tmp_path):
    script = SKILLS_DIR / skill / "scripts" / "distributed_smoke.py"
    for flag, value in (("--launcher", "deepspeed"), ("--timeout", "0")):
        result = run_python([str(script), flag, value], tmp_path, timeout=30)
        assert_one_line_error(result, 2, flag)
        assert result.stray_files == [], result.stray_files


RANK_FAILS = """import faulthandler, os, sys
faulthandler.enable()  # what Python prints when the process aborts, as for a C++ terminate in a library
if os.environ["RANK"] == "0":
    os.abort() if sys.argv[1] == "abort" else {}["missing key"]
"""


@pytest.mark.parametrize(("how", "named"), [("abort", ["Fatal Python error: Aborted", "exitcode  : -6"]),
                                            ("raise", ["KeyError: 'missing key'"])])
def test_a_failed_launch_names_what_the_rank_printed(how, named, tmp_path):
    """A real torchrun launch whose rank 0 dies: the smokes' one-line error carries the rank's own words."""
    (tmp_path / "fails.py").write_text(RANK_FAILS)
    launched = run_python(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "fails.py", how],
                          tmp_path, timeout=120)
    assert launched.returncode != 0 and launched.network_attempts == []
    for skill in LAUNCHERS:  # each skill's own copy of the launch code
        line = import_script(SKILLS_DIR / skill / "scripts" / "_distributed_launch.py").first_error(launched.stderr)
        assert all(words in line for words in named), \
            f"{skill}: {line}\n--- torchrun's stderr:\n{launched.stderr[-3000:]}"


# ---------------------------------------------------------------- stopping a launch, the internal --worker flag

def script_of(skill: str) -> Path:
    return SKILLS_DIR / skill / "scripts" / "distributed_smoke.py"


@pytest.mark.parametrize("skill", SKILLS)
def test_worker_flag_outside_a_launch_is_a_usage_error_that_overwrites_nothing(skill, tmp_path):
    yours = tmp_path / "yours"
    yours.mkdir()
    (yours / "rank0.json").write_text("a user's file")
    for argv, env in ((["--worker", "--output-dir", str(yours)], {}),
                      (["--worker"], {}),
                      # a token in the environment is not enough: the launch also writes it into the worker's folder
                      (["--worker", "--output-dir", str(yours)], {"DISTRIBUTED_SMOKE_LAUNCH_TOKEN": "0" * 32})):
        result = run_python([str(script_of(skill)), *argv], tmp_path, env=env, timeout=60)
        assert_one_line_error(result, 2, "--worker is internal")
        assert result.stray_files == [], result.stray_files
    assert [path.name for path in yours.iterdir()] == ["rank0.json"]
    assert (yours / "rank0.json").read_text() == "a user's file"


def assert_launch_stopped(text: str, output_dir: Path) -> None:
    """No process of the launch is left, and none writes into ``output_dir`` after the script exited."""
    left = [command.replace(b"\0", b" ")[:200] for command in live_processes(text).values()]
    listing = tree_state(output_dir)
    time.sleep(3)
    try:
        assert not left, f"still running after the script exited: {left}"
        assert tree_state(output_dir) == listing, "files were written into the output dir after the script exited"
    finally:
        for pid in live_processes(text):  # a failed run's leftovers must not outlive the test
            os.kill(pid, signal.SIGKILL)


needs_proc = pytest.mark.skipif(not Path("/proc/self/environ").exists(), reason="finding a launch's processes reads "
                                "Linux's /proc, which this system does not have")
SIGNALLED = [pytest.param("composer-training", "composer", signal.SIGINT, id="composer-Ctrl-C",
                          marks=pytest.mark.composer),
             pytest.param("transformers-training", "accelerate", signal.SIGTERM, id="accelerate-SIGTERM")]


@needs_proc
@pytest.mark.parametrize(("skill", "launcher", "signum"), SIGNALLED)
def test_a_signal_stops_the_launcher_and_every_rank_before_the_script_exits(skill, launcher, signum, tmp_path):
    output = tmp_path / "out"
    (tmp_path / "home").mkdir()
    env = isolated_env(tmp_path, {"HOME": str(tmp_path / "home")})
    smoke = subprocess.Popen([sys.executable, str(script_of(skill)), "--launcher", launcher, "--device", "cpu",
                              "--output-dir", str(output), "--json"], cwd=tmp_path, env=env, text=True,
                             stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 180
        while sum(b"--worker\0" in cmd for cmd in live_processes(str(output)).values()) < 2:
            assert smoke.poll() is None and time.monotonic() < deadline, "the two ranks never started"
            time.sleep(0.2)
        smoke.send_signal(signum)  # to the script alone: the launch runs in a session of its own
        stdout, stderr = smoke.communicate(timeout=60)
    finally:
        if smoke.poll() is None:
            smoke.kill()
    assert_launch_stopped(str(output), output)
    result = ScriptResult(smoke.returncode, stdout, stderr, [])
    assert_one_line_error(result, 128 + signum, f"interrupted by {signal.Signals(signum).name}")
    assert result.json["exit_code"] == 128 + signum


@needs_proc
@pytest.mark.parametrize("skill", SKILLS)
def test_a_launch_past_its_timeout_is_stopped_and_the_logs_the_error_names_are_kept(skill, tmp_path):
    result = run_python([str(script_of(skill)), "--launcher", "torchrun", "--device", "cpu",
                         "--timeout", "3", "--json"], tmp_path)
    assert_launch_stopped(str(tmp_path), tmp_path)
    assert_one_line_error(result, 1, "torchrun: launch did not finish within --timeout 3s")
    named = re.search(r"kept in (\S+)$", result.json["error"])
    # the output dir was temporary: the JSON names it because it stays
    assert named and Path(named.group(1)) == Path(result.json["output_dir"]) / "torchrun", result.json
    assert (Path(named.group(1)) / "launcher.stderr.txt").is_file()
    assert result.stray_files == [], result.stray_files


# ---------------------------------------------------------------- what native code sends (c10d, gloo: below the guard)

ADDRESS = re.compile(r'inet_addr\("([^"]+)"\)|inet_pton\(AF_INET6, "([^"]+)"')


def off_machine(calls: list[str]) -> list[str]:
    """The traced socket calls that name an address other than loopback (or the unspecified one) as destination."""
    found = []
    for call in calls:
        for match in ADDRESS.finditer(call):
            address = ipaddress.ip_address(match.group(1) or match.group(2))
            mapped = getattr(address, "ipv4_mapped", None) or address
            if not (mapped.is_loopback or mapped.is_unspecified):
                found.append(call[:300])
    return found


def strace_missing() -> str | None:
    """Why strace cannot trace here, or None."""
    if shutil.which("strace") is None:
        return "strace is not installed (apt-get install strace): the C++ side's network calls cannot be seen"
    probe = subprocess.run(["strace", "-f", "-qq", "-e", "trace=none", "true"], capture_output=True, text=True)
    return f"strace cannot trace processes here: {probe.stderr.strip()[:200]}" if probe.returncode else None


# The composer launcher, and accelerate, which runs torchrun's agent in its own process: every launcher once.
TRACED = [pytest.param("composer-training", "composer", id="composer", marks=pytest.mark.composer),
          pytest.param("transformers-training", "accelerate", id="accelerate")]


@pytest.mark.parametrize(("skill", "launcher"), TRACED)
def test_no_process_of_a_launch_sends_anything_off_the_machine(skill, launcher, tmp_path):
    """The offline guard sees Python's sockets only; torch's C++ store asked DNS for the name of 127.0.0.1 on every
    connection. strace sees every process of the launch (launcher, ranks, the C++ side) at the system-call level."""
    missing = strace_missing()
    if missing:
        pytest.skip(missing)
    trace = tmp_path / "network-calls.txt"  # outside the run's folder, where it would count as a stray file
    traced = ["strace", "--seccomp-bpf", "-f", "-qq", "-e", "signal=none", "-o", str(trace),
              "-e", "trace=connect,sendto,sendmsg,sendmmsg"]
    result = run_command([*traced, sys.executable, str(script_of(skill)), "--launcher", launcher, "--device", "cpu",
                          "--json"], tmp_path / "run", env={"RES_OPTIONS": ""})  # the script must see to it alone
    assert not result.stray_files and result.network_attempts == [], (result.stray_files, result.network_attempts)
    # Not asserted: that the launch passed (the shared canonical runs prove it). Under ptrace a rank crashes now and
    # then in native code as it finishes (SIGSEGV, C++ terminate; seen with and without this script's fixes); what
    # the launch sent until then, the rendezvous included, is in the trace.
    calls = trace.read_text().splitlines()
    assert any("connect(" in call and "127.0.0.1" in call for call in calls), (
        f"the trace shows no connection to the rendezvous on 127.0.0.1; the script said: {result.stderr[-2000:]}")
    assert off_machine(calls) == []
