"""The trap checker's recall misses found on real code (issue #25, second round): imports 5.x removed
(removed-import, TF035), and the spellings the existing rules missed (functools.partial(Trainer, tokenizer=...), an
aliased evaluate.load, predict_with_generate set on the arguments, a removed field set on parsed arguments, a mixin's
self.tokenizer, launch commands joined from f-strings), each with a look-alike that must stay clean."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from support.harness import SKILLS_DIR, import_script

HF = "transformers-training"
TC = import_script(SKILLS_DIR / HF / "scripts" / "trap_check.py")


def findings(sources: dict[str, str]) -> list:
    found, broken = TC.check_sources({name: textwrap.dedent(text) for name, text in sources.items()}, HF, "cpu")
    assert broken == [], broken
    return found


def rules(code: str) -> set[str]:
    return {finding.rule for finding in findings({"t.py": code})}


def project(tmp_path: Path, files: dict[str, str], given: list[str]) -> set:
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    found, broken = TC.check_sources({str(tmp_path / name): (tmp_path / name).read_text() for name in given}, HF,
                                     "cpu")
    assert broken == [], broken
    return {(finding.rule, Path(finding.path).name, finding.line) for finding in found}


# ---------------------------------------------------------------- removed-import (TF035)

@pytest.mark.parametrize("code, note", [
    ("import transformers.deepspeed\n", "transformers.deepspeed (5.x: transformers.integrations.deepspeed)"),
    ("from transformers.deepspeed import HfDeepSpeedConfig\n", "transformers.integrations.deepspeed"),
    ("from transformers.trainer_utils import EvaluationStrategy\n", "transformers.trainer_utils.IntervalStrategy"),
    ("from transformers import AdamW, get_linear_schedule_with_warmup\n", "transformers.AdamW (5.x: torch.optim.AdamW)"),
    ("from datasets import load_dataset, load_metric\n", "datasets.load_metric (5.x: evaluate.load)"),
    ("import datasets\nmetric = datasets.load_metric('glue', 'mrpc')\n", "datasets.load_metric"),
    ("import transformers as tf\nopt = tf.optimization.AdamW(params)\n", "transformers.optimization.AdamW"),
    ("from transformers.utils import check_min_version, send_example_telemetry\n", "drop the call"),
    ("from transformers import TFAutoModelForSequenceClassification\n", "TensorFlow and Flax are gone"),
    ("import transformers\nds = transformers.deepspeed.HfDeepSpeedConfig(cfg)\n", "transformers.deepspeed"),
])
def test_an_import_5x_removed_is_named_with_its_replacement(code, note):
    found = findings({"t.py": code})
    assert [finding.rule for finding in found] == ["removed-import"], found
    assert note in found[0].note, found[0].note


@pytest.mark.parametrize("code", [
    # the 5.x name first, the 4.x one as the fallback a 5.x run never reaches (and the other way round)
    "try:\n    from transformers.integrations.deepspeed import HfDeepSpeedConfig\nexcept ImportError:\n"
    "    from transformers.deepspeed import HfDeepSpeedConfig\n",
    "try:\n    from transformers import AdamW\nexcept (ImportError, AttributeError):\n    from torch.optim import AdamW\n",
    "try:\n    from datasets import load_metric\nexcept Exception:\n    load_metric = None\n",
    "import contextlib\nwith contextlib.suppress(ImportError):\n    from transformers import AdamW\n",
    "import transformers\nfrom packaging import version\nif version.parse(transformers.__version__) < version.parse('5'):\n"
    "    from transformers.trainer_utils import EvaluationStrategy\nelse:\n"
    "    from transformers.trainer_utils import IntervalStrategy as EvaluationStrategy\n",
    "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from transformers.deepspeed import HfDeepSpeedConfig\n",
    "import transformers\nif hasattr(transformers, 'AdamW'):\n    opt = transformers.AdamW(params)\n",
    "import transformers, torch\ntransformers.AdamW = torch.optim.AdamW\nopt = transformers.AdamW(params)\n",  # a shim
    "from datasets import load_dataset\ndatasets = load_dataset('imdb')\nprint(datasets.Metric)\n",  # a variable
    "from torch.optim import AdamW\nfrom transformers import get_scheduler, IntervalStrategy\nimport evaluate\n",
])
def test_a_guarded_import_or_a_name_5x_has_is_not_reported(code):
    assert findings({"t.py": code}) == []


def test_an_import_in_a_try_that_handles_another_error_is_reported():
    code = "try:\n    from transformers import AdamW\nexcept ValueError:\n    pass\n"
    assert rules(code) == {"removed-import"}
    code = "try:\n    import evaluate\nexcept ImportError:\n    pass\nelse:\n    from datasets import load_metric\n"
    assert rules(code) == {"removed-import"}  # try's else runs when the import worked: no guard


def test_a_package_of_the_project_s_own_is_not_the_library(tmp_path):
    """A `datasets/` folder next to the script (a project's own data package): `from datasets import load_metric`
    reads it, not Hugging Face datasets; a removed import in a helper the script imports is named at its line."""
    files = {"datasets/__init__.py": "def load_metric(name):\n    return name\n",
             "train.py": "from datasets import load_metric\nimport helpers\n",
             "helpers.py": "\nfrom transformers import AdamW\n"}
    assert project(tmp_path, files, ["train.py"]) == {("removed-import", "helpers.py", 2)}
