"""The questions coding agents asked after using the transformers-training skill, each answered by an experiment on
the installed libraries (skills/transformers-training/references/questions.md): tiny models from configs, in-memory
tokenizers, CPU, offline. Real libraries throughout, nothing mocked.

Two checks need fresh processes (a cache variable is read at import; DDP needs ranks): they start in the background
when this module's first test runs and are read by the last tests, so the rest of the file runs meanwhile."""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.docs import blocks
from support.harness import SKILLS_DIR, isolated_env, live_processes, stray_files, tree_state
from support.tensors import differing
from support.transformers_kit import arguments, rows, tiny_classifier, word_tokenizer

SKILL = SKILLS_DIR / "transformers-training"
RECIPES = SKILL / "references" / "task-recipes.md"
QUESTIONS = SKILL / "references" / "questions.md"
JOBS = SKILL / "references" / "jobs.md"


# ---- the two background processes ------------------------------------------------------------------------------------

# Q6: what a whole run writes outside its output_dir, stage by stage. Every cache variable points at a fresh empty
# folder (HOME, TMPDIR, XDG_CACHE_HOME, HF_HOME) and the working directory is an empty folder; no offline variable
# except HF_DATASETS_OFFLINE (datasets only: it stops load_dataset's s3 ping and leaves huggingface_hub online).
FOOTPRINT = r"""
import json, os, sys
from pathlib import Path

roots, out = [Path(p) for p in json.loads(sys.argv[1])], sys.argv[2]
model_dir, metric_file, data_file = sys.argv[3:6]


def files():  # and folders
    return {str(path) for root in roots for path in root.rglob("*")}


seen, report = files(), {}


def stage(name):
    global seen
    now = files()
    report[name] = sorted(now - seen)
    seen = now


import numpy as np
from transformers import AutoModelForSequenceClassification, AutoTokenizer, Trainer, TrainingArguments
stage("import")
tokenizer = AutoTokenizer.from_pretrained(model_dir)  # a local folder, no offline variable, no local_files_only
model = AutoModelForSequenceClassification.from_pretrained(model_dir)
stage("from_pretrained")
from datasets import Dataset, load_dataset
data = Dataset.from_dict({"text": ["a b", "c", "a c b", "b"], "label": [1, 0, 1, 0]})
data = data.map(lambda batch: tokenizer(batch["text"]), batched=True)
stage("Dataset.from_dict/map")
from_file = load_dataset("json", data_files=data_file, split="train")
stage("load_dataset json")
import evaluate
accuracy = evaluate.load(metric_file)
stage("evaluate.load")
args = TrainingArguments(output_dir=out, max_steps=2, per_device_train_batch_size=2, save_steps=1,
                         eval_strategy="steps", eval_steps=1, use_cpu=True, report_to="none")
trainer = Trainer(model=model, args=args, train_dataset=data, eval_dataset=data, processing_class=tokenizer,
                  compute_metrics=lambda p: accuracy.compute(predictions=np.argmax(p.predictions, -1),
                                                             references=p.label_ids))
trainer.train()
trainer.save_model()
stage("Trainer.train/save_model")

# Where the caches go without HF_HOME: the libraries' own config modules, re-read under each environment
import importlib
import datasets.config, evaluate.config
caches = {}
for unset in ("HF_HOME", "XDG_CACHE_HOME"):
    os.environ.pop(unset)
    importlib.reload(datasets.config)
    importlib.reload(evaluate.config)
    caches[unset] = [str(datasets.config.HF_DATASETS_CACHE), str(evaluate.config.HF_MODULES_CACHE),
                     str(evaluate.config.HF_METRICS_CACHE)]
print("FOOTPRINT " + json.dumps({"stages": report, "caches": caches}))
"""

# Q15: evaluation under 2-rank DDP (gloo), launched with `torchrun --standalone` in a network namespace that holds
# only the loopback interface, with no MASTER_ADDR, MASTER_PORT or GLOO_SOCKET_IFNAME in the environment.
DDP_EVAL = r"""
import json, os
import torch
from transformers import BertConfig, BertForSequenceClassification, Trainer, TrainingArguments

torch.manual_seed(0)
ids, labels = torch.randint(5, 64, (5, 8)), torch.randint(0, 2, (5,))
data = [{"input_ids": i, "labels": label} for i, label in zip(ids, labels)]
config = BertConfig(vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16,
                    max_position_embeddings=16)
torch.manual_seed(0)
model = BertForSequenceClassification(config)
args = TrainingArguments(output_dir="out", per_device_eval_batch_size=2, use_cpu=True, report_to="none",
                         disable_tqdm=True)
shipped = Trainer(model=model, args=args, eval_dataset=data)  # as shipped: accepts_loss_kwargs True, the loss trap
model.accepts_loss_kwargs = False  # the loss trap off: eval loss not multiplied by the rank count
trainer = Trainer(model=model, args=args, eval_dataset=data)
uneven = trainer.evaluate()["eval_loss"]  # 5 samples on 2 ranks x 2 per batch
even = trainer.evaluate(eval_dataset=data[:4])["eval_loss"]
even_shipped = shipped.evaluate(eval_dataset=data[:4])["eval_loss"]
prediction = trainer.predict(data)
model.eval()
with torch.no_grad():
    per_sample = [model(input_ids=i[None], labels=label[None]).loss.item() for i, label in zip(ids, labels)]
if args.process_index == 0:
    print("RESULT " + json.dumps({
        "world_size": args.world_size, "backend": torch.distributed.get_backend(),
        "master_addr": os.environ["MASTER_ADDR"],
        "uneven": uneven, "even": even, "even_shipped": even_shipped, "per_sample": per_sample, "predictions": len(prediction.predictions),
        "label_ids": prediction.label_ids.tolist(), "labels": labels.tolist()}), flush=True)
# The teardown is not under test: with destroy_process_group both ranks of this script hung inside it in 1 launch of
# 24 on torch 2.7 (gloo), and left to the interpreter a rank can abort at exit on torch 2.13. Both ranks meet, then
# leave without a teardown.
torch.distributed.barrier()
os._exit(0)
"""


def _network_namespace_works() -> bool:
    if not shutil.which("unshare") or not shutil.which("ip"):
        return False
    return subprocess.run(["unshare", "-rn", "sh", "-c", "ip link set lo up"], capture_output=True).returncode == 0


def _guarded_env(tmp: Path, **extra) -> dict:
    env = isolated_env(tmp, {"HOME": str(tmp / "home"), "TMPDIR": str(tmp / "tmpdir"), **extra})
    for name in ("MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME", "RANK", "WORLD_SIZE", "LOCAL_RANK"):
        env.pop(name, None)
    return env


LAUNCH_TOKEN = f"agent-questions-{os.getpid()}-{time.monotonic_ns()}"  # in the environment of every process started


def _start(command, cwd: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(command, cwd=cwd, env={**env, "AGENT_QUESTIONS_LAUNCH": LAUNCH_TOKEN},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def _kill_started() -> None:
    for pid in live_processes(f"AGENT_QUESTIONS_LAUNCH={LAUNCH_TOKEN}"):  # torchrun's ranks have their own sessions
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:  # ended meanwhile
            pass


@pytest.fixture(scope="module", autouse=True)
def background(tmp_path_factory):
    """Starts the footprint run and the DDP launch; yields their handles."""
    from transformers import AutoConfig, AutoModelForSequenceClassification

    started = {}
    # footprint: a local model folder, a local metric module and a JSON file, made before the watch starts
    tmp = tmp_path_factory.mktemp("footprint")
    for name in ("home", "tmpdir", "cwd", "inputs"):
        (tmp / name).mkdir()
    tokenizer = word_tokenizer(pad_token="[UNK]")
    model = AutoModelForSequenceClassification.from_config(AutoConfig.for_model(
        "bert", vocab_size=len(tokenizer), hidden_size=8, num_hidden_layers=1, num_attention_heads=1,
        intermediate_size=8, max_position_embeddings=16, num_labels=2))
    model.save_pretrained(tmp / "inputs" / "model")
    tokenizer.save_pretrained(tmp / "inputs" / "model")
    shutil.copy(SKILL / "assets" / "accuracy_metric.py", tmp / "inputs" / "accuracy_metric.py")
    (tmp / "inputs" / "train.jsonl").write_text('{"text": "a b", "label": 1}\n{"text": "c", "label": 0}\n')
    (tmp / "footprint.py").write_text(FOOTPRINT)
    env = _guarded_env(tmp, HF_DATASETS_OFFLINE="1")
    for name in ("TORCH_HOME", "TORCHINDUCTOR_CACHE_DIR", "TRITON_CACHE_DIR", "MPLCONFIGDIR",
                 "PYTHONDONTWRITEBYTECODE"):
        env.pop(name)  # the defaults, as a user has them
    watched = [tmp / "home", tmp / "tmpdir", tmp / "cwd", tmp / "cache"]
    (tmp / "cache").mkdir()
    before = {path: state for root in watched for path, state in tree_state(root).items()}
    started["footprint"] = (tmp, env, watched, before, _start(
        [sys.executable, str(tmp / "footprint.py"), json.dumps([str(root) for root in watched]), str(tmp / "out"),
         *(str(tmp / "inputs" / name) for name in ("model", "accuracy_metric.py", "train.jsonl"))],
        tmp / "cwd", env))

    # DDP: torchrun --standalone, 2 gloo ranks, only loopback (unshare), nothing set by hand
    ddp = tmp_path_factory.mktemp("ddp")
    for name in ("home", "tmpdir"):
        (ddp / name).mkdir()
    (ddp / "ddp_eval.py").write_text(DDP_EVAL)
    launch = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "ddp_eval.py"]
    isolated = _network_namespace_works()
    if isolated:
        launch = ["unshare", "-rn", "sh", "-c", 'ip link set lo up && exec "$@"', "sh", *launch]
    env = _guarded_env(ddp, OMP_NUM_THREADS="1")
    started["ddp"] = (ddp, env, isolated, _start(launch, ddp, env))
    yield started
    _kill_started()  # the launches and their ranks, when a test did not wait for them
    for entry in started.values():
        entry[-1].communicate()


def _finish(process: subprocess.Popen, timeout: float = 240) -> tuple[int, str, str]:
    stdout, stderr = process.communicate(timeout=timeout)
    return process.returncode, stdout, stderr


def _attempts(env: dict) -> list[str]:
    log = Path(env["OFFLINE_GUARD_LOG"])
    return log.read_text().splitlines() if log.exists() else []


# ---- Q1: a config from a JSON file of any name -----------------------------------------------------------------------

def test_a_config_loads_from_a_json_file_of_any_name(tmp_path):
    from transformers import AutoConfig, GPT2Config, PretrainedConfig

    path = tmp_path / "my-model.json"
    AutoConfig.for_model("gpt2", n_embd=16, n_layer=1, n_head=1).to_json_file(path)
    assert type(AutoConfig.from_pretrained(path)) is GPT2Config  # a file path: model_type picks the class
    assert type(GPT2Config.from_json_file(path)) is GPT2Config
    generic = PretrainedConfig.from_json_file(path)
    assert type(generic) is PretrainedConfig and generic.model_type == "gpt2"  # the base class, not GPT2Config
    assert not hasattr(AutoConfig, "from_json_file")

    bert = tmp_path / "bert.json"
    AutoConfig.for_model("bert", hidden_size=8).to_json_file(bert)
    assert type(GPT2Config.from_json_file(bert)) is GPT2Config  # model_type "bert" not checked
    untyped = json.loads(bert.read_text())
    del untyped["model_type"]
    (tmp_path / "untyped.json").write_text(json.dumps(untyped))
    with pytest.raises(ValueError, match="Unrecognized model"):
        AutoConfig.from_pretrained(tmp_path / "untyped.json")


# ---- Q2, Q3, Q4: best-model selection and a used output_dir ----------------------------------------------------------

def _scored_run(output_dir: Path, scores, max_steps: int, eval_steps: int, save_steps: int, greater=True, seed=0,
                **extra):
    from transformers import Trainer, set_seed

    set_seed(seed)
    evaluations = iter(scores)
    args = arguments(output_dir.parent, output_dir=str(output_dir), max_steps=max_steps, eval_strategy="steps",
                     eval_steps=eval_steps, save_strategy="steps", save_steps=save_steps, load_best_model_at_end=True,
                     metric_for_best_model="score", greater_is_better=greater, seed=seed, **extra)
    trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows(), eval_dataset=rows(4),
                      compute_metrics=lambda prediction: {"score": next(evaluations)})
    trainer.train()
    return trainer


def _weights(path: Path) -> dict:
    from safetensors.torch import load_file

    return load_file(path / "model.safetensors")


def _holds(model, weights: dict) -> bool:
    state = model.state_dict()
    return all(state[name].equal(tensor) for name, tensor in weights.items())


@pytest.mark.parametrize("greater, scores", [pytest.param(True, [0.5, 0.7, 0.7], id="greater_is_better"),
                                             pytest.param(False, [0.5, 0.3, 0.3], id="lower_is_better")])
def test_of_equal_best_scores_the_first_wins(tmp_path, greater, scores):
    trainer = _scored_run(tmp_path / "out", scores, max_steps=3, eval_steps=1, save_steps=1, greater=greater)
    assert trainer.state.best_global_step == 2  # steps 2 and 3 tie: a later score must be strictly better
    assert trainer.state.best_model_checkpoint == str(tmp_path / "out" / "checkpoint-2")
    assert _holds(trainer.model, _weights(tmp_path / "out" / "checkpoint-2"))


def test_a_stale_checkpoint_of_an_earlier_run_is_loaded_as_the_best(tmp_path):
    """eval every step, save every 2, best at step 1: alone nothing is loaded (tests/test_silent_traps.py); in a folder
    where an earlier run left checkpoint-1, that old checkpoint is loaded as the best, without a word."""
    out = tmp_path / "out"
    _scored_run(out, [0.1], max_steps=1, eval_steps=1, save_steps=1, seed=1)  # the earlier run: checkpoint-1
    stale = _weights(out / "checkpoint-1")
    trainer = _scored_run(out, [0.9, 0.5, 0.6, 0.7], max_steps=4, eval_steps=1, save_steps=2)
    assert trainer.state.best_global_step == 1
    assert trainer.state.best_model_checkpoint == str(out / "checkpoint-1")
    assert _holds(trainer.model, stale)  # the earlier run's weights


def test_a_fresh_run_in_a_used_output_dir_keeps_and_resumes_the_old_checkpoints(tmp_path):
    from transformers import Trainer
    from transformers.trainer_utils import get_last_checkpoint

    out = tmp_path / "out"

    def run(max_steps, save_steps, seed, resume=None, folder=out, **extra):
        from transformers import set_seed

        set_seed(seed)
        args = arguments(tmp_path, output_dir=str(folder), max_steps=max_steps, save_strategy="steps",
                         save_steps=save_steps, seed=seed, **extra)
        trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows())
        trainer.train(resume_from_checkpoint=resume)
        return trainer

    run(6, 2, seed=1)  # the earlier run: checkpoint-2, -4, -6
    old = {step: _weights(out / f"checkpoint-{step}") for step in (2, 4, 6)}
    shutil.copytree(out, tmp_path / "earlier")
    run(3, 1, seed=0, save_only_model=True)  # on purpose a new run, same folder
    assert sorted(path.name for path in out.iterdir()) == [f"checkpoint-{n}" for n in (1, 2, 3, 4, 6)]
    rewritten = _weights(out / "checkpoint-2")
    assert not all(rewritten[name].equal(tensor) for name, tensor in old[2].items())  # written over
    assert json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["max_steps"] == 3
    run_files = ("optimizer.pt", "scheduler.pt", "rng_state.pth")
    assert not any((out / "checkpoint-1" / name).exists() for name in run_files)  # save_only_model: not written
    for name in run_files:  # but the earlier run's stay in the folder written over: a mix of two runs
        assert (out / "checkpoint-2" / name).read_bytes() == (tmp_path / "earlier" / "checkpoint-2" / name).read_bytes()
    assert get_last_checkpoint(out) == str(out / "checkpoint-6")  # what resume_from_checkpoint=True takes
    resumed = run(3, 1, seed=0, resume=True)
    assert resumed.state.global_step == 6 and _holds(resumed.model, old[6])  # the earlier run's end, 0 steps run

    # past max_steps, mid-epoch: one step when N lies inside the epoch that holds the new max_steps, else 0 steps
    same, later = tmp_path / "same-epoch", tmp_path / "later-epoch"
    run(7, 7, seed=0, folder=same, per_device_train_batch_size=2)  # 4 steps per epoch: checkpoint-7, epoch 2
    again = run(6, 100, seed=0, folder=same, resume=True, per_device_train_batch_size=2)  # 6 is in epoch 2 too
    assert again.state.global_step == 8 and sorted(path.name for path in same.iterdir()) == [
        "checkpoint-7", "checkpoint-8"]
    run(5, 5, seed=0, folder=later)  # 2 steps per epoch: checkpoint-5, epoch 3
    again = run(3, 100, seed=0, folder=later, resume=True)  # 3 is in epoch 2
    assert again.state.global_step == 5 and [path.name for path in later.iterdir()] == ["checkpoint-5"]

    # save_total_limit deletes the oldest by modification time: the earlier run's, an hour old, go first
    shutil.rmtree(out)
    shutil.copytree(tmp_path / "earlier", out)
    hour_ago = time.time() - 3600
    for folder in out.iterdir():
        os.utime(folder, (hour_ago, hour_ago))
    run(3, 1, seed=0, save_total_limit=2)
    assert sorted(path.name for path in out.iterdir()) == ["checkpoint-2", "checkpoint-3"]
    assert json.loads((out / "checkpoint-2" / "trainer_state.json").read_text())["max_steps"] == 3

    shutil.rmtree(out, ignore_errors=True)  # the answer: a new folder, or this before Trainer(...)
    assert get_last_checkpoint(run(3, 1, seed=0).args.output_dir) == str(out / "checkpoint-3")


# ---- Q5: a plain list of dicts as the dataset ------------------------------------------------------------------------

def test_a_list_of_dicts_trains_groups_by_length_and_resumes_bit_exact(tmp_path):
    from transformers import DataCollatorWithPadding, Trainer

    tokenizer = word_tokenizer(pad_token="[UNK]")
    texts = ["a b", "c", "a c b", "b", "a a a a b", "c c", "a", "b c a b c"]
    data = [{"text": text, "label": index % 2, **tokenizer(text)} for index, text in enumerate(texts)]
    keys = []

    class Recording(DataCollatorWithPadding):
        def __call__(self, features):
            keys.append(sorted(features[0]))
            return super().__call__(features)

    def trainer():
        args = arguments(tmp_path, per_device_train_batch_size=2, max_steps=4, save_strategy="steps", save_steps=2,
                         train_sampling_strategy="group_by_length")
        return Trainer(model=tiny_classifier(), args=args, train_dataset=data, data_collator=Recording(tokenizer))

    whole = trainer()
    assert type(whole._get_train_sampler()).__name__ == "LengthGroupedSampler"
    whole.train()
    assert keys[0] == ["attention_mask", "input_ids", "label"]  # "text" removed per batch, remove_unused_columns
    shutil.rmtree(Path(whole.args.output_dir) / "checkpoint-4")
    resumed = trainer()
    resumed.train(resume_from_checkpoint=True)  # from checkpoint-2: skips the batches already seen
    assert differing(whole.model.state_dict(), resumed.model.state_dict()) == []


# ---- Q7, Q9, Q14: tokenizers and embeddings --------------------------------------------------------------------------

def _recipe_tokenizer():
    """build_tokenizer() exactly as the shared setup of task-recipes.md defines it."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    source = next(block.source for block in blocks(RECIPES) if "def build_tokenizer" in block.source)
    tree = ast.parse(source)
    keep = [node for node in tree.body if (isinstance(node, ast.FunctionDef) and node.name == "build_tokenizer")
            or (isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "WORDS" for t in node.targets))]
    namespace = {"Tokenizer": Tokenizer, "models": models, "pre_tokenizers": pre_tokenizers,
                 "processors": processors, "PreTrainedTokenizerFast": PreTrainedTokenizerFast}
    exec(compile(ast.Module(keep, type_ignores=[]), str(RECIPES), "exec"), namespace)  # noqa: S102
    return namespace["build_tokenizer"]()


def _doc_function(document: Path, name: str):
    """The function ``name`` of a document's python blocks, with the block's imports, without its example lines."""
    source = next(block.source for block in blocks(document) if f"def {name}(" in block.source)
    keep = [node for node in ast.parse(source).body if isinstance(node, (ast.Import, ast.ImportFrom))
            or (isinstance(node, ast.FunctionDef) and node.name == name)]
    namespace: dict = {}
    exec(compile(ast.Module(keep, type_ignores=[]), str(document), "exec"), namespace)  # noqa: S102
    return namespace[name]


def test_special_tokens_are_added_only_by_a_post_processor_or_add_bos_token():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"[UNK]": 0, "<s>": 1, "</s>": 2, "a": 3, "b": 4}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    named = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", bos_token="<s>", eos_token="</s>")
    assert named("a b")["input_ids"] == [3, 4]  # naming bos_token adds nothing
    added = PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", bos_token="<s>", eos_token="</s>",
                                    add_bos_token=True, add_eos_token=True)
    assert added("a b")["input_ids"] == [1, 3, 4, 2]
    recipe = _recipe_tokenizer()  # the recipes' TemplateProcessing: [CLS] ... [SEP]
    ids = recipe("the movie")["input_ids"]
    assert (ids[0], ids[-1]) == (recipe.cls_token_id, recipe.sep_token_id) and len(ids) == 4


def test_text_target_puts_the_target_ids_in_labels():
    tokenizer = word_tokenizer()
    encoded = tokenizer(["a b", "c"], text_target=["b a", "a c"])
    assert encoded["labels"] == tokenizer(["b a", "a c"])["input_ids"]

    from transformers import DataCollatorForSeq2Seq

    padder = word_tokenizer(pad_token="[UNK]")
    padded = padder(["a b", "c"], text_target=["b a c", "a"], padding=True)
    assert padded["labels"] == [[3, 2, 4], [2, padder.pad_token_id, padder.pad_token_id]]  # the pad id, not -100
    unpadded = padder(["a b", "c"], text_target=["b a c", "a"])
    features = [{key: unpadded[key][i] for key in unpadded} for i in range(2)]
    assert DataCollatorForSeq2Seq(padder)(features)["labels"].tolist() == [[3, 2, 4], [2, -100, -100]]


def test_token_type_ids_shift_every_gpt2_position_and_reach_it_through_trainer(tmp_path):
    import torch
    from datasets import Dataset
    from transformers import (AutoConfig, AutoModelForCausalLM, BertTokenizerFast, DataCollatorForLanguageModeling,
                              Trainer)

    assert "token_type_ids" not in _recipe_tokenizer()("the movie")  # in-memory PreTrainedTokenizerFast: not returned
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a", "b", "c"]))
    bert = BertTokenizerFast(str(tmp_path / "vocab.txt"))
    assert bert("a b")["token_type_ids"] == [0, 0, 0, 0]  # BERT-family tokenizers return them
    assert bert("a b", return_token_type_ids=False).keys() == {"input_ids", "attention_mask"}

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
        "gpt2", vocab_size=len(bert), n_embd=16, n_layer=1, n_head=2, n_positions=16, bos_token_id=2, eos_token_id=3,
        pad_token_id=0)).eval()
    ids = torch.tensor([bert("a b c")["input_ids"]])
    with torch.no_grad():
        plain = model(input_ids=ids).logits
        typed = model(input_ids=ids, token_type_ids=torch.zeros_like(ids)).logits
        shifted = model(inputs_embeds=model.transformer.wte(ids) + model.transformer.wte.weight[0]).logits
    assert not torch.allclose(plain, typed) and torch.allclose(typed, shifted, atol=1e-6)  # + embedding of id 0

    data = Dataset.from_dict({"text": ["a b", "c a"]}).map(lambda batch: bert(batch["text"]), batched=True)
    trainer = Trainer(model=model, args=arguments(tmp_path), train_dataset=data,
                      data_collator=DataCollatorForLanguageModeling(bert, mlm=False))
    assert "token_type_ids" in next(iter(trainer.get_train_dataloader()))  # kept: GPT-2's forward takes them


def test_resize_token_embeddings_draws_new_rows_near_the_mean_of_the_old():
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM

    def gpt2(vocab_size=8):
        torch.manual_seed(0)
        return AutoModelForCausalLM.from_config(AutoConfig.for_model("gpt2", vocab_size=vocab_size, n_embd=16,
                                                                     n_layer=1, n_head=2, n_positions=16,
                                                                     bos_token_id=0, eos_token_id=0))

    built = gpt2(vocab_size=11).get_input_embeddings().weight.detach()  # vocab_size set before building
    assert built.std().item() == pytest.approx(0.02, rel=0.3) and built[8:].std().item() > 0.005  # every row drawn

    model = gpt2()
    old = model.get_input_embeddings().weight.detach().clone()
    model.resize_token_embeddings(11)
    new = model.get_input_embeddings().weight.detach()
    assert torch.equal(new[:8], old) and model.config.vocab_size == 11
    assert torch.allclose(new[8:], old.mean(0).expand(3, -1), atol=1e-5)  # mean_resizing=True, the default
    assert torch.equal(new[8:], old.mean(0).expand(3, -1))  # 8 old rows, 16 hidden units: the mean itself
    larger = gpt2(vocab_size=32)  # more old rows than hidden units: drawn from N(mean, 1e-9 x covariance)
    old_rows = larger.get_input_embeddings().weight.detach().clone()
    larger.resize_token_embeddings(35)
    drawn = larger.get_input_embeddings().weight.detach()[32:]
    assert torch.allclose(drawn, old_rows.mean(0).expand(3, -1), atol=1e-5)  # near the mean
    assert not torch.equal(drawn[0], old_rows.mean(0)) and not torch.equal(drawn[0], drawn[1])  # drawn, not set
    assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()  # still tied
    plain = gpt2()
    plain.resize_token_embeddings(11, mean_resizing=False)
    added = plain.get_input_embeddings().weight.detach()[8:]
    assert added.std().item() == pytest.approx(plain.config.initializer_range, rel=0.5)  # a fresh N(0, 0.02) draw
    assert not torch.allclose(added, old.mean(0).expand(3, -1), atol=1e-3)


# ---- Q8, Q13: what the loss switches change --------------------------------------------------------------------------

def test_loss_type_for_causal_lm_scales_the_training_gradient_and_is_read_at_init(tmp_path):
    import torch
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer

    tokenizer = word_tokenizer(pad_token="[UNK]")
    data = Dataset.from_dict({"text": ["a b c", "b c", "a a b c b", "c"]}).map(
        lambda batch: tokenizer(batch["text"]), batched=True, remove_columns=["text"])
    collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
    labels = collator([data[i] for i in range(len(data))])["labels"]
    labelled, predicted = int((labels != -100).sum()), int((labels[:, 1:] != -100).sum())

    def first_step(loss_type=None, after_init=False):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
            "gpt2", vocab_size=len(tokenizer), n_embd=16, n_layer=1, n_head=2, n_positions=16, bos_token_id=1,
            eos_token_id=1, pad_token_id=0))
        if loss_type and not after_init:
            model.loss_type = loss_type
        args = arguments(tmp_path, max_steps=1, per_device_train_batch_size=len(data), learning_rate=0.0,
                         logging_steps=1)
        trainer = Trainer(model=model, args=args, train_dataset=data, data_collator=collator)
        if after_init:
            model.loss_type = loss_type
        trainer.train()
        evaluated = trainer.evaluate(data)["eval_loss"]  # one batch of all 4 rows; learning_rate 0: same weights
        return {**trainer.state.log_history[0], "eval_loss": evaluated}

    default, fixed, late = first_step(), first_step("ForCausalLM"), first_step("ForCausalLM", after_init=True)
    assert fixed["eval_loss"] / default["eval_loss"] == pytest.approx(labelled / predicted, rel=1e-5)  # eval too
    assert fixed["loss"] / default["loss"] == pytest.approx(labelled / predicted, rel=1e-5)
    assert fixed["grad_norm"] / default["grad_norm"] == pytest.approx(labelled / predicted, rel=1e-4)  # the gradient
    assert late["loss"] == pytest.approx(default["loss"], rel=1e-6)  # set after Trainer(...): no effect


def test_accepts_loss_kwargs_is_read_at_init_and_divides_once(tmp_path):
    from transformers import Trainer

    def logged_loss(flag_before=None, flag_after=None, scaled_for_ga=None):
        from transformers import set_seed

        set_seed(0)
        model = tiny_classifier()
        if flag_before is not None:
            model.accepts_loss_kwargs = flag_before
        args = arguments(tmp_path, max_steps=1, gradient_accumulation_steps=2, learning_rate=0.0, logging_steps=1)
        trainer = Trainer(model=model, args=args, train_dataset=rows())
        if flag_after is not None:
            model.accepts_loss_kwargs = flag_after
        if scaled_for_ga is not None:
            trainer.loss_is_scaled_for_ga = scaled_for_ga
        trainer.train()
        return trainer.model_accepts_loss_kwargs, trainer.state.log_history[0]["loss"]

    shipped, fixed = logged_loss(), logged_loss(flag_before=False)
    assert shipped[0] is True and fixed[0] is False
    assert shipped[1] / fixed[1] == pytest.approx(2, rel=1e-5)  # the accumulation trap of SKILL.md
    late = logged_loss(flag_after=False)
    assert late[0] is True and late[1] == pytest.approx(shipped[1], rel=1e-6)  # set after Trainer(...): ignored
    both = logged_loss(flag_before=False, scaled_for_ga=False)
    assert both[1] == pytest.approx(fixed[1], rel=1e-6)  # both: one division, not two
    assert logged_loss(flag_before=False, scaled_for_ga=True)[1] == pytest.approx(shipped[1], rel=1e-5)



def test_a_compute_loss_func_is_taken_as_scaled_so_a_mean_is_accumulation_times_too_large(tmp_path):
    """task-recipes.md's weighted_loss comment: a per-batch mean is right with one process and no accumulation only;
    the Trainer never divides a compute_loss_func's loss by the accumulation steps. A Trainer subclass whose
    compute_loss divides a sum by num_items_in_batch logs the right loss too (the trap checker's accumulation fix)."""
    import torch
    from transformers import Trainer, set_seed

    def mean(outputs, labels, num_items_in_batch=None):
        return torch.nn.functional.cross_entropy(outputs.logits, labels)

    def summed(outputs, labels, num_items_in_batch=None):
        return torch.nn.functional.cross_entropy(outputs.logits, labels, reduction="sum") / num_items_in_batch

    def logged(loss_func, steps):
        set_seed(0)
        args = arguments(tmp_path, max_steps=1, gradient_accumulation_steps=steps, learning_rate=0.0, logging_steps=1)
        trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows(), compute_loss_func=loss_func)
        trainer.train()
        return trainer.state.log_history[0]["loss"]

    assert logged(mean, 2) / logged(summed, 2) == pytest.approx(2, rel=1e-5)
    assert logged(mean, 1) == pytest.approx(logged(summed, 1), rel=1e-5)

    class SummingTrainer(Trainer):  # the trap checker counts this override as the accumulation fix
        def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
            outputs = model(**{key: value for key, value in inputs.items() if key != "labels"})
            return summed(outputs, inputs["labels"], num_items_in_batch)

    set_seed(0)
    args = arguments(tmp_path, max_steps=1, gradient_accumulation_steps=2, learning_rate=0.0, logging_steps=1)
    trainer = SummingTrainer(model=tiny_classifier(), args=args, train_dataset=rows())
    trainer.train()
    assert trainer.state.log_history[0]["loss"] == pytest.approx(logged(summed, 2), rel=1e-5)

# ---- Q10, Q11, Q12, Q16: saving, the final checkpoint, resuming a finished run, the optimizer ------------------------

def test_save_model_saves_whatever_trainer_model_is(tmp_path):
    import torch
    from transformers import Trainer

    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp_path), train_dataset=rows())
    trainer.train()
    other = tiny_classifier()
    with torch.no_grad():
        other.classifier.weight.fill_(7.0)
    trainer.model = other
    trainer.save_model(str(tmp_path / "saved"))
    assert bool((_weights(tmp_path / "saved")["classifier.weight"] == 7.0).all())


@pytest.mark.parametrize("max_steps, after_resume", [
    pytest.param(3, 4, id="ends-mid-epoch-one-extra-step"),
    pytest.param(4, 4, id="ends-an-epoch-no-step"),
])
def test_the_last_step_is_saved_and_resuming_a_finished_run(tmp_path, max_steps, after_resume):
    """8 rows, batches of 4: 2 steps per epoch. save_steps stays at its default, 500."""
    from transformers import Trainer

    def run(resume=None):
        args = arguments(tmp_path, max_steps=max_steps, save_strategy="steps", lr_scheduler_type="constant",
                         logging_steps=1)
        trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows())
        output = trainer.train(resume_from_checkpoint=resume)
        return trainer, output

    finished, _ = run()
    assert finished.args.save_steps == 500
    assert [path.name for path in (tmp_path / "out").iterdir()] == [f"checkpoint-{max_steps}"]

    # a retry after a kill during the next save: jobs.md's newest_complete_checkpoint() skips the torn newest
    # checkpoint, while resume_from_checkpoint=True takes it and raises, FileNotFoundError or (no weights either)
    # ValueError
    newest = _doc_function(JOBS, "newest_complete_checkpoint")
    out = tmp_path / "out"
    last, torn = out / f"checkpoint-{max_steps}", out / f"checkpoint-{max_steps + 5}"
    shutil.copytree(last, torn)
    (torn / "trainer_state.json").unlink()
    assert newest(out) == (str(last), max_steps)  # finished: the job loads it instead of training
    with pytest.raises(FileNotFoundError, match="trainer_state.json"):
        run(resume=True)
    (torn / "model.safetensors").unlink()
    with pytest.raises(ValueError, match=f"Can't find a valid checkpoint at .*checkpoint-{max_steps + 5}"):
        run(resume=True)
    (torn / "trainer_state.json").write_text('{"global_step": ')  # cut short by a kill
    assert newest(out) == (str(last), max_steps) and newest(tmp_path / "never-started") == (None, 0)
    shutil.rmtree(torn)
    weights = {name: tensor.clone() for name, tensor in finished.model.state_dict().items()}
    again, output = run(resume=True)
    assert output.global_step == after_resume and again.state.max_steps == max_steps
    assert sorted(path.name for path in (tmp_path / "out").iterdir()) == sorted(
        {f"checkpoint-{max_steps}", f"checkpoint-{after_resume}"})
    unchanged = differing(weights, again.model.state_dict()) == []
    assert unchanged == (after_resume == max_steps)  # the extra step trains (constant schedule)


def test_the_default_optimizer_and_fused_adamw_on_cpu(tmp_path):
    import torch
    from transformers import Trainer

    newer = tuple(int(part) for part in torch.__version__.split(".")[:2]) >= (2, 8)
    default = Trainer(model=tiny_classifier(), args=arguments(tmp_path), train_dataset=rows())
    assert default.args.optim.value == ("adamw_torch_fused" if newer else "adamw_torch")
    default.train()  # use_cpu=True
    assert bool(default.optimizer.optimizer.defaults["fused"]) is newer
    fused = Trainer(model=tiny_classifier(), args=arguments(tmp_path, optim="adamw_torch_fused"), train_dataset=rows())
    fused.train()  # on the CPU, on torch 2.7 as well
    assert fused.optimizer.optimizer.defaults["fused"] is True


# ---- the background processes: Q6 and Q15 ----------------------------------------------------------------------------

def test_what_a_run_writes_outside_output_dir(background):
    tmp, env, watched, before, process = background["footprint"]
    code, stdout, stderr = _finish(process)
    assert code == 0, stderr[-3000:]
    assert _attempts(env) == []  # no offline variable for the local folder or file, no network attempt
    found = json.loads(next(line for line in stdout.splitlines() if line.startswith("FOOTPRINT "))[10:])
    report, hf_home, tmpdir = found["stages"], Path(env["HF_HOME"]), Path(env["TMPDIR"])

    def under(stage):
        return sorted({Path(path).relative_to(hf_home).parts[0] for path in report[stage]
                       if Path(path).is_relative_to(hf_home) and Path(path) != hf_home})

    # importing Trainer: torch 2.7 writes a module into a temporary folder of TMPDIR, gone when the process ends;
    # torch 2.13 makes an empty folder $TMPDIR/torchinductor_<user> and leaves it
    import torch

    old_torch = tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 8)
    written = [Path(path).relative_to(tmpdir).parts for path in report["import"]]
    if old_torch:
        assert ("_remote_module_non_scriptable.py" in {parts[-1] for parts in written}
                and {parts[0] for parts in written} == {written[0][0]} and written[0][0].startswith("tmp")), written
    else:
        assert len(written) == 1 and written[0][0].startswith("torchinductor_"), written
    assert report["from_pretrained"] == report["Dataset.from_dict/map"] == []
    assert under("load_dataset json") == ["datasets"] and any(p.endswith(".arrow") for p in report["load_dataset json"])
    assert under("evaluate.load") == ["metrics", "modules"]  # the module copied; metrics/ made, a lock file later
    assert under("Trainer.train/save_model") == ["metrics"]  # evaluate's compute(), called by compute_metrics
    every = [path for stage, paths in report.items() if stage != "import" for path in paths]
    assert all(Path(path).is_relative_to(hf_home) for path in every), every  # HOME, XDG, cwd: nothing
    after = {path: state for root in watched for path, state in tree_state(root).items()}
    left = stray_files(before, after, tmp / "out")
    outside = [Path(path) for path in left if not Path(path).is_relative_to(hf_home)]
    if old_torch:
        assert outside == []  # TMPDIR is empty again
    else:
        assert [(path.parent, path.name.startswith("torchinductor_"), path.is_dir()) for path in outside] == [
            (tmpdir, True, True)] and not any(outside[0].iterdir())  # one empty folder: $TMPDIR/torchinductor_<user>
    assert any(path.name == "model.safetensors" for path in (tmp / "out").rglob("*"))
    # without HF_HOME: $XDG_CACHE_HOME/huggingface; without either: ~/.cache/huggingface
    for unset, base in (("HF_HOME", Path(env["XDG_CACHE_HOME"]) / "huggingface"),
                        ("XDG_CACHE_HOME", Path(env["HOME"]) / ".cache" / "huggingface")):
        assert found["caches"][unset] == [str(base / "datasets"), str(base / "modules"), str(base / "metrics")]


def test_a_killed_process_leaves_what_importing_trainer_put_in_tmpdir(tmp_path):
    """The temporary module of torch 2.7 is removed by an exit handler, which a SIGKILL never runs."""
    import torch

    tmpdir = tmp_path / "tmpdir"
    tmpdir.mkdir()
    code = "import os, signal\nfrom transformers import Trainer\nos.kill(os.getpid(), signal.SIGKILL)"
    env = isolated_env(tmp_path, {"TMPDIR": str(tmpdir)})
    env.pop("TORCHINDUCTOR_CACHE_DIR")  # the default, under TMPDIR, as a user has it
    assert subprocess.run([sys.executable, "-c", code], env=env, cwd=tmp_path, timeout=300).returncode == -9
    left = sorted(str(path.relative_to(tmpdir)) for path in tmpdir.rglob("*"))
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 8):
        assert [Path(path).name for path in left] == ["tmp" + left[0][3:], "_remote_module_non_scriptable.py"], left
    else:
        assert len(left) == 1 and left[0].startswith("torchinductor_"), left  # the same empty folder as a clean exit


def test_ddp_evaluation_without_a_network_and_with_an_uneven_eval_set(background):
    ddp, env, isolated, process = background["ddp"]
    code, stdout, stderr = _finish(process)
    assert code == 0 and _attempts(env) == [], stderr[-3000:]
    if not isolated:
        pytest.skip("unshare -rn is not available here: the launch ran, but not in a loopback-only namespace")
    result = json.loads(next(line for line in stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert (result["world_size"], result["backend"]) == (2, "gloo") and result["master_addr"]  # set by torchrun
    p = result["per_sample"]
    assert result["predictions"] == 5 and result["label_ids"] == result["labels"]  # once each, in order
    assert result["even"] == pytest.approx(sum(p[:4]) / 4, rel=1e-5)  # 4 = 2 ranks x 2: the per-sample mean
    assert result["even_shipped"] == pytest.approx(2 * sum(p[:4]) / 4, rel=1e-5)  # without the fix: x 2 ranks
    # 5 samples: each rank's batch mean counts once per row, and the last batch of rank 0 is [4, 0]: sample 0 again
    assert result["uneven"] == pytest.approx((p[0] + p[1] + p[2] + p[3] + (p[4] + p[0]) / 2) / 5, rel=1e-5)
    assert abs(result["uneven"] - sum(p) / 5) > 1e-4


# ---- Q17-Q25: what the everyday patterns of jobs.md leave out --------------------------------------------------------

# Q17, Q25: a machine that pins the specific cache variables, a script that sets HF_HOME (as agents write it) before
# its imports and passes cache_dir; with MODULES also HF_MODULES_CACHE. Dataset.from_json with no offline variable.
CACHES = r"""
import json, os, sys
from pathlib import Path

out, data = Path(sys.argv[1]), Path(sys.argv[2])
os.environ["HF_HOME"] = str(out / "hf")
if sys.argv[3] == "modules":
    os.environ["HF_MODULES_CACHE"] = str(out / "modules")
import datasets.config, evaluate, evaluate.config, huggingface_hub.constants
from datasets import Dataset

rows = Dataset.from_json(str(data / "train.jsonl"), cache_dir=str(out / "cache"))
metric = evaluate.load(str(data / "accuracy_metric.py"), cache_dir=str(out / "cache"))
metric.compute(predictions=[1, 0], references=[1, 1])
print("CACHES " + json.dumps({"datasets": str(datasets.config.HF_DATASETS_CACHE), "hub": huggingface_hub.constants.HF_HUB_CACHE,
      "modules": str(evaluate.config.HF_MODULES_CACHE), "metrics": str(evaluate.config.HF_METRICS_CACHE),
      "evaluate": str(evaluate.config.HF_EVALUATE_CACHE), "rows": len(rows)}))
"""
PINNED = {"HF_DATASETS_CACHE": "datasets", "HF_HUB_CACHE": "hub", "HF_MODULES_CACHE": "modules",
          "HF_METRICS_CACHE": "metrics", "HF_EVALUATE_CACHE": "evaluate"}


@pytest.mark.parametrize("variant", ["hf_home_only", "modules"])
def test_a_machines_specific_cache_variable_wins_over_the_scripts_hf_home(tmp_path, variant):
    machine, out, data = tmp_path / "machine", tmp_path / "out", tmp_path / "data"
    for folder in (machine, data, tmp_path / "cwd"):
        folder.mkdir()
    (data / "train.jsonl").write_text('{"text": "a b", "label": 1}\n{"text": "c", "label": 0}\n')
    shutil.copy(SKILL / "assets" / "accuracy_metric.py", data / "accuracy_metric.py")
    (tmp_path / "caches.py").write_text(CACHES)
    env = isolated_env(tmp_path, {name: str(machine / folder) for name, folder in PINNED.items()})
    result = subprocess.run([sys.executable, str(tmp_path / "caches.py"), str(out), str(data), variant], env=env,
                            cwd=tmp_path / "cwd", capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]
    assert _attempts(env) == []  # Dataset.from_json: no s3 lookup, with no offline variable (Q25)
    found = json.loads(next(line for line in result.stdout.splitlines() if line.startswith("CACHES "))[7:])
    pinned = {folder: str(machine / folder) for folder in PINNED.values()}
    if variant == "modules":
        pinned["modules"] = str(out / "modules")  # set by the script itself, before importing evaluate
    assert {key: found[key] for key in pinned} == pinned  # the machine's variables, not the script's HF_HOME
    assert found["rows"] == 2
    written = sorted(str(path.relative_to(tmp_path)) for path in machine.rglob("*") if path.is_file())
    if variant == "modules":
        assert written == []  # everything inside out
    else:  # cache_dir moved the Arrow copy and the metric's lock files; the module copy went to HF_MODULES_CACHE
        assert written and all(path.startswith("machine/modules/") for path in written), written
        assert any(path.endswith("accuracy_metric.py") for path in written)
    assert any((out / "cache").rglob("*.arrow")) and not any(path.is_file() for path in (tmp_path / "cwd").rglob("*"))


def _t5(dropout=0.1):
    from transformers import AutoConfig, AutoModelForSeq2SeqLM

    return AutoModelForSeq2SeqLM.from_config(AutoConfig.for_model(
        "t5", vocab_size=16, d_model=16, d_ff=16, d_kv=8, num_layers=1, num_heads=2, pad_token_id=0, eos_token_id=1,
        decoder_start_token_id=0, dropout_rate=dropout))


def test_train_leaves_train_mode_on_and_generate_keeps_it(tmp_path):
    import torch
    from transformers import Trainer, set_seed

    modes = {}
    for eval_strategy in ("no", "steps"):  # "steps": an evaluation at the last step, after the last training step
        set_seed(0)
        data = [{"input_ids": ids, "labels": ids.flip(0)} for ids in torch.randint(2, 16, (8, 5))]
        trainer = Trainer(model=_t5(), args=arguments(tmp_path, eval_strategy=eval_strategy, eval_steps=2),
                          train_dataset=data, eval_dataset=data)
        trainer.train()
        modes[eval_strategy] = trainer.model.training
    assert modes == {"no": True, "steps": False}
    trainer.model.train()
    trainer.predict(data)
    assert not trainer.model.training  # predict and evaluate switch to eval mode themselves

    set_seed(0)
    model = _t5().train()
    ids = torch.randint(2, 16, (16, 6))
    dropped = [model.generate(input_ids=ids, max_length=8) for _ in range(2)]
    assert model.training  # generate() does not switch to eval mode
    assert not torch.equal(dropped[0], dropped[1])  # dropout on: greedy decoding changes from call to call
    model.eval()
    assert torch.equal(model.generate(input_ids=ids, max_length=8), model.generate(input_ids=ids, max_length=8))


def test_log_history_holds_unrounded_values_and_only_the_printed_logs_are_rounded(tmp_path, capsys):
    scores = [0.123456789123, 0.1234567891231, 0.1]
    trainer = _scored_run(tmp_path / "out", scores, max_steps=3, eval_steps=1, save_steps=1)
    logged = [entry["eval_score"] for entry in trainer.state.log_history if "eval_score" in entry]
    assert logged == scores  # exact, in memory
    saved = json.loads((tmp_path / "out" / "checkpoint-3" / "trainer_state.json").read_text())["log_history"]
    assert [entry["eval_score"] for entry in saved if "eval_score" in entry] == scores  # and in trainer_state.json
    assert trainer.state.best_global_step == 2  # compared unrounded: step 2 is higher by 1e-13
    printed = capsys.readouterr().out
    assert printed.count("'eval_score': '0.1235'") == 2  # the console shows 4 significant digits: a seeming tie


@pytest.mark.parametrize("tokenizer_in", ["processing_class", "collator", "nowhere"])
def test_save_model_saves_the_tokenizer_of_the_processing_class_or_else_of_the_collator(tmp_path, tokenizer_in):
    from transformers import DataCollatorWithPadding, Trainer

    tokenizer = word_tokenizer(pad_token="[UNK]")
    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp_path), train_dataset=rows(),
                      processing_class=tokenizer if tokenizer_in == "processing_class" else None,
                      data_collator=DataCollatorWithPadding(tokenizer) if tokenizer_in == "collator" else None)
    trainer.save_model(str(tmp_path / "final"))
    saved = {path.name for path in (tmp_path / "final").iterdir()}
    assert {"config.json", "model.safetensors", "training_args.bin"} <= saved  # training_args.bin either way
    assert ({"tokenizer.json", "tokenizer_config.json"} <= saved) is (tokenizer_in != "nowhere")
    assert tokenizer_in != "nowhere" or not any(name.startswith("tokenizer") for name in saved)


def test_the_best_checkpoint_loaded_at_the_end_is_saved_byte_for_byte(tmp_path):
    trainer = _scored_run(tmp_path / "out", [0.5, 0.9, 0.1, 0.2], max_steps=4, eval_steps=1, save_steps=1)
    assert trainer.state.best_model_checkpoint == str(tmp_path / "out" / "checkpoint-2")
    trainer.save_model(str(tmp_path / "final"))
    best = (tmp_path / "out" / "checkpoint-2" / "model.safetensors").read_bytes()
    assert (tmp_path / "final" / "model.safetensors").read_bytes() == best
    assert (tmp_path / "out" / "checkpoint-4" / "model.safetensors").read_bytes() != best  # the last step's differ


def test_accepts_loss_kwargs_is_read_from_the_model_or_its_class_at_init_and_the_trainer_flag_acts_later(
        tmp_path, monkeypatch):
    from transformers import Trainer, set_seed

    def logged(on_class=None, after=None, on_trainer=None):
        set_seed(0)
        model = tiny_classifier()
        if on_class is not None:
            monkeypatch.setattr(type(model), "accepts_loss_kwargs", on_class, raising=False)  # undone after
        args = arguments(tmp_path, max_steps=1, gradient_accumulation_steps=2, learning_rate=0.0, logging_steps=1)
        trainer = Trainer(model=model, args=args, train_dataset=rows())
        if after is not None:
            monkeypatch.setattr(type(model), "accepts_loss_kwargs", after, raising=False)
        if on_trainer is not None:
            trainer.model_accepts_loss_kwargs = on_trainer
        trainer.train()
        return trainer.model_accepts_loss_kwargs, trainer.state.log_history[0]["loss"]

    assert not hasattr(type(tiny_classifier()), "accepts_loss_kwargs")  # as shipped: read from forward's **kwargs
    shipped = logged()
    on_class = logged(on_class=False)
    monkeypatch.undo()
    late = logged(after=False)
    monkeypatch.undo()
    on_trainer = logged(on_trainer=False)
    assert shipped[0] is True and on_class[0] is False and late[0] is True and on_trainer[0] is False
    assert shipped[1] / on_class[1] == pytest.approx(2, rel=1e-5)  # the class attribute, set before: fixed
    assert late[1] == pytest.approx(shipped[1], rel=1e-6)  # set on the class after Trainer(...): ignored
    assert on_trainer[1] == pytest.approx(on_class[1], rel=1e-6)  # the trainer's own flag, after init: fixed too


def test_the_trainer_copies_the_tokenizers_pad_id_into_the_model_config(tmp_path):
    import torch
    from datasets import Dataset
    from transformers import AutoConfig, AutoModelForCausalLM, DataCollatorForLanguageModeling, Trainer

    def run(set_config, processing_class=True):
        tokenizer = word_tokenizer(eos_token="</s>")
        tokenizer.add_special_tokens({"pad_token": "[PAD]"})
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
            "gpt2", vocab_size=5, n_embd=16, n_layer=1, n_head=2, n_positions=16, bos_token_id=1, eos_token_id=1))
        model.resize_token_embeddings(len(tokenizer))
        assert model.config.pad_token_id is None and model.generation_config.pad_token_id is None
        if set_config:
            model.config.pad_token_id = tokenizer.pad_token_id
        data = Dataset.from_dict({"text": ["a b c", "b", "a a b c b", "c"]}).map(
            lambda batch: tokenizer(batch["text"]), batched=True, remove_columns=["text"])
        collator = DataCollatorForLanguageModeling(tokenizer, mlm=False)
        labels = collator([data[i] for i in range(4)])["labels"]
        assert int((labels == -100).sum()) == 10 and tokenizer.pad_token_id == 5  # the padding, by the tokenizer's id
        trainer = Trainer(model=model, args=arguments(tmp_path, logging_steps=1), train_dataset=data,
                          processing_class=tokenizer if processing_class else None, data_collator=collator)
        trainer.train()
        losses = [entry["loss"] for entry in trainer.state.log_history if "loss" in entry]
        return losses, model.config.pad_token_id, model.generation_config.pad_token_id

    unset, config_set, no_processing_class = run(False), run(True), run(False, processing_class=False)
    assert unset[0] == config_set[0] == no_processing_class[0]  # the loss does not read config.pad_token_id
    assert unset[1:] == config_set[1:] == (5, 5)  # train() wrote the tokenizer's pad id into both configs
    assert no_processing_class[1:] == (None, None)


def test_mean_resizing_is_exact_or_a_draw_that_set_seed_repeats():
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, set_seed

    def new_rows(vocab_size, seed):
        torch.manual_seed(0)
        model = AutoModelForCausalLM.from_config(AutoConfig.for_model(
            "gpt2", vocab_size=vocab_size, n_embd=16, n_layer=1, n_head=2, n_positions=16, bos_token_id=0,
            eos_token_id=0))
        set_seed(seed)
        model.resize_token_embeddings(vocab_size + 1)
        return model.get_input_embeddings().weight.detach()[vocab_size:].clone()

    assert torch.equal(new_rows(8, seed=0), new_rows(8, seed=1))  # no more old rows than hidden units: the mean
    assert torch.equal(new_rows(32, seed=0), new_rows(32, seed=0))  # more: a draw, the same after the same seed
    assert not torch.equal(new_rows(32, seed=0), new_rows(32, seed=1))
    torch.manual_seed(0)  # the old rows new_rows(32, ...) starts from
    old = AutoModelForCausalLM.from_config(AutoConfig.for_model(
        "gpt2", vocab_size=32, n_embd=16, n_layer=1, n_head=2, n_positions=16, bos_token_id=0,
        eos_token_id=0)).get_input_embeddings().weight.detach()
    assert (new_rows(32, seed=0) - old.mean(dim=0)).abs().max() < 1e-5  # a draw hugging the mean: seed for bit-exactness
    first = "import torch; print(torch.initial_seed(), torch.randn(3).tolist())"  # a fresh process, no seed set
    launches = {subprocess.run([sys.executable, "-c", first], capture_output=True, text=True, check=True,
                               timeout=120).stdout for _ in range(2)}
    assert len(launches) == 2, launches  # torch seeds its generator anew at every launch: set a seed first


def test_a_new_head_is_drawn_at_load_so_only_a_seed_set_before_it_repeats_it(tmp_path):
    """jobs.md's new-head pattern: ignore_mismatched_sizes draws the new head inside from_pretrained, in a fresh
    process from torch's per-launch seed; the Trainer's seed comes too late; set_seed(0) before loading repeats it."""
    tiny_classifier().save_pretrained(tmp_path / "two")
    load = ("import sys; from transformers import AutoModelForSequenceClassification, set_seed\n"
            "if sys.argv[2] == 'seed': set_seed(0)\n"
            "model = AutoModelForSequenceClassification.from_pretrained(sys.argv[1], num_labels=4, "
            "ignore_mismatched_sizes=True)\n"
            "print(model.classifier.weight.sum().item(), model.classifier.weight.shape[0])")

    def head(seeded):
        return subprocess.run([sys.executable, "-c", load, str(tmp_path / "two"), seeded], capture_output=True,
                              text=True, check=True, timeout=240).stdout.split()

    unseeded, seeded = [head("none") for _ in range(2)], [head("seed") for _ in range(2)]
    assert unseeded[0][1] == "4" and unseeded[0] != unseeded[1]
    assert seeded[0] == seeded[1]


def test_a_torn_checkpoint_skipped_by_the_job_is_written_again_on_resume(tmp_path):
    """jobs.md's resume pattern: newest_complete_checkpoint() skips a checkpoint a kill cut short, the resume from the
    one before writes it again, whole, and ends on the uninterrupted run's weights."""
    from transformers import Trainer, set_seed

    newest = _doc_function(JOBS, "newest_complete_checkpoint")

    def run(folder, resume=None):
        set_seed(0)
        args = arguments(tmp_path, output_dir=str(folder), max_steps=4, save_strategy="steps", save_steps=2,
                         per_device_train_batch_size=2)  # 4 steps per epoch: the run ends mid-epoch
        trainer = Trainer(model=tiny_classifier(), args=args, train_dataset=rows())
        trainer.train(resume_from_checkpoint=resume)
        return trainer

    whole = run(tmp_path / "whole")
    killed = tmp_path / "killed"
    run(killed)
    (killed / "checkpoint-4" / "trainer_state.json").write_text("")  # a kill while it was written
    optimizer = killed / "checkpoint-4" / "optimizer.pt"
    optimizer.write_bytes(optimizer.read_bytes()[:100])
    checkpoint, step = newest(killed)
    assert (checkpoint, step) == (str(killed / "checkpoint-2"), 2)
    resumed = run(killed, resume=checkpoint)
    assert resumed.state.global_step == 4 and differing(whole.model.state_dict(), resumed.model.state_dict()) == []
    assert newest(killed) == (str(killed / "checkpoint-4"), 4)  # written again, whole
    assert optimizer.read_bytes() == (tmp_path / "whole" / "checkpoint-4" / "optimizer.pt").read_bytes()
