"""trap_check.py --fix and --diff: rewrite the 4.x spellings that have one exact 5.x spelling with the same behaviour.

What is rewritten, and only when nothing else decides the value (the file is read, never run or imported):
- keyword arguments of TrainingArguments and Seq2SeqTrainingArguments imported from transformers (and of a class
  of the same file or of a project module next to it derived from them that declares neither name of a rename and no
  __init__), and `tokenizer=` of Trainer and Seq2SeqTrainer imported from transformers (or such a subclass without
  an __init__ of its own); never where the name is also bound another way (the project's own class may shadow it);
- the keys of a dict those calls unpack (`TrainingArguments(**cfg)`), when the dict is a literal or dict(...) of
  named keywords with no unpacking of its own, assigned once, and the name is used for nothing else than
  `cfg["key"] = value` and that unpacking;
- the flags of a script that parses TrainingArguments with HfArgumentParser (and declares no flag of the old name),
  on a shell line that runs it (the .py file found next to the shell script or in the working folder, one file
  only, and no cd before it; a `--flag=$VAR` word is one flag, kept as written) or in an argv
  list in Python: one passed to parse_args_into_dataclasses, assigned to sys.argv, or naming such a script (a
  command line in a Python string is not rewritten).

RENAMES says which value each rename needs; a rename is never made when its new name is given too. Everything else
(overwrite_output_dir, logging_dir, save_safetensors, use_mps_device, warmup_ratio with warmup_steps, a value that
cannot be read where the rewrite depends on it, group_by_length=False) stays a finding of the checker. Composer has
no rewrite: none of its traps on mosaicml 0.32.1 has one exact spelling.

Text outside the rewritten tokens stays byte for byte (comments, quotes, line endings, the PEP 263 encoding); the
file is replaced atomically (a temporary file in its folder, renamed over it) with its mode bits, owner and
group. Left as it was and named: a file that does not compile or would not after the rewrite, a read-only or
hard-linked file, one whose owner cannot be kept, and one that changed after it was read.
"""

from __future__ import annotations

import ast
import difflib
import functools
import io
import os
import re
import shlex
import stat
import sys
import tempfile
import tokenize
import warnings
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
        return self.accepts(node.value) if isinstance(node, ast.Constant) else self.accepts is KEPT

    def accepts_word(self, word: str | None) -> bool:
        """A command-line value (None: the flag stands alone, for a bool flag True)."""
        if self.cli_value is not None:
            return word is None or word.lower() in TRUE_WORDS
        return self.accepts is not is_ratio or cli_ratio(word)


def KEPT(value) -> bool:  # noqa: N802 - a pure rename: any value but None (in 4.41-4.45 None meant "not given")
    return value is not None


RENAMES = {rename.old: rename for rename in [
    Rename("evaluation_strategy", "eval_strategy", KEPT),
    Rename("no_cuda", "use_cpu", KEPT),
    Rename("push_to_hub_token", "hub_token", KEPT),
    Rename("warmup_ratio", "warmup_steps", is_ratio),
    Rename("group_by_length", "train_sampling_strategy", lambda value: value is True, '"group_by_length"',
           "group_by_length"),
    Rename("include_inputs_for_metrics", "include_for_metrics", lambda value: value is True, '["inputs"]', "inputs"),
]}
TRAINER_RENAMES = {"tokenizer": Rename("tokenizer", "processing_class", KEPT)}
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
            elif kind in TRAINER_CLASSES:
                edits += self.call_edits(call, TRAINER_RENAMES, unpacked=False)
            edits += self.argv_edits(call)
        edits += self.sys_argv_edits()
        return edits

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


# ---------------------------------------------------------------- shell

SHELL_BREAKS = set(";&|()\n")
BREAK = ";"  # the value of a command break (never a word's: ";" always breaks)


def shell_words(text: str):
    """(start, end, value) per word of a shell text, BREAK for a command break: the value the command gets, quotes
    removed, or None when an escape, an expansion or a glob makes it unknown. Comments are skipped; a
    backslash-newline joins lines. A rewrite replaces a whole word by a plain one."""
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if text.startswith("\\\n", index) or text.startswith("\\\r\n", index):
            index += 2 if text[index + 1] == "\n" else 3
            continue
        if char in " \t\r":
            index += 1
            continue
        if char == "#":
            index = text.find("\n", index)
            index = length if index < 0 else index
            continue
        if char in SHELL_BREAKS:
            yield index, index + 1, BREAK
            index += 1
            continue
        start, value = index, ""
        while index < length and text[index] not in " \t\r" and text[index] not in SHELL_BREAKS:
            char = text[index]
            if char in "'\"":  # a quoted part: its text, unless double quotes hold an expansion or an escape
                closing = text.find(char, index + 1)
                closing = length - 1 if closing < 0 else closing
                inner = text[index + 1:closing]
                value = None if value is None or char == '"' and any(c in inner for c in "$`\\") else value + inner
                index = closing + 1
            else:
                value = None if value is None or char in "\\$`*?[{~" else value + char
                index += 1
        yield start, index, value


FLAG_WITH_VALUE = re.compile(r"--[A-Za-z][\w-]*=")  # --flag=$VAR: one flag, whatever its value
MOVES = {"cd", "pushd", "popd"}


def shell_edits(path: Path, text: str) -> list[Edit]:
    """The flags after the first .py word of a command that names a script parsing TrainingArguments, while the
    working folder is the one the script is found from: none after a cd, and none when the script's path names
    two different files from the shell file's folder and from the working folder."""
    commands, command = [], []
    for word in shell_words(text):
        if word[2] == BREAK:
            commands.append(command)
            command = []
        else:
            command.append(word)
    edits = []
    for command in [*commands, command]:
        if command and command[0][2] in MOVES:
            break  # where a later relative script path points is not known for sure
        for position, (_, _, value) in enumerate(command):
            if value is None or not value.endswith(".py"):
                continue
            scripts = {os.path.realpath(found) for found in (path.parent / value, Path(value)) if found.is_file()}
            allowed = hf_script_flags(Path(scripts.pop())) if len(scripts) == 1 else set()
            if allowed:
                arguments = command[position + 1:]
                words, kept = [], set()
                for index, (start, stop, word) in enumerate(arguments):
                    flag = FLAG_WITH_VALUE.match(text, start, stop) if word is None else None
                    if flag:  # its flag counts as given; the word stays as written
                        kept.add(index)
                    words.append(flag[0] if flag else word)
                for index, new_words, what in argv_rewrites(words, allowed, kept):
                    start, stop, old = arguments[index]
                    edits.append(renamed_flag(text, start, old, new_words, what) or
                                 Edit(start, stop, " ".join(map(shlex.quote, new_words)), what))
            break
    return edits


def renamed_flag(text: str, start: int, old: str, new_words: list[str], what: str) -> "Edit | None":
    """A rename that keeps the value, as an edit of the flag's name alone: `--evaluation_strategy="steps"` keeps its
    quotes. None when the name is not written plainly at the word's start (a quoted flag: the word is rewritten)."""
    if len(new_words) != 1:
        return None
    old_name, new_name = old.split("=", 1)[0], new_words[0].split("=", 1)[0]
    if old[len(old_name):] != new_words[0][len(new_name):] or not text.startswith(old_name, start):
        return None
    return Edit(start, start + len(old_name), new_name, what)


# ---------------------------------------------------------------- files

SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")


def decode(data: bytes) -> tuple[str, str]:
    """The text and the encoding Python reads it with (PEP 263, a BOM, else UTF-8)."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        raise ValueError(" ".join(str(exc.msg).split())) from None
    return data.decode(encoding), encoding


def is_shell(path: Path, data: bytes) -> bool:
    first = data.split(b"\n", 1)[0]
    return path.suffix in SHELL_SUFFIXES or (first.startswith(b"#!") and b"sh" in first and b"python" not in first)


def fixed_text(path: Path, data: bytes) -> tuple[str, str, str, list[Edit]]:
    """(old text, new text, encoding, edits) of a file's exact rewrites; ValueError when it cannot be read."""
    if is_shell(path, data):
        text, encoding = data.decode("utf-8", "surrogateescape"), "utf-8"  # bash runs any byte in a comment
        edits = shell_edits(path, text)
    else:
        text, encoding = decode(data)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return text, text, encoding, []  # the checker names a file that does not parse
        edits = PythonFile(path, text, tree).edits()
    edits = sorted({(edit.start, edit.end): edit for edit in edits}.values(), key=lambda edit: edit.start)
    if any(left.end > right.start for left, right in zip(edits, edits[1:])):
        return text, text, encoding, []  # two rewrites of one token: none is exact
    pieces, done = [], 0
    for edit in edits:
        pieces += [text[done:edit.start], edit.text]
        done = edit.end
    return text, "".join(pieces) + text[done:], encoding, edits


MAX_BYTES = 5_000_000  # the checker's limit: a larger file is not a training script


def read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """A file's bytes and status, opened without following a symbolic link (the link's target may be anyone's file:
    fix that file itself) and without blocking, and refused unless it is a regular file."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise ValueError("not a regular file")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1_000_000} MB")
    return data, status


def refusal(status: os.stat_result) -> str | None:
    """Why a file is not ours to replace: marked read-only, or one of several hard links (a new file would split
    them: the other names would keep the old text)."""
    if not status.st_mode & stat.S_IWUSR:
        return "it is read-only"
    if status.st_nlink > 1:
        return f"it has {status.st_nlink} hard links and a new file would split them"
    return None


def write_atomically(path: Path, data: bytes, status: os.stat_result, read: bytes) -> None:
    """Replace a file by a temporary one in its folder, with its mode, owner and group: a crash leaves the old file
    or the new one. ValueError, and the file left, when its owner cannot be kept or it changed since it was read
    (an edit made meanwhile would be lost)."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".fix")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, stat.S_IMODE(status.st_mode))
        made = os.stat(temporary)
        if (made.st_uid, made.st_gid) != (status.st_uid, status.st_gid):
            try:
                os.chown(temporary, status.st_uid, status.st_gid)
            except PermissionError:
                raise ValueError("its owner and group cannot be kept") from None
            os.chmod(temporary, stat.S_IMODE(status.st_mode))  # chown clears set-user-ID bits
        now_data, now = read_regular(path)
        if now_data != read or (now.st_ino, now.st_size, now.st_mtime_ns) != (
                status.st_ino, status.st_size, status.st_mtime_ns):
            raise ValueError("it changed while --fix ran")
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def compile_failure(text: str) -> str | None:
    """Why the text does not compile (ast.parse accepts some files the compiler refuses: a repeated keyword)."""
    try:
        with warnings.catch_warnings():  # an invalid escape warns: not this tool's finding
            warnings.simplefilter("ignore")
            compile(text, "<fix>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return " ".join(str(exc).split())
    return None


def unified_diff(path: Path, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), str(path))
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def fix_paths(paths: list[Path], skill: str, diff_to=None, shown=str) -> list[str]:
    """Rewrite each file's exact 5.x spellings in place, or with ``diff_to`` (a stream) write their unified diff
    there and change nothing; a line on stderr per file changed. Returns one line per file left as it was that the
    user must see: it would not parse after the change, or it cannot be read or written."""
    if skill != "transformers-training":
        log(f"--fix changes nothing in {skill}: none of its traps has one exact rewrite on the tested versions")
        return []
    problems = []
    hf_script_flags.cache_clear()  # scripts are read again in each run: they may have changed
    project_module.cache_clear()
    for path in paths:
        try:
            if path.is_symlink():
                raise ValueError("a symbolic link: give the file it points to")
            data, status = read_regular(path)
            old, new, encoding, edits = fixed_text(path, data)
        except (OSError, ValueError, UnicodeError, RecursionError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            problems.append(f"{shown(str(path))}: left as it was: cannot be read for --fix "
                            f"({' '.join(str(reason).split())})")
            continue
        if not edits:
            continue
        if not is_shell(path, data):
            version = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
            if (failure := compile_failure(old)) is not None:
                problems.append(f"{shown(str(path))}: left as it was: it does not compile as {version} ({failure})")
                continue
            if (failure := compile_failure(new)) is not None:
                problems.append(f"{shown(str(path))}: left as it was: the rewritten file would not parse as {version} "
                                f"({failure})")
                continue
        if diff_to is not None:
            diff_to.write(unified_diff(path, old, new).encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
            continue
        if (reason := refusal(status)) is not None:
            problems.append(f"{shown(str(path))}: left as it was: not rewritten because {reason}")
            continue
        try:
            write_atomically(path, new.encode(encoding, "surrogateescape"), status, data)
        except ValueError as exc:
            problems.append(f"{shown(str(path))}: left as it was: not rewritten because {exc}")
            continue
        except OSError as exc:
            problems.append(f"{shown(str(path))}: left as it was: cannot be written ({exc.strerror or exc})")
            continue
        log(f"fixed {shown(str(path))}: {', '.join(dict.fromkeys(edit.what for edit in edits))}")
    return problems


def log(message: str) -> None:
    print(f"trap_check.py: {message}", file=sys.stderr, flush=True)


def add_arguments(parser) -> None:
    parser.add_argument("--fix", action="store_true", help="first rewrite in place what has one exact 5.x spelling "
                        "(evaluation_strategy=, no_cuda=, warmup_ratio=, group_by_length=True, "
                        "include_inputs_for_metrics=True, push_to_hub_token=, Trainer(tokenizer=), and the same "
                        "flags of a script that parses TrainingArguments), then check what is left")
    parser.add_argument("--diff", action="store_true", help="print those rewrites as a unified diff on stdout "
                        "(stderr with --json) and change nothing")
