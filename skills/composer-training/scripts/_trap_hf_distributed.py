"""The Transformers rules on several processes and gradient accumulation: the sequence-classification loss scaled N
times too large (unless the project turns the scaling off) and accelerate launch --cpu running one process. A module of
trap_check.py (synced from skill_common/ into every skill's scripts/ folder).
"""

import ast

from _trap_launch import Launch, count
from _trap_module import Module, own_nodes
from _trap_rules import ERROR, TF, Rule
from _trap_values import called_name


RULES = [
    Rule("TF013", "seqcls-loss-scaling", TF, ERROR,
         "A *ForSequenceClassification model with gradient accumulation or more than one "
         "process logs a loss (and gets gradients and grad_norm) N times too large (huggingface/transformers#47688).",
         "model.accepts_loss_kwargs = False before building the Trainer",
         "references/distributed-training.md#the-loss-trap-sequence-classification-under-ddp-and-gradient-accumulation",
         why='silently wrong loss, gradients and grad_norm',
         trips={"t.py": """
        from transformers import AutoModelForSequenceClassification as Auto, TrainingArguments
        model_class = Auto  # a variable that holds the class
        model = model_class.from_pretrained("m", num_labels=3)
        args = dict(output_dir="o", gradient_accumulation_steps=4)
        TrainingArguments(**args)
        """},
         clean={"t.py": """
        from transformers import AutoModelForSequenceClassification as Auto, TrainingArguments
        model_class = Auto
        model = model_class.from_pretrained("m", num_labels=3)
        model.accepts_loss_kwargs = False
        args = dict(output_dir="o", gradient_accumulation_steps=4)
        TrainingArguments(**args)
        """}),
    Rule("TF023", "accelerate-cpu-processes", TF, ERROR,
         "accelerate launch --cpu with --num_processes above 1 silently runs one "
         "process.", "torchrun --nproc_per_node N (gloo on CPU), or drop --cpu on GPUs",
         "references/distributed-training.md#the---cpu-trap",
         why='silently runs one process instead of N',
         trips={"run.sh": "accelerate launch --cpu --num_processes 2 train.py\n"},  # trap-check: ignore[TF023] (an example)
         clean={"run.sh": "torchrun --nproc_per_node 2 train.py\n"}),
]


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


def accelerate_cpu_findings(launch: Launch):
    """A rule about the launch alone, whatever it runs."""
    if launch.launcher == "accelerate" and launch.option("--cpu") is not None and \
            (launch.requested or 1) > 1:
        yield "accelerate-cpu-processes", launch, ""
