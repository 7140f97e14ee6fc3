"""What a rule of the trap checker is: its stable code, kebab-case name, severity (and why), what goes wrong, the fix,
the section to read and its examples. The rules themselves sit in their family modules, next to the code that finds
them; _trap_families assembles the table. A module of trap_check.py (synced from skill_common/ into every skill's
scripts/).

Severity: an ERROR is a trap that on the pinned versions raises, silently gives wrong numbers or loses work: it fails
the check (exit 1). A WARNING is a policy or context matter (a network lookup where the network may be reachable, a
default said out loud): listed, exit 0 unless --strict. Codes are stable: a rule removed leaves its code unused.
"""

from dataclasses import dataclass, field

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Rule:
    code: str  # stable: TF001... for transformers-training, CP001... for composer-training; never reused
    id: str  # the kebab-case name, as findings are named (RULE@PATH:LINE)
    skill: str
    severity: str  # ERROR or WARNING
    what: str  # what goes wrong, one sentence
    fix: str
    see: str  # relative to the skill folder, with the section's #anchor
    why: str = ""  # why this severity
    # sources (name -> text) that trip the rule, and the same fixed, which trip nothing (tests/test_trap_check.py runs
    # both for every rule): the rule's examples, next to it
    trips: dict = field(default_factory=dict)
    clean: dict = field(default_factory=dict)


TF, CP = "transformers-training", "composer-training"
# sections and the arguments of an example, shared by the families
TABLE = "SKILL.md#what-5x-changed-and-traps-the-library-does-not-warn-about"
PREFLIGHT = "SKILL.md#preflight-checks"
ARGS = 'TrainingArguments(output_dir="o", {})'  # an example's arguments
