"""The code every skill carries has one source: skill_common/ at the bundle root. `make sync` copies each of its files
into every skill's scripts/, so a skill folder copied alone still works. Every copy equals its source byte for byte
(a script copy also carries the PEP 723 header the sync gives it); no skill keeps a near-copy of shared code, or of
another skill's code, outside those copies; and a script imports modules, never another script."""

import ast
import difflib
import re
from pathlib import Path

import pytest

from support.harness import REPO, SKILLS_DIR

SOURCE = REPO / "skill_common"
SHARED = sorted(path.name for path in SOURCE.glob("*.py"))
SCRIPTS_DIRS = sorted(SKILLS_DIR.glob("*/scripts"))
# The header scripts/sync_inline_metadata.py writes into a script copy, after its #! line.
HEADER = re.compile(rb"(?m)^# /// script\n(?:^#(?: .*)?\n)*?^# ///\n")
# A function or class this long and this alike in two places is one piece of code kept twice.
NEAR_COPY_LINES, NEAR_COPY_RATIO = 6, 0.8


def is_module(path: Path) -> bool:
    """A file the scripts import and nobody runs: the contract and every _<name>.py."""
    return path.name == "smoke_contract.py" or path.name.startswith("_")


def own_files() -> list[Path]:
    """Every skill's Python files that are not copies from skill_common/."""
    return sorted(path for folder in SCRIPTS_DIRS for path in folder.glob("*.py") if path.name not in SHARED)


def top_level_code(path: Path) -> dict[str, list[str]]:
    """name -> source lines of each top-level function and class of ``path``, stripped."""
    text = path.read_text(encoding="utf-8")
    return {node.name: [line.strip() for line in ast.get_source_segment(text, node).splitlines() if line.strip()]
            for node in ast.parse(text).body if isinstance(node, (ast.FunctionDef, ast.ClassDef))}


def test_the_source_holds_the_shared_modules():
    assert {"smoke_contract.py", "trap_check.py", "_trap_rules.py", "_trap_families.py", "_trap_report.py",
            "_trap_launch.py", "_trap_module.py", "_trap_values.py", "_trap_hf_arguments.py", "_trap_hf_removed.py",
            "_trap_hf_imports.py", "_trap_hf_best_model.py", "_trap_hf_distributed.py", "_trap_hf_tasks.py",
            "_trap_hf_offline.py", "_trap_hf_resume.py", "_trap_composer.py", "_trap_fix.py", "_trap_fix_renames.py",
            "_trap_fix_shell.py", "_env_doctor.py", "_distributed_launch.py", "_tensors.py"} <= set(SHARED), SHARED
    assert not [name for name in SHARED if HEADER.search((SOURCE / name).read_bytes())], \
        "a PEP 723 header is per skill: the sync writes it into the copies, never into skill_common/"


@pytest.mark.parametrize("name", SHARED)
@pytest.mark.parametrize("scripts_dir", SCRIPTS_DIRS, ids=lambda path: path.parent.name)
def test_each_skill_carries_an_identical_copy(scripts_dir, name):
    copy = scripts_dir / name
    assert copy.is_file(), f"{copy} is missing: run make sync"
    assert HEADER.sub(b"", copy.read_bytes(), count=1) == (SOURCE / name).read_bytes(), \
        f"{copy} differs from skill_common/{name}: edit skill_common/{name}, then run make sync"


def test_no_near_copy_is_left_outside_the_shared_modules():
    """What skill_common/ holds is not kept again in a skill, and no code is kept in two skills: a helper added to
    one skill's script, then copied into the other's, is found here."""
    places = {f"skill_common/{name}": top_level_code(SOURCE / name) for name in SHARED}
    places |= {str(path.relative_to(SKILLS_DIR)): top_level_code(path) for path in own_files()}
    units = [(f"{place}:{name}", lines) for place, code in places.items() for name, lines in code.items()
             if len(lines) >= NEAR_COPY_LINES]
    near = []
    for index, (where, lines) in enumerate(units):
        for other, other_lines in units[index + 1:]:
            if where.split(":")[0] == other.split(":")[0]:
                continue  # one file's functions may look alike
            ratio = difflib.SequenceMatcher(None, lines, other_lines, autojunk=False).ratio()
            if ratio >= NEAR_COPY_RATIO:
                near.append(f"{where} ~ {other} ({ratio:.0%} alike)")
    assert not near, f"code kept twice: move it into skill_common/ and run make sync: {near}"


def test_a_module_in_several_skills_comes_from_the_source():
    """Tests import every skill's scripts into one process, where a module is known by its name: two different
    modules of one name would stand in for each other. The shared ones are copies of one file."""
    found: dict[str, list[str]] = {}
    for path in own_files():
        if is_module(path):
            found.setdefault(path.name, []).append(path.parts[-3])
    assert not {name: skills for name, skills in found.items() if len(skills) > 1}, \
        "a module in several skills must be one file in skill_common/ (make sync copies it)"


@pytest.mark.parametrize("scripts_dir", SCRIPTS_DIRS, ids=lambda path: path.parent.name)
def test_scripts_import_modules_not_other_scripts(scripts_dir):
    """A script that imports another script runs that script's top level and ties the two together; code two scripts
    need lives in a module (_<name>.py in the skill, or in skill_common/ when every skill needs it)."""
    siblings = {path.stem: path for path in scripts_dir.glob("*.py")}
    wrong = []
    for path in sorted(scripts_dir.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [node.module] if isinstance(node, ast.ImportFrom) and node.module else \
                [alias.name for alias in node.names] if isinstance(node, ast.Import) else []
            wrong += [f"{path.name} imports {name}" for name in names
                      if name in siblings and not is_module(siblings[name])]
    assert not wrong, wrong
