"""scripts/package_skills.py: one upload-ready zip per skill, byte-for-byte reproducible, that unpacks to a skill
folder passing the spec gate."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import signal
import stat
import sys
import zipfile
from pathlib import Path

import pytest
import skills_ref

from support.harness import REPO, SKILLS_DIR, assert_one_line_error, run_command, run_python, skill_dirs
from support.unprivileged import as_user, give_to_user, tools_for_user, user_folder

import skill_tree  # noqa: E402  (scripts/, on sys.path through support.manifest, as the tools have it)

SCRIPT = REPO / "scripts" / "package_skills.py"
spec = importlib.util.spec_from_file_location("package_skills", SCRIPT)
packager = importlib.util.module_from_spec(spec)
spec.loader.exec_module(packager)

SKILLS = [path.name for path in skill_dirs()]
SIGNAL_AT = REPO / "tests" / "support" / "signal_at.py"


def source_files(skill) -> list[str]:
    return sorted(str(path.relative_to(skill.parent)) for path in skill.rglob("*")
                  if path.is_file() and not any(skill_tree.ignored(part) for part in path.relative_to(skill).parts))


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """Every skill packaged once by the command, as a user runs it."""
    out = tmp_path_factory.mktemp("dist")
    result = run_python([str(SCRIPT), "--out", str(out)], out)
    assert result.returncode == 0, result.stderr
    assert sorted(result.stdout.split()) == sorted(str(out / f"{skill}.zip") for skill in SKILLS)
    return out


@pytest.mark.parametrize("skill", SKILLS)
def test_the_zip_unpacks_to_the_skill_folder_and_passes_the_spec_gate(built, skill, tmp_path):
    with zipfile.ZipFile(built / f"{skill}.zip") as archive:
        names = archive.namelist()
        assert {name.split("/")[0] for name in names} == {skill}, "one top-level entry: the skill folder"
        assert f"{skill}/SKILL.md" in names
        assert not [name for name in names if "__pycache__" in name or name.endswith(".pyc")]
        assert names == sorted(names)
        for info in archive.infolist():
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert stat.S_IMODE(info.external_attr >> 16) in (0o644, 0o755)
        archive.extractall(tmp_path)
    assert skills_ref.validate(tmp_path / skill) == []
    assert source_files(tmp_path / skill) == source_files(SKILLS_DIR / skill)
    for name in source_files(SKILLS_DIR / skill):
        assert (tmp_path / name).read_bytes() == (SKILLS_DIR / name).read_bytes(), name


@pytest.mark.parametrize("skill", SKILLS)
def test_an_executable_script_keeps_mode_755_and_the_rest_0644(skill, tmp_path):
    """trap_check.py is 755 in git (its shebang runs it from a pre-commit hook): unpacked as 644 it would not run."""
    assert os.stat(SKILLS_DIR / skill / "scripts" / "trap_check.py").st_mode & 0o111
    (built,) = packager.build_zips([SKILLS_DIR / skill], tmp_path)
    with zipfile.ZipFile(built) as archive:
        modes = {info.filename: stat.S_IMODE(info.external_attr >> 16) for info in archive.infolist()}
    assert (modes[f"{skill}/scripts/trap_check.py"], modes[f"{skill}/SKILL.md"]) == (0o755, 0o644)


def test_same_input_same_bytes_whatever_the_clock_permissions_or_litter(built, tmp_path):
    """A copy with other timestamps, other read/write permissions, __pycache__ and a dotfile gives the same zip."""
    copy = tmp_path / "skills"
    shutil.copytree(SKILLS_DIR, copy, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in copy.rglob("*"):
        if path.is_file():
            os.utime(path, (1_700_000_000, 1_700_000_000))
            os.chmod(path, (path.stat().st_mode & 0o111) | 0o600)
    (copy / SKILLS[0] / "scripts" / "__pycache__").mkdir(exist_ok=True)
    (copy / SKILLS[0] / "scripts" / "__pycache__" / "env_check.cpython-311.pyc").write_bytes(b"litter")
    (copy / SKILLS[0] / ".DS_Store").write_bytes(b"litter")
    for rebuilt, skill in zip(packager.build_zips([copy / skill for skill in SKILLS], tmp_path / "again"), SKILLS):
        digest = hashlib.sha256(rebuilt.read_bytes()).hexdigest()
        assert digest == hashlib.sha256((built / f"{skill}.zip").read_bytes()).hexdigest(), skill


def copy_skills(tmp_path, *skills: str) -> Path:
    for skill in skills or SKILLS:
        shutil.copytree(SKILLS_DIR / skill, tmp_path / "skills" / skill, ignore=shutil.ignore_patterns("__pycache__"))
    return tmp_path / "skills"


def package(tmp_path, skills: Path, *args: str, **kwargs):
    return run_python([str(SCRIPT), "--skills-dir", str(skills), "--out", str(tmp_path / "dist"), *args], tmp_path,
                      timeout=60, **kwargs)


def assert_nothing_written(out: Path):
    assert not out.exists() or not list(out.iterdir()), "no zip and no temporary file"


def test_a_folder_without_skill_md_is_not_a_skill_and_is_skipped(tmp_path):
    """A skill is a folder holding SKILL.md, for this tool as for install_skills.py: a .cache/ or scratch folder
    among the skills was an error that stopped every build."""
    skills = copy_skills(tmp_path, SKILLS[0])
    for litter in (".cache", "__pycache__", "scratch"):
        (skills / litter).mkdir()
    result = package(tmp_path, skills)
    assert result.returncode == 0, result.stderr
    assert sorted(path.name for path in (tmp_path / "dist").iterdir()) == [f"{SKILLS[0]}.zip"]
    assert_one_line_error(package(tmp_path, skills, "--skill", "scratch"), 2, "unknown skill 'scratch'")


def test_a_name_differing_from_the_folder_is_refused(tmp_path):
    renamed = tmp_path / "skills" / "renamed"
    shutil.copytree(SKILLS_DIR / SKILLS[0], renamed)
    assert_one_line_error(package(tmp_path, tmp_path / "skills"), 1, "must equal the folder name 'renamed'")
    assert_nothing_written(tmp_path / "dist")


@pytest.mark.parametrize("kind", ["symlink out of the skill", "dangling symlink", "fifo"])
def test_a_link_or_special_file_in_a_skill_is_refused_by_name(tmp_path, kind):
    """A link out of the skill would upload its target (a secret) inside the zip; a FIFO would block the build."""
    skills = tmp_path / "skills"
    shutil.copytree(SKILLS_DIR / SKILLS[0], skills / SKILLS[0], ignore=shutil.ignore_patterns("__pycache__"))
    secret = tmp_path / "secret.txt"
    secret.write_text("token=not-for-upload\n")
    odd = skills / SKILLS[0] / "references" / "notes.md"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to(secret if kind == "symlink out of the skill" else tmp_path / "nowhere")
    said = "is not a regular file or folder" if kind == "fifo" else "is a symlink"  # what to do differs
    assert_one_line_error(package(tmp_path, skills), 2, f"{odd} {said}")
    assert not list((tmp_path / "dist").glob("*.zip")), "nothing is packaged"
    assert secret.read_text() == "token=not-for-upload\n"


@pytest.mark.parametrize("out", ["a file", "a read-only folder", "a folder under a read-only one"])
def test_an_unusable_out_is_one_error_line(tmp_path, out):
    target = {"a file": tmp_path / "dist", "a read-only folder": Path("/sys"),  # read-only even for root
              "a folder under a read-only one": Path("/sys/dist")}[out]
    if out == "a file":
        target.write_text("mine\n")
    result = run_python([str(SCRIPT), "--out", str(target)], tmp_path)
    assert_one_line_error(result, 2, f"--out '{target}'")
    assert out != "a file" or target.read_text() == "mine\n"


def test_a_prefix_of_a_flag_is_not_that_flag(tmp_path):
    result = run_python([str(SCRIPT), "--ou", str(tmp_path / "dist")], tmp_path)
    assert_one_line_error(result, 2, "unrecognized arguments: --ou")
    assert not (tmp_path / "dist").exists()


@pytest.mark.parametrize("where", ["file", "folder"])
def test_a_name_that_is_not_utf8_is_refused_by_name(tmp_path, where):
    """A zip entry name is UTF-8: a file or folder named in another encoding (b'caf\\xe9', Latin-1) cannot be
    packaged as it is, so it is named (undecodable bytes as \\x escapes) and nothing is written."""
    skills = tmp_path / "skills"
    shutil.copytree(SKILLS_DIR / SKILLS[0], skills / SKILLS[0], ignore=shutil.ignore_patterns("__pycache__"))
    odd = os.path.join(os.fsencode(skills / SKILLS[0] / "references"), b"caf\xe9")
    if where == "file":
        Path(os.fsdecode(odd)).write_text("notes\n")
    else:
        os.mkdir(odd)
    result = run_python([str(SCRIPT), "--skills-dir", str(skills), "--out", str(tmp_path / "dist")], tmp_path)
    assert_one_line_error(result, 2, f"{skills / SKILLS[0] / 'references'}/caf\\xe9 is named in bytes that are not "
                                     "UTF-8")
    assert not list((tmp_path / "dist").glob("*.zip")), "nothing is packaged"


def test_an_error_in_a_later_skill_writes_no_zip_at_all(tmp_path):
    """Every skill is checked before the first zip is written (the earlier skills' zips were left behind)."""
    skills = copy_skills(tmp_path)
    (skills / SKILLS[-1] / "references" / "notes.md").symlink_to("/etc/hostname")
    assert_one_line_error(package(tmp_path, skills), 2, f"{skills / SKILLS[-1] / 'references' / 'notes.md'} is a "
                                                        "symlink")
    assert_nothing_written(tmp_path / "dist")


@pytest.mark.parametrize("what", ["folder", "file"])
def test_what_this_user_cannot_read_is_named_never_shipped_empty(tmp_path, what):
    """chmod 000 on references/ shipped the skill without it (os.walk swallowed the error), exit 0; on a file, a
    PermissionError traceback. Run as an ordinary user: root reads anything."""
    with user_folder() as place:
        skills = copy_skills(place, SKILLS[0])
        tools = tools_for_user(place)
        give_to_user(place)
        unreadable = skills / SKILLS[0] / "references" / ("" if what == "folder" else "index.md")
        if what == "file":
            unreadable = next(path for path in unreadable.parent.iterdir() if path.is_file())
        os.chmod(unreadable, 0)
        result = run_command(as_user([sys.executable, str(tools / SCRIPT.name), "--skills-dir", str(skills), "--out",
                                      str(place / "dist")]), tmp_path, cwd=place, timeout=60)
        assert_one_line_error(result, 2, f"{unreadable} cannot be read: Permission denied")
        assert_nothing_written(place / "dist")


def test_skill_md_not_utf8_is_one_line(tmp_path):
    skills = copy_skills(tmp_path, SKILLS[0])
    skill_md = skills / SKILLS[0] / "SKILL.md"
    skill_md.write_bytes(skill_md.read_bytes().replace(b"---\n", b"---\n# caf\xe9\n", 1))
    assert_one_line_error(package(tmp_path, skills), 2, f"{skill_md} is not UTF-8")
    assert_nothing_written(tmp_path / "dist")


@pytest.mark.parametrize("where", ["skill folder", "SKILL.md"])
def test_a_skill_folder_or_skill_md_that_is_a_symlink_is_refused(tmp_path, where):
    skills = tmp_path / "skills"
    real = copy_skills(tmp_path / "elsewhere", SKILLS[0]) / SKILLS[0]
    if where == "skill folder":
        skills.mkdir()
        link = skills / SKILLS[0]
        link.symlink_to(real, target_is_directory=True)
    else:
        skills = real.parent
        link = real / "SKILL.md"
        (real / "SKILL.real.md").write_bytes(link.read_bytes())
        link.unlink()
        link.symlink_to(real / "SKILL.real.md")
    assert_one_line_error(package(tmp_path, skills), 2, f"{link} is a symlink")
    assert_nothing_written(tmp_path / "dist")


def test_out_inside_a_skill_is_refused(tmp_path):
    skills = copy_skills(tmp_path, SKILLS[0])
    out = skills / SKILLS[0] / "dist"
    result = run_python([str(SCRIPT), "--skills-dir", str(skills), "--out", str(out)], tmp_path)
    assert_one_line_error(result, 2, f"--out '{out}' is inside the skill")
    assert not out.exists()


@pytest.mark.parametrize("name, shown", [("notes\nSTATUS: ok.md", "notes\\nSTATUS: ok.md"),
                                         ("a\\b.md", "a\\b.md"), ("bell\x07.md", "bell\\x07.md")])
def test_a_name_an_extractor_would_misread_is_refused_on_one_line(tmp_path, name, shown):
    """A newline in a name made a second, fake line; a backslash is a folder separator to Windows extractors."""
    skills = copy_skills(tmp_path, SKILLS[0])
    (skills / SKILLS[0] / "references" / name).write_text("notes\n")
    result = package(tmp_path, skills)
    assert_one_line_error(result, 2, f"{skills / SKILLS[0] / 'references'}/{shown} has a backslash or a control")
    assert len(result.stderr.splitlines()) == 1
    assert_nothing_written(tmp_path / "dist")


def test_names_that_are_not_utf8_print_as_x_escapes_even_on_a_strict_stdout(tmp_path):
    """The zip path under an --out named in Latin-1 crashed print() after the work (PYTHONIOENCODING=utf-8), and a
    skill folder's own name showed as \\udce9 where the rest said \\xe9."""
    skills = copy_skills(tmp_path, SKILLS[0])
    out = os.path.join(os.fsencode(tmp_path), b"caf\xe9")
    result = run_python([str(SCRIPT), "--skills-dir", str(skills), "--out", os.fsdecode(out)], tmp_path,
                        env={"PYTHONIOENCODING": "utf-8"})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == f"{tmp_path}/caf\\xe9/{SKILLS[0]}.zip\n"
    odd = os.path.join(os.fsencode(skills), b"caf\xe9")
    os.mkdir(odd)
    shutil.copy(skills / SKILLS[0] / "SKILL.md", os.path.join(odd, b"SKILL.md"))
    assert_one_line_error(package(tmp_path, skills, env={"PYTHONIOENCODING": "utf-8"}), 2,
                          f"{skills}/caf\\xe9 is named in bytes that are not UTF-8")


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_midway_leaves_no_temporary_zip(tmp_path, signum):
    """The signal arrives (for real, sent by the process to itself) as the second zip is finished, the first one
    already written under its hidden temporary name: the hidden .<skill>-XXXX.zip was left in --out; now one line,
    exit 128 + the signal, no file."""
    skills = copy_skills(tmp_path)
    result = run_python([str(SIGNAL_AT), signum.name, "os.chmod", "2", ".zip", str(SCRIPT), "--skills-dir", str(skills),
                         "--out", str(tmp_path / "dist")], tmp_path, timeout=60)
    assert_one_line_error(result, 128 + signum, f"interrupted by {signum.name}")
    assert not list((tmp_path / "dist").iterdir())


def test_out_inside_a_skill_not_being_packaged_is_refused(tmp_path):
    """--skill A --out <B>/dist: the zips would go into the next build and install of B, packaged or not."""
    first, second = SKILLS[:2]
    skills = copy_skills(tmp_path, first, second)
    out = skills / second / "dist"
    result = run_python([str(SCRIPT), "--skills-dir", str(skills), "--skill", first, "--out", str(out)], tmp_path)
    assert_one_line_error(result, 2, f"--out '{out}' is inside the skill")
    assert not out.exists()
