"""transformers-training: the callables whose keywords its prose may cite, and names it cites as invalid."""

SURFACE = [
    "transformers.TrainingArguments",
    "transformers.Seq2SeqTrainingArguments",
    "transformers.Trainer",
    "transformers.Trainer.train",
    "transformers.Seq2SeqTrainer",
    "transformers.DataCollatorForLanguageModeling",
    "transformers.DataCollatorForSeq2Seq",
    "transformers.EarlyStoppingCallback",
    "transformers.PretrainedConfig",  # problem_type= of every model config
]
# Names cited only to say they are gone; tests/test_transformers_api.py proves the installed library rejects each
# (TrainingArguments fields, except `tokenizer`, which is a removed Trainer keyword).
INVALID: dict[str, str] = {
    "evaluation_strategy": "TrainingArguments field removed in 5.x: eval_strategy",
    "no_cuda": "TrainingArguments field removed in 5.x: use_cpu",
    "overwrite_output_dir": "TrainingArguments field removed in 5.x, no replacement",
    "logging_dir": "TrainingArguments field removed in 5.x: TENSORBOARD_LOGGING_DIR",
    "warmup_ratio": "TrainingArguments field removed in 5.x: a float warmup_steps below 1",
    "group_by_length": "TrainingArguments field removed in 5.x: train_sampling_strategy='group_by_length'",
    "include_inputs_for_metrics": "TrainingArguments field removed in 5.x: include_for_metrics=['inputs']",
    "save_safetensors": "TrainingArguments field removed in 5.x: always safetensors",
    "use_mps_device": "TrainingArguments field removed in 5.x, no replacement",
    "push_to_hub_token": "TrainingArguments field removed in 5.x: hub_token",
    "tokenizer": "Trainer keyword removed in 5.x: processing_class",
}
