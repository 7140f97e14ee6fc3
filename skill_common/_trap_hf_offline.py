"""The Transformers rules on the network: evaluate.load of a Hub metric, and load_dataset on local files without the
offline variables set before datasets is imported. A module of trap_check.py (synced from skill_common/ into every
skill's scripts/ folder).
"""

import ast
from pathlib import Path

from _trap_launch import COUNTS, FALSE_VALUES, SETTINGS, UNKNOWN, Launch, offline_value
from _trap_module import Module
from _trap_rules import TF, WARNING, Rule
from _trap_values import called_name


RULES = [
    Rule("TF015", "evaluate-hub-load", TF, WARNING,
         "evaluate.load(<Hub name>) fetches the metric module from the Hub: offline it fails, "
         "online it is a network call per run.",
         'compute the metric with numpy in compute_metrics, or evaluate.load("<path>/metric.py") of a local module '
         "(assets/accuracy_metric.py), which needs no network",
         "references/api-reference.md#metrics-offline-with-the-evaluate-api",
         why='a network call: a policy matter where the Hub is reachable, an error only offline',
         trips={"t.py": 'import evaluate\nname = "accuracy"\nmetric = evaluate.load(name)'},
         clean={"t.py": 'import evaluate\nmetric = evaluate.load("assets/accuracy_metric.py")'}),
    Rule("TF026", "load-dataset-online", TF, WARNING,
         "load_dataset on local files looks up s3.amazonaws.com unless HF_HUB_OFFLINE or "
         "HF_DATASETS_OFFLINE is 1 before datasets is imported.",
         'os.environ["HF_HUB_OFFLINE"] = "1" above the first datasets import (or set it in the launching shell)',
         "references/task-recipes.md#your-own-data-files",
         why='a network lookup: a policy matter where the network is reachable',
         trips={"t.py": """
        from datasets import load_dataset
        data = load_dataset("json", data_files="train.jsonl")
        """},
         clean={"t.py": """
        import os
        os.environ["HF_HUB_OFFLINE"] = "1"
        from datasets import load_dataset
        data = load_dataset("json", data_files="train.jsonl")
        """}),
]


def local_file(path: Path) -> bool:
    """Whether a path named in checked code is there: a name the system refuses (too long, a NUL) is not."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def evaluate_findings(module: Module):
    # a name any import binds to evaluate.load, also where a fallback import binds it again (`try: from evaluate
    # import load as load_metric`, `except ImportError: from datasets import load_metric`): the first one runs
    bound = {alias.asname or alias.name: f"evaluate.{alias.name}" for node in module.of_types(ast.ImportFrom)
             if node.module == "evaluate" and not node.level
             for alias in node.names if alias.name in ("load", "combine")}
    for call in module.calls:
        function = module.qualname(call.func)
        if isinstance(call.func, ast.Name) and call.func.id in bound and not module.assigned.get(call.func.id):
            function = bound[call.func.id]
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


def offline_settings(module: Module) -> list[tuple[int, str, object]]:
    """(line, variable, value) per offline variable the module sets: os.environ["HF_HUB_OFFLINE"] = "1",
    setdefault(...), update(...), putenv(...)."""
    found: list[tuple[int, str, object]] = []
    names = module.names | module.strings
    for node in module.nodes if set(SETTINGS) & names else []:
        pairs = []
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            pairs = [(node.targets[0].slice, node.value)]
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.BitOr):  # os.environ |= {...}
            pairs = [(ast.Constant(key), value)
                     for key, (value, _) in module.mapping(node.value, node.lineno)[0].items()]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "setdefault", "putenv", "update", "__setitem__"):
            if node.func.attr == "update":  # update(HF_HUB_OFFLINE="1"), update({...}), update(OFFLINE)
                pairs = [(ast.Constant(key), value) for key, (value, _) in module.kwargs(node)[0].items()]
                pairs += [(ast.Constant(key), value) for arg in node.args
                          for key, (value, _) in module.mapping(arg, node.lineno)[0].items()]
            elif node.args:
                pairs = [(node.args[0], node.args[1] if len(node.args) > 1 else None)]
        for key, value in pairs:
            if module.const(key) in SETTINGS:
                found.append((node.lineno, module.const(key), module.const(value)))
    return found


def file_suffix(node: ast.AST) -> bool:
    """A builder name taken from a data file's suffix (`extension = train_file.split(".")[-1]`, Path(f).suffix):
    always a packaged builder (json, csv, text), never a Hub dataset."""
    return (isinstance(node, ast.Call) and called_name(node.func) in ("split", "rsplit") and
            any(isinstance(argument, ast.Constant) and argument.value == "." for argument in node.args)) or (
        isinstance(node, ast.Attribute) and node.attr == "suffix")


def load_dataset_findings(module: Module, launches: list[Launch]):
    imports = [node.lineno for node in module.of_types(ast.Import, ast.ImportFrom) if (
        isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "datasets" for alias in node.names)) or (
        isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "datasets")]
    first_import = min(imports, default=0) or 10**9
    settings = [(name, value) for line, name, value in offline_settings(module) if line < first_import]
    settings += [(name, value) for line, imported in module.imported if line < first_import  # import setup_env
                 for _, name, value in offline_settings(imported)]
    settings += [(name, launch.env[name]) for launch in launches for name in SETTINGS if name in launch.env]
    # datasets reads HF_DATASETS_OFFLINE when it is set, else HF_HUB_OFFLINE; either is on only for 1/on/yes/true
    offline = [(name, value) for name, value in settings if name != COUNTS]
    if any(offline_value(value) for _, value in offline) and not any(
            name == "HF_DATASETS_OFFLINE" and not offline_value(value) for name, value in offline):
        return
    if any(name == COUNTS and (value is UNKNOWN or "$" in str(value) or str(value).upper() in FALSE_VALUES)
           for name, value in settings):
        return
    local_builders = {"json", "csv", "text", "parquet", "arrow", "pandas", "imagefolder", "audiofolder", "xml", "sql",
                      "webdataset"}
    for call in module.calls:
        if not module.qualname(call.func).startswith("datasets.") or module.short(call) != "load_dataset":
            continue
        kw, _ = module.kwargs(call)
        builder = module.const(call.args[0] if call.args else kw.get("path", (None,))[0])
        # a builder for local files, or a path; load_dataset("laion/OIG", data_files=...) picks files of a Hub
        # dataset (offline mode would break it), and a name not read here decides nothing
        if builder in local_builders or (isinstance(builder, str) and builder.startswith((".", "/", "~"))) or (
                builder is UNKNOWN and "data_files" in kw and module.mentions(call.args[0] if call.args else None,
                                                                              file_suffix)):
            yield "load-dataset-online", call.lineno, ""
