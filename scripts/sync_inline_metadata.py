#!/usr/bin/env python3
"""Copy skill_common/ into every skill and write (or check) the PEP 723 inline metadata of every skill script.

Every new file content is worked out before any file is written, so a missing pin or an unknown skill changes
nothing. The header lets `uv run scripts/train_smoke.py` (or `pipx run`) run a script in a throwaway environment with
the tested pins. The pins come from constraints/default.txt, the one source of truth for tested versions.

example:
  python scripts/sync_inline_metadata.py           # copy skill_common/ into every skill, rewrite the headers
  python scripts/sync_inline_metadata.py --check   # change nothing; exit 1 when a copy or header is stale
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from skill_manifest import SKILLS, pins

REPO = Path(__file__).resolve().parent.parent
BLOCK = re.compile(r"(?m)^# /// script\n(?:^#(?: .*)?\n)*?^# ///\n")


# No header: the modules the scripts import, never run (smoke_contract.py, and every _<name>.py such as the synced
# _env_doctor.py), and env_check.py, which inspects the user's own environment: in a throwaway one it would only pass.
NOT_STANDALONE = {"smoke_contract.py", "env_check.py"}


SHARED = REPO / "skill_common"


class SyncError(Exception):
    """A fact the sync needs is missing; nothing has been written."""


def standalone(path: Path) -> bool:
    return path.name not in NOT_STANDALONE and not path.name.startswith("_")


def skill_scripts() -> list[Path]:
    return sorted(path for path in (REPO / "skills").glob("*/scripts/*.py") if standalone(path))


def header_for(skill: str, versions: dict[str, str]) -> str:
    if skill not in SKILLS:
        raise SyncError(f"skills/{skill} has no [skills.{skill}] entry in skills.toml: add one (README, Adding a skill)")
    packages = SKILLS[skill].packages  # what a script of that skill needs to run (skills.toml)
    missing = [name for name in packages if name not in versions]
    if missing:
        raise SyncError(f"{', '.join(missing)} (skills/{skill}) not pinned in constraints/default.txt: install it in "
                        ".venv, then run make lock")
    lines = ["# /// script", '# requires-python = ">=3.11"', "# dependencies = ["]
    lines += [f'#     "{name}=={versions[name]}",' for name in packages]
    lines += ["# ]", "# ///"]
    return "\n".join(lines) + "\n"


def wanted_files(versions: dict[str, str]) -> dict[Path, str]:
    """Every skill script's content as it should be: the shared files copied in, each standalone script headed."""
    wanted = {}
    for folder in sorted((REPO / "skills").glob("*/scripts")):
        contents = {path: path.read_text(encoding="utf-8") for path in folder.glob("*.py")}
        contents.update({folder / source.name: source.read_text(encoding="utf-8") for source in SHARED.glob("*.py")})
        for path, text in sorted(contents.items()):
            wanted[path] = with_header(text, header_for(folder.parent.name, versions)) if standalone(path) else text
    return wanted


def with_header(text: str, header: str) -> str:
    if BLOCK.search(text):
        return BLOCK.sub(lambda _: header, text, count=1)
    first, newline, rest = text.partition("\n")
    if first.startswith("#!"):
        return f"{first}\n{header}{rest}"
    return header + text


def main(argv: list[str] | None = None) -> int:
    # allow_abbrev=False: a prefix of a flag is not that flag (--che is not --check).
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, allow_abbrev=False)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a copy or header is stale")
    args = parser.parse_args(argv)
    try:
        wanted = wanted_files(pins("default"))
    except SyncError as error:
        print(f"sync_inline_metadata.py: error: {error}", file=sys.stderr)
        return 2
    stale = []
    for script, text in wanted.items():
        if not script.exists() or script.read_text(encoding="utf-8") != text:
            stale.append(script.relative_to(REPO))
            if not args.check:
                script.write_text(text, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if args.check else 'updated'}: {path}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
