"""One source of truth for tested versions: the constraint files. The compatibility matrix and every
SKILL.md's tested-* metadata must agree with them."""

import pytest
import skills_ref

from support.harness import REPO, skill_dirs
from support.manifest import SKILLS, pins


def matrix_rows() -> dict[str, dict[str, str]]:
    text = (REPO / "references" / "compatibility.md").read_text()
    rows = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == 5 and cells[0] not in ("package", "") and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = {"default": cells[1], "latest": cells[2]}
    return rows


def test_constraint_files_pin_the_stacks():
    default, latest = pins("default"), pins("latest")
    assert default["torch"] == "2.7.0" and default["torchvision"] == "0.22.0" and default["mosaicml"] == "0.32.1"
    assert latest["torch"] == "2.13.0" and "mosaicml" not in latest
    assert default["transformers"].startswith("5.") and latest["transformers"] == default["transformers"]


def test_matrix_matches_constraint_files():
    rows = matrix_rows()
    assert {"torch", "mosaicml", "transformers", "accelerate", "datasets", "evaluate"} <= set(rows)
    for package, versions in rows.items():
        for leg, version in versions.items():
            expected = pins(leg).get(package, "-")
            assert version == expected, f"compatibility.md says {package} {version} in {leg}, constraints say {expected}"


@pytest.mark.parametrize("skill", skill_dirs(), ids=lambda path: path.name)
def test_skill_metadata_records_tested_versions(skill):
    metadata = skills_ref.read_properties(skill).metadata or {}
    for package in SKILLS[skill.name].packages:  # each skill's packages and legs: skills.toml
        key = f"tested-{package}"
        assert key in metadata, f"{skill.name}/SKILL.md metadata lacks {key}"
        recorded = [version.strip() for version in metadata[key].split(",")]
        expected = {pins(leg)[package] for leg in SKILLS[skill.name].legs}
        assert sorted(recorded) == sorted(expected), f"{key}: {recorded} but the constraint files say {sorted(expected)}"
