"""Each skill's own copy of trap_check.py as a user runs it (tests/test_trap_check.py reads the rule engine through
one copy): a trap is a failed check and exit 1, a clean file exit 0, a file that does not parse or no path at all
exit 2. A bug in either copy fails here (issue #24: shared code was tested through one copy)."""

from __future__ import annotations

import pytest

from support.harness import SKILLS_DIR, assert_one_line_error, run_python

TRAPS = {  # skill: (a file with one trap, the rule it trips)
    "transformers-training": ('TrainingArguments(output_dir="o", evaluation_strategy="steps")\n',
                              "removed-evaluation_strategy"),
    "composer-training": ("Trainer(model=m, optimizers=o, max_duration='2iter')\n", "duration-unit"),
}


@pytest.mark.parametrize("skill", sorted(TRAPS))
def test_each_copy_fails_a_trap_passes_a_clean_file_and_refuses_what_it_cannot_read(skill, tmp_path):
    checker = SKILLS_DIR / skill / "scripts" / "trap_check.py"
    source, rule = TRAPS[skill]
    (tmp_path / "train.py").write_text(source)
    trapped = run_python([str(checker), str(tmp_path / "train.py"), "--json"], tmp_path)
    assert_one_line_error(trapped, 1, f"{rule}@")
    assert [check["ok"] for check in trapped.json["checks"]] == [False]
    (tmp_path / "train.py").write_text("print('nothing to find')\n")
    clean = run_python([str(checker), str(tmp_path / "train.py"), "--json"], tmp_path)
    assert clean.returncode == 0 and clean.json["checks"][0]["name"] == f"clean@{tmp_path / 'train.py'}", clean.stderr
    (tmp_path / "broken.py").write_text("def f(:\n")
    assert_one_line_error(run_python([str(checker), str(tmp_path)], tmp_path), 2, "broken.py:1: does not parse")
    assert_one_line_error(run_python([str(checker)], tmp_path), 2, "give the Python files")
