"""API names: every class, function and keyword a skill's code uses, and every backticked ``name=`` in its
prose, exists in the installed library. A wrong one fails naming the file and line."""

from __future__ import annotations

import ast
import importlib
import inspect
import re
from pathlib import Path

import pytest

from support.api_surface import KNOWN_INVALID, SURFACE
from support.docs import REPO, blocks
from support.harness import leg_marks, skill_dirs

PROSE_KWARG = re.compile(r"`([A-Za-z_]\w*)=(?!=)[^`]*`")


def shown(path: Path) -> str:
    return str(path.relative_to(REPO)) if path.is_relative_to(REPO) else str(path)


def skill_docs(skill: Path) -> list[Path]:
    return [skill / "SKILL.md", *sorted((skill / "references").glob("*.md"))]


def resolve(dotted: str):
    """Import ``a.b.C.meth`` as deep as modules go, then getattr the rest. Raises LookupError when absent."""
    parts = dotted.split(".")
    for split in range(len(parts), 0, -1):
        try:
            target = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for attribute in parts[split:]:
            if not hasattr(target, attribute):
                raise LookupError(f"{'.'.join(parts[:split])} has no attribute path {'.'.join(parts[split:])!r}")
            target = getattr(target, attribute)
        return target
    raise LookupError(f"cannot import {dotted!r}")


def accepted_keywords(target) -> set[str] | None:
    """Keyword names ``target`` accepts, or None when it takes **kwargs (anything goes)."""
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in signature.parameters.values()):
        return None
    return {name for name, p in signature.parameters.items() if p.kind is not inspect.Parameter.POSITIONAL_ONLY}


class CallCollector(ast.NodeVisitor):
    """Resolves imported names, and variables assigned from imported classes, to dotted library paths."""

    def __init__(self):
        self.names: dict[str, str] = {}
        self.instances: dict[str, str] = {}
        self.uses: list[tuple[int, str, list[str]]] = []  # (line, dotted path, keyword names)

    def visit_Import(self, node):
        for alias in node.names:
            self.names[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]

    def visit_ImportFrom(self, node):
        if node.module and node.level == 0:
            for alias in node.names:
                self.names[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                self.uses.append((node.lineno, f"{node.module}.{alias.name}", []))

    def dotted(self, node) -> str | None:
        if isinstance(node, ast.Name):
            return self.names.get(node.id) or self.instances.get(node.id)
        if isinstance(node, ast.Attribute):
            base = self.dotted(node.value)
            return f"{base}.{node.attr}" if base else None
        return None

    def visit_Assign(self, node):
        self.generic_visit(node)
        if isinstance(node.value, ast.Call) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            callee = self.dotted(node.value.func)
            if callee and callee.split(".")[-1][:1].isupper():  # a class: the variable is an instance of it
                self.instances[node.targets[0].id] = callee

    def visit_Call(self, node):
        callee = self.dotted(node.func)
        if callee:
            self.uses.append((node.lineno, callee, [kw.arg for kw in node.keywords if kw.arg]))
        self.generic_visit(node)


def code_problems(doc: Path) -> list[str]:
    problems = []
    collector = CallCollector()  # one per document: blocks share imports and variables, as when they run
    for block in blocks(doc):
        if block.language != "python":
            continue
        try:
            tree = ast.parse(block.source)
        except SyntaxError as exc:
            problems.append(f"{shown(block.path)}:{block.line + (exc.lineno or 1) - 1}: syntax error {exc.msg}")
            continue
        collector.uses = []
        collector.visit(tree)
        for line, dotted, keywords in collector.uses:
            where = f"{shown(block.path)}:{block.line + line - 1}"
            try:
                target = resolve(dotted)
            except LookupError as exc:
                problems.append(f"{where}: {dotted}: {exc}")
                continue
            accepted = accepted_keywords(target)
            for keyword in keywords:
                if accepted is not None and keyword not in accepted:
                    problems.append(f"{where}: {dotted} has no keyword {keyword!r}")
    return problems


def surface_keywords(skill: str) -> set[str]:
    names: set[str] = set()
    for dotted in SURFACE.get(skill, []):
        names |= accepted_keywords(resolve(dotted)) or set()
    return names


def prose_problems(doc: Path, allowed: set[str]) -> list[str]:
    problems = []
    in_fence = False
    for number, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        for name in PROSE_KWARG.findall(line):
            if name not in allowed:
                problems.append(f"{shown(doc)}:{number}: `{name}=` is not a keyword of the skill's API surface "
                                "(tests/support/api_surface.py) nor a proven-invalid name")
    return problems


SKILLS = [pytest.param(skill, id=skill.name, marks=leg_marks(skill)) for skill in skill_dirs()]


@pytest.mark.parametrize("skill", SKILLS)
def test_code_blocks_use_real_names_and_keywords(skill):
    problems = [problem for doc in skill_docs(skill) for problem in code_problems(doc)]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("skill", SKILLS)
def test_prose_keywords_exist(skill):
    assert skill.name in SURFACE, f"tests/support/api_surface.py has no SURFACE entry for {skill.name}"
    allowed = surface_keywords(skill.name) | set(KNOWN_INVALID.get(skill.name, {}))
    problems = [problem for doc in skill_docs(skill) for problem in prose_problems(doc, allowed)]
    assert not problems, "\n".join(problems)


def test_gate_catches_a_wrong_keyword(tmp_path):
    doc = tmp_path / "doc.md"
    doc.write_text("```python\nimport argparse\nparser = argparse.ArgumentParser(progg='x')\n"
                   "parser.parse_args(argz=[])\nfrom argparse import NoSuchThing\n```\n"
                   "Use `progg=` or `prog=`.\n", encoding="utf-8")
    problems = code_problems(doc)
    assert any("no keyword 'progg'" in problem for problem in problems), problems
    assert any("no keyword 'argz'" in problem for problem in problems), problems
    assert any("NoSuchThing" in problem for problem in problems), problems
    import argparse

    prose = prose_problems(doc, accepted_keywords(argparse.ArgumentParser))
    assert len(prose) == 1 and "`progg=`" in prose[0], prose
