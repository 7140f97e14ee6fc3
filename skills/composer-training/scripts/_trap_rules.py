"""The trap checker's rule table: each rule's stable code, kebab-case name, severity (and why), what goes wrong, the
fix and the section to read. A module of trap_check.py (synced from skill_common/ into every skill's scripts/).

Severity: an ERROR is a trap that on the pinned versions raises, silently gives wrong numbers or loses work: it fails
the check (exit 1). A WARNING is a policy or context matter (a network lookup where the network may be reachable, a
default said out loud): listed, exit 0 unless --strict. Codes are stable: a rule removed leaves its code unused.
"""

from dataclasses import dataclass, field

ERROR, WARNING = "error", "warning"


@dataclass(frozen=True)
class Rule:
    code: str  # stable: TF001... for transformers-training, CP001... for composer-training; never reused
    id: str  # the kebab-case name, as findings are named (RULE@PATH:LINE)
    skill: str
    severity: str  # ERROR or WARNING
    what: str  # what goes wrong, one sentence
    fix: str
    see: str  # relative to the skill folder, with the section's #anchor
    why: str = ""  # why this severity
    # sources (name -> text) that trip the rule, and the same fixed, which trip nothing (tests/test_trap_check.py runs
    # both for every rule): the rule's examples, next to it
    trips: dict = field(default_factory=dict)
    clean: dict = field(default_factory=dict)


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
# Arguments of 4.x TrainingArguments that 5.x no longer has (checked against the installed 5.x signature by
# tests/test_trap_lint.py), each with its replacement where there is one: one rule for the long tail
LEGACY_ARGUMENTS = {
    "per_gpu_train_batch_size": "per_device_train_batch_size", "per_gpu_eval_batch_size": "per_device_eval_batch_size",
    "use_auth_token": "hub_token", "push_to_hub_model_id": "hub_model_id", "tpu_num_cores": None,
    "fp16_backend": None, "half_precision_backend": None, "sharded_ddp": "fsdp", "torchdynamo": "torch_compile_backend",
    "include_tokens_per_second": None, "mp_parameters": None, "jit_mode_eval": None, "use_ipex": None,
    "ray_scope": None, "dispatch_batches": None, "split_batches": None, "past_index": None}
ARGS = 'TrainingArguments(output_dir="o", {})'  # an example's arguments
REMOVED_CLEAN = {  # each removed argument's example, fixed
    "evaluation_strategy": 'eval_strategy="steps"', "no_cuda": "use_cpu=True", "overwrite_output_dir": "",
    "logging_dir": "", "warmup_ratio": "warmup_steps=0.1",
    "group_by_length": 'train_sampling_strategy="group_by_length"',
    "include_inputs_for_metrics": 'include_for_metrics=["inputs"]', "save_safetensors": "", "use_mps_device": "",
    "push_to_hub_token": 'hub_token="x"'}
RULES = [
    *(Rule(f"TF{index:03d}", f"removed-{name}", TF, ERROR, f"{name}= was {what}.", fix, TABLE,
           why="raises TypeError on 5.x", trips={"t.py": ARGS.format(f"{name}=True")},
           clean={"t.py": ARGS.format(REMOVED_CLEAN[name])})
      for index, (name, what, fix) in enumerate(REMOVED_ARGUMENTS, 1)),
    Rule("TF031", "removed-legacy-argument", TF, ERROR,
         "an argument 5.x TrainingArguments no longer has (the note names it): TrainingArguments raises TypeError "
         "(given as a flag to an HfArgumentParser script, the parser refuses it).",
         "drop it, or use its replacement (per_gpu_*: per_device_*, use_auth_token: hub_token, sharded_ddp: fsdp)",
         TABLE, why="raises TypeError on 5.x",
         trips={"t.py": ARGS.format("per_gpu_train_batch_size=8")},
         clean={"t.py": ARGS.format("per_device_train_batch_size=8")}),
    Rule("TF032", "removed-argument-read", TF, ERROR,
         "a field 5.x TrainingArguments no longer has (the note names it) read from the arguments: AttributeError.",
         "drop the read, or read its replacement (eval_strategy, use_cpu, warmup_steps, train_sampling_strategy; "
         "overwrite_output_dir has none: test the folder yourself)", TABLE, why="raises AttributeError on 5.x",
         trips={"t.py": 'args = TrainingArguments(output_dir="o")\nprint(args.overwrite_output_dir)\n'},
         clean={"t.py": 'args = TrainingArguments(output_dir="o")\nprint(args.output_dir)\n'}),
    Rule("TF033", "trainer-self-tokenizer", TF, ERROR,
         "self.tokenizer in a subclass of Transformers' Trainer: 5.x Trainer has no tokenizer attribute "
         "(AttributeError).", "self.processing_class", TABLE, why="raises AttributeError on 5.x",
         trips={"t.py": "from transformers import Trainer\nclass T(Trainer):\n    def pad(self):\n"
                        "        return self.tokenizer.pad_token_id\n"},
         clean={"t.py": "from transformers import Trainer\nclass T(Trainer):\n    def pad(self):\n"
                        "        return self.processing_class.pad_token_id\n"}),
    Rule("TF034", "arguments-subclass-removed-field", TF, ERROR,
         "a TrainingArguments subclass declares a field 5.x removed (the note names it): the subclass accepts it and "
         "5.x never reads it, so the training silently runs without it (warmup_ratio: no warmup at all).",
         "the 5.x setting the note names (warmup_ratio: warmup_steps=<the ratio>, a float below 1 is a ratio)", TABLE,
         why="silently wrong training (the setting is ignored)",
         trips={"t.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n@dataclass\n"
                        "class Args(TrainingArguments):\n    warmup_ratio: float = 0.03\n"},
         clean={"t.py": "from dataclasses import dataclass\nfrom transformers import TrainingArguments\n@dataclass\n"
                        "class Args(TrainingArguments):\n    warmup_steps: float = 0.03\n"}),
    Rule("TF011", "trainer-tokenizer", TF, ERROR,
         "Trainer(tokenizer=...) was removed in 5.x: Trainer raises TypeError.",
         "Trainer(processing_class=tokenizer)", TABLE,
         why='raises TypeError on 5.x',
         trips={"t.py": "Trainer(model=m, args=a, tokenizer=tok)"},
         clean={"t.py": "Trainer(model=m, args=a, processing_class=tok)"}),
    Rule("TF012", "optim-adamw-hf", TF, ERROR,
         'optim="adamw_hf" is no longer a valid optimizer name: TrainingArguments raises.',
         'drop optim (the default is adamw_torch, or adamw_torch_fused on torch >= 2.8)', TABLE,
         why='raises on 5.x',
         trips={"t.py": ARGS.format('optim="adamw_hf"')},
         clean={"t.py": ARGS.format('optim="adamw_torch"')}),
    Rule("TF013", "seqcls-loss-scaling", TF, ERROR,
         "A *ForSequenceClassification model with gradient accumulation or more than one "
         "process logs a loss (and gets gradients and grad_norm) N times too large (huggingface/transformers#47688).",
         "model.accepts_loss_kwargs = False before building the Trainer",
         "references/distributed-training.md#the-loss-trap-sequence-classification-under-ddp-and-gradient-accumulation",
         why='silently wrong loss, gradients and grad_norm',
         trips={"t.py": """
        from transformers import AutoModelForSequenceClassification as Auto, TrainingArguments
        model_class = Auto  # a variable that holds the class
        model = model_class.from_pretrained("m", num_labels=3)
        args = dict(output_dir="o", gradient_accumulation_steps=4)
        TrainingArguments(**args)
        """},
         clean={"t.py": """
        from transformers import AutoModelForSequenceClassification as Auto, TrainingArguments
        model_class = Auto
        model = model_class.from_pretrained("m", num_labels=3)
        model.accepts_loss_kwargs = False
        args = dict(output_dir="o", gradient_accumulation_steps=4)
        TrainingArguments(**args)
        """}),
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
    Rule("TF015", "evaluate-hub-load", TF, WARNING,
         "evaluate.load(<Hub name>) fetches the metric module from the Hub: offline it fails, "
         "online it is a network call per run.",
         'compute the metric with numpy in compute_metrics, or evaluate.load("<path>/metric.py") of a local module '
         "(assets/accuracy_metric.py), which needs no network",
         "references/api-reference.md#metrics-offline-with-the-evaluate-api",
         why='a network call: a policy matter where the Hub is reachable, an error only offline',
         trips={"t.py": 'import evaluate\nname = "accuracy"\nmetric = evaluate.load(name)'},
         clean={"t.py": 'import evaluate\nmetric = evaluate.load("assets/accuracy_metric.py")'}),
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
    Rule("TF023", "accelerate-cpu-processes", TF, ERROR,
         "accelerate launch --cpu with --num_processes above 1 silently runs one "
         "process.", "torchrun --nproc_per_node N (gloo on CPU), or drop --cpu on GPUs",
         "references/distributed-training.md#the---cpu-trap",
         why='silently runs one process instead of N',
         trips={"run.sh": "accelerate launch --cpu --num_processes 2 train.py\n"},  # trap-check: ignore[TF023] (an example)
         clean={"run.sh": "torchrun --nproc_per_node 2 train.py\n"}),
    Rule("TF024", "resume-changed-max-steps", TF, ERROR,
         "resuming with another max_steps: the first resumed step runs at the old "
         "schedule's rate, then jumps onto a new curve.",
         "keep max_steps when resuming; to train longer, start a new run from the saved weights", TABLE,
         why='silently wrong learning-rate schedule',
         trips={"t.py": """
        first = TrainingArguments(output_dir="o", max_steps=100)
        longer = TrainingArguments(output_dir="o", max_steps=200)
        Trainer(model=m, args=longer).train(resume_from_checkpoint=last)
        """},
         clean={"t.py": """
        same = TrainingArguments(output_dir="o", max_steps=100)
        Trainer(model=m, args=same).train(resume_from_checkpoint=last)
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
    Rule("TF026", "load-dataset-online", TF, WARNING,
         "load_dataset on local files looks up s3.amazonaws.com unless HF_HUB_OFFLINE or "
         "HF_DATASETS_OFFLINE is 1 before datasets is imported.",
         'os.environ["HF_HUB_OFFLINE"] = "1" above the first datasets import (or set it in the launching shell)',
         "references/task-recipes.md#your-own-data-files",
         why='a network lookup: a policy matter where the network is reachable',
         trips={"t.py": """
        from datasets import load_dataset
        data = load_dataset("json", data_files="train.jsonl")
        """},
         clean={"t.py": """
        import os
        os.environ["HF_HUB_OFFLINE"] = "1"
        from datasets import load_dataset
        data = load_dataset("json", data_files="train.jsonl")
        """}),
    Rule("TF027", "resume-true-unconditional", TF, ERROR,
         "train(resume_from_checkpoint=True) raises on a first launch (no checkpoint "
         "yet) and after a kill during a save (the newest checkpoint has no trainer_state.json).",
         "pass the newest complete checkpoint or None (last_complete_checkpoint(output_dir) in the reference)",
         "references/troubleshooting.md#after-a-kill-or-preemption",
         why='raises on a first launch and after a kill',
         trips={"t.py": "trainer.train(resume_from_checkpoint=True)"},
         clean={"t.py": "trainer.train(resume_from_checkpoint=last_complete_checkpoint('o'))"}),
    Rule("TF028", "resume-unchecked-checkpoint", TF, ERROR,
         "get_last_checkpoint() returns a checkpoint a kill cut short (no "
         "trainer_state.json): resuming from it raises.",
         "skip checkpoints without trainer_state.json (last_complete_checkpoint in the reference)",
         "references/troubleshooting.md#after-a-kill-or-preemption",
         why='raises after a kill during a save',
         trips={"t.py": """
        from transformers.trainer_utils import get_last_checkpoint
        trainer.train(resume_from_checkpoint=get_last_checkpoint("o"))
        """},
         clean={"t.py": """
        from transformers.trainer_utils import get_last_checkpoint
        last = get_last_checkpoint("o")
        if last and not os.path.exists(os.path.join(last, "trainer_state.json")):
            last = None
        trainer.train(resume_from_checkpoint=last)
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
    Rule("CP001", "positional-trainer", CP, ERROR,
         "Composer's Trainer takes keyword arguments only: Trainer(model, ...) raises "
         "TypeError.", "Trainer(model=model, train_dataloader=..., ...)", "SKILL.md#minimal-trainer",
         why='raises TypeError',
         trips={"t.py": "from composer import Trainer\nTrainer(model, optimizers=opt, max_duration='1ep')"},
         clean={"t.py": "from composer import Trainer\nTrainer(model=model, optimizers=opt, max_duration='1ep')"}),
    Rule("CP002", "duration-unit", CP, ERROR,
         "this max_duration unit never ends (iter) or is rejected (dur, wall clock).",
         'a total in ep, ba, sp or tok ("2ep", "100ba")', "references/checkpointing-and-time.md#time-strings",
         why='never ends or raises',
         trips={"t.py": "Trainer(model=m, optimizers=o, max_duration='2iter')\n"
                                   "Trainer(model=m, optimizers=o, max_duration='0.5dur')\n"
                                   "Trainer(model=m, optimizers=o, max_duration='1h30m')"},
         clean={"t.py": "Trainer(model=m, optimizers=o, max_duration='2ep')"}),
    Rule("CP003", "tok-uncounted", CP, ERROR,
         "a tok max_duration without get_num_tokens_in_batch: tokens are counted only for dict "
         "batches with input_ids (padding included) or datasets with max_seq_len, otherwise never, so the run stops "
         "early or never.", "DataSpec(loader, get_num_tokens_in_batch=lambda batch: int(batch[\"attention_mask\"]"
         ".sum()))", "references/model-and-data-contracts.md#batch-schemas-and-what-the-timestamp-counts",
         why='the run silently stops early or never',
         trips={"t.py": "Trainer(model=m, optimizers=o, train_dataloader=loader, max_duration='1000tok')"},
         clean={"t.py": "spec = DataSpec(loader, get_num_tokens_in_batch=count)\n"
                               "Trainer(model=m, optimizers=o, train_dataloader=spec, max_duration='1000tok')"}),
    Rule("CP004", "changed-head-load", CP, ERROR,
         "a changed head loads only with load_weights_only=True, "
         "load_strict_model_weights=False and load_ignore_keys together; other combinations fail or restore the old "
         "optimizer state and timestamp.", "give all three load_* options",
         "references/checkpointing-and-time.md#fine-tune-into-a-changed-head",
         why='raises or silently restores the old optimizer state and timestamp',
         trips={"t.py": "Trainer(model=m, optimizers=o, load_path='p.pt', load_strict_model_weights=False,"
                                       " load_ignore_keys=['state/model/head*'])"},
         clean={"t.py": "Trainer(model=m, optimizers=o, load_path='p.pt', load_weights_only=True, "
                                   "load_strict_model_weights=False, load_ignore_keys=['state/model/head*'])"}),
    Rule("CP005", "autoresume-no-run-name", CP, ERROR,
         "autoresume=True without run_name: Composer raises (a random name could not be "
         "found again on relaunch).", 'run_name="<stable name>" and save_folder="checkpoints/{run_name}"',
         "references/checkpointing-and-time.md#autoresume",
         why='raises',
         trips={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, save_folder='ck')"},
         clean={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='job', "
                                        "save_folder='ck/{run_name}')"}),
    Rule("CP006", "autoresume-shared-folder", CP, ERROR,
         "autoresume reads <save_folder>/latest-rank0.pt whatever the run name: runs "
         "that share this save_folder resume each other's checkpoints.",
         'save_folder="<root>/{run_name}", with a run_name that differs between jobs (run_name=args.job)',
         "references/checkpointing-and-time.md#autoresume",
         why="silently resumes another job's checkpoint",
         trips={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name=args.job, "
                                              "save_folder=str(args.out))"},
         clean={"t.py": "folder = str(args.out / '{run_name}')\nTrainer(model=m, optimizers=o, "
                                          "autoresume=True, run_name=args.job, save_folder=folder)"}),
    Rule("CP007", "save-overwrite", CP, ERROR,
         "save_overwrite=True to get past FileExistsError keeps the old run's files and, when "
         "latest-rank0.pt is missing or dangling, restarts from batch 0.",
         "resume (autoresume or load_path=<folder>/latest-rank0.pt), set torn checkpoints aside, or use a new folder",
         "references/checkpointing-and-time.md#running-again-into-a-used-folder",
         why='loses work: restarts from batch 0',
         trips={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='j', save_folder='c', "
                                    "save_overwrite=True)"},
         clean={"t.py": "Trainer(model=m, optimizers=o, autoresume=True, run_name='j', save_folder='c')"}),
    Rule("CP008", "gpu-only-setting-on-cpu", CP, ERROR,
         "AMP precision and device_train_microbatch_size=\"auto\" are GPU-only: on CPU "
         "Composer raises.", 'precision="fp32" and an integer microbatch size on CPU',
         "references/troubleshooting.md#precision-devices-microbatching",
         why='raises on CPU',
         trips={"t.py": "Trainer(model=m, optimizers=o, device='cpu', precision='amp_bf16', "
                                             "device_train_microbatch_size='auto')"},
         clean={"t.py": "Trainer(model=m, optimizers=o, device='cpu', precision='fp32', "
                                         "device_train_microbatch_size=2)"}),
    Rule("CP009", "no-optimizer", CP, WARNING,
         "no optimizers=: Composer warns and trains with DecoupledSGDW(lr=0.1).",
         "optimizers=torch.optim.AdamW(model.parameters(), lr=...)", "SKILL.md#fast-start",
         why="Composer warns at run time and trains: a default to replace, not a silent failure (a profiling demo "
             "may mean it)",
         trips={"t.py": "Trainer(model=m, train_dataloader=loader, max_duration='2ba')"},
         clean={"t.py": "Trainer(model=m, train_dataloader=loader, max_duration='2ba', optimizers=opt)"}),
    Rule("CP010", "shuffle-resume", CP, WARNING,
         "a train DataLoader(shuffle=True) with autoresume or load_path: a resume inside an epoch "
         "reorders the rest of it when training draws from torch's CPU RNG, so the resume is not bit-exact.",
         "sampler=dist.get_sampler(dataset, shuffle=True) (composer.utils.dist)",
         "references/checkpointing-and-time.md#after-a-kill-or-preemption",
         why='the resumed run is statistically sound, only not bit-exact',
         trips={"t.py": "loader = DataLoader(data, batch_size=4, shuffle=True)\nTrainer(model=m, "
                                    "optimizers=o, train_dataloader=loader, autoresume=True, run_name='j')"},
         clean={"t.py": "loader = DataLoader(data, batch_size=4, sampler=dist.get_sampler(data, shuffle=True))"
                                "\nTrainer(model=m, optimizers=o, train_dataloader=loader, autoresume=True, "
                                "run_name='j')"}),
    Rule("CP011", "launch-default-processes", CP, WARNING,
         "composer without -n starts one process per GPU: one on a machine without "
         "GPUs.", "composer -n <processes> train.py", "references/distributed.md#run-it-with-2-ranks-on-cpu",
         why='depends on the machine it runs on: right on a GPU node, one process on a CPU one',
         trips={"run.sh": "composer train.py --epochs 2\n"},  # trap-check: ignore[CP011] (an example)
         clean={"run.sh": "composer -n 2 train.py --epochs 2\n"}),
    Rule("CP012", "loader-without-sampler", CP, ERROR,
         "a train DataLoader without a distributed sampler under a multi-process launch: "
         "every rank reads every sample (Composer refuses it).",
         "sampler=dist.get_sampler(dataset, shuffle=...) (composer.utils.dist)",
         "references/distributed.md#what-the-training-script-needs",
         why='Composer refuses it',
         trips={"t.py": "LAUNCH = ['composer', '-n', '2', 'train.py']\nloader = DataLoader(data, "
                                            "batch_size=4)\nTrainer(model=m, optimizers=o, train_dataloader=loader)"},
         clean={"t.py": "LAUNCH = ['composer', '-n', '2', 'train.py']\nloader = DataLoader(data, "
                                        "batch_size=4, sampler=dist.get_sampler(data))\nTrainer(model=m, optimizers=o, "
                                        "train_dataloader=loader)"}),
    Rule("CP013", "eval-without-metrics", CP, ERROR,
         "evaluation with a model that reports no metrics (it defines no get_metrics, or "
         "it is a HuggingFaceModel given neither metrics= nor eval_metrics=): get_metrics returns {}, so evaluation "
         "runs and reports nothing.",
         "define get_metrics(is_train) and update_metric in the model (ComposerClassifier has them), or give "
         "HuggingFaceModel metrics= (eval_metrics= for other metrics in evaluation)",
         "SKILL.md#model-and-data-checklist",
         why='evaluation silently reports nothing',
         trips={"t.py": "model = Net()\nTrainer(model=model, optimizers=o, "
                                          "eval_dataloader=Evaluator(label='val', dataloader=loader))"},
         clean={"t.py": "class Scored(Net):\n    def get_metrics(self, is_train=False):\n        return {}\n"
                                      "model = Scored()\nTrainer(model=model, optimizers=o, "
                                      "eval_dataloader=Evaluator(label='val', dataloader=loader))"}),
]
RULE_IDS = {rule.id for rule in RULES}
