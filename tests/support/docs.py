"""Read the bundle's Markdown: fenced code blocks, quoted-error blocks, links.

Conventions the gates rely on (``references/smoke-script-contract.md`` documents them for authors):
- A ```python or ```bash block runs in the suite unless the nearest text line above it starts with
  ``Not run here:`` (visible to readers, with the reason), e.g. ``_Not run here: needs 8 GPUs._``.
- In the skills of BLOCKS_RUN_ALONE each python block runs alone, as a reader copies it: in a fresh namespace, after
  only the blocks of the document's ``## Shared setup`` section (when it has one). Elsewhere the python blocks of
  one document share one namespace, like a notebook. Either way a document's blocks run in order in one scratch
  folder (a block may read files an earlier one wrote), and the documents of one skill run one after another in
  one process (tests/support/run_doc_blocks.py).
- Bash blocks run one at a time in a scratch copy of the skill folder (so relative ``scripts/...`` paths work
  and nothing is written into the repository), with the suite's Python first on PATH; a block of skill-script
  commands that are canonical runs (shared_runs.CANONICAL_RUNS) is proven by those shared runs.
- A troubleshooting entry quotes a real error message in a ```error <id> block, with the message's line breaks;
  ``...`` elides a part.
  ``tests/support/quoted_errors_*.py`` holds a producer for each id that makes the installed library raise it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent.parent
FENCE = re.compile(r"^(?P<indent> {0,3})(?P<fence>`{3,}|~{3,})(?P<info>[^`\n]*)$")
NOT_RUN = re.compile(r"^[\s>*_]*Not run here:\s*(?P<reason>.+?)[\s*_]*$")
BLOCKS_RUN_ALONE = {"transformers-training"}  # composer-training's references build on their earlier blocks
RUNNABLE = {"python": "python", "py": "python", "bash": "bash", "sh": "bash", "shell": "bash"}


@dataclass
class Block:
    path: Path
    line: int  # 1-based line of the first source line
    info: str
    source: str
    not_run_reason: str | None
    section: str = ""  # the ``##`` heading above the block

    @property
    def is_setup(self) -> bool:
        return self.section == "Shared setup"

    @property
    def language(self) -> str | None:
        words = self.info.split()
        return RUNNABLE.get(words[0].lower()) if words else None

    @property
    def where(self) -> str:
        shown = self.path.relative_to(REPO) if self.path.is_relative_to(REPO) else self.path
        return f"{shown}:{self.line}"


def markdown_files() -> list[Path]:
    files = [REPO / "README.md", *sorted((REPO / "references").glob("*.md"))]
    for skill in sorted((REPO / "skills").glob("*/SKILL.md")):
        files.append(skill)
        files.extend(sorted((skill.parent / "references").glob("*.md")))
    return [path for path in files if path.exists()]


def blocks(path: Path) -> list[Block]:
    lines = path.read_text(encoding="utf-8").splitlines()
    found, index, last_text, section = [], 0, "", ""
    while index < len(lines):
        match = FENCE.match(lines[index])
        if not match:
            if lines[index].strip():
                last_text = lines[index]
            if lines[index].startswith("## "):
                section = lines[index][3:].strip()
            index += 1
            continue
        fence, start = match["fence"], index + 1
        end = start
        while end < len(lines) and not lines[end].strip().startswith(fence):
            end += 1
        reason = NOT_RUN.match(last_text)
        source = "\n".join(line[len(match["indent"]):] for line in lines[start:end]) + "\n"
        found.append(Block(path, start + 1, match["info"].strip(), source, reason["reason"] if reason else None,
                           section))
        index, last_text = end + 1, ""
    return found


def blocks_run_alone(path: Path) -> bool:
    relative = path.relative_to(REPO)
    return relative.parts[0] == "skills" and relative.parts[1] in BLOCKS_RUN_ALONE


def runnable_blocks(path: Path, language: str) -> list[Block]:
    return [block for block in blocks(path) if block.language == language and block.not_run_reason is None]


def quoted_errors(path: Path) -> list[tuple[str, str, str]]:
    """(id, quoted text, where) for every ```error <id> block."""
    quoted = []
    for block in blocks(path):
        words = block.info.split()
        if words and words[0] == "error":
            error_id = words[1] if len(words) > 1 else ""
            quoted.append((error_id, layout(block.source), block.where))
    return quoted


def layout(text: str) -> str:
    """The text's non-blank lines, each stripped and with its runs of spaces made one: line breaks are kept, so a
    quote must break where the message does (a message printed on several lines is quoted on as many)."""
    return "\n".join(" ".join(line.split()) for line in text.splitlines() if line.strip())


def matches_quote(quote: str, message: str) -> bool:
    """True when every ``...``-separated fragment of ``quote`` appears in ``message`` in order, line breaks
    included (see layout)."""
    message = layout(message)
    position = 0
    for fragment in (part.strip() for part in layout(quote).split("...")):
        if not fragment:
            continue
        found = message.find(fragment, position)
        if found < 0:
            return False
        position = found + len(fragment)
    return True


LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def relative_links(path: Path) -> list[str]:
    """Link targets that are not URLs or in-page anchors, with any #fragment removed."""
    text = path.read_text(encoding="utf-8")
    text = re.sub(r"```.*?```", "", text, flags=re.S)
    targets = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue
        targets.append(target.split("#")[0])
    return targets


SCRIPT_NAME = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)*scripts/[\w.-]+\.py)")


def named_scripts(path: Path) -> list[str]:
    return sorted(set(SCRIPT_NAME.findall(path.read_text(encoding="utf-8"))))
