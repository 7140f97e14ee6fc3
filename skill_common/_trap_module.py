"""A Python module read with ast, never imported: its names, imports, assignments and calls, and the values it gives
(constants followed through names, dicts, arithmetic, f-strings, argparse defaults, dataclass fields and the project
modules it imports). A module of trap_check.py (synced from skill_common/ into every skill's scripts/ folder).
"""

import ast
import os
import re
from collections import Counter

from _trap_launch import Launch, UNKNOWN, WRAPPERS, launcher_name, launches_in_shell, parse_launch


PROSE_KEYWORDS = ("help", "epilog", "description", "usage", "prog")


def walk(tree: ast.AST) -> tuple[list[ast.AST], dict[int, ast.AST]]:
    """Every node of ``tree`` in ast.walk's order, and each node's parent (by id), in one pass over the tree."""
    nodes, parent = [tree], {}
    for node in nodes:  # the list grows as it is read: breadth first, as ast.walk
        for name in node._fields:
            value = getattr(node, name, None)
            for child in value if isinstance(value, list) else (value,):
                if isinstance(child, ast.AST):
                    parent[id(child)] = node
                    nodes.append(child)
    return nodes, parent


ARITHMETIC = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
              ast.FloorDiv: lambda a, b: a // b, ast.Div: lambda a, b: a / b, ast.Mod: lambda a, b: a % b}
FIELD = re.compile(r"\{(\d*|[A-Za-z_]\w*)\}")  # "{}", "{0}", "{n}": no attribute, index or format spec


def plain(value) -> bool:
    """A constant that writes the same in a string as in the code: a number or a short string, not True or None."""
    return (isinstance(value, (int, float)) and not isinstance(value, bool)) or (isinstance(value, str) and
                                                                                len(value) < 10_000)


def arithmetic(op: ast.operator, left, right):
    """``left op right`` for two numbers (or two strings added), UNKNOWN otherwise or when it fails or grows past
    what a setting holds."""
    numbers = all(plain(value) and not isinstance(value, str) for value in (left, right))
    if not numbers and not (isinstance(op, ast.Add) and all(plain(value) and isinstance(value, str)
                                                               for value in (left, right))):
        return UNKNOWN
    try:
        value = ARITHMETIC[type(op)](left, right)
    except (ArithmeticError, ValueError):
        return UNKNOWN
    return value if plain(value) and (isinstance(value, str) or abs(value) < 10 ** 30) else UNKNOWN


def formatted(template, args: list, kwargs: dict):
    """``template.format(*args, **kwargs)`` with plain fields only ("{}iter", "{n}tok"); UNKNOWN otherwise."""
    values = [*args, *kwargs.values()]
    if not isinstance(template, str) or not all(plain(value) for value in values) or \
            template.count("{") != len(FIELD.findall(template)) or template.count("}") != template.count("{"):
        return UNKNOWN
    try:
        return template.format(*args, **kwargs)
    except (IndexError, KeyError, ValueError):
        return UNKNOWN


class Module:
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
        self.nodes, self.parent = walk(tree)
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
        for node in self.nodes:
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
        self.names = {node.id for node in self.nodes if isinstance(node, ast.Name)} | \
            {node.attr for node in self.nodes if isinstance(node, ast.Attribute)} | \
            {node.arg for node in self.nodes if isinstance(node, ast.keyword) and node.arg} | \
            {node.name for node in self.nodes if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        docstrings = {id(node.value) for node in self.nodes if isinstance(node, ast.Expr)}
        self._prose = docstrings | {id(node.value) for node in self.nodes if isinstance(node, ast.keyword)
                                    and node.arg in PROSE_KEYWORDS}  # argparse help=, epilog=: text, never run
        self.strings = {node.value for node in self.nodes if isinstance(node, ast.Constant)
                        and isinstance(node.value, str) and id(node) not in docstrings}
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

    @property
    def stores(self) -> Counter:
        """How many times each name is bound (`x = ...`, `a, x = ...`, `for x in ...`, `with ... as x`)."""
        if self._stores is None:
            self._stores = Counter(node.id for node in self.nodes if isinstance(node, ast.Name)
                                   and isinstance(node.ctx, ast.Store))
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

    # -- values
    def sequence_classifiers(self) -> list[ast.AST]:
        """The names and attributes here that stand for a *ForSequenceClassification class; read once per module
        (every module of a project reads those of the modules it imports)."""
        if self._sequence_classifiers is None:
            self._sequence_classifiers = [
                node for node in self.nodes if isinstance(node, (ast.Name, ast.Attribute)) and
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

    def const(self, node: ast.AST | None, depth: int = 0):
        if node is None or depth > 8:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.const(node.operand, depth + 1)
            return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else UNKNOWN
        if isinstance(node, ast.BinOp) and type(node.op) in ARITHMETIC:  # save_steps=eval_every * 4
            return arithmetic(node.op, self.const(node.left, depth + 1), self.const(node.right, depth + 1))
        if isinstance(node, ast.JoinedStr):  # f"{TOKEN_BUDGET}tok"
            parts = [self.const(part.value if isinstance(part, ast.FormattedValue) and part.conversion == -1
                                and part.format_spec is None else part, depth + 1)
                     if isinstance(part, ast.FormattedValue) else part.value for part in node.values]
            return "".join(map(str, parts)) if all(plain(part) for part in parts) else UNKNOWN
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
            return formatted(self.const(node.func.value, depth + 1), [self.const(arg, depth + 1) for arg in node.args],
                             {keyword.arg: self.const(keyword.value, depth + 1) for keyword in node.keywords})
        if isinstance(node, ast.Name):  # memoised per (name, depth): `x0 = x1` written many times stays linear
            key = (node.id, depth)
            if key not in self._const_names:
                self._const_names[key] = UNKNOWN  # a name assigned from itself is unknown
                values = [self.const(value, depth + 1) for value in self.assigned.get(node.id, [])]
                if not values and node.id in self.linked:  # `from config import MAX_DURATION`: read it there
                    other, name = self.linked[node.id]
                    values = [other.const(ast.Name(name), depth + 1)] if name else []
                self._const_names[key] = values[0] if values and all(value == values[0] for value in values) \
                    else UNKNOWN
            return self._const_names[key]
        if isinstance(node, ast.Subscript) and self.qualname(node.value).endswith("Precision"):
            value = self.const(node.slice, depth + 1)  # Precision["AMP_BF16"]
            return value.lower() if isinstance(value, str) else UNKNOWN
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):  # CFG["max_duration"]
            found, _ = self.mapping(node.value, node.lineno)
            return self.const(found[node.slice.value][0], depth + 1) if node.slice.value in found else UNKNOWN
        if isinstance(node, ast.Attribute) and self.qualname(node.value).endswith(("Strategy", "Precision")):
            return node.attr.lower()  # IntervalStrategy.STEPS, SaveStrategy.BEST, composer.core.Precision.AMP_BF16
        if isinstance(node, ast.Call) and self.qualname(node.func).endswith("Precision") and len(node.args) == 1:
            return self.const(node.args[0], depth + 1)  # Precision("amp_bf16")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                isinstance(self.single(node.value.id), ast.Call):
            return self.field_default(self.single(node.value.id), node.value.id, node.attr, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                len(self.classes.get(node.value.id, [])) == 1 and not self.assigned.get(node.value.id):
            return self.class_attribute(self.classes[node.value.id][0], node.value.id, node.attr, depth)  # Cfg.x
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.linked and \
                not self.assigned.get(node.value.id) and not self.linked[node.value.id][1]:
            return self.linked[node.value.id][0].const(ast.Name(node.attr), depth + 1)  # import config; config.X
        if isinstance(node, (ast.Attribute, ast.Subscript)):  # config.CFG["x"], config.Cfg.x, from config import Cfg
            base = node.value
            home = self.imported_name(base) if isinstance(base, (ast.Name, ast.Attribute)) else None
            if home is not None:
                other, name = home
                moved = ast.Attribute(ast.Name(name, ast.Load()), node.attr, ast.Load()) \
                    if isinstance(node, ast.Attribute) else ast.Subscript(ast.Name(name, ast.Load()), node.slice)
                moved.lineno = 10 ** 9  # read after every edit of that module
                return other.const(moved, depth + 1)
        return UNKNOWN

    def field_default(self, holder: ast.Call, name: str, attribute: str, depth: int):
        """``name.attribute`` where ``name = holder``: an argparse default (`p.add_argument("--grad_accum",
        default=8)` and `a = p.parse_args()`) or a field of a dataclass of this module (`cfg = Cfg()`, `grad_accum:
        int = 4`), unless the value is set on it again; UNKNOWN otherwise."""
        if self._attribute_stores is None:
            self._attribute_stores = {(node.value.id, node.attr) for node in self.nodes if isinstance(
                node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)}
        if (name, attribute) in self._attribute_stores:
            return UNKNOWN
        function = holder.func
        returned = self.returned(holder) if isinstance(function, ast.Name) and depth < 8 else None
        if returned and len(returned) == 1 and returned[0][0] is self and isinstance(returned[0][1], ast.Call):
            return self.field_default(returned[0][1], name, attribute, depth + 1)  # args = parse_args(): a helper's
        if isinstance(function, ast.Attribute) and function.attr == "parse_args" and not holder.args and \
                not holder.keywords and isinstance(function.value, ast.Name):
            if self._arguments is None:  # (parser, dest) -> the add_argument calls: read once per module
                self._arguments = {}
                for call in self.calls:
                    if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument" and \
                            isinstance(call.func.value, ast.Name):
                        flags = [self.const(argument) for argument in call.args]
                        kw = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
                        long = [flag for flag in flags if isinstance(flag, str) and flag.startswith("--")]
                        dest = self.const(kw["dest"]) if "dest" in kw else \
                            long[0][2:].replace("-", "_") if long else None
                        self._arguments.setdefault((call.func.value.id, dest), []).append((flags, kw))
            given = self._arguments.get((function.value.id, attribute), [])
            if len(given) != 1 or "default" not in given[0][1] or "action" in given[0][1] or \
                    self.const(given[0][1].get("required")) is True:
                return UNKNOWN
            flags, kw = given[0]
            others = [flag for (parser, _), calls in self._arguments.items() if parser == function.value.id
                      for other, _ in calls if other is not flags for flag in other if isinstance(flag, str)]
            return self.launched_value(flags, kw, self.const(kw["default"], depth + 1), others)
        if not isinstance(function, ast.Name) or len(self.classes.get(function.id, [])) != 1 or holder.args:
            return UNKNOWN
        definition = self.classes[function.id][0]
        if not any("dataclass" in ast.dump(decorator) for decorator in definition.decorator_list):
            return UNKNOWN
        for keyword in holder.keywords:
            if keyword.arg is None:
                return UNKNOWN
            if keyword.arg == attribute:
                return self.const(keyword.value, depth + 1)
        return self.class_attribute(definition, function.id, attribute, depth)

    def launched_value(self, flags: list, kw: dict, default, others: list[str]):
        """What an argparse flag holds when the launches given here run this module: the one value every launch
        gives it (the default where a launch leaves it out), UNKNOWN when they differ or one is not known here;
        the default when no launch runs the module. Read as argparse reads it: `--x v`, `--x=v`, `-xv`, a unique
        prefix of a long flag (``others``: the parser's other flags), the last one given, and a string default
        converted by type=."""
        convert = {"int": int, "float": float, "str": str}.get(called_name(kw["type"]) if "type" in kw else "str")
        if convert is None:
            return UNKNOWN if self.launched_with else default
        try:
            default = convert(default) if isinstance(default, str) else default
        except ValueError:
            return UNKNOWN
        names = [flag for flag in flags if isinstance(flag, str) and flag.startswith("-")]
        values = []
        for args in self.launched_with:
            given = None
            for index, token in enumerate(args):
                key, equals, attached = token.partition("=")
                long = key in names or key.startswith("--") and len(key) > 2 and not any(
                    other == key for other in others) and any(name.startswith(key) for name in names) and \
                    not any(other.startswith(key) for other in others)  # argparse's allow_abbrev: a unique prefix
                short = [name for name in names if len(name) == 2 and not name.startswith("--") and
                         token.startswith(name) and len(token) > 2]
                if long or token in names:
                    given = attached if equals else args[index + 1] if index + 1 < len(args) else ""
                elif short:
                    given = token[2:]  # -j4
            if given is not None and re.search(r"[$`]", given):
                return UNKNOWN  # a shell variable, or "$?" from an argv list
            try:
                values.append(default if given is None else convert(given))
            except ValueError:
                return UNKNOWN
        return default if not values else values[0] if all(value == values[0] for value in values) else UNKNOWN

    def class_attribute(self, definition: ast.ClassDef, name: str, attribute: str, depth: int):
        """The value a class body gives ``attribute`` (`max_duration = "2ep"`, `max_duration: str = "2ep"` or a
        dataclass `field(default=...)`), unless ``name.attribute`` is set anywhere in this module; UNKNOWN otherwise."""
        if self._attribute_stores is None:
            self._attribute_stores = {(node.value.id, node.attr) for node in self.nodes if isinstance(
                node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)}
        if (name, attribute) in self._attribute_stores:
            return UNKNOWN
        values = [statement.value for statement in definition.body
                  if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and
                  statement.target.id == attribute and statement.value is not None or
                  isinstance(statement, ast.Assign) and len(statement.targets) == 1 and
                  isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == attribute]
        if len(values) != 1:
            return UNKNOWN
        value = values[0]
        if isinstance(value, ast.Call) and called_name(value.func) == "field":
            value = next((keyword.value for keyword in value.keywords if keyword.arg == "default"), None)
        return self.const(value, depth + 1)

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

    def resolve(self, node: ast.AST | None, depth: int = 0) -> ast.AST | None:
        """A name followed to the one expression assigned to it."""
        while isinstance(node, ast.Name) and depth < 8 and self.single(node.id) is not None:
            node, depth = self.single(node.id), depth + 1
        return node

    def kwargs(self, call: ast.Call, depth: int = 0) -> tuple[dict[str, tuple[ast.AST, int]], bool]:
        """keyword -> (value, line), `**mapping` followed into dict literals, dict(...) calls and the keys set on
        them before the call (`cfg["x"] = ...`, `cfg.update(x=...)`); complete is False when some `**` could not be
        read (then an absent keyword may be there)."""
        found, complete = {}, True
        for keyword in call.keywords:
            if keyword.arg is not None:
                found[keyword.arg] = (keyword.value, keyword.value.lineno)
                continue
            inner, inner_complete = self.mapping(keyword.value, call.lineno, depth)
            found.update(inner)
            complete &= inner_complete
        return found, complete

    def mapping(self, node: ast.AST, before: int, depth: int = 0) -> tuple[dict[str, tuple[ast.AST, int]], bool]:
        """The literal keys of a dict expression: {...}, dict(...), {**a, ...}, a name assigned one of them and the
        keys set on that name above line ``before``; complete is False where a key cannot be read."""
        name = node.id if isinstance(node, ast.Name) else None
        key = (name or id(node), before, depth)  # memoised: `a0.update(a1)` written many times stays linear
        if key not in self._mappings:
            self._mappings[key] = ({}, False)  # a dict updated from itself is not read
            self._mappings[key] = self._mapping(node, name, before, depth)
        found, complete = self._mappings[key]
        return dict(found), complete

    def _mapping(self, node: ast.AST, name: str | None, before: int, depth: int):
        node = self.resolve(node)
        found, complete = {}, True
        if depth > 4:
            return found, False
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:  # {**base, ...}
                    inner, inner_complete = self.mapping(value, before, depth + 1)
                    found.update(inner)
                    complete &= inner_complete
                elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found[key.value] = (value, key.lineno)
                else:
                    complete = False
        elif self.imported_name(node) is not None:  # `from defaults import DEFAULTS`: read it there
            other, there = self.imported_name(node)
            inner, complete = other.mapping(ast.Name(there), 10 ** 9, depth + 1)
            found = {key: (value, before) for key, (value, _) in inner.items()}  # named at the use here
        elif isinstance(node, ast.Call) and self.short(node) != "dict" and self.returned_dict(node) is not None:
            part, value, line = self.returned_dict(node)  # TrainingArguments(**config()): the dict config() returns
            inner, complete = part.mapping(value, line, depth + 1)  # with the edits of it above the return
            found = inner if part is self else {key: (value, before) for key, (value, _) in inner.items()}
        elif isinstance(node, ast.Call) and self.short(node) == "dict" and len(node.args) <= 1:
            for argument in node.args:  # dict(base, x=1)
                inner, complete = self.mapping(argument, before, depth + 1)
                found.update(inner)
            inner, inner_complete = self.kwargs(node, depth + 1)
            found.update(inner)
            complete &= inner_complete
        else:
            return found, False
        for edit in self.edits.get(name, []) if name else []:
            if edit.lineno >= before:
                continue
            if isinstance(edit, (ast.Assign, ast.AnnAssign)):  # cfg["x"] = value
                targets = edit.targets if isinstance(edit, ast.Assign) else [edit.target]
                key = self.const(targets[0].slice) if len(targets) == 1 else UNKNOWN
                if isinstance(key, str):
                    found[key] = (edit.value, edit.lineno)
                else:
                    complete = False
            elif isinstance(edit, ast.Delete) or edit.func.attr in ("pop", "popitem", "clear"):
                keys = [self.const(target.slice) for target in edit.targets if isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name) and target.value.id == name] \
                    if isinstance(edit, ast.Delete) else [self.const(argument) for argument in edit.args[:1]]
                for key in keys:
                    if isinstance(key, str):
                        found.pop(key, None)
                if not keys or not all(isinstance(key, str) for key in keys):
                    found, complete = {}, False  # cfg.pop(old) in a loop: any key may be gone
            elif edit.func.attr in ("setdefault", "__setitem__"):
                key = self.const(edit.args[0]) if edit.args else UNKNOWN
                if isinstance(key, str) and len(edit.args) > 1:
                    found[key] = found[key] if edit.func.attr == "setdefault" and key in found else \
                        (edit.args[1], edit.lineno)
                else:
                    complete = False
            else:  # update({...}) or update(x=...)
                for argument in edit.args:
                    inner, inner_complete = self.mapping(argument, before, depth + 1)
                    found.update(inner)
                    complete &= inner_complete
                inner, inner_complete = self.kwargs(edit, depth + 1)
                found.update(inner)
                complete &= inner_complete
        return found, complete

    def imported_name(self, node: ast.AST) -> "tuple[Module, str] | None":
        """(module, name there) for a name imported from a project module and not assigned here (`from defaults
        import DEFAULTS`; `import defaults` and `defaults.DEFAULTS`)."""
        if isinstance(node, ast.Name) and node.id in self.linked and not self.assigned.get(node.id) and \
                self.linked[node.id][1]:
            return self.linked[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.linked \
                and not self.assigned.get(node.value.id) and not self.linked[node.value.id][1]:
            return self.linked[node.value.id][0], node.attr
        return None

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
        for node in self.nodes:
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 4000 and \
                    id(node) not in self._prose:
                first = node.value.lstrip().split(" ", 1)[0]
                if launcher_name(first) or first in WRAPPERS or "\n" in node.value:
                    for launch in launches_in_shell(node.value, self.path, node.lineno):
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


def called_name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
