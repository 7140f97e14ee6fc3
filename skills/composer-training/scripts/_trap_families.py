"""The rule families: the one list of the modules that hold rules, the full rule table assembled from theirs, and
transformers_findings, which runs every Transformers family on a module. Each family module defines its rules' table
entries (code, name, severity, what, fix, section, examples) next to the code that finds them; a new family is
added to FAMILIES, and to transformers_findings (or launch_findings) where it runs. A module of trap_check.py (synced
from skill_common/ into every skill's scripts/ folder).
"""

import _trap_composer
import _trap_hf_best_model
import _trap_hf_distributed
import _trap_hf_imports
import _trap_hf_offline
import _trap_hf_removed
import _trap_hf_resume
import _trap_hf_tasks
from _trap_hf_arguments import argument_defaults, training_arguments
from _trap_hf_best_model import best_model_findings, launched_best_findings
from _trap_hf_distributed import accelerate_cpu_findings, sequence_classification_findings
from _trap_hf_imports import removed_import_findings
from _trap_hf_offline import evaluate_findings, load_dataset_findings
from _trap_hf_removed import (default_optim_findings, removed_argument_findings, removed_field_findings,
                              removed_flag_findings, trainer_tokenizer_findings)
from _trap_hf_resume import resume_findings
from _trap_hf_tasks import causal_lm_findings, seq2seq_findings, token_label_findings, trains_causal_lm
from _trap_launch import Launch
from _trap_module import Module, at

FAMILIES = (_trap_hf_removed, _trap_hf_imports, _trap_hf_distributed, _trap_hf_tasks, _trap_hf_offline,
            _trap_hf_best_model, _trap_hf_resume, _trap_composer)
RULES = sorted((rule for family in FAMILIES for rule in family.RULES), key=lambda rule: rule.code)
RULE_IDS = {rule.id for rule in RULES}


def argument_findings(module: Module, training: list):
    """The rules on each set of training arguments built: what 5.x removed, then the best-model settings."""
    for call, kw, complete in training:
        yield from removed_argument_findings(module, call, kw)
        yield from best_model_findings(module, call, kw, complete)


def imported_findings(module: Module):
    """The rules that need nothing but the file, run on each project module ``module`` imports that was not given
    (metrics.py's evaluate.load("accuracy"), helpers.py's TrainingArguments(evaluation_strategy=...)): named at
    their own file and line. A given module is checked on its own."""
    for part in module.project[1:]:
        if part.found_nearby:
            for rule, line, note in [*argument_findings(part, training_arguments(part)), *evaluate_findings(part),
                                     *removed_import_findings(part)]:
                yield rule, at(module, part, line), note


def launch_findings(launch: Launch):
    """The Transformers rules on a launch command alone, whatever it runs."""
    yield from accelerate_cpu_findings(launch)


def transformers_findings(module: Module, launches: list[Launch]):
    """Every Transformers rule on a module and the launches that run it, family by family in a fixed order."""
    training = training_arguments(module)
    yield from argument_findings(module, training)
    defaults = argument_defaults(module)
    yield from default_optim_findings(module, defaults)
    yield from imported_findings(module)
    yield from removed_import_findings(module)
    for launch in launches:
        yield from removed_flag_findings(launch)
        yield from launched_best_findings(module, launch)
    yield from trainer_tokenizer_findings(module)
    yield from removed_field_findings(module)
    yield from sequence_classification_findings(module, training + defaults, launches)
    if trains_causal_lm(module):
        yield from causal_lm_findings(module)
    yield from evaluate_findings(module)
    yield from token_label_findings(module)
    yield from resume_findings(module, training, launches)
    yield from load_dataset_findings(module, launches)
    yield from seq2seq_findings(module, training, launches)
