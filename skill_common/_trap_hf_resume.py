"""The Transformers rules on resuming: train(resume_from_checkpoint=True) and get_last_checkpoint() unless a look
for a complete checkpoint guards them (the looks followed through conditions, helpers and exits), and a max_steps
changed between the arguments that share an output_dir. A module of trap_check.py (synced from skill_common/ into
every skill's scripts/ folder).
"""

import ast
import math
import re

from _trap_launch import UNKNOWN, Launch
from _trap_module import Module
from _trap_rules import ERROR, TABLE, TF, Rule
from _trap_values import called_name


RULES = [
    Rule("TF024", "resume-changed-max-steps", TF, ERROR,
         "resuming with another max_steps: the first resumed step runs at the old "
         "schedule's rate, then jumps onto a new curve.",
         "keep max_steps when resuming; to train longer, start a new run from the saved weights", TABLE,
         why='silently wrong learning-rate schedule',
         trips={"t.py": """
        first = TrainingArguments(output_dir="o", max_steps=100)
        longer = TrainingArguments(output_dir="o", max_steps=200)
        Trainer(model=m, args=longer).train(resume_from_checkpoint=last)
        """},
         clean={"t.py": """
        same = TrainingArguments(output_dir="o", max_steps=100)
        Trainer(model=m, args=same).train(resume_from_checkpoint=last)
        """}),
    Rule("TF027", "resume-true-unconditional", TF, ERROR,
         "train(resume_from_checkpoint=True) raises on a first launch (no checkpoint "
         "yet) and after a kill during a save (the newest checkpoint has no trainer_state.json).",
         "pass the newest complete checkpoint or None (last_complete_checkpoint(output_dir) in the reference)",
         "references/troubleshooting.md#after-a-kill-or-preemption",
         why='raises on a first launch and after a kill',
         trips={"t.py": "trainer.train(resume_from_checkpoint=True)"},
         clean={"t.py": "trainer.train(resume_from_checkpoint=last_complete_checkpoint('o'))"}),
    Rule("TF028", "resume-unchecked-checkpoint", TF, ERROR,
         "get_last_checkpoint() returns a checkpoint a kill cut short (no "
         "trainer_state.json): resuming from it raises.",
         "skip checkpoints without trainer_state.json (last_complete_checkpoint in the reference)",
         "references/troubleshooting.md#after-a-kill-or-preemption",
         why='raises after a kill during a save',
         trips={"t.py": """
        from transformers.trainer_utils import get_last_checkpoint
        trainer.train(resume_from_checkpoint=get_last_checkpoint("o"))
        """},
         clean={"t.py": """
        from transformers.trainer_utils import get_last_checkpoint
        last = get_last_checkpoint("o")
        if last and not os.path.exists(os.path.join(last, "trainer_state.json")):
            last = None
        trainer.train(resume_from_checkpoint=last)
        """}),
]


LOOKS = {"exists", "is_dir", "isdir", "is_file", "isfile", "glob", "rglob", "iterdir", "listdir", "scandir", "walk",
         "get_last_checkpoint"}  # calls that look whether a checkpoint is there
EXITS = (ast.Return, ast.Raise, ast.Continue, ast.Break)
TRY = (ast.Try, getattr(ast, "TryStar", ast.Try))


def looks_for_checkpoint(module: Module, test: ast.AST) -> bool:
    """Whether a condition looks at the disk or at a checkpoint (names followed into what they were assigned):
    os.path.exists(...), Path.glob("checkpoint-*"), get_last_checkpoint(...), a has_checkpoint(...) of its own.
    Memoised per condition: every resume call reads the statements above it."""
    if id(test) not in module.looks:
        module.looks[id(test)] = _looks_for_checkpoint(module, test)
    return module.looks[id(test)]


def _looks_for_checkpoint(module: Module, test: ast.AST) -> bool:
    def look(node: ast.AST) -> bool:
        if isinstance(node, ast.Call) and called_name(node.func) in LOOKS:  # a look at the output folder
            looked = [*node.args, *(keyword.value for keyword in node.keywords)]
            if isinstance(node.func, ast.Attribute):
                looked.append(node.func.value)  # Path(out).exists()
            if called_name(node.func) == "get_last_checkpoint":
                return True
            if called_name(node.func) in EXISTS and not any(module.mentions(argument, checkpoint_named)
                                                            for argument in looked):
                # whether the output folder itself is there says nothing once Trainer(...) has made it
                return not built_before(module, node) and any(
                    module.mentions(argument, output_folder) for argument in looked)
            return any(module.mentions(argument, output_folder) for argument in looked)
        function = project_function(module, node) if isinstance(node, ast.Call) else None
        if function is not None:  # can_resume(out): a look written as a function, judged by its body
            home, defined = function
            return defined in home.functions and helper_looks(home, defined)
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name is not None:  # a function read above is judged by its body, not by its name
            of_a_project_module = isinstance(node, ast.Attribute) and (
                module.qualname(node.value) in module.dotted or
                (isinstance(node.value, ast.Name) and node.value.id in module.linked))  # helpers.has_checkpoint
            return name not in module.functions and name not in module.linked and not of_a_project_module and \
                bool(re.search(r"checkpoint|ckpt", name, re.I))
        return isinstance(node, ast.Constant) and isinstance(node.value, str) and "checkpoint" in node.value
    return module.mentions(test, look)


def project_function(module: Module, call: ast.Call) -> tuple[Module, str] | None:
    """(module, name) of the project function a call calls: one of this module's, one imported from a project module
    (`from ckpt import can_resume`, `import helpers; helpers.can_resume`, `import pkg.util; pkg.util.can_resume`,
    re-exported by a package), else None."""
    name = called_name(call.func)
    if isinstance(call.func, ast.Name) and name in module.functions:
        return module, name
    if isinstance(call.func, ast.Name) and name in module.linked:
        return defined_in(*module.linked[name])
    if isinstance(call.func, ast.Attribute) and isinstance(call.func.value, ast.Name) and \
            call.func.value.id in module.linked and not module.linked[call.func.value.id][1]:
        return defined_in(module.linked[call.func.value.id][0], name)
    if isinstance(call.func, ast.Attribute) and module.qualname(call.func.value) in module.dotted:
        return defined_in(module.dotted[module.qualname(call.func.value)], name)
    return None


def defined_in(home: Module, name: str) -> tuple[Module, str]:
    """Where a name imported from a project module is defined, through re-exports (`from .ckpt import can_resume` in
    a package's __init__.py)."""
    for _ in range(8):
        if name in home.functions or name not in home.linked or not home.linked[name][1]:
            break
        home, name = home.linked[name]
    return home, name


def helper_looks(module: Module, name: str) -> bool:
    """Whether a function of the module returns a look for a checkpoint (any(Path(out).glob("checkpoint-*")), the
    newest checkpoint-N or None), or returns from inside an if that looks (`if any(...glob("checkpoint-*")): return
    True`); each function is read once, so recursion ends."""
    known = module.helper_looks
    if name not in known:
        known[name] = False
        known[name] = any(
            isinstance(node, ast.Return) and node.value is not None and looks_for_checkpoint(module, node.value) or
            isinstance(node, ast.If) and any(isinstance(sub, ast.Return) for sub in ast.walk(node)) and
            looks_for_checkpoint(module, node.test)
            for definition in module.functions[name] for node in ast.walk(definition))
    return known[name]


EXISTS = {"exists", "is_dir", "isdir", "is_file", "isfile"}
PUTS = {"copytree", "copy", "copy2", "copyfile", "move", "rename", "replace", "symlink", "symlink_to", "hardlink_to",
        "link", "save_model", "save_state", "save_pretrained", "_save_checkpoint",
        "snapshot_download", "hf_hub_download", "download", "extractall", "unpack_archive", "write_text",
        "write_bytes", "run", "call", "check_call", "check_output", "Popen", "system"}  # calls that may put one


def checkpoint_named(node: ast.AST) -> bool:
    """Whether an expression names a checkpoint rather than the output folder: ckpt_dir, "out/checkpoint-100"."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
        node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
    return name is not None and bool(re.search(r"checkpoint|ckpt|trainer_state", name, re.I))


def built_before(module: Module, node: ast.AST) -> bool:
    """Whether a Trainer(...) (which creates output_dir) is built above ``node`` in the module."""
    if module.first_trainer_line is None:
        module.first_trainer_line = min((call.lineno for call in module.calls_named(suffix="Trainer")),
                                        default=math.inf)
    return module.first_trainer_line < node.lineno


OUTPUT_WORDS = re.compile(r"checkpoint|ckpt|trainer_state|out|save|resume|run_dir", re.I)


def output_folder(node: ast.AST) -> bool:
    """Whether an expression may name the output folder or a checkpoint: output_dir, OUT, "out/checkpoint-*"; a data
    file ("data/train.json") does not."""
    name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else \
        node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
    return name is not None and bool(OUTPUT_WORDS.search(name))


def exits(module: Module, body: list[ast.stmt]) -> bool:
    """Whether a block ends by leaving: return, raise, continue, break, sys.exit(...), an argparse parser's
    error(...) (logger.error(...) leaves nothing), or an if whose branches both leave."""
    last = body[-1] if body else None
    if isinstance(last, ast.If):  # if a: sys.exit(1) else: sys.exit(2)
        return exits(module, last.body) and exits(module, last.orelse)
    call = last.value if isinstance(last, ast.Expr) and isinstance(last.value, ast.Call) else None
    parser = call is not None and called_name(call.func) == "error" and isinstance(call.func, ast.Attribute) and \
        isinstance(module.resolve(call.func.value), ast.Call) and \
        module.short(module.resolve(call.func.value)).endswith("ArgumentParser")
    return isinstance(last, EXITS) or parser or (call is not None and called_name(call.func) in (
        "exit", "_exit", "quit", "abort"))


def puts_checkpoint(statement: ast.AST) -> bool:
    """Whether a statement puts a checkpoint in place: a copy, move, save or download given a checkpoint-N path
    (shutil.copytree(src, out / "checkpoint-3")); a log line, a glob or a train(...) that names one puts nothing."""
    return any(isinstance(node, ast.Call) and called_name(node.func) in PUTS and any(
        isinstance(sub, ast.Constant) and isinstance(sub.value, str) and "checkpoint-" in sub.value
        for argument in [*node.args, *(keyword.value for keyword in node.keywords),
                         *([node.func.value] if isinstance(node.func, ast.Attribute) else [])]
        for sub in ast.walk(argument))
        for node in ast.walk(statement))


def guard_sides(module: Module, test: ast.AST) -> tuple[bool, bool]:
    """(the test is true only when a checkpoint was found, the test is true whenever none was): what running the
    body of an if on the test, or its else, or leaving on it, tells about the disk. A look is (True, False)
    (`any(glob(...))`, `last is not None`), its negation (False, True) (`not look`, `last is None`, `len(c) < 1`, a
    first_launch() that returns `not any(...)`), a look whose sense cannot be told (True, True), anything else (False,
    False) (a constant True is (False, True)); `not` swaps them, `a and b` is found if one operand says so and none
    only if all do, `a or b` the other way round. Memoised per test; a name assigned from itself is (False, False)."""
    key = id(test)
    if key not in module.sides:
        module.sides[key] = (False, False)
        module.sides[key] = _guard_sides(module, test)
    return module.sides[key]


def _guard_sides(module: Module, test: ast.AST) -> tuple[bool, bool]:
    if isinstance(test, ast.Constant):
        return (False, True) if test.value else (True, False)  # never true: vacuously "only when found"
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        found, none = guard_sides(module, test.operand)
        return none, found
    if isinstance(test, ast.BoolOp):
        sides = [guard_sides(module, value) for value in test.values]
        found, none = [side[0] for side in sides], [side[1] for side in sides]
        return (any(found), all(none)) if isinstance(test.op, ast.And) else (all(found), any(none))
    if isinstance(test, ast.NamedExpr):
        return guard_sides(module, test.value)
    if isinstance(test, ast.Name) and module.assigned.get(test.id):  # every value the name may hold must say so
        values = scoped_values(module, test)
        # a value assigned only where a checkpoint was found says "found" (resume = True under a look)
        sides = [(found or checkpoint_guarded(module, value), none) for value in values
                 for found, none in [guard_sides(module, value)]]
        return bool(sides) and all(side[0] for side in sides), bool(sides) and all(side[1] for side in sides)
    if not looks_for_checkpoint(module, test):
        return False, False
    if isinstance(test, ast.Call) and project_function(module, test) is not None:
        found = helper_found_when_true(*project_function(module, test))
    elif isinstance(test, ast.Compare) and len(test.ops) == 1:
        found = compared_found(test.left, test.ops[0], test.comparators[0])
    else:
        found = True
    return (True, True) if found is None else (found, not found)


def scope_of(module: Module, node: ast.AST) -> ast.AST | None:
    """The function (or lambda) a node is in; None at module level."""
    while id(node) in module.parent:
        node = module.parent[id(node)]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            return node
    return None


def scoped_values(module: Module, name: ast.Name) -> list[ast.AST]:
    """The values assigned to a name in the scope it is read in, else at module level (a global): a `ckpt` of
    another function is another variable."""
    scope = scope_of(module, name)
    values = module.assigned.get(name.id, [])
    return [value for value in values if scope_of(module, value) is scope] or \
        [value for value in values if scope_of(module, value) is None]


def found_when_true(module: Module, test: ast.AST) -> bool | None:
    """True when a test that looks is true only when a checkpoint was found, False when it is true whenever none
    was, else None."""
    found, none = guard_sides(module, test)
    return None if found == none else found


FLIPPED = {ast.Lt: ast.Gt, ast.Gt: ast.Lt, ast.LtE: ast.GtE, ast.GtE: ast.LtE}


def compared_found(left: ast.AST, op: ast.cmpop, right: ast.AST) -> bool | None:
    """found_when_true of `left op right` with an empty or one-item bound on a side: `last is None`, `0 == len(c)`,
    `c == []` (none found); `last is not None`, `len(c) > 0`, `len(c) >= 1` (found); None for any other bound."""
    def bound(node: ast.AST):
        if isinstance(node, ast.Constant) and node.value in (None, False, 0, 1, "") and node.value is not True:
            return node.value
        if isinstance(node, (ast.List, ast.Tuple, ast.Dict, ast.Set)) and not getattr(node, "elts", getattr(
                node, "keys", None)):
            return 0  # [], (), {}
        return UNKNOWN
    if bound(left) is not UNKNOWN and bound(right) is UNKNOWN:
        left, right, op = right, left, FLIPPED.get(type(op), type(op))()
    value = bound(right)
    if value is UNKNOWN:
        return None
    empty = value in (None, False, 0, "") and value is not True
    if isinstance(op, (ast.Is, ast.Eq)):
        return not empty
    if isinstance(op, (ast.IsNot, ast.NotEq)):
        return empty
    if isinstance(op, (ast.Gt, ast.GtE)):  # len(c) > 0, len(c) >= 1
        return True
    if isinstance(op, (ast.Lt, ast.LtE)):  # len(c) < 1, len(c) <= 0
        return False
    return None


def helper_found_when_true(home: Module, name: str) -> bool | None:
    """found_when_true of a call of a project function: what its returns of a look say (`return not any(...)`,
    `if look: return False`), the same for all of them, else None."""
    known = home.helper_found
    if name not in known:
        known[name] = None  # a function that calls itself: not told
        sides = set()
        for definition in home.functions.get(name, []):
            for node in ast.walk(definition):
                if isinstance(node, ast.Return) and node.value is not None and \
                        looks_for_checkpoint(home, node.value):
                    sides.add(found_when_true(home, node.value))
                elif isinstance(node, ast.If) and looks_for_checkpoint(home, node.test):
                    returned = [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Return) and
                                isinstance(sub.value, ast.Constant) and isinstance(sub.value.value, bool)]
                    for constant in returned:  # if look: return True / if look: return False
                        found = found_when_true(home, node.test)
                        sides.add(None if found is None else found == constant.value)
        known[name] = sides.pop() if len(sides) == 1 else None
    return known[name]


RESUME_ERRORS = {"Exception", "BaseException", "ValueError"}  # what train(resume_from_checkpoint=True) raises


def handles_resume_error(handler: ast.ExceptHandler) -> bool:
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(called_name(kind) in RESUME_ERRORS for kind in types)


def checkpoint_guarded(module: Module, call: ast.Call) -> bool:
    """Whether a train(resume_from_checkpoint=True) runs only when a checkpoint is there: in the branch of an if (or
    a conditional expression, a while) that runs only when one was found, after an if that leaves (return, raise,
    sys.exit, parser.error) whenever none was, an assert that holds only when one was, a call that puts a
    checkpoint-N folder in place, in a try that handles the error (ValueError), or in a function of its own that
    is called only so; each enclosing level is read, the nearest guard that guards wins. An unrelated check
    elsewhere in the file (os.path.exists of a data file) guards nothing."""
    node = call
    while id(node) in module.parent and not isinstance(node, ast.Module):
        parent = module.parent[id(node)]
        if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and node is not parent.test:
            in_body = node is parent.body or (isinstance(parent.body, list) and node in parent.body)
            found, none = guard_sides(module, parent.test)
            if found if in_body else none:  # the body runs only when found; the else only when not "none"
                return True
        if isinstance(parent, TRY) and node in parent.body and any(map(handles_resume_error, parent.handlers)):
            return True
        for block in ("body", "orelse", "finalbody"):  # the statements before this one in its block
            statements = getattr(parent, block, None)
            if isinstance(statements, list) and guarded_before(module, statements, node):
                return True
        if isinstance(parent, (ast.FunctionDef, ast.AsyncFunctionDef)):
            # def resume(t): t.train(resume_from_checkpoint=True), called only where a checkpoint was found; each
            # function read once (False while it is read: a function that calls itself guards nothing by that)
            if parent.name not in module.guarded_functions:
                module.guarded_functions[parent.name] = False
                sites = [site for site in module.calls if isinstance(site.func, ast.Name) and
                         site.func.id == parent.name]
                module.guarded_functions[parent.name] = bool(sites) and all(
                    checkpoint_guarded(module, site) for site in sites)
            return module.guarded_functions[parent.name]
        if isinstance(parent, ast.Lambda):
            break
        node = parent
    return False


def guarded_before(module: Module, statements: list[ast.stmt], node: ast.AST) -> bool:
    """Whether a statement above ``node`` in its block guards it; each block is read once (every resume call reads
    the statements above it)."""
    key = id(statements)
    if key not in module.block_guards:
        index, prefix, seen = {}, [], False
        for position, before in enumerate(statements):
            index[id(before)] = position
            prefix.append(seen)
            seen = seen or statement_guards(module, before)
        module.block_guards[key] = index, prefix
    index, prefix = module.block_guards[key]
    return id(node) in index and prefix[index[id(node)]]


def statement_guards(module: Module, before: ast.stmt) -> bool:
    """Whether a statement lets what follows run only when a checkpoint is there."""
    if isinstance(before, ast.Assert):
        return guard_sides(module, before.test)[0]
    if isinstance(before, ast.If):  # leaves whenever none was found: on the body if the test says "none"
        found, none = guard_sides(module, before.test)
        return (none and exits(module, before.body)) or (found and exits(module, before.orelse))
    return puts_checkpoint(before)


def resume_findings(module: Module, training: list, launches: list[Launch]):
    resumes = []
    for call in module.calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "train":
            kw, _ = module.kwargs(call)
            if "resume_from_checkpoint" in kw:
                resumes.append((call, kw["resume_from_checkpoint"][0]))
            elif call.args:  # trainer.train(True): its first parameter; model.train(True) is train mode
                receiver = module.resolve(call.func.value)
                if isinstance(receiver, ast.Call) and module.short(receiver).endswith("Trainer"):
                    resumes.append((call, call.args[0]))
    looks_at_state = None  # whether the project reads trainer_state.json: asked once, not per resume
    for call, value in resumes:
        chosen = module.resolve(value)  # True if <a look at a data file or a flag> else None
        when_true = isinstance(chosen, ast.IfExp) and any(  # True where the test does not say a checkpoint is there
            module.const(branch) is True and not guard_sides(module, chosen.test)[0 if branch is chosen.body else 1]
            for branch in (chosen.body, chosen.orelse))
        if (module.const(value) is True or when_true) and not checkpoint_guarded(module, call) and \
                not checkpoint_guarded(module, value):  # kwargs["resume_from_checkpoint"] = True under a look
            yield "resume-true-unconditional", call.lineno, ""
        last = lambda node: isinstance(node, ast.Call) and module.short(node) == "get_last_checkpoint"  # noqa: E731
        if module.mentions(value, last):
            if looks_at_state is None:
                looks_at_state = any("trainer_state.json" in text for text in module.project_strings)
            if not looks_at_state:
                yield "resume-unchecked-checkpoint", call.lineno, ""
    if not resumes:
        return
    # Only arguments that share an output_dir resume each other: a debug and a full configuration that write to
    # different folders are two runs. A `args.max_steps = N` joins the arguments `args` holds.
    groups: dict[object, dict] = {}
    folder_of: dict[int, object] = {}
    for node, kw, _ in training:
        folder = module.const(kw["output_dir"][0]) if "output_dir" in kw else "trainer_output"  # 5.x's default
        if folder is UNKNOWN:  # the same expression is the same folder, unless a name in it is assigned again
            reassigned = any(isinstance(sub, ast.Name) and module.stores[sub.id] > 1
                             for sub in ast.walk(kw["output_dir"][0]))
            folder = ("each its own", id(node)) if reassigned else ast.dump(kw["output_dir"][0])
        folder_of[id(node)] = folder
        if "max_steps" in kw:
            groups.setdefault(folder, {})[module.const(kw["max_steps"][0])] = kw["max_steps"][1]
    for node in module.nodes:
        targets = [target for target in getattr(node, "targets", []) if isinstance(node, ast.Assign)
                   and isinstance(target, ast.Attribute) and target.attr == "max_steps"]
        for target in targets:
            holder = module.resolve(target.value)
            folder = folder_of.get(id(holder), next(iter(groups)) if len(groups) == 1 else None)
            if folder is not None:
                groups.setdefault(folder, {})[module.const(node.value)] = node.lineno
    for steps in groups.values():
        steps.pop(UNKNOWN, None)
        if len(steps) > 1:
            yield "resume-changed-max-steps", max(steps.values()), f"max_steps {sorted(steps, key=repr)}"
