"""A Python module read with ast, never imported: its names, imports, assignments, classes, functions and calls, the
project modules it imports, the project functions a call runs, and the launch commands it writes as strings or argv
lists. The values it gives are read by Values (_trap_values), which Module derives from. A module of trap_check.py
(synced from skill_common/ into every skill's scripts/ folder).
"""

import ast
import os
import re
from collections import Counter

from _trap_launch import Launch, UNKNOWN, WRAPPERS, launcher_name, launches_in_shell, parse_launch
from _trap_values import Values, plain


PROSE_KEYWORDS = ("help", "epilog", "description", "usage", "prog")


def walk(tree: ast.AST) -> tuple[list[ast.AST], dict[int, ast.AST], dict[type, list[ast.AST]]]:
    """Every node of ``tree`` in ast.walk's order, each node's parent (by id), and the nodes of each type in that
    order, in one pass over the tree: a rule asks for a few types, never for every node of a 5 MB file again."""
    nodes, parent, by_type = [tree], {}, {}
    for node in nodes:  # the list grows as it is read: breadth first, as ast.walk
        by_type.setdefault(type(node), []).append(node)
        for name in node._fields:
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, ast.AST):
                    parent[id(child)] = node
                    nodes.append(child)
    return nodes, parent, by_type


def subtree_ids(node: ast.AST) -> list[int]:
    """The id of ``node`` and of every node below it (walk's nodes without its parents and types: one f-string
    part of 147,000 lines of + chains)."""
    ids, stack = [], [node]
    while stack:
        part = stack.pop()
        ids.append(id(part))
        stack.extend(ast.iter_child_nodes(part))
    return ids


# the node types Module.__init__ gathers from, and those a launch string or argv list may be written as
GATHERED = (ast.Import, ast.ImportFrom, ast.Assign, ast.AnnAssign, ast.Delete, ast.ClassDef, ast.FunctionDef,
            ast.AsyncFunctionDef, ast.Call)
LAUNCH_TYPES = (ast.JoinedStr, ast.BinOp, ast.Constant, ast.List, ast.Tuple)


class Module(Values):
    def __init__(self, path: str, tree: ast.Module, read_launches: bool = True):
        self.path, self.tree = path, tree
        self.imports: dict[str, str] = {}  # local name -> module.attribute it stands for
        self.assigned: dict[str, list[ast.AST]] = {}
        self.edits: dict[str, list[ast.AST]] = {}  # a dict variable -> the statements that change its keys
        self.bases: dict[str, list[ast.AST]] = {}  # a class defined here -> its bases
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self._attribute_stores: set[tuple[str, str]] | None = None
        self._arguments: dict[tuple, list[tuple[list, dict]]] | None = None
        self.launched_with: list[list[str]] = []  # the script arguments of each launch that runs this module
        self.functions: dict[str, list[ast.AST]] = {}  # a function defined here (top level first) -> its definitions
        self.own_sys_path = False  # a sys.path entry of the project's is put first (Project.imports_of)
        self.linked: dict[str, tuple[Module, str]] = {}  # a name imported from a project module -> (it, the name there)
        self._sequence_classifiers: list[ast.AST] | None = None
        self.dotted: dict[str, Module] = {}  # `import pkg.util`: "pkg.util" -> that project module
        self.builders: dict[int, list[ast.Call]] = {}  # a function defined here -> the TrainingArguments it builds
        self.calls: list[ast.Call] = []
        self._calls_by_name: dict[str, list[ast.Call]] | None = None
        self._call_position: dict[int, int] = {}
        self.nodes, self.parent, self.by_type = walk(tree)
        by_type = self.by_type
        self._stores: Counter | None = None
        self._const_names: dict[tuple[str, int], object] = {}
        self._mappings: dict[tuple, tuple[dict, bool]] = {}
        self.helper_looks: dict[str, bool] = {}  # a function of its own -> whether it returns a look for a checkpoint
        self.guarded_functions: dict[str, bool] = {}  # a function of its own -> called only under a checkpoint look
        self.helper_found: dict[str, bool | None] = {}  # a function of its own -> helper_found_when_true
        self.eos: dict[int, bool] = {}  # an expression -> is_eos
        self.pad_eos: list[int] | None = None  # pad_eos_lines
        self.sides: dict[int, tuple[bool, bool]] = {}  # a test -> guard_sides
        self.block_guards: dict[int, tuple[dict[int, int], list[bool]]] = {}  # a block -> guarded_before
        self.looks: dict[int, bool] = {}  # a condition -> whether it looks for a checkpoint (looks_for_checkpoint)
        self.first_trainer_line: float | None = None  # the first line that builds a Trainer (built_before)
        for node in self.of_types(*GATHERED):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or \
                        alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(node.value)
                    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                        self.edits.setdefault(target.value.id, []).append(node)  # cfg["x"] = ...
            elif isinstance(node, ast.Delete):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                        self.edits.setdefault(target.value.id, []).append(node)
            elif isinstance(node, ast.ClassDef):
                self.bases[node.name] = node.bases
                self.classes.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Call):
                self.calls.append(node)
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and \
                        node.func.attr in ("update", "setdefault", "pop", "popitem", "clear", "__setitem__"):
                    self.edits.setdefault(node.func.value.id, []).append(node)  # cfg.update(x=...)
        self.launches: list[Launch] = []
        def of(*types: type) -> list[ast.AST]:
            return [node for kind in types for node in by_type.get(kind, [])]

        self.names = {node.id for node in of(ast.Name)} | {node.attr for node in of(ast.Attribute)} | \
            {node.arg for node in of(ast.keyword) if node.arg} | {node.name for node in of(ast.FunctionDef,
                                                                                           ast.ClassDef)}
        docstrings = {id(node.value) for node in of(ast.Expr)}
        self._prose = docstrings | {id(node.value) for node in of(ast.keyword)
                                    if node.arg in PROSE_KEYWORDS}  # argparse help=, epilog=: text, never run
        self.strings = {node.value for node in of(ast.Constant)
                        if isinstance(node.value, str) and id(node) not in docstrings}
        self.project: list[Module] = [self]  # this module and the project modules it imports (Project.link)
        self.imported: list[tuple[int, Module]] = []  # (line of the import, a project module it imports)
        self._project_names: set[str] | None = None
        self._project_strings: set[str] | None = None
        self._project_words: set[str] | None = None
        self._tokens_counted: tuple[str | None] | None = None
        self._project_bases: dict[str, list[str]] | None = None
        self._project_classes: set[str] | None = None
        if read_launches:  # a project module found next to a given one is read only for what it defines
            self._read_launch_strings()
        self.found_nearby = not read_launches  # not given: found next to a given module that imports it

    def of_types(self, *types: type) -> list[ast.AST]:
        """The nodes of these types in walk's order (a rule whose findings come in that order)."""
        if len(types) == 1:
            return self.by_type.get(types[0], [])
        wanted = set(types)
        return [node for node in self.nodes if type(node) in wanted]

    @property
    def stores(self) -> Counter:
        """How many times each name is bound (`x = ...`, `a, x = ...`, `for x in ...`, `with ... as x`)."""
        if self._stores is None:
            self._stores = Counter(node.id for node in self.of_types(ast.Name) if isinstance(node.ctx, ast.Store))
        return self._stores

    # -- the project: what this module and the modules it imports define
    @property
    def project_names(self) -> set[str]:
        """The names of this module and of the project modules it imports, and what its imports stand for (a
        get_metrics defined in the model's module counts for the training script that imports it)."""
        if self._project_names is None:
            self._project_names = set().union(*(module.names | set(module.imports.values())
                                                for module in self.project))
        return self._project_names

    @property
    def project_classes(self) -> set[str]:
        """The classes defined in this module and the project modules it imports."""
        if self._project_classes is None:
            self._project_classes = {name for part in self.project for name in part.bases}
        return self._project_classes

    @property
    def project_strings(self) -> set[str]:
        """The string constants of this module and the project modules it imports, and its project names: what a
        rule looks for in the whole project (trainer_state.json, input_ids), gathered once per module."""
        if self._project_strings is None:
            self._project_strings = set().union(*(module.strings for module in self.project))
        return self._project_strings

    @property
    def project_words(self) -> set[str]:
        if self._project_words is None:
            self._project_words = self.project_names | self.project_strings
        return self._project_words

    def inherits(self, name: str, test, seen: set[str] | None = None) -> bool:
        """Whether ``test(a short class name)`` holds for the class ``name`` or a class it derives from, through the
        classes defined in this module and the project modules it imports."""
        seen = set() if seen is None else seen
        if test(name):
            return True
        if name in seen or len(seen) > 50:
            return False
        seen.add(name)
        if self._project_bases is None:
            self._project_bases = {}
            for module in self.project:
                for defined, bases in module.bases.items():
                    self._project_bases.setdefault(defined, []).extend(
                        module.qualname(base).rsplit(".", 1)[-1] for base in bases)
        return any(self.inherits(base, test, seen) for base in self._project_bases.get(name, []))

    # -- names
    def sequence_classifiers(self) -> list[ast.AST]:
        """The names and attributes here that stand for a *ForSequenceClassification class; read once per module
        (every module of a project reads those of the modules it imports)."""
        if self._sequence_classifiers is None:
            self._sequence_classifiers = [
                node for node in self.of_types(ast.Name, ast.Attribute) if
                self.qualname(node).endswith("ForSequenceClassification")]
        return self._sequence_classifiers

    def single(self, name: str) -> ast.AST | None:
        values = self.assigned.get(name, [])
        return values[0] if len(values) == 1 else None

    def qualname(self, node: ast.AST, depth: int = 0) -> str:
        """`transformers.Trainer` for a Trainer imported from transformers, the bare name otherwise."""
        if depth > 8:
            return ""
        if isinstance(node, ast.Name):
            if node.id in self.imports:
                return self.imports[node.id]
            value = self.single(node.id)
            if isinstance(value, (ast.Name, ast.Attribute)):
                return self.qualname(value, depth + 1)
            return node.id
        if isinstance(node, ast.Attribute):
            return f"{self.qualname(node.value, depth + 1)}.{node.attr}"
        if isinstance(node, ast.Call):
            return self.qualname(node.func, depth + 1) + "()"
        return ""

    def short(self, call: ast.Call) -> str:
        return self.qualname(call.func).rsplit(".", 1)[-1]

    # -- functions of the project
    def callee(self, call: ast.Call) -> "tuple[Module, ast.AST] | None":
        """(module, definition) of the project function ``call`` calls: defined here, imported from a project module
        (`from data import make_loader`, `data.make_loader`), or the one function of that name in the project."""
        function = call.func
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) and \
                function.value.id in self.linked and not self.linked[function.value.id][1]:
            other = self.linked[function.value.id][0]
            return (other, other.functions[function.attr][0]) if function.attr in other.functions else None
        if not isinstance(function, ast.Name) or function.id in self.bases:
            return None
        if function.id in self.linked:
            other, name = self.linked[function.id]
            return (other, other.functions[name][0]) if name in other.functions else None
        if function.id in self.functions:
            return self, self.functions[function.id][0]
        defined = [(part, part.functions[function.id][0]) for part in self.project if function.id in part.functions]
        return defined[0] if len(defined) == 1 else None

    def returned(self, call: ast.Call) -> "list[tuple[Module, ast.AST]] | None":
        """(module, expression) per value the project function ``call`` calls returns, a local name followed to the
        one value the function assigns it; None when ``call`` is not a call of a project function or returns nothing
        that can be read."""
        found = self.callee(call)
        if found is None:
            return None
        part, definition = found
        statements = list(own_nodes(definition))
        local: dict[str, list[ast.AST]] = {}
        for node in statements:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        local.setdefault(target.id, []).append(node.value)
        values = []
        for node in statements:
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if isinstance(value, ast.Name) and len(local.get(value.id, [])) == 1:
                    value = local[value.id][0]
                values.append((part, part.resolve(value)))
        return values or None

    def returned_dict(self, call: ast.Call) -> "tuple[Module, ast.AST, int] | None":
        """(module, expression, line) of the one return statement of the project function ``call`` calls: the
        mapping it returns is read as of that line (a key popped or set in the function before it counts)."""
        found = self.callee(call)
        if found is None:
            return None
        part, definition = found
        statements = list(own_nodes(definition))
        returns = [node for node in statements if isinstance(node, ast.Return) and node.value is not None]
        if len(returns) != 1:
            return None
        value = returns[0].value
        if isinstance(value, ast.Name) and part.single(value.id) is None:  # a name other functions assign too
            local = [node.value for node in statements if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == value.id for target in node.targets)]
            value = local[0] if len(local) == 1 else value  # its own assignment, without the edits after it
        return part, value, returns[0].lineno

    def mentions(self, node: ast.AST | None, test, followed: set[str] | None = None) -> bool:
        """Whether ``test(subnode)`` holds anywhere in ``node``, names followed into what they were assigned. Each
        name is followed once: a name reassigned from itself many times would otherwise cost exponential time."""
        if node is None:
            return False
        followed = set() if followed is None else followed
        for sub in ast.walk(node):
            if test(sub):
                return True
            if isinstance(sub, ast.Name) and sub.id in self.assigned and sub.id not in followed:
                followed.add(sub.id)
                if any(self.mentions(value, test, followed) for value in self.assigned[sub.id]):
                    return True
        return False

    def statement(self, node: ast.AST) -> ast.AST:
        """The statement ``node`` is part of, and whether it sits in a comparison on the way there."""
        while not isinstance(node, ast.stmt) and id(node) in self.parent:
            node = self.parent[id(node)]
        return node

    def compared(self, node: ast.AST) -> bool:
        while not isinstance(node, ast.stmt) and id(node) in self.parent:
            node = self.parent[id(node)]
            if isinstance(node, (ast.Compare, ast.Assert)):
                return True
        return False

    def loop_variables(self, node: ast.AST) -> set[str]:
        """The names bound by the for loops and comprehensions around ``node`` in its function."""
        names: set[str] = set()
        while id(node) in self.parent and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node = self.parent[id(node)]
            targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else \
                [generator.target for generator in node.generators] if isinstance(
                    node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) else []
            names |= {sub.id for target in targets for sub in ast.walk(target) if isinstance(sub, ast.Name)}
        return names

    def calls_named(self, *names: str, suffix: str | None = None) -> list[ast.Call]:
        """The calls of these short names (or ending in ``suffix``), in the module's order. The calls are grouped by
        name once: a rule asking per Trainer call would otherwise cost calls x Trainers."""
        if self._calls_by_name is None:
            self._calls_by_name = {}
            for call in self.calls:
                self._calls_by_name.setdefault(self.short(call), []).append(call)
            self._call_position = {id(call): index for index, call in enumerate(self.calls)}
        wanted = {name for name in self._calls_by_name if suffix is not None and name.endswith(suffix)}
        wanted |= set(names) & set(self._calls_by_name)
        return sorted((call for name in wanted for call in self._calls_by_name[name]),
                      key=lambda call: self._call_position[id(call)])

    # -- launch commands written as strings or argv lists
    def _read_launch_strings(self) -> None:
        seen: set[int] = set()
        for node in self.of_types(*LAUNCH_TYPES):
            if id(node) in seen and not isinstance(node, (ast.List, ast.Tuple)):
                continue  # a part of a text read whole (a list in an f-string is still an argv list)
            read: list[ast.AST] = []  # the nodes the text is read from
            text = self.command_text(node, read) if isinstance(node, (ast.JoinedStr, ast.BinOp)) and \
                id(node) not in seen and not isinstance(self.parent.get(id(node)), (ast.JoinedStr, ast.BinOp)) else None
            if text is not None:  # f"torchrun --nproc_per_node {n} " + "train.py ...": read whole, never in parts
                for part in read:  # a + or a string is one node; "{} x".format(n) holds strings of its own
                    seen.update([id(part)] if isinstance(part, (ast.BinOp, ast.JoinedStr, ast.Constant)) else
                                subtree_ids(part))
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in seen:
                text = node.value if len(node.value) < 4000 else None  # a long constant is a text, not a command
            if text is not None and id(node) not in self._prose:
                first = text.lstrip().split(" ", 1)[0]
                if launcher_name(first) or first in WRAPPERS or "\n" in text:
                    for launch in launches_in_shell(text, self.path, node.lineno):
                        if launch.launcher != "python" or launch.args:
                            self.launches.append(launch)
            elif isinstance(node, (ast.List, ast.Tuple, ast.BinOp)):
                if isinstance(node, ast.BinOp) and id(self.parent.get(id(node))) in seen:
                    continue  # a part of a longer `a + b + c`: read as the whole
                elements = self.argv_elements(node)
                seen.add(id(node))
                if not elements:
                    continue
                first = self.launch_word(elements[0])
                if launcher_name(first) or first in WRAPPERS:
                    elements += self.argv_growth(node)  # only a launcher's list: one walk of the module each
                    words = [first, *map(self.launch_word, elements[1:])]
                    launch = parse_launch(words, self.path, node.lineno, {})
                    if launch:
                        self.launches.append(launch)

    def command_text(self, node: ast.AST, read: list[ast.AST]) -> str | None:
        """The text of a command written as an f-string or strings added together (`f"torchrun --nproc_per_node {n}
        " + "train.py"`), a value not known here written "$?" (unknown to the launch, as a shell variable is); None
        for any other expression; ``read`` gets the nodes it is read from. The chain of + is walked without recursion
        and read whole however long: the 1,999 terms CPython compiles nest as deep."""
        if not isinstance(node, ast.JoinedStr) and not (isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add)):
            return None
        parts, stack = [], [node]
        while stack:
            part = stack.pop()
            read.append(part)
            if isinstance(part, ast.BinOp) and isinstance(part.op, ast.Add):
                stack += [part.right, part.left]
            elif isinstance(part, ast.JoinedStr):
                stack += reversed(part.values)
            elif isinstance(part, ast.FormattedValue):
                value = self.const(part.value) if part.format_spec is None and part.conversion == -1 else UNKNOWN
                parts.append(str(value) if plain(value) else "$?")
            elif isinstance(value := self.const(part), str):
                parts.append(value)
            else:
                return None
        return "".join(parts)

    def argv_growth(self, node: ast.AST) -> list[ast.AST]:
        """What a list assigned to a name gets later in the module: `cmd += [...]`, `cmd.append(x)`,
        `cmd.extend([...])` (an element not known here for what cannot be read)."""
        assignment = self.parent.get(id(node))
        if not isinstance(assignment, ast.Assign) or len(assignment.targets) != 1 or \
                not isinstance(assignment.targets[0], ast.Name):
            return []
        name, grown = assignment.targets[0].id, []
        if self.stores[name] != 1 + sum(isinstance(later, ast.AugAssign) and isinstance(later.target, ast.Name) and
                                        later.target.id == name for later in self.nodes):
            return []  # bound again: which list is launched cannot be told
        for later in self.nodes:
            if getattr(later, "lineno", 0) <= assignment.lineno:
                continue
            if isinstance(later, ast.AugAssign) and isinstance(later.target, ast.Name) and later.target.id == name \
                    and isinstance(later.op, ast.Add):
                grown.append((later.lineno, later.col_offset, self.argv_elements(later.value, 1) or [ast.Name("")]))
            elif isinstance(later, ast.Call) and isinstance(later.func, ast.Attribute) and \
                    isinstance(later.func.value, ast.Name) and later.func.value.id == name and \
                    later.func.attr in ("append", "extend", "insert") and later.args:
                added = [later.args[0]] if later.func.attr == "append" else \
                    self.argv_elements(later.args[0], 1) or [ast.Name("")] if later.func.attr == "extend" else \
                    [ast.Name("")]
                grown.append((later.lineno, later.col_offset, added))
        return [element for _, _, added in sorted(grown, key=lambda item: item[:2]) for element in added]

    def argv_elements(self, node: ast.AST, depth: int = 0) -> list[ast.AST] | None:
        """The elements of an argv list: [...], base + [...], [*base, ...], a name assigned one of them."""
        node = self.resolve(node) if depth else node
        if depth > 4:
            return None
        if isinstance(node, (ast.List, ast.Tuple)):
            elements = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    inner = self.argv_elements(element.value, depth + 1)
                    if inner is None:
                        return elements + [element] if elements else None  # the rest is not known here
                    elements += inner
                else:
                    elements.append(element)
            return elements
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self.argv_elements(node.left, depth + 1)
            right = self.argv_elements(node.right, depth + 1)
            return None if left is None else left + (right if right is not None else [ast.Name("")])
        return None

    def launch_word(self, node: ast.AST) -> str:
        """One element of an argv list: its constant value, "python" for sys.executable, the script's file name for
        a path built around one (`str(HERE / "train.py")`, f"{root}/train.py"), else "$?": a value not known here."""
        value = self.const(node)
        if isinstance(node, ast.Call) and self.short(node) in ("str", "int") and len(node.args) == 1:
            value = self.const(node.args[0])  # str(NPROC), NPROC = 2
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if isinstance(node, ast.Attribute) and self.qualname(node) == "sys.executable":
            return "python"
        if not isinstance(node, ast.Starred):
            node = self.resolve(node)
            scripts = [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant)
                       and isinstance(sub.value, str) and sub.value.endswith(".py")]
            if len(scripts) == 1:
                return os.path.basename(scripts[0]) or "$?"
        return "$?"


def line_of(node: ast.AST) -> int:
    return getattr(node, "lineno", 1)


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(function: ast.AST):
    """The nodes of a function's (or a module's) body, without those of the functions, lambdas and classes defined
    inside it, a definition written directly in the body included."""
    queue = [node for node in getattr(function, "body", []) if not isinstance(node, DEFINITIONS)]
    while queue:
        node = queue.pop()
        yield node
        queue += [child for child in ast.iter_child_nodes(node) if not isinstance(child, DEFINITIONS)]


def at(module: Module, part: Module, line: int):
    """Where a finding in ``part`` (a project module ``module`` imports, or itself) is reported."""
    return line if part is module else (part.path, line)


CAUSAL_LM = re.compile(r"CausalLM|LMHeadModel")
MASKED_LM = re.compile(r"MaskedLM")
SEQ2SEQ = re.compile(r"Seq2SeqLM|ForConditionalGeneration")


def is_true(value) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))

