"""skills.toml's per-skill facts for the tests, read by the loader the bundle tools use (scripts/skill_manifest.py).

scripts/ goes on sys.path (last, so it shadows nothing) as `python scripts/<tool>.py` has it: the tools import the
loader by name, also when a test imports a tool."""

import sys
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[2] / "scripts"))

from skill_manifest import LEGS, SKILLS, TEST_EXTRA, deselected, install_extras, pins  # noqa: E402

__all__ = ["LEGS", "SKILLS", "TEST_EXTRA", "deselected", "install_extras", "pins"]
