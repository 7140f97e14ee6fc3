"""The per-skill facts that scripts/ and tests/ share, read from skills.toml at the repository root.

Skill folders never import this: a skill copied alone must still work, so its scripts keep their own tables and the
suite checks that they agree with skills.toml.
"""

from __future__ import annotations

import dataclasses
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "skills.toml"


@dataclasses.dataclass(frozen=True)
class Leg:
    name: str
    constraints: Path
    venv: Path


@dataclasses.dataclass(frozen=True)
class Skill:
    name: str
    packages: list[str]
    legs: list[str]
    extra: str
    baseline_import: str
    marker: str | None = None
    launchers: list[str] = dataclasses.field(default_factory=list)
    watch: list[str] = dataclasses.field(default_factory=list)


def read_manifest(path: Path) -> tuple[str, dict[str, Leg], dict[str, Skill]]:
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    legs = {name: Leg(name, path.parent / entry["constraints"], path.parent / entry["venv"])
            for name, entry in data["legs"].items()}
    skills = {}
    for name, entry in data["skills"].items():
        try:
            skill = Skill(name, **{key.replace("-", "_"): value for key, value in entry.items()})
        except TypeError as exc:  # a missing or misspelt key
            raise ValueError(f"{path.name} [skills.{name}]: {exc}") from None
        if set(skill.legs) - set(legs):
            raise ValueError(f"{path.name} [skills.{name}]: unknown legs {sorted(set(skill.legs) - set(legs))}")
        if set(skill.legs) != set(legs) and not skill.marker:
            # without one, a leg whose venv lacks this skill's stack would collect its tests and fail them
            raise ValueError(f"{path.name} [skills.{name}]: not tested in every leg, so it needs a marker")
        skills[name] = skill
    return data["test-extra"], legs, skills


TEST_EXTRA, LEGS, SKILLS = read_manifest(MANIFEST)


def skills_in(leg: str) -> list[Skill]:
    return [skill for skill in SKILLS.values() if leg in skill.legs]


def install_extras(leg: str) -> list[str]:
    """The pyproject extras a leg's venv installs: its skills' (in manifest order, once each), then the test extra."""
    return list(dict.fromkeys([skill.extra for skill in skills_in(leg)] + [TEST_EXTRA]))


def deselected(leg: str) -> str:
    """The pytest -m expression that keeps out the tests of the skills this leg's venv lacks ("" when none)."""
    return " and ".join(f"not {skill.marker}" for skill in SKILLS.values() if leg not in skill.legs)


def pins(leg: str) -> dict[str, str]:
    """name -> version from the leg's constraint file (name==version lines; names lower-case, _ as -)."""
    found = {}
    for line in LEGS[leg].constraints.read_text().splitlines():
        match = re.match(r"^([A-Za-z0-9_.-]+)==([^\s;]+)", line)
        if match:
            found[match[1].lower().replace("_", "-")] = match[2]
    return found
