"""scripts/install_skills.py: install, list and uninstall the skills in temporary agent homes and projects, and
never overwrite or remove a skill that the script did not install."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import skills_ref
from skills_ref.parser import parse_frontmatter

from support import manifest
from support.harness import REPO, SKILLS_DIR, isolated_env, run_command, run_python, skill_dirs
from support.unprivileged import as_user, give_to_user, tools_for_user, user_folder

import skill_tree  # noqa: E402  (scripts/, on sys.path through support.manifest, as the tools have it)

SCRIPT = REPO / "scripts" / "install_skills.py"
spec = importlib.util.spec_from_file_location("install_skills", SCRIPT)
installer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(installer)

SKILLS = [path.name for path in skill_dirs()]
SIGNAL_AT = REPO / "tests" / "support" / "signal_at.py"
ROOTS = {"claude": "home/.claude/skills", "claude-project": "project/.claude/skills",
         "agents": "home/.agents/skills", "agents-project": "project/.agents/skills"}


@pytest.fixture
def places(tmp_path):
    (tmp_path / "home").mkdir()
    (tmp_path / "project").mkdir()
    return tmp_path


@pytest.fixture
def cli(places):
    """cli("install", "--agent", "claude", ...) -> (exit code, stdout, stderr): the command run as users run it,
    in the temporary home and project; the timeout turns a hang (a FIFO read) into a failure."""

    def run(command: str, *args: str, skills_dir=SKILLS_DIR):
        result = run_python([str(SCRIPT), command, "--home", str(places / "home"), "--project",
                             str(places / "project"), "--skills-dir", str(skills_dir), *args], places, timeout=30)
        return result.returncode, result.stdout, result.stderr

    return run


def tree_digest(folder) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def states(cli, *args: str) -> dict[tuple[str, str], str]:
    code, out, _ = cli("list", "--json", *args)
    assert code == 0
    return {(row["agent"], row["skill"]): row["state"] for row in json.loads(out)}


def assert_refused(result, code: int, fragment: str):
    exit_code, _, err = result
    assert exit_code == code and "Traceback" not in err, err
    lines = [line for line in err.splitlines() if ": error: " in line]
    assert len(lines) == 1 and fragment in lines[0], err


def test_the_bundle_has_skills_to_install():
    assert SKILLS and set(SKILLS) == set(manifest.SKILLS)


def test_copy_into_every_agent_then_uninstall(cli, places):
    code, out, err = cli("install", "--agent", "all")
    assert code == 0, err
    assert len(out.splitlines()) == len(ROOTS) * len(SKILLS)
    for root in ROOTS.values():
        for skill in SKILLS:
            installed = places / root / skill
            source_files = tree_digest(SKILLS_DIR / skill)
            copied = tree_digest(installed)
            assert copied.pop(installer.MARKER)
            assert copied == {name: digest for name, digest in source_files.items()
                              if not any(skill_tree.ignored(part) for part in Path(name).parts)}
            assert skills_ref.validate(installed) == [], "an installed copy is still a valid skill"
    assert set(states(cli).values()) == {"copy"}

    code, out, err = cli("uninstall", "--agent", "all")
    assert code == 0, err
    assert set(states(cli).values()) == {"absent"}
    assert all((places / root).is_dir() and not any((places / root).iterdir()) for root in ROOTS.values())


def test_link_mode_points_into_the_bundle_and_uninstall_removes_only_the_link(cli, places):
    before = tree_digest(SKILLS_DIR / SKILLS[0])
    assert cli("install", "--agent", "agents", "--mode", "link", "--skill", SKILLS[0])[0] == 0
    link = places / ROOTS["agents"] / SKILLS[0]
    assert link.is_symlink() and link.resolve() == (SKILLS_DIR / SKILLS[0]).resolve()
    assert states(cli, "--agent", "agents")[("agents", SKILLS[0])] == "link"
    assert cli("uninstall", "--agent", "agents", "--skill", SKILLS[0])[0] == 0
    assert not link.exists() and not link.is_symlink()
    assert tree_digest(SKILLS_DIR / SKILLS[0]) == before, "uninstalling a link leaves the bundle alone"


def test_a_different_skill_of_the_same_name_is_never_overwritten_or_removed(cli, places):
    foreign = places / ROOTS["claude"] / SKILLS[0]
    foreign.mkdir(parents=True)
    (foreign / "SKILL.md").write_text("---\nname: mine\ndescription: someone else's\n---\n")
    assert_refused(cli("install", "--agent", "claude"), 1, "pass --force to replace it")
    assert (foreign / "SKILL.md").read_text().startswith("---\nname: mine")
    assert not (places / ROOTS["claude"] / SKILLS[1]).exists(), "a refusal changes nothing, not even other skills"

    assert cli("install", "--agent", "claude", "--skill", SKILLS[1])[0] == 0, "no conflict for the other skill"
    result = cli("uninstall", "--agent", "claude", "--force")
    assert_refused(result, 1, "left alone: claude: ")
    assert "did not install" in result[2] and f"removed {SKILLS[1]}" in result[1]
    assert (foreign / "SKILL.md").exists() and not (places / ROOTS["claude"] / SKILLS[1]).exists(), \
        "uninstall removes what it installed and never the foreign skill, even with --force"

    elsewhere = places / ROOTS["claude-project"] / SKILLS[0]
    elsewhere.parent.mkdir(parents=True)
    elsewhere.symlink_to(places / "home", target_is_directory=True)
    assert_refused(cli("install", "--agent", "claude-project"), 1, "symlink to")
    assert_refused(cli("uninstall", "--agent", "claude-project"), 1, "symlink to")
    assert elsewhere.is_symlink()

    code, out, err = cli("install", "--agent", "claude", "--force")
    assert code == 0 and "replaced a different skill" in out, err
    assert states(cli, "--agent", "claude")[("claude", SKILLS[0])] == "copy"


def test_a_copy_edited_since_install_is_kept_unless_forced(cli, places):
    assert cli("install", "--agent", "claude", "--skill", SKILLS[0])[0] == 0
    installed = places / ROOTS["claude"] / SKILLS[0]
    (installed / "SKILL.md").write_text((installed / "SKILL.md").read_text() + "\nmy note\n")
    assert states(cli, "--agent", "claude")[("claude", SKILLS[0])] == "modified"
    assert_refused(cli("uninstall", "--agent", "claude", "--skill", SKILLS[0]), 1, "changed since: SKILL.md")
    assert_refused(cli("install", "--agent", "claude", "--skill", SKILLS[0]), 1, "changed since: SKILL.md")
    assert "my note" in (installed / "SKILL.md").read_text()
    assert cli("uninstall", "--agent", "claude", "--skill", SKILLS[0], "--force")[0] == 0
    assert not installed.exists()


@pytest.mark.parametrize("added, named", [
    (".notes.md", ".notes.md"),
    (".git/HEAD", ".git/"),
    (".venv/", ".venv/"),
    ("scripts/__pycache__/env_check.cpython-311.pyc", "scripts/__pycache__/"),
])
def test_anything_added_to_a_copy_makes_it_modified_and_is_kept(cli, places, added, named):
    """Hidden files and folders are the user's too: reinstall and uninstall refuse to delete them unless forced."""
    assert cli("install", "--agent", "claude", "--skill", SKILLS[0])[0] == 0
    installed = places / ROOTS["claude"] / SKILLS[0]
    path = installed / added
    path.parent.mkdir(parents=True, exist_ok=True)
    if added.endswith("/"):
        path.mkdir()
    else:
        path.write_text("mine\n")
    before = tree_digest(installed)
    _, out, _ = cli("list", "--json", "--agent", "claude", "--skill", SKILLS[0])
    [row] = json.loads(out)
    assert row["state"] == "modified" and f"added since: {named}" in row["detail"], row
    assert_refused(cli("install", "--agent", "claude", "--skill", SKILLS[0]), 1, f"added since: {named}")
    assert_refused(cli("uninstall", "--agent", "claude", "--skill", SKILLS[0]), 1, f"added since: {named}")
    assert path.exists() and tree_digest(installed) == before
    assert cli("uninstall", "--agent", "claude", "--skill", SKILLS[0], "--force")[0] == 0
    assert not installed.exists()


@pytest.mark.parametrize("kind", ["dangling symlink", "symlink out of the copy", "fifo"])
def test_a_link_or_fifo_in_a_copy_is_named_never_followed_or_read(cli, places, kind):
    assert cli("install", "--agent", "claude", "--skill", SKILLS[0])[0] == 0
    installed = places / ROOTS["claude"] / SKILLS[0]
    outside = places / "outside.txt"
    outside.write_text("not the skill's\n")
    odd = installed / "scripts" / "odd"
    if kind == "fifo":
        os.mkfifo(odd)
    else:
        odd.symlink_to(outside if kind == "symlink out of the copy" else places / "nowhere")
    assert states(cli, "--agent", "claude")[("claude", SKILLS[0])] == "modified"
    assert_refused(cli("install", "--agent", "claude", "--skill", SKILLS[0]), 1, "added since: scripts/odd")
    assert_refused(cli("uninstall", "--agent", "claude", "--skill", SKILLS[0]), 1, "added since: scripts/odd")
    assert os.path.lexists(odd)
    assert cli("uninstall", "--agent", "claude", "--skill", SKILLS[0], "--force")[0] == 0
    assert not installed.exists() and outside.read_text() == "not the skill's\n", "a link is removed, not followed"


@pytest.mark.parametrize("blocker", ["file", "dangling symlink"])
def test_a_file_where_the_skills_folder_goes_is_one_error_line(cli, places, blocker):
    claude = places / "home" / ".claude"
    if blocker == "file":
        claude.write_text("mine\n")
    else:
        claude.symlink_to(places / "nowhere")
    assert_refused(cli("install", "--agent", "all"), 2, f"{claude} is not a folder")
    assert os.path.lexists(claude) and (blocker != "file" or claude.read_text() == "mine\n")
    assert not (places / "home" / ".agents").exists(), "checked before anything is installed"


def test_reinstalling_our_own_install_updates_it(cli, places):
    assert cli("install", "--agent", "claude", "--skill", SKILLS[1])[0] == 0
    code, out, _ = cli("install", "--agent", "claude", "--skill", SKILLS[1], "--mode", "link")
    assert code == 0 and "updated" in out
    assert (places / ROOTS["claude"] / SKILLS[1]).is_symlink()


def test_invoke_only_marks_the_copy_and_never_the_source(cli, places):
    source = SKILLS_DIR / SKILLS[0] / "SKILL.md"
    source_bytes = source.read_bytes()
    code, out, err = cli("install", "--agent", "claude-project", "--skill", SKILLS[0], "--invoke-only")
    assert code == 0 and "invoke-only" in out, err
    copy = places / ROOTS["claude-project"] / SKILLS[0] / "SKILL.md"
    copied_frontmatter, copied_body = parse_frontmatter(copy.read_text())
    source_frontmatter, source_body = parse_frontmatter(source_bytes.decode())
    assert copied_frontmatter.pop("disable-model-invocation") == "true"
    assert copied_frontmatter == source_frontmatter and copied_body == source_body
    assert source.read_bytes() == source_bytes
    # The key is Claude Code's, not the Agent Skills spec's: that is why only the installed copy carries it.
    assert any("disable-model-invocation" in error for error in skills_ref.validate(copy.parent))
    assert states(cli, "--agent", "claude-project")[("claude-project", SKILLS[0])] == "copy"


def test_invoke_only_refuses_a_symlink_and_agents_that_ignore_it(cli, places):
    assert_refused(cli("install", "--agent", "claude", "--mode", "link", "--invoke-only"), 2, "use --mode copy")
    assert_refused(cli("install", "--agent", "agents", "--invoke-only"), 2, "Claude Code-only key")
    assert not (places / "home" / ".claude").exists() and not (places / "home" / ".agents").exists()


def test_the_bundle_source_itself_is_never_replaced(cli, places, tmp_path):
    bundle = tmp_path / "bundle-skills"
    shutil.copytree(SKILLS_DIR, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    before = tree_digest(bundle)
    (places / "home" / ".claude").mkdir()
    (places / "home" / ".claude" / "skills").symlink_to(bundle, target_is_directory=True)
    assert_refused(cli("install", "--agent", "claude", "--force", skills_dir=bundle), 1, "own skill folder")
    assert_refused(cli("uninstall", "--agent", "claude", "--force", skills_dir=bundle), 1, "own skill folder")
    assert tree_digest(bundle) == before


def test_usage_errors_are_one_line(cli, places):
    assert_refused(cli("install", "--skill", "no-such-skill"), 2, "unknown skill 'no-such-skill'")
    assert_refused(cli("install", "--agent", "cursor"), 2, "invalid choice")
    assert_refused(cli("install", "--home", str(places / "missing")), 2, "is not a directory")
    # A prefix of a flag is not that flag: `--for` must not mean --force, nor `--js` --json.
    assert_refused(cli("install", "--for"), 2, "unrecognized arguments: --for")
    assert_refused(cli("list", "--js"), 2, "unrecognized arguments: --js")
    assert not (places / "home" / ".claude").exists()
    read_only_home = Path("/sys")  # read-only even for root
    assert_refused(cli("install", "--home", str(read_only_home)), 2, f"{read_only_home / '.claude'}")


def test_as_a_command_it_installs_into_HOME(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    helped = run_python([str(SCRIPT), "--help"], tmp_path)
    assert helped.returncode == 0 and "example:\n  python scripts/install_skills.py install" in helped.stdout
    installed = run_python([str(SCRIPT), "install", "--skill", SKILLS[1]], tmp_path, env={"HOME": str(home)})
    assert installed.returncode == 0, installed.stderr
    assert (home / ".claude" / "skills" / SKILLS[1] / "SKILL.md").is_file()


def start(places, command: str, *args: str) -> subprocess.Popen:
    """The command started as users start it, in the temporary home and project, without waiting for it; --wait
    240 so that on a loaded machine a run waiting its turn is never refused (a hang guard, not a measure)."""
    return subprocess.Popen([sys.executable, str(SCRIPT), command, "--home", str(places / "home"), "--project",
                             str(places / "project"), "--wait", "240", *args], cwd=places, env=isolated_env(places),
                            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(process: subprocess.Popen) -> tuple[int, str, str]:
    out, err = process.communicate(timeout=280)  # a hang guard, not a measure of speed
    return process.returncode, out, err


@contextlib.contextmanager
def held(folder: Path):
    """Hold the lock a run of install_skills.py takes on a skills folder: flock on the folder itself."""
    folder.mkdir(parents=True, exist_ok=True)
    handle = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)


def assert_only_skills_in(root: Path, skills: list[str]):
    """No staging folder, lock file or half a copy is left: the skills folder holds exactly these skills."""
    assert sorted(path.name for path in root.iterdir()) == sorted(skills)


def test_four_installs_at_once_all_succeed(cli, places):
    """Without a lock, 1 in 5 of these lost the race (Directory not empty, No such file, a false changed since)."""
    runs = [start(places, "install", "--agent", "claude") for _ in range(4)]
    for code, out, err in map(finish, runs):
        assert code == 0 and "Traceback" not in err, err
    assert set(states(cli, "--agent", "claude").values()) == {"copy"}
    assert_only_skills_in(places / ROOTS["claude"], SKILLS)


def test_installs_and_uninstalls_at_once_take_turns(cli, places):
    assert cli("install", "--agent", "claude")[0] == 0
    runs = [start(places, command, "--agent", "claude") for command in ("uninstall", "install") * 3]
    for code, out, err in map(finish, runs):
        assert code == 0 and "Traceback" not in err, err
    final = set(states(cli, "--agent", "claude").values())
    assert final in ({"copy"}, {"absent"}), "whichever ran last, every skill is whole or gone"
    assert_only_skills_in(places / ROOTS["claude"], SKILLS if final == {"copy"} else [])


@pytest.mark.parametrize("command", ["install", "uninstall"])
def test_runs_wait_for_the_one_holding_the_skills_folder_then_all_succeed(cli, places, command):
    """Deterministic: the test holds the lock, each of four runs says it waits (and changes nothing meanwhile), and
    once the lock is let go all four finish, one at a time."""
    root = places / ROOTS["claude"]
    assert cli("install", "--agent", "claude")[0] == 0
    before = tree_digest(root)
    with held(root):
        runs = [start(places, command, "--agent", "claude") for _ in range(4)]
        for run in runs:
            assert "waiting for another install_skills.py run" in run.stderr.readline()
        assert tree_digest(root) == before, "nothing changes while another run holds the folder"
    for code, out, err in map(finish, runs):
        assert code == 0 and "Traceback" not in err, err
    assert set(states(cli, "--agent", "claude").values()) == {"copy" if command == "install" else "absent"}


@pytest.mark.parametrize("command", ["install", "uninstall", "list"])
def test_a_folder_held_past_wait_is_one_line_exit_3_and_nothing_changes(cli, places, command):
    """list waits too: read during another run's swap, a whole install looked changed or gone."""
    root = places / ROOTS["claude"]
    if command != "install":
        assert cli("install", "--agent", "claude")[0] == 0
    before = tree_digest(root) if root.exists() else {}
    with held(root):
        assert_refused(cli(command, "--agent", "claude", "--wait", "0"), 3,
                       f"another install_skills.py run is using {root}")
    assert tree_digest(root) == before


@pytest.mark.parametrize("command, event, nth", [
    ("install", "shutil.copyfile", 3),  # building the new copy
    ("install", "os.rename", 1),  # moving the old copy aside
    ("install", "os.rename", 2),  # moving the new copy in
    ("install", "os.remove", 4),  # deleting the old copy (it was deleted in place: half a skill, "changed since")
    ("uninstall", "os.remove", 4),
])
def test_a_run_killed_midway_leaves_the_skill_whole_or_absent_and_the_next_run_cleans_up(cli, places, command, event,
                                                                                          nth):
    """A real SIGKILL (tests/support/signal_at.py: the process kills itself just before the Nth such call) at each
    step of a reinstall or an uninstall of an installed copy."""
    root = places / ROOTS["claude"]
    assert cli("install", "--agent", "claude", "--skill", SKILLS[0])[0] == 0
    killed = run_python([str(SIGNAL_AT), "SIGKILL", event, str(nth), "", str(SCRIPT), command, "--home",
                         str(places / "home"), "--agent", "claude", "--skill", SKILLS[0]], places, timeout=60)
    assert killed.returncode == -9, (killed.returncode, killed.stderr)
    assert states(cli, "--agent", "claude", "--skill", SKILLS[0])[("claude", SKILLS[0])] in ("copy", "absent")
    code, out, err = cli(command, "--agent", "claude", "--skill", SKILLS[0])
    assert code == 0 and "Traceback" not in err, err
    assert_only_skills_in(root, [SKILLS[0]] if command == "install" else [])
    assert states(cli, "--agent", "claude", "--skill", SKILLS[0])[("claude", SKILLS[0])] == \
        ("copy" if command == "install" else "absent")


def test_staging_folders_of_killed_runs_are_removed_and_nothing_else(cli, places):
    """tempfile.mkdtemp staging folders of earlier versions (.<skill>-XXXXXXXX holding only <skill>/) and this
    version's .<skill>.training-skills-new/-old go; hidden folders that are not named or filled so stay."""
    root = places / ROOTS["claude"]
    leftovers = [f".{SKILLS[0]}-k3x_9q2a/{SKILLS[0]}", f".{SKILLS[0]}.training-skills-new",
                 f".{SKILLS[1]}.training-skills-old"]
    kept = [".notes", f".{SKILLS[0]}-notes", ".other-skill-k3x_9q2a", f".{SKILLS[0]}-settings"]
    for name in leftovers + kept:
        (root / name / "scripts").mkdir(parents=True)
        (root / name / "scripts" / "half.py").write_text("half\n")
    leftovers[0] = f".{SKILLS[0]}-k3x_9q2a"
    code, out, err = cli("install", "--agent", "claude", "--skill", SKILLS[0])
    assert code == 0, err
    assert all(f"removed {root / name}, left by an interrupted run" in err for name in leftovers), err
    assert sorted(path.name for path in root.iterdir()) == sorted([SKILLS[0], *kept])


def test_a_partial_install_says_what_was_done_and_names_the_skills_folder(tmp_path):
    """One of two agents' skills folders read-only: the installs into the other one are listed, and the error
    names the read-only skills folder (it named an internal staging path). Run as an ordinary user: root writes
    anywhere."""
    with user_folder() as home:
        (home / ".claude" / "skills").mkdir(parents=True)
        tools = tools_for_user(home)
        give_to_user(home)
        os.chmod(home / ".claude" / "skills", 0o555)
        result = run_command(as_user([sys.executable, str(tools / SCRIPT.name), "install", "--home", str(home), "--agent",
                                      "agents", "--agent", "claude", "--skill", SKILLS[0]]), tmp_path, cwd=home)
        assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
        assert result.stdout == f"agents: installed {SKILLS[0]} -> {home / '.agents/skills' / SKILLS[0]} (copy)\n"
        assert result.stderr_lines == [f"install_skills.py: error: claude: could not install {SKILLS[0]} into "
                                       f"{home / '.claude/skills'}: Permission denied; the installs listed above "
                                       "were done"]
        assert not any((home / ".claude" / "skills").iterdir())


def broken_bundle(tmp_path, kind: str) -> tuple[Path, Path]:
    """A copy of the bundle with one thing package_skills.py refuses: (skills folder, the path named)."""
    bundle = tmp_path / "bundle"
    shutil.copytree(SKILLS_DIR, bundle, ignore=shutil.ignore_patterns("__pycache__"))
    skill = bundle / SKILLS[-1]
    odd = skill / "references" / "odd"
    if kind == "file symlink":
        odd.symlink_to("/etc/hostname")
    elif kind == "folder symlink":
        odd.symlink_to(tmp_path, target_is_directory=True)
    elif kind == "fifo":
        os.mkfifo(odd)
    elif kind == "backslash":
        odd = skill / "references" / "a\\b.md"
        odd.write_text("notes\n")
    elif kind == "skill folder symlink":
        odd = skill
        shutil.move(skill, tmp_path / "real")
        skill.symlink_to(tmp_path / "real", target_is_directory=True)
    else:  # SKILL.md not UTF-8
        odd = skill / "SKILL.md"
        odd.write_bytes(odd.read_bytes().replace(b"---\n", b"---\n# caf\xe9\n", 1))
    return bundle, odd


@pytest.mark.parametrize("kind", ["file symlink", "folder symlink", "fifo", "backslash", "skill folder symlink",
                                  "SKILL.md not UTF-8"])
@pytest.mark.parametrize("mode", ["copy", "invoke-only", "link"])
def test_what_package_skills_refuses_install_refuses_by_name_before_changing_anything(cli, places, kind, mode):
    """A file link's target was copied into the install (/etc/hostname), a folder link dropped in silence, a FIFO
    stopped the run midway; a SKILL.md not UTF-8 was a traceback under --invoke-only."""
    bundle, odd = broken_bundle(places, kind)
    flags = {"copy": [], "invoke-only": ["--invoke-only"], "link": ["--mode", "link"]}[mode]
    what = "is not UTF-8" if kind == "SKILL.md not UTF-8" else "has a backslash" if kind == "backslash" else "is "
    assert_refused(cli("install", "--agent", "claude", *flags, skills_dir=bundle), 2, f"{odd} {what}")
    assert not (places / "home" / ".claude").exists(), "nothing changed, not even the skills that are fine"


@pytest.mark.parametrize("wait", ["nan", "-5", "inf", "soon"])
def test_wait_takes_only_a_finite_number_of_seconds(cli, places, wait):
    """--wait nan waited forever, -5 was taken."""
    assert_refused(cli("install", "--agent", "claude", "--wait", wait), 2,
                   f"argument --wait: expected a number of seconds >= 0, not '{wait}'")
    assert not (places / "home" / ".claude").exists()


def test_a_home_not_named_in_utf8_is_printed_escaped_even_on_a_strict_stdout(tmp_path):
    home = Path(os.fsdecode(os.path.join(os.fsencode(tmp_path), b"caf\xe9")))
    home.mkdir()
    result = run_python([str(SCRIPT), "install", "--home", str(home), "--skill", SKILLS[0]], tmp_path,
                        env={"PYTHONIOENCODING": "utf-8"})
    assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
    assert result.stdout == f"claude: installed {SKILLS[0]} -> {tmp_path}/caf\\xe9/.claude/skills/{SKILLS[0]} (copy)\n"


def test_folders_without_skill_md_are_not_skills(cli, places, tmp_path):
    """The same rule as package_skills.py: .cache/ or scratch/ beside the skills is skipped, not installed."""
    bundle = tmp_path / "bundle"
    shutil.copytree(SKILLS_DIR / SKILLS[0], bundle / SKILLS[0], ignore=shutil.ignore_patterns("__pycache__"))
    for litter in (".cache", "scratch"):
        (bundle / litter).mkdir()
    code, out, err = cli("install", "--agent", "claude", skills_dir=bundle)
    assert code == 0, err
    assert_only_skills_in(places / ROOTS["claude"], [SKILLS[0]])
