"""transformers-training: the callables whose keywords its prose may cite, and names it cites as invalid."""

SURFACE = [
    "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.Trainer",
    "transformers.Trainer.train",
    "transformers.Seq2SeqTrainer",
]
INVALID: dict[str, str] = {}
