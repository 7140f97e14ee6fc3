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
"""Prove checkpointing and resume with the Transformers Trainer on a tiny random GPT-2, offline, in seconds.

Runs, all in --output-dir:
  straight/    6 steps, a checkpoint every 3: checkpoint-3/ and checkpoint-6/; checks what a checkpoint holds
  by-path/     train(resume_from_checkpoint="straight/checkpoint-3"): final weights bitwise equal to straight's
  latest/      a copy of checkpoint-3, then train(resume_from_checkpoint=True): picks it up, same final weights
  extended/    resume from straight/checkpoint-6 with max_steps raised to 8: the first resumed step runs at the
               old schedule's final learning rate, 0 (why a resume must keep max_steps)
  best/        evaluation and a save every 2 steps, load_best_model_at_end with a scripted metric: the model in
               memory at the end is checkpoint-4 (the best), and save_total_limit=1 still keeps it
On a GPU the runs use bf16 and full_determinism=True so the bitwise comparison holds there too.
"""

from __future__ import annotations

import contextlib
import shutil
import sys
from pathlib import Path

from smoke_contract import build_parser, require, run_main

SCRIPT = "checkpoint_smoke.py"
DISTRIBUTIONS = ["transformers", "torch", "accelerate", "safetensors", "tokenizers"]
VOCABULARY = ["[PAD]", "[UNK]", "</s>", *"the a movie film plot was is very good bad fine dull".split()]
CHECKPOINT_FILES = {"config.json", "generation_config.json", "model.safetensors", "optimizer.pt", "scheduler.pt",
                    "rng_state.pth", "trainer_state.json", "training_args.bin", "tokenizer.json",
                    "tokenizer_config.json"}


def parse_args():
    return build_parser(SCRIPT, __doc__.split("\n\n")[0], f"python scripts/{SCRIPT} --device auto --json")


def build_tokenizer():
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({token: i for i, token in enumerate(VOCABULARY)}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, pad_token="[PAD]", unk_token="[UNK]", eos_token="</s>")


class Setup:
    """Everything the runs share: the tokenizer, the data and how to build a fresh model and Trainer."""

    def __init__(self, run):
        import torch

        self.run = run
        self.torch = torch
        self.tokenizer = build_tokenizer()
        generator = torch.Generator().manual_seed(run.args.seed)
        token_ids = torch.randint(3, len(VOCABULARY), (16, 8), generator=generator)
        # Causal LM data: the labels are the inputs (the model shifts them). 16 rows, batch 4: 4 steps an epoch.
        self.train_data = [{"input_ids": row, "labels": row} for row in token_ids]
        self.eval_data = self.train_data[:4]

    def model(self):
        from transformers import AutoConfig, AutoModelForCausalLM

        self.torch.manual_seed(self.run.args.seed)  # the same initial weights in every run
        config = AutoConfig.for_model("gpt2", vocab_size=len(VOCABULARY), n_embd=32, n_layer=2, n_head=2,
                                      n_positions=16, bos_token_id=2, eos_token_id=2, pad_token_id=0)
        return AutoModelForCausalLM.from_config(config)

    def trainer(self, name: str, max_steps: int = 6, compute_metrics=None, **extra):
        from transformers import Trainer, TrainingArguments

        gpu = self.run.device == "gpu"
        arguments = dict(output_dir=str(self.run.output_dir / name), max_steps=max_steps, per_device_train_batch_size=4,
                         per_device_eval_batch_size=4, learning_rate=1e-3, save_strategy="steps", save_steps=3,
                         logging_steps=1, report_to="none", seed=self.run.args.seed, use_cpu=not gpu, bf16=gpu,
                         full_determinism=gpu, disable_tqdm=True)
        arguments.update(extra)
        return Trainer(model=self.model(), args=TrainingArguments(**arguments), train_dataset=self.train_data,
                       eval_dataset=self.eval_data, processing_class=self.tokenizer, compute_metrics=compute_metrics)

    def weights(self, source) -> dict:
        """The weights of a checkpoint folder (model.safetensors) or of a model in memory."""
        if isinstance(source, Path):
            from safetensors.torch import load_file

            return load_file(str(source / "model.safetensors"))
        return {name: tensor.detach().cpu() for name, tensor in source.state_dict().items()}

    def differing(self, reference: dict, other: dict) -> list[str]:
        """Names of the tensors (saved in ``reference``) that are not bitwise equal in ``other``."""
        return [name for name, tensor in reference.items() if not self.torch.equal(tensor, other[name])]


def checkpoint_names(folder: Path) -> list[str]:
    return sorted((path.name for path in folder.glob("checkpoint-*")), key=lambda name: int(name.split("-")[1]))


def straight_run(run, setup):
    with run.step("straight.train"):
        trainer = setup.trainer("straight")
        trainer.train()
    folder = Path(trainer.args.output_dir)
    # A final checkpoint is written even when max_steps is not a multiple of save_steps; here it is one.
    run.check_equal("straight.checkpoints", checkpoint_names(folder), ["checkpoint-3", "checkpoint-6"])
    present = {path.name for path in (folder / "checkpoint-3").iterdir()}
    run.check("checkpoint.contents", CHECKPOINT_FILES <= present,
              f"missing {sorted(CHECKPOINT_FILES - present)}; present {sorted(present)}")
    with run.step("save_model.contents"):
        trainer.save_model(str(run.output_dir / "saved-model"))  # weights, config, tokenizer: no training state
    saved = {path.name for path in (run.output_dir / "saved-model").iterdir()}
    run.check("save_model.contents", "model.safetensors" in saved and not saved & {"optimizer.pt", "scheduler.pt",
              "rng_state.pth"}, f"save_model wrote {sorted(saved)}")
    return folder


def resumed_runs(run, setup, straight: Path) -> None:
    final = setup.weights(straight / "checkpoint-6")
    with run.step("resume.by_path"):
        trainer = setup.trainer("by-path")
        trainer.train(resume_from_checkpoint=str(straight / "checkpoint-3"))
    differing = setup.differing(final, setup.weights(trainer.model))
    run.check("resume.by_path.bitwise_equal", not differing, f"{len(differing)} tensors differ from the straight run")

    latest = run.output_dir / "latest"
    shutil.copytree(straight / "checkpoint-3", latest / "checkpoint-3")
    with run.step("resume.latest"):
        trainer = setup.trainer("latest")
        trainer.train(resume_from_checkpoint=True)  # the newest checkpoint-* in output_dir
    new_steps = [entry["step"] for entry in trainer.state.log_history if "loss" in entry][3:]
    run.check_equal("resume.latest.steps_run", new_steps, [4, 5, 6])
    differing = setup.differing(final, setup.weights(trainer.model))
    run.check("resume.latest.bitwise_equal", not differing, f"{len(differing)} tensors differ from the straight run")

    with run.step("resume.larger_max_steps"):
        trainer = setup.trainer("extended", max_steps=8)
        trainer.train(resume_from_checkpoint=str(straight / "checkpoint-6"))
    rates = {entry["step"]: entry["learning_rate"] for entry in trainer.state.log_history if "learning_rate" in entry}
    run.check_equal("resume.larger_max_steps.first_learning_rate", rates.get(7), 0.0)


def best_model_run(run, setup) -> None:
    scores = iter([0.5, 0.9, 0.7])  # evaluations at steps 2, 4, 6: step 4 is the best

    def compute_metrics(_):
        return {"score": next(scores)}

    with run.step("best.train"):
        trainer = setup.trainer("best", compute_metrics=compute_metrics, eval_strategy="steps", eval_steps=2,
                                save_steps=2, save_total_limit=1, load_best_model_at_end=True,
                                metric_for_best_model="score", greater_is_better=True)
        trainer.train()
    folder = Path(trainer.args.output_dir)
    run.check_equal("best.checkpoint", Path(trainer.state.best_model_checkpoint or "").name, "checkpoint-4")
    differing = setup.differing(setup.weights(folder / "checkpoint-4"), setup.weights(trainer.model))
    run.check("best.loaded_at_end", not differing, f"{len(differing)} tensors differ from checkpoint-4")
    run.check_equal("best.only_best_kept_with_save_total_limit_1", checkpoint_names(folder), ["checkpoint-4"])


def speed_up_tiny_runs(run) -> None:
    import gc

    import torch
    import transformers.trainer  # noqa: F401 - the heavy import, before the heap is frozen

    if run.device == "cpu":
        torch.set_num_threads(1)  # tiny tensors: one thread beats several that synchronize on every op
    gc.freeze()  # Trainer.train() calls gc.collect(): keeping the imported modules out of it saves ~0.4 s a run


def body(run) -> None:
    run.resolve_device()
    require("transformers", "pip install 'transformers[torch]'")
    require("safetensors", "pip install safetensors")
    speed_up_tiny_runs(run)
    with contextlib.redirect_stdout(sys.stderr):  # Trainer prints log dicts; stdout stays for --json
        setup = Setup(run)
        straight = straight_run(run, setup)
        resumed_runs(run, setup, straight)
        best_model_run(run, setup)


def main(argv=None) -> int:
    return run_main(SCRIPT, parse_args(), body, DISTRIBUTIONS, argv)


if __name__ == "__main__":
    sys.exit(main())
