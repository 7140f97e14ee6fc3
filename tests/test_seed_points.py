"""Points the design documents (../shared/seeds) asked for that the skills now state: the same-shape fine-tune of
composer-training SKILL.md, and the launcher flags its distributed reference shows for several machines."""

from __future__ import annotations

import re

import pytest
from support.composer_kit import classifier, trainer

from support.harness import SKILLS_DIR
from support.tensors import differing

pytestmark = pytest.mark.composer


def _saved_checkpoint(tmp_path):
    first = trainer(max_duration="2ba", save_folder=str(tmp_path / "run"), save_interval="2ba")
    first.fit()
    first.close()
    return str(tmp_path / "run" / "latest-rank0.pt"), {k: v.clone() for k, v in first.state.model.state_dict().items()}


def _renamed_classifier():
    """The same shapes under other parameter names (one more level of nesting), as a refactored model has."""
    import torch
    from composer.models import ComposerClassifier

    base = classifier()
    return ComposerClassifier(module=torch.nn.Sequential(base.module), num_classes=3)


def test_same_shape_fine_tune_needs_load_weights_only_alone(tmp_path):
    checkpoint, saved = _saved_checkpoint(tmp_path)
    fine_tune = trainer(max_duration="1ba", load_path=checkpoint, load_weights_only=True)
    assert int(fine_tune.state.timestamp.batch) == 0  # the timestamp starts fresh
    loaded = fine_tune.state.model.state_dict()
    assert not differing(saved, loaded)
    fine_tune.close()


def test_non_strict_loading_hides_weights_that_did_not_load(tmp_path):
    import torch

    checkpoint, saved = _saved_checkpoint(tmp_path)
    with pytest.raises(RuntimeError, match="Missing key"):  # strict (the default): the renamed keys are named
        trainer(model=_renamed_classifier(), max_duration="1ba", load_path=checkpoint, load_weights_only=True)
    model = _renamed_classifier()
    initial = {name: tensor.clone() for name, tensor in model.state_dict().items()}
    quiet = trainer(model=model, max_duration="1ba", load_path=checkpoint, load_weights_only=True,
                    load_strict_model_weights=False, load_ignore_keys=["state/model/module.2*"])
    # No error, and not one saved weight arrived: every tensor is still the fresh model's
    assert not differing(initial, quiet.state.model.state_dict())
    assert not any(torch.equal(fresh, trained) for fresh, trained in zip(initial.values(), saved.values(), strict=True))
    quiet.close()


def test_the_several_machines_commands_use_the_launchers_own_flags():
    from composer.cli.launcher import _get_parser
    from torch.distributed.run import get_args_parser

    text = (SKILLS_DIR / "composer-training" / "references" / "distributed.md").read_text()
    section = text.split("## Several machines", 1)[1]
    blocks = re.findall(r"```bash\n(.*?)```", section, flags=re.S)
    assert blocks
    known = {"composer": {flag for action in _get_parser()._actions for flag in action.option_strings},
             "torchrun": {flag for action in get_args_parser()._actions for flag in action.option_strings}}
    for line in blocks[0].replace("\\\n", " ").splitlines():
        launcher, *words = line.split()
        flags = {word for word in words if word.startswith("--")}
        assert flags and flags <= known[launcher], (launcher, flags - known[launcher])
