"""The Transformers rules of one kind of task: a causal LM (pad = eos masks every EOS label, math.exp(eval_loss) as
perplexity), token classification (a "label" column the collator never renames) and seq2seq (generation length,
predict() under the plain Trainer). A module of trap_check.py (synced from skill_common/ into every skill's scripts/
folder).
"""

import ast
import re

from _trap_hf_arguments import holds_arguments
from _trap_launch import Launch
from _trap_module import CAUSAL_LM, MASKED_LM, SEQ2SEQ, Module, at, is_true, line_of
from _trap_rules import ERROR, PREFLIGHT, TABLE, TF, WARNING, Rule
from _trap_values import called_name


RULES = [
    Rule("TF014", "pad-token-eos", TF, ERROR,
         "pad_token = eos_token for a causal LM: DataCollatorForLanguageModeling (or labels masked "
         "where they equal the pad id) sets every real EOS label to -100, so the model never learns to stop.",
         'tokenizer.add_special_tokens({"pad_token": "[PAD]"}) and model.resize_token_embeddings(len(tokenizer))',
         TABLE,
         why="silently wrong labels: the model never learns to stop (not reported where the script registers its own "
             "end marker as a special token and writes no EOS into its text: no EOS label to lose)",
         trips={"t.py": """
        model = AutoModelForCausalLM.from_pretrained("m")
        tokenizer.pad_token = tokenizer.eos_token
        Trainer(model=model, data_collator=DataCollatorForLanguageModeling(tokenizer, mlm=False))
        """},
         clean={"t.py": """
        model = AutoModelForCausalLM.from_pretrained("m")
        tokenizer.add_special_tokens({"pad_token": "[PAD]"})
        model.resize_token_embeddings(len(tokenizer))
        """}),
    Rule("TF022", "token-collator-label", TF, ERROR,
         'DataCollatorForTokenClassification keeps a "label" column as it is: the model '
         'gets no labels and Trainer raises "The model did not return a loss".',
         'name the token labels column "labels" (rename_column("label", "labels"))', PREFLIGHT,
         why='raises',
         trips={"t.py": """
        data = Dataset.from_dict({"tokens": [["a"]], "label": [[0]]})
        collator = DataCollatorForTokenClassification(tokenizer)
        """},
         clean={"t.py": """
        data = Dataset.from_dict({"tokens": [["a"]], "label": [[0]]}).rename_column("label", "labels")
        collator = DataCollatorForTokenClassification(tokenizer)
        """}),
    Rule("TF025", "perplexity-exp-eval-loss", TF, WARNING,
         "math.exp(eval_loss) as causal-LM perplexity is too low: the token count "
         "includes each row's first token, which is never predicted.",
         "sum the loss over predicted tokens and divide by their count, as the causal LM recipe does",
         "references/task-recipes.md#causal-language-modeling",
         why="a number off by (L-1)/L of the loss for rows of length L (0.1% at 1024) on models without loss_type, "
             "exact for equal rows on those with it: worth fixing, rarely wrong enough to fail a build",
         trips={"t.py": """
        import math
        model = AutoModelForCausalLM.from_pretrained("m")
        metrics = trainer.evaluate()
        print({"perplexity": math.exp(metrics["eval_loss"])})
        """},
         clean={"t.py": """
        import math
        model = AutoModelForCausalLM.from_pretrained("m")
        print({"perplexity": math.exp(nll / predicted_tokens)})
        """}),
    Rule("TF029", "generate-max-length", TF, ERROR,
         "predict_with_generate without generation_max_length generates up to the model's "
         "max_length (20 by default) and the first evaluation writes it into model.generation_config for good.",
         "generation_max_length=<your target length> (and model.generation_config.max_length to set both)",
         "references/task-recipes.md#summarization",
         why='silently truncated generations and wrong metrics',
         trips={"t.py": 'Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True)'},
         clean={"t.py": 'Seq2SeqTrainingArguments(output_dir="o", predict_with_generate=True, '
                                     'generation_max_length=8)'}),
    Rule("TF030", "seq2seq-plain-trainer", TF, ERROR,
         "a seq2seq model under the plain Trainer: predict() returns teacher-forced logits, "
         "not generated text.", "Seq2SeqTrainer with Seq2SeqTrainingArguments(predict_with_generate=True, "
         "generation_max_length=...)", "references/task-recipes.md#summarization",
         why='silently wrong predictions (logits, not generated text)',
         trips={"t.py": """
        from transformers import AutoModelForSeq2SeqLM, Trainer
        model = AutoModelForSeq2SeqLM.from_pretrained("m")
        Trainer(model=model, args=a).predict(data)
        """},
         clean={"t.py": """
        from transformers import AutoModelForSeq2SeqLM, Seq2SeqTrainer
        model = AutoModelForSeq2SeqLM.from_pretrained("m")
        Seq2SeqTrainer(model=model, args=a).predict(data)
        """}),
]


def trains_causal_lm(module: Module) -> bool:
    """A causal LM is trained here: its class is named in the project (an aliased import counts by what it stands
    for; model.py's classes count here), or DataCollatorForLanguageModeling(mlm=False); no masked LM is named."""
    names = module.project_names
    causal = any(CAUSAL_LM.search(name) for name in names) or any(
        module.const(module.kwargs(call)[0].get("mlm", (None,))[0]) is False
        for call in module.calls_named("DataCollatorForLanguageModeling"))
    return causal and not any(MASKED_LM.search(name) for name in names)


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


EOS_NAMES = ("eos_token", "eos_token_id")


def own_end_marker(module: Module) -> bool:
    """Whether the project registers its own special tokens (an end marker it trains on and stops at, as "### End")
    and writes no EOS into its text (`text + tokenizer.eos_token`, f"...{eos_token}", ids + [eos_token_id]): then no
    EOS label is there to lose."""
    def is_eos_name(node: ast.AST) -> bool:
        return (isinstance(node, ast.Attribute) and node.attr in EOS_NAMES) or (
            isinstance(node, ast.Name) and node.id in EOS_NAMES)

    registers = writes = False
    for part in module.project:
        for node in part.nodes:
            if isinstance(node, ast.Call) and called_name(node.func) in ("add_special_tokens", "add_tokens"):
                registers |= called_name(node.func) == "add_tokens" or any(
                    isinstance(key, ast.Constant) and key.value == "additional_special_tokens"
                    for argument in node.args if isinstance(argument, ast.Dict) for key in argument.keys)
            elif isinstance(node, (ast.BinOp, ast.JoinedStr)) or (isinstance(node, ast.Call) and
                                                                  called_name(node.func) in ("append", "format")):
                writes |= any(is_eos_name(sub) for sub in ast.walk(node))
            elif isinstance(node, ast.keyword) and node.arg == "add_eos_token":
                writes |= part.const(node.value) is not False
    return registers and not writes


def causal_lm_findings(module: Module):
    """pad_token = eos_token here or in a project module this one imports (the tokenizer set up in data.py for the
    causal LM trained here), and math.exp(eval_loss) here."""
    names = module.project_names
    # what masks every EOS label when pad is EOS: the LM collator, or labels masked by the pad id by hand
    # (labels[labels == tokenizer.pad_token_id] = -100); a collator masking by attention_mask, the seq2seq
    # collator (it pads labels with -100) or generation alone keep them
    trains = "DataCollatorForLanguageModeling" in names or any(map(masks_labels_by_pad_id, module.project))
    for part in module.project if trains and not own_end_marker(module) else []:
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


def seq2seq_findings(module: Module, training: list, launches: list[Launch]):
    for call, kw, complete in training:
        if is_true(module.const(kw.get("predict_with_generate", (None,))[0])) and complete and \
                "generation_max_length" not in kw and "generation_config" not in kw and \
                not generates_with_own_length(module, do_train_text(module, kw)):
            yield "generate-max-length", kw["predict_with_generate"][1], ""
    for launch in launches:  # --predict_with_generate on the command line, the length neither there nor in the code
        runs = launch.runs if isinstance(launch.runs, Module) else None  # a script not read here decides nothing
        if runs is not None and is_true(launch.flag("predict_with_generate")) and \
                launch.flag("generation_max_length") is None and launch.flag("generation_config") is None and \
                not {"generation_max_length", "generation_config"} & runs.project_words and \
                not generates_with_own_length(runs, launch.flag("do_train")):
            yield "generate-max-length", launch, "--predict_with_generate on the command line"
    yield from generate_set_findings(module)
    if not any(isinstance(call.func, ast.Attribute) and call.func.attr == "predict" for call in module.calls):
        return
    for call in module.calls_named("Trainer"):
        model = module.resolve(module.kwargs(call)[0].get("model", (None,))[0])
        if model is not None and not module.qualname(call.func).startswith("composer") and any(
                SEQ2SEQ.search(module.qualname(sub)) for sub in ast.walk(model) if isinstance(sub, ast.Attribute)):
            yield "seq2seq-plain-trainer", call.lineno, ""


LENGTHS = {"max_length", "max_new_tokens"}  # the keywords of Seq2SeqTrainer.evaluate/predict that set the length


def do_train_text(module: Module, kw: dict) -> str | None:
    """do_train= of arguments built in Python as a flag's text: None where not given, "true" where not read."""
    if "do_train" not in kw:
        return None
    return "false" if module.const(kw["do_train"][0]) is False else "true"


def under_do_train(runs: Module, call: ast.Call) -> bool:
    """Whether the call runs only in the body of an `if <args>.do_train` (or `if <args>.do_train and ...`)."""
    node = call
    while id(node) in runs.parent:
        parent = runs.parent[id(node)]
        tests = parent.test.values if isinstance(parent, ast.If) and isinstance(parent.test, ast.BoolOp) and \
            isinstance(parent.test.op, ast.And) else [getattr(parent, "test", None)]
        if isinstance(parent, ast.If) and node in parent.body and any(
                isinstance(test, ast.Attribute) and test.attr == "do_train" for test in tests):
            return True
        node = parent
    return False


def generates_with_own_length(runs: Module, do_train: str | None) -> bool:
    """A launch that trains nothing (every train() call under `if <args>.do_train` with do_train false or not given,
    False by default; or a script with no train() call) of a script whose every evaluate() and predict() passes the
    length: Seq2SeqTrainer generates with it, and no evaluation during training generates without it
    (test_an_evaluation_only_launch_whose_calls_pass_the_length measures it)."""
    methods = [(call.func.attr, call) for call in runs.calls if isinstance(call.func, ast.Attribute)]
    generating = [call for method, call in methods if method in ("evaluate", "predict")]
    training = [call for method, call in methods if method == "train"]
    trains = not all(under_do_train(runs, call) for call in training) or \
        (do_train or "false").lower() not in ("false", "no", "f", "n", "0") and bool(training)
    return not trains and bool(generating) and all(
        any(keyword.arg is None or keyword.arg in LENGTHS and runs.const(keyword.value) is not None
            for keyword in call.keywords)  # **gen_kwargs cannot be read: it may hold the length, so no finding
        for call in generating)


def generate_set_findings(module: Module):
    """`training_args.predict_with_generate = True` on arguments the code builds, or parses from the command lines of
    the launches read here that run it, with the length nowhere: in the project, nor a flag of those launches. Parsed
    arguments that no launch read here runs may get --generation_max_length from a command line not seen: nothing
    is said."""
    if {"generation_max_length", "generation_config"} & module.project_words:
        return
    for node in module.of_types(ast.Assign):
        target = node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None
        if not isinstance(target, ast.Attribute) or target.attr != "predict_with_generate" or \
                not is_true(module.const(node.value)) or not holds_arguments(module, target.value):
            continue
        built = module.resolve(target.value)
        flags = {token.split("=", 1)[0].lstrip("-").replace("-", "_") for args in module.launched_with
                 for token in args}
        if isinstance(built, ast.Call) and module.kwargs(built)[1] or (
                module.launched_with and not {"generation_max_length", "generation_config"} & flags):
            yield "generate-max-length", node.lineno, f"{target.value.id}.predict_with_generate = True"
