"""The Transformers rule on imports the pinned versions no longer have (removed-import): `from transformers import
AdamW`, `import transformers.deepspeed`, `datasets.load_metric(...)`, each with what 5.x has instead. A module of
trap_check.py (synced from skill_common/ into every skill's scripts/ folder).
"""

import ast
import re

from _trap_module import Module
from _trap_rules import ERROR, TF, Rule
from _trap_values import called_name


RULES = [
    Rule("TF035", "removed-import", TF, ERROR,
         "an import (or a package attribute read) that transformers 5.x or datasets 5.x no longer has (the note "
         "names it and its replacement): ImportError at the import, AttributeError at the read.",
         "import the replacement the note names (transformers.integrations.deepspeed, IntervalStrategy, "
         "torch.optim.AdamW, evaluate.load), or guard a 4.x fallback with try/except ImportError",
         "references/trap-check.md#imports-5x-removed", why="raises ImportError (or AttributeError) on 5.x",
         trips={"t.py": "from transformers import AdamW, Trainer\nimport datasets\nmetric = datasets.load_metric('f1')\n"},
         clean={"t.py": "from torch.optim import AdamW\nfrom transformers import Trainer\nimport evaluate\n"
                        "metric = evaluate.load('assets/f1_metric.py')\n"}),
]

# What 4.x-era training code imports (or reads as module.name) that transformers 5.24 / datasets 5.2 no longer have:
# old dotted name -> (the 5.x replacement, importable; or "" where there is none, how to do without it). A module
# listed covers everything under it. tests/test_trap_lint.py imports each on the installed packages: every old name
# fails (ImportError or AttributeError) and every replacement works.
REMOVED_IMPORTS = {
    "transformers.deepspeed": ("transformers.integrations.deepspeed", ""),
    "transformers.trainer_utils.EvaluationStrategy": ("transformers.trainer_utils.IntervalStrategy", ""),
    "transformers.EvaluationStrategy": ("transformers.IntervalStrategy", ""),
    "transformers.AdamW": ("torch.optim.AdamW", ""),
    "transformers.optimization.AdamW": ("torch.optim.AdamW", ""),
    "datasets.load_metric": ("evaluate.load", ""),
    "datasets.list_metrics": ("evaluate.list_evaluation_modules", ""),
    "datasets.Metric": ("evaluate.EvaluationModule", ""),
    "transformers.utils.send_example_telemetry": ("", "drop the call: 5.x sends no example telemetry"),
    "transformers.is_torch_tpu_available": ("transformers.is_torch_xla_available", ""),
    "transformers.file_utils.is_torch_tpu_available": ("transformers.utils.is_torch_xla_available", ""),
    "transformers.file_utils.cached_path": ("huggingface_hub.hf_hub_download", ""),
    "transformers.AutoModelWithLMHead": ("transformers.AutoModelForCausalLM", "or AutoModelForMaskedLM, "
                                         "AutoModelForSeq2SeqLM: the head the task trains"),
    "transformers.MODEL_WITH_LM_HEAD_MAPPING": ("transformers.MODEL_FOR_CAUSAL_LM_MAPPING", ""),
    "transformers.AutoModelForVision2Seq": ("transformers.AutoModelForImageTextToText", ""),
    "transformers.TextDataset": ("datasets.load_dataset", 'load_dataset("text", data_files=...), tokenized with map'),
    "transformers.LineByLineTextDataset": ("datasets.load_dataset",
                                           'load_dataset("text", data_files=...), tokenized with map'),
    "transformers.data.datasets": ("datasets.load_dataset", ""),
    "transformers.data.processors": ("datasets.load_dataset", 'load_dataset("nyu-mll/glue", task) and map'),
    "transformers.data.metrics": ("evaluate.load", 'evaluate.load("glue", task), or numpy in compute_metrics'),
    "transformers.glue_compute_metrics": ("evaluate.load", 'evaluate.load("glue", task), or numpy'),
    "transformers.glue_processors": ("datasets.load_dataset", ""),
    "transformers.glue_output_modes": ("datasets.load_dataset", ""),
    "transformers.glue_tasks_num_labels": ("datasets.load_dataset", "the dataset's ClassLabel feature counts them"),
    "transformers.glue_convert_examples_to_features": ("datasets.load_dataset", "tokenize with map"),
    "transformers.squad_convert_examples_to_features": ("datasets.load_dataset", "tokenize with map"),
    "transformers.DataCollatorForSOP": ("", "build the sentence-order labels in the dataset"),
    "transformers.DataCollatorForWholeWordMask": ("transformers.DataCollatorForLanguageModeling", ""),
    "transformers.top_k_top_p_filtering": ("transformers.TopPLogitsWarper", "with TopKLogitsWarper"),
    "transformers.generation_utils": ("transformers.generation", ""),
    "transformers.generation_logits_process": ("transformers.generation", ""),
    "transformers.modeling_utils.Conv1D": ("transformers.pytorch_utils.Conv1D", ""),
    "transformers.modeling_utils.load_sharded_checkpoint": ("transformers.trainer_utils.load_sharded_checkpoint", ""),
    "transformers.training_args.ShardedDDPOption": ("", 'sharded_ddp is gone: fsdp="full_shard"'),
    "transformers.trainer_utils.ShardedDDPOption": ("", 'sharded_ddp is gone: fsdp="full_shard"'),
    "transformers.trainer_pt_utils.SequentialDistributedSampler": ("", "the Trainer shards evaluation itself"),
    "transformers.TRANSFORMERS_CACHE": ("huggingface_hub.constants.HF_HUB_CACHE", ""),
    "transformers.models.llama.modeling_llama.LlamaFlashAttention2": (
        "transformers.models.llama.modeling_llama.LlamaAttention", 'one class: attn_implementation= picks the kernel'),
    "transformers.models.llama.modeling_llama.LlamaSdpaAttention": (
        "transformers.models.llama.modeling_llama.LlamaAttention", 'one class: attn_implementation= picks the kernel'),
    "datasets.load.load_metric": ("evaluate.load", ""),
    "datasets.list_datasets": ("huggingface_hub.list_datasets", ""),
    "datasets.set_caching_enabled": ("datasets.disable_caching", "or enable_caching"),
    "datasets.inspect_metric": ("evaluate.inspect_evaluation_module", ""),
    "datasets.MetricInfo": ("evaluate.EvaluationModuleInfo", ""),
    "datasets.inspect_dataset": ("huggingface_hub.snapshot_download", 'repo_type="dataset"'),
    "transformers.trainer_pt_utils.DistributedTensorGatherer": ("", "the Trainer gathers evaluation outputs itself"),
    "transformers.trainer_pt_utils._get_learning_rate": ("", "the Trainer's own method: self._get_learning_rate()"),
    "transformers.modeling_utils.find_pruneable_heads_and_indices": ("", "head pruning is gone: keep a copy"),
    "transformers.modeling_utils.prune_conv1d_layer": ("", "head pruning is gone: keep a copy"),
    "transformers.modeling_utils.SequenceSummary": ("", "the 4.x summary head is gone: keep a copy"),
    "transformers.modeling_utils.prune_linear_layer": ("transformers.pytorch_utils.prune_linear_layer", ""),
    "transformers.modeling_utils.apply_chunking_to_forward": (
        "transformers.pytorch_utils.apply_chunking_to_forward", ""),
    "transformers.pytorch_utils.is_torch_greater_or_equal_than_1_10": ("", "5.x needs torch 2: True"),
    "transformers.pytorch_utils.is_torch_less_than_1_11": ("", "5.x needs torch 2: False"),
    "transformers.onnx": ("torch.onnx.export", "or optimum's exporter"),
    "transformers.convert_graph_to_onnx": ("torch.onnx.export", "or optimum's exporter"),
    "transformers.benchmark": ("torch.utils.benchmark", ""),
    "transformers.keras_callbacks": ("transformers.TrainerCallback", "TensorFlow is gone: the Trainer's callbacks"),
    "transformers.optimization_tf": ("torch.optim.AdamW", "with transformers.get_scheduler"),
    "transformers.AdamWeightDecay": ("torch.optim.AdamW", ""),
    "transformers.WarmUp": ("transformers.get_scheduler", ""),
    "transformers.utils.is_flash_attn_available": ("transformers.utils.is_flash_attn_2_available", ""),
    "transformers.utils.get_full_repo_name": ("huggingface_hub.whoami", 'f"{whoami()[\'name\']}/{name}"'),
    "transformers.utils.is_ipex_available": ("", "IPEX support is gone: drop the branch"),
    "transformers.utils.is_torch_compile_available": ("torch.compile", "5.x needs torch 2: True"),
    "transformers.utils.is_offline_mode": ("huggingface_hub.is_offline_mode", ""),
    "transformers.utils.model_parallel_utils": ("", "parallelize() is gone: from_pretrained(device_map=...)"),
    "transformers.file_utils.hf_bucket_url": ("huggingface_hub.hf_hub_url", ""),
    "transformers.trainer.is_torch_tpu_available": ("transformers.utils.is_torch_xla_available", ""),
    "transformers.integrations.is_fairscale_available": ("", 'fairscale is gone: fsdp="full_shard"'),
    "transformers.integrations.default_hp_search_backend": (
        "transformers.hyperparameter_search.default_hp_search_backend", ""),
    "transformers.integrations.is_sigopt_available": ("", "the SigOpt backend is gone: optuna, ray or wandb"),
    "transformers.integrations.run_hp_search_sigopt": ("", "the SigOpt backend is gone: optuna, ray or wandb"),
    "transformers.trainer_utils.default_hp_space": ("transformers.trainer_utils.default_hp_space_optuna", ""),
}
ATTENTION_FIX = "one attention class per model: the XAttention class; attn_implementation= picks the kernel"
# the *FlashAttention2 / *SdpaAttention classes 5.24 still has (tests/test_trap_imports.py reads every modeling
# module: these are all of them)
ATTENTION_KEPT = {"BarkSelfFlashAttention2", "FalconFlashAttention2", "GPTNeoFlashAttention2",
                  "SamVisionSdpaAttention", "SamHQVisionSdpaAttention", "DeepseekOcr2SamVisionSdpaAttention",
                  "UnlimitedOcrSamVisionSdpaAttention"}
# families that left 5.x whole, each with the fix: TensorFlow and Flax (every TF* and Flax* class of the package
# root, every modeling_tf_* / modeling_flax_* module) and the per-kernel attention classes
REMOVED_FAMILIES = [
    (re.compile(r"^transformers\.(TF|Flax)[A-Z]\w*"),
     "TensorFlow and Flax are gone in 5.x: the PyTorch class of the same name without the prefix"),
    (re.compile(r"^transformers\.(models\.\w+\.)?modeling_(tf|flax)_\w+"),
     "TensorFlow and Flax are gone in 5.x: the PyTorch modeling_ module of the same model"),
    (re.compile(r"^transformers\.models\.\w+\.modeling_\w+\.(?P<name>\w+(FlashAttention2|SdpaAttention))$"),
     ATTENTION_FIX),
]
# what a failed import raises; a handler of any of them (or of Exception) runs the fallback on 5.x
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "AttributeError", "Exception", "BaseException"}
# the versions the rule judges `if` tests on (tests/test_trap_imports.py holds them to the installed ones)
PINNED = {"transformers": "5.24.0", "datasets": "5.2.0"}
# probes true wherever the pinned versions train: torch (which the Trainer needs) and 5.x's own requirements
INSTALLED_PROBES = {"is_torch_available", "is_tokenizers_available"}  # true wherever 5.x trains (tested)


def removed(dotted: str) -> tuple[str, str, str] | None:
    """(the removed name, its replacement, how) for a dotted name under one of REMOVED_IMPORTS (or a removed
    family), else None."""
    parts = dotted.split(".")
    for end in range(2, len(parts) + 1):
        name = ".".join(parts[:end])
        if name in REMOVED_IMPORTS:
            return (name, *REMOVED_IMPORTS[name])
    for pattern, fix in REMOVED_FAMILIES:
        family = pattern.match(dotted)
        if family and (family.groupdict().get("name") or "") not in ATTENTION_KEPT:
            return family[0], "", fix
    return None


def catches_import_error(module: Module, handler: ast.ExceptHandler) -> bool:
    """Whether the handler may catch a failed import; a type held in a name it assigns (`ERRS = (ImportError, ...)`)
    is followed, and one assigned a value that cannot be read counts as catching (never a finding from it)."""
    kind = handler.type
    if isinstance(kind, ast.Name) and kind.id in module.assigned:
        kind = module.single(kind.id)
        if not isinstance(kind, (ast.Tuple, ast.Name, ast.Attribute)):
            return True
    types = kind.elts if isinstance(kind, ast.Tuple) else [kind]
    return kind is None or any(called_name(kind) in IMPORT_ERRORS for kind in types)


def package_version(module: Module, node: ast.AST) -> str | None:
    """"transformers" or "datasets" where ``node`` is that package's installed version as a string
    (`transformers.__version__`, `__version__` imported from it, importlib.metadata.version("datasets")), else None."""
    name = module.qualname(node)
    if name.endswith(".__version__") and name.split(".")[0] in PINNED:
        return name.split(".")[0]
    if isinstance(node, ast.Call) and called_name(node.func) == "version" and len(node.args) == 1 and \
            isinstance(node.args[0], ast.Constant) and node.args[0].value in PINNED:
        return node.args[0].value
    return None


def reads_version(module: Module, node: ast.AST) -> bool:
    """A test that asks what is installed: the version of transformers or datasets (or a name of its own that holds
    it: TRANSFORMERS_VERSION, a project's own function), an is_*_available() probe or hasattr(...)."""
    word = called_name(node.func if isinstance(node, ast.Call) else node).lower()
    # a project function that reads the version (`def hf_major(): return int(transformers.__version__...)`)
    callee = module.callee(node) if isinstance(node, ast.Call) else None
    return package_version(module, node) is not None or word == "hasattr" or \
        callee is not None and any(package_version(callee[0], sub) is not None for sub in ast.walk(callee[1])) or \
        bool(re.fullmatch(r"is_\w+_available", word)) or \
        ("version" in word and ("transformers" in word or "datasets" in word))


def release(text: str) -> tuple[int, ...] | None:
    numbers = re.match(r"\d+(\.\d+)*", text)
    return tuple(map(int, numbers[0].split("."))) if numbers else None


def holds_on_5x(module: Module, test: ast.AST, depth: int = 0) -> bool | None:
    """Whether an `if` test on the installed version holds on the pinned versions, where it can be read as a
    comparison with a constant (`version.parse(transformers.__version__) >= version.parse("4.0")`,
    `transformers.__version__ < "4.30"`, `not ...`, a name assigned one); None where it cannot."""
    if depth > 8:
        return None
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        held = holds_on_5x(module, test.operand, depth + 1)
        return None if held is None else not held
    if isinstance(test, ast.Name) and module.single(test.id) is not None:
        return holds_on_5x(module, module.single(test.id), depth + 1)
    if isinstance(test, ast.Call) and called_name(test.func) in INSTALLED_PROBES:
        return True
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and
            isinstance(test.ops[0], (ast.Lt, ast.LtE, ast.Gt, ast.GtE))):
        return None
    sides, parsed = [], False
    for side in (test.left, test.comparators[0]):
        if isinstance(side, ast.Call) and len(side.args) == 1 and not side.keywords and \
                package_version(module, side) is None:  # version.parse(...), Version(...)
            side, parsed = side.args[0], True
        package = package_version(module, side)
        if package:
            sides.append(PINNED[package])
        elif isinstance(side, ast.Constant) and isinstance(side.value, str):
            sides.append(side.value)
        else:
            return None
    if [package_version(module, side) is not None for side in sides].count(True) > 1:
        return None
    left, right = (release(side) for side in sides) if parsed else sides
    if left is None or right is None or sides[0] == sides[1] and not parsed:
        return None
    if parsed:  # (5, 24, 0) against (5,): pad with zeros as packaging does
        width = max(len(left), len(right))
        left, right = left + (0,) * (width - len(left)), right + (0,) * (width - len(right))
    operator = {ast.Lt: "__lt__", ast.LtE: "__le__", ast.Gt: "__gt__", ast.GtE: "__ge__"}[type(test.ops[0])]
    return getattr(left, operator)(right)


def branch_runs_on_5x(module: Module, branch: ast.AST, test: ast.AST, in_body: bool) -> bool:
    """Whether a branch of an `if` on the installed version may run on 5.x: always, unless the test reads the
    version of transformers or datasets (or probes with hasattr / is_*_available, or is TYPE_CHECKING); then the
    branch the test picks on the pinned versions runs, and where the test cannot be read, neither counts."""
    if module.qualname(test).split(".")[-1] == "TYPE_CHECKING":
        return not in_body  # never true when run
    if not module.mentions(test, lambda node: reads_version(module, node)):
        return True
    held = holds_on_5x(module, test)
    return held is not None and held == in_body


def guarded(module: Module, node: ast.AST, fails) -> bool:
    """Whether an import runs only where it works: in a try that handles ImportError (its body, or a fallback in a
    handler when nothing ``fails`` in the body: then the handler runs for what 5.x lacks only when the body is
    4.x code this rule does not know), under contextlib.suppress(ImportError), or in the branch of an if on the
    installed version that 5.x does not take."""
    while id(node) in module.parent:
        parent = module.parent[id(node)]
        if isinstance(parent, (ast.Try, getattr(ast, "TryStar", ast.Try))) and node not in parent.orelse and \
                node not in parent.finalbody and any(catches_import_error(module, handler) for handler in parent.handlers) and \
                (node in parent.body or not fails(parent.body)):
            return True
        if isinstance(parent, ast.If) and node is not parent.test and \
                not branch_runs_on_5x(module, node, parent.test, node in parent.body):
            return True
        if isinstance(parent, ast.IfExp) and node is not parent.test and \
                not branch_runs_on_5x(module, node, parent.test, node is parent.body):
            return True
        if isinstance(parent, ast.With) and any(
                isinstance(item.context_expr, ast.Call) and called_name(item.context_expr.func) == "suppress" and
                any(called_name(kind) in IMPORT_ERRORS for kind in item.context_expr.args) for item in parent.items):
            return True
        node = parent
    return False


def imported_by_call(node: ast.AST) -> str | None:
    """The module a constant `importlib.import_module("a.b")` imports, or the package `__import__("a.b")` returns
    ("a"; it imports a.b too)."""
    if not (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) and
            isinstance(node.args[0].value, str)):
        return None
    if called_name(node.func) == "import_module" and len(node.args) == 1 and not node.args[0].value.startswith("."):
        return node.args[0].value
    return node.args[0].value if called_name(node.func) == "__import__" else None


def star_modules(module: Module, own: set[int]) -> list[str] | None:
    """The modules of the module's star imports, where none is a project module of its own or removed as a whole
    (that import raises first); None otherwise."""
    stars = [node for node in module.of_types(ast.ImportFrom) if any(alias.name == "*" for alias in node.names)]
    if not all(node.lineno not in own and not removed(node.module or "") for node in stars):
        return None
    return [("." * node.level) + (node.module or "") for node in stars]


def bound_names(module: Module) -> set[str]:
    """Every name the module binds itself, anywhere: assigned, imported by name, defined, a parameter, a target."""
    return {node.id for node in module.of_types(ast.Name) if not isinstance(node.ctx, ast.Load)} | \
        {node.arg for node in module.of_types(ast.arg)} | \
        {node.name for kind in (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.ExceptHandler)
         for node in module.of_types(kind) if node.name} | \
        {(alias.asname or alias.name).split(".")[0] for kind in (ast.Import, ast.ImportFrom)
         for node in module.of_types(kind) for alias in node.names} | \
        {name for kind in (ast.Global, ast.Nonlocal) for node in module.of_types(kind) for name in node.names}


def removed_import_findings(module: Module):
    """removed-import at each import of a removed name (a statement, importlib.import_module or __import__ of a
    constant), each read of one as an attribute of an imported package (`datasets.load_metric(...)`), and the first
    use of a name a star import of transformers no longer gives; a package the project has of its own (a
    datasets/ folder next to the script) is not the library."""
    own = {line for line, _ in module.imported}
    # a read through `import transformers` (transformers.AdamW(...)); `from x import EvaluationStrategy` is named at
    # its import, which raises before any read of it
    packages = {alias.asname or alias.name.split(".")[0] for node in module.of_types(ast.Import)
                for alias in node.names}
    stored = {module.qualname(node) for node in module.of_types(ast.Attribute)
              if isinstance(node.ctx, ast.Store)}  # transformers.AdamW = ... shim
    stars = star_modules(module, own)
    unbound = set() if not stars else {node.id for node in module.of_types(ast.Name)} - bound_names(module)
    used = set()

    def removed_at(node: ast.AST) -> dict:
        names = []
        if isinstance(node, ast.Import) and node.lineno not in own:
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and node.lineno not in own:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
        elif imported_by_call(node):
            names = [imported_by_call(node)]
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and \
                not isinstance(module.parent.get(id(node)), ast.Attribute):  # the whole a.b.c, once
            root, attributes = node, []
            while isinstance(root, ast.Attribute):
                root, attributes = root.value, [root.attr, *attributes]
            if isinstance(root, ast.Name) and root.id in packages and root.id not in module.linked and \
                    root.id not in module.assigned:  # `datasets = load_dataset(...)` is no longer the package
                names = [module.qualname(node)]
            elif imported_by_call(root):  # __import__("datasets").load_metric
                names = [".".join([imported_by_call(root), *attributes])]
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load) and node.id in unbound:
            names = [f"{star}.{node.id}" for star in stars]
            # a name any star module (torch.optim's, a project's) may still give is bound
            if node.id in used or not all(map(removed, names)):
                return {}
        return {entry[0]: entry for entry in map(removed, names) if entry is not None and entry[0] not in stored}

    def fails(body: list[ast.AST]) -> bool:
        return any(removed_at(node) for statement in body for node in ast.walk(statement))

    # the only nodes removed_at names, in walk's order (a name only where a star import leaves one unbound)
    kinds = (ast.Import, ast.ImportFrom, ast.Call, ast.Attribute) + ((ast.Name,) if unbound else ())
    for node in module.of_types(*kinds):
        found = removed_at(node)
        if found and not guarded(module, node, fails):
            if isinstance(node, ast.Name):
                used.add(node.id)
            yield "removed-import", node.lineno, ", ".join(
                f"{name} (5.x: {'; '.join(filter(None, [replacement, how]))})"
                for name, replacement, how in found.values()) + (
                f" (through `from {stars[0]} import *`)" if isinstance(node, ast.Name) else "")
