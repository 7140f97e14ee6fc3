#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "mosaicml==0.32.1",
#     "torch==2.7.0",
#     "torchvision==0.22.0",
# ]
# ///
"""Trap check: read training code and launch commands, without running or importing them, and name every trap this
skill documents that they contain: the rule, the file and line, what goes wrong, the fix and the section to read.

Give Python files, shell scripts (.sh, .bash) or folders (searched for both). Python is read with the standard
library's ast; constant values are followed through simple assignments (`args = dict(...)` then
`TrainingArguments(**args)`, a variable that holds a model class), imports are followed to tell Composer's Trainer
from Transformers', and launch commands are read from shell lines (shlex) and from Python strings and argv lists
(`LAUNCH = "composer -n 2 train.py"`, `subprocess.run(["accelerate", "launch", ...])`). A shell script that launches a
Python file given here checks that file under the launch (process count, flags, offline variables).

--device is the device the checked code will run on where it does not name one itself (Composer picks the GPU when
there is one): auto is a GPU when one is visible here. Links are relative to this skill's folder.

This one file is the source of the checker of every skill: skill_common/trap_check.py at the bundle root, copied into each
skill's scripts/ folder (`make sync-contract`; the suite fails when a copy drifts). Each copy runs the rules of the
skill it sits in, read from that skill's SKILL.md.
"""

import ast
import os
import re
import shlex
import stat
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from smoke_contract import EXIT_NO_DEVICE, EXIT_USAGE, SmokeError, build_parser, run_main  # noqa: E402

SCRIPT = "trap_check.py"
HERE = Path(__file__).resolve().parent
MAX_BYTES = 5_000_000  # a training script is far smaller; a bigger file is a data file given by mistake


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
    Rule("pad-token-eos", TF, "pad_token = eos_token for a causal LM: the collator sets every real EOS label to -100, "
         "so the model never learns to stop.",
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
         "that share this save_folder resume each other's checkpoints.", 'save_folder="<root>/{run_name}"',
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
    Rule("eval-without-metrics", CP, "evaluation with a model that defines no get_metrics: the default returns {}, so "
         "evaluation runs and reports nothing.",
         "define get_metrics(is_train) and update_metric in the model (ComposerClassifier has them)",
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

LAUNCHERS = ("accelerate", "torchrun", "composer", "deepspeed", "python", "python3")
WRAPPERS = {"exec", "nohup", "time", "env", "srun", "uv", "run"}
OFFLINE_NAMES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")


@dataclass
class Launch:
    path: str
    line: int
    launcher: str  # accelerate, torchrun, composer, deepspeed, python
    options: list[str]  # the launcher's own flags, before the script
    script: str | None
    args: list[str]  # the script's flags
    env: dict[str, str] = field(default_factory=dict)

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
        """Processes started; None when the default or a variable decides."""
        value = {"accelerate": self.option("--num_processes", "--num-processes"),
                 "torchrun": self.option("--nproc_per_node", "--nproc-per-node"),
                 "composer": self.option("-n", "--nproc"),
                 "deepspeed": self.option("--num_gpus", "--num-gpus")}.get(self.launcher, "1")
        return int(value) if value and value.isascii() and value.isdigit() else None  # "²".isdigit() is true

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


def parse_launch(tokens: list[str], path: str, line: int, env: dict[str, str]) -> Launch | None:
    env = dict(env)
    while tokens and (re.match(r"^[A-Za-z_]\w*=", tokens[0]) or tokens[0] in WRAPPERS):
        if "=" in tokens[0] and not tokens[0].startswith("-"):
            name, _, value = tokens[0].partition("=")
            env[name] = value
        tokens = tokens[1:]
    if not tokens:
        return None
    launcher = os.path.basename(tokens[0])
    rest = tokens[1:]
    if launcher not in LAUNCHERS:
        return None
    if launcher.startswith("python"):
        launcher = "python"
        if rest[:2] in (["-m", "torch.distributed.run"], ["-m", "torch.distributed.launch"]):
            launcher, rest = "torchrun", rest[2:]
        elif rest[:2] == ["-m", "accelerate.commands.launch"]:
            launcher, rest = "accelerate", rest[2:]
        elif rest[:2] == ["-m", "composer.cli.launcher"]:
            launcher, rest = "composer", rest[2:]
    if launcher == "accelerate":
        if not rest or rest[0] != "launch":
            return None
        rest = rest[1:]
    scripts = [index for index, token in enumerate(rest) if token.endswith(".py") and not token.startswith("-")]
    if not scripts:
        return None
    at = scripts[0]
    return Launch(path, line, launcher, rest[:at], rest[at], rest[at + 1:], env)


def shell_commands(text: str):
    """(line, tokens) per simple command of a shell script: continuations joined, comments and operators split off."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        start, joined = index + 1, lines[index]
        while joined.endswith("\\") and index + 1 < len(lines):
            index += 1
            joined = joined[:-1] + " " + lines[index]
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


def launches_in_shell(text: str, path: str) -> list[Launch]:
    found, exported = [], {}
    for line, tokens in shell_commands(text):
        if tokens[0] == "export":
            exported.update(token.split("=", 1) for token in tokens[1:] if "=" in token)
            continue
        launch = parse_launch(tokens, path, line, exported)
        if launch:
            found.append(launch)
    return found


# ---------------------------------------------------------------- a Python module, read with ast

UNKNOWN = object()


class Module:
    def __init__(self, path: str, tree: ast.Module):
        self.path, self.tree = path, tree
        self.imports: dict[str, str] = {}  # local name -> module.attribute it stands for
        self.assigned: dict[str, list[ast.AST]] = {}
        self.calls: list[ast.Call] = []
        self.nodes = list(ast.walk(tree))
        self.parent = {id(child): node for node in self.nodes for child in ast.iter_child_nodes(node)}
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
            elif isinstance(node, ast.Call):
                self.calls.append(node)
        self.launches: list[Launch] = []
        self.names = {node.id for node in self.nodes if isinstance(node, ast.Name)} | \
            {node.attr for node in self.nodes if isinstance(node, ast.Attribute)} | \
            {node.arg for node in self.nodes if isinstance(node, ast.keyword) and node.arg} | \
            {node.name for node in self.nodes if isinstance(node, (ast.FunctionDef, ast.ClassDef))}
        docstrings = {id(node.value) for node in self.nodes if isinstance(node, ast.Expr)}
        self.strings = {node.value for node in self.nodes if isinstance(node, ast.Constant)
                        and isinstance(node.value, str) and id(node) not in docstrings}
        self._read_launch_strings()

    # -- values
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
        if isinstance(node, ast.Name):
            values = [self.const(value, depth + 1) for value in self.assigned.get(node.id, [])]
            return values[0] if values and all(value == values[0] for value in values) else UNKNOWN
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id.endswith("Strategy"):
            return node.attr.lower()  # IntervalStrategy.STEPS, SaveStrategy.BEST
        return UNKNOWN

    def resolve(self, node: ast.AST | None, depth: int = 0) -> ast.AST | None:
        """A name followed to the one expression assigned to it."""
        while isinstance(node, ast.Name) and depth < 8 and self.single(node.id) is not None:
            node, depth = self.single(node.id), depth + 1
        return node

    def kwargs(self, call: ast.Call, depth: int = 0) -> tuple[dict[str, tuple[ast.AST, int]], bool]:
        """keyword -> (value, line), `**mapping` followed into dict literals and dict(...) calls; complete is False
        when some `**` could not be read (then an absent keyword may be there)."""
        found, complete = {}, True
        for keyword in call.keywords:
            if keyword.arg is not None:
                found[keyword.arg] = (keyword.value, keyword.value.lineno)
                continue
            mapping = self.resolve(keyword.value)
            if isinstance(mapping, ast.Dict) and depth < 4:
                for key, value in zip(mapping.keys, mapping.values):
                    if isinstance(key, ast.Constant) and isinstance(key.value, str):
                        found[key.value] = (value, key.lineno)
                    else:
                        complete = False
            elif isinstance(mapping, ast.Call) and self.short(mapping) == "dict" and depth < 4:
                inner, inner_complete = self.kwargs(mapping, depth + 1)
                found.update(inner)
                complete &= inner_complete and not mapping.args
            else:
                complete = False
        return found, complete

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

    def calls_named(self, *names: str, suffix: str | None = None) -> list[ast.Call]:
        return [call for call in self.calls if self.short(call) in names
                or (suffix is not None and self.short(call).endswith(suffix))]

    # -- launch commands written as strings or argv lists
    def _read_launch_strings(self) -> None:
        for node in self.nodes:
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and len(node.value) < 4000:
                if node.value.lstrip().split(" ", 1)[0] in LAUNCHERS or "\n" in node.value:
                    for offset, tokens in shell_commands(node.value):
                        launch = parse_launch(tokens, self.path, node.lineno + offset - 1, {})
                        if launch and launch.launcher != "python" or launch and launch.args:
                            self.launches.append(launch)
            elif isinstance(node, (ast.List, ast.Tuple)) and node.elts:
                words = [self.const(element) for element in node.elts]
                if all(isinstance(word, str) for word in words) and os.path.basename(words[0]) in LAUNCHERS:
                    launch = parse_launch(list(words), self.path, node.lineno, {})
                    if launch:
                        self.launches.append(launch)


def line_of(node: ast.AST) -> int:
    return getattr(node, "lineno", 1)


CAUSAL_LM = re.compile(r"CausalLM|LMHeadModel")
MASKED_LM = re.compile(r"MaskedLM")
SEQ2SEQ = re.compile(r"Seq2SeqLM|ForConditionalGeneration")


def is_true(value) -> bool:
    return value is True or (isinstance(value, str) and value.lower() in ("true", "1", "yes"))


# ---------------------------------------------------------------- Transformers rules

def transformers_findings(module: Module, launches: list[Launch]):
    training_calls = module.calls_named(suffix="TrainingArguments")
    training = [(call, *module.kwargs(call)) for call in training_calls]
    for call, kw, complete in training:
        for name, _what, _fix in REMOVED_ARGUMENTS:
            if name in kw:
                yield f"removed-{name}", kw[name][1], ""
        if module.const(kw.get("optim", (None,))[0]) == "adamw_hf":
            yield "optim-adamw-hf", kw["optim"][1], ""
        yield from best_model_findings(module, call, kw, complete)
    for launch in launches:  # the same arguments as HfArgumentParser flags on a command line
        for name, _what, _fix in REMOVED_ARGUMENTS:
            if launch.flag(name) is not None:
                yield f"removed-{name}", launch, f"--{name} on the command line"
        if launch.flag("optim") == "adamw_hf":
            yield "optim-adamw-hf", launch, "--optim adamw_hf on the command line"
    for call in module.calls_named(suffix="Trainer"):
        kw, _ = module.kwargs(call)
        if "tokenizer" in kw:
            yield "trainer-tokenizer", kw["tokenizer"][1], ""
    yield from sequence_classification_findings(module, training, launches)
    causal = any(CAUSAL_LM.search(name) for name in module.names) or any(
        module.const(module.kwargs(call)[0].get("mlm", (None,))[0]) is False
        for call in module.calls_named("DataCollatorForLanguageModeling"))
    if causal and not any(MASKED_LM.search(name) for name in module.names):
        yield from causal_lm_findings(module)
    yield from evaluate_findings(module)
    yield from token_label_findings(module)
    yield from resume_findings(module, training, launches)
    yield from load_dataset_findings(module, launches)
    yield from seq2seq_findings(module, training)


def best_model_findings(module: Module, call: ast.Call, kw: dict, complete: bool):
    value = lambda name, default=None: module.const(kw[name][0]) if name in kw else default  # noqa: E731
    save = value("save_strategy", "steps")
    if save == "best" and complete and "metric_for_best_model" not in kw:
        yield "best-save-no-metric", kw["save_strategy"][1], ""
    if not is_true(value("load_best_model_at_end", False)):
        return
    line = kw["load_best_model_at_end"][1]
    evaluation = value("eval_strategy", value("evaluation_strategy", "no"))
    if complete and "metric_for_best_model" not in kw and save != "best":
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
        numbers = all(isinstance(steps, (int, float)) and not isinstance(steps, bool) and steps >= 1
                      for steps in (save_steps, eval_steps))
        if numbers and save_steps % eval_steps:
            yield "best-save-not-multiple", line, f"save_steps={save_steps}, eval_steps={eval_steps}"
        elif numbers and save_steps != eval_steps and "log_history" not in module.names:  # not picking the best itself
            yield "best-unsaved-eval", line, f"save_steps={save_steps}, eval_steps={eval_steps}"


def sequence_classification_findings(module: Module, training: list, launches: list[Launch]):
    models = [node for node in module.nodes if isinstance(node, (ast.Name, ast.Attribute))
              and module.qualname(node).endswith("ForSequenceClassification")]
    if not models:
        return
    fixed = any(isinstance(node, ast.Assign) and module.const(node.value) is False and any(
        isinstance(target, ast.Attribute) and target.attr == "accepts_loss_kwargs" for target in node.targets)
        for node in module.nodes) or any(
        module.short(call) == "setattr" and len(call.args) == 3 and module.const(call.args[1]) == "accepts_loss_kwargs"
        for call in module.calls)
    if fixed:
        return
    for call, kw, _ in training:
        steps = module.const(kw.get("gradient_accumulation_steps", (None,))[0])
        if isinstance(steps, int) and steps > 1:
            yield "seqcls-loss-scaling", kw["gradient_accumulation_steps"][1], f"gradient_accumulation_steps={steps}"
    for launch in launches:
        steps = launch.flag("gradient_accumulation_steps")
        if (launch.processes or 1) > 1 or (steps and steps.isascii() and steps.isdigit() and int(steps) > 1):
            yield "seqcls-loss-scaling", launch, f"launched with {launch.processes} processes" \
                if (launch.processes or 1) > 1 else f"--gradient_accumulation_steps {steps}"


def causal_lm_findings(module: Module):
    eos = lambda node: isinstance(node, ast.Attribute) and node.attr in ("eos_token", "eos_token_id")  # noqa: E731
    dedicated = [node.lineno for node in module.nodes if isinstance(node, ast.Dict) and any(  # a pad token of its own
        isinstance(key, ast.Constant) and key.value == "pad_token" and not eos(value)
        for key, value in zip(node.keys, node.values))]
    for node in sorted((node for node in module.nodes if hasattr(node, "lineno")), key=line_of):
        if any(line > node.lineno for line in dedicated):  # replaced later by a pad token of its own
            continue
        if isinstance(node, ast.Assign) and eos(node.value) and any(
                isinstance(target, ast.Attribute) and target.attr in ("pad_token", "pad_token_id")
                for target in node.targets):
            yield "pad-token-eos", node.lineno, ""
        elif isinstance(node, ast.keyword) and node.arg == "pad_token" and eos(node.value):
            yield "pad-token-eos", node.value.lineno, ""
        elif isinstance(node, ast.Dict) and any(
                isinstance(key, ast.Constant) and key.value == "pad_token" and eos(value)
                for key, value in zip(node.keys, node.values)):
            yield "pad-token-eos", node.lineno, ""
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


def evaluate_findings(module: Module):
    for call in module.calls:
        if module.qualname(call.func) != "evaluate.load":
            continue
        kw, _ = module.kwargs(call)
        name = module.const(call.args[0] if call.args else kw.get("path", (None,))[0])
        if not isinstance(name, str) or name.endswith(".py") or name.startswith((".", "/", "~")):
            continue
        if (Path(module.path).parent / name).exists():
            continue
        yield "evaluate-hub-load", call.lineno, f"evaluate.load({name!r})"


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


def resume_findings(module: Module, training: list, launches: list[Launch]):
    resumes = []
    for call in module.calls:
        if isinstance(call.func, ast.Attribute) and call.func.attr == "train":
            kw, _ = module.kwargs(call)
            if "resume_from_checkpoint" in kw:
                resumes.append((call, kw["resume_from_checkpoint"][0]))
    guarded = {id(inner) for node in module.nodes if isinstance(node, (ast.If, ast.IfExp, ast.Try))
               for inner in ast.walk(node) if inner is not node}
    looks = {"exists", "is_dir", "isdir", "glob", "iterdir", "listdir", "get_last_checkpoint"} & module.names or any(
        "checkpoint-" in text for text in module.strings)  # the code checks that a checkpoint is there first
    for call, value in resumes:
        if module.const(value) is True and id(call) not in guarded and not looks:
            yield "resume-true-unconditional", call.lineno, ""
        last = lambda node: isinstance(node, ast.Call) and module.short(node) == "get_last_checkpoint"  # noqa: E731
        if module.mentions(value, last) and not any("trainer_state.json" in text for text in module.strings):
            yield "resume-unchecked-checkpoint", call.lineno, ""
    if resumes:
        steps = {module.const(kw["max_steps"][0]): kw["max_steps"][1] for _, kw, _ in training if "max_steps" in kw}
        steps.update({module.const(node.value): node.lineno for node in module.nodes if isinstance(node, ast.Assign)
                      and any(isinstance(target, ast.Attribute) and target.attr == "max_steps"
                              for target in node.targets)})
        steps.pop(UNKNOWN, None)
        if len(steps) > 1:
            yield "resume-changed-max-steps", max(steps.values()), f"max_steps {sorted(steps)}"


def load_dataset_findings(module: Module, launches: list[Launch]):
    if any(launch.env.get(name) == "1" for launch in launches for name in OFFLINE_NAMES):
        return
    imports = [node.lineno for node in module.nodes if (isinstance(node, ast.Import) and any(
        alias.name.split(".")[0] == "datasets" for alias in node.names)) or (
        isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "datasets")]
    first_import = min(imports, default=0)
    for node in module.nodes:  # os.environ["HF_HUB_OFFLINE"] = "1", setdefault(...), update(...), putenv(...)
        texts = []
        if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Subscript):
            texts = [module.const(node.targets[0].slice)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
                "setdefault", "putenv", "update", "__setitem__"):
            texts = [module.const(arg) for arg in node.args[:1]] + [key for key in module.kwargs(node)[0]]
            texts += [module.const(key) for arg in node.args if isinstance(arg, ast.Dict) for key in arg.keys if key]
        if any(text in OFFLINE_NAMES for text in texts) and node.lineno < (first_import or 10**9):
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


def seq2seq_findings(module: Module, training: list):
    for call, kw, complete in training:
        if is_true(module.const(kw.get("predict_with_generate", (None,))[0])) and complete and \
                "generation_max_length" not in kw and "generation_config" not in kw:
            yield "generate-max-length", kw["predict_with_generate"][1], ""
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


def composer_findings(module: Module, launches: list[Launch], device: str):
    trainers = [call for call in module.calls_named("Trainer")
                if not module.qualname(call.func).startswith("transformers")]
    for launch in launches:
        if launch.launcher == "composer" and launch.option("-n", "--nproc") is None:
            yield "launch-default-processes", launch, ""
    multi_process = any((launch.processes or 1) > 1 for launch in launches)
    shuffled = [call for call in module.calls_named("DataLoader") if module.const(
        module.kwargs(call)[0].get("shuffle", (None,))[0]) is True]
    for call in trainers:
        kw, complete = module.kwargs(call)
        value = lambda name, default=None: module.const(kw[name][0]) if name in kw else default  # noqa: E731
        if call.args:
            yield "positional-trainer", call.lineno, ""
        duration = value("max_duration")
        if isinstance(duration, str):
            unit = TIME_STRING.match(duration)
            if WALL_CLOCK.match(duration) or (unit and unit[1].lower() in ("iter", "dur")):
                yield "duration-unit", kw["max_duration"][1], f"max_duration={duration!r}"
            elif unit and unit[1].lower() == "tok" and "get_num_tokens_in_batch" not in module.names:
                yield "tok-uncounted", kw["max_duration"][1], f"max_duration={duration!r}"
        head = {"load_ignore_keys" in kw, value("load_strict_model_weights") is False,
                value("load_weights_only") is True}
        if "load_path" in kw and ("load_ignore_keys" in kw or value("load_strict_model_weights") is False) and \
                head != {True}:
            yield "changed-head-load", kw["load_path"][1], ""
        if value("autoresume") is True:
            if complete and "run_name" not in kw:
                yield "autoresume-no-run-name", kw["autoresume"][1], ""
            elif "run_name" in kw and "save_folder" in kw and value("run_name") is UNKNOWN:
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
        for loader in shuffled if resumes else []:
            yield "shuffle-resume", loader.lineno, ""
        train = module.resolve(kw["train_dataloader"][0]) if "train_dataloader" in kw else None
        if multi_process and isinstance(train, ast.Call) and module.short(train) == "DataLoader":
            loader_kw, loader_complete = module.kwargs(train)
            if loader_complete and not {"sampler", "batch_sampler"} & set(loader_kw) and len(train.args) < 3:
                yield "loader-without-sampler", train.lineno, ""
        model = module.resolve(kw["model"][0]) if "model" in kw else None
        if ("eval_dataloader" in kw or module.calls_named("Evaluator")) and isinstance(model, ast.Call) and \
                module.short(model) not in ("ComposerClassifier", "HuggingFaceModel", "MMDetModel") and \
                "get_metrics" not in module.names:
            yield "eval-without-metrics", kw["model"][1], f"{module.short(model)}() defines no get_metrics here"


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


SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "venv", ".venv"}


def input_files(paths: list[str]) -> list[Path]:
    found = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            for folder, dirs, files in os.walk(path):
                dirs[:] = sorted(name for name in dirs if not name.startswith(".") and name not in SKIP_DIRS)
                found += [Path(folder) / name for name in sorted(files) if name.endswith((".py", ".sh", ".bash"))]
        elif path.is_file():
            found.append(path)
        elif path.exists():
            raise SmokeError(f"{given!r} is not a regular file or folder (a FIFO or device is never read)", EXIT_USAGE)
        elif path.is_symlink():
            raise SmokeError(f"{given!r} is a dangling symbolic link; give a file or folder to read", EXIT_USAGE)
        else:
            raise SmokeError(f"{given!r}: no such file or folder; give Python files, shell scripts or folders",
                             EXIT_USAGE)
    return found


def is_shell(path: Path, text: str) -> bool:
    first = text.split("\n", 1)[0]
    return path.suffix in (".sh", ".bash") or (first.startswith("#!") and "sh" in first and "python" not in first)


def read(path: Path) -> str:
    if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block, /dev/zero never ends
        raise ValueError("not a regular file: never read")
    with path.open("rb") as file:
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1_000_000} MB: not a training script")
    if b"\0" in data:
        raise ValueError("holds NUL bytes: not a text file")
    return data.decode("utf-8-sig")  # a UTF-8 byte-order mark is valid Python


def check_sources(sources: dict[str, str], skill: str, device: str) -> tuple[list[Finding], list[str]]:
    """Findings for ``sources`` (display path -> text; a path ending in .sh/.bash is a shell script) and the files
    that could not be parsed, each with why."""
    findings, broken, modules, shell_launches = [], [], {}, []
    for path, text in sources.items():
        if is_shell(Path(path), text):
            shell_launches += launches_in_shell(text, path)
            continue
        try:
            modules[path] = Module(path, ast.parse(text, filename=path))
        except SyntaxError as exc:
            broken.append(f"{path}:{exc.lineno or 1}: does not parse as Python ({exc.msg})")
        except (ValueError, RecursionError, MemoryError) as exc:
            broken.append(f"{path}: does not parse as Python ({type(exc).__name__}: {exc})")
    for path, module in modules.items():
        launched = [launch for launch in shell_launches if launch.script and launches_file(launch, path)]
        launches = module.launches + launched
        try:  # the rules walk expressions recursively: a pathological one must not crash the run
            found = list(transformers_findings(module, launches) if skill == TF
                         else composer_findings(module, launches, device))
        except RecursionError:
            broken.append(f"{path}: an expression is nested too deeply to check")
            continue
        for rule, where, note in found:
            where_path, line = (where.path, where.line) if isinstance(where, Launch) else (path, where)
            findings.append(Finding(rule, where_path, line, note))
    for launch in shell_launches + [launch for module in modules.values() for launch in module.launches]:
        if skill == TF and launch.launcher == "accelerate" and launch.option("--cpu") is not None and \
                (launch.processes or 1) > 1:  # a rule about the launch alone, whatever it runs
            findings.append(Finding("accelerate-cpu-processes", launch.path, launch.line, ""))
        if launch.path not in modules and not any(launches_file(launch, path) for path in modules):
            findings += unattached_launch_findings(launch, skill)
    unique = {(f.rule, f.path, f.line): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.path, f.line, f.rule)), broken


def unattached_launch_findings(launch: Launch, skill: str) -> list[Finding]:
    """A shell launch of a file not given here: the flags on its own line are still checked."""
    empty = Module(launch.path, ast.parse(""))
    found = transformers_findings(empty, [launch]) if skill == TF else composer_findings(empty, [launch], "cpu")
    return [Finding(rule, launch.path, launch.line, note) for rule, _where, note in found]


def launches_file(launch: Launch, path: str) -> bool:
    script = Path(launch.script)
    candidates = {(Path(launch.path).parent / script).resolve(), script.resolve()}
    return Path(path).resolve() in candidates


def body(run) -> None:
    skill = skill_name()
    if skill not in (TF, CP):
        raise SmokeError(f"no skill found above {HERE} (its SKILL.md names the rules to run): run the copy in a "
                         "skill's scripts folder, python skills/<skill>/scripts/trap_check.py", EXIT_USAGE)
    device = run.args.device
    if device == "gpu" and not gpu_visible():
        raise SmokeError("--device gpu was requested but CUDA is not available on this machine", EXIT_NO_DEVICE)
    run.device = device if device != "auto" else ("gpu" if gpu_visible() else "cpu")
    if not run.args.paths:
        raise SmokeError("give the Python files, shell scripts or folders to check (see --help)", EXIT_USAGE)
    sources, unreadable = {}, []
    for path in input_files(run.args.paths):
        try:
            sources[str(path)] = read(path)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            unreadable.append(f"{path}: cannot be read ({getattr(exc, 'strerror', None) or exc})")
    if not sources and not unreadable:
        raise SmokeError(f"no .py, .sh or .bash file under {', '.join(map(repr, run.args.paths))}", EXIT_USAGE)
    findings, broken = check_sources(sources, skill, run.device)
    rules = {rule.id: rule for rule in RULES if rule.skill == skill}
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    for path in sources:
        if path in by_path:
            for finding in by_path[path]:
                rule = rules[finding.rule]
                note = f" ({finding.note})" if finding.note else ""
                run.check(f"{finding.rule}@{path}:{finding.line}", False,
                          f"{rule.what}{note} Fix: {rule.fix}. See: {rule.see}")
        elif not any(text.startswith(f"{path}:") for text in broken):
            run.check(f"clean@{path}", True, f"no trap of the {len(rules)} rules of {skill}")
    if broken or unreadable:
        raise SmokeError("; ".join([*unreadable, *broken]) + ": fix the file or leave it out", EXIT_USAGE)


def main(argv: list[str] | None = None) -> int:
    paragraphs = __doc__.split("\n\n")
    parser = build_parser(SCRIPT, "\n\n".join(paragraphs[:3]), f"python scripts/{SCRIPT} train.py launch.sh\n\n"
                          "exit 1 here means a trap was found: each is one [FAIL] line on stderr with the rule, the "
                          "file and line, what goes wrong, the fix and the section to read")
    parser.add_argument("paths", nargs="*", metavar="PATH", help="Python files, shell scripts or folders to read")
    return run_main(SCRIPT, parser, body, [], argv)


if __name__ == "__main__":
    sys.exit(main())
