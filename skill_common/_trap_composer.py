"""The Composer rules (every rule of composer-training): the Trainer's keywords, durations and token counting,
loading and autoresume, devices, optimizers, data loaders under several processes and evaluation metrics, each rule's
table entry first. A module of trap_check.py (synced from skill_common/ into every skill's scripts/ folder).
"""

import ast
import os
import re
from dataclasses import dataclass
from pathlib import Path

from _trap_hf_arguments import ARGUMENT_CLASSES
from _trap_launch import COMPOSER_NPROC, Launch, UNKNOWN
from _trap_module import Module, at, own_nodes
from _trap_rules import CP, ERROR, WARNING, Rule
from _trap_values import called_name


RULES = [
    Rule("CP001", "positional-trainer", CP, ERROR,
         "Composer's Trainer takes keyword arguments only: Trainer(model, ...) raises "
         "TypeError.", "Trainer(model=model, train_dataloader=..., ...)", "SKILL.md#minimal-trainer",
         why='raises TypeError',
         trips={"t.py": "from composer import Trainer\nTrainer(model, optimizers=opt, max_duration='1ep')"},
         clean={"t.py": "from composer import Trainer\nTrainer(model=model, optimizers=opt, max_duration='1ep')"}),
    Rule("CP002", "duration-unit", CP, ERROR,
         "this max_duration unit never ends (iter) or is rejected (dur, wall clock).",
         'a total in ep, ba, sp or tok ("2ep", "100ba")', "references/checkpointing-and-time.md#time-strings",
         why='never ends or raises',
         trips={"t.py": "Trainer(model=m, optimizers=o, max_duration='2iter')\n"
                                   "Trainer(model=m, optimizers=o, max_duration='0.5dur')\n"
                                   "Trainer(model=m, optimizers=o, max_duration='1h30m')"},
         clean={"t.py": "Trainer(model=m, optimizers=o, max_duration='2ep')"}),
    Rule("CP003", "tok-uncounted", CP, ERROR,
         "a tok max_duration without get_num_tokens_in_batch: tokens are counted only for dict "
         "batches with input_ids (padding included) or datasets with max_seq_len, otherwise never, so the run stops "
         "early or never.", "DataSpec(loader, get_num_tokens_in_batch=lambda batch: int(batch[\"attention_mask\"]"
         ".sum()))", "references/model-and-data-contracts.md#batch-schemas-and-what-the-timestamp-counts",
         why='the run silently stops early or never',
         trips={"t.py": "Trainer(model=m, optimizers=o, train_dataloader=loader, max_duration='1000tok')"},
         clean={"t.py": "spec = DataSpec(loader, get_num_tokens_in_batch=count)\n"
                               "Trainer(model=m, optimizers=o, train_dataloader=spec, max_duration='1000tok')"}),
    Rule("CP004", "changed-head-load", CP, ERROR,
         "a changed head loads only with load_weights_only=True, "
         "load_strict_model_weights=False and load_ignore_keys together; other combinations fail or restore the old "
         "optimizer state and timestamp.", "give all three load_* options",
         "references/checkpointing-and-time.md#fine-tune-into-a-changed-head",
         why='raises or silently restores the old optimizer state and timestamp',
         trips={"t.py": "Trainer(model=m, optimizers=o, load_path='p.pt', load_strict_model_weights=False,"
                                       " load_ignore_keys=['state/model/head*'])"},
         clean={"t.py": "Trainer(model=m, optimizers=o, load_path='p.pt', load_weights_only=True, "
                                   "load_strict_model_weights=False, load_ignore_keys=['state/model/head*'])"}),
    Rule("CP005", "autoresume-no-run-name", CP, ERROR,
         "autoresume=True without run_name: Composer raises (a random name could not be "
         "found again on relaunch).", 'run_name="<stable name>" and save_folder="checkpoints/{run_name}"',
         "references/checkpointing-and-time.md#autoresume",
         why='raises',
         trips={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, save_folder='ck')"},
         clean={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='job', "
                                        "save_folder='ck/{run_name}')"}),
    Rule("CP006", "autoresume-shared-folder", CP, ERROR,
         "autoresume reads <save_folder>/latest-rank0.pt whatever the run name: runs "
         "that share this save_folder resume each other's checkpoints.",
         'save_folder="<root>/{run_name}", with a run_name that differs between jobs (run_name=args.job)',
         "references/checkpointing-and-time.md#autoresume",
         why="silently resumes another job's checkpoint",
         trips={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name=args.job, "
                                              "save_folder=str(args.out))"},
         clean={"t.py": "folder = str(args.out / '{run_name}')\nTrainer(model=m, optimizers=o, "
                                          "autoresume=True, run_name=args.job, save_folder=folder)"}),
    Rule("CP007", "save-overwrite", CP, ERROR,
         "save_overwrite=True to get past FileExistsError keeps the old run's files and, when "
         "latest-rank0.pt is missing or dangling, restarts from batch 0.",
         "resume (autoresume or load_path=<folder>/latest-rank0.pt), set torn checkpoints aside, or use a new folder",
         "references/checkpointing-and-time.md#running-again-into-a-used-folder",
         why='loses work: restarts from batch 0',
         trips={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='j', save_folder='c', "
                                    "save_overwrite=True)"},
         clean={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='j', save_folder='c')"}),
    Rule("CP008", "gpu-only-setting-on-cpu", CP, ERROR,
         "AMP precision and device_train_microbatch_size=\"auto\" are GPU-only: on CPU "
         "Composer raises.", 'precision="fp32" and an integer microbatch size on CPU',
         "references/troubleshooting.md#precision-devices-microbatching",
         why='raises on CPU',
         trips={"t.py": "Trainer(model=m, optimizers=o, device='cpu', precision='amp_bf16', "
                                             "device_train_microbatch_size='auto')"},
         clean={"t.py": "Trainer(model=m, optimizers=o, device='cpu', precision='fp32', "
                                         "device_train_microbatch_size=2)"}),
    Rule("CP009", "no-optimizer", CP, WARNING,
         "no optimizers=: Composer warns and trains with DecoupledSGDW(lr=0.1).",
         "optimizers=torch.optim.AdamW(model.parameters(), lr=...)", "SKILL.md#fast-start",
         why="Composer warns at run time and trains: a default to replace, not a silent failure (a profiling demo "
             "may mean it)",
         trips={"t.py": "Trainer(model=m, train_dataloader=loader, max_duration='2ba')"},
         clean={"t.py": "Trainer(model=m, train_dataloader=loader, max_duration='2ba', optimizers=opt)"}),
    Rule("CP010", "shuffle-resume", CP, WARNING,
         "a train DataLoader(shuffle=True) with autoresume or load_path: a resume inside an epoch "
         "reorders the rest of it when training draws from torch's CPU RNG, so the resume is not bit-exact.",
         "sampler=dist.get_sampler(dataset, shuffle=True) (composer.utils.dist)",
         "references/checkpointing-and-time.md#after-a-kill-or-preemption",
         why='the resumed run is statistically sound, only not bit-exact',
         trips={"t.py": "loader = DataLoader(data, batch_size=4, shuffle=True)\nTrainer(model=m, "
                                    "optimizers=o, train_dataloader=loader, autoresume=True, run_name='j')"},
         clean={"t.py": "loader = DataLoader(data, batch_size=4, sampler=dist.get_sampler(data, shuffle=True))"
                                "\nTrainer(model=m, optimizers=o, train_dataloader=loader, autoresume=True, "
                                "run_name='j')"}),
    Rule("CP011", "launch-default-processes", CP, WARNING,
         "composer without -n starts one process per GPU: one on a machine without "
         "GPUs.", "composer -n <processes> train.py", "references/distributed.md#run-it-with-2-ranks-on-cpu",
         why='depends on the machine it runs on: right on a GPU node, one process on a CPU one',
         trips={"run.sh": "composer train.py --epochs 2\n"},  # trap-check: ignore[CP011] (an example)
         clean={"run.sh": "composer -n 2 train.py --epochs 2\n"}),
    Rule("CP012", "loader-without-sampler", CP, ERROR,
         "a train DataLoader without a distributed sampler under a multi-process launch: "
         "every rank reads every sample (Composer refuses it).",
         "sampler=dist.get_sampler(dataset, shuffle=...) (composer.utils.dist)",
         "references/distributed.md#what-the-training-script-needs",
         why='Composer refuses it',
         trips={"t.py": "LAUNCH = ['composer', '-n', '2', 'train.py']\nloader = DataLoader(data, "
                                            "batch_size=4)\nTrainer(model=m, optimizers=o, train_dataloader=loader)"},
         clean={"t.py": "LAUNCH = ['composer', '-n', '2', 'train.py']\nloader = DataLoader(data, "
                                        "batch_size=4, sampler=dist.get_sampler(data))\nTrainer(model=m, optimizers=o, "
                                        "train_dataloader=loader)"}),
    Rule("CP013", "eval-without-metrics", CP, ERROR,
         "evaluation with a model that reports no metrics (it defines no get_metrics, or "
         "it is a HuggingFaceModel given neither metrics= nor eval_metrics=): get_metrics returns {}, so evaluation "
         "runs and reports nothing.",
         "define get_metrics(is_train) and update_metric in the model (ComposerClassifier has them), or give "
         "HuggingFaceModel metrics= (eval_metrics= for other metrics in evaluation)",
         "SKILL.md#model-and-data-checklist",
         why='evaluation silently reports nothing',
         trips={"t.py": "model = Net()\nTrainer(model=model, optimizers=o, "
                                          "eval_dataloader=Evaluator(label='val', dataloader=loader))"},
         clean={"t.py": "class Scored(Net):\n    def get_metrics(self, is_train=False):\n        return {}\n"
                                      "model = Scored()\nTrainer(model=model, optimizers=o, "
                                      "eval_dataloader=Evaluator(label='val', dataloader=loader))"}),
]


WALL_CLOCK = re.compile(r"^\s*(\d+(\.\d*)?\s*(h|hr|m|min|s|sec|d)\s*)+$", re.I)
TIME_STRING = re.compile(r"^\s*[0-9.eE+-]+\s*([a-zA-Z]+)\s*$")
TIME_UNITS = {"ITERATION": "iter", "EPOCH": "ep", "BATCH": "ba", "SAMPLE": "sp", "TOKEN": "tok", "DURATION": "dur",
              "SECOND": "sec"}  # composer.core.TimeUnit
PADDING = {"attention_mask", "pad_sequence", "padding_value", "pad_token_id", "DataCollatorWithPadding",
           "DataCollatorForLanguageModeling", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"}
ITERABLE = ("IterableDataset", "StreamingDataset", "StreamingTextDataset", "WebDataset", "DataPipe",
            "IterDataPipe", "IterableDatasetDict")  # a sampler does not apply: the dataset shards itself
SCORED_MODELS = ("ComposerClassifier", "HuggingFaceModel", "MMDetModel")  # they define get_metrics (HuggingFaceModel


def duration_text(module: Module, node: ast.AST | None):
    """A Composer duration as a time string: "2iter" for "2iter", Time(2, TimeUnit.ITERATION), Time(2, "iter"),
    Time.from_iteration(2) or Time.from_timestring("2iter"); UNKNOWN otherwise."""
    value = module.const(node)
    node = module.resolve(node)
    if isinstance(value, str) or not isinstance(node, ast.Call):
        return value
    function = module.qualname(node.func).rsplit(".", 2)
    kw, _ = module.kwargs(node)
    if function[-1] == "Time":
        amount = module.const(node.args[0] if node.args else kw.get("value", (None,))[0])
        unit = node.args[1] if len(node.args) > 1 else kw.get("unit", (None,))[0]
        unit = TIME_UNITS.get(unit.attr) if isinstance(unit, ast.Attribute) else module.const(unit)
        return f"{amount}{unit}" if isinstance(unit, str) and isinstance(amount, (int, float)) else UNKNOWN
    if len(function) > 1 and function[-2] == "Time" and function[-1].startswith("from_"):
        given = module.const(node.args[0]) if node.args else UNKNOWN
        if function[-1] in ("from_timestring", "from_input"):
            return given
        unit = {"from_timedelta": "sec"}.get(function[-1]) or TIME_UNITS.get(function[-1][5:].upper())
        return f"{given if isinstance(given, (int, float)) else 1}{unit}" if unit else UNKNOWN
    return UNKNOWN


@dataclass
class Loader:
    """A DataLoader(...) call a Trainer reads, the module it is written in, and the DataSpec(...) around it."""
    part: Module
    call: ast.Call
    spec: ast.Call | None = None
    site: tuple | None = None  # (module, call, definition) of the project function that builds it: make_loader()


def dataloaders(module: Module, node: ast.AST | None, depth: int = 0, spec: ast.Call | None = None) \
        -> list[Loader] | None:
    """The DataLoader(...) calls a train_dataloader or eval_dataloader value reads, through DataSpec, Evaluator,
    lists and dicts of DataSpec arguments and the project functions that return them (in this module or one it
    imports); None when some cannot be told."""
    node = module.resolve(node)
    if node is None or depth > 4:
        return None
    if isinstance(node, (ast.List, ast.Tuple)):
        found = [dataloaders(module, element, depth + 1) for element in node.elts]
        return None if None in found else [loader for part in found for loader in part]
    if isinstance(node, ast.ListComp):
        return dataloaders(module, node.elt, depth + 1)
    if isinstance(node, ast.Dict):
        inner, _ = module.mapping(node, 10**9)
        return dataloaders(module, inner.get("dataloader", (None,))[0], depth + 1)
    if not isinstance(node, ast.Call):
        return None
    short, (kw, _) = module.short(node), module.kwargs(node)
    if short == "DataLoader":
        return [Loader(module, node, spec)]
    if short in ("DataSpec", "Evaluator"):  # DataSpec(dataloader, ...), Evaluator(label, dataloader, ...)
        position = 1 if short == "Evaluator" else 0
        given = node.args[position] if len(node.args) > position else kw.get("dataloader", (None,))[0]
        return dataloaders(module, given, depth + 1, node if short == "DataSpec" else spec)
    returned = module.returned(node)  # make_loader(data): a project function that builds it
    if returned is None:
        return None
    found = [dataloaders(part, value, depth + 1, spec) for part, value in returned]
    if None in found:
        return None
    definition = module.callee(node)[1]
    loaders = [loader for part in found for loader in part]
    for loader in loaders:
        if loader.site is None:
            loader.site = (module, node, definition)
    return loaders


def counts_tokens(loader: Loader) -> bool:
    """Whether the DataSpec around a loader gives get_num_tokens_in_batch (or may: a `**` that cannot be read)."""
    if loader.spec is None:
        return False
    kw, complete = loader.part.kwargs(loader.spec)
    return "get_num_tokens_in_batch" in kw or not complete


def shuffles(loader: Loader) -> bool:
    """shuffle=True, or shuffle=<a parameter of the project function that builds the loader> that the call passes
    True or leaves at a default of True (`def make_loader(shuffle=True)`)."""
    given = loader.part.kwargs(loader.call)[0].get("shuffle", (None,))[0]
    value = loader.part.const(given)
    if value is UNKNOWN and isinstance(given, ast.Name) and loader.site is not None:
        module, site, definition = loader.site
        value = parameter_value(module, site, definition, given.id)
    return value is True


def parameter_value(module: Module, site: ast.Call, definition: ast.AST, name: str):
    """The constant a call gives a parameter of the function it calls, or the parameter's default; UNKNOWN when the
    function assigns it again or it cannot be read."""
    parameters = getattr(definition, "args", None)
    if parameters is None or any(isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
                                 for node in own_nodes(definition)):
        return UNKNOWN
    positional = [*parameters.posonlyargs, *parameters.args]
    names = [argument.arg for argument in positional]
    kw, complete = module.kwargs(site)
    if name in kw:
        return module.const(kw[name][0])
    if name in names:
        index = names.index(name)
        if any(isinstance(argument, ast.Starred) for argument in site.args[:index + 1]):
            return UNKNOWN
        if index < len(site.args):
            return module.const(site.args[index])
        defaults = parameters.defaults
        offset = index - (len(positional) - len(defaults))
        default = defaults[offset] if offset >= 0 else None
    else:
        keyword_only = [argument.arg for argument in parameters.kwonlyargs]
        default = parameters.kw_defaults[keyword_only.index(name)] if name in keyword_only else None
    if default is None or not complete:
        return UNKNOWN
    part = next((part for part in module.project if definition in part.functions.get(
        getattr(definition, "name", ""), [])), module)
    return part.const(default)


def iterable_dataset(module: Module, node: ast.AST | None, depth: int = 0) -> bool:
    """Whether a DataLoader's dataset is iterable (torch IterableDataset or a class derived from one, a streaming
    Hugging Face dataset, mosaicml-streaming, webdataset): each rank gets its shard from the dataset, not a
    sampler. A streaming= value that cannot be read counts as streaming."""
    node = module.resolve(node)
    if depth > 6:
        return False
    if isinstance(node, ast.Subscript):  # load_dataset(..., streaming=True)["train"]
        return iterable_dataset(module, node.value, depth + 1)
    if not isinstance(node, ast.Call):
        return False
    short = module.short(node)
    if module.inherits(short, lambda name: name in ITERABLE or name.endswith("IterableDataset")) or \
            short in ("to_iterable_dataset", "split_dataset_by_node"):
        return True
    if short == "load_dataset" and "streaming" in module.kwargs(node)[0]:
        return module.const(module.kwargs(node)[0]["streaming"][0]) is not False
    if isinstance(node.func, ast.Attribute) and short in ("map", "filter", "shuffle", "take", "skip", "batch",
                                                         "with_format", "select_columns", "rename_column",
                                                         "remove_columns", "from_generator"):
        return iterable_dataset(module, node.func.value, depth + 1) or module.qualname(node.func.value).endswith(
            "IterableDataset")
    return False


def tokens_counted(module: Module) -> str | None:
    """Why a tok duration is miscounted without get_num_tokens_in_batch, or None when Composer counts it right:
    Composer counts input_ids.numel() of dict batches (padding included), else dataset.max_seq_len per sample,
    else nothing. The batches' keys and padding are looked for in this module and the project modules it
    imports. Asked per tok duration, worked out once per module."""
    if module._tokens_counted is None:
        module._tokens_counted = (_tokens_counted(module),)
    return module._tokens_counted[0]


def _tokens_counted(module: Module) -> str | None:
    names = module.project_words
    padded = PADDING & names or any(isinstance(node, ast.keyword) and node.arg == "padding" and part.const(
        node.value) not in (False, "do_not_pad") for part in module.project if "padding" in part.names
        for node in part.nodes)
    if "input_ids" in names or "max_seq_len" in names:
        return "input_ids counted with their padding" if padded else None
    return "no input_ids key or max_seq_len seen here: with neither, no token is counted"


def duration_findings(module: Module, kw: dict, name: str, loaders: list[Loader] | None = None):
    """``loaders``: the train loaders of the Trainer the duration is for, None when they cannot be told (then a
    get_num_tokens_in_batch anywhere in the project counts for them)."""
    duration = duration_text(module, kw[name][0]) if name in kw else None
    if isinstance(duration, str):
        unit = TIME_STRING.match(duration) if len(duration) < 100 else None  # the pattern backtracks on long text
        if WALL_CLOCK.match(duration) or (unit and unit[1].lower() in ("iter", "dur")):
            yield "duration-unit", kw[name][1], f"{name}={duration!r}"
        elif unit and unit[1].lower() == "tok":
            if (all(map(counts_tokens, loaders)) if loaders else
                    "get_num_tokens_in_batch" in module.project_names):
                return
            why = tokens_counted(module)
            if why:
                yield "tok-uncounted", kw[name][1], f"{name}={duration!r}: {why}"


def scored(module: Module, node: ast.AST | None, depth: int = 0) -> tuple[bool | None, str]:
    """Whether the model a Trainer is given reports metrics: True (ComposerClassifier, a HuggingFaceModel given
    metrics), False with what it is (a class not seen here, or of the project, with no get_metrics anywhere in the
    project; a HuggingFaceModel without metrics= or eval_metrics=), None when it cannot be told (a factory function
    not seen here, a name, a HuggingFaceModel subclass)."""
    node = module.resolve(node)
    if not isinstance(node, ast.Call) or depth > 4:
        return None, ""
    short = module.short(node)
    if short == "HuggingFaceModel":  # metrics defaults to None and get_metrics then returns {}
        kw, complete = module.kwargs(node)
        given = len(node.args) > 3 or any(
            module.const(kw[name][0]) is not None for name in ("metrics", "eval_metrics") if name in kw)
        return (True, "") if given else (None, "") if not complete else \
            (False, "HuggingFaceModel() without metrics= or eval_metrics=, whose get_metrics returns {}")
    if module.inherits(short, lambda name: name in SCORED_MODELS):
        return (None if module.inherits(short, lambda name: name == "HuggingFaceModel") else True), ""
    returned = module.returned(node)
    if returned is not None:  # a factory: what it returns
        verdicts = [scored(part, value, depth + 1) for part, value in returned]
        if all(verdict is False for verdict, _ in verdicts):
            return False, f"{short}() returns {verdicts[0][1]}"
        return (None if None in [verdict for verdict, _ in verdicts] else True), ""
    if short[:1].isupper() and "get_metrics" not in module.project_names and not library_class(module, node.func):
        return False, f"{short}(), which defines no get_metrics here"  # a class of the project
    return None, ""  # a function not seen here (a library's factory, a module not given): cannot be told


def library_class(module: Module, function: ast.AST) -> bool:
    """Whether a class comes from a module this checker cannot read (llmfoundry's ComposerMPTCausalLM): whether it
    defines get_metrics cannot be told. A module the code itself puts on sys.path from the project's folders first
    (`sys.path.insert(0, str(Path(__file__).parent / "lib")); from net import Net`) is the project's own, placed at
    run time (or from a folder given at run time, args.data); one from a folder outside the project
    (/opt/llm-foundry) is not."""
    while isinstance(function, ast.Attribute):
        function = function.value
    if not isinstance(function, ast.Name) or function.id not in module.imports or function.id in module.linked:
        return False
    if function.id in module.bases or any(function.id in part.bases for part in module.project[1:]):
        return False
    return not module.own_sys_path


PATH_SAME = {"abspath", "realpath", "normpath", "str", "Path", "PurePath", "fspath", "expanduser"}


def sys_path_entries(module: Module) -> list[tuple[Path | None, bool]]:
    """(folder, relative) per sys.path.insert/append: relative is True for a folder found from the file
    (`os.path.dirname(__file__)`, `Path(__file__).parents[1] / "src"`) or written relative, and for one given at
    run time that cannot be read here (folder None: `args.data`, the project's data folder)."""
    def folder(node: ast.AST | None, depth: int = 0) -> tuple[str, bool] | None:
        node = module.resolve(node)
        if node is None or depth > 12:
            return None
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            relative = not os.path.isabs(os.path.expanduser(node.value))
            return (os.path.join(os.path.dirname(module.path), node.value) if relative else node.value), relative
        if isinstance(node, ast.Name) and node.id == "__file__":
            return module.path, True
        if isinstance(node, ast.Attribute) and node.attr == "parent":
            inner = folder(node.value, depth + 1)
            return inner and (os.path.join(inner[0], os.pardir), inner[1])
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Attribute) and node.value.attr == "parents":
            inner, up = folder(node.value.value, depth + 1), module.const(node.slice)
            return inner and isinstance(up, int) and 0 <= up < 64 and (os.path.join(inner[0], *[os.pardir] * (up + 1)),
                                                                   inner[1]) or None
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            inner, part = folder(node.left, depth + 1), module.const(node.right)
            return inner and isinstance(part, str) and (os.path.join(inner[0], part), inner[1]) or None
        if isinstance(node, ast.Call):
            name = called_name(node.func)
            if isinstance(node.func, ast.Attribute) and name in ("resolve", "absolute") and not node.args:
                return folder(node.func.value, depth + 1)
            if not node.args:
                return None
            inner = folder(node.args[0], depth + 1)
            if name == "dirname":
                return inner and (os.path.join(inner[0], os.pardir), inner[1])
            if name in PATH_SAME:
                return inner
            if name in ("join", "joinpath"):
                parts = [module.const(argument) for argument in node.args[1:]]
                return inner and all(isinstance(part, str) for part in parts) and (
                    os.path.join(inner[0], *parts), inner[1]) or None
        return None
    entries = []
    for call in module.calls:
        if module.qualname(call.func) in ("sys.path.insert", "sys.path.append") and call.args:
            found = folder(call.args[-1])
            entries.append((Path(os.path.normpath(found[0])), found[1]) if found else (None, True))
    return entries


def ignores_model_keys(module: Module, ignore_keys) -> bool:
    """Whether load_ignore_keys may drop model weights (a changed head): any key unless each is a known list entry
    that names rng or a state entry other than the model (["rng", "state/rank_zero_seed"] resumes a run whole,
    Composer's own example of it)."""
    if ignore_keys is None:
        return False
    listed = module.resolve(ignore_keys[0])
    keys = [module.const(key) for key in listed.elts] if isinstance(listed, (ast.List, ast.Tuple)) else None
    if keys is None or not all(isinstance(key, str) for key in keys):
        return True
    return not all(key.split("/")[0] == "rng" or (key.startswith("state/") and not any(
        mark in key.split("/")[1] for mark in "*?[") and key.split("/")[1] != "model") for key in keys)


def composer_findings(module: Module, launches: list[Launch], device: str, several_jobs: str = ""):
    # a Trainer never imported, in a file that builds TrainingArguments, is Transformers' (a notebook fragment)
    transformers_code = "Trainer" not in module.imports and bool(set(ARGUMENT_CLASSES) & module.names)
    trainers = [call for call in module.calls_named("Trainer")
                if not module.qualname(call.func).startswith("transformers") and not transformers_code]
    for launch in launches:
        if device == "cpu" and launch.launcher == "composer" and launch.option("-n", *COMPOSER_NPROC) is None and \
                "LOCAL_WORLD_SIZE" not in launch.env and \
                not any(option.startswith("$") for option in launch.options):
            # "$@" or $EXTRA among the launcher's options may carry -n; after the script they go to the script
            yield "launch-default-processes", launch, ""
    multi_process = any((launch.processes or 1) > 1 for launch in launches)
    shuffled = [Loader(module, call) for call in module.calls_named("DataLoader") if shuffles(Loader(module, call))]
    for call in module.calls if trainers else []:  # trainer.fit(duration=...) trains for that duration
        if isinstance(call.func, ast.Attribute) and call.func.attr == "fit":
            yield from duration_findings(module, module.kwargs(call)[0], "duration")
    for call in trainers:
        kw, complete = module.kwargs(call)
        value = lambda name, default=None: module.const(kw[name][0]) if name in kw else default  # noqa: E731
        if call.args:
            yield "positional-trainer", call.lineno, ""
        train = dataloaders(module, kw["train_dataloader"][0]) if "train_dataloader" in kw else None
        yield from duration_findings(module, kw, "max_duration", train)
        head = {"load_ignore_keys" in kw, value("load_strict_model_weights") is False,
                value("load_weights_only") is True}
        unread = any(name in kw and value(name) is UNKNOWN
                     for name in ("load_weights_only", "load_strict_model_weights"))
        if "load_path" in kw and not unread and (ignores_model_keys(module, kw.get("load_ignore_keys")) or
                                                 value("load_strict_model_weights") is False) and head != {True}:
            yield "changed-head-load", kw["load_path"][1], ""
        if value("autoresume") is True:
            run_name = value("run_name")
            if complete and "run_name" not in kw:
                yield "autoresume-no-run-name", kw["autoresume"][1], ""
            elif isinstance(run_name, str) and isinstance(value("save_folder"), str):
                looped = module.loop_variables(call)  # Trainers built in a loop over what differs between them
                varied = sorted(name for name in looped if any(module.mentions(
                    node, lambda sub: isinstance(sub, ast.Name) and sub.id in looped)
                    for key, (node, _) in kw.items() if key not in ("run_name", "save_folder")))
                why = several_jobs or (f"a Trainer per value of {varied[0]} in a loop" if varied else "")
                if why:
                    yield "autoresume-shared-folder", kw["run_name"][1], f"run_name={run_name!r} in every job: {why}"
            elif "run_name" in kw and "save_folder" in kw and run_name is UNKNOWN:
                run_name = ast.dump(kw["run_name"][0])
                own = lambda node: (isinstance(node, ast.Constant) and isinstance(node.value, str)  # noqa: E731
                                    and "{run_name}" in node.value) or ast.dump(node) == run_name
                if not module.mentions(kw["save_folder"][0], own):
                    yield "autoresume-shared-folder", kw["save_folder"][1], ""
        if value("save_overwrite") is True:
            yield "save-overwrite", kw["save_overwrite"][1], ""
        on_cpu = value("device", device) == "cpu" or (
            "device" in kw and isinstance(module.resolve(kw["device"][0]), ast.Call)
            and module.short(module.resolve(kw["device"][0])) == "DeviceCPU")
        precision = value("precision")
        if on_cpu and isinstance(precision, str) and precision.lower().startswith("amp"):
            yield "gpu-only-setting-on-cpu", kw["precision"][1], f"precision={precision!r}"
        if on_cpu and value("device_train_microbatch_size") == "auto":
            yield "gpu-only-setting-on-cpu", kw["device_train_microbatch_size"][1], 'device_train_microbatch_size="auto"'
        no_optimizer = "optimizers" not in kw or value("optimizers") is None  # optimizers=None written out
        if complete and no_optimizer and ("train_dataloader" in kw or "max_duration" in kw):
            yield "no-optimizer", call.lineno, ""
        resumes = value("autoresume") is True or ("load_path" in kw and value("load_path") is not None
                                                  and value("load_weights_only") is not True)
        if resumes:  # the train loader's order matters; an eval loader's does not
            resumed = train
            if resumed is None:  # the train loader cannot be told: every shuffled loader but the eval ones
                evaluation = [dataloaders(module, kw["eval_dataloader"][0]) or []] if "eval_dataloader" in kw else []
                evaluation += [dataloaders(module, evaluator) or [] for evaluator in module.calls_named("Evaluator")]
                skip = {id(loader.call) for loaders in evaluation for loader in loaders}
                resumed = [loader for loader in shuffled if id(loader.call) not in skip]
            for loader in resumed:
                if shuffles(loader):
                    yield "shuffle-resume", at(module, loader.part, loader.call.lineno), ""
        for loader in (train or []) if multi_process else []:
            part, call = loader.part, loader.call
            loader_kw, loader_complete = part.kwargs(call)
            dataset = call.args[0] if call.args else loader_kw.get("dataset", (None,))[0]
            if loader_complete and not {"sampler", "batch_sampler"} & set(loader_kw) and len(call.args) < 3 and \
                    not iterable_dataset(part, dataset):
                yield "loader-without-sampler", at(module, part, call.lineno), ""
        if "eval_dataloader" in kw or module.calls_named("Evaluator"):
            verdict, why = scored(module, kw["model"][0] if "model" in kw else None)
            if verdict is False:
                yield "eval-without-metrics", kw["model"][1], why
