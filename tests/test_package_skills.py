"""scripts/package_skills.py: one upload-ready zip per skill, byte-for-byte reproducible, that unpacks to a skill
folder passing the spec gate."""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import stat
import zipfile
from pathlib import Path

import pytest
import skills_ref

from support.harness import REPO, SKILLS_DIR, assert_one_line_error, run_python, skill_dirs

SCRIPT = REPO / "scripts" / "package_skills.py"
spec = importlib.util.spec_from_file_location("package_skills", SCRIPT)
packager = importlib.util.module_from_spec(spec)
spec.loader.exec_module(packager)

SKILLS = [path.name for path in skill_dirs()]


def source_files(skill) -> list[str]:
    return sorted(str(path.relative_to(skill.parent)) for path in skill.rglob("*")
                  if path.is_file() and not any(packager.ignored(part) for part in path.relative_to(skill).parts))


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
    for skill in SKILLS:
        rebuilt = packager.build_zip(copy / skill, tmp_path / "again")
        digest = hashlib.sha256(rebuilt.read_bytes()).hexdigest()
        assert digest == hashlib.sha256((built / f"{skill}.zip").read_bytes()).hexdigest(), skill


def test_a_folder_that_is_not_a_skill_is_refused(tmp_path):
    (tmp_path / "skills" / "not-a-skill").mkdir(parents=True)
    result = run_python([str(SCRIPT), "--skills-dir", str(tmp_path / "skills"), "--out", str(tmp_path / "dist")],
                        tmp_path)
    assert result.returncode == 1 and "has no SKILL.md" in result.stderr and "Traceback" not in result.stderr
    renamed = tmp_path / "skills" / "renamed"
    shutil.copytree(SKILLS_DIR / SKILLS[0], renamed)
    with pytest.raises(packager.PackageError, match="must equal the folder name 'renamed'"):
        packager.build_zip(renamed, tmp_path / "dist")
    assert not (tmp_path / "dist" / "renamed.zip").exists()


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
    result = run_python([str(SCRIPT), "--skills-dir", str(skills), "--out", str(tmp_path / "dist")], tmp_path,
                        timeout=60)
    assert_one_line_error(result, 2, f"{odd} is ")
    assert not list((tmp_path / "dist").glob("*.zip")), "nothing is packaged"
    assert secret.read_text() == "token=not-for-upload\n"


@pytest.mark.parametrize("out", ["a file", "a read-only folder", "a folder under a read-only one"])
def test_an_unusable_out_is_one_error_line(tmp_path, out):
    target = {"a file": tmp_path / "dist", "a read-only folder": Path("/sys"),  # read-only even for root
              "a folder under a read-only one": Path("/sys/dist")}[out]
    if out == "a file":
        target.write_text("mine\n")
    result = run_python([str(SCRIPT), "--out", str(target)], tmp_path)
    assert_one_line_error(result, 2, f"--out {str(target)!r}")
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
