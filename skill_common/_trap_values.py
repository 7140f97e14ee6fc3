"""The values a module gives, read without running it: constants followed through names, dicts, arithmetic,
f-strings and str.format, argparse defaults (and the value each launch gives the flag), dataclass fields and class
attributes, the keys of `**mapping`, and names imported from a project module. Module (_trap_module) derives from
Values. A module of trap_check.py (synced from skill_common/ into every skill's scripts/ folder).
"""

import ast
import re

from _trap_launch import UNKNOWN


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


class Values:
    """The value-reading methods of Module: they read what Module.__init__ gathers (assigned, edits, classes, calls,
    linked, launched_with, and the memo dicts _const_names, _mappings, _arguments, _attribute_stores)."""
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
            switch = self.const(given[0][1].get("action")) if len(given) == 1 else None
            if switch in ("store_true", "store_false") and "default" not in given[0][1] and self.launched_with:
                return self.launched_switch(given[0][0], switch == "store_true")
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

    def launched_switch(self, flags: list, given: bool):
        """What a store_true (``given`` True) or store_false flag holds when the launches given here run this module:
        the same on every launch (written out, `--resume`, on each, or on none), else UNKNOWN."""
        names = [flag for flag in flags if isinstance(flag, str) and flag.startswith("-")]
        present = {any(token in names for token in args) for args in self.launched_with}
        if len(present) != 1 or any(token.startswith("-") and "$" in token for args in self.launched_with
                                    for token in args):
            return UNKNOWN
        return given if present.pop() else not given

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

    def imported_name(self, node: ast.AST) -> "tuple[Values, str] | None":
        """(module, name there) for a name imported from a project module and not assigned here (`from defaults
        import DEFAULTS`; `import defaults` and `defaults.DEFAULTS`)."""
        if isinstance(node, ast.Name) and node.id in self.linked and not self.assigned.get(node.id) and \
                self.linked[node.id][1]:
            return self.linked[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.linked \
                and not self.assigned.get(node.value.id) and not self.linked[node.value.id][1]:
            return self.linked[node.value.id][0], node.attr
        return None


def called_name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""
