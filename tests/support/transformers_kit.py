"""Tiny Transformers models, rows, arguments and tokenizers for the tests (imports are lazy, so collection does not
import transformers): the Transformers tests and the quoted-error producers share them."""

from __future__ import annotations

from pathlib import Path


def tiny_classifier(**config):
    from transformers import AutoConfig, AutoModelForSequenceClassification

    sizes = dict(vocab_size=16, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8,
                 max_position_embeddings=16, num_labels=2)
    return AutoModelForSequenceClassification.from_config(AutoConfig.for_model("bert", **{**sizes, **config}))


def rows(count: int = 8, length: int = 4) -> list[dict]:
    import torch

    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, 16, (count, length), generator=generator)
    return [{"input_ids": row, "labels": index % 2} for index, row in enumerate(ids)]


def multi_label_rows(count: int = 8, length: int = 4, labels: int = 3) -> list[dict]:
    """rows() with float multi-hot labels over ``labels`` classes, for a multi_label_classification (BCE) head."""
    import torch

    generator = torch.Generator().manual_seed(1)
    hot = torch.randint(0, 2, (count, labels), generator=generator).float()
    return [{**row, "labels": targets} for row, targets in zip(rows(count, length), hot)]


def arguments(tmp: Path, **extra):
    from transformers import TrainingArguments

    settings = dict(output_dir=str(tmp / "out"), per_device_train_batch_size=4, max_steps=2, report_to="none",
                    use_cpu=True, save_strategy="no", disable_tqdm=True)
    return TrainingArguments(**{**settings, **extra})


def word_tokenizer(**special):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.WordLevel({"[UNK]": 0, "</s>": 1, "a": 2, "b": 3, "c": 4}, unk_token="[UNK]"))
    backend.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=backend, unk_token="[UNK]", **special)


def text_dataset(label_column: str):
    from datasets import Dataset

    tokenizer = word_tokenizer(pad_token="[UNK]")
    data = Dataset.from_dict({"text": ["a b", "c", "a c b", "b"], label_column: [0, 1, 0, 1]})
    return tokenizer, data.map(lambda batch: tokenizer(batch["text"]), batched=True)
