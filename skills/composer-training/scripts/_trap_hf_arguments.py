"""The Transformers rules on what is built: TrainingArguments (removed arguments, optim, the best-model settings), loss
scaling under accumulation, pad = eos, Hub metric loads and token-classification labels. A module of trap_check.py
(synced from skill_common/ into every skill's scripts/ folder).
"""

import ast
import re
from pathlib import Path

from _trap_launch import UNKNOWN, Launch, count
from _trap_module import Module, at, is_true, line_of, own_nodes
from _trap_values import called_name
from _trap_rules import LEGACY_ARGUMENTS, REMOVED_ARGUMENTS


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


def argument_findings(module: Module, training: list):
    for call, kw, complete in training:
        # a field the project's subclass declares is accepted (arguments-subclass-removed-field says it is ignored)
        declared = arguments_fields(module, module.short(call)) if isinstance(call, ast.Call) else None
        given = kw.keys() - (declared or set())
        for name, _what, _fix in REMOVED_ARGUMENTS:
            if name in given:
                yield f"removed-{name}", kw[name][1], ""
        for name in sorted(LEGACY_ARGUMENTS.keys() & given):
            yield "removed-legacy-argument", kw[name][1], f"{name}="
        if module.const(kw.get("optim", (None,))[0]) == "adamw_hf":
            yield "optim-adamw-hf", kw["optim"][1], ""
        yield from best_model_findings(module, call, kw, complete)


def trainer_calls(module: Module) -> list[ast.Call]:
    """Calls of a class named *Trainer, and of a name that holds one by a condition (`trainer_class =
    WeightedTrainer if weighted else Trainer`, then `trainer_class(...)`)."""
    calls = module.calls_named(suffix="Trainer")
    for name, values in module.assigned.items():
        if len(values) == 1 and isinstance(values[0], ast.IfExp) and any(
                module.qualname(branch).endswith("Trainer") for branch in (values[0].body, values[0].orelse)):
            calls += module.calls_named(name)
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


def best_model_findings(module: Module, call: ast.Call, kw: dict, complete: bool):
    # an absent keyword has its default only when every `**` was read: `**extra` from a JSON file may set it
    value = lambda name, default=None: module.const(kw[name][0]) if name in kw else \
        default if complete else UNKNOWN  # noqa: E731
    save = value("save_strategy", "steps")
    if save == "best" and complete and "metric_for_best_model" not in kw:
        yield "best-save-no-metric", kw["save_strategy"][1], ""
    if not is_true(value("load_best_model_at_end", False)):
        return
    line = kw["load_best_model_at_end"][1]
    evaluation = value("eval_strategy", value("evaluation_strategy", "no"))
    if complete and "metric_for_best_model" not in kw and save != "best" and \
            "compute_metrics" in module.project_names:  # without compute_metrics eval_loss is the only metric
        yield "best-default-metric", line, ""
    if value("save_total_limit") == 1:
        yield "best-save-total-limit-1", kw["save_total_limit"][1], ""
    if UNKNOWN in (save, evaluation) or save == "best":
        return
    if save != evaluation:
        yield "best-strategy-mismatch", line, f"eval_strategy={evaluation!r}, save_strategy={save!r}"
    elif save == "steps":
        save_steps = value("save_steps", 500)
        eval_steps = value("eval_steps", None) or value("logging_steps", 500)
        numbers = all(isinstance(steps, (int, float)) and not isinstance(steps, bool) and steps > 0
                      for steps in (save_steps, eval_steps))
        # TrainingArguments' own test: steps below 1 are ratios of the run, both must be, and are compared scaled
        ratios = numbers and save_steps < 1 and eval_steps < 1
        if numbers and save_steps % eval_steps and (not ratios or (save_steps * 1_000_000) % (eval_steps * 1_000_000)):
            yield "best-save-not-multiple", line, f"save_steps={save_steps}, eval_steps={eval_steps}"
        elif numbers and save_steps != eval_steps and "log_history" not in module.project_names:  # not picking the best itself
            yield "best-unsaved-eval", line, f"save_steps={save_steps}, eval_steps={eval_steps}"


def divides_by_items(part: Module, function: ast.AST | None) -> bool:
    """Whether a loss function divides by num_items_in_batch (the Trainer takes any compute_loss_func's loss as
    already scaled: a mean that only passes the count on is too large). A callable this checker cannot read (a
    method, an object, a function of a module not given) counts as dividing: no finding rests on a guess."""
    if isinstance(function, ast.Call) and called_name(function.func) == "partial" and function.args:
        function = part.resolve(function.args[0])  # functools.partial(loss_fn, weight=2.0)
    if isinstance(function, (ast.Name, ast.Attribute)):
        name = called_name(function)
        defined = [other.functions[name][0] for other in part.project if name in other.functions]
        if not defined:
            return True
        function = defined[0]
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return True
    counts = {"num_items_in_batch"} | {  # n = num_items_in_batch
        target.id for node in ast.walk(function) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
        and node.value.id == "num_items_in_batch" for target in node.targets if isinstance(target, ast.Name)}
    count = lambda node: any(  # noqa: E731 - num_items_in_batch, a name for it, kwargs["num_items_in_batch"]
        (isinstance(sub, ast.Name) and sub.id in counts) or (isinstance(sub, ast.Constant) and sub.value ==
                                                             "num_items_in_batch") for sub in ast.walk(node))
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and count(node.right):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) and count(node.value):  # loss /= n
            return True
        if isinstance(node, ast.Call) and called_name(node.func) in ("div", "divide", "true_divide") and \
                node.args and count(node.args[-1]):  # torch.div(loss, n), loss.div(n)
            return True
    return False


def loss_scaling_fixes(part: Module) -> set[str]:
    """What a module does about the sequence-classification loss scaling: "accumulation" and "processes" (the
    model's accepts_loss_kwargs, the built Trainer's model_accepts_loss_kwargs, a compute_loss_func dividing by
    num_items_in_batch), "accumulation" alone (loss_is_scaled_for_ga = False, a Trainer's own compute_loss dividing
    by num_items_in_batch: compute_loss still multiplies by the process count). Trainer.__init__ reads
    accepts_loss_kwargs once, so a model flag set after Trainer(...), a Trainer class attribute or a value set before
    super().__init__ fixes nothing, and the Trainer never reads a config's or a Trainer's accepts_loss_kwargs."""
    both, accumulation = {"accumulation", "processes"}, {"accumulation"}
    scope = {"accepts_loss_kwargs": both, "model_accepts_loss_kwargs": both, "loss_is_scaled_for_ga": accumulation}
    fixes = set()
    for node in part.nodes:
        if isinstance(node, ast.Assign) and part.const(node.value) is False:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr in scope and not overwritten(part, node, target):
                    fixes |= scope[target.attr]
        elif isinstance(node, ast.Call) and part.short(node) == "setattr" and len(node.args) == 3 and \
                part.const(node.args[2]) is False and part.const(node.args[1]) in scope and \
                not overwritten(part, node, ast.Attribute(node.args[0], part.const(node.args[1]))):
            fixes |= scope[part.const(node.args[1])]
        elif isinstance(node, ast.keyword) and node.arg == "compute_loss_func" and \
                divides_by_items(part, part.resolve(node.value)):
            fixes |= both
    for definitions in part.classes.values():
        for definition in definitions:
            trainer = any(called_name(base).endswith("Trainer") for base in definition.bases)
            for statement in definition.body:
                if trainer and isinstance(statement, ast.FunctionDef) and statement.name == "compute_loss" and \
                        divides_by_items(part, statement):
                    fixes |= accumulation  # its own loss over the window's items; not x the process count
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] \
                    if isinstance(statement, ast.AnnAssign) else []
                for target in targets if part.const(getattr(statement, "value", None)) is False else []:
                    name = target.id if isinstance(target, ast.Name) else None
                    if name == "loss_is_scaled_for_ga" or (name == "accepts_loss_kwargs" and not trainer):
                        fixes |= scope[name]  # class Classifier(BertForSequenceClassification): accepts_... = False
    return fixes


def overwritten(part: Module, setting: ast.AST, target: ast.Attribute) -> bool:
    """Whether a loss-scaling flag set here is read by nothing: on a config (model.config.accepts_loss_kwargs),
    self.model_accepts_loss_kwargs in an __init__ before super().__init__(...) (Trainer's sets it again), or the
    model's accepts_loss_kwargs after a Trainer was built on that model in the same function or module body."""
    holder = target.value
    if isinstance(holder, (ast.Name, ast.Attribute)) and called_name(holder).lower().endswith("config"):
        return True
    scope = setting
    while id(scope) in part.parent and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = part.parent[id(scope)]
    earlier_calls = [node for node in own_nodes(scope) if isinstance(node, ast.Call) and node.lineno < setting.lineno]
    if target.attr == "model_accepts_loss_kwargs":
        later_init = any(isinstance(call.func, ast.Attribute) and call.func.attr == "__init__" and
                         call.lineno > setting.lineno for call in ast.walk(scope) if isinstance(call, ast.Call))
        return isinstance(scope, ast.FunctionDef) and scope.name == "__init__" and later_init
    if target.attr != "accepts_loss_kwargs" or not isinstance(holder, ast.Name):
        return False
    given = lambda call: [keyword.value for keyword in call.keywords if keyword.arg == "model"] + call.args[:1]  # noqa: E731
    built = [call.lineno for call in earlier_calls if part.short(call).endswith("Trainer") and any(
        isinstance(model, ast.Name) and model.id == holder.id for model in given(call))]
    rebound = [node.lineno for node in (own_nodes(scope) if built else []) if isinstance(node, ast.Assign) and any(
        isinstance(name, ast.Name) and name.id == holder.id for name in node.targets)]  # model = another model
    return any(not any(line < bound < setting.lineno for bound in rebound) for line in built)


def sequence_classification_findings(module: Module, training: list, launches: list[Launch]):
    models = [node for part in module.project for node in part.sequence_classifiers()]  # here or in model.py
    if not models:
        return
    fixes = set().union(*(loss_scaling_fixes(part) for part in module.project))  # here or in an imported module
    for call, kw, _ in training if "accumulation" not in fixes else []:
        steps = module.const(kw.get("gradient_accumulation_steps", (None,))[0])
        if isinstance(steps, int) and steps > 1:
            yield "seqcls-loss-scaling", kw["gradient_accumulation_steps"][1], f"gradient_accumulation_steps={steps}"
    for launch in launches:
        steps = launch.flag("gradient_accumulation_steps")
        several = (launch.processes or 1) > 1 and "processes" not in fixes
        if several or ("accumulation" not in fixes and (count(steps) or 1) > 1):
            yield "seqcls-loss-scaling", launch, f"launched with {launch.processes} processes" \
                if several else f"--gradient_accumulation_steps {steps}"


def is_eos(part: Module, node: ast.AST) -> bool:
    """Whether an expression is the tokenizer's EOS: tokenizer.eos_token(_id), a name assigned it, `pad or eos`,
    `eos if pad is None else pad`, convert_tokens_to_ids(eos); memoised per expression (a name assigned from itself
    is not)."""
    key = id(node)
    if key not in part.eos:
        part.eos[key] = False
        resolved = part.resolve(node)
        part.eos[key] = (is_eos(part, resolved.body) or is_eos(part, resolved.orelse)) if isinstance(
            resolved, ast.IfExp) else any(is_eos(part, value) for value in resolved.values) if isinstance(
            resolved, ast.BoolOp) else is_eos(part, resolved.args[0]) if isinstance(resolved, ast.Call) and \
            called_name(resolved.func) == "convert_tokens_to_ids" and resolved.args else \
            isinstance(resolved, ast.Attribute) and resolved.attr in ("eos_token", "eos_token_id")
    return part.eos[key]


def tokenizer_side(target: ast.AST) -> bool:
    """A tokenizer's pad_token(_id); model.generation_config.pad_token_id is a model's, not a tokenizer's."""
    return isinstance(target, ast.Attribute) and target.attr in ("pad_token", "pad_token_id") and not (
        (isinstance(target.value, ast.Attribute) and target.value.attr.lower().endswith("config")) or
        (isinstance(target.value, ast.Name) and target.value.id.lower().endswith("config")))


def pad_eos_lines(part: Module) -> list[int]:
    """The lines of a module that make the tokenizer's pad token its EOS, unless a pad token of its own is set below
    them; read once per module (every module of a project reads those of the modules it imports)."""
    if part.pad_eos is None:
        dedicated = [node.lineno for node in part.nodes if isinstance(node, ast.Dict) and any(
            isinstance(key, ast.Constant) and key.value == "pad_token" and not is_eos(part, value)
            for key, value in zip(node.keys, node.values))]
        last_dedicated = max(dedicated, default=0)
        lines = []
        for node in sorted((node for node in part.nodes if hasattr(node, "lineno")), key=line_of):
            if node.lineno < last_dedicated:  # replaced later by a pad token of its own
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) and node.value is not None else []
            if any(map(tokenizer_side, targets)) and is_eos(part, node.value):
                lines.append(node.lineno)
            elif isinstance(node, ast.keyword) and node.arg == "pad_token" and is_eos(part, node.value):
                lines.append(node.value.lineno)
            elif isinstance(node, ast.Call) and called_name(node.func) == "setattr" and len(node.args) == 3 and \
                    part.const(node.args[1]) in ("pad_token", "pad_token_id") and \
                    tokenizer_side(ast.Attribute(node.args[0], part.const(node.args[1]))) and \
                    is_eos(part, node.args[2]):
                lines.append(node.lineno)  # setattr(tokenizer, "pad_token", eos)
            elif isinstance(node, ast.Dict) and any(
                    isinstance(key, ast.Constant) and key.value == "pad_token" and is_eos(part, value)
                    for key, value in zip(node.keys, node.values)):
                lines.append(node.lineno)
        part.pad_eos = lines
    return part.pad_eos


def masks_labels_by_pad_id(part: Module) -> bool:
    """Labels masked where they equal the pad id, by hand: `labels[labels == tok.pad_token_id] = -100`,
    `.masked_fill(ids.eq(pad_id), -100)` in a statement that writes -100, or a loss given
    `ignore_index=tok.pad_token_id` (a pad id held in a name counts; `pad_token_id is None` or a comparison that
    writes no -100, such as counting generated tokens, does not)."""
    def pad_id(node: ast.AST) -> bool:
        node = part.resolve(node)
        return isinstance(node, ast.Attribute) and node.attr == "pad_token_id"

    def writes_ignored_label(node: ast.AST) -> bool:
        """A -100 (or a name holding it, IGNORE_INDEX) in the smallest expression around the comparison that has
        one, up to its statement; a dict's other value is another field (an attention mask beside the labels)."""
        while True:
            if any((isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.USub) or isinstance(sub, ast.Name))
                   and part.const(sub) == -100 for sub in ast.walk(node)):
                return True
            parent = part.parent.get(id(node))
            if isinstance(node, ast.stmt) or parent is None or isinstance(parent, ast.Dict):
                return False
            node = parent

    for node in part.nodes:
        if isinstance(node, ast.keyword) and node.arg == "ignore_index" and pad_id(node.value):
            return True
        compared = isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and any(
            map(pad_id, [node.left, *node.comparators]))
        called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "eq", "ne") and any(map(pad_id, node.args))
        if (compared or called) and writes_ignored_label(node):
            return True
    return False


EOS_NAMES = ("eos_token", "eos_token_id")


def own_end_marker(module: Module) -> bool:
    """Whether the project registers its own special tokens (an end marker it trains on and stops at, as "### End")
    and writes no EOS into its text (`text + tokenizer.eos_token`, f"...{eos_token}", ids + [eos_token_id]): then no
    EOS label is there to lose."""
    def is_eos_name(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in EOS_NAMES) or (
            isinstance(node, ast.Name) and node.id in EOS_NAMES)

    registers = writes = False
    for part in module.project:
        for node in part.nodes:
            if isinstance(node, ast.Call) and called_name(node.func) in ("add_special_tokens", "add_tokens"):
                registers |= called_name(node.func) == "add_tokens" or any(
                    isinstance(key, ast.Constant) and key.value == "additional_special_tokens"
                    for argument in node.args if isinstance(argument, ast.Dict) for key in argument.keys)
            elif isinstance(node, (ast.BinOp, ast.JoinedStr)) or (isinstance(node, ast.Call) and
                                                                  called_name(node.func) in ("append", "format")):
                writes |= any(is_eos_name(sub) for sub in ast.walk(node))
            elif isinstance(node, ast.keyword) and node.arg == "add_eos_token":
                writes |= part.const(node.value) is not False
    return registers and not writes


def causal_lm_findings(module: Module):
    """pad_token = eos_token here or in a project module this one imports (the tokenizer set up in data.py for the
    causal LM trained here), and math.exp(eval_loss) here."""
    names = module.project_names
    # what masks every EOS label when pad is EOS: the LM collator, or labels masked by the pad id by hand
    # (labels[labels == tokenizer.pad_token_id] = -100); a collator masking by attention_mask, the seq2seq
    # collator (it pads labels with -100) or generation alone keep them
    trains = "DataCollatorForLanguageModeling" in names or any(map(masks_labels_by_pad_id, module.project))
    for part in module.project if trains and not own_end_marker(module) else []:
        for line in pad_eos_lines(part):
            yield "pad-token-eos", at(module, part, line), ""
    eval_loss = lambda node: (isinstance(node, ast.Constant) and node.value == "eval_loss") or (  # noqa: E731
        isinstance(node, ast.Attribute) and node.attr == "eval_loss") or (
        isinstance(node, ast.Name) and node.id == "eval_loss")
    called_perplexity = lambda node: any(re.search(r"perplexity|ppl", text, re.I) for text in (  # noqa: E731
        [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]
        + [sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)]
        + [sub.attr for sub in ast.walk(node) if isinstance(sub, ast.Attribute)]))
    for call in module.calls_named("exp"):  # reported as the perplexity: not a bound checked in a comparison
        if call.args and module.mentions(call.args[0], eval_loss) and not module.compared(call) and \
                called_perplexity(module.statement(call)):
            yield "perplexity-exp-eval-loss", call.lineno, ""


def local_file(path: Path) -> bool:
    """Whether a path named in checked code is there: a name the system refuses (too long, a NUL) is not."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def evaluate_findings(module: Module):
    for call in module.calls:
        function = module.qualname(call.func)
        if function not in ("evaluate.load", "evaluate.combine"):
            continue
        kw, _ = module.kwargs(call)
        given = call.args[0] if call.args else kw.get("path" if function == "evaluate.load" else "evaluations",
                                                      (None,))[0]
        if function == "evaluate.combine":  # combine(["accuracy", "f1"]) loads each by name, as load does
            given = module.resolve(given)
            given = given.elts if isinstance(given, (ast.List, ast.Tuple, ast.Set)) else \
                given.values if isinstance(given, ast.Dict) else [given]
        hub = [name for name in map(module.const, given if isinstance(given, list) else [given])
               if isinstance(name, str) and not name.endswith(".py") and not name.startswith((".", "/", "~"))
               and not local_file(Path(module.path).parent / name)]
        if hub:
            yield "evaluate-hub-load", call.lineno, f"{function}({hub[0]!r})" if function == "evaluate.load" \
                else f"{function}({hub!r})"


def token_label_findings(module: Module):
    if not module.calls_named("DataCollatorForTokenClassification"):
        return
    written: dict[str, int] = {}
    for node in module.nodes:
        keys = []
        if isinstance(node, ast.Dict):
            keys = [(key, key) for key in node.keys if key is not None]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            keys = [(node.slice, node)]
        elif isinstance(node, ast.Call) and module.short(node) in ("rename_column", "add_column") and node.args:
            keys = [(node.args[-1 if module.short(node) == "rename_column" else 0], node)]
        for key, where in keys:
            value = module.const(key)
            if value in ("label", "labels"):
                written.setdefault(value, line_of(where))
    if "label" in written and "labels" not in written:
        yield "token-collator-label", written["label"], ""


# -- 5.x's removed fields read from built or parsed arguments, or redeclared by a subclass; Trainer's lost tokenizer
REMOVED_FIELDS = {name for name, _what, _fix in REMOVED_ARGUMENTS} | set(LEGACY_ARGUMENTS)
# removed fields the 4.x Trainer read (overwrite_output_dir it never did: only scripts read it), with the 5.x setting
IGNORED_FIELDS = {name: fix for name, _what, fix in REMOVED_ARGUMENTS if name != "overwrite_output_dir"}


def arguments_fields(module: Module, short: str) -> set[str] | None:
    """The fields a training-arguments class declares beyond the library's: empty for the library's own class, the
    project subclass's own (and its project bases'); None when ``short`` is no training-arguments class, or one
    whose fields cannot be read."""
    if short not in module.project_classes:
        return set() if short in ARGUMENT_CLASSES else None
    if not any(module.inherits(module.qualname(base).rsplit(".", 1)[-1], lambda name: name in ARGUMENT_CLASSES)
               for part in module.project for definition in part.classes.get(short, []) for base in definition.bases):
        return None  # a vendored class of the same name, derived from none
    return class_fields(module, short, {short})


def unpacked_class(module: Module, value: ast.AST, index: int, size: int) -> str:
    """The class of element ``index`` of ``size`` unpacked from HfArgumentParser((A, B, C)).parse_*(...), or from a
    project function whose return annotation is Tuple[A, B, C]; '' when not known."""
    if not isinstance(value, ast.Call):
        return ""
    if isinstance(value.func, ast.Attribute) and value.func.attr.startswith("parse_"):
        parser = module.resolve(value.func.value)
        if isinstance(parser, ast.Call) and module.short(parser) == "HfArgumentParser" and parser.args:
            given = module.resolve(parser.args[0])
            classes = given.elts if isinstance(given, (ast.Tuple, ast.List)) else [given]
            return module.qualname(classes[index]).rsplit(".", 1)[-1] if index < len(classes) else ""
        return ""
    found = module.callee(value)
    returns = getattr(found[1], "returns", None) if found else None
    if isinstance(returns, ast.Subscript) and called_name(returns.value) in ("Tuple", "tuple") and \
            isinstance(returns.slice, ast.Tuple) and len(returns.slice.elts) == size:
        return found[0].qualname(returns.slice.elts[index]).rsplit(".", 1)[-1]
    return ""


def held_classes(module: Module, read: ast.Name) -> list[str] | None:
    """The training-arguments classes a name may hold where it is read, from every binding of it in the enclosing
    function (a parameter annotated with the class, `args = TrainingArguments(...)`, an unpacked parse); None when
    one binding is not known to be training arguments (the name may hold anything else)."""
    scope = read
    while id(scope) in module.parent and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = module.parent[id(scope)]
    parameters: list[str] = []
    if isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        every = [*scope.args.posonlyargs, *scope.args.args, *scope.args.kwonlyargs]
        parameters = [module.qualname(argument.annotation).rsplit(".", 1)[-1] if argument.annotation else ""
                      for argument in every if argument.arg == read.id]
    assigned: list[str] = []
    stores = 0  # every binding (a for loop, a with, a walrus too): each must be one of the assignments read
    for node in own_nodes(scope):
        if isinstance(node, ast.Name) and node.id == read.id and isinstance(node.ctx, ast.Store):
            stores += 1
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name) and target.id == read.id:
                    assigned.append(module.short(node.value) if isinstance(node.value, ast.Call) and
                                    builds_arguments(module, node.value) else "")
                elif isinstance(target, ast.Tuple) and not any(isinstance(e, ast.Starred) for e in target.elts):
                    assigned += [unpacked_class(module, node.value, index, len(target.elts))
                                 for index, element in enumerate(target.elts)
                                 if isinstance(element, ast.Name) and element.id == read.id]
    classes = parameters + assigned
    return classes if classes and all(classes) and stores == len(assigned) else None


def removed_field_findings(module: Module):
    """removed-argument-read, arguments-subclass-removed-field and trainer-self-tokenizer of the module itself."""
    read_here = {node.attr for part in module.project for node in part.nodes
                 if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)}
    # a module that asks whether the field is there (hasattr(args, "x"), getattr(args, "x", None)) handles 5.x,
    # where it is not: its reads are guarded, whichever branch they sit in
    asked = {node.args[1].value for node in module.nodes if isinstance(node, ast.Call) and
             called_name(node.func) in ("hasattr", "getattr") and len(node.args) >= 2 and
             isinstance(node.args[1], ast.Constant)}
    for node in module.nodes:
        if isinstance(node, ast.Attribute) and node.attr in REMOVED_FIELDS and isinstance(node.ctx, ast.Load) and \
                isinstance(node.value, ast.Name) and node.attr not in asked:
            classes = held_classes(module, node.value)
            fields = [arguments_fields(module, short) for short in classes or []]
            if classes and all(declared is not None and node.attr not in declared for declared in fields):
                yield "removed-argument-read", node.lineno, f"{node.value.id}.{node.attr}"
    flags = {token.split("=", 1)[0].lstrip("-").replace("-", "_") for args in module.launched_with for token in args}
    for name, definitions in module.classes.items():
        if arguments_fields(module, name) is None:
            continue
        for statement in definitions[0].body:
            if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and \
                    statement.target.id in IGNORED_FIELDS and statement.target.id not in read_here:
                field_name, default = statement.target.id, statement.value
                if isinstance(default, ast.Call) and called_name(default.func) == "field":
                    default = next((keyword.value for keyword in default.keywords if keyword.arg == "default"), None)
                value = module.const(default)
                # a default that is off (group_by_length=False) loses nothing unless a launch turns it on
                if value is UNKNOWN or (not value and field_name not in flags):
                    continue
                yield "arguments-subclass-removed-field", statement.lineno, \
                    f"{name}.{field_name}; 5.x: {IGNORED_FIELDS[field_name]}"
    yield from self_tokenizer_findings(module)


def transformers_trainer(module: Module, name: str, seen: set[str]) -> bool:
    """Whether a class defined here derives from transformers' Trainer or Seq2SeqTrainer (through project classes),
    with no TRL trainer among its bases (TRL's own classes decide what self.tokenizer is there)."""
    for part in module.project:
        for definition in part.classes.get(name, []):
            if any(part.qualname(base).startswith("trl.") for base in definition.bases):
                return False
            for base in definition.bases:
                qualified = part.qualname(base)
                short = qualified.rsplit(".", 1)[-1]
                if qualified.startswith("transformers.") and short in ("Trainer", "Seq2SeqTrainer"):
                    return True
                if short in part.project_classes and short not in seen and \
                        transformers_trainer(part, short, seen | {short}):
                    return True
    return False


def gives_tokenizer(module: Module, name: str, seen: set[str]) -> bool:
    """Whether a project class or one of its project bases (a mixin too) gives itself a tokenizer:
    `self.tokenizer = tokenizer` in it, or a tokenizer attribute or property of its own. A method that raises
    outright (a mixin's `__init__` written for type checkers, never run) gives nothing."""
    for part in module.project:
        for definition in part.classes.get(name, []):
            run = [statement for statement in definition.body if not (
                isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef)) and
                any(isinstance(line, ast.Raise) for line in statement.body))]
            if any(isinstance(node, ast.Attribute) and node.attr == "tokenizer" and isinstance(node.ctx, ast.Store)
                   for statement in run for node in ast.walk(statement)) or any(
                    getattr(statement, "name", None) == "tokenizer" or any(
                        isinstance(target, ast.Name) and target.id == "tokenizer"
                        for target in getattr(statement, "targets", [getattr(statement, "target", None)]))
                    for statement in definition.body):
                return True
            bases = {part.qualname(base).rsplit(".", 1)[-1] for base in definition.bases} - seen
            if any(gives_tokenizer(part, base, seen | bases) for base in bases if base in part.project_classes):
                return True
    return False


def self_tokenizer_findings(module: Module):
    for name, definitions in module.classes.items():
        if len(definitions) == 1 and transformers_trainer(module, name, {name}) and \
                not gives_tokenizer(module, name, {name}):
            for node in ast.walk(definitions[0]):
                if isinstance(node, ast.Attribute) and node.attr == "tokenizer" and isinstance(node.ctx, ast.Load) \
                        and isinstance(node.value, ast.Name) and node.value.id == "self":
                    yield "trainer-self-tokenizer", node.lineno, f"{name}: self.tokenizer"
