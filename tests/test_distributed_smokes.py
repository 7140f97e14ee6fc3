"""What both distributed smokes prove, launcher by launcher (each skill's scripts/distributed_smoke.py, run once per
device as the shared canonical run; tests read its checks): every rank ran in one world, the ranks end with the
same weights, the output of every rank is captured, bad arguments are refused before the heavy imports, and the
launch code the two scripts share is the same. What only one skill proves is in tests/test_distributed_<skill>.py."""

import ast

import pytest

from conftest import (DEVICES, SKILLS_DIR, assert_one_line_error, canonical_run, import_script, leg_marks, run_python,
                      smoke_world_size)

LAUNCHERS = {"composer-training": ["composer", "torchrun"], "transformers-training": ["torchrun", "accelerate"]}
SKILLS = [pytest.param(skill, id=skill, marks=leg_marks(SKILLS_DIR / skill)) for skill in LAUNCHERS]
LAUNCHES = [pytest.param(skill, launcher, id=f"{skill}-{launcher}", marks=leg_marks(SKILLS_DIR / skill))
            for skill, launchers in LAUNCHERS.items() for launcher in launchers]
# Functions each script has for its own library; every other function both define must be the same code.
PER_SKILL = {"worker_train", "check_training", "body"}


def smoke(tmp_path_factory, skill: str, device: str):
    return canonical_run(tmp_path_factory, f"{skill}/distributed_smoke.py", device)


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("skill", SKILLS)
def test_every_check_passes_offline(skill, device, tmp_path_factory):
    result = smoke(tmp_path_factory, skill, device)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.json["ok"] is True
    assert result.network_attempts == [], result.network_attempts
    names = [check["name"] for check in result.json["checks"]]
    for launcher in LAUNCHERS[skill]:
        assert f"{launcher}.launch" in names, names


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize(("skill", "launcher"), LAUNCHES)
def test_every_rank_ran_in_one_world(skill, launcher, device, tmp_path_factory):
    result = smoke(tmp_path_factory, skill, device)
    ranks, world = result.check(f"{launcher}.ranks"), result.check(f"{launcher}.world_size")
    assert ranks["ok"] and world["ok"], (ranks, world)
    expected = list(range(smoke_world_size(result)))
    assert ranks["detail"] == f"got {expected}, expected {expected}"
    if device == "cpu":
        assert "[(2, 'gloo')]" in world["detail"]


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
    assert_one_line_error(run_python([str(script), "--launcher", "deepspeed"], tmp_path, timeout=30), 2, "--launcher")
    assert_one_line_error(run_python([str(script), "--timeout", "0"], tmp_path, timeout=30), 2, "--timeout")


def functions(skill: str) -> dict[str, str]:
    source = (SKILLS_DIR / skill / "scripts" / "distributed_smoke.py").read_text()
    return {node.name: ast.get_source_segment(source, node) for node in ast.parse(source).body
            if isinstance(node, ast.FunctionDef)}


def test_the_launch_code_is_the_same_in_both_skills():
    """Each skill folder must work alone, so the scripts carry their launch code twice; a fix goes into both."""
    composer, transformers = functions("composer-training"), functions("transformers-training")
    shared = (composer.keys() & transformers.keys()) - PER_SKILL
    assert {"launch", "first_error", "check_launch"} <= shared, sorted(shared)
    differing = sorted(name for name in shared if composer[name] != transformers[name])
    assert not differing, f"distributed_smoke.py differs between the skills in {differing}: copy the fix across"


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
    line = import_script(SKILLS_DIR / "transformers-training" / "scripts" / "distributed_smoke.py").first_error(
        launched.stderr)
    assert all(words in line for words in named), f"{line}\n--- torchrun's stderr:\n{launched.stderr[-3000:]}"
