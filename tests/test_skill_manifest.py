"""skills.toml, the one table of per-skill facts (read through scripts/skill_manifest.py): it has an entry for every
skill folder and for nothing else, pyproject.toml and the Makefile agree with it, and a new skill needs only its
entry and its folder."""

import re
import shutil

import pytest
import tomllib

from support.harness import REPO, run_python, skill_dirs
from support.manifest import LEGS, SKILLS, TEST_EXTRA, deselected, install_extras, pins

import skill_manifest  # scripts/ is on sys.path: support.manifest puts it there

PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text())
NEW_SKILL_ENTRY = """
[skills.peft-training]
packages = ["transformers", "torch"]
legs = ["default", "latest"]
extra = "transformers"
baseline-import = "import transformers"
"""


def distribution(requirement: str) -> str:
    return re.match(r"[A-Za-z0-9_.-]+", requirement)[0]


def marker_expression(pytest_command: str) -> str:
    match = re.search(r'-m "([^"]*)"', pytest_command)
    return match[1] if match else ""


def test_every_skill_folder_has_an_entry_and_every_entry_a_folder():
    assert set(SKILLS) == {path.name for path in skill_dirs()}, "skills.toml: one [skills.<folder>] per skill folder"


def test_extras_and_markers_are_pyprojects():
    extras = PYPROJECT["project"]["optional-dependencies"]
    markers = {line.split(":")[0] for line in PYPROJECT["tool"]["pytest"]["ini_options"]["markers"]}
    assert TEST_EXTRA in extras
    for skill in SKILLS.values():
        ranged = {distribution(requirement) for requirement in extras[skill.extra]}
        assert set(skill.packages) <= ranged, f"{skill.name}: its extra {skill.extra!r} has no range for some packages"
        assert skill.marker in markers | {None}, f"{skill.name}: register the {skill.marker} marker in pyproject.toml"


def test_the_makefile_installs_and_deselects_what_the_manifest_says():
    makefile = (REPO / "Makefile").read_text()
    for leg in LEGS.values():
        constraints = leg.constraints.relative_to(REPO)
        installs = re.findall(rf"-c {re.escape(str(constraints))} '\.\[([^\]]*)\]'", makefile)
        assert installs == [",".join(install_extras(leg.name))], f"the {leg.name} leg's pip line in the Makefile"
        suites = re.findall(rf"^\t{re.escape(leg.venv.name)}/bin/python -m pytest .*$", makefile, flags=re.M)
        assert {marker_expression(suite) for suite in suites} == {deselected(leg.name)}, suites


def test_a_new_skill_needs_only_its_entry_and_its_folder(tmp_path):
    """The bundle tools pick a third skill up from skills.toml: here sync_inline_metadata.py writes its headers."""
    bundle = tmp_path / "bundle"
    for folder in ("scripts", "skills", "skill_common", "constraints"):
        shutil.copytree(REPO / folder, bundle / folder, ignore=shutil.ignore_patterns("__pycache__"))
    (bundle / "skills.toml").write_text((REPO / "skills.toml").read_text() + NEW_SKILL_ENTRY)
    shutil.copytree(bundle / "skills" / "transformers-training", bundle / "skills" / "peft-training")
    sync = str(bundle / "scripts" / "sync_inline_metadata.py")

    stale = run_python([sync, "--check"], tmp_path / "check")
    assert stale.returncode == 1 and stale.stderr_lines, stale.stderr
    assert all(line.startswith("stale: skills/peft-training/") for line in stale.stderr_lines), stale.stderr
    assert run_python([sync], tmp_path / "sync").returncode == 0
    assert run_python([sync, "--check"], tmp_path / "recheck").returncode == 0
    header = (bundle / "skills" / "peft-training" / "scripts" / "train_smoke.py").read_text()
    assert '#     "transformers==' in header and '"accelerate==' not in header


@pytest.mark.parametrize("fault", ["folder without an entry", "package without a pin"])
def test_a_sync_that_lacks_a_fact_names_it_in_one_line_and_changes_nothing(tmp_path, fault):
    bundle = tmp_path / "bundle"
    for folder in ("scripts", "skills", "skill_common", "constraints"):
        shutil.copytree(REPO / folder, bundle / folder, ignore=shutil.ignore_patterns("__pycache__"))
    entry = NEW_SKILL_ENTRY.replace('["transformers",', '["peft",') if fault == "package without a pin" else ""
    (bundle / "skills.toml").write_text((REPO / "skills.toml").read_text() + entry)
    (bundle / "skills" / "peft-training" / "scripts").mkdir(parents=True)
    (bundle / "skills" / "peft-training" / "scripts" / "train_smoke.py").write_text("print('x')\n")
    (bundle / "skill_common" / "trap_check.py").write_text("# changed\n")  # a sync would copy this first
    before = {path: path.read_bytes() for path in (bundle / "skills").rglob("*.py")}
    result = run_python([str(bundle / "scripts" / "sync_inline_metadata.py")], tmp_path / "sync")
    assert result.returncode == 2 and len(result.stderr_lines) == 1, result.stderr
    assert ("has no [skills.peft-training] entry" if entry == "" else "peft (skills/peft-training) not pinned") \
        in result.stderr
    assert {path: path.read_bytes() for path in (bundle / "skills").rglob("*.py")} == before


def test_a_skill_outside_a_leg_needs_a_marker(tmp_path):
    """Without one, the leg whose venv lacks the skill's stack would collect its tests and fail them."""
    manifest_file = tmp_path / "skills.toml"
    manifest_file.write_text((REPO / "skills.toml").read_text()
                             + NEW_SKILL_ENTRY.replace('legs = ["default", "latest"]', 'legs = ["default"]'))
    with pytest.raises(ValueError, match=r"\[skills.peft-training\]: not tested in every leg, so it needs a marker"):
        skill_manifest.read_manifest(manifest_file)
    manifest_file.write_text((REPO / "skills.toml").read_text() + NEW_SKILL_ENTRY)
    assert "peft-training" in skill_manifest.read_manifest(manifest_file)[2]


@pytest.mark.parametrize("leg", sorted(LEGS))
def test_pins_read_names_as_pip_does(leg):
    """pip freeze writes Jinja2 and typing_extensions; the tools look packages up as jinja2 and typing-extensions."""
    lines = [line for line in LEGS[leg].constraints.read_text().splitlines() if "==" in line]
    found = pins(leg)
    assert len(found) == len(lines) and all(name == name.lower() and "_" not in name for name in found), found


def test_a_leg_lacking_two_skills_deselects_both(tmp_path, monkeypatch):
    """With two marked skills outside the latest leg, its suite keeps out the tests of each: "not a and not b"."""
    manifest_file = tmp_path / "skills.toml"
    manifest_file.write_text((REPO / "skills.toml").read_text() + NEW_SKILL_ENTRY.replace(
        'legs = ["default", "latest"]', 'legs = ["default"]\nmarker = "peft"'))
    monkeypatch.setattr(skill_manifest, "SKILLS", skill_manifest.read_manifest(manifest_file)[2])
    assert skill_manifest.deselected("latest") == "not composer and not peft"
    assert skill_manifest.deselected("default") == ""
