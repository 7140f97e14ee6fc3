"""The mutation drill (scripts/mutation_drill.py, `make mutation-drill`, outside CI): its table stays current and
covers every script and tool, and the drill tells a caught mutation from a survivor without touching the tree."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

import mutation_drill  # scripts/ is on sys.path: support.manifest puts it there
from support.harness import REPO, SKILLS_DIR, run_python

DRILL = REPO / "scripts" / "mutation_drill.py"


def test_every_old_text_is_found_once_in_every_copy_and_every_test_file_exists():
    """A change that moves a row's text fails here, in CI, rather than months later in the drill: re-anchor it."""
    mutations = mutation_drill.read_table(mutation_drill.TABLE, REPO)
    assert len({mutation.id.split("@")[0] for mutation in mutations}) >= 40


def test_the_table_reaches_every_script_of_every_skill_and_every_bundle_tool():
    mutated = {mutation.file for mutation in mutation_drill.read_table(mutation_drill.TABLE, REPO)}
    scripts = {str(path.relative_to(REPO)) for path in SKILLS_DIR.glob("*/scripts/*.py")
               if not path.name.startswith("_")}  # _*.py: modules (those with logic have rows of their own)
    tools = {str(path.relative_to(REPO)) for path in (REPO / "scripts").glob("*.py")
             if path != DRILL and not path.name.startswith("bench_")}  # bench_*: timings for people, judged by none
    assert scripts | tools <= mutated, sorted(scripts | tools - mutated)


CALC = "def clamp(value, low, high):\n    return max(low, min(value, high))\n\n\ndef double(value):\n    return 2 * value\n"
CALC_TEST = textwrap.dedent("""
    from calc import clamp, double

    def test_clamp():
        assert clamp(5, 0, 3) == 3 and clamp(-1, 0, 3) == 0

    def test_double_runs():
        double(2)  # asserts nothing: a wrong result passes
""")
TABLE = textwrap.dedent("""
    [[mutation]]
    id = "clamp-high-ignored"
    file = "calc.py"
    old = '''min(value, high)'''
    new = '''value'''
    tests = ["test_calc.py::test_clamp"]
    why = "caught"

    [[mutation]]
    id = "double-wrong"
    file = "calc.py"
    old = '''2 * value'''
    new = '''3 * value'''
    tests = ["test_calc.py::test_double_runs"]
    why = "survives: the test asserts nothing"
""")


@pytest.fixture
def project(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    (root / "calc.py").write_text(CALC)
    (root / "test_calc.py").write_text(CALC_TEST)
    (root / "mutations.toml").write_text(TABLE)
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def test_a_caught_and_a_surviving_mutation_are_told_apart_and_the_tree_is_untouched(project, tmp_path):
    mutations = mutation_drill.read_table(project / "mutations.toml", project)
    clone = mutation_drill.copy_tree(project, tmp_path / "clone")
    outcomes = mutation_drill.drill(mutations, [clone], sys.executable, 120, report=lambda outcome: None)
    assert [(outcome.id, outcome.result) for outcome in outcomes] == [("clamp-high-ignored", "caught"),
                                                                       ("double-wrong", "survived")]
    assert (project / "calc.py").read_text() == CALC and (clone / "calc.py").read_text() == CALC


def test_a_stale_row_is_refused_before_anything_runs(project):
    (project / "calc.py").write_text(CALC.replace("2 * value", "value + value"))
    with pytest.raises(mutation_drill.DrillError, match=r"double-wrong: the old text is in calc.py 0 times"):
        mutation_drill.read_table(project / "mutations.toml", project)


def test_an_unknown_id_is_one_error_line_and_exit_2(tmp_path):
    result = run_python([str(DRILL), "--only", "no-such-mutation"], tmp_path)
    assert result.returncode == 2 and result.stderr_lines == [
        "mutation_drill.py: error: --only: no mutation no-such-mutation in the table"], result.stderr
