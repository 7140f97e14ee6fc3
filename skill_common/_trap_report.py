"""How trap_check.py reports what it found, as linters do: which rules run (--select / --ignore, codes or names),
inline suppression (`# trap-check: ignore[name-or-code]`), severity (an error fails the run; a warning fails it only
under --strict), --list-rules, and the output formats (text lines on stderr, GitHub workflow annotations on stdout,
the contract's --json with each finding's code and severity). A module of trap_check.py, synced like it.
"""

import ast
import bisect
import re

from _trap_families import RULES
from _trap_rules import ERROR, Rule
from smoke_contract import EXIT_USAGE, SmokeError, log

# `# trap-check: ignore[pad-token-eos, CP009]` on the finding's line, or alone on the line above it (Python or shell);
# in a Python statement of several lines, on any of its lines or alone above its first. Any case (TRAP-CHECK: IGNORE)
SUPPRESSION = re.compile(r"#\s*trap-check:\s*ignore\[([^\]]*)\]", re.IGNORECASE)
CODE_PREFIX = re.compile(r"^[A-Z]{2}\d{0,3}$")  # TF, CP0, TF01: every code that starts so


def chosen_rules(skill: str, select: list[str] | None, ignore: list[str] | None) -> dict[str, Rule]:
    """name -> rule for the rules of ``skill`` that run: those --select names (all when it is not given) less those
    --ignore names. A word that names no rule of either skill, or only rules of the other skill, is a usage error: a
    typo must not switch a rule off, and CP001 given to the transformers checker would run nothing."""
    def named(words: list[str] | None, default: set[str]) -> set[str]:
        if words is None:
            return default
        chosen, unknown = set(), []
        for word in (part.strip() for text in words for part in text.split(",") if part.strip()):
            matched = [rule for rule in RULES if word in (rule.id, rule.code)
                       or (CODE_PREFIX.match(word) and rule.code.startswith(word))]
            if matched and all(rule.skill != skill for rule in matched):
                raise SmokeError(f"{word!r} names rules of {matched[0].skill}, not of {skill}: run "
                                 f"skills/{matched[0].skill}/scripts/trap_check.py for them", EXIT_USAGE)
            chosen |= {rule.id for rule in matched}
            if not matched:
                unknown.append(word)
        if unknown:
            raise SmokeError(f"no rule is named {', '.join(map(repr, unknown))}: give codes or names from "
                             "--list-rules (a code prefix such as TF or CP0 selects every code it starts)", EXIT_USAGE)
        return chosen

    everything = {rule.id for rule in RULES}
    kept = named(select, everything) - named(ignore, set())
    return {rule.id: rule for rule in RULES if rule.skill == skill and rule.id in kept}


def statement_spans(text: str) -> dict[int, tuple[int, int]]:
    """line -> (first, last) line of the Python statement of several lines it is in (a compound statement's header
    only: a comment on `if x:` covers none of its body); empty for text that does not parse."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError, RecursionError):
        return {}
    spans = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt):
            body = getattr(node, "body", None)
            last = body[0].lineno - 1 if isinstance(body, list) and body and isinstance(body[0], ast.stmt) \
                else node.end_lineno or node.lineno
            spans.update((line, (node.lineno, last)) for line in range(node.lineno, last + 1) if last > node.lineno)
    return spans


class Suppressions:
    """A file's `# trap-check: ignore[...]` comments, found by one scan of its text: the findings of a file (50,000
    in 5 MB) are each looked up here, never by splitting or scanning the file again (issue #14: linear time)."""

    def __init__(self, text: str, python: bool):
        self.text, self.python = text, python
        self.names: dict[int, set[str]] = {}  # line (1-based) -> the rule words of its comments
        self.alone: set[int] = set()  # lines that hold nothing but a comment
        for number, line in enumerate(text.split("\n"), 1):  # one split of the file, not one per finding
            for match in SUPPRESSION.finditer(line):
                if number not in self.names and line.lstrip().startswith("#"):
                    self.alone.add(number)
                self.names.setdefault(number, set()).update(word.strip().lower() for word in match[1].split(","))
        self.marked = sorted(self.names)
        self._spans: dict[int, tuple[int, int]] | None = None  # read only for a file with a comment
        self._words: dict[tuple[int, int], set[str]] = {}  # (first, last) -> the words that cover it

    def covers(self, rule: Rule, line: int) -> bool:
        """Whether a comment naming the rule (code or name, any case) sits on line ``line``, or on a line of the
        Python statement of several lines it is in, or alone on the line above the first: a comment trailing the
        statement above suppresses nothing here. Each statement's words are gathered once."""
        if not self.names:
            return False
        if self._spans is None:
            self._spans = statement_spans(self.text) if self.python else {}
        first, last = self._spans.get(line, (line, line))
        if (first, last) not in self._words:
            inside = self.marked[bisect.bisect_left(self.marked, first):bisect.bisect_right(self.marked, last)]
            words = set().union(*(self.names[marked] for marked in inside))
            if first - 1 in self.alone:
                words |= self.names[first - 1]
            self._words[first, last] = words
        return bool(self._words[first, last] & {rule.id.lower(), rule.code.lower()})


def fails(rule: Rule, strict: bool) -> bool:
    return rule.severity == ERROR or strict


def record(run, name: str, rule: Rule, detail: str, strict: bool) -> None:
    """One finding as a check: failed for an error (or any finding under --strict), logged as [warn] and passed for a
    warning, so the contract's exit code is 1 only for what fails; --json carries its code and severity."""
    if fails(rule, strict):
        run.check(name, False, detail)
    else:
        run.checks.append({"name": name, "ok": True, "detail": detail, "actual": None, "expected": None})
        log(f"[warn] {name}: {detail}")
    run.checks[-1].update(code=rule.code, severity=rule.severity)


def annotation(rule: Rule, path: str, line: int, message: str, strict: bool) -> str:
    """A GitHub Actions workflow command: the finding shows on the pull request's diff at that line."""
    def escaped(text: str, properties: bool = False) -> str:
        text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
        return text.replace(":", "%3A").replace(",", "%2C") if properties else text

    level = "error" if fails(rule, strict) else "warning"
    return f"::{level} file={escaped(path, True)},line={line},title={escaped(f'{rule.code} {rule.id}', True)}::" \
        f"{escaped(message)}"


def rule_table(skill: str) -> list[dict]:
    return [{"code": rule.code, "name": rule.id, "severity": rule.severity, "what": rule.what, "see": rule.see,
             "why": rule.why} for rule in RULES if rule.skill == skill]


def rule_lines(skill: str) -> list[str]:
    """--list-rules as text, a line per rule: code, name, severity, what goes wrong and the section to read; the
    name column as wide as the longest name, so the severities line up."""
    rules = [rule for rule in RULES if rule.skill == skill]
    width = max(len(rule.id) for rule in rules)
    return [f"{rule.code}  {rule.id:<{width}}  {rule.severity:<8} {rule.what} See: {rule.see}" for rule in rules]
