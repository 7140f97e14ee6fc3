"""Training arguments and trainers as the Transformers rules read them: each TrainingArguments (or
Seq2SeqTrainingArguments, a project subclass, a project function that builds one, HfArgumentParser.parse_dict) and
its keywords, the settings given outside a call (dataclass defaults, values set later), the Trainer calls, and
whether a launch's flags reach TrainingArguments (HfArgumentParser, or the script's own parser). It holds no rule.
A module of trap_check.py (synced from skill_common/ into every skill's scripts/ folder).
"""

import ast

from _trap_launch import UNKNOWN, Launch
from _trap_module import Module, own_nodes
from _trap_values import called_name


ARGUMENT_CLASSES = ("TrainingArguments", "Seq2SeqTrainingArguments")


def builds_arguments(module: Module, call: ast.Call) -> bool:
    """TrainingArguments(...), Seq2SeqTrainingArguments(...), a library's class named so (GaudiTrainingArguments,
    derived from TrainingArguments) or a project class derived from one. A project's own class with another base (a
    @dataclass ExperimentTrainingArguments of its sweep settings) is not: its fields are not TrainingArguments'."""
    short = module.short(call)
    if not short.endswith("TrainingArguments") and short not in module.names:
        return False
    defined = module.project_classes
    return module.inherits(short, lambda name: name in ARGUMENT_CLASSES or (
        name.endswith("TrainingArguments") and name not in defined))


def forwarded_arguments(module: Module, site: ast.Call) -> list[tuple[ast.AST, dict, bool]]:
    """The training arguments a project function builds from what ``site`` passes it: `def make(**o): return
    TrainingArguments(**o)` called as make(output_dir="o", evaluation_strategy="steps"), or `def make(cfg):
    return TrainingArguments(**cfg)` called with a dict. Keywords written in the function, when it lives in another
    module, are reported at the call's line."""
    found = module.callee(site)
    if found is None:
        return []
    part, definition = found
    if id(definition) not in part.builders:  # a helper called from many lines is read once
        part.builders[id(definition)] = [
            node for node in own_nodes(definition) if isinstance(node, ast.Call) and builds_arguments(part, node)
            and any(keyword.arg is None for keyword in node.keywords)]
    inner_calls = part.builders[id(definition)]
    if not inner_calls:
        return []
    parameters = definition.args
    positional = [argument.arg for argument in [*parameters.posonlyargs, *parameters.args]]
    named = set(positional) | {argument.arg for argument in parameters.kwonlyargs}
    given, given_complete = module.kwargs(site)
    results = []
    for inner in inner_calls:
        kw, complete = {}, given_complete
        for keyword in inner.keywords:
            if keyword.arg is not None:
                value = keyword.value
                if part is not module:  # its names mean nothing here: keep the value only when it is a constant
                    constant = part.const(value)
                    value = ast.Constant(constant) if constant is not UNKNOWN else ast.Name("")
                kw[keyword.arg] = (value, keyword.value.lineno if part is module else site.lineno)
                continue
            unpacked = keyword.value.id if isinstance(keyword.value, ast.Name) else None
            if parameters.kwarg is not None and unpacked == parameters.kwarg.arg:  # **o: the site's other keywords
                kw.update((name, where) for name, where in given.items() if name not in named)
            elif unpacked in named:  # **cfg, a parameter: the dict the site passes for it
                index = positional.index(unpacked) if unpacked in positional else None
                passed = site.args[index] if index is not None and index < len(site.args) and not any(
                    isinstance(argument, ast.Starred) for argument in site.args[:index + 1]) else \
                    given.get(unpacked, (None,))[0]
                if passed is None:
                    complete = False
                    continue
                inner_kw, inner_complete = module.mapping(passed, site.lineno)
                kw.update(inner_kw)
                complete &= inner_complete
            else:
                complete = False
        results.append((site, kw, complete))
    return results


def training_arguments(module: Module) -> list[tuple[ast.AST, dict, bool]]:
    """(node, keywords, complete) per set of training arguments built: TrainingArguments, Seq2SeqTrainingArguments
    and a project class derived from one, a project function that passes its keywords on to one, and
    HfArgumentParser(...).parse_dict({...})."""
    found = []
    for call in module.calls:
        if builds_arguments(module, call):
            found.append((call, *module.kwargs(call)))
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "parse_dict":
            parser = module.resolve(call.func.value)
            if isinstance(parser, ast.Call) and module.short(parser) == "HfArgumentParser":
                given = call.args[0] if call.args else module.kwargs(call)[0].get("args", (None,))[0]
                if given is not None:
                    found.append((call, *module.mapping(given, call.lineno)))
        elif isinstance(call.func, (ast.Name, ast.Attribute)) and (module.functions or module.linked):
            found += forwarded_arguments(module, call)
    return found


SET_LATER = ("gradient_accumulation_steps", "optim")  # read from defaults and later sets, not only from calls


def argument_defaults(module: Module) -> list[tuple[ast.AST, dict, bool]]:
    """Training arguments given outside a call: the field defaults of the script's own dataclass derived from
    TrainingArguments (parsed by HfArgumentParser: `gradient_accumulation_steps: int = field(default=8)`), unless a
    launch gives the flag, and a value set on parsed or built arguments (`training_args.gradient_accumulation_steps =
    4`). Only the settings of SET_LATER: a field the subclass adds (evaluation_strategy) is its own, never passed."""
    found = []
    flags = {token.split("=", 1)[0].lstrip("-").replace("-", "_") for args in module.launched_with for token in args}
    for name, definitions in module.classes.items():
        definition = definitions[0]
        if len(definitions) != 1 or not any("dataclass" in ast.dump(decorator) for decorator in
                                            definition.decorator_list) or \
                not module.inherits(name, lambda base: base in ARGUMENT_CLASSES):
            continue
        kw = {}
        for statement in definition.body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and \
                    statement.target.id in SET_LATER and statement.value is not None and \
                    statement.target.id not in flags:
                value = statement.value
                if isinstance(value, ast.Call) and called_name(value.func) == "field":
                    value = next((keyword.value for keyword in value.keywords if keyword.arg == "default"), None)
                if value is not None:
                    kw[statement.target.id] = (value, statement.lineno)
        found.append((definition, kw, False))
    for node in module.nodes:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute) \
                and node.targets[0].attr in SET_LATER and holds_arguments(module, node.targets[0].value):
            found.append((node, {node.targets[0].attr: (node.value, node.lineno)}, False))
    return found


def holds_arguments(module: Module, holder: ast.AST) -> bool:
    """Whether a name holds training arguments: built here (`args = TrainingArguments(...)`), or unpacked from what
    HfArgumentParser parsed (`model_args, training_args = parser.parse_args_into_dataclasses()`)."""
    if not isinstance(holder, ast.Name):
        return False
    value = module.resolve(holder)
    if isinstance(value, ast.Call) and builds_arguments(module, value):
        return True
    return any(isinstance(node, ast.Assign) and isinstance(node.value, ast.Call) and
               called_name(node.value.func).startswith("parse_") and any(
                   isinstance(sub, ast.Name) and sub.id == holder.id for target in node.targets
                   if isinstance(target, ast.Tuple) for sub in target.elts)
               for node in module.nodes)


def trainer_calls(module: Module) -> list[ast.Call]:
    """Calls of a class named *Trainer, and of a name that holds one by a condition (`trainer_class =
    WeightedTrainer if weighted else Trainer`, then `trainer_class(...)`)."""
    calls = module.calls_named(suffix="Trainer")
    for name, values in module.assigned.items():
        if len(values) == 1 and isinstance(values[0], ast.IfExp) and any(
                module.qualname(branch).endswith("Trainer") for branch in (values[0].body, values[0].orelse)):
            calls += module.calls_named(name)
    for call in module.calls_named("partial"):  # functools.partial(Trainer, tokenizer=tok): the call it makes later
        if call.args and module.qualname(call.args[0]).endswith("Trainer"):
            calls.append(ast.Call(call.args[0], call.args[1:], call.keywords, lineno=call.lineno,
                                  col_offset=call.col_offset))
    return calls


def library_trainer(module: Module, call: ast.Call) -> bool:
    """Whether the Trainer called is a library's (imported, or a project class derived from one): a project's own
    class named so, derived from no library Trainer (a vendored copy of the 4.x one), takes what its __init__ says."""
    short, defined = module.short(call), module.project_classes
    return short not in defined or module.inherits(short, lambda name: name.endswith("Trainer") and name not in defined)


def trl_trainer(module: Module, name: str, qualified: str, seen: set[str]) -> str:
    """The trl class a Trainer called is, or derives from (through project classes), else ''. TRL is no pinned
    package of this skill: its own signature decides what tokenizer= does, and trainer-tokenizer's note says so."""
    if qualified.startswith("trl."):
        return qualified
    for part in module.project:
        for definition in part.classes.get(name, []):
            for base in definition.bases:
                base_name = part.qualname(base)
                short = base_name.rsplit(".", 1)[-1]
                found = base_name if base_name.startswith("trl.") else "" if short in seen else \
                    trl_trainer(part, short, base_name, seen | {short})
                if found:
                    return found
    return ""


OTHER_PARSERS = {"ArgumentParser", "argparse", "click", "typer", "fire", "argv", "docopt", "jsonargparse"}
HF_PARSERS = {"HfArgumentParser", "TrlParser", "parse_args_into_dataclasses"}


def hf_flags(launch: Launch, flag: str) -> bool:
    """Whether the script a launch runs reads its flags into TrainingArguments: it uses HfArgumentParser, or it
    cannot be seen here (or parses no flags that can be seen), or it passes what its own parser read on whole
    (`TrainingArguments(**vars(args))`). A script that reads them with its own parser and picks them (argparse's
    --warmup_ratio, passed on as warmup_steps=) never gives them to TrainingArguments."""
    runs = launch.runs
    if not isinstance(runs, Module):
        return True
    if parser_declares(runs, flag):
        return False
    names = runs.project_names
    return bool(HF_PARSERS & names) or not (OTHER_PARSERS & names) or any(
        forwards_parsed(part, flag) for part in runs.project)


def class_fields(module: Module, name: str, seen: set[str]) -> set[str] | None:
    """The fields a project class and its project bases declare (`use_auth_token: bool = ...`); None when one of
    its classes cannot be read here (imported from a module not given): its fields are not known."""
    definitions = [definition for part in module.project for definition in part.classes.get(name, [])]
    if not definitions:
        return None
    fields: set[str] = set()
    for definition in definitions:
        fields |= {statement.target.id for statement in definition.body
                   if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name)}
        for base in definition.bases:
            short = module.qualname(base).rsplit(".", 1)[-1]
            if short in ARGUMENT_CLASSES or short in seen or short == "object":
                continue
            inherited = class_fields(module, short, seen | {short})
            if inherited is None:
                return None
            fields |= inherited
    return fields


def parser_declares(module: Module, flag: str) -> bool:
    """Whether a dataclass the script gives HfArgumentParser (its ModelArguments, a TrainingArguments subclass)
    declares the flag: the parser accepts it as that field, never TrainingArguments'. A dataclass that cannot be
    read counts as declaring it: no finding rests on a value not read."""
    for part in module.project:
        for call in part.calls:
            if part.short(call) not in ("HfArgumentParser", "TrlParser") or not call.args:
                continue
            given = part.resolve(call.args[0])
            classes = given.elts if isinstance(given, (ast.Tuple, ast.List)) else [call.args[0]]
            for element in classes:
                qualified = part.qualname(element)
                short = qualified.rsplit(".", 1)[-1]
                if short in ARGUMENT_CLASSES and short not in part.project_classes:
                    continue  # the library's own: its fields are TrainingArguments'
                fields = class_fields(part, short, {short}) if isinstance(element, (ast.Name, ast.Attribute)) \
                    else None
                if fields is None or flag in fields:
                    return True
    return False


def flag_removed(module: Module, flag: str) -> bool:
    """Whether the module takes a parsed flag's key out of a dict or never has it: something.pop("flag"), del
    something["flag"], the same over a loop of literal keys (`for k in ("flag", ...): d.pop(k, None)`),
    delattr(args, "flag"), or `add_argument("--flag", dest="other")`, which parses it under another key."""
    loop_names = {node.target.id for node in module.nodes if isinstance(node, ast.For) and isinstance(
        node.target, ast.Name) and isinstance(module.resolve(node.iter), (ast.Tuple, ast.List, ast.Set)) and
        any(module.const(element) == flag for element in module.resolve(node.iter).elts)}  # LEGACY = (...) too
    named = lambda node: (isinstance(node, ast.Constant) and node.value == flag) or (  # noqa: E731
        isinstance(node, ast.Name) and node.id in loop_names)
    renamed = lambda call: called_name(call.func) == "add_argument" and any(  # noqa: E731
        isinstance(module.const(argument), str) and module.const(argument).lstrip("-").replace("-", "_") == flag
        for argument in call.args) and any(keyword.arg == "dest" and module.const(keyword.value) not in (flag, UNKNOWN)
                                           for keyword in call.keywords)
    return any((isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop" and
                node.args and named(node.args[0])) or
               (isinstance(node, ast.Call) and called_name(node.func) == "delattr" and len(node.args) == 2 and
                named(node.args[1])) or
               (isinstance(node, ast.Call) and renamed(node)) or
               (isinstance(node, ast.Delete) and any(isinstance(target, ast.Subscript) and named(target.slice)
                                                     for target in node.targets))
               for node in module.nodes)


def forwards_parsed(module: Module, flag: str) -> bool:
    """Whether a module passes its parsed flag on to TrainingArguments: TrainingArguments(**vars(args)),
    (**args.__dict__), a copy or merge of them, or a helper that builds them given the same; not when the flag's key
    is popped or deleted first, or a comprehension with a condition picks the keys (or renames them)."""
    parsed = lambda node: (isinstance(node, ast.Call) and called_name(node.func) == "vars") or (  # noqa: E731
        isinstance(node, ast.Attribute) and node.attr == "__dict__")
    picked = lambda node: isinstance(node, ast.DictComp) and (  # noqa: E731 - keys filtered or renamed
        any(part.ifs for part in node.generators) or not isinstance(node.key, ast.Name))
    def passes(value: ast.AST) -> bool:  # the value, or the edits of the dict it names (opts.update(vars(a)))
        edits = module.edits.get(value.id, []) if isinstance(value, ast.Name) else []
        return any(module.mentions(part, parsed) for part in [value, *edits])

    return not any(flag_removed(part, flag) for part in module.project) and any(
        keyword.arg is None and passes(keyword.value) and not module.mentions(keyword.value, picked)
        for node, _, _ in training_arguments(module) if isinstance(node, ast.Call) for keyword in node.keywords)
