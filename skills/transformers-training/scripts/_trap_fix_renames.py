"""The renames behind trap_check.py --fix: RENAMES (each 4.x spelling that has one exact 5.x spelling, and the value
it needs), where they are made in Python (PythonFile: the keywords of TrainingArguments and Trainer calls, the keys
of a dict they unpack, argv lists) and in any argv (argv_rewrites, for the flags of a script hf_script_flags names).
_trap_fix.py applies them to files; _trap_fix_shell.py finds them on shell lines. A module of trap_check.py (synced
from skill_common/ into every skill's scripts/ folder).
"""

from __future__ import annotations

import ast
import functools
import io
import re
import tokenize
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

ARGUMENT_CLASSES = {"TrainingArguments", "Seq2SeqTrainingArguments"}
TRAINER_CLASSES = {"Trainer", "Seq2SeqTrainer"}
TRUE_WORDS = {"yes", "true", "t", "y", "1"}  # HfArgumentParser's string_to_bool


def is_ratio(value) -> bool:
    """A warmup_ratio that 5.x's warmup_steps reads as the same ratio: a number in [0, 1) (1 and above are steps)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1


def cli_ratio(text: str | None) -> bool:
    try:
        return text is not None and is_ratio(float(text))
    except ValueError:
        return False


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    accepts: object  # the Python constant the rewrite is exact for
    value: str | None = None  # the new value's source; None: the value is kept as written
    cli_value: str | None = None  # the new flag's value on a command line (a bool flag's rewrite)

    def accepts_node(self, node: ast.AST | None) -> bool:
        """A value that cannot be read (None) is kept only by a pure rename, whose meaning does not depend on it."""
        return self.accepts(node.value) if isinstance(node, ast.Constant) else self.accepts in (KEPT, ANY)

    def accepts_word(self, word: str | None) -> bool:
        """A command-line value (None: the flag stands alone, for a bool flag True)."""
        if self.cli_value is not None:
            return word is None or word.lower() in TRUE_WORDS
        return self.accepts is not is_ratio or cli_ratio(word)


def KEPT(value) -> bool:  # noqa: N802 - a pure rename: any value but None (in 4.41-4.45 None meant "not given")
    return value is not None


def ANY(value) -> bool:  # noqa: N802 - a pure rename of every value: tokenizer=None is processing_class=None,
    return True  # both the Trainer's default


RENAMES = {rename.old: rename for rename in [
    Rename("evaluation_strategy", "eval_strategy", KEPT),
    Rename("no_cuda", "use_cpu", KEPT),
    Rename("push_to_hub_token", "hub_token", KEPT),
    Rename("warmup_ratio", "warmup_steps", is_ratio),
    Rename("group_by_length", "train_sampling_strategy", lambda value: value is True, '"group_by_length"',
           "group_by_length"),
    Rename("include_inputs_for_metrics", "include_for_metrics", lambda value: value is True, '["inputs"]', "inputs"),
]}
TRAINER_RENAMES = {"tokenizer": Rename("tokenizer", "processing_class", ANY)}
NEW_NAMES = {rename.new for rename in [*RENAMES.values(), *TRAINER_RENAMES.values()]}


def open_renames(declared: set[str]) -> set[str]:
    """The renames a script's own declarations leave to TrainingArguments: neither the old nor the new name is its
    own (a project field `warmup_steps: int` would refuse the ratio the rewrite gives it)."""
    return {old for old, rename in RENAMES.items() if not {old, rename.new} & declared}


@dataclass(frozen=True)
class Edit:
    start: int  # character offsets in the decoded text
    end: int
    text: str
    what: str  # old -> new, for the log line


class Source:
    """Decoded text with ast's (line, UTF-8 byte column) positions turned into character offsets."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [0] + [match.end() for match in re.finditer(r"\r\n|\r|\n", text)]

    def offset(self, line: int, column: int) -> int:
        start = self.starts[line - 1]
        return start + len(self.text[start:start + column].encode("utf-8")[:column].decode("utf-8", "ignore"))

    def span(self, node: ast.AST) -> tuple[int, int]:
        return self.offset(node.lineno, node.col_offset), self.offset(node.end_lineno, node.end_col_offset)


def replace_name(source: Source, node: ast.AST, old: str, new: str, what: str) -> Edit | None:
    """The edit that renames ``old`` where ``node`` starts (a keyword) or inside it (a string key, quotes kept)."""
    start, end = source.span(node)
    found = source.text.find(old, start, end) if isinstance(node, ast.Constant) else start
    if found < 0 or source.text[found:found + len(old)] != old:  # "evaluation_" "strategy": not one token
        return None
    return Edit(found, found + len(old), new, what)


# ---------------------------------------------------------------- Python

class PythonFile:
    def __init__(self, path: Path, text: str, tree: ast.Module):
        self.path, self.source, self.tree = path, Source(text), tree
        self.imported: dict[str, str] = {}  # local name -> transformers' name
        self.modules: set[str] = set()  # local names of the transformers module
        self.bindings: dict[str, set[tuple]] = {}  # name -> how it is bound: imported from a module, or otherwise
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                source = "." * node.level + (node.module or "")
                if source.split(".")[0] == "transformers":
                    self.imported.update((alias.asname or alias.name, alias.name) for alias in node.names)
                for alias in node.names:
                    self.bind(alias.asname or alias.name, ("from", source, alias.name))
            elif isinstance(node, ast.Import):
                self.modules |= {alias.asname or alias.name for alias in node.names if alias.name == "transformers"}
                for alias in node.names:
                    self.bind(alias.asname or alias.name.split(".")[0], ("import", alias.name))
            elif isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) or isinstance(node, ast.arg):
                self.bind(getattr(node, "id", None) or node.arg, ("other",))
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bind(node.name, ("class",) if isinstance(node, ast.ClassDef) else ("other",))
        self.classes = {node.name: node for node in ast.walk(tree) if isinstance(node, ast.ClassDef)}
        self.defined_classes = Counter(node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
        self.names: dict[str, list[ast.Name]] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                self.names.setdefault(node.id, []).append(node)
        self.parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        self.used: set[str | None] | None = None
        self.dicts: dict[str, list | None] = {}
        self.declared = self.declared_flags()

    def constant(self, node: ast.AST) -> ast.AST | None:
        """A value as the rewrite reads it: a constant, or a name the file binds once, to a constant
        (`warmup_ratio = 0.03` above `warmup_ratio=warmup_ratio`); None otherwise."""
        if isinstance(node, ast.Name):
            bindings = [name for name in self.names.get(node.id, []) if not isinstance(name.ctx, ast.Load)]
            parent = self.parents.get(id(bindings[0])) if len(bindings) == 1 else None
            node = parent.value if isinstance(parent, ast.Assign) and parent.targets == [bindings[0]] else None
        return node if isinstance(node, ast.Constant) else None

    def bind(self, name: str, how: tuple) -> None:
        self.bindings.setdefault(name, set()).add(how)

    def library_class(self, node: ast.AST, depth: int = 0) -> str | None:
        """The transformers class a call's callee stands for: imported, transformers.X, or a class of this file or of
        a project module next to it derived from one that has no __init__ and declares neither name of a rename (its
        own fields would take them). A name bound any other way too (`Trainer = mine.Trainer`, a def, an import
        from elsewhere, in any scope) may be the project's own class at the call: None."""
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.modules \
                and self.bindings[node.value.id] == {("import", "transformers")}:
            return node.attr
        if not isinstance(node, ast.Name) or depth > 10:
            return None
        bindings = self.bindings.get(node.id, set())
        if not bindings:
            return "*" in self.imported and node.id or None
        imported = ("from", "transformers", self.imported.get(node.id))
        if bindings == {imported, ("class",)}:  # class TrainingArguments(TrainingArguments): the class, once defined
            bindings = {("class",)}
        if len(bindings) > 1:
            return None
        (how,) = bindings
        if how[0] == "from" and how[1].split(".")[0] == "transformers":
            return self.imported[node.id]
        if how[0] == "from":
            project = project_module(self.path.parent, how[1])
            return project.library_class(ast.Name(how[2]), depth + 1) if project else None
        if how[0] != "class" or self.defined_classes[node.id] != 1:
            return None
        defined = self.classes[node.id]
        own = {target.id for statement in defined.body for target in (
            [statement.target] if isinstance(statement, ast.AnnAssign) else getattr(statement, "targets", []))
            if isinstance(target, ast.Name)}
        own |= {statement.name for statement in defined.body if isinstance(statement, ast.FunctionDef)}
        if own & {"__init__", *RENAMES, *NEW_NAMES}:
            return None
        return next((found for base in defined.bases if (found := self.imported.get(node.id) if getattr(
            base, "id", None) == node.id else self.library_class(base, depth + 1))), None)

    def edits(self) -> list[Edit]:
        edits = []
        for call in (node for node in ast.walk(self.tree) if isinstance(node, ast.Call)):
            kind = self.library_class(call.func)
            if kind in ARGUMENT_CLASSES:
                edits += self.call_edits(call, RENAMES, unpacked=True)
            elif kind in TRAINER_CLASSES or self.partial_of_trainer(call):
                edits += self.call_edits(call, TRAINER_RENAMES, unpacked=False)
            edits += self.argv_edits(call)
        edits += self.sys_argv_edits()
        return edits

    def partial_of_trainer(self, call: ast.Call) -> bool:
        """functools.partial(Trainer, tokenizer=tok): its keywords are the Trainer's when it is called."""
        func = call.func
        partial = isinstance(func, ast.Attribute) and func.attr == "partial" and isinstance(func.value, ast.Name) \
            and self.bindings.get(func.value.id) == {("import", "functools")} or \
            isinstance(func, ast.Name) and self.bindings.get(func.id) == {("from", "functools", "partial")}
        return partial and bool(call.args) and self.library_class(call.args[0]) in TRAINER_CLASSES

    def call_edits(self, call: ast.Call, renames: dict[str, Rename], unpacked: bool) -> list[Edit]:
        places = []  # (name, node to rename, value node)
        for keyword in call.keywords:
            if keyword.arg is not None:
                places.append((keyword.arg, keyword, keyword.value))
            elif unpacked and isinstance(keyword.value, ast.Name):
                places += self.dict_entries(keyword.value.id) or []
        given = {name for name, _, _ in places}
        edits = []
        for name, node, value in places:
            rename = renames.get(name)
            values = [self.constant(other) for other_name, _, other in places if other_name == name]
            if rename is None or rename.new in given or not all(map(rename.accepts_node, values)):
                continue
            what = f"{name}= -> {rename.new}="
            renamed = replace_name(self.source, node, name, rename.new, what)
            if renamed is None:
                return []
            edits.append(renamed)
            if rename.value is not None:
                start, end = self.source.span(value)
                edits.append(Edit(start, end, rename.value, what))
        return edits

    def dict_entries(self, name: str) -> list[tuple[str, ast.AST, ast.AST]] | None:
        """(key, node to rename, value) of a dict the name holds, when it is built once (a literal or dict(k=v))
        with no unpacking, and used only for `name["key"] = value` and `**name` into training arguments."""
        if name not in self.dicts:  # read once per name: a file may unpack it many times
            self.dicts[name] = self._dict_entries(name)
        return self.dicts[name]

    def _dict_entries(self, name: str) -> list[tuple[str, ast.AST, ast.AST]] | None:
        entries, built = [], 0
        for use in self.names.get(name, []):
            parent = self.parents.get(id(use))
            if isinstance(use.ctx, ast.Store) and isinstance(parent, ast.Assign) and parent.targets == [use]:
                built += 1
                value = parent.value
                if isinstance(value, ast.Dict) and all(
                        isinstance(key, ast.Constant) and isinstance(key.value, str) for key in value.keys):
                    entries += [(key.value, key, item) for key, item in zip(value.keys, value.values)]
                elif isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "dict" \
                        and not value.args and all(keyword.arg for keyword in value.keywords):
                    entries += [(keyword.arg, keyword, keyword.value) for keyword in value.keywords]
                else:
                    return None
            elif isinstance(parent, ast.Subscript) and isinstance(parent.ctx, ast.Store) and isinstance(
                    parent.slice, ast.Constant) and isinstance(parent.slice.value, str):
                statement = self.parents.get(id(parent))
                if not (isinstance(statement, ast.Assign) and statement.targets == [parent]):
                    return None
                entries.append((parent.slice.value, parent.slice, statement.value))
            elif not (isinstance(parent, ast.keyword) and parent.arg is None and self.library_class(
                    getattr(self.parents[id(parent)], "func", None)) in ARGUMENT_CLASSES):  # class C(**cfg): no
                return None
        return entries if built == 1 else None

    def uses(self, names: set[str]) -> bool:
        """Whether the file names one of these transformers classes (imported, or as transformers.X)."""
        if self.used is None:
            self.used = {self.library_class(node) for node in ast.walk(self.tree)
                         if isinstance(node, (ast.Name, ast.Attribute))}
        return bool(self.used & names)

    def declared_flags(self) -> set[str]:
        """Names of a rename the file declares itself (a dataclass field, an add_argument flag): those flags are its own."""
        declared = {node.target.id for node in ast.walk(self.tree)
                    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)}
        declared |= {node.value.lstrip("-").replace("-", "_") for node in ast.walk(self.tree)
                     if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("-")
                     and isinstance(self.parents.get(id(node)), ast.Call)
                     and getattr(self.parents[id(node)].func, "attr", "") == "add_argument"}
        return declared & {*RENAMES, *NEW_NAMES}

    def argv_edits(self, call: ast.Call) -> list[Edit]:
        """An argv list given to parse_args_into_dataclasses here, or a launch list naming a script that parses
        TrainingArguments (subprocess.run([sys.executable, "train.py", "--evaluation_strategy", "steps"]))."""
        if getattr(call.func, "attr", "") == "parse_args_into_dataclasses" and self.uses({"HfArgumentParser"}):
            given = call.args[:1] + [keyword.value for keyword in call.keywords if keyword.arg == "args"]
            if given and isinstance(given[0], (ast.List, ast.Tuple)):
                return list_edits(self.source, given[0], open_renames(self.declared))
            return []
        edits = []
        for argument in call.args[:1]:
            if isinstance(argument, (ast.List, ast.Tuple)):
                for index, element in enumerate(argument.elts):
                    if isinstance(element, ast.Constant) and isinstance(element.value, str) and \
                            element.value.endswith(".py"):
                        allowed = hf_script_flags(self.path.parent / element.value)
                        if allowed:
                            edits += list_edits(self.source, argument, allowed, index + 1)
                        break
        return edits

    def sys_argv_edits(self) -> list[Edit]:
        """sys.argv = [...] (or +=) in a module that parses TrainingArguments with HfArgumentParser."""
        if not self.uses({"HfArgumentParser"}):
            return []
        edits = []
        for node in ast.walk(self.tree):
            target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else \
                node.target if isinstance(node, ast.AugAssign) else None
            if isinstance(target, ast.Attribute) and target.attr == "argv" and isinstance(target.value, ast.Name) \
                    and target.value.id == "sys" and isinstance(node.value, (ast.List, ast.Tuple)):
                program = 1 if isinstance(node, ast.Assign) else 0  # sys.argv[0] is the program, never a flag
                edits += list_edits(self.source, node.value, open_renames(self.declared), program)
        return edits


@functools.lru_cache(maxsize=256)  # many files may import one module
def project_module(folder: Path, module: str) -> PythonFile | None:
    """The project module `from module import X` reads, found next to the importing file; None when not found."""
    if module.startswith(".."):
        return None
    relative = module.lstrip(".").replace(".", "/")
    for path in (folder / f"{relative}.py", folder / relative / "__init__.py"):
        try:
            if path.is_file():
                text = decode(path.read_bytes())[0]
                return PythonFile(path, text, ast.parse(text))
        except (OSError, ValueError, SyntaxError, RecursionError):
            return None
    return None


@functools.lru_cache(maxsize=256)  # a launch file may run one script many times
def hf_script_flags(path: Path) -> set[str]:
    """The old names a script's command line may be rewritten for: those of RENAMES when it parses
    TrainingArguments with HfArgumentParser and declares none of them itself; empty when it cannot be read."""
    try:
        if not path.is_file():
            return set()
        text = decode(path.read_bytes())[0]
        script = PythonFile(path, text, ast.parse(text))
    except (OSError, ValueError, SyntaxError, RecursionError):
        return set()
    if not (script.uses({"HfArgumentParser"}) and script.uses(ARGUMENT_CLASSES)):
        return set()
    declared = set(script.declared)  # and those of the project modules it imports from (their dataclasses)
    for source in {how[1] for hows in script.bindings.values() for how in hows if how[0] == "from"}:
        if source.split(".")[0] != "transformers" and (project := project_module(path.parent, source)):
            declared |= project.declared
    return open_renames(declared)


def decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding Python reads it with (PEP 263, a BOM, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise ValueError(" ".join(str(exc.msg).split())) from None
    return data.decode(encoding), encoding


def flag_name(word: str | None) -> str | None:
    """evaluation_strategy for --evaluation_strategy, --evaluation-strategy or --evaluation_strategy=steps."""
    if word is None or not word.startswith("--"):
        return None
    return word[2:].split("=", 1)[0].replace("-", "_")


def argv_rewrites(words: list[str | None], allowed: set[str], kept: set[int] = frozenset()
                  ) -> list[tuple[int, list[str], str]]:
    """(index, the words that replace words[index], what) per exact rewrite of an argv, where None stands for a
    word that cannot be read. A rename needs its value read and its new flag not given; an unread word where a flag
    could stand (not a flag's value) may hold any flag, so such an argv is left alone; a word of ``kept`` is a
    `--flag=` whose value cannot be read: that flag is given, and the word is not rewritten."""
    if any(word is None and (index == 0 or not (words[index - 1] or "").startswith("--") or "=" in words[index - 1])
           for index, word in enumerate(words)):
        return []
    given = {flag_name(word) for word in words}
    rewrites = []
    for index, word in enumerate(words):
        name = flag_name(word)
        rename = RENAMES.get(name) if name in allowed else None
        if rename is None or rename.new in given or index in kept:  # kept: a value that cannot be read
            continue
        spelled, equals, inline = word[2:].partition("=")
        new = rename.new.replace("_", "-") if "-" in spelled else rename.new
        following = words[index + 1] if index + 1 < len(words) else "--"
        value = inline if equals else None if following is not None and following.startswith("-") else following
        pure = rename.cli_value is None and rename.accepts is KEPT  # the value, whatever it is, is kept
        if not pure and (not equals and following is None or not rename.accepts_word(value)):
            continue
        what = f"--{spelled} -> --{new}"
        if rename.cli_value is None:  # the value is kept as written
            rewrites.append((index, [f"--{new}{equals}{inline}"], what))
        elif equals:
            rewrites.append((index, [f"--{new}={rename.cli_value}"], what))
        elif value is None:
            rewrites.append((index, [f"--{new}", rename.cli_value], what))
        else:
            rewrites += [(index, [f"--{new}"], what), (index + 1, [rename.cli_value], what)]
    return rewrites


def list_edits(source: Source, node: ast.List | ast.Tuple, allowed: set[str], first: int = 0) -> list[Edit]:
    elements = node.elts[first:]
    words = [element.value if isinstance(element, ast.Constant) and isinstance(element.value, str) else None
             for element in elements]
    edits = []
    for index, new_words, what in argv_rewrites(words, allowed):
        start, end = source.span(elements[index])
        token = source.text[start:end]
        quote = re.match(r"[rRuU]?(['\"]{1,3})", token)
        if quote is None or token[quote.end():len(token) - len(quote[1])] != words[index]:
            return []  # a string written with escapes or in pieces: left alone
        edits.append(Edit(start, end, ", ".join(token[:quote.end()] + word + quote[1] for word in new_words), what))
    return edits
