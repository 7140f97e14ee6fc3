"""What a skill is and what it may hold, for the bundle tools (install_skills.py, package_skills.py): one walk, so
both tools find the same skills and refuse the same things, by name, before either changes anything.

A skill is a folder holding SKILL.md; any other folder (.cache/, __pycache__/, scratch) is not a skill. A skill holds
only real files and folders that this user can read, under names a zip and its extractors read back the same: a
link (it can point outside the skill, or nowhere), a FIFO (it would block a copy), a socket or device, a name that
is not UTF-8 or holds a backslash or a control character is refused. __pycache__, *.pyc and dotfiles are left out.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path

IGNORED = ("__pycache__", "*.pyc", "*.pyo", ".*")


class SkillTreeError(Exception):
    """One line naming what in a skill cannot be installed or packaged."""


def ignored(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in IGNORED)


def shown(path: Path | str) -> str:
    """``path`` as printed: bytes that are not UTF-8 as \\x escapes, control characters escaped (\\n, \\x1b), so a
    name can neither fake a second line nor stop a strict UTF-8 stdout."""
    text = os.fsencode(path).decode("utf-8", errors="backslashreplace")
    return "".join(char if char.isprintable() else char.encode("unicode_escape").decode("ascii") for char in text)


def find_skills(skills_dir: Path) -> dict[str, Path]:
    """Every skill under ``skills_dir`` by name: a folder holding SKILL.md (a link counts here, to be refused by
    name later rather than skipped in silence)."""
    if not skills_dir.is_dir():
        return {}
    return {path.name: path for path in sorted(skills_dir.iterdir())
            if not ignored(path.name) and os.path.lexists(path / "SKILL.md")}


def check_name(path: Path) -> None:
    name = path.name
    if any(0xDC80 <= ord(char) <= 0xDCFF for char in name):  # bytes Python could not decode come back so
        raise SkillTreeError(f"{shown(path)} is named in bytes that are not UTF-8 (a zip entry name is UTF-8): "
                             "rename it")
    if "\\" in name or not name.isprintable():
        raise SkillTreeError(f"{shown(path)} has a backslash or a control character in its name, which a zip "
                             "extractor would read as another path: rename it")


def check_entry(path: Path) -> bool:
    """Refuse what cannot be shipped; True for a folder, False for a file."""
    check_name(path)
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise SkillTreeError(f"{shown(path)} is a symlink (to {shown(os.readlink(path))}); a skill holds only real "
                             "files and folders: replace the link with a copy of what it points to, or remove it")
    if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
        raise SkillTreeError(f"{shown(path)} is not a regular file or folder (a FIFO, socket or device): remove it")
    return stat.S_ISDIR(mode)


def skill_entries(skill: Path) -> list[tuple[Path, bool]]:
    """(path relative to ``skill``, is a folder) for every folder and file of the skill, sorted, litter left out.
    Every folder is listed and every file opened here, so one this user cannot read is named now, not shipped
    empty or found half-way through a copy."""
    check_entry(skill)
    found = []

    def walk(folder: Path, relative: Path) -> None:
        try:
            names = sorted(os.listdir(folder))
        except OSError as exc:
            raise SkillTreeError(f"{shown(folder)} cannot be read: {exc.strerror}") from None
        for name in (name for name in names if not ignored(name)):
            path = folder / name
            is_folder = check_entry(path)
            found.append((relative / name, is_folder))
            if is_folder:
                walk(path, relative / name)
                continue
            try:
                open(path, "rb").close()
            except OSError as exc:
                raise SkillTreeError(f"{shown(path)} cannot be read: {exc.strerror}") from None

    walk(skill, Path())
    return sorted(found)


def read_skill_md(skill: Path) -> str:
    """The text of ``skill``'s SKILL.md: a real file, readable, UTF-8 (what the spec asks and agents read)."""
    skill_md = skill / "SKILL.md"
    check_entry(skill)
    check_entry(skill_md)
    try:
        return skill_md.read_bytes().decode("utf-8")
    except OSError as exc:
        raise SkillTreeError(f"{shown(skill_md)} cannot be read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SkillTreeError(f"{shown(skill_md)} is not UTF-8 (byte {exc.start}): save it as UTF-8") from None
