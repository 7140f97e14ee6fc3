"""PEP 723 headers: every skill script declares its dependencies with the tested pins, so `uv run` works."""

import re
import shutil
import tomllib

import pytest

from support.harness import REPO, run_python
from support.manifest import SKILLS, pins
from sync_inline_metadata import skill_scripts  # scripts/ is on sys.path: support.manifest puts it there

SCRIPTS = skill_scripts()  # every skill script but env_check.py and the contract module
# The regular expression PEP 723 gives for reading the block.
PEP_723 = re.compile(r"(?m)^# /// (?P<type>[a-zA-Z0-9-]+)$\s(?P<content>(^#(| .*)$\s)+)^# ///$")


def inline_metadata(script):
    blocks = [match for match in PEP_723.finditer(script.read_text()) if match["type"] == "script"]
    assert len(blocks) == 1, f"{script}: expected one '# /// script' block, found {len(blocks)}"
    content = "".join(line[2:] if line.startswith("# ") else line[1:]
                      for line in blocks[0]["content"].splitlines(keepends=True))
    return tomllib.loads(content)


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda path: f"{path.parts[-3]}/{path.name}")
def test_header_pins_the_tested_versions(script):
    metadata = inline_metadata(script)
    assert metadata["requires-python"] == ">=3.11"
    declared = dict(dependency.split("==") for dependency in metadata["dependencies"])
    assert set(declared) == set(SKILLS[script.parts[-3]].packages)
    default = pins("default")
    assert declared == {name: default[name] for name in declared}


def test_sync_tool_reports_nothing_stale(tmp_path):
    result = run_python([str(REPO / "scripts" / "sync_inline_metadata.py"), "--check"], tmp_path)
    assert result.returncode == 0, result.stderr


def test_check_changes_nothing_and_stays_stale(tmp_path):
    """--check only reports: a stale copy is still stale, byte for byte, after one --check and the next."""
    bundle = tmp_path / "bundle"
    for folder in ("scripts", "skills", "skill_common", "constraints"):
        shutil.copytree(REPO / folder, bundle / folder, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "skills.toml", bundle)
    skill = next(iter(SKILLS))
    stale_copy = bundle / "skills" / skill / "scripts" / "smoke_contract.py"
    stale_copy.write_text(stale_copy.read_text() + "# drifted\n")
    before = {path: path.read_bytes() for path in bundle.rglob("*") if path.is_file()}
    for attempt in ("first", "second"):
        result = run_python([str(bundle / "scripts" / "sync_inline_metadata.py"), "--check"], tmp_path / attempt)
        assert result.returncode == 1 and result.stderr_lines == [
            f"stale: skills/{skill}/scripts/smoke_contract.py"], result.stderr
        assert {path: path.read_bytes() for path in bundle.rglob("*") if path.is_file()} == before
