#!/usr/bin/env python3
"""Write (or check) the PEP 723 inline metadata of every skill script from the constraint files.

The header lets `uv run scripts/train_smoke.py` (or `pipx run`) run a script in a throwaway environment with
the tested pins. The pins come from constraints/default.txt, the one source of truth for tested versions.

example:
  python scripts/sync_inline_metadata.py           # rewrite the headers
  python scripts/sync_inline_metadata.py --check   # exit 1 when a header is missing or stale
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


def skill_scripts() -> list[Path]:
    return sorted(path for path in (REPO / "skills").glob("*/scripts/*.py")
                  if path.name not in NOT_STANDALONE and not path.name.startswith("_"))


def header_for(script: Path, versions: dict[str, str]) -> str:
    packages = SKILLS[script.parts[-3]].packages  # what a script of that skill needs to run (skills.toml)
    lines = ["# /// script", '# requires-python = ">=3.11"', "# dependencies = ["]
    lines += [f'#     "{name}=={versions[name]}",' for name in packages]
    lines += ["# ]", "# ///"]
    return "\n".join(lines) + "\n"


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
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 when a header is stale")
    args = parser.parse_args(argv)
    versions = pins("default")
    stale = []
    for script in skill_scripts():
        text = script.read_text(encoding="utf-8")
        wanted = with_header(text, header_for(script, versions))
        if wanted != text:
            stale.append(script.relative_to(REPO))
            if not args.check:
                script.write_text(wanted, encoding="utf-8")
    for path in stale:
        print(f"{'stale' if args.check else 'updated'}: {path}", file=sys.stderr)
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
