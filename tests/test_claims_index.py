"""Claims gate: every claim-bearing line of the skills is bound to the test that proves it (support/claims_index.py).

Claim-bearing, mechanically (fenced blocks never count; headings never count):
- skills/composer-training/SKILL.md: each bullet under "## What goes wrong without this skill";
- skills/transformers-training/SKILL.md: each bullet under "## Preflight checks" and each data row of the table
  under "## What 5.x changed, and traps the library does not warn about";
- both skills' references/troubleshooting.md, below the first ``##`` heading: each prose paragraph (the text after
  an ```error block, a bold-led symptom, the text under a ``###`` heading), each list item and each table data row.
A bullet, paragraph or row is one claim; its continuation lines are claim-bearing lines of that claim.

Checked both ways: every claim has at least one index entry whose phrase it contains; every entry's phrase occurs
exactly once in its document, on a claim-bearing line; every proof exists: the test file defines that function
(read with ast, nothing imported), the ```error id is quoted in a document of that skill and has a producer, the block phrase
is in exactly one runnable block of that document, the check name is in the script of a canonical run. The quoted
errors, blocks and checks are run by their own gates (test_quoted_errors.py, test_docs_execute.py, the canonical
runs' tests); this gate only binds."""

from __future__ import annotations

import ast
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.claims_index import CLAIMS
from support.docs import FENCE, blocks, quoted_errors, runnable_blocks
from support.harness import REPO, SKILLS_DIR
from support.shared_runs import CANONICAL_RUNS

# (document, the ``##`` sections whose bullets are claims, the ``##`` sections whose table data rows are claims);
# None for the sections means: the whole document below its first ``##`` heading, paragraphs included.
RULES = {
    "skills/composer-training/SKILL.md": (["What goes wrong without this skill"], []),
    "skills/transformers-training/SKILL.md": (["Preflight checks"],
                                              ["What 5.x changed, and traps the library does not warn about"]),
    "skills/composer-training/references/troubleshooting.md": None,
    "skills/composer-training/references/questions.md": None,
    "skills/transformers-training/references/troubleshooting.md": None,
    "skills/transformers-training/references/questions.md": None,
}
SEPARATOR_ROW = re.compile(r"^\|(\s*:?-{3,}:?\s*\|)+\s*$")
NODE = re.compile(r"^(?P<file>tests/[\w/]+\.py)::(?:(?P<cls>\w+)::)?(?P<name>test_\w+)(?:\[(?P<id>[^\]]+)\])?$")
MIN_PHRASE = 12


@dataclass
class Claim:
    doc: str
    lines: list[tuple[int, str]]  # (1-based line number, text) of each claim-bearing line

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.lines[0][0]}"

    def contains(self, phrase: str) -> bool:
        return any(phrase in text for _, text in self.lines)


def _prose_lines(text: str) -> list[tuple[int, str, str | None]]:
    """(line number, text, the ``##`` section it is in) of every line outside fenced blocks; fence lines as ''."""
    out, section, fence = [], None, None
    for number, line in enumerate(text.splitlines(), 1):
        match = FENCE.match(line)
        if fence is None and match:
            fence = match["fence"]
            out.append((number, "", section))
            continue
        if fence is not None:
            if line.strip().startswith(fence):
                fence = None
            out.append((number, "", section))
            continue
        if line.startswith("## "):
            section = line[3:].strip()
        out.append((number, line, section))
    return out


def _split(group: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """A paragraph's claims: each list item (with its indented continuation) and each table data row on its own,
    the rest of the paragraph as one."""
    claims: list[list[tuple[int, str]]] = []
    for index, (number, line) in enumerate(group):
        if line.startswith("|"):
            following = group[index + 1][1] if index + 1 < len(group) else ""
            if not SEPARATOR_ROW.match(line) and not SEPARATOR_ROW.match(following):  # not the separator or header
                claims.append([(number, line)])
        elif line.startswith(("- ", "* ")) or not claims or claims[-1][-1][1].startswith("|"):
            claims.append([(number, line)])
        else:
            claims[-1].append((number, line))
    return claims


def claims_of(doc: str, text: str, rule=None) -> list[Claim]:
    """The claims of one document under its rule (RULES[doc] unless given)."""
    rule = RULES[doc] if rule is None else rule
    groups, current = [], []
    for number, line, section in _prose_lines(text):
        keep = (section is not None) if rule == "all" else section in {*rule[0], *rule[1]}
        if not keep or not line.strip() or line.startswith("#"):
            if current:
                groups.append(current)
            current = []
            continue
        current.append((number, line, section))
    if current:
        groups.append(current)
    found = []
    for group in groups:
        section = group[0][2]
        for lines in _split([(number, line) for number, line, _ in group]):
            first = lines[0][1]
            if rule == "all":
                found.append(Claim(doc, lines))
            elif first.startswith("- ") and section in rule[0]:
                found.append(Claim(doc, lines))
            elif first.startswith("|") and section in rule[1]:
                found.append(Claim(doc, lines))
    return found


def document_claims() -> dict[str, list[Claim]]:
    return {doc: claims_of(doc, (REPO / doc).read_text(encoding="utf-8"), "all" if rule is None else rule)
            for doc, rule in RULES.items()}


def unbound(claims: list[Claim], entries) -> list[str]:
    """Claims that no entry's phrase points at."""
    return [f"{claim.where}: no claims_index entry; the claim: {claim.lines[0][1].strip()[:100]}"
            for claim in claims if not any(doc == claim.doc and claim.contains(phrase) for doc, phrase, _ in entries)]


def phrase_problems(doc: str, text: str, claims: list[Claim], phrase: str) -> list[str]:
    """An entry's phrase must name one claim-bearing line: verbatim, long enough, once in the document."""
    if len(phrase) < MIN_PHRASE or "\n" in phrase:
        return [f"{doc}: phrase {phrase!r} must be one line of at least {MIN_PHRASE} characters"]
    count = text.count(phrase)
    if count != 1:
        return [f"{doc}: phrase {phrase!r} occurs {count} times in the document (must be exactly once)"]
    if not any(claim.contains(phrase) for claim in claims):
        return [f"{doc}: phrase {phrase!r} is not on a claim-bearing line"]
    return []


def _defines(path: Path, cls: str | None, name: str) -> bool:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    scope = tree.body
    if cls:
        classes = [node for node in tree.body if isinstance(node, ast.ClassDef) and node.name == cls]
        if not classes:
            return False
        scope = classes[0].body
    return any(isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.name == name for node in scope)


def _producers() -> set[str]:
    from support.quoted_errors import load_producers

    return set(load_producers())  # registers producers; library imports happen only when one runs


def proof_problem(doc: str, proof: str, producers: set[str], repo: Path = REPO) -> str | None:
    """None when ``proof`` exists, else what is wrong with it. Kinds:
    ``tests/<file>.py::test_name[id]``; ``error:<id>`` (an ```error block of ``doc``'s skill); ``block:<phrase>`` (in
    exactly one runnable block of ``doc``); ``check:<skill>/<script>.py:<name>`` (a canonical run's check)."""
    if proof.startswith("error:"):
        error_id, skill = proof.removeprefix("error:"), repo / "skills" / Path(doc).parts[1]
        skill_docs = [skill / "SKILL.md", *sorted((skill / "references").glob("*.md"))]
        if error_id not in {quoted_id for path in skill_docs for quoted_id, _, _ in quoted_errors(path)}:
            return f"{proof}: no ```error {error_id} block in the documents of {skill.name}"
        return None if error_id in producers else f"{proof}: no producer in tests/support/quoted_errors_*.py"
    if proof.startswith("block:"):
        phrase = proof.removeprefix("block:")
        holding = [block for language in ("python", "bash") for block in runnable_blocks(repo / doc, language)
                   if phrase in block.source]
        return None if len(holding) == 1 else f"{proof}: in {len(holding)} runnable blocks of {doc} (must be 1)"
    if proof.startswith("check:"):
        script, _, name = proof.removeprefix("check:").rpartition(":")
        if script not in CANONICAL_RUNS:
            return f"{proof}: {script} has no canonical run (support/shared_runs.CANONICAL_RUNS)"
        skill, file = script.split("/")
        source = (SKILLS_DIR / skill / "scripts" / file).read_text(encoding="utf-8")
        return None if f'"{name}"' in source else f"{proof}: no check named {name!r} in {script}"
    match = NODE.match(proof)
    if not match:
        return f"{proof}: not a proof (tests/<file>.py::test_name, error:<id>, block:<phrase>, check:<script>:<name>)"
    path = repo / match["file"]
    if not path.is_file():
        return f"{proof}: {match['file']} does not exist"
    if not _defines(path, match["cls"], match["name"]):
        return f"{proof}: {match['file']} defines no {match['name']}"
    if match["id"] and not any(match["id"] in helper.read_text(encoding="utf-8")
                               for folder in (repo / "tests", repo / "tests" / "support")
                               for helper in sorted(folder.glob("*.py"))
                               if helper.name != "claims_index.py"):
        return f"{proof}: no parameter id {match['id']!r} in tests/*.py or tests/support/*.py"
    return None


# ---- the gate ---------------------------------------------------------------------------------------------------

def test_every_claim_bearing_line_has_a_proof():
    """A claim no test proves is proved or cut from the document: there is no list of exceptions."""
    problems = [problem for claims in document_claims().values() for problem in unbound(claims, CLAIMS)]
    assert not problems, "\n".join(problems)


def test_every_phrase_occurs_once_on_a_claim_bearing_line():
    claims, entries = document_claims(), CLAIMS
    problems = [f"{doc}: not a claims document (RULES)" for doc, _, _ in entries if doc not in claims]
    problems += [problem for doc, phrase, _ in entries if doc in claims
                 for problem in phrase_problems(doc, (REPO / doc).read_text(encoding="utf-8"), claims[doc], phrase)]
    repeated = [key for key, count in Counter((doc, phrase) for doc, phrase, _ in entries).items() if count > 1]
    assert not problems and not repeated, "\n".join(problems + [f"entry twice: {key}" for key in repeated])


def test_every_proof_exists():
    producers = _producers()
    problems = [f"{doc}: {phrase!r}: no proof" for doc, phrase, proofs in CLAIMS if not proofs]
    problems += [f"{doc}: {phrase!r}: {problem}" for doc, phrase, proofs in CLAIMS for proof in proofs
                 for problem in [proof_problem(doc, proof, producers)] if problem]
    assert not problems, "\n".join(problems)


# ---- the gate can fail ------------------------------------------------------------------------------------------

FAKE = """# Fake skill

## What goes wrong without this skill

Each point is proved.
- `Trainer` takes keyword arguments only.
- A claim nobody proved, spread
  over two lines.

```python
- not a claim: inside a block
```

## Elsewhere

- not a claim: another section
"""
FAKE_RULE = (["What goes wrong without this skill"], [])


def test_the_claim_parser_reads_bullets_rows_and_paragraphs():
    claims = claims_of("fake.md", FAKE, FAKE_RULE)
    assert [claim.lines for claim in claims] == [
        [(6, "- `Trainer` takes keyword arguments only.")],
        [(7, "- A claim nobody proved, spread"), (8, "  over two lines.")]]
    table = "## T\n\nIntro line,\nstill intro.\n\n| a | b |\n| --- | --- |\n| x | y |\n- item\n"
    assert [claim.lines for claim in claims_of("t.md", table, "all")] == [
        [(3, "Intro line,"), (4, "still intro.")], [(8, "| x | y |")], [(9, "- item")]]


def test_the_gate_fails_on_an_unbound_claim_and_a_stale_phrase():
    claims = claims_of("fake.md", FAKE, FAKE_RULE)
    entries = [("fake.md", "takes keyword arguments only", ["tests/test_claims_index.py::test_every_proof_exists"])]
    assert unbound(claims, entries) == [
        "fake.md:7: no claims_index entry; the claim: - A claim nobody proved, spread"]
    assert unbound(claims, [*entries, ("fake.md", "over two lines", [])]) == []
    assert phrase_problems("fake.md", FAKE, claims, "takes keyword arguments only") == []
    assert "occurs 0 times" in phrase_problems("fake.md", FAKE, claims, "a phrase the document lost")[0]
    assert "occurs 2 times" in phrase_problems("fake.md", FAKE, claims, "not a claim: ")[0]
    assert "not on a claim-bearing line" in phrase_problems("fake.md", FAKE, claims, "Each point is proved")[0]
    assert "at least" in phrase_problems("fake.md", FAKE, claims, "Trainer")[0]


def test_the_gate_fails_on_a_missing_test_error_block_or_check():
    doc, producers = "skills/composer-training/references/troubleshooting.md", _producers()
    assert proof_problem(doc, "tests/test_claims_index.py::test_every_proof_exists", producers) is None
    assert "does not exist" in proof_problem(doc, "tests/test_no_such_file.py::test_x", producers)
    assert "defines no" in proof_problem(doc, "tests/test_claims_index.py::test_no_such_test", producers)
    assert "not a proof" in proof_problem(doc, "test_claims_index.test_every_proof_exists", producers)
    assert proof_problem(doc, "error:trainer-positional", producers) is None
    assert "no ```error" in proof_problem(doc, "error:no-such-error", producers)
    assert "no ```error" in proof_problem(doc, "error:no-pad-token", producers)  # quoted by the other skill only
    assert "no producer" in proof_problem(doc, "error:trainer-positional", producers - {"trainer-positional"})
    assert "no check named" in proof_problem(doc, "check:composer-training/train_smoke.py:no.such.check", producers)
    assert "no canonical run" in proof_problem(doc, "check:composer-training/no_such.py:eval.accuracy", producers)
    assert proof_problem(doc, "check:composer-training/train_smoke.py:eval.accuracy", producers) is None
    assert "in 0 runnable blocks" in proof_problem(doc, "block:no such code anywhere", producers)


@pytest.mark.parametrize("doc", sorted(RULES))
def test_every_claims_document_has_claims(doc):
    """A renamed section would leave the gate checking nothing: each rule must still find claims."""
    assert document_claims()[doc], f"{doc}: no claim-bearing lines found; were its sections renamed?"


def summary() -> str:
    """The line the suite prints (conftest.pytest_terminal_summary)."""
    claims = [claim for found in document_claims().values() for claim in found]
    lines = sum(len(claim.lines) for claim in claims)
    proofs = Counter(proof.split(":")[0] if not proof.startswith("tests/") else "test"
                     for _, _, entry_proofs in CLAIMS for proof in entry_proofs)
    kinds = ", ".join(f"{count} {kind}" for kind, count in sorted(proofs.items()))
    return (f"claims index: {lines} claim-bearing lines ({len(claims)} claims in {len(RULES)} documents), "
            f"{len(CLAIMS)} entries, {sum(proofs.values())} proofs ({kinds})")
