"""The Transformers rules on what 5.x removed: TrainingArguments' removed arguments (as keywords, dict keys or
HfArgumentParser flags), the long tail of 4.x arguments, optim="adamw_hf", Trainer(tokenizer=) (functools.partial
too), a removed field read from the arguments, set on them or redeclared by a subclass, and self.tokenizer in a
Trainer subclass or its mixins. REMOVED_ARGUMENTS and LEGACY_ARGUMENTS are also read by the --fix tests. A module of trap_check.py (synced from skill_common/ into every
skill's scripts/ folder).
"""

import ast

from _trap_hf_arguments import (ARGUMENT_CLASSES, builds_arguments, class_fields, hf_flags, library_trainer,
                                trainer_calls, trl_trainer)
from _trap_launch import UNKNOWN, Launch
from _trap_module import Module, at, own_nodes
from _trap_rules import ARGS, ERROR, TABLE, TF, Rule
from _trap_values import called_name


# (argument, what happens, the 5.x replacement)
REMOVED_ARGUMENTS = [
    ("evaluation_strategy", "removed in 5.x: TrainingArguments raises TypeError", 'eval_strategy="steps"'),
    ("no_cuda", "removed in 5.x: TrainingArguments raises TypeError", "use_cpu=True"),
    ("overwrite_output_dir", "removed in 5.x with no replacement: TrainingArguments raises TypeError",
     "drop it: choose a new output_dir, or resume from the old one"),
    ("logging_dir", "removed in 5.x: TrainingArguments raises TypeError",
     "drop it: TensorBoard writes to $TENSORBOARD_LOGGING_DIR, else <output_dir>/runs/"),
    ("warmup_ratio", "removed in 5.x: TrainingArguments raises TypeError",
     "warmup_steps=<the ratio> (a float below 1 is a ratio)"),
    ("group_by_length", "removed in 5.x: TrainingArguments raises TypeError",
     'train_sampling_strategy="group_by_length"'),
    ("include_inputs_for_metrics", "removed in 5.x: TrainingArguments raises TypeError",
     'include_for_metrics=["inputs"]'),
    ("save_safetensors", "removed in 5.x (checkpoints are always safetensors): TrainingArguments raises TypeError",
     "drop it"),
    ("use_mps_device", "removed in 5.x with no replacement: TrainingArguments raises TypeError", "drop it"),
    ("push_to_hub_token", "removed in 5.x: TrainingArguments raises TypeError", "hub_token="),
]
# Arguments of 4.x TrainingArguments that 5.x no longer has (checked against the installed 5.x signature by
# tests/test_trap_lint.py), each with its replacement where there is one: one rule for the long tail
LEGACY_ARGUMENTS = {
    "per_gpu_train_batch_size": "per_device_train_batch_size", "per_gpu_eval_batch_size": "per_device_eval_batch_size",
    "use_auth_token": "hub_token", "push_to_hub_model_id": "hub_model_id", "tpu_num_cores": None,
    "fp16_backend": None, "half_precision_backend": None, "sharded_ddp": "fsdp", "torchdynamo": "torch_compile_backend",
    "include_tokens_per_second": None, "mp_parameters": None, "jit_mode_eval": None, "use_ipex": None,
    "ray_scope": None, "dispatch_batches": None, "split_batches": None, "past_index": None}
REMOVED_CLEAN = {  # each removed argument's example, fixed
    "evaluation_strategy": 'eval_strategy="steps"', "no_cuda": "use_cpu=True", "overwrite_output_dir": "",
    "logging_dir": "", "warmup_ratio": "warmup_steps=0.1",
    "group_by_length": 'train_sampling_strategy="group_by_length"',
    "include_inputs_for_metrics": 'include_for_metrics=["inputs"]', "save_safetensors": "", "use_mps_device": "",
    "push_to_hub_token": 'hub_token="x"'}


RULES = [
    *(Rule(f"TF{index:03d}", f"removed-{name}", TF, ERROR, f"{name}= was {what}.", fix, TABLE,
           why="raises TypeError on 5.x", trips={"t.py": ARGS.format(f"{name}=True")},
           clean={"t.py": ARGS.format(REMOVED_CLEAN[name])})
      for index, (name, what, fix) in enumerate(REMOVED_ARGUMENTS, 1)),
    Rule("TF031", "removed-legacy-argument", TF, ERROR,
         "an argument 5.x TrainingArguments no longer has (the note names it): TrainingArguments raises TypeError "
         "(given as a flag to an HfArgumentParser script, the parser refuses it).",
         "drop it, or use its replacement (per_gpu_*: per_device_*, use_auth_token: hub_token, sharded_ddp: fsdp)",
         TABLE, why="raises TypeError on 5.x",
         trips={"t.py": ARGS.format("per_gpu_train_batch_size=8")},
         clean={"t.py": ARGS.format("per_device_train_batch_size=8")}),
    Rule("TF032", "removed-argument-read", TF, ERROR,
         "a field 5.x TrainingArguments no longer has (the note names it) read from the arguments: AttributeError.",
         "drop the read, or read its replacement (eval_strategy, use_cpu, warmup_steps, train_sampling_strategy; "
         "overwrite_output_dir has none: test the folder yourself)", TABLE, why="raises AttributeError on 5.x",
         trips={"t.py": 'args = TrainingArguments(output_dir="o")\nprint(args.overwrite_output_dir)\n'},
         clean={"t.py": 'args = TrainingArguments(output_dir="o")\nprint(args.output_dir)\n'}),
    Rule("TF033", "trainer-self-tokenizer", TF, ERROR,
         "self.tokenizer in a subclass of Transformers' Trainer: 5.x Trainer has no tokenizer attribute "
         "(AttributeError).", "self.processing_class", TABLE, why="raises AttributeError on 5.x",
         trips={"t.py": "from transformers import Trainer\nclass T(Trainer):\n    def pad(self):\n"
                        "        return self.tokenizer.pad_token_id\n"},
         clean={"t.py": "from transformers import Trainer\nclass T(Trainer):\n    def pad(self):\n"
                        "        return self.processing_class.pad_token_id\n"}),
    Rule("TF034", "arguments-subclass-removed-field", TF, ERROR,
         "a TrainingArguments subclass declares a field 5.x removed (the note names it): the subclass accepts it and "
         "5.x never reads it, so the training silently runs without it (warmup_ratio: no warmup at all).",
         "the 5.x setting the note names (warmup_ratio: warmup_steps=<the ratio>, a float below 1 is a ratio)", TABLE,
         why="silently wrong training (the setting is ignored)",
         trips={"t.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n@dataclass\n"
                        "class Args(TrainingArguments):\n    warmup_ratio: float = 0.03\n"},
         clean={"t.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n@dataclass\n"
                        "class Args(TrainingArguments):\n    warmup_steps: float = 0.03\n"}),
    Rule("TF036", "removed-field-set", TF, ERROR,
         "a field 5.x TrainingArguments removed (the note names it) set on built or parsed arguments "
         "(training_args.evaluation_strategy = \"steps\"): 5.x raises nothing and never reads it, so the training "
         "silently runs without it (no evaluation, no warmup).",
         "set the 5.x field the note names (eval_strategy, use_cpu, warmup_steps, train_sampling_strategy)",
         "references/trap-check.md#removed-fields-set-on-the-arguments",
         why="silently wrong training (the setting is ignored)",
         trips={"t.py": 'args = TrainingArguments(output_dir="o")\nargs.evaluation_strategy = "steps"\n'},
         clean={"t.py": 'args = TrainingArguments(output_dir="o")\nargs.eval_strategy = "steps"\n'}),
    Rule("TF011", "trainer-tokenizer", TF, ERROR,
         "Trainer(tokenizer=...) was removed in 5.x: Trainer raises TypeError.",
         "Trainer(processing_class=tokenizer)", TABLE,
         why='raises TypeError on 5.x',
         trips={"t.py": "Trainer(model=m, args=a, tokenizer=tok)"},
         clean={"t.py": "Trainer(model=m, args=a, processing_class=tok)"}),
    Rule("TF012", "optim-adamw-hf", TF, ERROR,
         'optim="adamw_hf" is no longer a valid optimizer name: TrainingArguments raises.',
         'drop optim (the default is adamw_torch, or adamw_torch_fused on torch >= 2.8)', TABLE,
         why='raises on 5.x',
         trips={"t.py": ARGS.format('optim="adamw_hf"')},
         clean={"t.py": ARGS.format('optim="adamw_torch"')}),
]


def removed_argument_findings(module: Module, call: ast.AST, kw: dict):
    """The removed arguments and optim="adamw_hf" among the keywords of one set of training arguments built."""
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


def default_optim_findings(module: Module, defaults: list):
    """optim="adamw_hf" given outside a call (argument_defaults: a dataclass field default, a value set later)."""
    for _, kw, _ in defaults:
        if module.const(kw.get("optim", (None,))[0]) == "adamw_hf":
            yield "optim-adamw-hf", kw["optim"][1], ""


def removed_flag_findings(launch: Launch):
    """The same arguments as HfArgumentParser flags on a command line, at the flag's own line of a command of several
    lines: where its inline suppression and annotation go."""
    for name, _what, _fix in REMOVED_ARGUMENTS:
        if launch.flag(name) is not None and hf_flags(launch, name):
            yield f"removed-{name}", (launch.path, launch.flag_line(name)), f"--{name} on the command line"
    for name in LEGACY_ARGUMENTS:
        if launch.flag(name) is not None and hf_flags(launch, name):
            yield "removed-legacy-argument", (launch.path, launch.flag_line(name)), \
                f"--{name} on the command line"
    if launch.flag("optim") == "adamw_hf" and hf_flags(launch, "optim"):
        yield "optim-adamw-hf", (launch.path, launch.flag_line("optim")), "--optim adamw_hf on the command line"


def trainer_tokenizer_findings(module: Module):
    for call in trainer_calls(module):
        kw, _ = module.kwargs(call)
        if "tokenizer" in kw and library_trainer(module, call):
            trl = trl_trainer(module, module.short(call), module.qualname(call.func), {module.short(call)})
            yield "trainer-tokenizer", kw["tokenizer"][1], f"{trl} is TRL's: the installed TRL's signature decides; " \
                "recent TRL takes processing_class=, its old PPOTrainer API differs throughout" if trl else ""


# 5.x's removed fields read from built or parsed arguments, or redeclared by a subclass; Trainer's lost tokenizer
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


def attribute_reads(node: ast.AST) -> list[ast.Attribute]:
    """The attribute a node reads: a load, or the target of `args.warmup_ratio += 0.1` (read first: on 5.x the
    AttributeError of the read)."""
    if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
        return [node]
    return [node.target] if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Attribute) else []


def attribute_sets(node: ast.AST) -> list[tuple[ast.Name, str, str]]:
    """(holder, field, as written) per attribute of a name a statement sets: `args.x = v` (one target of several
    too), `args.x: bool = v` (an annotated attribute is set as the plain one) and `setattr(args, "x", v)`."""
    if isinstance(node, ast.Call) and called_name(node.func) == "setattr" and len(node.args) == 3 and \
            isinstance(node.args[0], ast.Name) and isinstance(node.args[1], ast.Constant) and \
            isinstance(node.args[1].value, str):
        return [(node.args[0], node.args[1].value, f'setattr({node.args[0].id}, "{node.args[1].value}", ...)')]
    targets = node.targets if isinstance(node, ast.Assign) else \
        [node.target] if isinstance(node, ast.AnnAssign) and node.value is not None else []
    return [(target.value, target.attr, f"{target.value.id}.{target.attr}") for target in targets
            if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)]


def removed_field_findings(module: Module):
    """removed-argument-read, removed-field-set, arguments-subclass-removed-field and trainer-self-tokenizer of the
    module itself."""
    read_here = {read.attr for part in module.project for kind in (ast.Attribute, ast.AugAssign)
                 for node in part.of_types(kind) for read in attribute_reads(node)}
    # a module that asks whether the field is there (hasattr(args, "x"), getattr(args, "x", None)) handles 5.x,
    # where it is not: its reads are guarded, whichever branch they sit in
    asked = {node.args[1].value for node in module.of_types(ast.Call) if
             called_name(node.func) in ("hasattr", "getattr") and len(node.args) >= 2 and
             isinstance(node.args[1], ast.Constant)}
    for node in (read for node in module.of_types(ast.Attribute, ast.AugAssign) for read in attribute_reads(node)):
        if node.attr in REMOVED_FIELDS and isinstance(node.value, ast.Name) and node.attr not in asked:
            classes = held_classes(module, node.value)
            fields = [arguments_fields(module, short) for short in classes or []]
            if classes and all(declared is not None and node.attr not in declared for declared in fields):
                yield "removed-argument-read", node.lineno, f"{node.value.id}.{node.attr}"
    # training_args.evaluation_strategy = "steps": an attribute 5.x never reads
    for node in module.of_types(ast.Call, ast.Assign, ast.AnnAssign):
        for holder, field_name, written in attribute_sets(node):
            if field_name in IGNORED_FIELDS and field_name not in read_here:
                classes = held_classes(module, holder)  # every binding of it: training arguments
                if classes and all(declared is not None and field_name not in declared
                       for declared in (arguments_fields(module, short) for short in classes)):
                    yield "removed-field-set", node.lineno, f"{written}; 5.x: {IGNORED_FIELDS[field_name]}"
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


def mixins(module: Module, name: str, seen: set[str]):
    """(module, definition) per project class a Trainer subclass mixes in that is no Trainer itself (`class
    MyTrainer(LoggingMixin, Trainer)`), through the project bases of those mixins too."""
    for part in module.project:
        for definition in part.classes.get(name, []):
            for base in definition.bases:
                short = part.qualname(base).rsplit(".", 1)[-1]
                if short in part.project_classes and short not in seen and not transformers_trainer(part, short,
                                                                                                      {short}):
                    seen.add(short)
                    yield from ((home, mixin) for home in module.project for mixin in home.classes.get(short, []))
                    yield from mixins(module, short, seen)


def asks_self_tokenizer(node: ast.AST) -> bool:
    """hasattr(self, "tokenizer") or getattr(self, "tokenizer", <default>): a question that raises nothing on 5.x
    (getattr without a default raises AttributeError as the read does)."""
    return isinstance(node, ast.Call) and (called_name(node.func), len(node.args)) in (("hasattr", 2), ("getattr", 3)) \
        and isinstance(node.args[0], ast.Name) and node.args[0].id == "self" and \
        isinstance(node.args[1], ast.Constant) and node.args[1].value == "tokenizer"


def implies_tokenizer(test: ast.AST, truth: bool) -> bool:
    """Whether ``test`` being ``truth`` means self has a tokenizer: hasattr/getattr(..., None) true, `getattr(...) is
    None` false, through not/and/or; anything else (`hasattr(...) or True`) says nothing."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return implies_tokenizer(test.operand, not truth)
    if asks_self_tokenizer(test):
        return truth
    if isinstance(test, ast.Compare) and len(test.ops) == 1 and asks_self_tokenizer(test.left) and \
            isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None and \
            isinstance(test.ops[0], (ast.Is, ast.IsNot, ast.Eq, ast.NotEq)):
        return truth == isinstance(test.ops[0], (ast.IsNot, ast.NotEq))
    if isinstance(test, ast.BoolOp):  # `a and b` true: either says so; false: each that may be false must
        each = [implies_tokenizer(value, truth) for value in test.values]
        return any(each) if isinstance(test.op, ast.And) == truth else all(each)
    return False


def exits(body: list[ast.AST]) -> bool:
    return bool(body) and isinstance(body[-1], (ast.Return, ast.Raise, ast.Continue, ast.Break))


def guarded_reads(definition: ast.ClassDef) -> set[int]:
    """The ids of the self.tokenizer reads of a class that run only where it has one: in the branch of an if (or the
    rest of an and/or) whose test asks (`if getattr(self, "tokenizer", None) is not None:`), or after an early exit
    (`if not hasattr(self, "tokenizer"): return`) or an assert; a read before the question or after its if is not.
    A question whose answer is kept or passed on (`has = hasattr(...)`, `return getattr(...) or ...`) cannot be
    followed: it guards every read of its method, never a finding from what is not read."""
    parent = {id(child): node for node in ast.walk(definition) for child in ast.iter_child_nodes(node)}

    def followed(question: ast.AST) -> bool:
        node = question
        while isinstance(parent.get(id(node)), (ast.Compare, ast.BoolOp, ast.UnaryOp)):
            node = parent[id(node)]
        return isinstance(parent.get(id(node)), (ast.If, ast.IfExp, ast.While, ast.Assert)) and \
            parent[id(node)].test is node

    kept = {id(node) for method in definition.body if isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef))
            and any(asks_self_tokenizer(call) and not followed(call) for call in ast.walk(method))
            for node in ast.walk(method)}

    def guarded(node: ast.AST) -> bool:
        while id(node) in parent:
            above = parent[id(node)]
            if isinstance(above, (ast.If, ast.IfExp, ast.While)) and node is not above.test and \
                    implies_tokenizer(above.test, node is above.body or isinstance(above.body, list) and
                                      node in above.body):
                return True
            if isinstance(above, ast.BoolOp) and any(implies_tokenizer(value, isinstance(above.op, ast.And))
                                                     for value in above.values[:above.values.index(node)]):
                return True
            for field in ("body", "orelse", "finalbody"):
                statements = getattr(above, field, None)
                if isinstance(statements, list) and node in statements and any(
                        isinstance(before, ast.If) and exits(before.body) and not before.orelse and
                        implies_tokenizer(before.test, False) or
                        isinstance(before, ast.Assert) and implies_tokenizer(before.test, True)
                        for before in statements[:statements.index(node)]):
                    return True
            node = above
        return False

    return kept | {id(node) for node in ast.walk(definition) if isinstance(node, ast.Attribute) and guarded(node)}


def self_tokenizer_findings(module: Module):
    for name, definitions in module.classes.items():
        if len(definitions) == 1 and transformers_trainer(module, name, {name}) and \
                not gives_tokenizer(module, name, {name}):
            for part, definition in [(module, definitions[0]), *mixins(module, name, {name})]:
                guarded = guarded_reads(definition)
                for node in ast.walk(definition):
                    if isinstance(node, ast.Attribute) and node.attr == "tokenizer" and \
                            isinstance(node.ctx, ast.Load) and isinstance(node.value, ast.Name) and \
                            node.value.id == "self" and id(node) not in guarded:
                        yield "trainer-self-tokenizer", at(module, part, node.lineno), \
                            f"{name}: self.tokenizer" if part is module and definition is definitions[0] else \
                            f"{name}: self.tokenizer in its mixin {definition.name}"
