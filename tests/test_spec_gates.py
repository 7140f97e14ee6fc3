"""Spec gates over every skill folder: the Agent Skills spec, budgets, links, and named scripts."""

from __future__ import annotations

import ast
import math
import re
from pathlib import Path

import pytest
import skills_ref

from support.docs import markdown_files, named_scripts, relative_links
from support.harness import REPO, SKILLS_DIR, skill_dirs

ALLOWED_FIELDS = {"name", "description", "license", "compatibility", "metadata", "allowed-tools"}
MAX_DESCRIPTION = 1024
MAX_BODY_LINES = 500
MAX_BODY_TOKENS = 5000

# Skill gates are pure file checks, so every skill is checked in both legs.
SKILLS = [pytest.param(skill, id=skill.name) for skill in skill_dirs()]


def estimate_tokens(text: str) -> int:
    """A deliberately high token estimate: the larger of characters/4 and words*4/3.

    Common tokenizers average about 4 characters or 0.75 words per token on English prose; code and paths run
    shorter, so taking the larger of the two keeps the budget conservative without a tokenizer dependency.
    """
    return max(math.ceil(len(text) / 4), math.ceil(len(text.split()) * 4 / 3))


def split_skill_md(path: Path) -> tuple[str, str]:
    text = path.read_text(encoding="utf-8")
    match = re.match(r"^---\n(.*?)\n---\n(.*)$", text, flags=re.S)
    assert match, f"{path}: no frontmatter block"
    return match[1], match[2]


@pytest.mark.parametrize("skill", SKILLS)
def test_skills_ref_validate_passes(skill):
    assert skills_ref.validate(skill) == []


@pytest.mark.parametrize("skill", SKILLS)
def test_frontmatter_fields(skill):
    properties = skills_ref.read_properties(skill)
    frontmatter, _ = split_skill_md(skill / "SKILL.md")
    keys = set(re.findall(r"^([A-Za-z][\w-]*):", frontmatter, flags=re.M))
    assert keys <= ALLOWED_FIELDS, f"fields outside the spec: {sorted(keys - ALLOWED_FIELDS)}"
    assert properties.name == skill.name
    assert properties.license
    assert 0 < len(properties.description) <= MAX_DESCRIPTION
    assert re.search(r"\bUse (it |this skill )?when\b", properties.description), \
        "the description must say when to use the skill ('Use when ...')"
    metadata = properties.metadata or {}
    assert metadata.get("disco-role") == "operating"
    assert all(isinstance(value, str) for value in metadata.values())
    assert re.search(r"^metadata:\n(  [\w-]+: .+\n)+", frontmatter + "\n", flags=re.M), "metadata must be in block style"


@pytest.mark.parametrize("skill", SKILLS)
def test_body_budget(skill):
    _, body = split_skill_md(skill / "SKILL.md")
    assert len(body.splitlines()) <= MAX_BODY_LINES
    assert estimate_tokens(body) <= MAX_BODY_TOKENS, f"about {estimate_tokens(body)} tokens"


@pytest.mark.parametrize("doc", [pytest.param(path, id=str(path.relative_to(REPO))) for path in markdown_files()])
def test_relative_links_resolve(doc):
    broken = [target for target in relative_links(doc) if not (doc.parent / target).exists()]
    assert not broken, f"{doc.relative_to(REPO)}: broken links {broken}"


def with_imported_modules(linked: set[Path]) -> set[Path]:
    """``linked`` and every _<name>.py module a linked script imports from its own folder, directly or through
    another such module: a module is read through the script that imports it, never run on its own."""
    found, queue = set(linked), [path for path in linked if path.suffix == ".py"]
    while queue:
        script = queue.pop()
        for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.module and not node.level else []
            for module in (script.parent / f"{name}.py" for name in names if name.startswith("_")):
                if module.is_file() and module.resolve() not in found:
                    found.add(module.resolve())
                    queue.append(module.resolve())
    return found


@pytest.mark.parametrize("skill", SKILLS)
def test_every_reference_and_script_is_linked_from_skill_md(skill):
    """Every reference and script is linked from SKILL.md; a _<name>.py module, from SKILL.md or through the linked
    script that imports it (the trap checker's many small modules would not fit the body's budget as links)."""
    linked = with_imported_modules({(skill / target).resolve() for target in relative_links(skill / "SKILL.md")})
    files = [path for folder in ("references", "scripts") for path in (skill / folder).glob("*")
             if path.is_file() and path.suffix in {".md", ".py"}]
    assert files, f"{skill.name} has no references or scripts"
    unlinked = [str(path.relative_to(skill)) for path in files if path.resolve() not in linked]
    assert not unlinked, f"{skill.name}/SKILL.md does not link {unlinked}"
    assert all(target.count("/") <= 1 for target in relative_links(skill / "SKILL.md") if not target.startswith("..")), \
        "references must be one level deep"


@pytest.mark.parametrize("doc", [pytest.param(path, id=str(path.relative_to(REPO))) for path in markdown_files()])
def test_named_scripts_exist(doc):
    skill_root = next((parent for parent in doc.parents if parent.parent == SKILLS_DIR), None)
    roots = [root for root in (skill_root, REPO) if root is not None]
    missing = [name for name in named_scripts(doc) if not any((root / name).is_file() for root in roots)]
    assert not missing, f"{doc.relative_to(REPO)} names scripts that do not exist: {missing}"


def test_token_estimate_is_conservative():
    assert estimate_tokens("word " * 300) == 400
    assert estimate_tokens("x" * 4000) == 1000
