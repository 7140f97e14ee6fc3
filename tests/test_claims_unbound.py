"""Claims of the skills that no other test proved (issue #12, "Every claim bound to its proof"), each proved here on
the installed libraries with tiny models, offline. support/claims_index.py binds each to its line. Composer tests carry
the ``composer`` marker (the latest leg has no mosaicml); the Transformers tests hold in both legs."""

from __future__ import annotations

import inspect

import pytest

from support.composer_kit import trainer as composer_trainer
from support.transformers_kit import arguments, text_dataset, tiny_classifier


# ---- Composer: which batches count tokens (SKILL.md, "What goes wrong": a `tok` duration) ---------------------------

def _token_model():
    import torch
    from composer import ComposerModel

    class Mean(ComposerModel):
        def __init__(self, key):
            super().__init__()
            self.key, self.linear = key, torch.nn.Linear(1, 1)

        def forward(self, batch):
            return self.linear(batch[self.key].float().mean(1, keepdim=True))

        def loss(self, outputs, batch, *args, **kwargs):
            return outputs.pow(2).mean()

    return Mean


@pytest.mark.composer
@pytest.mark.parametrize(("key", "tokens"), [("input_ids", 2 * 4 * 5), ("ids", 0)])
def test_dict_batches_count_tokens_only_under_input_ids(key, tokens):
    import torch
    from torch.utils.data import DataLoader

    model = _token_model()(key)
    rows = [{key: torch.ones(5, dtype=torch.long)} for _ in range(8)]
    run = composer_trainer(model=model, train_dataloader=DataLoader(rows, batch_size=4), max_duration="2ba",
                           optimizers=torch.optim.SGD(model.parameters(), lr=0.1))
    run.fit()
    assert int(run.state.timestamp.token) == tokens  # input_ids: every element of the 4 x 5 tensor, per batch


@pytest.mark.composer
@pytest.mark.parametrize("max_seq_len", [7, None])
def test_a_dataset_with_max_seq_len_counts_tokens_for_tuple_batches(max_seq_len):
    import torch
    from torch.utils.data import DataLoader, Dataset

    class Rows(Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, index):
            return torch.randn(8), torch.tensor(index % 3)

    if max_seq_len:
        Rows.max_seq_len = max_seq_len
    run = composer_trainer(train_dataloader=DataLoader(Rows(), batch_size=4), max_duration="2ba")
    run.fit()
    assert int(run.state.timestamp.token) == (2 * 4 * max_seq_len if max_seq_len else 0)  # samples x max_seq_len


# ---- Transformers: label_names does not rescue a label column the model does not take ----------------------------

def test_label_names_does_not_fix_a_label_column_named_otherwise(tmp_path):
    from transformers import DataCollatorWithPadding, Trainer

    tokenizer, data = text_dataset("target")
    trainer = Trainer(model=tiny_classifier(), args=arguments(tmp_path, label_names=["target"]), train_dataset=data,
                      data_collator=DataCollatorWithPadding(tokenizer))
    with pytest.raises(ValueError, match="The model did not return a loss from the inputs"):
        trainer.train()  # the column is kept and passed as `target=`, which the model takes in **kwargs and ignores
    renamed = data.rename_column("target", "labels")
    fixed = Trainer(model=tiny_classifier(), args=arguments(tmp_path), train_dataset=renamed,
                    data_collator=DataCollatorWithPadding(tokenizer))
    fixed.train()


# ---- Transformers: push_to_hub pushes on every save, not only at the end ------------------------------------------

def test_push_to_hub_pushes_from_every_checkpoint_save():
    """Trainer(...) creating the repository is the quoted error push-to-hub-at-init; the save path is read from the
    installed Trainer: every checkpoint save pushes when args.push_to_hub is set (no network here to watch it)."""
    from transformers import Trainer

    save = inspect.getsource(Trainer._save_checkpoint)
    assert "if self.args.push_to_hub:" in save and "self._push_from_checkpoint(" in save
    assert "upload_folder" in inspect.getsource(Trainer._push_from_checkpoint)


# ---- Composer: fit(duration=...) trains that much more (troubleshooting, max-duration-elapsed) ---------------------

@pytest.mark.composer
def test_fit_with_a_duration_trains_that_much_more_after_the_total_is_reached():
    run = composer_trainer(max_duration="3ba")
    run.fit()
    run.fit(duration="3ba")  # no reset_time: the clock goes on from 3ba
    assert int(run.state.timestamp.batch) == 6


# ---- Transformers: training_args_smoke.py --metric-keys catches a misspelled metric_for_best_model in advance ------

@pytest.mark.parametrize(("metric", "code"), [("eval_acc", 1), ("accuracy", 0), ("eval_accuracy", 0)])
def test_metric_keys_checks_metric_for_best_model_before_the_run(script_worker, tmp_path, metric, code):
    from support.harness import SKILLS_DIR

    script = SKILLS_DIR / "transformers-training" / "scripts" / "training_args_smoke.py"
    result = script_worker(script).run(
        script, "--output_dir", "out", "--eval_strategy", "steps", "--save_strategy", "steps",
        "--load_best_model_at_end", "--metric_for_best_model", metric, "--metric-keys", "accuracy,f1",
        "--report_to", "none", "--device", "cpu", "--json", cwd=tmp_path)
    assert result.returncode == code, result.stderr[-2000:]
    check = [check for check in result.json["checks"] if check["name"] == "metric_for_best_model.known"]
    assert check and check[0]["ok"] is (code == 0), result.json["checks"]
    assert result.network_attempts == []


# ---- Composer troubleshooting: the fixes of three quoted errors -----------------------------------------------------

@pytest.mark.composer
def test_a_stream_trains_with_a_batch_duration():
    """epochs-without-length: an IterableDataset has no epoch length; a `ba` duration trains on it."""
    import torch
    from torch.utils.data import DataLoader, IterableDataset

    class Stream(IterableDataset):
        def __iter__(self):
            while True:
                yield torch.randn(8), torch.tensor(0)

    run = composer_trainer(train_dataloader=DataLoader(Stream(), batch_size=4), max_duration="3ba")
    run.fit()
    assert int(run.state.timestamp.batch) == 3


@pytest.mark.composer
def test_wall_clock_is_refused_by_fit_duration_too():
    """max-duration-wall-clock: the same message from `fit(duration=...)`."""
    run = composer_trainer(max_duration="1ba")
    with pytest.raises(ValueError, match="Wall clock time not an allowed time unit."):
        run.fit(duration="1h")


@pytest.mark.composer
def test_a_relative_load_path_is_relative_to_the_working_directory(tmp_path, monkeypatch):
    """load-path-missing: a relative load_path is looked up from the process's working directory."""
    saver = composer_trainer(max_duration="2ba", save_folder=str(tmp_path / "run"), save_interval="1ba")
    saver.fit()
    saver.close()
    monkeypatch.chdir(tmp_path)
    assert int(composer_trainer(max_duration="4ba", load_path="run/ep0-ba2-rank0.pt").state.timestamp.batch) == 2
    monkeypatch.chdir(tmp_path / "run")
    with pytest.raises(FileNotFoundError, match="run/ep0-ba2-rank0.pt does not exist"):
        composer_trainer(max_duration="4ba", load_path="run/ep0-ba2-rank0.pt")
