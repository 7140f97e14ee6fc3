#!/usr/bin/env python3
"""Build one upload-ready zip per skill: dist/<skill>.zip, whose single top-level entry is the skill folder
(<skill>/SKILL.md, <skill>/references/..., <skill>/scripts/...), the layout agent products accept for upload.

The build is reproducible: the same skill folder gives the same bytes. Entries are sorted, every timestamp is
1980-01-01 00:00, permissions are 0644 (0755 for executable files and folders), and __pycache__, *.pyc and
dotfiles are left out.

A symlink, FIFO or other special file inside a skill is refused, naming it: a link can point outside the skill
(its target's content would be uploaded with the skill) or nowhere, and a FIFO would block the build. So is a
name that is not UTF-8 (a zip stores names as UTF-8): rename it.

example:
  python scripts/package_skills.py
  python scripts/package_skills.py --skill composer-training --out /tmp/dist

exit codes:
  0  every zip was written
  1  a skill folder cannot be packaged (SKILL.md missing, or its name differs from the folder)
  2  usage error: an unknown skill, an --out that is not a writable folder, a symlink or special file in a skill,
     a file or folder named in bytes that are not UTF-8 (named with \\x escapes)
"""

from __future__ import annotations

import argparse
import fnmatch
import os
import re
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold
IGNORED = ("__pycache__", "*.pyc", "*.pyo", ".*")
UNIX = 3  # ZipInfo.create_system: the external attributes hold Unix permissions


class PackageError(Exception):
    exit_code = 1


class UsageError(PackageError):
    """Exit code 2: an unusable --out, or an entry of a skill that cannot be packaged safely."""

    exit_code = 2


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"package_skills.py: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def refuse_special(path: Path) -> None:
    """Only real files and folders are packaged, under names a zip can hold: a link is never followed, a FIFO
    never read."""
    try:
        path.name.encode("utf-8")
    except UnicodeEncodeError:  # the bytes Python could not decode came back as surrogates
        shown = os.fsencode(path).decode("utf-8", errors="backslashreplace")
        raise UsageError(f"{shown} is named in bytes that are not UTF-8 (a zip entry name is UTF-8): "
                         "rename it") from None
    if path.is_symlink():
        raise UsageError(f"{path} is a symlink (to {os.readlink(path)}); a packaged skill holds only real files and "
                         "folders: replace the link with a copy of what it points to, or remove it")
    if not (path.is_dir() or path.is_file()):
        raise UsageError(f"{path} is not a regular file or folder (a FIFO, socket or device): remove it")


def ignored(name: str) -> bool:
    return any(fnmatch.fnmatch(name, pattern) for pattern in IGNORED)


def entries(skill: Path) -> list[tuple[str, Path]]:
    """(name in the zip, path on disk) for the skill folder, its subfolders and files, sorted by name."""
    found = [(f"{skill.name}/", skill)]
    for root, dirs, files in os.walk(skill):
        dirs[:] = [name for name in dirs if not ignored(name)]
        for name in dirs + [name for name in files if not ignored(name)]:
            refuse_special(Path(root, name))
        relative = Path(root).relative_to(skill)
        found += [(f"{(Path(skill.name) / relative / name).as_posix()}/", Path(root, name)) for name in dirs]
        found += [((Path(skill.name) / relative / name).as_posix(), Path(root, name))
                  for name in files if not ignored(name)]
    return sorted(found)


def check_skill(skill: Path) -> None:
    skill_md = skill / "SKILL.md"
    if not skill_md.is_file():
        raise PackageError(f"{skill} has no SKILL.md")
    frontmatter = re.match(r"---\r?\n(.*?)\r?\n---", skill_md.read_text(encoding="utf-8"), flags=re.S)
    name = re.search(r"^name:\s*['\"]?([^'\"\s]+)", frontmatter[1], flags=re.M) if frontmatter else None
    if not name or name[1] != skill.name:
        raise PackageError(f"{skill_md}: the frontmatter name must equal the folder name {skill.name!r}")


def zip_info(name: str, path: Path) -> zipfile.ZipInfo:
    info = zipfile.ZipInfo(name, date_time=FIXED_TIME)
    info.create_system = UNIX
    if name.endswith("/"):
        info.external_attr = (0o40755 << 16) | 0x10  # 0x10: the MS-DOS directory flag
        info.compress_type = zipfile.ZIP_STORED
    else:
        executable = os.stat(path).st_mode & 0o111
        info.external_attr = (0o100755 if executable else 0o100644) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
    return info


def check_output(out_dir: Path) -> None:
    """Make the output folder and create a file in it, so an unusable --out fails before any zip is built."""
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise UsageError(f"--out {str(out_dir)!r} exists and is not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out_dir).close()
    except OSError as exc:
        raise UsageError(f"--out {str(out_dir)!r} is not a writable folder: {exc.strerror}") from exc


def build_zip(skill: Path, out_dir: Path) -> Path:
    """Write <out_dir>/<skill>.zip (replaced atomically) and return its path."""
    check_skill(skill)
    members = entries(skill)
    check_output(out_dir)
    target = out_dir / f"{skill.name}.zip"
    handle, partial = tempfile.mkstemp(prefix=f".{skill.name}-", suffix=".zip", dir=out_dir)
    os.close(handle)
    try:
        with zipfile.ZipFile(partial, "w") as archive:
            for name, path in members:
                data = b"" if name.endswith("/") else path.read_bytes()
                archive.writestr(zip_info(name, path), data, compresslevel=9)
        os.chmod(partial, 0o644)
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target


def main(argv: list[str] | None = None) -> int:
    # allow_abbrev=False: a prefix of a flag is not that flag (--sk is not --skill).
    parser = OneLineParser(prog="package_skills.py", allow_abbrev=False, description=__doc__.split("\n\n")[0],
                           epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skill", action="append", metavar="NAME", help="only this skill (repeatable; default: all)")
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="output folder (default: dist/)")
    parser.add_argument("--skills-dir", type=Path, default=REPO / "skills", help="folder holding the skills")
    args = parser.parse_args(argv)
    skills = {path.name: path for path in sorted(args.skills_dir.iterdir()) if path.is_dir()} \
        if args.skills_dir.is_dir() else {}
    unknown = [name for name in args.skill or [] if name not in skills]
    if unknown or not skills:
        parser.error(f"unknown skill {unknown[0]!r}; found: {', '.join(skills) or 'none'}" if unknown
                     else f"no skill folders under {args.skills_dir}")
    try:
        for name in args.skill or list(skills):
            print(build_zip(skills[name], args.out))
    except PackageError as exc:
        print(f"package_skills.py: error: {exc}", file=sys.stderr)
        return exc.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main())
