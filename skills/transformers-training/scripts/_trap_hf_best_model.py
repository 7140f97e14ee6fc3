"""The Transformers rules on the best-model settings (load_best_model_at_end, metric_for_best_model, the eval and save
strategies and steps, save_total_limit), in the code or as HfArgumentParser flags on a launch. A module of trap_check.py
(synced from skill_common/ into every skill's scripts/ folder).
"""

import ast

from _trap_hf_arguments import HF_PARSERS
from _trap_launch import UNKNOWN, Launch, count
from _trap_module import Module, is_true
from _trap_rules import ARGS, ERROR, PREFLIGHT, TABLE, TF, WARNING, Rule


RULES = [
    Rule("TF016", "best-strategy-mismatch", TF, ERROR,
         "load_best_model_at_end needs the same eval and save strategy: TrainingArguments "
         "raises.", 'set save_strategy equal to eval_strategy (or save_strategy="best")', PREFLIGHT,
         why='raises',
         trips={"t.py": ARGS.format(
        'eval_strategy="epoch", save_strategy="steps", load_best_model_at_end=True, metric_for_best_model="f1"')},
         clean={"t.py": ARGS.format('eval_strategy="epoch", save_strategy="epoch", load_best_model_at_end=True, '
                             'metric_for_best_model="f1"')}),
    Rule("TF017", "best-save-not-multiple", TF, ERROR,
         "load_best_model_at_end with save_steps not a round multiple of eval_steps: "
         "TrainingArguments raises.", "save_steps = eval_steps", PREFLIGHT,
         why='raises',
         trips={"t.py": ARGS.format(
        'eval_strategy="steps", eval_steps=3, save_steps=5, load_best_model_at_end=True, metric_for_best_model="f1"')},
         clean={"t.py": ARGS.format('eval_strategy="steps", eval_steps=5, save_steps=5, load_best_model_at_end=True, '
                             'metric_for_best_model="f1"')}),
    Rule("TF018", "best-unsaved-eval", TF, ERROR,
         "save_steps is a multiple of eval_steps but not equal: a best evaluation on a step "
         "that is not saved is never loaded, with no warning.", 'save_steps = eval_steps, or save_strategy="best"',
         "references/troubleshooting.md#the-best-evaluation-falls-on-a-step-that-is-not-saved",
         why='silently loads a model that is not the best',
         trips={"t.py": ARGS.format(
        'eval_strategy="steps", eval_steps=2, save_steps=4, load_best_model_at_end=True, metric_for_best_model="f1"')},
         clean={"t.py": ARGS.format('eval_strategy="steps", eval_steps=2, save_strategy="best", '
                             'load_best_model_at_end=True, metric_for_best_model="f1"')}),
    Rule("TF019", "best-default-metric", TF, WARNING,
         "load_best_model_at_end without metric_for_best_model quietly picks the lowest "
         "eval_loss, whatever compute_metrics returns.",
         'metric_for_best_model="<a key compute_metrics returns>" (and greater_is_better), or "eval_loss" said '
         "out loud", PREFLIGHT,
         why='eval_loss is often what was meant: a choice to say out loud, not a failure',
         trips={"t.py": ARGS.format('eval_strategy="steps", eval_steps=2, save_steps=2, '
                                                     'load_best_model_at_end=True') + "\nTrainer(compute_metrics=f)"},
         clean={"t.py": ARGS.format('eval_strategy="steps", eval_steps=2, save_steps=2, '
                                                 'load_best_model_at_end=True, metric_for_best_model="eval_loss"')}),
    Rule("TF020", "best-save-no-metric", TF, ERROR,
         'save_strategy="best" without metric_for_best_model: TrainingArguments accepts '
         "it, Trainer(...) raises.", 'metric_for_best_model="<a key compute_metrics returns>"', PREFLIGHT,
         why='raises',
         trips={"t.py": ARGS.format('eval_strategy="steps", save_strategy="best"')},
         clean={"t.py": ARGS.format('eval_strategy="steps", save_strategy="best", '
                                                 'metric_for_best_model="f1"')}),
    Rule("TF021", "best-save-total-limit-1", TF, ERROR,
         "save_total_limit=1 with load_best_model_at_end: only the best checkpoint "
         "survives the run; the last one, to resume from, is deleted.", "save_total_limit=2 or more", TABLE,
         why='loses work: the checkpoint to resume from is deleted',
         trips={"t.py": ARGS.format(
        'eval_strategy="epoch", save_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="f1", '
        'save_total_limit=1')},
         clean={"t.py": ARGS.format(
            'eval_strategy="epoch", save_strategy="epoch", load_best_model_at_end=True, metric_for_best_model="f1", '
            'save_total_limit=2')}),
]


def best_model_findings(module: Module, call: ast.Call, kw: dict, complete: bool):
    # an absent keyword has its default only when every `**` was read: `**extra` from a JSON file may set it
    value = lambda name, default=None: module.const(kw[name][0]) if name in kw else \
        default if complete else UNKNOWN  # noqa: E731
    save = value("save_strategy", "steps")
    if save == "best" and complete and "metric_for_best_model" not in kw:
        yield "best-save-no-metric", kw["save_strategy"][1], ""
    if not is_true(value("load_best_model_at_end", False)):
        return
    line = kw["load_best_model_at_end"][1]
    evaluation = value("eval_strategy", value("evaluation_strategy", "no"))
    if complete and "metric_for_best_model" not in kw and save != "best" and \
            "compute_metrics" in module.project_names:  # without compute_metrics eval_loss is the only metric
        yield "best-default-metric", line, ""
    if value("save_total_limit") == 1:
        yield "best-save-total-limit-1", kw["save_total_limit"][1], ""
    if UNKNOWN in (save, evaluation) or save == "best":
        return
    if save != evaluation:
        yield "best-strategy-mismatch", line, f"eval_strategy={evaluation!r}, save_strategy={save!r}"
    elif save == "steps":
        save_steps = value("save_steps", 500)
        eval_steps = value("eval_steps", None) or value("logging_steps", 500)
        numbers = all(isinstance(steps, (int, float)) and not isinstance(steps, bool) and steps > 0
                      for steps in (save_steps, eval_steps))
        # TrainingArguments' own test: steps below 1 are ratios of the run, both must be, and are compared scaled
        ratios = numbers and save_steps < 1 and eval_steps < 1
        if numbers and save_steps % eval_steps and (not ratios or (save_steps * 1_000_000) % (eval_steps * 1_000_000)):
            yield "best-save-not-multiple", line, f"save_steps={save_steps}, eval_steps={eval_steps}"
        elif numbers and save_steps != eval_steps and "log_history" not in module.project_names:  # not picking the best itself
            yield "best-unsaved-eval", line, f"save_steps={save_steps}, eval_steps={eval_steps}"


BEST_FLAGS = ("eval_strategy", "save_strategy", "load_best_model_at_end", "eval_steps", "save_steps", "logging_steps",
              "metric_for_best_model", "save_total_limit")


def launched_best_settings(launch: Launch) -> tuple[dict, bool]:
    """The best-model settings a launch gives an HfArgumentParser script as flags (`--eval_strategy epoch
    --save_strategy steps --load_best_model_at_end True`), read as HfArgumentParser reads them; none where the
    script is not read here, parses its flags another way, or sets one of them in its code. Only the flags given
    are known (complete is False): a default the script's own dataclass changes is not guessed."""
    runs = launch.runs if isinstance(launch.runs, Module) else None
    if runs is None or not HF_PARSERS & runs.project_names or any(
            isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and node.attr in BEST_FLAGS
            for part in runs.project for node in part.nodes):
        return {}, False
    kw = {}
    for name in BEST_FLAGS:
        given = launch.flag(name)
        if given is None or "$" in given:
            continue
        value = {"true": True, "false": False}.get(given.lower(), count(given) if count(given) is not None else given)
        kw[name] = (ast.Constant(value), launch)
    return kw, False


def launched_best_findings(module: Module, launch: Launch):
    """The best-model rules on the settings a launch gives as flags, named at the launch."""
    for rule, _where, note in best_model_findings(module, None, *launched_best_settings(launch)):
        yield rule, launch, f"{note}{'; ' if note else ''}from the command line"
