#!/usr/bin/env python3
"""Install this bundle's skills into the skills directories of the agents you use, list them, uninstall them.

Where a skill goes (it lands as <dir>/<skill>/SKILL.md):
  claude          ~/.claude/skills           Claude Code, personal
  claude-project  <project>/.claude/skills   Claude Code, one project
  agents          ~/.agents/skills           Codex CLI and other Agent Skills clients, personal
  agents-project  <project>/.agents/skills   Codex CLI and other Agent Skills clients, one project

--mode copy (default) copies the skill folder and writes a marker file (.training-skills-install.json)
listing every file it installed; --mode link makes a symlink into this bundle, so a `git pull` updates it.
Install refuses to replace a different skill of the same name (no marker, a symlink elsewhere, or a copy
changed since it was installed: a recorded file edited or gone, or anything added, hidden files, __pycache__,
.git/, links and FIFOs included) unless --force is given. Uninstall removes only what this
script installed and leaves any other skill alone (saying so, with exit code 1). --invoke-only (Claude Code,
copy mode) adds `disable-model-invocation: true` to the installed copy's SKILL.md so Claude loads the skill
only when you invoke it by name (/composer-training); the bundle's own SKILL.md is never edited.
Runs on one skills folder take turns: each holds a lock on the folder itself (flock, so nothing is written
into it) while it reads and changes it; a run that finds the folder held says so and waits up to --wait
seconds (default 60).
A skill is a folder holding SKILL.md. Before changing anything, install refuses, naming it, what package_skills.py
refuses in a skill: a symlink, FIFO or other special file, a file or folder it cannot read, a SKILL.md that is not
UTF-8, a name that is not UTF-8 or holds a backslash or control character (paths are printed with such bytes and
characters escaped: \\xe9, \\n). A copy is built beside its destination and swapped in by renames (the old one
renamed aside, the new one renamed in, then the old one deleted), so a run killed midway leaves each skill whole,
or absent, never half deleted; the next install or uninstall removes what such a run left
(.<skill>.training-skills-new/-old, and the .<skill>-XXXXXXXX staging folders of older versions that hold
only <skill>/).

example:
  python scripts/install_skills.py install --agent claude --skill composer-training
  python scripts/install_skills.py install --agent all --mode link --project ~/code/my-project
  python scripts/install_skills.py list
  python scripts/install_skills.py uninstall --agent claude

exit codes:
  0  done
  1  a different skill of the same name is in the way: install changes nothing, uninstall removes the
     rest and leaves that one alone
  2  usage error (unknown skill or agent, a directory that does not exist, a file where a skills folder must
     be made, a folder the file system will not let this script write, an option combination that cannot work,
     anything the paragraph above refuses in a skill); what was installed before the error is listed on stdout
  3  another run of this script held a skills folder for longer than --wait: nothing changed
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import hashlib
import json
import math
import os
import re
import shutil
import sys
import time
from pathlib import Path, PurePosixPath

from skill_tree import SkillTreeError, find_skills, read_skill_md, shown, skill_entries

REPO = Path(__file__).resolve().parent.parent
MARKER = ".training-skills-install.json"
INSTALLED_BY = "training-skills scripts/install_skills.py"
# agent -> (which root, skills directory under it)
AGENTS = {
    "claude": ("home", ".claude/skills"),
    "claude-project": ("project", ".claude/skills"),
    "agents": ("home", ".agents/skills"),
    "agents-project": ("project", ".agents/skills"),
}
CLAUDE_AGENTS = {"claude", "claude-project"}
# Beside <skill> while a run swaps it: the copy being built, the old one on its way out.
NEW, OLD = ".training-skills-new", ".training-skills-old"
# What a killed run leaves: those two, and the staging folders of earlier versions of this script (a
# tempfile.mkdtemp .<skill>-XXXXXXXX holding nothing but <skill>/).
LEFTOVER = re.compile(rf"\.(?P<skill>.+?)(?:{re.escape(NEW)}|{re.escape(OLD)}|(?P<legacy>-[a-z0-9_]{{8}}))")
INVOKE_ONLY_KEY = "disable-model-invocation"
WAIT_S = 60.0


class UsageError(Exception):
    """Exit code 2."""


class Busy(Exception):
    """Exit code 3: another run of this script held a skills folder for longer than --wait."""


class Refused(Exception):
    """Exit code 1: something that is not ours is in the way. ``done`` lists what was done all the same."""

    exit_code = 1

    def __init__(self, message: str, done: list[str] = ()):
        super().__init__(message)
        self.done = list(done)


class Failed(Refused):
    """Exit code 2: the file system refused a change midway; ``done`` lists what was done before."""

    exit_code = 2


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        raise UsageError(f"{message} (see --help)")


def wait_seconds(text: str) -> float:
    try:
        seconds = float(text)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:  # nan would wait forever, a negative wait means nothing
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0, not {text!r}")
    return seconds


def digest(path: Path | str) -> str:
    with open(path, "rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def file_hashes(folder: Path, files: list[Path]) -> dict[str, str]:
    return {path.as_posix(): digest(folder / path) for path in files}


def changes_since_install(copy: Path, recorded: dict[str, str]) -> tuple[list[str], list[str]]:
    """(recorded files edited or gone, everything added: hidden files, __pycache__, links and FIFOs included; an
    added folder is named once, with a slash). Only regular files are read, so a FIFO cannot hang it and a link
    is never followed."""
    recorded_folders = {parent.as_posix() for name in recorded for parent in PurePosixPath(name).parents}
    found, added = {}, []

    def scan(folder: Path, relative: PurePosixPath) -> None:
        for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
            name = (relative / entry.name).as_posix()
            is_folder = entry.is_dir(follow_symlinks=False)
            if is_folder and name in recorded_folders:
                scan(Path(entry.path), relative / entry.name)
            elif entry.is_file(follow_symlinks=False) and name in recorded:
                found[name] = digest(entry.path)
            elif name != MARKER:
                added.append(shown(f"{name}/" if is_folder else name))

    scan(copy, PurePosixPath())
    return sorted(name for name in recorded if found.get(name) != recorded[name]), added


def skills_root(agent: str, home: Path, project: Path) -> Path:
    root, relative = AGENTS[agent]
    return (home if root == "home" else project) / relative


def inspect_target(dest: Path, source: Path, skills_dir: Path) -> tuple[str, str]:
    """(state, explanation). States: absent, link (ours), copy (ours), modified (ours, edited since),
    source (this bundle's own folder), foreign (anything else)."""
    if dest.is_symlink():
        target = Path(os.path.realpath(dest))
        if target == source:
            return "link", f"symlink to {shown(source)}"
        return "foreign", f"symlink to {shown(os.readlink(dest))}, not to this bundle's {shown(source.name)}"
    if not dest.exists():
        return "absent", "not installed"
    if dest.resolve() == source or skills_dir.resolve() in dest.resolve().parents:
        return "source", "this bundle's own skill folder"
    marker_path = dest / MARKER
    try:
        # Our marker is a regular file: anything else (a link, a FIFO that would block the read) is not ours.
        marker = json.loads(marker_path.read_text(encoding="utf-8")) \
            if marker_path.is_file() and not marker_path.is_symlink() else {}
        recorded = marker["files"] if marker.get("installed_by") == INSTALLED_BY else None
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        recorded = None
    if not isinstance(recorded, dict):
        return "foreign", "a skill this script did not install (no install marker)"
    changed, added = changes_since_install(dest, recorded)
    changes = [f"{label} since: {', '.join(names[:5])}" + (f" and {len(names) - 5} more" if len(names) > 5 else "")
               for label, names in (("changed", changed), ("added", added)) if names]
    if changes:
        return "modified", "installed by this script, but " + " and ".join(changes)
    mode = "copy, invoke-only" if marker.get("invoke_only") else "copy"
    return "copy", f"{mode} of {marker.get('source', '?')}"


def add_invoke_only(skill_md: Path) -> None:
    """Add `disable-model-invocation: true` to a SKILL.md frontmatter (a Claude Code-only key)."""
    text = skill_md.read_text(encoding="utf-8")
    end = text.find("\n---", 3)
    if not text.startswith("---") or end < 0:
        raise UsageError(f"{skill_md} has no frontmatter block")
    lines = [line for line in text[3:end].split("\n") if not line.startswith(f"{INVOKE_ONLY_KEY}:")]
    skill_md.write_text("---" + "\n".join([*lines, f"{INVOKE_ONLY_KEY}: true"]) + text[end:], encoding="utf-8")


def remove(path: Path) -> None:
    if path.is_symlink() or not path.is_dir():
        path.unlink()
    else:
        shutil.rmtree(path)


def discard(dest: Path) -> None:
    """Remove an installed skill: renamed aside first, so a kill midway never leaves half of it under its name."""
    aside = dest.with_name(f".{dest.name}{OLD}")
    os.rename(dest, aside)
    remove(aside)


def swap_in(new: Path, dest: Path) -> None:
    """Put ``new`` at ``dest``: the old one renamed aside, the new one renamed in, then the old one removed. A kill
    at any point leaves the skill whole (old or new) or, between the two renames, absent; never half deleted."""
    aside = dest.with_name(f".{dest.name}{OLD}")
    if os.path.lexists(dest):
        os.rename(dest, aside)
    try:
        os.rename(new, dest)
    except OSError:
        if os.path.lexists(aside):
            os.rename(aside, dest)
        raise
    if os.path.lexists(aside):
        remove(aside)


def clean_leftovers(folder: Path, skills: dict[str, Path]) -> None:
    """Remove what a killed run of this script left in ``folder`` (LEFTOVER names of this bundle's skills); called
    holding the folder's lock, so it is never another run's work in progress."""
    for entry in sorted(os.scandir(folder), key=lambda entry: entry.name):
        match = LEFTOVER.fullmatch(entry.name)
        if not match or match["skill"] not in skills:
            continue
        if match["legacy"] and not (entry.is_dir(follow_symlinks=False)
                                    and set(os.listdir(entry.path)) <= {match["skill"]}):
            continue  # .<skill>-settings/ of the user's, say
        remove(Path(entry.path))
        print(f"install_skills.py: removed {shown(entry.path)}, left by an interrupted run", file=sys.stderr)


def not_a_folder(path: Path) -> Path | None:
    """The nearest existing part of ``path`` (itself or a parent) when it is not a folder (a file, a dangling
    link): the skills folder cannot be made there."""
    for part in (path, *path.parents):
        if os.path.lexists(part):
            return None if part.is_dir() else part
    return None


def lock(handle: int, folder: Path, wait: float, kind: int) -> None:
    """flock ``handle`` (``folder``, open); when another run holds it, say so once and retry until ``wait`` runs
    out."""
    deadline, said = time.monotonic() + wait, False
    while True:
        try:
            fcntl.flock(handle, kind | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() >= deadline:
                raise Busy(f"another install_skills.py run is using {shown(folder)} (waited {wait:g} s): nothing "
                           "changed; run again when it has finished, or give it longer with --wait SECONDS") from None
            if not said:
                print(f"install_skills.py: waiting for another install_skills.py run using {shown(folder)} "
                      f"(up to {wait:g} s)", file=sys.stderr, flush=True)
                said = True
            time.sleep(0.05)


@contextlib.contextmanager
def holding(folders, wait: float, shared: bool = False):
    """Hold every skills folder in ``folders`` (they must exist) so no other run reads or changes them meanwhile:
    exclusively to change, shared to read. A folder is locked once however it is spelled, and folders in sorted
    order, so two runs never each hold what the other waits for."""
    with contextlib.ExitStack() as stack:
        for folder in sorted({Path(os.path.realpath(folder)) for folder in folders}):
            handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
            stack.callback(os.close, handle)  # closing it lets the lock go
            lock(handle, folder, wait, fcntl.LOCK_SH if shared else fcntl.LOCK_EX)
        yield


def install_one(source: Path, files: list[Path], dest: Path, mode: str, invoke_only: bool) -> None:
    """Build the new skill beside ``dest`` (a link, or a copy of ``files`` with its marker), then swap it in."""
    new = dest.with_name(f".{dest.name}{NEW}")
    try:
        if mode == "link":
            new.symlink_to(source, target_is_directory=True)
        else:
            new.mkdir()
            for relative in files:
                (new / relative).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source / relative, new / relative)
            if invoke_only:
                add_invoke_only(new / "SKILL.md")
            marker = {"installed_by": INSTALLED_BY, "skill": dest.name, "source": str(source), "mode": "copy",
                      "invoke_only": invoke_only, "files": file_hashes(new, files)}
            (new / MARKER).write_text(json.dumps(marker, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        swap_in(new, dest)
    finally:
        if os.path.lexists(new):
            remove(new)


def selected(args, skills: dict[str, Path]) -> list[tuple[str, str, Path, Path]]:
    """(agent, skill, source, destination) for every pair the arguments select."""
    unknown = [name for name in args.skill or [] if name not in skills]
    if unknown:
        raise UsageError(f"unknown skill '{shown(unknown[0])}'; this bundle has: "
                         f"{', '.join(map(shown, skills)) or 'none'}")
    agents = list(AGENTS) if "all" in args.agent else list(dict.fromkeys(args.agent))
    for root, label in ((args.home, "--home"), (args.project, "--project")):
        if any(AGENTS[agent][0] == label[2:] for agent in agents) and not root.is_dir():
            raise UsageError(f"{label} {str(root)!r} is not a directory")
    names = args.skill or list(skills)
    return [(agent, name, skills[name], skills_root(agent, args.home, args.project) / name)
            for agent in agents for name in names]


def command_install(args, skills: dict[str, Path]) -> list[str]:
    pairs = selected(args, skills)
    if args.invoke_only and args.mode == "link":
        raise UsageError("--invoke-only edits the installed copy's SKILL.md and a symlink has no copy to edit "
                         "(it would edit this bundle's source): use --mode copy")
    not_claude = sorted({agent for agent, *_ in pairs} - CLAUDE_AGENTS)
    if args.invoke_only and not_claude:
        raise UsageError(f"--invoke-only adds a Claude Code-only key; {', '.join(not_claude)} would not honour it: "
                         "use --agent claude or claude-project")
    # Check every skill and destination first, so a refusal changes nothing.
    files = {}
    for agent, name, source, dest in pairs:
        if name not in files:
            read_skill_md(source)
            files[name] = [relative for relative, is_folder in skill_entries(source) if not is_folder]
    for agent, name, source, dest in pairs:
        blocker = not_a_folder(dest.parent)
        if blocker:
            raise UsageError(f"{agent}: {shown(blocker)} is not a folder, so {shown(dest.parent)} cannot be made; "
                             "move it out of the way")
    for agent, name, source, dest in pairs:
        dest.parent.mkdir(parents=True, exist_ok=True)
    with holding([dest.parent for *_, dest in pairs], args.wait):
        for folder in dict.fromkeys(dest.parent for *_, dest in pairs):
            clean_leftovers(folder, skills)
        refusals = []
        for agent, name, source, dest in pairs:
            state, why = inspect_target(dest, source, args.skills_dir)
            if state == "source" or (state in ("foreign", "modified") and not args.force):
                hint = "" if state == "source" else "; pass --force to replace it"
                refusals.append(f"{agent}: {shown(dest)} holds {why}{hint}")
        if refusals:
            raise Refused("refused, nothing changed: " + "; ".join(refusals))
        done = []
        for agent, name, source, dest in pairs:
            state, _ = inspect_target(dest, source, args.skills_dir)
            try:
                install_one(source, files[name], dest, args.mode, args.invoke_only)
            except OSError as exc:
                raise Failed(f"{agent}: could not install {shown(name)} into {shown(dest.parent)}: {exc.strerror}; "
                             + ("the installs listed above were done" if done else "nothing was installed"),
                             done) from exc
            verb = {"absent": "installed", "foreign": "replaced a different skill with"}.get(state, "updated")
            extra = ", invoke-only" if args.invoke_only else ""
            done.append(f"{agent}: {verb} {shown(name)} -> {shown(dest)} ({args.mode}{extra})")
    return done


def command_uninstall(args, skills: dict[str, Path]) -> list[str]:
    """Remove every selected install of ours; anything else is left alone and makes the exit code 1."""
    done, left_alone = [], []
    pairs = selected(args, skills)
    folders = [dest.parent for *_, dest in pairs if dest.parent.is_dir()]
    with holding(folders, args.wait):
        for folder in dict.fromkeys(folders):
            clean_leftovers(folder, skills)
        for agent, name, source, dest in pairs:
            state, why = inspect_target(dest, source, args.skills_dir)
            if state in ("foreign", "source") or (state == "modified" and not args.force):
                hint = " (pass --force to remove it anyway)" if state == "modified" else ""
                left_alone.append(f"{agent}: {shown(dest)} holds {why}{hint}")
            elif state == "absent":
                done.append(f"{agent}: {shown(name)} was not installed at {shown(dest)}")
            else:
                try:
                    discard(dest)
                except OSError as exc:
                    raise Failed(f"{agent}: could not remove {shown(name)} from {shown(dest.parent)}: {exc.strerror}",
                                 done) from exc
                done.append(f"{agent}: removed {shown(name)} from {shown(dest)} ({state})")
    if left_alone:
        raise Refused("left alone: " + "; ".join(left_alone), done)
    return done


def command_list(args, skills: dict[str, Path]) -> list[dict]:
    """What is installed where; read while no other run changes it, so an install half done is never shown."""
    pairs = selected(args, skills)
    with holding([dest.parent for *_, dest in pairs if dest.parent.is_dir()], args.wait, shared=True):
        return [{"agent": agent, "skill": name, "path": str(dest), "state": state, "detail": why}
                for agent, name, source, dest in pairs
                for state, why in [inspect_target(dest, source, args.skills_dir)]]


def build_parser() -> argparse.ArgumentParser:
    # allow_abbrev=False: a prefix of a flag is not that flag (--for is not --force, --js not --json).
    parser = OneLineParser(prog="install_skills.py", allow_abbrev=False, description=__doc__.split("\n\n")[0],
                           epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=OneLineParser)
    for name, summary in (("install", "install skills"), ("uninstall", "remove skills this script installed"),
                          ("list", "show what is installed where")):
        command = commands.add_parser(name, help=summary, description=summary, allow_abbrev=False)
        command.add_argument("--agent", action="append", choices=[*AGENTS, "all"],
                             help="where to act (repeatable; default: claude, or all for list)")
        command.add_argument("--skill", action="append", metavar="NAME",
                             help="only this skill (repeatable; default: all)")
        command.add_argument("--home", type=Path, default=Path.home(), help="home directory (default: yours)")
        command.add_argument("--project", type=Path, default=Path.cwd(),
                             help="project root for the *-project agents (default: the current directory)")
        command.add_argument("--skills-dir", type=Path, default=REPO / "skills", help=argparse.SUPPRESS)
        command.add_argument("--wait", type=wait_seconds, default=WAIT_S, metavar="SECONDS",
                             help=f"how long to wait for another run using the same skills folder, a number >= 0 "
                                  f"(default: {WAIT_S:g})")
        if name == "install":
            command.add_argument("--mode", choices=["copy", "link"], default="copy", help="copy (default) or symlink")
            command.add_argument("--invoke-only", action="store_true",
                                 help="Claude Code, copy mode: load the skill only when invoked by name")
        if name != "list":
            command.add_argument("--force", action="store_true",
                                 help="install: replace a different skill of the same name; "
                                      "uninstall: remove a copy changed since it was installed")
        else:
            command.add_argument("--json", action="store_true", help="print the table as JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        args.agent = args.agent or (["all"] if args.command == "list" else ["claude"])
        args.skills_dir = args.skills_dir.resolve()
        skills = find_skills(args.skills_dir)
        if not skills:
            raise UsageError(f"no skill (a folder holding SKILL.md) under {shown(args.skills_dir)}")
        if args.command == "list":
            rows = command_list(args, skills)
            if args.json:
                print(json.dumps(rows, indent=2))
            for row in [] if args.json else rows:
                print(f"{row['agent']:<15} {shown(row['skill']):<24} {row['state']:<9} {shown(row['path'])}  "
                      f"({row['detail']})")
            return 0
        for line in (command_install if args.command == "install" else command_uninstall)(args, skills):
            print(line)
        return 0
    except (UsageError, SkillTreeError) as exc:
        print(f"install_skills.py: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a folder the file system will not let us write (read-only, no permission)
        print(f"install_skills.py: error: {f'{shown(exc.filename)}: {exc.strerror}' if exc.filename else exc}",
              file=sys.stderr)
        return 2
    except Busy as exc:
        print(f"install_skills.py: error: {exc}", file=sys.stderr)
        return 3
    except Refused as exc:
        for line in exc.done:
            print(line)
        print(f"install_skills.py: error: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())
