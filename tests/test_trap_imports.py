"""removed-import (TF035) on the installed packages and on look-alikes: every listed name and family fails and every
replacement imports (a subprocess probe on each venv); an `if` guards an import only when it reads the installed
version of transformers or datasets, and then only the branch 5.x does not take; a fallback that is itself removed
raises; importlib.import_module / __import__ of a constant and a star import's removed names are read; each with a
look-alike that must stay clean. The first TF035 tests are tests/test_trap_recall_25.py's."""

from __future__ import annotations

import json
import re
import sys
import textwrap

import pytest

from support.harness import SKILLS_DIR, import_script, run_python
from support.manifest import SKILLS

HF = "transformers-training"
COPIES = {skill: import_script(SKILLS_DIR / skill / "scripts" / "trap_check.py") for skill in SKILLS}
TC = COPIES[HF]
IMPORTS = sys.modules["transformers_training__trap_hf_imports"]


@pytest.fixture(params=sorted(COPIES))
def copy(request, monkeypatch):
    """A look-alike test runs on each skill's copy of the checker (the mutation drill breaks one copy at a time)."""
    monkeypatch.setitem(globals(), "TC", COPIES[request.param])
    return request.param


def findings(code: str) -> list:
    found, broken = TC.check_sources({"t.py": textwrap.dedent(code)}, HF, "cpu")
    assert broken == [], broken
    return found


def lines(code: str) -> list[int]:
    return [finding.line for finding in findings(code) if finding.rule == "removed-import"]


# ---------------------------------------------------------------- the list, probed on the installed packages

IMPORT_PROBE = """
import importlib, json, pathlib, re, sys

def attempt(dotted):
    \"\"\"How ``a.b.C`` fails as code meets it (import a.b.C, or from a.b import C): the exception's type name, or
    None when it imports.\"\"\"
    try:
        importlib.import_module(dotted)
        return None
    except ModuleNotFoundError as exc:
        if exc.name != dotted:
            return "ModuleNotFoundError"
    except ImportError:
        return "ImportError"
    parent, _, name = dotted.rpartition(".")
    error = attempt(parent) if parent else "ModuleNotFoundError"
    return error or (None if hasattr(importlib.import_module(parent), name) else "AttributeError")

removed, replacements, families, attention = json.loads(sys.argv[1])
import datasets, transformers
root = pathlib.Path(transformers.__file__).parent
modules = ["transformers." + ".".join(path.relative_to(root).with_suffix("").parts)
           for path in sorted(root.glob("models/*/modeling_*.py"))]
# every *FlashAttention2 / *SdpaAttention name a modeling module's source writes, then in dir() of each such module
written = {name: [module for module, path in zip(modules, sorted(root.glob("models/*/modeling_*.py")))
                  if re.search(r"\\b" + name + r"\\b", path.read_text(encoding="utf-8"))]
           for name in set(re.findall(attention, "\\n".join(
               path.read_text(encoding="utf-8") for path in root.glob("models/*/modeling_*.py"))))}
in_dir = sorted({name for name, owners in written.items() for module in owners
                 if name in dir(importlib.import_module(module))})
public = [name for name in dir(transformers)
          if any(re.match(family, "transformers." + name) for family in families)]
print(json.dumps({"removed": {name: attempt(name) for name in removed},
                  "replacements": {name: attempt(name) for name in replacements},
                  "family": public, "names": len(dir(transformers)), "modules": len(modules),
                  "module_family": [name for name in modules if any(re.match(family, name) for family in families)],
                  "attention": sorted(written), "attention_in_dir": in_dir,
                  "versions": {"transformers": transformers.__version__, "datasets": datasets.__version__}}))
"""
FAMILY_SAMPLES = [
    "transformers.TFAutoModelForSequenceClassification", "transformers.TFTrainer", "transformers.TFTrainingArguments",
    "transformers.FlaxAutoModelForCausalLM", "transformers.modeling_tf_utils", "transformers.modeling_flax_utils",
    "transformers.models.bert.modeling_tf_bert", "transformers.models.gpt2.modeling_flax_gpt2",
    "transformers.models.mistral.modeling_mistral.MistralFlashAttention2",
    "transformers.models.gpt2.modeling_gpt2.GPT2FlashAttention2",
    "transformers.models.qwen2.modeling_qwen2.Qwen2SdpaAttention",
    "transformers.models.mistral.modeling_mistral.MistralSdpaAttention",
]


def test_every_removed_import_fails_and_every_replacement_imports(tmp_path):
    """Each listed old name and each family sample fails on the installed packages as code meets it
    (ModuleNotFoundError, ImportError or AttributeError) and each replacement imports; no name of the transformers
    root and no modeling module falls in a family, and the *FlashAttention2 / *SdpaAttention names 5.x still has
    (read in every modeling module's source, then found in its dir()) are exactly the ones the pattern leaves out.
    The versions `if` tests are judged on are the installed ones. A subprocess: transformers is not imported here."""
    removed = sorted(IMPORTS.REMOVED_IMPORTS)
    replacements = sorted({new for new, _ in IMPORTS.REMOVED_IMPORTS.values() if new})
    assert all(IMPORTS.removed(name) for name in FAMILY_SAMPLES)
    families = [pattern.pattern for pattern, _ in IMPORTS.REMOVED_FAMILIES]
    attention = r"\b\w+(?:FlashAttention2|SdpaAttention)\b"
    given = json.dumps([removed + FAMILY_SAMPLES, replacements, families, attention])
    result = run_python(["-c", IMPORT_PROBE, given], tmp_path, timeout=600)
    assert result.returncode == 0, result.stderr[-2000:]
    probed = json.loads(result.stdout.strip().splitlines()[-1])
    assert {name: error for name, error in probed["removed"].items() if error not in (
        "ModuleNotFoundError", "ImportError", "AttributeError")} == {}, "listed as removed, yet it imports"
    assert {name: error for name, error in probed["replacements"].items() if error} == {}, "a replacement fails"
    assert probed["family"] == [] and probed["names"] > 1000, probed["family"]
    assert probed["module_family"] == [] and probed["modules"] > 300, probed["module_family"]
    # a name written only in a comment (GemmaFlashAttention2 in "NO LONGER EXIST Copied from ...") is in no dir()
    assert set(probed["attention_in_dir"]) == IMPORTS.ATTENTION_KEPT <= set(probed["attention"]), probed["attention"]
    assert probed["versions"] == IMPORTS.PINNED


def test_the_removed_import_section_lists_every_entry_and_its_replacement():
    """The section removed-import links to names each removed name and each replacement, as the checker's notes do."""
    text = (SKILLS_DIR / HF / "references" / "trap-check.md").read_text()
    section = text.split("## Imports 5.x removed", 1)[1].split("\n## ", 1)[0]
    cells = set(re.findall(r"`([^`]+)`", section))
    missing = [name for name in IMPORTS.REMOVED_IMPORTS if name not in cells]
    assert missing == [], missing
    for old, (new, _how) in IMPORTS.REMOVED_IMPORTS.items():
        row = next(line for line in section.splitlines() if f"`{old}`" in line)
        assert not new or new.rsplit(".", 1)[-1] in row, (old, new)
    assert all(name in section for name in ("modeling_tf_*", "FlashAttention2", "SdpaAttention", *sorted(
        IMPORTS.ATTENTION_KEPT)))


# ---------------------------------------------------------------- the entries and families added after tc5 (D5)

ADDED = {  # an import that raises on 5.x -> the import of its replacement, which works
    "from datasets.load import load_dataset, load_metric": "from evaluate import load",
    "from datasets import list_datasets": "from huggingface_hub import list_datasets",
    "from datasets import set_caching_enabled": "from datasets import disable_caching",
    "from datasets import inspect_metric, MetricInfo": "from evaluate import EvaluationModuleInfo",
    "from datasets import inspect_dataset": "from huggingface_hub import snapshot_download",
    "from transformers.trainer_pt_utils import DistributedTensorGatherer": "from transformers.trainer_pt_utils import "
                                                                            "nested_concat",
    "from transformers.modeling_utils import prune_linear_layer": "from transformers.pytorch_utils import "
                                                                  "prune_linear_layer",
    "from transformers.modeling_utils import apply_chunking_to_forward, find_pruneable_heads_and_indices":
        "from transformers.pytorch_utils import apply_chunking_to_forward",
    "from transformers.modeling_utils import SequenceSummary, prune_conv1d_layer": "from transformers.modeling_utils "
                                                                                   "import PreTrainedModel",
    "import transformers.onnx": "import torch.onnx",
    "from transformers.benchmark import PyTorchBenchmark": "import torch.utils.benchmark",
    "from transformers.convert_graph_to_onnx import convert": "from torch.onnx import export",
    "from transformers.keras_callbacks import PushToHubCallback": "from transformers import TrainerCallback",
    "from transformers.optimization_tf import create_optimizer": "from transformers import get_scheduler",
    "from transformers import AdamWeightDecay, WarmUp": "from transformers import get_scheduler",
    "from transformers.modeling_tf_utils import TFPreTrainedModel": "from transformers import PreTrainedModel",
    "from transformers.models.bert.modeling_tf_bert import TFBertModel": "from transformers.models.bert.modeling_bert "
                                                                         "import BertModel",
    "from transformers.models.t5.modeling_flax_t5 import FlaxT5Model": "from transformers import T5Model",
    "from transformers.models.mistral.modeling_mistral import MistralFlashAttention2":
        "from transformers.models.mistral.modeling_mistral import MistralAttention",
    "from transformers.models.gpt2.modeling_gpt2 import GPT2FlashAttention2":
        "from transformers.models.falcon.modeling_falcon import FalconFlashAttention2",  # one 5.x still has
    "from transformers.utils import is_flash_attn_available": "from transformers.utils import is_flash_attn_2_available",
    "from transformers.file_utils import hf_bucket_url": "from huggingface_hub import hf_hub_url",
    "from transformers.trainer import is_torch_tpu_available": "from transformers.utils import is_torch_tpu_available",
    "from transformers.integrations import default_hp_search_backend, hp_params": "from transformers.integrations "
                                                                                 "import hp_params",
    "from transformers.integrations import is_fairscale_available": "from transformers.integrations import "
                                                                    "is_optuna_available",
    "from transformers.pytorch_utils import ALL_LAYERNORM_LAYERS, is_torch_less_than_1_11":
        "from transformers.pytorch_utils import ALL_LAYERNORM_LAYERS, is_torch_greater_or_equal_than_2_0",
    "from transformers.utils import get_full_repo_name, is_ipex_available": "from huggingface_hub import whoami",
    "from transformers.utils import is_torch_compile_available, is_offline_mode": "from huggingface_hub import "
                                                                                  "is_offline_mode",
    "from transformers.trainer_pt_utils import _get_learning_rate": "from transformers.trainer_pt_utils import "
                                                                    "get_parameter_names",
    "from transformers.utils.model_parallel_utils import get_device_map": "from transformers.utils import logging",
    "from transformers.trainer_utils import default_hp_space": "from transformers.trainer_utils import "
                                                               "default_hp_space_optuna",
}


@pytest.mark.parametrize("old", sorted(ADDED))
def test_an_entry_added_after_tc5_is_reported_and_its_replacement_is_not(old, copy):
    assert lines(old + "\n") == [1]
    assert lines(ADDED[old] + "\n") == []


def test_every_removed_name_of_one_import_is_named(copy):
    """One finding per line, naming each removed name of it (the ImportError names only the first one it meets)."""
    code = ("from transformers.trainer_pt_utils import (\n    DistributedTensorGatherer,\n    LabelSmoother,\n"
            "    SequentialDistributedSampler,\n)\n")
    found = findings(code)
    assert [finding.line for finding in found] == [1]
    assert "DistributedTensorGatherer (5.x:" in found[0].note and "SequentialDistributedSampler (5.x:" in found[0].note
    assert "LabelSmoother" not in found[0].note


# ---------------------------------------------------------------- an if on the installed version (D2)

VERSION = "import sys, transformers\nfrom packaging import version\n"


@pytest.mark.parametrize("code, reported", [
    # the branch 5.x takes runs its import
    ("if version.parse(transformers.__version__) >= version.parse('4.0.0'):\n    from transformers import AdamW\n",
     [4]),
    ("if transformers.__version__ >= '4.30':\n    from transformers.deepspeed import HfDeepSpeedConfig\n", [4]),
    ("if version.parse(transformers.__version__) < version.parse('4.30'):\n    pass\nelse:\n"
     "    from transformers import AdamW\n", [6]),
    ("x = transformers.AdamW if version.parse('5') <= version.parse(transformers.__version__) else None\n", [3]),
    ("NEW = version.parse(transformers.__version__) >= version.parse('5.0')\nif NEW:\n"
     "    from transformers import AdamW\n", [5]),
    ("if not transformers.__version__ < '5':\n    from transformers import AdamW\n", [4]),
    ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\nelse:\n    from transformers import AdamW\n", [7]),
    # a test that is not on the version of transformers or datasets guards nothing
    ("if sys.version_info >= (3, 8):\n    from transformers import AdamW\n", [4]),
    ("use_version2 = False\nif use_version2 or True:\n    from transformers import AdamW\n", [5]),
    ("if version.parse(torch_version) < version.parse('2'):\n    from transformers import AdamW\n", [4]),
    # the branch 5.x does not take, and tests the checker cannot read: silent
    ("if version.parse(transformers.__version__) < version.parse('4.30'):\n    from transformers import AdamW\n", []),
    ("if transformers.__version__ < '5':\n    from transformers import AdamW\nelse:\n    from torch.optim import AdamW\n",
     []),
    ("x = transformers.AdamW if transformers.__version__ < '5' else None\n", []),
    ("OLD = version.parse(transformers.__version__) < version.parse('5.0')\nif OLD:\n"
     "    from transformers import AdamW\n", []),
    ("if version.parse(transformers.__version__) >= MINIMUM:\n    from transformers import AdamW\n", []),
    ("from transformers.utils import is_transformers_version\nif is_transformers_version('<', '4.40'):\n"
     "    from transformers import AdamW\n", []),
    ("from transformers.utils import is_apex_available\nif is_apex_available():\n    from transformers import AdamW\n",
     []),
    ("import datasets\nif datasets.__version__ < '3':\n    from datasets import load_metric\n", []),
    # tc6 N4: a probe true wherever 5.x trains guards the other branch only
    ("from transformers.utils import is_torch_available\nif is_torch_available():\n    from transformers import AdamW\n",
     [5]),
    ("from transformers.utils import is_torch_available\nif not is_torch_available():\n"
     "    from transformers import AdamW\n", []),
    # tc6 N1: a project function that reads the version is a test the checker cannot read: both branches guarded
    ("def hf_major():\n    return int(transformers.__version__.split('.')[0])\nif hf_major() < 5:\n"
     "    from transformers import AdamW\nelse:\n    from torch.optim import AdamW\n", []),
    ("def hf_major():\n    return int(sys.version.split('.')[0])\nif hf_major() < 5:\n"
     "    from transformers import AdamW\n", [6]),
])
def test_an_if_guards_only_on_the_installed_version_and_only_the_branch_5x_skips(code, reported, copy):
    assert lines(VERSION + code) == reported


# ---------------------------------------------------------------- a fallback that is removed too (D3)

def test_a_removed_fallback_in_the_handler_is_reported(copy):
    """The try's import fails on 5.x, so the handler runs: a removed fallback raises there (its line reported; the
    try's import is guarded by the handler)."""
    code = ("try:\n    from transformers import AdamW\nexcept ImportError:\n"
            "    from transformers.optimization import AdamW\n")
    assert lines(code) == [4]
    # a working fallback, a handler for a failure this rule does not know of, a removed name 5.x never reaches
    assert lines(code.replace("transformers.optimization", "torch.optim")) == []
    assert lines("try:\n    import deepspeed\nexcept ImportError:\n    from transformers.deepspeed import X\n") == []
    assert lines("try:\n    from transformers.integrations.deepspeed import X\nexcept ImportError:\n"
                 "    from transformers.deepspeed import X\n") == []
    nested = ("try:\n    from transformers import AdamW\nexcept ImportError:\n    try:\n"
              "        from transformers.optimization import AdamW\n    except ImportError:\n"
              "        from torch.optim import AdamW\n")
    assert lines(nested) == []


def test_a_handler_type_held_in_a_name_is_followed(copy):
    """tc6 N2: `except ERRS:` with ERRS a tuple that holds ImportError runs the working fallback on 5.x; a name
    holding only other errors guards nothing, and one whose value cannot be read is never a finding."""
    code = "ERRS = {}\ntry:\n    from transformers import AdamW\nexcept ERRS:\n    from torch.optim import AdamW\n"
    assert lines(code.format("(ImportError, AttributeError)")) == []
    assert lines(code.format("(KeyError, ValueError)")) == [3]
    assert lines(code.format("errors_of(config)")) == []


# ---------------------------------------------------------------- imports as calls, star imports (D6, M6)

@pytest.mark.parametrize("code, reported", [
    ("import importlib\nds = importlib.import_module('transformers.deepspeed')\n", [2]),
    ("from importlib import import_module\ntrainer = import_module('transformers.trainer')\n"
     "ok = trainer.is_torch_tpu_available\n", []),  # a module's attribute read later is not followed
    ("ds = __import__('transformers.deepspeed')\n", [1]),
    ("metric = __import__('datasets').load_metric('f1')\n", [1]),
    ("opt = importlib.import_module('transformers').AdamW\n", [1]),
    ("import importlib\nds = importlib.import_module('transformers.integrations.deepspeed')\n", []),
    ("import importlib\nds = importlib.import_module(name)\n", []),
    ("data = __import__('datasets').load_dataset('imdb')\n", []),
    ("import importlib\nds = importlib.import_module('.deepspeed', 'transformers')\n", []),
])
def test_an_import_made_by_a_call_on_a_constant(code, reported, copy):
    assert lines(code) == reported


@pytest.mark.parametrize("code, reported", [
    # Tk-Instruct src/ni_trainer.py: a NameError at the first call (named once, at its first use)
    ("from transformers.trainer import *\nif is_torch_tpu_available():\n    pass\nx = is_torch_tpu_available()\n",
     [2]),
    ("from transformers import *\nopt = AdamW([], lr=1e-3)\n", [2]),
    ("from transformers import *\nfrom transformers.optimization import *\nopt = AdamW([], lr=1e-3)\n", [3]),
    # bound otherwise, given by one of the star imports, or a star import of another module that may bind it
    ("from transformers.trainer import *\ndef is_torch_tpu_available():\n    return False\n"
     "x = is_torch_tpu_available()\n", []),
    ("from transformers import *\nfrom torch.optim import *\nopt = AdamW([], lr=1e-3)\n", []),
    ("from transformers import *\nfrom transformers.trainer import *\ntrainer = Trainer(model)\n", []),
    ("from transformers.trainer import *\nfor AdamW in options:\n    pass\n", []),
    ("from transformers.deepspeed import *\nx = is_deepspeed_zero3_enabled()\n", [1]),  # the import raises first
])
def test_a_removed_name_used_through_a_star_import(code, reported, copy):
    assert lines(code) == reported


def test_the_probes_read_as_true_exist_and_are_true_on_the_installed_version():
    """removed-import checks the body of `if is_torch_available():` (and the others of INSTALLED_PROBES) because the
    probe is true wherever 5.x trains: each must exist in transformers.utils and answer True here (on 5.24
    is_safetensors_available no longer exists)."""
    import transformers.utils

    assert IMPORTS.INSTALLED_PROBES and all(getattr(transformers.utils, name, lambda: False)() is True
                                            for name in IMPORTS.INSTALLED_PROBES), IMPORTS.INSTALLED_PROBES
