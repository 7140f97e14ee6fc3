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
}
# TensorFlow and Flax left 5.x whole: every TF* and Flax* class of the package root (TFAutoModel..., TFTrainer)
REMOVED_FAMILY = re.compile(r"^transformers\.(TF|Flax)[A-Z]\w*")
FAMILY_FIX = "TensorFlow and Flax are gone in 5.x: the PyTorch class of the same name without the prefix"
# what a failed import raises; a handler of any of them (or of Exception) runs the fallback on 5.x
IMPORT_ERRORS = {"ImportError", "ModuleNotFoundError", "AttributeError", "Exception", "BaseException"}


def removed(dotted: str) -> tuple[str, str, str] | None:
    """(the removed name, its replacement, how) for a dotted name under one of REMOVED_IMPORTS (or the TF/Flax
    family), else None."""
    parts = dotted.split(".")
    for end in range(2, len(parts) + 1):
        name = ".".join(parts[:end])
        if name in REMOVED_IMPORTS:
            return (name, *REMOVED_IMPORTS[name])
    family = REMOVED_FAMILY.match(dotted)
    return (family[0], "", FAMILY_FIX) if family else None


def catches_import_error(handler: ast.ExceptHandler) -> bool:
    types = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return handler.type is None or any(called_name(kind) in IMPORT_ERRORS for kind in types)


def version_test(test: ast.AST) -> bool:
    """A condition that picks code by what is installed: a version (`transformers.__version__`, version.parse,
    is_transformers_version(...)), hasattr(...) or TYPE_CHECKING (never true when run)."""
    return any((isinstance(node, ast.Name) and ("version" in node.id.lower() or node.id in ("TYPE_CHECKING",
                                                                                         "hasattr"))) or
               (isinstance(node, ast.Attribute) and "version" in node.attr.lower())
               for node in ast.walk(test))


def guarded(module: Module, node: ast.AST) -> bool:
    """Whether an import runs only where it works: in a try (its body, or a fallback in its handler) that handles
    ImportError, under contextlib.suppress(ImportError), or in a branch of an if on the installed version."""
    while id(node) in module.parent:
        parent = module.parent[id(node)]
        if isinstance(parent, (ast.Try, getattr(ast, "TryStar", ast.Try))) and node not in parent.orelse and \
                node not in parent.finalbody and any(map(catches_import_error, parent.handlers)):
            return True
        if isinstance(parent, (ast.If, ast.IfExp)) and node is not parent.test and version_test(parent.test):
            return True
        if isinstance(parent, ast.With) and any(
                isinstance(item.context_expr, ast.Call) and called_name(item.context_expr.func) == "suppress" and
                any(called_name(kind) in IMPORT_ERRORS for kind in item.context_expr.args) for item in parent.items):
            return True
        node = parent
    return False


def removed_import_findings(module: Module):
    """removed-import at each import of a removed name, and each read of one as an attribute of an imported package
    (`datasets.load_metric(...)`); a package the project has of its own (a datasets/ folder next to the script) is
    not the library."""
    own = {line for line, _ in module.imported}
    # a read through `import transformers` (transformers.AdamW(...)); `from x import EvaluationStrategy` is named at
    # its import, which raises before any read of it
    packages = {alias.asname or alias.name.split(".")[0] for node in module.nodes if isinstance(node, ast.Import)
                for alias in node.names}
    stored = {module.qualname(node) for node in module.nodes
              if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store)}  # transformers.AdamW = ... shim
    for node in module.nodes:
        names = []
        if isinstance(node, ast.Import) and node.lineno not in own:
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level and node.lineno not in own:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names if alias.name != "*"]
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load) and \
                not isinstance(module.parent.get(id(node)), ast.Attribute):  # the whole a.b.c, once
            root = node
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in packages and root.id not in module.linked and \
                    root.id not in module.assigned:  # `datasets = load_dataset(...)` is no longer the package
                names = [module.qualname(node)]
        found = {entry[0]: entry for entry in map(removed, names) if entry is not None and entry[0] not in stored}
        if found and not guarded(module, node):
            yield "removed-import", node.lineno, ", ".join(
                f"{name} (5.x: {'; '.join(filter(None, [replacement, how]))})"
                for name, replacement, how in found.values())
