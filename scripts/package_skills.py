#!/usr/bin/env python3
"""Build one upload-ready zip per skill: dist/<skill>.zip, whose single top-level entry is the skill folder
(<skill>/SKILL.md, <skill>/references/..., <skill>/scripts/...), the layout agent products accept for upload.

The build is reproducible: the same skill folder gives the same bytes. Entries are sorted, every timestamp is
1980-01-01 00:00, permissions are 0644 (0755 for executable files and folders), and __pycache__, *.pyc and
dotfiles are left out.

A skill is a folder holding SKILL.md (other folders in --skills-dir, such as .cache/, are skipped), as for
install_skills.py. Every skill is checked before any zip is written, so a refusal writes nothing: a symlink (the skill
folder, SKILL.md or anything inside), FIFO or other special file is refused, naming it (a link can point outside the
skill, its target's content would be uploaded with it; a FIFO would block the build); so is a folder or file this
user cannot read (it would be shipped empty or missing), a SKILL.md that is not UTF-8, and a name that is not UTF-8
or holds a backslash or control character (a zip stores UTF-8 names, and an extractor would read those as other
paths): rename it. Names are printed with such bytes and characters escaped (\\xe9, \\n).

example:
  python scripts/package_skills.py
  python scripts/package_skills.py --skill composer-training --out /tmp/dist

exit codes:
  0  every zip was written
  1  a skill folder cannot be packaged (its frontmatter name differs from the folder)
  2  usage error: an unknown skill, an --out that is not a writable folder or lies inside a skill, anything the
     paragraph above refuses, a file that cannot be read or written midway; nothing is written
  129, 130, 143  interrupted by SIGHUP, SIGINT (Ctrl-C) or SIGTERM: no zip is half written, no temporary file left
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import sys
import tempfile
import zipfile
from pathlib import Path

from skill_tree import SkillTreeError, find_skills, read_skill_md, shown, skill_entries

REPO = Path(__file__).resolve().parent.parent
FIXED_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold
UNIX = 3  # ZipInfo.create_system: the external attributes hold Unix permissions
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # SIGHUP: the terminal closed


class PackageError(Exception):
    exit_code = 1


class UsageError(PackageError):
    """Exit code 2: an unusable --out."""

    exit_code = 2


class Interrupted(KeyboardInterrupt):
    """A stop signal arrived: raised where the build is, so its clean-up runs; exit 128 + the signal."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


def interrupt(signum, frame):
    for stop in STOP_SIGNALS:  # once: a second signal must not cut the clean-up short
        signal.signal(stop, signal.SIG_IGN)
    raise Interrupted(signum)


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"package_skills.py: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


def check_skill(skill: Path) -> list[tuple[str, Path]]:
    """(name in the zip, path on disk) for the skill folder, its subfolders and files, sorted by name; refuses a
    skill that cannot be packaged."""
    frontmatter = re.match(r"---\r?\n(.*?)\r?\n---", read_skill_md(skill), flags=re.S)
    name = re.search(r"^name:\s*['\"]?([^'\"\s]+)", frontmatter[1], flags=re.M) if frontmatter else None
    if not name or name[1] != skill.name:
        raise PackageError(f"{shown(skill / 'SKILL.md')}: the frontmatter name must equal the folder name "
                           f"'{shown(skill.name)}'")
    found = [(f"{skill.name}/", skill)]
    for relative, is_folder in skill_entries(skill):
        found.append(((Path(skill.name) / relative).as_posix() + ("/" if is_folder else ""), skill / relative))
    return sorted(found)


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


def check_output(out_dir: Path, skills: list[Path]) -> None:
    """Make the output folder and create a file in it, so an unusable --out fails before any zip is built; a
    folder inside a skill would put the zips into the next build and install of that skill."""
    inside = [skill for skill in skills if Path(os.path.realpath(out_dir)).is_relative_to(os.path.realpath(skill))]
    if inside:
        raise UsageError(f"--out '{shown(out_dir)}' is inside the skill {shown(inside[0])}: choose a folder outside it")
    if os.path.lexists(out_dir) and not out_dir.is_dir():
        raise UsageError(f"--out '{shown(out_dir)}' exists and is not a folder")
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        tempfile.TemporaryFile(dir=out_dir).close()
    except OSError as exc:
        raise UsageError(f"--out '{shown(out_dir)}' is not a writable folder: {exc.strerror}") from exc


def write_zip(members: list[tuple[str, Path]], partial: str) -> None:
    with zipfile.ZipFile(partial, "w") as archive:
        for name, path in members:
            data = b"" if name.endswith("/") else path.read_bytes()
            archive.writestr(zip_info(name, path), data, compresslevel=9)
    os.chmod(partial, 0o644)


def build_zips(skills: list[Path], out_dir: Path, all_skills: list[Path] = ()) -> list[Path]:
    """Write <out_dir>/<skill>.zip for every skill and return their paths. Every skill is checked and every zip
    built under a hidden temporary name first, then all are renamed into place, so a refusal, an error or a signal
    midway leaves the zips that were there and no temporary file."""
    members = {skill: check_skill(skill) for skill in skills}
    check_output(out_dir, list(all_skills) or skills)
    partials = {}
    try:
        for skill in skills:
            handle, partials[skill] = tempfile.mkstemp(prefix=f".{skill.name}-", suffix=".zip", dir=out_dir)
            os.close(handle)
            write_zip(members[skill], partials[skill])
        for skill in skills:
            os.replace(partials[skill], out_dir / f"{skill.name}.zip")
    finally:
        for partial in partials.values():
            if os.path.exists(partial):
                os.unlink(partial)
    return [out_dir / f"{skill.name}.zip" for skill in skills]


def main(argv: list[str] | None = None) -> int:
    # allow_abbrev=False: a prefix of a flag is not that flag (--sk is not --skill).
    parser = OneLineParser(prog="package_skills.py", allow_abbrev=False, description=__doc__.split("\n\n")[0],
                           epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skill", action="append", metavar="NAME", help="only this skill (repeatable; default: all)")
    parser.add_argument("--out", type=Path, default=REPO / "dist", help="output folder (default: dist/)")
    parser.add_argument("--skills-dir", type=Path, default=REPO / "skills", help="folder holding the skills")
    args = parser.parse_args(argv)
    skills = find_skills(args.skills_dir)
    unknown = [name for name in args.skill or [] if name not in skills]
    if unknown or not skills:
        parser.error(f"unknown skill '{shown(unknown[0])}'; found: {', '.join(map(shown, skills)) or 'none'}"
                     if unknown else f"no skill (a folder holding SKILL.md) under {shown(args.skills_dir)}")
    for stop in STOP_SIGNALS:
        signal.signal(stop, interrupt)
    try:
        for path in build_zips([skills[name] for name in args.skill or skills], args.out, list(skills.values())):
            print(shown(path))
    except (PackageError, SkillTreeError) as exc:
        print(f"package_skills.py: error: {exc}", file=sys.stderr)
        return getattr(exc, "exit_code", 2)
    except OSError as exc:  # a file that changed under the build, a full disk
        print(f"package_skills.py: error: {shown(exc.filename or '')}: {exc.strerror}", file=sys.stderr)
        return 2
    except Interrupted as exc:
        print(f"package_skills.py: error: interrupted by {signal.Signals(exc.signum).name}", file=sys.stderr)
        return 128 + exc.signum
    return 0


if __name__ == "__main__":
    sys.exit(main())
