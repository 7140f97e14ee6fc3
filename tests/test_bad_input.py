"""Property-based bad input (hypothesis): every script, fed random argument lists that each hold at least one hostile
value, ends with a contracted exit code and one error line, prints no traceback, and writes nothing outside its
output directory (the files it was given stay byte-for-byte the same).

Hostile values: negative, zero and huge numbers, non-numbers, unknown choices and devices, unknown flags, a flag
without its value, output dirs that are files, not empty, on a read-only file system, the empty string, a dangling
link, or hold a brace (Composer would expand it), input paths that do not exist, are folders, are empty or hold
garbage; paths have spaces and non-ASCII characters. The options of each script are read from its own parser, so a
new flag is fuzzed without a change here.

The scripts of a skill run in one worker process (support/script_worker.py, harness.ScriptWorker) that calls their
main(argv) once per example, with the offline guard, a fresh HOME and TMPDIR, and the environment restored between
calls: each library is imported once per skill.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from support.harness import SKILLS_DIR, leg_marks, stray_files, tree_state

SCRIPTS = sorted(path for path in SKILLS_DIR.glob("*/scripts/*.py")
                 if path.name != "smoke_contract.py" and not path.name.startswith("_"))  # _*.py: modules, not scripts
CONTRACT_FAILURES = {1, 2, 3, 4}
EXAMPLES = 40
READ_ONLY_FS = Path("/sys")  # read-only even for root, so this holds in containers too

names = st.text(st.sampled_from("aZ09 _-.éü😀漢"), min_size=1, max_size=12).filter(lambda n: n.strip(". ") != "")


@pytest.fixture(scope="module", params=[pytest.param(script, id=f"{script.parent.parent.name}/{script.name}",
                                                     marks=leg_marks(script)) for script in SCRIPTS])
def fuzzed(request, script_worker, tmp_path_factory):
    """The script, its skill's worker, the options its parser declares, and a counter of examples."""
    worker = script_worker(request.param)
    options = [option for option in worker.options(request.param) if option["flags"][0] not in LISTING_FLAGS]
    return SimpleNamespace(script=request.param, worker=worker, options=options, examples=0,
                           tmp=tmp_path_factory.mktemp(f"fuzz-{request.param.stem}"))


# Flags that, like --help, print a listing and exit 0 whatever else is given (trap_check.py --list-rules needs no
# files): beside a hostile value they still succeed, so they are not drawn
LISTING_FLAGS = {"--list-rules"}


@st.composite
def hostile_value(draw, option: dict, sandbox: Path) -> list[str]:
    """One flag with a value the script must refuse."""
    flag, kind = draw(st.sampled_from(option["flags"])), option["kind"]
    if kind in ("count", "seed"):
        value = draw(st.one_of(st.integers(max_value=0 if kind == "count" else -1).map(str),
                               st.integers(min_value=2**32).map(str),
                               st.sampled_from(["1.5", "1e3", "", "ten", "0x10", "--", "nan"])))
    elif kind == "choice":
        unknown = names.filter(lambda text: text not in option["choices"])
        # The worker hides CUDA, so --device gpu must be exit 4 wherever the suite runs.
        value = draw(st.one_of(unknown, st.just("gpu")) if flag == "--device" else unknown)
    elif flag == "--output-dir":
        choice = draw(st.sampled_from(["file", "not empty", "read-only", "under a file", "empty", "dangling link",
                                       "braces"]))
        name = draw(names)
        a_file, full, link = sandbox / f"{name}.txt", sandbox / f"full {name}", sandbox / f"link {name}"
        target = {"file": a_file, "not empty": full, "read-only": READ_ONLY_FS / f"smoke {name}",
                  "under a file": a_file / "out", "empty": "", "dangling link": link,
                  "braces": sandbox / draw(st.sampled_from(["{rank}", "{run_name}", "x{", "}"])) / name}[choice]
        if choice in ("file", "under a file"):
            a_file.write_text("a file, not a folder")
        elif choice == "not empty":
            full.mkdir()
            (full / "keep me.txt").write_text("the user's file")
        elif choice == "dangling link":
            link.symlink_to(sandbox / "gone")
        value = str(target)
    elif kind == "path":  # an input file
        choice = draw(st.sampled_from(["missing", "folder", "empty", "garbage"]))
        target = sandbox / f"in {draw(names)}"
        if choice == "folder":
            target.mkdir(exist_ok=True)
        elif choice in ("empty", "garbage"):
            target.write_bytes(b"" if choice == "empty" else draw(st.binary(min_size=1, max_size=64)))
        value = str(target)
    else:
        return [flag]  # a text option with its value missing at the end of the line
    return [flag, value]


@st.composite
def hostile_argv(draw, options: list[dict], sandbox: Path) -> list[str]:
    """A few valid-looking options around at least one hostile one, in random order. The valid ones never repeat the
    hostile option: a later valid value (`--device gpu --device auto`) would override the hostile one."""
    target = draw(st.one_of(st.none(), st.sampled_from([option for option in options if option["kind"] != "flag"])))
    hostile = draw(names.map(lambda name: [f"--no-such-{name.strip()}"]) if target is None else
                   hostile_value(target, sandbox))
    parts = []
    others = [option for option in options if option is not target]
    for option in draw(st.lists(st.sampled_from(others), max_size=3, unique_by=lambda o: o["flags"][0])):
        flag = option["flags"][0]
        if option["kind"] == "flag":
            parts.append([flag])
        elif option["kind"] == "choice":
            parts.append([flag, draw(st.sampled_from([choice for choice in option["choices"] if choice != "gpu"]))])
        elif option["kind"] == "seed":
            parts.append([flag, str(draw(st.integers(0, 2**32 - 1)))])
        elif option["kind"] == "count":
            parts.append([flag, str(draw(st.integers(1, 3)))])
    if len(hostile) == 1 and not hostile[0].startswith("--no-such-"):
        return [part for part in draw(st.permutations(parts)) for part in part] + hostile  # value missing: last
    return [part for part in draw(st.permutations([*parts, hostile])) for part in part]


def file_hashes(root: Path) -> dict[str, str]:
    return {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in root.rglob("*") if path.is_file()}


@settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data(), json_flag=st.booleans())
def test_hostile_arguments_are_refused_cleanly(fuzzed, data, json_flag):
    fuzzed.examples += 1
    sandbox = fuzzed.tmp / f"example-{fuzzed.examples}"
    (sandbox / "cwd").mkdir(parents=True)
    argv = data.draw(hostile_argv(fuzzed.options, sandbox), label="argv") + (["--json"] if json_flag else [])
    watched = [sandbox, fuzzed.worker.home, fuzzed.worker.tmpdir]
    before, hashes = {p: s for root in watched for p, s in tree_state(root).items()}, file_hashes(sandbox)

    result = fuzzed.worker.run(fuzzed.script, *argv, cwd=sandbox / "cwd")

    code, stderr, script = result.returncode, result.stderr, fuzzed.script.name
    assert code in CONTRACT_FAILURES, f"{script} {argv}: exit {code!r}\n{stderr[-2000:]}"
    assert "Traceback" not in stderr, f"{script} {argv}:\n{stderr[-2000:]}"
    error_lines = [line for line in stderr.splitlines() if f"{script}: error: " in line]
    assert len(error_lines) == 1, f"{script} {argv}:\n{stderr[-2000:]}"
    if "--json" in argv:
        summary = result.json
        assert summary["exit_code"] == code and summary["ok"] is False and summary["error"]
    else:
        assert result.stdout == ""
    after = {p: s for root in watched for p, s in tree_state(root).items()}
    kept = [Path(p) for p in after if p not in before and Path(p).parent == fuzzed.worker.tmpdir and "--keep" in argv]
    assert len(kept) <= 1 and stray_files(before, after, kept[0] if kept else None) == [], \
        f"{script} {argv} wrote files outside a kept temporary output dir"
    assert file_hashes(sandbox) == hashes
    assert result.network_attempts == [], f"{script} {argv}: {result.network_attempts}"


def test_gpu_requested_without_cuda_exits_4(fuzzed):
    """The worker hides CUDA, so this holds on GPU machines too. The trap checker only reads code: for it --device
    names the device the checked code will run on, so it needs none."""
    if fuzzed.script.name == "trap_check.py":
        result = fuzzed.worker.run(fuzzed.script, "--device", "gpu", "--json", str(fuzzed.script), cwd=fuzzed.tmp)
        assert (result.returncode, result.json["device"], result.json["exit_code"]) == (0, "gpu", 0), result.stderr
        return
    result = fuzzed.worker.run(fuzzed.script, "--device", "gpu", "--json", cwd=fuzzed.tmp)
    assert result.returncode == 4, result.stderr[-2000:]
    assert f"{fuzzed.script.name}: error: --device gpu was requested but CUDA is not available" in result.stderr
    assert result.json["exit_code"] == 4
