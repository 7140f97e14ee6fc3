#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "transformers==5.24.0",
#     "torch==2.7.0",
#     "accelerate==1.16.0",
#     "datasets==5.2.0",
#     "evaluate==0.4.6",
# ]
# ///
"""Trap check: read training code and launch commands, without running or importing them, and name every trap this
skill documents that they contain: the rule, the file and line, what goes wrong, the fix and the section to read.

Give Python files, shell scripts (.sh, .bash, .sbatch, .slurm) or folders (searched for both). Python is read with
the standard library's ast, decoded as Python decodes it (a PEP 263 coding line); constant values are followed through
simple assignments (`args = dict(...)`, `cfg["x"] = ...` then `TrainingArguments(**args)`, a variable that holds a model
class) and into the functions of the project that build what a Trainer gets (a model factory, a DataLoader helper,
`def make(**o): return TrainingArguments(**o)`); imports are followed to tell Composer's Trainer from Transformers',
and a module the code imports from its own project (given here, or a file next to it) is read for what it defines (a
get_metrics or a sequence classification model in model.py, MAX_DURATION in config.py, a pad token set in data.py: a
trap written there is named at its own file and line). Launch commands are read from shell lines (shlex; behind if,
for, timeout, srun, sudo, env and variable prefixes) and from Python strings and argv lists (`LAUNCH = "composer -n 2
train.py"`, `subprocess.run([sys.executable, "-m", "composer.cli.launcher", ...])`). A launch of a Python file given
here (or of a module, `-m pkg.train` read as pkg/train.py) checks that file under the launch (process count, flags,
offline variables, the values its argparse flags get); a value the launch takes from a variable is unknown and no
finding depends on it.

--device is the device the checked code will run on where it does not name one itself (Composer picks the GPU when
there is one): auto is a GPU when one is visible here, and gpu is accepted on a machine without one (nothing runs
here, so the checker never exits 4). Links are relative to this skill's folder.

This one file is the source of the checker of every skill: skill_common/trap_check.py at the bundle root, copied into
each skill's scripts/ folder (`make sync`; the suite fails when a copy drifts). Each copy runs the rules of the skill
it sits in, read from that skill's SKILL.md.
"""

import os
import signal
import sys

if __name__ == "__main__":  # Ctrl-C while the modules below load: one line and exit 130, as run_main's handler gives
    signal.signal(signal.SIGINT, lambda signum, frame: (
        os.write(2, b"trap_check.py: error: interrupted by SIGINT\n"), os._exit(128 + signal.SIGINT)))

import ast  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import math  # noqa: E402
import re  # noqa: E402
import shlex  # noqa: E402
import stat  # noqa: E402
import textwrap  # noqa: E402
import tokenize  # noqa: E402
from collections import Counter  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from pathlib import Path  # noqa: E402

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
import _trap_fix  # noqa: E402
import smoke_contract  # noqa: E402
from smoke_contract import EXIT_USAGE, SmokeError, build_parser, run_main  # noqa: E402

SCRIPT = "trap_check.py"
HERE = Path(__file__).resolve().parent
MAX_BYTES = 5_000_000  # a training script is far smaller; a bigger file is a data file given by mistake
PYTHON_VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"  # the grammar ast.parse knows


@dataclass(frozen=True)
class Rule:
    id: str
    skill: str
    what: str  # what goes wrong, one sentence
    fix: str
    see: str  # relative to the skill folder, with the section's #anchor


TF, CP = "transformers-training", "composer-training"
TABLE = "SKILL.md#what-5x-changed-and-traps-the-library-does-not-warn-about"
PREFLIGHT = "SKILL.md#preflight-checks"
# (argument, what happens, the 5.x replacement)
REMOVED_ARGUMENTS = [
    ("evaluation_strategy", "removed in 5.x: TrainingArguments raises TypeError", 'eval_strategy="steps"'),
    ("no_cuda", "removed in 5.x: TrainingArguments raises TypeError", "use_cpu=True"),
    ("overwrite_output_dir", "removed in 5.x with no replacement: TrainingArguments raises TypeError",
     "drop it: choose a new output_dir, or resume from the old one"),
    ("logging_dir", "removed in 5.x: TrainingArguments raises TypeError",
     "drop it: TensorBoard writes to $TENSORBOARD_LOGGING_DIR, else <output_dir>/runs/"),
    ("warmup_ratio", "removed in 5.x: TrainingArguments raises TypeError",
     "warmup_steps=<the ratio> (a float below 1 is a ratio)"),
    ("group_by_length", "removed in 5.x: TrainingArguments raises TypeError",
     'train_sampling_strategy="group_by_length"'),
    ("include_inputs_for_metrics", "removed in 5.x: TrainingArguments raises TypeError",
     'include_for_metrics=["inputs"]'),
    ("save_safetensors", "removed in 5.x (checkpoints are always safetensors): TrainingArguments raises TypeError",
     "drop it"),
    ("use_mps_device", "removed in 5.x with no replacement: TrainingArguments raises TypeError", "drop it"),
    ("push_to_hub_token", "removed in 5.x: TrainingArguments raises TypeError", "hub_token="),
]
RULES = [
    *(Rule(f"removed-{name}", TF, f"{name}= was {what}.", fix, TABLE) for name, what, fix in REMOVED_ARGUMENTS),
    Rule("trainer-tokenizer", TF, "Trainer(tokenizer=...) was removed in 5.x: Trainer raises TypeError.",
         "Trainer(processing_class=tokenizer)", TABLE),
    Rule("optim-adamw-hf", TF, 'optim="adamw_hf" is no longer a valid optimizer name: TrainingArguments raises.',
         'drop optim (the default is adamw_torch, or adamw_torch_fused on torch >= 2.8)', TABLE),
    Rule("seqcls-loss-scaling", TF, "A *ForSequenceClassification model with gradient accumulation or more than one "
         "process logs a loss (and gets gradients and grad_norm) N times too large (huggingface/transformers#47688).",
         "model.accepts_loss_kwargs = False before building the Trainer",
         "references/distributed-training.md#the-loss-trap-sequence-classification-under-ddp-and-gradient-accumulation"),
    Rule("pad-token-eos", TF, "pad_token = eos_token for a causal LM: DataCollatorForLanguageModeling (or labels masked "
         "where they equal the pad id) sets every real EOS label to -100, so the model never learns to stop.",
         'tokenizer.add_special_tokens({"pad_token": "[PAD]"}) and model.resize_token_embeddings(len(tokenizer))',
         TABLE),
    Rule("evaluate-hub-load", TF, "evaluate.load(<Hub name>) fetches the metric module from the Hub: offline it fails, "
         "online it is a network call per run.",
         'compute the metric with numpy in compute_metrics, or evaluate.load("<path>/metric.py") of a local module '
         "(assets/accuracy_metric.py), which needs no network",
         "references/api-reference.md#metrics-offline-with-the-evaluate-api"),
    Rule("best-strategy-mismatch", TF, "load_best_model_at_end needs the same eval and save strategy: TrainingArguments "
         "raises.", 'set save_strategy equal to eval_strategy (or save_strategy="best")', PREFLIGHT),
    Rule("best-save-not-multiple", TF, "load_best_model_at_end with save_steps not a round multiple of eval_steps: "
         "TrainingArguments raises.", "save_steps = eval_steps", PREFLIGHT),
    Rule("best-unsaved-eval", TF, "save_steps is a multiple of eval_steps but not equal: a best evaluation on a step "
         "that is not saved is never loaded, with no warning.", 'save_steps = eval_steps, or save_strategy="best"',
         "references/troubleshooting.md#the-best-evaluation-falls-on-a-step-that-is-not-saved"),
    Rule("best-default-metric", TF, "load_best_model_at_end without metric_for_best_model quietly picks the lowest "
         "eval_loss, whatever compute_metrics returns.",
         'metric_for_best_model="<a key compute_metrics returns>" (and greater_is_better), or "eval_loss" said '
         "out loud", PREFLIGHT),
    Rule("best-save-no-metric", TF, 'save_strategy="best" without metric_for_best_model: TrainingArguments accepts '
         "it, Trainer(...) raises.", 'metric_for_best_model="<a key compute_metrics returns>"', PREFLIGHT),
    Rule("best-save-total-limit-1", TF, "save_total_limit=1 with load_best_model_at_end: only the best checkpoint "
         "survives the run; the last one, to resume from, is deleted.", "save_total_limit=2 or more", TABLE),
    Rule("token-collator-label", TF, 'DataCollatorForTokenClassification keeps a "label" column as it is: the model '
         'gets no labels and Trainer raises "The model did not return a loss".',
         'name the token labels column "labels" (rename_column("label", "labels"))', PREFLIGHT),
    Rule("accelerate-cpu-processes", TF, "accelerate launch --cpu with --num_processes above 1 silently runs one "
         "process.", "torchrun --nproc_per_node N (gloo on CPU), or drop --cpu on GPUs",
         "references/distributed-training.md#the---cpu-trap"),
    Rule("resume-changed-max-steps", TF, "resuming with another max_steps: the first resumed step runs at the old "
         "schedule's rate, then jumps onto a new curve.",
         "keep max_steps when resuming; to train longer, start a new run from the saved weights", TABLE),
    Rule("perplexity-exp-eval-loss", TF, "math.exp(eval_loss) as causal-LM perplexity is too low: the token count "
         "includes each row's first token, which is never predicted.",
         "sum the loss over predicted tokens and divide by their count, as the causal LM recipe does",
         "references/task-recipes.md#causal-language-modeling"),
    Rule("load-dataset-online", TF, "load_dataset on local files looks up s3.amazonaws.com unless HF_HUB_OFFLINE or "
         "HF_DATASETS_OFFLINE is 1 before datasets is imported.",
         'os.environ["HF_HUB_OFFLINE"] = "1" above the first datasets import (or set it in the launching shell)',
         "references/task-recipes.md#your-own-data-files"),
    Rule("resume-true-unconditional", TF, "train(resume_from_checkpoint=True) raises on a first launch (no checkpoint "
         "yet) and after a kill during a save (the newest checkpoint has no trainer_state.json).",
         "pass the newest complete checkpoint or None (last_complete_checkpoint(output_dir) in the reference)",
         "references/troubleshooting.md#after-a-kill-or-preemption"),
    Rule("resume-unchecked-checkpoint", TF, "get_last_checkpoint() returns a checkpoint a kill cut short (no "
         "trainer_state.json): resuming from it raises.",
         "skip checkpoints without trainer_state.json (last_complete_checkpoint in the reference)",
         "references/troubleshooting.md#after-a-kill-or-preemption"),
    Rule("generate-max-length", TF, "predict_with_generate without generation_max_length generates up to the model's "
         "max_length (20 by default) and the first evaluation writes it into model.generation_config for good.",
         "generation_max_length=<your target length> (and model.generation_config.max_length to set both)",
         "references/task-recipes.md#summarization"),
    Rule("seq2seq-plain-trainer", TF, "a seq2seq model under the plain Trainer: predict() returns teacher-forced logits, "
         "not generated text.", "Seq2SeqTrainer with Seq2SeqTrainingArguments(predict_with_generate=True, "
         "generation_max_length=...)", "references/task-recipes.md#summarization"),
    Rule("positional-trainer", CP, "Composer's Trainer takes keyword arguments only: Trainer(model, ...) raises "
         "TypeError.", "Trainer(model=model, train_dataloader=..., ...)", "SKILL.md#minimal-trainer"),
    Rule("duration-unit", CP, "this max_duration unit never ends (iter) or is rejected (dur, wall clock).",
         'a total in ep, ba, sp or tok ("2ep", "100ba")', "references/checkpointing-and-time.md#time-strings"),
    Rule("tok-uncounted", CP, "a tok max_duration without get_num_tokens_in_batch: tokens are counted only for dict "
         "batches with input_ids (padding included) or datasets with max_seq_len, otherwise never, so the run stops "
         "early or never.", "DataSpec(loader, get_num_tokens_in_batch=lambda batch: int(batch[\"attention_mask\"]"
         ".sum()))", "references/model-and-data-contracts.md#batch-schemas-and-what-the-timestamp-counts"),
    Rule("changed-head-load", CP, "a changed head loads only with load_weights_only=True, "
         "load_strict_model_weights=False and load_ignore_keys together; other combinations fail or restore the old "
         "optimizer state and timestamp.", "give all three load_* options",
         "references/checkpointing-and-time.md#fine-tune-into-a-changed-head"),
    Rule("autoresume-no-run-name", CP, "autoresume=True without run_name: Composer raises (a random name could not be "
         "found again on relaunch).", 'run_name="<stable name>" and save_folder="checkpoints/{run_name}"',
         "references/checkpointing-and-time.md#autoresume"),
    Rule("autoresume-shared-folder", CP, "autoresume reads <save_folder>/latest-rank0.pt whatever the run name: runs "
         "that share this save_folder resume each other's checkpoints.",
         'save_folder="<root>/{run_name}", with a run_name that differs between jobs (run_name=args.job)',
         "references/checkpointing-and-time.md#autoresume"),
    Rule("save-overwrite", CP, "save_overwrite=True to get past FileExistsError keeps the old run's files and, when "
         "latest-rank0.pt is missing or dangling, restarts from batch 0.",
         "resume (autoresume or load_path=<folder>/latest-rank0.pt), set torn checkpoints aside, or use a new folder",
         "references/checkpointing-and-time.md#running-again-into-a-used-folder"),
    Rule("gpu-only-setting-on-cpu", CP, "AMP precision and device_train_microbatch_size=\"auto\" are GPU-only: on CPU "
         "Composer raises.", 'precision="fp32" and an integer microbatch size on CPU',
         "references/troubleshooting.md#precision-devices-microbatching"),
    Rule("no-optimizer", CP, "no optimizers=: Composer warns and trains with DecoupledSGDW(lr=0.1).",
         "optimizers=torch.optim.AdamW(model.parameters(), lr=...)", "SKILL.md#fast-start"),
    Rule("shuffle-resume", CP, "a train DataLoader(shuffle=True) with autoresume or load_path: a resume inside an epoch "
         "reorders the rest of it when training draws from torch's CPU RNG, so the resume is not bit-exact.",
         "sampler=dist.get_sampler(dataset, shuffle=True) (composer.utils.dist)",
         "references/checkpointing-and-time.md#after-a-kill-or-preemption"),
    Rule("launch-default-processes", CP, "composer without -n starts one process per GPU: one on a machine without "
         "GPUs.", "composer -n <processes> train.py", "references/distributed.md#run-it-with-2-ranks-on-cpu"),
    Rule("loader-without-sampler", CP, "a train DataLoader without a distributed sampler under a multi-process launch: "
         "every rank reads every sample (Composer refuses it).",
         "sampler=dist.get_sampler(dataset, shuffle=...) (composer.utils.dist)",
         "references/distributed.md#what-the-training-script-needs"),
    Rule("eval-without-metrics", CP, "evaluation with a model that reports no metrics (it defines no get_metrics, or "
         "it is a HuggingFaceModel given neither metrics= nor eval_metrics=): get_metrics returns {}, so evaluation "
         "runs and reports nothing.",
         "define get_metrics(is_train) and update_metric in the model (ComposerClassifier has them), or give "
         "HuggingFaceModel metrics= (eval_metrics= for other metrics in evaluation)",
         "SKILL.md#model-and-data-checklist"),
]
RULE_IDS = {rule.id for rule in RULES}


@dataclass
class Finding:
    rule: str
    path: str
    line: int
    note: str = ""


# ---------------------------------------------------------------- launch commands (shell lines, strings, argv lists)

LAUNCHERS = ("accelerate", "accelerate-launch", "torchrun", "composer", "deepspeed", "python", "python3")
PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")  # python, python3, python3.11
# Commands that run the command after them (with their own options first): `timeout 600 torchrun ...`
WRAPPERS = {"exec", "nohup", "time", "env", "srun", "uv", "run", "timeout", "sudo", "nice", "ionice", "numactl",
            "taskset", "stdbuf", "command", "builtin", "setsid", "chrt", "caffeinate", "xvfb-run", "unbuffer",
            "poetry", "pipenv", "conda", "mamba", "micromamba", "pdm", "hatch", "pixi", "rye"}
SHELL_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}  # before a command
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
WRAPPER_VALUE = re.compile(r"^\d+(\.\d+)?[smhd]?$")  # timeout 600, nice -n 10: a number, never a command
PYTHON_MODULES = {"torch.distributed.run": "torchrun", "torch.distributed.launch": "torchrun",
                  "accelerate.commands.launch": "accelerate launch", "accelerate.commands.accelerate_cli": "accelerate",
                  "composer.cli.launcher": "composer", "deepspeed": "deepspeed",
                  "deepspeed.launcher.runner": "deepspeed"}
PYTHON_TOOLS = {"pytest", "pip", "venv", "virtualenv", "unittest", "ensurepip", "build", "twine", "mypy", "ruff",
                "black", "isort", "flake8", "pylint", "coverage", "cProfile", "pdb", "timeit", "http", "json",
                "tests", "py_compile", "compileall", "zipfile", "tarfile", "site", "sysconfig", "platform",
                "transformers", "accelerate", "composer", "torch", "datasets", "evaluate", "huggingface_hub",
                "streaming", "tensorboard", "wandb", "mlflow"}  # python -m X that starts no training script of its own
OFFLINE_NAMES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
TRUE_VALUES = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's constants._is_true and datasets' config: upper-cased


def offline_value(value) -> bool:
    """Whether an environment value turns offline mode on: huggingface_hub and datasets take 1, on, yes, true in any
    case. A value that cannot be read here (a variable) is counted as on: no finding that depends on it."""
    if value is UNKNOWN or (isinstance(value, str) and "$" in value):
        return True
    return isinstance(value, str) and value.upper() in TRUE_VALUES


def launcher_name(token: str) -> str | None:
    name = os.path.basename(token)
    return "python" if PYTHON.match(name) else name if name in LAUNCHERS else None


@dataclass
class Launch:
    path: str
    line: int
    launcher: str  # accelerate, torchrun, composer, deepspeed, python
    options: list[str]  # the launcher's own flags, before the script
    script: str | None
    args: list[str]  # the script's flags
    env: dict[str, str] = field(default_factory=dict)
    several: str = ""  # why this line starts several different jobs (a shell loop over a variable, a Slurm array)
    runs: object = None  # the Module of the script it runs, when that file is given or found next to the launch

    def option(self, *names: str) -> str | None:
        """The value of a launcher option given as `--x N`, `--x=N` or `-nN`; '' for a bare flag."""
        for index, token in enumerate(self.options):
            for name in names:
                if token == name:
                    following = self.options[index + 1] if index + 1 < len(self.options) else ""
                    return "" if following.startswith("-") else following
                if token.startswith(name + "=") or (len(name) == 2 and token.startswith(name) and len(token) > 2):
                    return token[len(name) + (token[len(name)] == "="):]
        return None

    @property
    def processes(self) -> int | None:
        """Processes started; None when the default or a variable decides. accelerate launch --cpu runs one process
        whatever --num_processes says (accelerate-cpu-processes names that): the other rules count one."""
        requested = self.requested
        if requested is not None and self.launcher == "accelerate" and self.option("--cpu") is not None:
            return 1
        return requested

    @property
    def requested(self) -> int | None:
        """The process count the launch line asks for; None when the default or a variable decides."""
        value = {"accelerate": self.option("--num_processes", "--num-processes"),
                 "torchrun": self.option("--nproc_per_node", "--nproc-per-node"),
                 "composer": self.option("-n", "--nproc"),
                 "deepspeed": self.option("--num_gpus", "--num-gpus")}.get(self.launcher, "1")
        return count(value)

    def flag(self, name: str) -> str | None:
        """The value of an HfArgumentParser flag on the script's command line (`--x v`, `--x=v`, dashes or not)."""
        for index, token in enumerate(self.args):
            key, equals, value = token.partition("=")
            if key.startswith("--") and key[2:].replace("-", "_") == name:
                if equals:
                    return value
                following = self.args[index + 1] if index + 1 < len(self.args) else ""
                return "true" if not following or following.startswith("--") else following
        return None

    def job(self) -> tuple:
        """What makes two launches of one file different jobs: the script's arguments and the environment."""
        return tuple(self.args), tuple(sorted(self.env.items()))


def count(text: str | None) -> int | None:
    """A count written in ASCII digits ("²".isdigit() is true), else None; one past 18 digits is read as 10**18 (int()
    refuses strings of over 4,300 digits)."""
    if not text or not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10 ** 18


def parse_launch(tokens: list[str], path: str, line: int, env: dict[str, str]) -> Launch | None:
    """The launch in one simple command, behind shell keywords (`then`, `do`), variable assignments and wrappers
    with their options (`timeout 600`, `srun -N 2`, `sudo -E`, `env A=1`, `uv run`); None when it is not one."""
    env, index, wrapped, option_value = dict(env), 0, False, False
    while index < len(tokens):
        token = tokens[index]
        if launcher_name(token):
            break
        if ASSIGNMENT.match(token):
            name, _, value = token.partition("=")
            env[name] = value
        elif token in WRAPPERS:
            wrapped, option_value = True, False
        elif not wrapped and token in SHELL_KEYWORDS:
            pass
        elif wrapped and token.startswith("-"):
            option_value = "=" not in token  # `--partition gpu`: the next word may be its value
        elif wrapped and (option_value or WRAPPER_VALUE.match(token)):
            option_value = False
        else:
            return None  # another command (echo, bash -c ...): what follows it is not a launch
        index += 1
    if index >= len(tokens):
        return None
    launcher, rest = launcher_name(tokens[index]), tokens[index + 1:]
    if launcher == "python":
        while rest and rest[0].startswith("-") and not rest[0].startswith("-m"):  # -u, -B, -W arg, -X arg
            if rest[0].startswith("-c"):
                return None  # python -c "...": no script
            rest = rest[2:] if rest[0] in ("-W", "-X") else rest[1:]
        if rest and rest[0].startswith("-m"):
            module = rest[0][2:] or (rest[1] if len(rest) > 1 else "")
            rest = rest[1:] if rest[0][2:] else rest[2:]
            if module in PYTHON_MODULES:
                launcher, _, word = PYTHON_MODULES[module].partition(" ")
                rest = [word, *rest] if word else rest
            elif module.split(".")[0] in PYTHON_TOOLS or not MODULE_NAME.fullmatch(module):
                return None  # python -m pytest tests/x.py runs no training script of its own
            else:  # python -m pkg.train: the module, read as pkg/train.py
                return Launch(path, line, "python", [], module.replace(".", "/") + ".py", rest, env)
    if launcher == "accelerate-launch":
        launcher, rest = "accelerate", ["launch", *rest]
    if launcher == "accelerate":
        if not rest or rest[0] != "launch":
            return None
        rest = rest[1:]
    scripts = [index for index, token in enumerate(rest) if token.endswith(".py") and not token.startswith("-")]
    if not scripts and launcher != "python":  # `accelerate launch -m pkg.train`: a module, read as pkg/train.py
        flags = [index for index, token in enumerate(rest) if token in ("-m", "--module", "--module_mode")]
        modules = [index for index in range(flags[0] + 1, len(rest)) if MODULE_NAME.fullmatch(rest[index])] \
            if flags else []
        # not an option's value (`--rdzv-backend c10d`, `--config_file cfg.yaml`), unless every candidate is one
        free = [index for index in modules if index == flags[0] + 1 or not rest[index - 1].startswith("-")]
        if modules:
            at = (free or modules)[0]
            return Launch(path, line, launcher, rest[:at], rest[at].replace(".", "/") + ".py", rest[at + 1:], env)
    if not scripts:
        return None
    at = scripts[0]
    return Launch(path, line, launcher, rest[:at], rest[at], rest[at + 1:], env)


MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")


HEREDOC = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
SHELLS = re.compile(r"^(?:\S*/)?(?:ba|z|k|da)?sh$")


def shell_commands(text: str):
    """(line, tokens) per simple command of a shell script: continuations joined, comments and operators split off."""
    lines = text.split("\n")  # as the shell counts lines: splitlines() also breaks at \f, \x85 and U+2028
    index = 0
    while index < len(lines):
        start, parts = index + 1, [lines[index]]
        while parts[-1].endswith("\\") and index + 1 < len(lines):  # a list joined once: linear in the length
            index += 1
            parts[-1] = parts[-1][:-1]
            parts.append(lines[index])
        index += 1
        joined = " ".join(parts)
        heredoc = HEREDOC.search(joined)
        if heredoc and not (joined.split() and SHELLS.match(joined.split()[0])):
            # a here-document's body is text for its command (`cat > README <<EOF`), not commands, unless a shell reads it
            strip_tabs, end = heredoc[1] == "-", heredoc[3]
            while index < len(lines) and (lines[index].lstrip("\t") if strip_tabs else lines[index]) != end:
                index += 1
            index += 1
        lexer = shlex.shlex(joined, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError:  # an unbalanced quote: not a command this checker can read
            continue
        command: list[str] = []
        for token in [*tokens, ";"]:
            if token and set(token) <= set(";&|()"):
                if command:
                    yield start, command
                command = []
            else:
                command.append(token)


SHELL_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
OPENS = {"if": "fi", "case": "esac", "for": "done", "select": "done", "while": "done", "until": "done"}


def shell_blocks(commands):
    """(line, tokens, enclosing blocks) per command, the keywords in front of it (then, do, else...) taken off;
    a block is (keyword, the for loop's variable or None). A loop's header is no command."""
    blocks: list[tuple[str, str | None]] = []
    for line, tokens in commands:
        while tokens and tokens[0] in (*OPENS, *OPENS.values(), *SHELL_KEYWORDS):
            word = tokens[0]
            if word in OPENS:
                blocks.append((word, tokens[1] if word in ("for", "select") and len(tokens) > 1 else None))
                if word in ("for", "select", "case"):
                    yield line, [], list(blocks)
                    tokens = []
                    break
            elif word in OPENS.values():
                closing = [index for index, (opened, _) in enumerate(blocks) if OPENS[opened] == word]
                del blocks[closing[-1] if closing else len(blocks):]
            tokens = tokens[1:]
        if tokens:
            yield line, tokens, list(blocks)


def launches_in_shell(text: str, path: str, first_line: int = 1) -> list[Launch]:
    """The launches of a shell script. A variable assigned one literal value, once, outside any if or loop, is read
    (`NP=2` then `--nproc_per_node $NP`); any other stays unknown. A launch inside a for loop whose variable is on its
    line, or in a Slurm array job (#SBATCH --array), starts several jobs."""
    commands = list(shell_blocks((line + first_line - 1, tokens) for line, tokens in shell_commands(text)))
    assigned: dict[str, list[str | None]] = {}
    for _, tokens, blocks in commands:  # which variables hold one known value
        if not tokens and blocks and blocks[-1][1]:  # a for loop's header: its variable takes many values
            assigned.setdefault(blocks[-1][1], []).append(None)
        words = tokens[1:] if tokens and tokens[0] in ("export", "local", "declare", "readonly") else tokens
        plain = all(ASSIGNMENT.match(word) for word in words)  # `NP=2`, not `NP=2 torchrun ...`
        for word in words:
            if not ASSIGNMENT.match(word):
                break
            name, _, value = word.partition("=")
            known = plain and not blocks and not re.search(r"[$`]", value)
            assigned.setdefault(name, []).append(value if known else None)
    known = {name: values[0] for name, values in assigned.items() if len(values) == 1 and values[0] is not None}

    def expand(word: str) -> str:
        return SHELL_VARIABLE.sub(lambda match: known.get(match[1] or match[2], match[0]), word)

    array = re.search(r"(?m)^#SBATCH\s+(--array|-a)\b", text)
    found, exported = [], {}
    for line, tokens, blocks in commands:
        if not tokens:
            continue
        if tokens[0] == "export":
            exported.update(expand(token).split("=", 1) for token in tokens[1:] if "=" in token)
            continue
        launch = parse_launch([expand(token) for token in tokens], path, line, exported)
        if launch:
            varied = sorted({variable for _, variable in blocks if variable and any(
                f"${variable}" in token or f"${{{variable}}}" in token for token in tokens)})
            if varied:
                launch.several = f"launched in a loop over ${varied[0]}"
            elif array:
                launch.several = "a Slurm array job (#SBATCH --array)"
            found.append(launch)
    return found


# ---------------------------------------------------------------- a Python module, read with ast

UNKNOWN = object()
PROSE_KEYWORDS = ("help", "epilog", "description", "usage", "prog")


class Module:
    def __init__(self, path: str, tree: ast.Module, read_launches: bool = True):
        self.path, self.tree = path, tree
        self.imports: dict[str, str] = {}  # local name -> module.attribute it stands for
        self.assigned: dict[str, list[ast.AST]] = {}
        self.edits: dict[str, list[ast.AST]] = {}  # a dict variable -> the statements that change its keys
        self.bases: dict[str, list[ast.AST]] = {}  # a class defined here -> its bases
        self.classes: dict[str, list[ast.ClassDef]] = {}
        self._attribute_stores: set[tuple[str, str]] | None = None
        self._arguments: dict[tuple, list[tuple[list, dict]]] | None = None
        self.launched_with: list[list[str]] = []  # the script arguments of each launch that runs this module
        self.functions: dict[str, list[ast.AST]] = {}  # a function defined here (top level first) -> its definitions
        self.own_sys_path = False  # a sys.path entry of the project's is put first (Project.imports_of)
        self.linked: dict[str, tuple[Module, str]] = {}  # a name imported from a project module -> (it, the name there)
        self._sequence_classifiers: list[ast.AST] | None = None
        self.dotted: dict[str, Module] = {}  # `import pkg.util`: "pkg.util" -> that project module
        self.builders: dict[int, list[ast.Call]] = {}  # a function defined here -> the TrainingArguments it builds
        self.calls: list[ast.Call] = []
        self.nodes = list(ast.walk(tree))
        self._parent: dict[int, ast.AST] | None = None
        self._stores: Counter | None = None
        self._const_names: dict[tuple[str, int], object] = {}
        self._mappings: dict[tuple, tuple[dict, bool]] = {}
        self.helper_looks: dict[str, bool] = {}  # a function of its own -> whether it returns a look for a checkpoint
        self.guarded_functions: dict[str, bool] = {}  # a function of its own -> called only under a checkpoint look
        self.helper_found: dict[str, bool | None] = {}  # a function of its own -> helper_found_when_true
        self.eos: dict[int, bool] = {}  # an expression -> is_eos
        self.pad_eos: list[int] | None = None  # pad_eos_lines
        self.sides: dict[int, tuple[bool, bool]] = {}  # a test -> guard_sides
        self.block_guards: dict[int, tuple[dict[int, int], list[bool]]] = {}  # a block -> guarded_before
        self.looks: dict[int, bool] = {}  # a condition -> whether it looks for a checkpoint (looks_for_checkpoint)
        self.first_trainer_line: float | None = None  # the first line that builds a Trainer (built_before)
        for node in self.nodes:
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.imports[alias.asname or alias.name.split(".")[0]] = alias.asname and alias.name or \
                        alias.name.split(".")[0]
            elif isinstance(node, ast.ImportFrom) and node.module:
                for alias in node.names:
                    self.imports[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
                    if isinstance(target, ast.Name):
                        self.assigned.setdefault(target.id, []).append(node.value)
                    elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                        self.edits.setdefault(target.value.id, []).append(node)  # cfg["x"] = ...
            elif isinstance(node, ast.Delete):
                for target in node.targets:
                    if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
                        self.edits.setdefault(target.value.id, []).append(node)
            elif isinstance(node, ast.ClassDef):
                self.bases[node.name] = node.bases
                self.classes.setdefault(node.name, []).append(node)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                self.functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Call):
                self.calls.append(node)
                if isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) and \
                        node.func.attr in ("update", "setdefault", "pop", "popitem", "clear", "__setitem__"):
                    self.edits.setdefault(node.func.value.id, []).append(node)  # cfg.update(x=...)
        self.launches: list[Launch] = []
        self.names = {node.id for node in self.nodes if isinstance(node, ast.Name)} | \
            {node.attr for node in self.nodes if isinstance(node, ast.Attribute)} | \
            {node.arg for node in self.nodes if isinstance(node, ast.keyword) and node.arg} | \
            {node.name for node in self.nodes if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        docstrings = {id(node.value) for node in self.nodes if isinstance(node, ast.Expr)}
        self._prose = docstrings | {id(node.value) for node in self.nodes if isinstance(node, ast.keyword)
                                    and node.arg in PROSE_KEYWORDS}  # argparse help=, epilog=: text, never run
        self.strings = {node.value for node in self.nodes if isinstance(node, ast.Constant)
                        and isinstance(node.value, str) and id(node) not in docstrings}
        self.project: list[Module] = [self]  # this module and the project modules it imports (Project.link)
        self.imported: list[tuple[int, Module]] = []  # (line of the import, a project module it imports)
        self._project_names: set[str] | None = None
        self._project_bases: dict[str, list[str]] | None = None
        self._project_classes: set[str] | None = None
        if read_launches:  # a project module found next to a given one is read only for what it defines
            self._read_launch_strings()
        self.found_nearby = not read_launches  # not given: found next to a given module that imports it

    @property
    def stores(self) -> Counter:
        """How many times each name is bound (`x = ...`, `a, x = ...`, `for x in ...`, `with ... as x`)."""
        if self._stores is None:
            self._stores = Counter(node.id for node in self.nodes if isinstance(node, ast.Name)
                                   and isinstance(node.ctx, ast.Store))
        return self._stores

    @property
    def parent(self) -> dict[int, ast.AST]:
        if self._parent is None:
            self._parent = {id(child): node for node in self.nodes for child in ast.iter_child_nodes(node)}
        return self._parent

    # -- the project: what this module and the modules it imports define
    @property
    def project_names(self) -> set[str]:
        """The names of this module and of the project modules it imports, and what its imports stand for (a
        get_metrics defined in the model's module counts for the training script that imports it)."""
        if self._project_names is None:
            self._project_names = set().union(*(module.names | set(module.imports.values())
                                                for module in self.project))
        return self._project_names

    @property
    def project_classes(self) -> set[str]:
        """The classes defined in this module and the project modules it imports."""
        if self._project_classes is None:
            self._project_classes = {name for part in self.project for name in part.bases}
        return self._project_classes

    @property
    def project_strings(self) -> set[str]:
        return set().union(*(module.strings for module in self.project))

    def inherits(self, name: str, test, seen: set[str] | None = None) -> bool:
        """Whether ``test(a short class name)`` holds for the class ``name`` or a class it derives from, through the
        classes defined in this module and the project modules it imports."""
        seen = set() if seen is None else seen
        if test(name):
            return True
        if name in seen or len(seen) > 50:
            return False
        seen.add(name)
        if self._project_bases is None:
            self._project_bases = {}
            for module in self.project:
                for defined, bases in module.bases.items():
                    self._project_bases.setdefault(defined, []).extend(
                        module.qualname(base).rsplit(".", 1)[-1] for base in bases)
        return any(self.inherits(base, test, seen) for base in self._project_bases.get(name, []))

    # -- values
    def sequence_classifiers(self) -> list[ast.AST]:
        """The names and attributes here that stand for a *ForSequenceClassification class; read once per module
        (every module of a project reads those of the modules it imports)."""
        if self._sequence_classifiers is None:
            self._sequence_classifiers = [
                node for node in self.nodes if isinstance(node, (ast.Name, ast.Attribute)) and
                self.qualname(node).endswith("ForSequenceClassification")]
        return self._sequence_classifiers

    def single(self, name: str) -> ast.AST | None:
        values = self.assigned.get(name, [])
        return values[0] if len(values) == 1 else None

    def qualname(self, node: ast.AST, depth: int = 0) -> str:
        """`transformers.Trainer` for a Trainer imported from transformers, the bare name otherwise."""
        if depth > 8:
            return ""
        if isinstance(node, ast.Name):
            if node.id in self.imports:
                return self.imports[node.id]
            value = self.single(node.id)
            if isinstance(value, (ast.Name, ast.Attribute)):
                return self.qualname(value, depth + 1)
            return node.id
        if isinstance(node, ast.Attribute):
            return f"{self.qualname(node.value, depth + 1)}.{node.attr}"
        if isinstance(node, ast.Call):
            return self.qualname(node.func, depth + 1) + "()"
        return ""

    def short(self, call: ast.Call) -> str:
        return self.qualname(call.func).rsplit(".", 1)[-1]

    def const(self, node: ast.AST | None, depth: int = 0):
        if node is None or depth > 8:
            return UNKNOWN
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            value = self.const(node.operand, depth + 1)
            return -value if isinstance(value, (int, float)) and not isinstance(value, bool) else UNKNOWN
        if isinstance(node, ast.Name):  # memoised per (name, depth): `x0 = x1` written many times stays linear
            key = (node.id, depth)
            if key not in self._const_names:
                self._const_names[key] = UNKNOWN  # a name assigned from itself is unknown
                values = [self.const(value, depth + 1) for value in self.assigned.get(node.id, [])]
                if not values and node.id in self.linked:  # `from config import MAX_DURATION`: read it there
                    other, name = self.linked[node.id]
                    values = [other.const(ast.Name(name), depth + 1)] if name else []
                self._const_names[key] = values[0] if values and all(value == values[0] for value in values) \
                    else UNKNOWN
            return self._const_names[key]
        if isinstance(node, ast.Subscript) and self.qualname(node.value).endswith("Precision"):
            value = self.const(node.slice, depth + 1)  # Precision["AMP_BF16"]
            return value.lower() if isinstance(value, str) else UNKNOWN
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and \
                isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):  # CFG["max_duration"]
            found, _ = self.mapping(node.value, node.lineno)
            return self.const(found[node.slice.value][0], depth + 1) if node.slice.value in found else UNKNOWN
        if isinstance(node, ast.Attribute) and self.qualname(node.value).endswith(("Strategy", "Precision")):
            return node.attr.lower()  # IntervalStrategy.STEPS, SaveStrategy.BEST, composer.core.Precision.AMP_BF16
        if isinstance(node, ast.Call) and self.qualname(node.func).endswith("Precision") and len(node.args) == 1:
            return self.const(node.args[0], depth + 1)  # Precision("amp_bf16")
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                isinstance(self.single(node.value.id), ast.Call):
            return self.field_default(self.single(node.value.id), node.value.id, node.attr, depth)
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                len(self.classes.get(node.value.id, [])) == 1 and not self.assigned.get(node.value.id):
            return self.class_attribute(self.classes[node.value.id][0], node.value.id, node.attr, depth)  # Cfg.x
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.linked and \
                not self.assigned.get(node.value.id) and not self.linked[node.value.id][1]:
            return self.linked[node.value.id][0].const(ast.Name(node.attr), depth + 1)  # import config; config.X
        if isinstance(node, (ast.Attribute, ast.Subscript)):  # config.CFG["x"], config.Cfg.x, from config import Cfg
            base = node.value
            home = self.imported_name(base) if isinstance(base, (ast.Name, ast.Attribute)) else None
            if home is not None:
                other, name = home
                moved = ast.Attribute(ast.Name(name, ast.Load()), node.attr, ast.Load()) \
                    if isinstance(node, ast.Attribute) else ast.Subscript(ast.Name(name, ast.Load()), node.slice)
                moved.lineno = 10 ** 9  # read after every edit of that module
                return other.const(moved, depth + 1)
        return UNKNOWN

    def field_default(self, holder: ast.Call, name: str, attribute: str, depth: int):
        """``name.attribute`` where ``name = holder``: an argparse default (`p.add_argument("--grad_accum",
        default=8)` and `a = p.parse_args()`) or a field of a dataclass of this module (`cfg = Cfg()`, `grad_accum:
        int = 4`), unless the value is set on it again; UNKNOWN otherwise."""
        if self._attribute_stores is None:
            self._attribute_stores = {(node.value.id, node.attr) for node in self.nodes if isinstance(
                node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)}
        if (name, attribute) in self._attribute_stores:
            return UNKNOWN
        function = holder.func
        if isinstance(function, ast.Attribute) and function.attr == "parse_args" and not holder.args and \
                not holder.keywords and isinstance(function.value, ast.Name):
            if self._arguments is None:  # (parser, dest) -> the add_argument calls: read once per module
                self._arguments = {}
                for call in self.calls:
                    if isinstance(call.func, ast.Attribute) and call.func.attr == "add_argument" and \
                            isinstance(call.func.value, ast.Name):
                        flags = [self.const(argument) for argument in call.args]
                        kw = {keyword.arg: keyword.value for keyword in call.keywords if keyword.arg}
                        long = [flag for flag in flags if isinstance(flag, str) and flag.startswith("--")]
                        dest = self.const(kw["dest"]) if "dest" in kw else \
                            long[0][2:].replace("-", "_") if long else None
                        self._arguments.setdefault((call.func.value.id, dest), []).append((flags, kw))
            given = self._arguments.get((function.value.id, attribute), [])
            if len(given) != 1 or "default" not in given[0][1] or "action" in given[0][1] or \
                    self.const(given[0][1].get("required")) is True:
                return UNKNOWN
            flags, kw = given[0]
            others = [flag for (parser, _), calls in self._arguments.items() if parser == function.value.id
                      for other, _ in calls if other is not flags for flag in other if isinstance(flag, str)]
            return self.launched_value(flags, kw, self.const(kw["default"], depth + 1), others)
        if not isinstance(function, ast.Name) or len(self.classes.get(function.id, [])) != 1 or holder.args:
            return UNKNOWN
        definition = self.classes[function.id][0]
        if not any("dataclass" in ast.dump(decorator) for decorator in definition.decorator_list):
            return UNKNOWN
        for keyword in holder.keywords:
            if keyword.arg is None:
                return UNKNOWN
            if keyword.arg == attribute:
                return self.const(keyword.value, depth + 1)
        return self.class_attribute(definition, function.id, attribute, depth)

    def launched_value(self, flags: list, kw: dict, default, others: list[str]):
        """What an argparse flag holds when the launches given here run this module: the one value every launch
        gives it (the default where a launch leaves it out), UNKNOWN when they differ or one is not known here;
        the default when no launch runs the module. Read as argparse reads it: `--x v`, `--x=v`, `-xv`, a unique
        prefix of a long flag (``others``: the parser's other flags), the last one given, and a string default
        converted by type=."""
        convert = {"int": int, "float": float, "str": str}.get(called_name(kw["type"]) if "type" in kw else "str")
        if convert is None:
            return UNKNOWN if self.launched_with else default
        try:
            default = convert(default) if isinstance(default, str) else default
        except ValueError:
            return UNKNOWN
        names = [flag for flag in flags if isinstance(flag, str) and flag.startswith("-")]
        values = []
        for args in self.launched_with:
            given = None
            for index, token in enumerate(args):
                key, equals, attached = token.partition("=")
                long = key in names or key.startswith("--") and len(key) > 2 and not any(
                    other == key for other in others) and any(name.startswith(key) for name in names) and \
                    not any(other.startswith(key) for other in others)  # argparse's allow_abbrev: a unique prefix
                short = [name for name in names if len(name) == 2 and not name.startswith("--") and
                         token.startswith(name) and len(token) > 2]
                if long or token in names:
                    given = attached if equals else args[index + 1] if index + 1 < len(args) else ""
                elif short:
                    given = token[2:]  # -j4
            if given is not None and re.search(r"[$`]", given):
                return UNKNOWN  # a shell variable, or "$?" from an argv list
            try:
                values.append(default if given is None else convert(given))
            except ValueError:
                return UNKNOWN
        return default if not values else values[0] if all(value == values[0] for value in values) else UNKNOWN

    def class_attribute(self, definition: ast.ClassDef, name: str, attribute: str, depth: int):
        """The value a class body gives ``attribute`` (`max_duration = "2ep"`, `max_duration: str = "2ep"` or a
        dataclass `field(default=...)`), unless ``name.attribute`` is set anywhere in this module; UNKNOWN otherwise."""
        if self._attribute_stores is None:
            self._attribute_stores = {(node.value.id, node.attr) for node in self.nodes if isinstance(
                node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name)}
        if (name, attribute) in self._attribute_stores:
            return UNKNOWN
        values = [statement.value for statement in definition.body
                  if isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and
                  statement.target.id == attribute and statement.value is not None or
                  isinstance(statement, ast.Assign) and len(statement.targets) == 1 and
                  isinstance(statement.targets[0], ast.Name) and statement.targets[0].id == attribute]
        if len(values) != 1:
            return UNKNOWN
        value = values[0]
        if isinstance(value, ast.Call) and called_name(value.func) == "field":
            value = next((keyword.value for keyword in value.keywords if keyword.arg == "default"), None)
        return self.const(value, depth + 1)

    # -- functions of the project
    def callee(self, call: ast.Call) -> "tuple[Module, ast.AST] | None":
        """(module, definition) of the project function ``call`` calls: defined here, imported from a project module
        (`from data import make_loader`, `data.make_loader`), or the one function of that name in the project."""
        function = call.func
        if isinstance(function, ast.Attribute) and isinstance(function.value, ast.Name) and \
                function.value.id in self.linked and not self.linked[function.value.id][1]:
            other = self.linked[function.value.id][0]
            return (other, other.functions[function.attr][0]) if function.attr in other.functions else None
        if not isinstance(function, ast.Name) or function.id in self.bases:
            return None
        if function.id in self.linked:
            other, name = self.linked[function.id]
            return (other, other.functions[name][0]) if name in other.functions else None
        if function.id in self.functions:
            return self, self.functions[function.id][0]
        defined = [(part, part.functions[function.id][0]) for part in self.project if function.id in part.functions]
        return defined[0] if len(defined) == 1 else None

    def returned(self, call: ast.Call) -> "list[tuple[Module, ast.AST]] | None":
        """(module, expression) per value the project function ``call`` calls returns, a local name followed to the
        one value the function assigns it; None when ``call`` is not a call of a project function or returns nothing
        that can be read."""
        found = self.callee(call)
        if found is None:
            return None
        part, definition = found
        statements = list(own_nodes(definition))
        local: dict[str, list[ast.AST]] = {}
        for node in statements:
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        local.setdefault(target.id, []).append(node.value)
        values = []
        for node in statements:
            if isinstance(node, ast.Return) and node.value is not None:
                value = node.value
                if isinstance(value, ast.Name) and len(local.get(value.id, [])) == 1:
                    value = local[value.id][0]
                values.append((part, part.resolve(value)))
        return values or None

    def returned_dict(self, call: ast.Call) -> "tuple[Module, ast.AST, int] | None":
        """(module, expression, line) of the one return statement of the project function ``call`` calls: the
        mapping it returns is read as of that line (a key popped or set in the function before it counts)."""
        found = self.callee(call)
        if found is None:
            return None
        part, definition = found
        statements = list(own_nodes(definition))
        returns = [node for node in statements if isinstance(node, ast.Return) and node.value is not None]
        if len(returns) != 1:
            return None
        value = returns[0].value
        if isinstance(value, ast.Name) and part.single(value.id) is None:  # a name other functions assign too
            local = [node.value for node in statements if isinstance(node, ast.Assign) and any(
                isinstance(target, ast.Name) and target.id == value.id for target in node.targets)]
            value = local[0] if len(local) == 1 else value  # its own assignment, without the edits after it
        return part, value, returns[0].lineno

    def resolve(self, node: ast.AST | None, depth: int = 0) -> ast.AST | None:
        """A name followed to the one expression assigned to it."""
        while isinstance(node, ast.Name) and depth < 8 and self.single(node.id) is not None:
            node, depth = self.single(node.id), depth + 1
        return node

    def kwargs(self, call: ast.Call, depth: int = 0) -> tuple[dict[str, tuple[ast.AST, int]], bool]:
        """keyword -> (value, line), `**mapping` followed into dict literals, dict(...) calls and the keys set on
        them before the call (`cfg["x"] = ...`, `cfg.update(x=...)`); complete is False when some `**` could not be
        read (then an absent keyword may be there)."""
        found, complete = {}, True
        for keyword in call.keywords:
            if keyword.arg is not None:
                found[keyword.arg] = (keyword.value, keyword.value.lineno)
                continue
            inner, inner_complete = self.mapping(keyword.value, call.lineno, depth)
            found.update(inner)
            complete &= inner_complete
        return found, complete

    def mapping(self, node: ast.AST, before: int, depth: int = 0) -> tuple[dict[str, tuple[ast.AST, int]], bool]:
        """The literal keys of a dict expression: {...}, dict(...), {**a, ...}, a name assigned one of them and the
        keys set on that name above line ``before``; complete is False where a key cannot be read."""
        name = node.id if isinstance(node, ast.Name) else None
        key = (name or id(node), before, depth)  # memoised: `a0.update(a1)` written many times stays linear
        if key not in self._mappings:
            self._mappings[key] = ({}, False)  # a dict updated from itself is not read
            self._mappings[key] = self._mapping(node, name, before, depth)
        found, complete = self._mappings[key]
        return dict(found), complete

    def _mapping(self, node: ast.AST, name: str | None, before: int, depth: int):
        node = self.resolve(node)
        found, complete = {}, True
        if depth > 4:
            return found, False
        if isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values):
                if key is None:  # {**base, ...}
                    inner, inner_complete = self.mapping(value, before, depth + 1)
                    found.update(inner)
                    complete &= inner_complete
                elif isinstance(key, ast.Constant) and isinstance(key.value, str):
                    found[key.value] = (value, key.lineno)
                else:
                    complete = False
        elif self.imported_name(node) is not None:  # `from defaults import DEFAULTS`: read it there
            other, there = self.imported_name(node)
            inner, complete = other.mapping(ast.Name(there), 10 ** 9, depth + 1)
            found = {key: (value, before) for key, (value, _) in inner.items()}  # named at the use here
        elif isinstance(node, ast.Call) and self.short(node) != "dict" and self.returned_dict(node) is not None:
            part, value, line = self.returned_dict(node)  # TrainingArguments(**config()): the dict config() returns
            inner, complete = part.mapping(value, line, depth + 1)  # with the edits of it above the return
            found = inner if part is self else {key: (value, before) for key, (value, _) in inner.items()}
        elif isinstance(node, ast.Call) and self.short(node) == "dict" and len(node.args) <= 1:
            for argument in node.args:  # dict(base, x=1)
                inner, complete = self.mapping(argument, before, depth + 1)
                found.update(inner)
            inner, inner_complete = self.kwargs(node, depth + 1)
            found.update(inner)
            complete &= inner_complete
        else:
            return found, False
        for edit in self.edits.get(name, []) if name else []:
            if edit.lineno >= before:
                continue
            if isinstance(edit, (ast.Assign, ast.AnnAssign)):  # cfg["x"] = value
                targets = edit.targets if isinstance(edit, ast.Assign) else [edit.target]
                key = self.const(targets[0].slice) if len(targets) == 1 else UNKNOWN
                if isinstance(key, str):
                    found[key] = (edit.value, edit.lineno)
                else:
                    complete = False
            elif isinstance(edit, ast.Delete) or edit.func.attr in ("pop", "popitem", "clear"):
                keys = [self.const(target.slice) for target in edit.targets if isinstance(target, ast.Subscript)
                        and isinstance(target.value, ast.Name) and target.value.id == name] \
                    if isinstance(edit, ast.Delete) else [self.const(argument) for argument in edit.args[:1]]
                for key in keys:
                    if isinstance(key, str):
                        found.pop(key, None)
                if not keys or not all(isinstance(key, str) for key in keys):
                    found, complete = {}, False  # cfg.pop(old) in a loop: any key may be gone
            elif edit.func.attr in ("setdefault", "__setitem__"):
                key = self.const(edit.args[0]) if edit.args else UNKNOWN
                if isinstance(key, str) and len(edit.args) > 1:
                    found[key] = found[key] if edit.func.attr == "setdefault" and key in found else \
                        (edit.args[1], edit.lineno)
                else:
                    complete = False
            else:  # update({...}) or update(x=...)
                for argument in edit.args:
                    inner, inner_complete = self.mapping(argument, before, depth + 1)
                    found.update(inner)
                    complete &= inner_complete
                inner, inner_complete = self.kwargs(edit, depth + 1)
                found.update(inner)
                complete &= inner_complete
        return found, complete

    def imported_name(self, node: ast.AST) -> "tuple[Module, str] | None":
        """(module, name there) for a name imported from a project module and not assigned here (`from defaults
        import DEFAULTS`; `import defaults` and `defaults.DEFAULTS`)."""
        if isinstance(node, ast.Name) and node.id in self.linked and not self.assigned.get(node.id) and \
                self.linked[node.id][1]:
            return self.linked[node.id]
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in self.linked \
                and not self.assigned.get(node.value.id) and not self.linked[node.value.id][1]:
            return self.linked[node.value.id][0], node.attr
        return None

    def mentions(self, node: ast.AST | None, test, followed: set[str] | None = None) -> bool:
        """Whether ``test(subnode)`` holds anywhere in ``node``, names followed into what they were assigned. Each
        name is followed once: a name reassigned from itself many times would otherwise cost exponential time."""
        if node is None:
            return False
        followed = set() if followed is None else followed
        for sub in ast.walk(node):
            if test(sub):
                return True
            if isinstance(sub, ast.Name) and sub.id in self.assigned and sub.id not in followed:
                followed.add(sub.id)
                if any(self.mentions(value, test, followed) for value in self.assigned[sub.id]):
                    return True
        return False

    def statement(self, node: ast.AST) -> ast.AST:
        """The statement ``node`` is part of, and whether it sits in a comparison on the way there."""
        while not isinstance(node, ast.stmt) and id(node) in self.parent:
            node = self.parent[id(node)]
        return node

    def compared(self, node: ast.AST) -> bool:
        while not isinstance(node, ast.stmt) and id(node) in self.parent:
            node = self.parent[id(node)]
            if isinstance(node, (ast.Compare, ast.Assert)):
                return True
        return False

    def loop_variables(self, node: ast.AST) -> set[str]:
        """The names bound by the for loops and comprehensions around ``node`` in its function."""
        names: set[str] = set()
        while id(node) in self.parent and not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node = self.parent[id(node)]
            targets = [node.target] if isinstance(node, (ast.For, ast.AsyncFor)) else \
                [generator.target for generator in node.generators] if isinstance(
                    node, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)) else []
            names |= {sub.id for target in targets for sub in ast.walk(target) if isinstance(sub, ast.Name)}
        return names

    def calls_named(self, *names: str, suffix: str | None = None) -> list[ast.Call]:
        return [call for call in self.calls if self.short(call) in names
                or (suffix is not None and self.short(call).endswith(suffix))]

    # -- launch commands written as strings or argv lists
    def _read_launch_strings(self) -> None:
        seen: set[int] = set()
        for node in self.nodes:
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 4000 and \
                    id(node) not in self._prose:
                first = node.value.lstrip().split(" ", 1)[0]
                if launcher_name(first) or first in WRAPPERS or "\n" in node.value:
                    for launch in launches_in_shell(node.value, self.path, node.lineno):
                        if launch.launcher != "python" or launch.args:
                            self.launches.append(launch)
            elif isinstance(node, (ast.List, ast.Tuple, ast.BinOp)):
                if isinstance(node, ast.BinOp) and id(self.parent.get(id(node))) in seen:
                    continue  # a part of a longer `a + b + c`: read as the whole
                elements = self.argv_elements(node)
                seen.add(id(node))
                if not elements:
                    continue
                first = self.launch_word(elements[0])
                if launcher_name(first) or first in WRAPPERS:
                    elements += self.argv_growth(node)  # only a launcher's list: one walk of the module each
                    words = [first, *map(self.launch_word, elements[1:])]
                    launch = parse_launch(words, self.path, node.lineno, {})
                    if launch:
                        self.launches.append(launch)

    def argv_growth(self, node: ast.AST) -> list[ast.AST]:
        """What a list assigned to a name gets later in the module: `cmd += [...]`, `cmd.append(x)`,
        `cmd.extend([...])` (an element not known here for what cannot be read)."""
        assignment = self.parent.get(id(node))
        if not isinstance(assignment, ast.Assign) or len(assignment.targets) != 1 or \
                not isinstance(assignment.targets[0], ast.Name):
            return []
        name, grown = assignment.targets[0].id, []
        if self.stores[name] != 1 + sum(isinstance(later, ast.AugAssign) and isinstance(later.target, ast.Name) and
                                        later.target.id == name for later in self.nodes):
            return []  # bound again: which list is launched cannot be told
        for later in self.nodes:
            if getattr(later, "lineno", 0) <= assignment.lineno:
                continue
            if isinstance(later, ast.AugAssign) and isinstance(later.target, ast.Name) and later.target.id == name \
                    and isinstance(later.op, ast.Add):
                grown.append((later.lineno, later.col_offset, self.argv_elements(later.value, 1) or [ast.Name("")]))
            elif isinstance(later, ast.Call) and isinstance(later.func, ast.Attribute) and \
                    isinstance(later.func.value, ast.Name) and later.func.value.id == name and \
                    later.func.attr in ("append", "extend", "insert") and later.args:
                added = [later.args[0]] if later.func.attr == "append" else \
                    self.argv_elements(later.args[0], 1) or [ast.Name("")] if later.func.attr == "extend" else \
                    [ast.Name("")]
                grown.append((later.lineno, later.col_offset, added))
        return [element for _, _, added in sorted(grown, key=lambda item: item[:2]) for element in added]

    def argv_elements(self, node: ast.AST, depth: int = 0) -> list[ast.AST] | None:
        """The elements of an argv list: [...], base + [...], [*base, ...], a name assigned one of them."""
        node = self.resolve(node) if depth else node
        if depth > 4:
            return None
        if isinstance(node, (ast.List, ast.Tuple)):
            elements = []
            for element in node.elts:
                if isinstance(element, ast.Starred):
                    inner = self.argv_elements(element.value, depth + 1)
                    if inner is None:
                        return elements + [element] if elements else None  # the rest is not known here
                    elements += inner
                else:
                    elements.append(element)
            return elements
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            left = self.argv_elements(node.left, depth + 1)
            right = self.argv_elements(node.right, depth + 1)
            return None if left is None else left + (right if right is not None else [ast.Name("")])
        return None

    def launch_word(self, node: ast.AST) -> str:
        """One element of an argv list: its constant value, "python" for sys.executable, the script's file name for
        a path built around one (`str(HERE / "train.py")`, f"{root}/train.py"), else "$?": a value not known here."""
        value = self.const(node)
        if isinstance(node, ast.Call) and self.short(node) in ("str", "int") and len(node.args) == 1:
            value = self.const(node.args[0])  # str(NPROC), NPROC = 2
        if isinstance(value, str):
            return value
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
        if isinstance(node, ast.Attribute) and self.qualname(node) == "sys.executable":
            return "python"
        if not isinstance(node, ast.Starred):
            node = self.resolve(node)
            scripts = [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant)
                       and isinstance(sub.value, str) and sub.value.endswith(".py")]
            if len(scripts) == 1:
                return os.path.basename(scripts[0]) or "$?"
        return "$?"


def line_of(node: ast.AST) -> int:
    return getattr(node, "lineno", 1)


DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def own_nodes(function: ast.AST):
    """The nodes of a function's (or a module's) body, without those of the functions, lambdas and classes defined
    inside it, a definition written directly in the body included."""
    queue = [node for node in getattr(function, "body", []) if not isinstance(node, DEFINITIONS)]
    while queue:
        node = queue.pop()
        yield node
        queue += [child for child in ast.iter_child_nodes(node) if not isinstance(child, DEFINITIONS)]


def at(module: Module, part: Module, line: int):
    """Where a finding in ``part`` (a project module ``module`` imports, or itself) is reported."""
    return line if part is module else (part.path, line)


CAUSAL_LM = re.compile(r"CausalLM|LMHeadModel")
MASKED_LM = re.compile(r"MaskedLM")
SEQ2SEQ = re.compile(r"Seq2SeqLM|ForConditionalGeneration")


def is_true(value) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))


# ---------------------------------------------------------------- Transformers rules

ARGUMENT_CLASSES = ("TrainingArguments", "Seq2SeqTrainingArguments")


def builds_arguments(module: Module, call: ast.Call) -> bool:
    """TrainingArguments(...), Seq2SeqTrainingArguments(...), a library's class named so (GaudiTrainingArguments,
    derived from TrainingArguments) or a project class derived from one. A project's own class with another base (a
    @dataclass ExperimentTrainingArguments of its sweep settings) is not: its fields are not TrainingArguments'."""
    short = module.short(call)
    if not short.endswith("TrainingArguments") and short not in module.names:
        return False
    defined = module.project_classes
    return module.inherits(short, lambda name: name in ARGUMENT_CLASSES or (
        name.endswith("TrainingArguments") and name not in defined))


def forwarded_arguments(module: Module, site: ast.Call) -> list[tuple[ast.AST, dict, bool]]:
    """The training arguments a project function builds from what ``site`` passes it: `def make(**o): return
    TrainingArguments(**o)` called as make(output_dir="o", evaluation_strategy="steps"), or `def make(cfg):
    return TrainingArguments(**cfg)` called with a dict. Keywords written in the function, when it lives in another
    module, are reported at the call's line."""
    found = module.callee(site)
    if found is None:
        return []
    part, definition = found
    if id(definition) not in part.builders:  # a helper called from many lines is read once
        part.builders[id(definition)] = [
            node for node in own_nodes(definition) if isinstance(node, ast.Call) and builds_arguments(part, node)
            and any(keyword.arg is None for keyword in node.keywords)]
    inner_calls = part.builders[id(definition)]
    if not inner_calls:
        return []
    parameters = definition.args
    positional = [argument.arg for argument in [*parameters.posonlyargs, *parameters.args]]
    named = set(positional) | {argument.arg for argument in parameters.kwonlyargs}
    given, given_complete = module.kwargs(site)
    results = []
    for inner in inner_calls:
        kw, complete = {}, given_complete
        for keyword in inner.keywords:
            if keyword.arg is not None:
                value = keyword.value
                if part is not module:  # its names mean nothing here: keep the value only when it is a constant
                    constant = part.const(value)
                    value = ast.Constant(constant) if constant is not UNKNOWN else ast.Name("")
                kw[keyword.arg] = (value, keyword.value.lineno if part is module else site.lineno)
                continue
            unpacked = keyword.value.id if isinstance(keyword.value, ast.Name) else None
            if parameters.kwarg is not None and unpacked == parameters.kwarg.arg:  # **o: the site's other keywords
                kw.update((name, where) for name, where in given.items() if name not in named)
            elif unpacked in named:  # **cfg, a parameter: the dict the site passes for it
                index = positional.index(unpacked) if unpacked in positional else None
                passed = site.args[index] if index is not None and index < len(site.args) and not any(
                    isinstance(argument, ast.Starred) for argument in site.args[:index + 1]) else \
                    given.get(unpacked, (None,))[0]
                if passed is None:
                    complete = False
                    continue
                inner_kw, inner_complete = module.mapping(passed, site.lineno)
                kw.update(inner_kw)
                complete &= inner_complete
            else:
                complete = False
        results.append((site, kw, complete))
    return results


def training_arguments(module: Module) -> list[tuple[ast.AST, dict, bool]]:
    """(node, keywords, complete) per set of training arguments built: TrainingArguments, Seq2SeqTrainingArguments
    and a project class derived from one, a project function that passes its keywords on to one, and
    HfArgumentParser(...).parse_dict({...})."""
    found = []
    for call in module.calls:
        if builds_arguments(module, call):
            found.append((call, *module.kwargs(call)))
        elif isinstance(call.func, ast.Attribute) and call.func.attr == "parse_dict":
            parser = module.resolve(call.func.value)
            if isinstance(parser, ast.Call) and module.short(parser) == "HfArgumentParser":
                given = call.args[0] if call.args else module.kwargs(call)[0].get("args", (None,))[0]
                if given is not None:
                    found.append((call, *module.mapping(given, call.lineno)))
        elif isinstance(call.func, (ast.Name, ast.Attribute)) and (module.functions or module.linked):
            found += forwarded_arguments(module, call)
    return found


def argument_findings(module: Module, training: list):
    for call, kw, complete in training:
        for name, _what, _fix in REMOVED_ARGUMENTS:
            if name in kw:
                yield f"removed-{name}", kw[name][1], ""
        if module.const(kw.get("optim", (None,))[0]) == "adamw_hf":
            yield "optim-adamw-hf", kw["optim"][1], ""
        yield from best_model_findings(module, call, kw, complete)


def imported_findings(module: Module):
    """The rules that need nothing but the file, run on each project module ``module`` imports that was not given
    (metrics.py's evaluate.load("accuracy"), helpers.py's TrainingArguments(evaluation_strategy=...)): named at
    their own file and line. A given module is checked on its own."""
    for part in module.project[1:]:
        if part.found_nearby:
            for rule, line, note in [*argument_findings(part, training_arguments(part)), *evaluate_findings(part)]:
                yield rule, at(module, part, line), note


def transformers_findings(module: Module, launches: list[Launch]):
    training = training_arguments(module)
    yield from argument_findings(module, training)
    yield from imported_findings(module)
    for launch in launches:
        # the same arguments as HfArgumentParser flags on a command line
        for name, _what, _fix in REMOVED_ARGUMENTS:
            if launch.flag(name) is not None and hf_flags(launch, name):
                yield f"removed-{name}", launch, f"--{name} on the command line"
        if launch.flag("optim") == "adamw_hf" and hf_flags(launch, "optim"):
            yield "optim-adamw-hf", launch, "--optim adamw_hf on the command line"
    for call in module.calls_named(suffix="Trainer"):
        kw, _ = module.kwargs(call)
        if "tokenizer" in kw:
            yield "trainer-tokenizer", kw["tokenizer"][1], ""
    yield from sequence_classification_findings(module, training, launches)
    names = module.project_names  # an aliased import counts by what it stands for; model.py's classes count here
    causal = any(CAUSAL_LM.search(name) for name in names) or any(
        module.const(module.kwargs(call)[0].get("mlm", (None,))[0]) is False
        for call in module.calls_named("DataCollatorForLanguageModeling"))
    if causal and not any(MASKED_LM.search(name) for name in names):
        yield from causal_lm_findings(module)
    yield from evaluate_findings(module)
    yield from token_label_findings(module)
    yield from resume_findings(module, training, launches)
    yield from load_dataset_findings(module, launches)
    yield from seq2seq_findings(module, training, launches)


OTHER_PARSERS = {"ArgumentParser", "argparse", "click", "typer", "fire", "argv", "docopt", "jsonargparse"}
HF_PARSERS = {"HfArgumentParser", "TrlParser", "parse_args_into_dataclasses"}


def hf_flags(launch: Launch, flag: str) -> bool:
    """Whether the script a launch runs reads its flags into TrainingArguments: it uses HfArgumentParser, or it
    cannot be seen here (or parses no flags that can be seen), or it passes what its own parser read on whole
    (`TrainingArguments(**vars(args))`). A script that reads them with its own parser and picks them (argparse's
    --warmup_ratio, passed on as warmup_steps=) never gives them to TrainingArguments."""
    runs = launch.runs
    if not isinstance(runs, Module):
        return True
    names = runs.project_names
    return bool(HF_PARSERS & names) or not (OTHER_PARSERS & names) or any(
        forwards_parsed(part, flag) for part in runs.project)


def flag_removed(module: Module, flag: str) -> bool:
    """Whether the module takes a parsed flag's key out of a dict or never has it: something.pop("flag"), del
    something["flag"], the same over a loop of literal keys (`for k in ("flag", ...): d.pop(k, None)`),
    delattr(args, "flag"), or `add_argument("--flag", dest="other")`, which parses it under another key."""
    loop_names = {node.target.id for node in module.nodes if isinstance(node, ast.For) and isinstance(
        node.target, ast.Name) and isinstance(module.resolve(node.iter), (ast.Tuple, ast.List, ast.Set)) and
        any(module.const(element) == flag for element in module.resolve(node.iter).elts)}  # LEGACY = (...) too
    named = lambda node: (isinstance(node, ast.Constant) and node.value == flag) or (  # noqa: E731
        isinstance(node, ast.Name) and node.id in loop_names)
    renamed = lambda call: called_name(call.func) == "add_argument" and any(  # noqa: E731
        isinstance(module.const(argument), str) and module.const(argument).lstrip("-").replace("-", "_") == flag
        for argument in call.args) and any(keyword.arg == "dest" and module.const(keyword.value) not in (flag, UNKNOWN)
                                           for keyword in call.keywords)
    return any((isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop" and
                node.args and named(node.args[0])) or
               (isinstance(node, ast.Call) and called_name(node.func) == "delattr" and len(node.args) == 2 and
                named(node.args[1])) or
               (isinstance(node, ast.Call) and renamed(node)) or
               (isinstance(node, ast.Delete) and any(isinstance(target, ast.Subscript) and named(target.slice)
                                                     for target in node.targets))
               for node in module.nodes)


def forwards_parsed(module: Module, flag: str) -> bool:
    """Whether a module passes its parsed flag on to TrainingArguments: TrainingArguments(**vars(args)),
    (**args.__dict__), a copy or merge of them, or a helper that builds them given the same; not when the flag's key
    is popped or deleted first, or a comprehension with a condition picks the keys (or renames them)."""
    parsed = lambda node: (isinstance(node, ast.Call) and called_name(node.func) == "vars") or (  # noqa: E731
        isinstance(node, ast.Attribute) and node.attr == "__dict__")
    picked = lambda node: isinstance(node, ast.DictComp) and (  # noqa: E731 - keys filtered or renamed
        any(part.ifs for part in node.generators) or not isinstance(node.key, ast.Name))
    def passes(value: ast.AST) -> bool:  # the value, or the edits of the dict it names (opts.update(vars(a)))
        edits = module.edits.get(value.id, []) if isinstance(value, ast.Name) else []
        return any(module.mentions(part, parsed) for part in [value, *edits])

    return not any(flag_removed(part, flag) for part in module.project) and any(
        keyword.arg is None and passes(keyword.value) and not module.mentions(keyword.value, picked)
        for node, _, _ in training_arguments(module) if isinstance(node, ast.Call) for keyword in node.keywords)


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


def divides_by_items(part: Module, function: ast.AST | None) -> bool:
    """Whether a loss function divides by num_items_in_batch (the Trainer takes any compute_loss_func's loss as
    already scaled: a mean that only passes the count on is too large). A callable this checker cannot read (a
    method, an object, a function of a module not given) counts as dividing: no finding rests on a guess."""
    if isinstance(function, ast.Call) and called_name(function.func) == "partial" and function.args:
        function = part.resolve(function.args[0])  # functools.partial(loss_fn, weight=2.0)
    if isinstance(function, (ast.Name, ast.Attribute)):
        name = called_name(function)
        defined = [other.functions[name][0] for other in part.project if name in other.functions]
        if not defined:
            return True
        function = defined[0]
    if not isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
        return True
    counts = {"num_items_in_batch"} | {  # n = num_items_in_batch
        target.id for node in ast.walk(function) if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name)
        and node.value.id == "num_items_in_batch" for target in node.targets if isinstance(target, ast.Name)}
    count = lambda node: any(  # noqa: E731 - num_items_in_batch, a name for it, kwargs["num_items_in_batch"]
        (isinstance(sub, ast.Name) and sub.id in counts) or (isinstance(sub, ast.Constant) and sub.value ==
                                                             "num_items_in_batch") for sub in ast.walk(node))
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) and count(node.right):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) and count(node.value):  # loss /= n
            return True
        if isinstance(node, ast.Call) and called_name(node.func) in ("div", "divide", "true_divide") and \
                node.args and count(node.args[-1]):  # torch.div(loss, n), loss.div(n)
            return True
    return False


def loss_scaling_fixes(part: Module) -> set[str]:
    """What a module does about the sequence-classification loss scaling: "accumulation" and "processes" (the
    model's accepts_loss_kwargs, the built Trainer's model_accepts_loss_kwargs, a compute_loss_func dividing by
    num_items_in_batch), "accumulation" alone (loss_is_scaled_for_ga = False, a Trainer's own compute_loss dividing
    by num_items_in_batch: compute_loss still multiplies by the process count). Trainer.__init__ reads
    accepts_loss_kwargs once, so a model flag set after Trainer(...), a Trainer class attribute or a value set before
    super().__init__ fixes nothing, and the Trainer never reads a config's or a Trainer's accepts_loss_kwargs."""
    both, accumulation = {"accumulation", "processes"}, {"accumulation"}
    scope = {"accepts_loss_kwargs": both, "model_accepts_loss_kwargs": both, "loss_is_scaled_for_ga": accumulation}
    fixes = set()
    for node in part.nodes:
        if isinstance(node, ast.Assign) and part.const(node.value) is False:
            for target in node.targets:
                if isinstance(target, ast.Attribute) and target.attr in scope and not overwritten(part, node, target):
                    fixes |= scope[target.attr]
        elif isinstance(node, ast.Call) and part.short(node) == "setattr" and len(node.args) == 3 and \
                part.const(node.args[2]) is False and part.const(node.args[1]) in scope and \
                not overwritten(part, node, ast.Attribute(node.args[0], part.const(node.args[1]))):
            fixes |= scope[part.const(node.args[1])]
        elif isinstance(node, ast.keyword) and node.arg == "compute_loss_func" and \
                divides_by_items(part, part.resolve(node.value)):
            fixes |= both
    for definitions in part.classes.values():
        for definition in definitions:
            trainer = any(called_name(base).endswith("Trainer") for base in definition.bases)
            for statement in definition.body:
                if trainer and isinstance(statement, ast.FunctionDef) and statement.name == "compute_loss" and \
                        divides_by_items(part, statement):
                    fixes |= accumulation  # its own loss over the window's items; not x the process count
                targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target] \
                    if isinstance(statement, ast.AnnAssign) else []
                for target in targets if part.const(getattr(statement, "value", None)) is False else []:
                    name = target.id if isinstance(target, ast.Name) else None
                    if name == "loss_is_scaled_for_ga" or (name == "accepts_loss_kwargs" and not trainer):
                        fixes |= scope[name]  # class Classifier(BertForSequenceClassification): accepts_... = False
    return fixes


def overwritten(part: Module, setting: ast.AST, target: ast.Attribute) -> bool:
    """Whether a loss-scaling flag set here is read by nothing: on a config (model.config.accepts_loss_kwargs),
    self.model_accepts_loss_kwargs in an __init__ before super().__init__(...) (Trainer's sets it again), or the
    model's accepts_loss_kwargs after a Trainer was built on that model in the same function or module body."""
    holder = target.value
    if isinstance(holder, (ast.Name, ast.Attribute)) and called_name(holder).lower().endswith("config"):
        return True
    scope = setting
    while id(scope) in part.parent and not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef)):
        scope = part.parent[id(scope)]
    earlier_calls = [node for node in own_nodes(scope) if isinstance(node, ast.Call) and node.lineno < setting.lineno]
    if target.attr == "model_accepts_loss_kwargs":
        later_init = any(isinstance(call.func, ast.Attribute) and call.func.attr == "__init__" and
                         call.lineno > setting.lineno for call in ast.walk(scope) if isinstance(call, ast.Call))
        return isinstance(scope, ast.FunctionDef) and scope.name == "__init__" and later_init
    if target.attr != "accepts_loss_kwargs" or not isinstance(holder, ast.Name):
        return False
    given = lambda call: [keyword.value for keyword in call.keywords if keyword.arg == "model"] + call.args[:1]  # noqa: E731
    built = [call.lineno for call in earlier_calls if part.short(call).endswith("Trainer") and any(
        isinstance(model, ast.Name) and model.id == holder.id for model in given(call))]
    rebound = [node.lineno for node in (own_nodes(scope) if built else []) if isinstance(node, ast.Assign) and any(
        isinstance(name, ast.Name) and name.id == holder.id for name in node.targets)]  # model = another model
    return any(not any(line < bound < setting.lineno for bound in rebound) for line in built)


def sequence_classification_findings(module: Module, training: list, launches: list[Launch]):
    models = [node for part in module.project for node in part.sequence_classifiers()]  # here or in model.py
    if not models:
        return
    fixes = set().union(*(loss_scaling_fixes(part) for part in module.project))  # here or in an imported module
    for call, kw, _ in training if "accumulation" not in fixes else []:
        steps = module.const(kw.get("gradient_accumulation_steps", (None,))[0])
        if isinstance(steps, int) and steps > 1:
            yield "seqcls-loss-scaling", kw["gradient_accumulation_steps"][1], f"gradient_accumulation_steps={steps}"
    for launch in launches:
        steps = launch.flag("gradient_accumulation_steps")
        several = (launch.processes or 1) > 1 and "processes" not in fixes
        if several or ("accumulation" not in fixes and (count(steps) or 1) > 1):
            yield "seqcls-loss-scaling", launch, f"launched with {launch.processes} processes" \
                if several else f"--gradient_accumulation_steps {steps}"


def is_eos(part: Module, node: ast.AST) -> bool:
    """Whether an expression is the tokenizer's EOS: tokenizer.eos_token(_id), a name assigned it, `pad or eos`,
    `eos if pad is None else pad`, convert_tokens_to_ids(eos); memoised per expression (a name assigned from itself
    is not)."""
    key = id(node)
    if key not in part.eos:
        part.eos[key] = False
        resolved = part.resolve(node)
        part.eos[key] = (is_eos(part, resolved.body) or is_eos(part, resolved.orelse)) if isinstance(
            resolved, ast.IfExp) else any(is_eos(part, value) for value in resolved.values) if isinstance(
            resolved, ast.BoolOp) else is_eos(part, resolved.args[0]) if isinstance(resolved, ast.Call) and \
            called_name(resolved.func) == "convert_tokens_to_ids" and resolved.args else \
            isinstance(resolved, ast.Attribute) and resolved.attr in ("eos_token", "eos_token_id")
    return part.eos[key]


def tokenizer_side(target: ast.AST) -> bool:
    """A tokenizer's pad_token(_id); model.generation_config.pad_token_id is a model's, not a tokenizer's."""
    return isinstance(target, ast.Attribute) and target.attr in ("pad_token", "pad_token_id") and not (
        (isinstance(target.value, ast.Attribute) and target.value.attr.lower().endswith("config")) or
        (isinstance(target.value, ast.Name) and target.value.id.lower().endswith("config")))


def pad_eos_lines(part: Module) -> list[int]:
    """The lines of a module that make the tokenizer's pad token its EOS, unless a pad token of its own is set below
    them; read once per module (every module of a project reads those of the modules it imports)."""
    if part.pad_eos is None:
        dedicated = [node.lineno for node in part.nodes if isinstance(node, ast.Dict) and any(
            isinstance(key, ast.Constant) and key.value == "pad_token" and not is_eos(part, value)
            for key, value in zip(node.keys, node.values))]
        last_dedicated = max(dedicated, default=0)
        lines = []
        for node in sorted((node for node in part.nodes if hasattr(node, "lineno")), key=line_of):
            if node.lineno < last_dedicated:  # replaced later by a pad token of its own
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
                node, ast.AnnAssign) and node.value is not None else []
            if any(map(tokenizer_side, targets)) and is_eos(part, node.value):
                lines.append(node.lineno)
            elif isinstance(node, ast.keyword) and node.arg == "pad_token" and is_eos(part, node.value):
                lines.append(node.value.lineno)
            elif isinstance(node, ast.Call) and called_name(node.func) == "setattr" and len(node.args) == 3 and \
                    part.const(node.args[1]) in ("pad_token", "pad_token_id") and \
                    tokenizer_side(ast.Attribute(node.args[0], part.const(node.args[1]))) and \
                    is_eos(part, node.args[2]):
                lines.append(node.lineno)  # setattr(tokenizer, "pad_token", eos)
            elif isinstance(node, ast.Dict) and any(
                    isinstance(key, ast.Constant) and key.value == "pad_token" and is_eos(part, value)
                    for key, value in zip(node.keys, node.values)):
                lines.append(node.lineno)
        part.pad_eos = lines
    return part.pad_eos


def masks_labels_by_pad_id(part: Module) -> bool:
    """Labels masked where they equal the pad id, by hand: `labels[labels == tok.pad_token_id] = -100`,
    `.masked_fill(ids.eq(pad_id), -100)` in a statement that writes -100, or a loss given
    `ignore_index=tok.pad_token_id` (a pad id held in a name counts; `pad_token_id is None` or a comparison that
    writes no -100, such as counting generated tokens, does not)."""
    def pad_id(node: ast.AST) -> bool:
        node = part.resolve(node)
        return isinstance(node, ast.Attribute) and node.attr == "pad_token_id"

    def writes_ignored_label(node: ast.AST) -> bool:
        """A -100 (or a name holding it, IGNORE_INDEX) in the smallest expression around the comparison that has
        one, up to its statement; a dict's other value is another field (an attention mask beside the labels)."""
        while True:
            if any((isinstance(sub, ast.UnaryOp) and isinstance(sub.op, ast.USub) or isinstance(sub, ast.Name))
                   and part.const(sub) == -100 for sub in ast.walk(node)):
                return True
            parent = part.parent.get(id(node))
            if isinstance(node, ast.stmt) or parent is None or isinstance(parent, ast.Dict):
                return False
            node = parent

    for node in part.nodes:
        if isinstance(node, ast.keyword) and node.arg == "ignore_index" and pad_id(node.value):
            return True
        compared = isinstance(node, ast.Compare) and isinstance(node.ops[0], (ast.Eq, ast.NotEq)) and any(
            map(pad_id, [node.left, *node.comparators]))
        called = isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "eq", "ne") and any(map(pad_id, node.args))
        if (compared or called) and writes_ignored_label(node):
            return True
    return False


def causal_lm_findings(module: Module):
    """pad_token = eos_token here or in a project module this one imports (the tokenizer set up in data.py for the
    causal LM trained here), and math.exp(eval_loss) here."""
    names = module.project_names
    # what masks every EOS label when pad is EOS: the LM collator, or labels masked by the pad id by hand
    # (labels[labels == tokenizer.pad_token_id] = -100); a collator masking by attention_mask, the seq2seq
    # collator (it pads labels with -100) or generation alone keep them
    trains = "DataCollatorForLanguageModeling" in names or any(map(masks_labels_by_pad_id, module.project))
    for part in module.project if trains else []:
        for line in pad_eos_lines(part):
            yield "pad-token-eos", at(module, part, line), ""
    eval_loss = lambda node: (isinstance(node, ast.Constant) and node.value == "eval_loss") or (  # noqa: E731
        isinstance(node, ast.Attribute) and node.attr == "eval_loss") or (
        isinstance(node, ast.Name) and node.id == "eval_loss")
    called_perplexity = lambda node: any(re.search(r"perplexity|ppl", text, re.I) for text in (  # noqa: E731
        [sub.value for sub in ast.walk(node) if isinstance(sub, ast.Constant) and isinstance(sub.value, str)]
        + [sub.id for sub in ast.walk(node) if isinstance(sub, ast.Name)]
        + [sub.attr for sub in ast.walk(node) if isinstance(sub, ast.Attribute)]))
    for call in module.calls_named("exp"):  # reported as the perplexity: not a bound checked in a comparison
        if call.args and module.mentions(call.args[0], eval_loss) and not module.compared(call) and \
                called_perplexity(module.statement(call)):
            yield "perplexity-exp-eval-loss", call.lineno, ""


def local_file(path: Path) -> bool:
    """Whether a path named in checked code is there: a name the system refuses (too long, a NUL) is not."""
    try:
        return path.exists()
    except (OSError, ValueError):
        return False


def evaluate_findings(module: Module):
    for call in module.calls:
        function = module.qualname(call.func)
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


def token_label_findings(module: Module):
    if not module.calls_named("DataCollatorForTokenClassification"):
        return
    written: dict[str, int] = {}
    for node in module.nodes:
        keys = []
        if isinstance(node, ast.Dict):
            keys = [(key, key) for key in node.keys if key is not None]
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Store):
            keys = [(node.slice, node)]
        elif isinstance(node, ast.Call) and module.short(node) in ("rename_column", "add_column") and node.args:
            keys = [(node.args[-1 if module.short(node) == "rename_column" else 0], node)]
        for key, where in keys:
            value = module.const(key)
            if value in ("label", "labels"):
                written.setdefault(value, line_of(where))
    if "label" in written and "labels" not in written:
        yield "token-collator-label", written["label"], ""


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


def called_name(node: ast.AST) -> str:
    return node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else ""


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
    for call, value in resumes:
        chosen = module.resolve(value)  # True if <a look at a data file or a flag> else None
        when_true = isinstance(chosen, ast.IfExp) and any(  # True where the test does not say a checkpoint is there
            module.const(branch) is True and not guard_sides(module, chosen.test)[0 if branch is chosen.body else 1]
            for branch in (chosen.body, chosen.orelse))
        if (module.const(value) is True or when_true) and not checkpoint_guarded(module, call) and \
                not checkpoint_guarded(module, value):  # kwargs["resume_from_checkpoint"] = True under a look
            yield "resume-true-unconditional", call.lineno, ""
        last = lambda node: isinstance(node, ast.Call) and module.short(node) == "get_last_checkpoint"  # noqa: E731
        if module.mentions(value, last) and not any("trainer_state.json" in text for text in module.project_strings):
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


def offline_settings(module: Module) -> list[tuple[int, str, object]]:
    """(line, variable, value) per offline variable the module sets: os.environ["HF_HUB_OFFLINE"] = "1",
    setdefault(...), update(...), putenv(...)."""
    found: list[tuple[int, str, object]] = []
    for node in module.nodes if set(OFFLINE_NAMES) & module.strings else []:
        pairs = []
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            pairs = [(node.targets[0].slice, node.value)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "setdefault", "putenv", "update", "__setitem__"):
            if node.func.attr == "update":
                pairs = [(ast.Constant(key), value) for key, (value, _) in module.kwargs(node)[0].items()]
                pairs += [(key, value) for arg in node.args if isinstance(arg, ast.Dict)
                          for key, value in zip(arg.keys, arg.values) if key]
            elif node.args:
                pairs = [(node.args[0], node.args[1] if len(node.args) > 1 else None)]
        for key, value in pairs:
            if module.const(key) in OFFLINE_NAMES:
                found.append((node.lineno, module.const(key), module.const(value)))
    return found


def load_dataset_findings(module: Module, launches: list[Launch]):
    imports = [node.lineno for node in module.nodes if (isinstance(node, ast.Import) and any(
        alias.name.split(".")[0] == "datasets" for alias in node.names)) or (
        isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "datasets")]
    first_import = min(imports, default=0) or 10**9
    settings = [(name, value) for line, name, value in offline_settings(module) if line < first_import]
    settings += [(name, value) for line, imported in module.imported if line < first_import  # import setup_env
                 for _, name, value in offline_settings(imported)]
    settings += [(name, launch.env[name]) for launch in launches for name in OFFLINE_NAMES if name in launch.env]
    # datasets reads HF_DATASETS_OFFLINE when it is set, else HF_HUB_OFFLINE; either is on only for 1/on/yes/true
    if any(offline_value(value) for _, value in settings) and not any(
            name == "HF_DATASETS_OFFLINE" and not offline_value(value) for name, value in settings):
        return
    local_builders = {"json", "csv", "text", "parquet", "arrow", "pandas", "imagefolder", "audiofolder", "xml", "sql",
                      "webdataset"}
    for call in module.calls:
        if not module.qualname(call.func).startswith("datasets.") or module.short(call) != "load_dataset":
            continue
        kw, _ = module.kwargs(call)
        builder = module.const(call.args[0] if call.args else kw.get("path", (None,))[0])
        if "data_files" in kw or "data_dir" in kw or builder in local_builders or (
                isinstance(builder, str) and builder.startswith((".", "/", "~"))):
            yield "load-dataset-online", call.lineno, ""


def seq2seq_findings(module: Module, training: list, launches: list[Launch]):
    for call, kw, complete in training:
        if is_true(module.const(kw.get("predict_with_generate", (None,))[0])) and complete and \
                "generation_max_length" not in kw and "generation_config" not in kw:
            yield "generate-max-length", kw["predict_with_generate"][1], ""
    for launch in launches:  # --predict_with_generate on the command line, the length neither there nor in the code
        if is_true(launch.flag("predict_with_generate")) and launch.flag("generation_max_length") is None and \
                launch.flag("generation_config") is None and not {"generation_max_length", "generation_config"} & (
                    module.project_names | module.project_strings):
            yield "generate-max-length", launch, "--predict_with_generate on the command line"
    if not any(isinstance(call.func, ast.Attribute) and call.func.attr == "predict" for call in module.calls):
        return
    for call in module.calls_named("Trainer"):
        model = module.resolve(module.kwargs(call)[0].get("model", (None,))[0])
        if model is not None and not module.qualname(call.func).startswith("composer") and any(
                SEQ2SEQ.search(module.qualname(sub)) for sub in ast.walk(model) if isinstance(sub, ast.Attribute)):
            yield "seq2seq-plain-trainer", call.lineno, ""


# ---------------------------------------------------------------- Composer rules

WALL_CLOCK = re.compile(r"^\s*(\d+(\.\d*)?\s*(h|hr|m|min|s|sec|d)\s*)+$", re.I)
TIME_STRING = re.compile(r"^\s*[0-9.eE+-]+\s*([a-zA-Z]+)\s*$")
TIME_UNITS = {"ITERATION": "iter", "EPOCH": "ep", "BATCH": "ba", "SAMPLE": "sp", "TOKEN": "tok", "DURATION": "dur",
              "SECOND": "sec"}  # composer.core.TimeUnit
PADDING = {"attention_mask", "pad_sequence", "padding_value", "pad_token_id", "DataCollatorWithPadding",
           "DataCollatorForLanguageModeling", "DataCollatorForSeq2Seq", "DataCollatorForTokenClassification"}
ITERABLE = ("IterableDataset", "StreamingDataset", "StreamingTextDataset", "WebDataset", "DataPipe",
            "IterDataPipe", "IterableDatasetDict")  # a sampler does not apply: the dataset shards itself
SCORED_MODELS = ("ComposerClassifier", "HuggingFaceModel", "MMDetModel")  # they define get_metrics (HuggingFaceModel
# reports metrics only when given metrics= or eval_metrics=: `scored` reads its call)


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
    imports."""
    names = module.project_names | module.project_strings
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
    trainers = [call for call in module.calls_named("Trainer")
                if not module.qualname(call.func).startswith("transformers")]
    for launch in launches:
        if device == "cpu" and launch.launcher == "composer" and launch.option("-n", "--nproc") is None and \
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
        if "load_path" in kw and (ignores_model_keys(module, kw.get("load_ignore_keys")) or
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
        if complete and "optimizers" not in kw and ("train_dataloader" in kw or "max_duration" in kw):
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


# ---------------------------------------------------------------- files, the run

def gpu_visible() -> bool:
    """A CUDA device is visible, judged without importing torch: the driver's device files, not hidden."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(Path("/dev").glob("nvidia[0-9]*"))


def skill_name() -> str | None:
    """The skill this copy belongs to: the name in the SKILL.md above its scripts folder."""
    try:
        text = (HERE.parent / "SKILL.md").read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^name:\s*(\S+)\s*$", text, re.M)
    return match[1] if match else None


SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "dist-packages", "venv", ".venv"}


def input_files(paths: list[str], unreadable: list[str] | None = None) -> list[Path]:
    """The files to read under ``paths``; a folder the walk cannot list is added to ``unreadable`` (never skipped
    silently)."""
    found = []
    for given in paths:
        path = Path(given)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            mode = None
        except (OSError, ValueError) as exc:  # a folder above it cannot be searched, a name too long
            reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
            raise SmokeError(f"{shown(given)}: cannot be read ({reason})", EXIT_USAGE) from None
        if mode is not None and stat.S_ISDIR(mode):
            def skipped(exc: OSError) -> None:
                reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
                if unreadable is not None:
                    unreadable.append(f"{shown(str(exc.filename or given))}: folder cannot be read ({reason})")

            for folder, dirs, files in os.walk(path, onerror=skipped):
                dirs[:] = sorted(name for name in dirs if not name.startswith(".") and name not in SKIP_DIRS)
                found += [Path(folder) / name for name in sorted(files) if name.endswith((".py", *SHELL_SUFFIXES))]
        elif mode is not None and stat.S_ISREG(mode):
            found.append(path)
        elif mode is not None:
            raise SmokeError(f"{given!r} is not a regular file or folder (a FIFO or device is never read)", EXIT_USAGE)
        elif os.path.islink(path):
            raise SmokeError(f"{given!r} is a dangling symbolic link; give a file or folder to read", EXIT_USAGE)
        else:
            raise SmokeError(f"{given!r}: no such file or folder; give Python files, shell scripts or folders",
                             EXIT_USAGE)
    return found


SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")  # a Slurm job script is a shell script


def is_shell(path: Path, text: str) -> bool:
    first = text.split("\n", 1)[0]
    return path.suffix in SHELL_SUFFIXES or (first.startswith("#!") and "sh" in first and "python" not in first)


def read(path: Path) -> str:
    """The text of a file, decoded as Python decodes it (a PEP 263 coding line, a UTF-8 byte-order mark, else UTF-8;
    shell scripts as UTF-8). Opened without blocking and checked on the open file: a FIFO or device put in its place
    after it was listed is named, never read (a FIFO would block, /dev/zero never ends)."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise ValueError("not a regular file: never read")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1_000_000} MB: not a training script")
    if b"\0" in data:
        raise ValueError("holds NUL bytes: not a text file")
    first = data.split(b"\n", 1)[0]
    if path.suffix in SHELL_SUFFIXES or (first.startswith(b"#!") and b"sh" in first and b"python" not in first):
        return data.decode("utf-8-sig", errors="replace")  # bash runs a latin-1 byte in a comment: so read it
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # a coding line that names no codec Python has, or bytes that are not UTF-8 without one
        message = " ".join(str(exc.msg).split())
        raise ValueError(message if "unknown encoding" in message else
                         "not UTF-8, and no PEP 263 coding line names its encoding") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid {encoding} ({exc.reason} at byte {exc.start})") from None


def shown(path: str) -> str:
    """A path as a check name or an error line shows it: as it is, or as a Python string literal (repr) when it
    holds ':', '@', a quote, a backslash or a character that is not printable (a newline), so that one finding stays
    one line and RULE@PATH:LINE splits at the first '@' and the last ':'."""
    return repr(path) if not path.isprintable() or any(char in path for char in ":@'\"\\") else path


MAX_FOUND_MODULES = 40  # project modules read from disk because a given file imports them, per run
MAX_FOUND_BYTES = 1_000_000  # a larger one is a library's, not the project's
MAX_PROJECT = 40  # project modules looked through for one module


class Project:
    """The Python files of one run, indexed by resolved path: a launch finds the file it runs, and a module the
    project modules it imports (given in the run, or found next to the importing file), in one lookup each."""

    def __init__(self, modules: dict[str, Module]):
        self.resolved: dict[str, Path] = {}
        self.given: dict[Path, Module] = {}
        for module in modules.values():
            self.given.setdefault(self.resolve(module.path), module)
        self.files: dict[Path, Module | None] = dict(self.given)  # every file looked at, by resolved path
        self.at: dict[str, Module | None] = {}  # the same, by the path as written
        self.imports: dict[int, list[tuple[int, Module]]] = {}
        self.found = 0

    def resolve(self, path: str | Path) -> Path:
        key = str(path)
        if key not in self.resolved:
            try:
                self.resolved[key] = Path(key).resolve()
            except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL byte in the path
                self.resolved[key] = Path(os.path.abspath(key))
        return self.resolved[key]

    def launched(self, launch: Launch) -> Module | None:
        """The given module a launch runs: its script relative to the launching file's folder, or to the folder
        the checker runs in."""
        for candidate in (Path(launch.path).parent / launch.script, Path(launch.script)):
            module = self.given.get(self.resolve(candidate))
            if module is not None:
                return module
        return None

    def script_next_to(self, launch: Launch) -> Module | None:
        """The script a launch runs, read from the launching file's folder when it was not given."""
        if not launch.script or "$" in launch.script:
            return None
        try:
            module = self.module_at(Path(launch.path).parent / launch.script)
            if module is not None and len(module.project) == 1:
                self.link(module)
        except (OSError, ValueError, RecursionError):
            return None
        except Exception:  # noqa: BLE001 - a defect of this checker on a file not given: the launch is read alone
            return None
        return module

    def module_at(self, file: Path) -> Module | None:
        key = str(file)
        if key not in self.at:
            self.at[key] = None
            if os.path.isfile(key):  # most imports are of libraries: one stat, then nothing
                real = self.resolve(file)
                if real not in self.files:
                    self.files[real] = None
                    if self.found < MAX_FOUND_MODULES and os.path.getsize(key) <= MAX_FOUND_BYTES and \
                            not SKIP_DIRS & set(real.parts):  # a library's files are not the project
                        self.found += 1
                        try:
                            self.files[real] = Module(key, ast.parse(read(file), filename=key), read_launches=False)
                        except (OSError, UnicodeDecodeError, ValueError, SyntaxError, RecursionError, MemoryError):
                            pass  # not given: a file next to it that cannot be read is no error of this run
                self.at[key] = self.files[real]
        return self.at[key]

    def imports_of(self, module: Module) -> list[tuple[int, Module]]:
        """(line, module) per project module that ``module`` imports: a .py file or package of that name in the
        importing file's folder (or above it, for a package's absolute imports)."""
        if id(module) in self.imports:
            return self.imports[id(module)]
        folder = Path(module.path).parent
        roots = [folder]
        while os.path.isfile(roots[-1] / "__init__.py") and len(roots) < 5:
            roots.append(roots[-1].parent)
        for entry, relative in sys_path_entries(module):
            # the project's own folder put on sys.path (found from the file, or holding a given file); a library's
            # (/opt/llm-foundry) is not the project
            inside = relative or any(self.resolve(entry) in path.parents for path in self.given)
            module.own_sys_path |= inside
            if inside and entry is not None and entry not in roots:
                roots.append(entry)
        found = []
        for node in module.nodes:
            candidates = []  # (a path without .py, the local name it binds, the name it stands for there)
            if isinstance(node, ast.Import):
                candidates = [(root.joinpath(*alias.name.split(".")), alias.asname or (
                    alias.name if "." not in alias.name else None), "") for alias in node.names for root in roots]
                dotted = {root.joinpath(*alias.name.split(".")): alias.name for alias in node.names
                          if "." in alias.name and not alias.asname for root in roots}
            elif isinstance(node, ast.ImportFrom) and node.level <= len(folder.parents) + 1:
                bases = ([folder.parents[node.level - 2]] if node.level > 1 else [folder]) if node.level else roots
                for base in bases:
                    package = base.joinpath(*node.module.split(".")) if node.module else base
                    candidates += [(package, "*" if any(alias.name == "*" for alias in node.names) else None, "")]
                    candidates += [(package / alias.name, alias.asname or alias.name, "") for alias in node.names
                                   if alias.name != "*"]
                    names = [(alias.asname or alias.name, alias.name) for alias in node.names if alias.name != "*"]
                    candidates += [(package, local, name) for local, name in names]
            for candidate, local, name in candidates:
                for file in ([candidate.with_name(candidate.name + ".py")] if candidate.name else []) + [
                        candidate / "__init__.py"]:
                    imported = self.module_at(file)
                    if imported is not None and imported is not module:
                        if local in (None, "*") or not name:
                            found.append((node.lineno, imported))
                        if local == "*":  # from util import *: each function and top-level name of it
                            for defined in [*imported.functions, *imported.assigned]:
                                module.linked.setdefault(defined, (imported, defined))
                        elif local is not None and (not name or name in imported.names or name in imported.imports):
                            module.linked.setdefault(local, (imported, name))
                        if isinstance(node, ast.Import) and candidate in dotted:
                            module.dotted.setdefault(dotted[candidate], imported)
        self.imports[id(module)] = found
        module._const_names.clear()  # names imported from project modules are read there from now on
        return found

    def link(self, module: Module) -> None:
        """Set ``module.project`` to it and the project modules it imports, directly or through each other."""
        module.imported = self.imports_of(module)
        seen, queue = {id(module)}, [imported for _, imported in module.imported]
        while queue and len(module.project) < MAX_PROJECT:
            imported = queue.pop(0)
            if id(imported) not in seen:
                seen.add(id(imported))
                module.project.append(imported)
                queue += [further for _, further in self.imports_of(imported)]


def check_sources(sources: dict[str, str], skill: str, device: str) -> tuple[list[Finding], list[str]]:
    """Findings for ``sources`` (display path -> text; a path ending in .sh, .bash, .sbatch or .slurm is a shell script) and the files
    that could not be parsed, each with why."""
    findings, broken = check_all(sources, skill, device)
    return findings, list(broken.values())


def check_all(sources: dict[str, str], skill: str, device: str) -> tuple[list[Finding], dict[str, str]]:
    """check_sources' work, with the cyclic garbage collector paused: ast.parse makes many objects, and each
    collection they set off walks every object of the process (in a large process, most of the parse time)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check_all(sources, skill, device)
    finally:
        if collecting:
            gc.enable()


def _check_all(sources: dict[str, str], skill: str, device: str) -> tuple[list[Finding], dict[str, str]]:
    findings, broken, modules, shell_launches = [], {}, {}, []
    for path, text in sources.items():
        if is_shell(Path(path), text):
            shell_launches += launches_in_shell(text, path)
            continue
        try:
            modules[path] = Module(path, ast.parse(text, filename=path))
        except SyntaxError as exc:
            if Path(path).suffix not in (".py", ".pyw", ".pyi"):  # a Makefile, a YAML file given by mistake
                broken[path] = f"{shown(path)}: not a Python or shell file (give .py files, shell scripts " \
                    f"({', '.join(SHELL_SUFFIXES)} or a #! line) or folders)"
                continue
            broken[path] = f"{shown(path)}:{exc.lineno or 1}: does not parse as Python {PYTHON_VERSION}, the Python " \
                f"this checker runs on ({' '.join(str(exc.msg).split())}; if it is valid in a newer Python, run the " \
                "checker with that one)"
        except (ValueError, RecursionError, MemoryError) as exc:
            broken[path] = f"{shown(path)}: does not parse as Python ({type(exc).__name__}: {' '.join(str(exc).split())})"
    project = Project(modules)
    for path, module in list(modules.items()):  # every module linked first: a launch's rules read the module it runs
        try:
            project.link(module)
        except RecursionError:
            pass
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[path] = checker_defect(path, exc)
            del modules[path]
    launches_of: dict[int, list[Launch]] = {}  # a module -> the launches that run it, from any file of the run
    unattached = []
    for launch in shell_launches + [launch for module in modules.values() for launch in module.launches]:
        try:
            target = project.launched(launch)
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[launch.path] = checker_defect(launch.path, exc)
            continue
        launch.runs = target if target is not None else project.script_next_to(launch)
        if target is not None:
            launches_of.setdefault(id(target), []).append(launch)
        elif launch.path not in modules:
            unattached.append(launch)
        if skill == TF and launch.launcher == "accelerate" and launch.option("--cpu") is not None and \
                (launch.requested or 1) > 1:  # a rule about the launch alone, whatever it runs
            findings.append(Finding("accelerate-cpu-processes", launch.path, launch.line, ""))
    for module in modules.values():  # before any rule reads a parsed flag (Module.launched_value)
        module.launched_with = [launch.args for launch in launches_of.get(id(module), [])]
    for module in list(modules.values()):  # a config.py that parses the flags of the script that imports it
        for part in module.project[1:]:
            if not launches_of.get(id(part)):
                part.launched_with = part.launched_with + module.launched_with
    for part in {id(part): part for module in modules.values() for part in module.project}.values():
        part._const_names.clear()
        part._mappings.clear()
    for path, module in modules.items():
        runs = launches_of.get(id(module), [])
        launches = module.launches + [launch for launch in runs if launch.path != path]
        several = next((f"{shown(launch.path)}:{launch.line}: {launch.several}" for launch in runs if launch.several),
                       "") or (f"launched with other arguments at {', '.join(f'{shown(launch.path)}:{launch.line}' for launch in runs)}"
                               if len({launch.job() for launch in runs}) > 1 else "")
        try:  # the rules walk expressions recursively: a pathological one must not crash the run
            found = list(transformers_findings(module, launches) if skill == TF
                         else composer_findings(module, launches, device, several))
        except RecursionError:
            broken[path] = f"{shown(path)}: an expression is nested too deeply to check"
            continue
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[path] = checker_defect(path, exc)
            continue
        for rule, where, note in found:
            where_path, line = (where.path, where.line) if isinstance(where, Launch) else where \
                if isinstance(where, tuple) else (path, where)  # a tuple: in a project module this one imports
            findings.append(Finding(rule, where_path, line, note))
    for launch in unattached:
        try:
            findings += unattached_launch_findings(launch, skill, device)
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[launch.path] = checker_defect(launch.path, exc)
    unique = {(f.rule, f.path, f.line): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.path, f.line, f.rule)), broken


def checker_defect(path: str, exc: Exception) -> str:
    return f"{shown(path)}: this checker failed on it ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}; a " \
        "defect of the checker, not of the file: the other files are still checked)"


def unattached_launch_findings(launch: Launch, skill: str, device: str) -> list[Finding]:
    """A shell launch of a file not given here: the flags on its own line are still checked."""
    empty = Module(launch.path, ast.parse(""))
    found = transformers_findings(empty, [launch]) if skill == TF else composer_findings(empty, [launch], device)
    return [Finding(rule, launch.path, launch.line, note) for rule, _where, note in found]


def body(run) -> None:
    try:
        check_paths(run)
    finally:
        remove_empty_cache(run.output_dir)


def remove_empty_cache(output_dir: Path) -> None:
    """Remove the empty cache folders the contract makes in the output directory (<dir>/.cache/hf, tmp...): this
    checker writes nothing, so a rerun with the same --output-dir finds it empty. A folder with a file in it stays."""
    cache = output_dir / ".cache"
    if cache.is_symlink() or not cache.is_dir():
        return
    for folder, dirs, _files in os.walk(cache, topdown=False):
        for name in dirs:
            try:
                os.rmdir(os.path.join(folder, name))
            except OSError:  # not empty, or a link to a folder: kept
                pass
    try:
        os.rmdir(cache)
    except OSError:
        pass


def validate(args) -> None:
    """An --output-dir an earlier run of this checker left with only its empty cache folders (before they were
    removed at exit) is emptied of them, so the contract's "not empty" refusal is kept for folders with files."""
    folder = args.output_dir
    if folder is not None and folder.is_dir() and not folder.is_symlink():
        try:
            entries = [entry.name for entry in folder.iterdir()]
        except OSError:
            return
        if entries == [".cache"] and not any(files for _, _, files in os.walk(folder / ".cache")):
            remove_empty_cache(folder)


def check_paths(run) -> None:
    skill = skill_name()
    if skill not in (TF, CP):
        raise SmokeError(f"no skill found above {HERE} (its SKILL.md names the rules to run): run the copy in a "
                         "skill's scripts folder, python skills/<skill>/scripts/trap_check.py", EXIT_USAGE)
    # --device names the device the checked code runs on, not this machine's: nothing runs here, so gpu is never
    # refused (no exit 4); auto is a GPU when one is visible here
    run.device = run.args.device if run.args.device != "auto" else ("gpu" if gpu_visible() else "cpu")
    if not run.args.paths:
        raise SmokeError("give the Python files, shell scripts or folders to check (see --help)", EXIT_USAGE)
    sources, unreadable = {}, []
    if run.args.fix or run.args.diff:  # the exact 5.x rewrites (_trap_fix), then the check of what is left
        unreadable += _trap_fix.fix_paths(input_files(run.args.paths), skill, run.args.diff and (
            sys.stderr if run.args.json else sys.stdout) or None, shown)
    for path in input_files(run.args.paths, unreadable):
        try:
            sources[str(path)] = read(path)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
            unreadable.append(f"{shown(str(path))}: cannot be read ({reason})")
    if not sources and not unreadable:
        raise SmokeError(f"no .py, .sh, .bash, .sbatch or .slurm file under {', '.join(map(repr, run.args.paths))}", EXIT_USAGE)
    findings, broken = check_all(sources, skill, run.device)
    rules = {rule.id: rule for rule in RULES if rule.skill == skill}
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    # a finding may be in a project module a given file imports (data.py found next to train.py): listed after them
    for path in [*sources, *sorted(set(by_path) - set(sources))]:
        if path in by_path:
            for finding in by_path[path]:
                rule = rules[finding.rule]
                note = " ".join(finding.note.split())
                note = f" ({note if len(note) <= 200 else note[:200] + '...'})" if note else ""  # a 5,000-digit value
                run.check(f"{finding.rule}@{shown(path)}:{finding.line}", False,
                          f"{rule.what}{note} Fix: {rule.fix}. See: {rule.see}")
        elif path not in broken:
            run.check(f"clean@{shown(path)}", True, f"no trap of the {len(rules)} rules of {skill}")
    if broken or unreadable:  # exit 2 wins over 1: the check is incomplete; the traps found are still listed
        also = f" (and {len(findings)} trap{'s' * (len(findings) != 1)} found in what was read, listed above)" \
            if findings else ""
        raise SmokeError("; ".join([*unreadable, *broken.values()]) + f": fix the file or leave it out{also}",
                         EXIT_USAGE)


NAMES_HELP = ("each trap found is one [FAIL] line on stderr named RULE@PATH:LINE (a clean file: clean@PATH), with "
              "what goes wrong, the fix and the section to read, and exit 1; --json gives the same names as checks. "
              "A PATH that holds ':', '@', a quote, a backslash or a character that is not printable is written as "
              "a Python string literal, so a name splits at its first '@' and its last ':'")
NO_DEVICE_LINE = "  4  the requested device is not there (--device gpu without CUDA)"
EXIT_2_OVER_1 = ("A file that cannot be read or parsed (for this checker's Python) is exit 2 even when traps were "
                 "found in the others: the check is incomplete. Each trap found is still a [FAIL] line (and a failed check in "
                 "--json), and the error line counts them. The checker writes nothing: --output-dir may be given again "
                 "(the empty cache folders the contract makes there are removed at exit), and a temporary folder whose "
                 "path holds a brace is accepted (the smoke scripts refuse one because Composer expands {rank} in the "
                 "paths they write to)")


def make_parser():
    paragraphs = __doc__.split("\n\n")
    parser = build_parser(SCRIPT, "\n\n".join(paragraphs[:3]), f"python scripts/{SCRIPT} train.py launch.sh\n\n"
                          + "\n".join(textwrap.wrap(NAMES_HELP, 110)))
    parser.epilog = parser.epilog.replace(NO_DEVICE_LINE, "  4  never: --device gpu names the device the checked code "
                                          "runs on, which this machine need not have") + "\n\n" + "\n".join(
        textwrap.wrap(EXIT_2_OVER_1, 110))
    parser.add_argument("paths", nargs="*", metavar="PATH", help="Python files, shell scripts or folders to read")
    _trap_fix.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    # this checker runs no Composer, so a brace in TMPDIR expands nothing; --output-dir keeps the contract's refusal
    return run_main(SCRIPT, make_parser(), body, [], argv, validate, braced_tmpdir_ok=True)

if __name__ == "__main__":
    sys.exit(main())
