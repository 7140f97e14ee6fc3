"""Claims index: each claim-bearing line of the skills -> the tests that prove it (issue #12). Checked both ways by
tests/test_claims_index.py, which also defines which lines bear claims.

One entry: (document, phrase, proofs). The phrase is copied verbatim from one line of the claim and occurs once in
the document: grep the document for it to find the line, grep this file for a phrase of a line to find its proofs.
A proof is one of
    tests/<file>.py::<test>[<param id>]   a test function (the id is optional)
    error:<id>                            a quoted ```error <id> block (reproduced by tests/support/quoted_errors_*.py)
    block:<phrase>                        the one runnable code block of the document holding <phrase>
    check:<skill>/<script>.py:<name>      a check of that script's canonical run (support.shared_runs.CANONICAL_RUNS)
"""

CS = "skills/composer-training/SKILL.md"
CT = "skills/composer-training/references/troubleshooting.md"
TS = "skills/transformers-training/SKILL.md"
TT = "skills/transformers-training/references/troubleshooting.md"

CC = "tests/test_composer_claims.py::"
CSC = "tests/test_composer_scripts.py::"
TP = "tests/test_truth_pass.py::"
ST = "tests/test_silent_traps.py::"
UB = "tests/test_claims_unbound.py::"
FDC = "tests/test_fault_drills_composer.py::"
FDT = "tests/test_fault_drills_transformers.py::"
HC = "tests/test_hostile_composer.py::"
CG = "tests/test_composer_guesses.py::"
TA = "tests/test_transformers_api.py::"
TSC = "tests/test_transformers_scripts.py::"
DT = "tests/test_distributed_transformers.py::"
XG = "tests/test_guessed_transformers.py::"
BEST_SAVED = [XG + "test_the_callback_ends_on_the_best_saved_checkpoint_keeping_the_cadence",
              XG + "test_the_callback_reads_the_scores_of_a_resumed_run_from_its_log_history"]
REMOVED = TA + "test_names_the_skill_calls_removed_are_rejected"

CLAIMS = [
    # ---- composer-training SKILL.md: What goes wrong without this skill
    (CS, "- `Trainer` takes keyword arguments only.", ["error:trainer-positional"]),
    (CS, "a bare int is epochs", [CC + "test_classifier_defaults_and_int_durations_are_epochs"]),
    (CS, '`"2iter"` is accepted and never ends', [CC + "test_iter_and_tuple_batch_tok_durations_never_end",
                                                 CSC + "test_preflight_reports_every_problem_in_one_line"]),
    (CS, "A `tok` duration never ends unless tokens are counted", [
        CSC + "test_tok_duration_without_counter_would_never_end", CSC + "test_tok_duration_stops_where_the_counter_says",
        UB + "test_dict_batches_count_tokens_only_under_input_ids",
        UB + "test_a_dataset_with_max_seq_len_counts_tokens_for_tuple_batches"]),
    (CS, "`dur` and wall-clock strings are rejected", ["error:max-duration-dur", "error:max-duration-wall-clock"]),
    (CS, "On resume `max_duration` is the total, not the extra", [CSC + "test_resume_continues_to_a_total_max_duration",
                                                                  "error:max-duration-elapsed"]),
    (CS, "and ignores the run name: another run pointed at the same", [
        CSC + "test_autoresume_continues_by_folder_and_wins_over_load_path"]),
    (CS, "Put `{run_name}` in `save_folder` and keep `run_name` stable", [
        ST + "test_composer_run_name_in_save_folder_follows_the_new_run_name",
        CC + "test_generated_run_names_differ_and_env_names_count"]),
    (CS, "A finished run re-launched raises the max_duration error", [
        CSC + "test_autoresume_continues_by_folder_and_wins_over_load_path",
        CC + "test_autoresume_without_a_latest_checkpoint_starts_from_load_path"]),
    (CS, "A second run into a folder that holds checkpoints raises `FileExistsError`", [
        CSC + "test_rerun_into_a_used_folder_raises_unless_save_overwrite",
        ST + "test_composer_manual_resume_into_the_same_folder_needs_no_save_overwrite",
        ST + "test_composer_resume_from_an_older_checkpoint_conflicts_with_the_later_ones"]),
    (CS, "A changed head (new `num_classes`) loads only with", [
        TP + "test_changed_head_table", CSC + "test_changed_head_needs_all_three_load_options",
        TP + "test_ignoring_the_head_without_weights_only_keeps_the_old_optimizer_state"]),
    (CS, 'and `device_train_microbatch_size="auto"` are GPU-only', [
        CC + "test_every_amp_precision_is_gpu_only", "error:auto-microbatch-on-cpu",
        CC + "test_with_cuda_device_none_is_gpu_and_precision_none_is_amp_fp16"]),
    (CS, "- Checkpoints are pickles: Composer opens them with", [
        CC + "test_checkpoints_are_pickles_loading_runs_code_and_preflight_does_not",
        HC + "test_preflight_refuses_code_unless_trusted_and_trusting_runs_it"]),

    # ---- composer-training references/troubleshooting.md
    (CT, "`Trainer` takes keyword arguments only. Fix:", ["error:trainer-positional"]),
    (CT, "From `import composer` (or `from composer import Trainer`) where torch is not installed", [
        "error:composer-without-torch", CG + "test_composer_without_torch_fails_at_import_and_env_check_names_the_fix",
        "tests/test_env_check.py::test_faked_newer_torch_fails_with_the_pip_line"]),
    (CT, "A warning, easy to miss: training runs with SGD at lr 0.1.", ["error:no-optimizer"]),
    (CT, "`ComposerClassifier(module=net, num_classes=5)` where `net` has its own", [
        "error:classifier-num-classes-mismatch",
        CG + "test_a_modules_own_num_classes_wins_over_the_argument_with_a_warning"]),
    (CT, "`dur` is a fraction of `max_duration`, so it cannot define it.", [
        "error:max-duration-dur", CC + "test_preflight_reports_composers_own_message[dur]"]),
    (CT, 'as `max_duration` (or `fit(duration=...)`)', [
        "error:max-duration-wall-clock", CC + "test_preflight_reports_composers_own_message[sec]",
        UB + "test_wall_clock_is_refused_by_fit_duration_too"]),
    (CT, "Only `dur` takes fractions.", ["error:time-not-integer",
                                         CC + "test_a_dur_save_interval_saves_at_fractions_of_max_duration"]),
    (CT, "has no unit (the int `10` would mean 10 epochs)", [
        "error:invalid-time-string", CC + "test_classifier_defaults_and_int_durations_are_epochs"]),
    (CT, "The message is half wrong", ["error:max-duration-missing", CC + "test_fit_takes_duration_not_max_duration"]),
    (CT, 'Raised when `fit()` starts. Causes: resuming with `max_duration` meant as "3 more"', [
        "error:max-duration-elapsed", CC + "test_fit_again_raises_and_reset_time_restarts",
        CSC + "test_autoresume_continues_by_folder_and_wins_over_load_path",
        UB + "test_fit_with_a_duration_trains_that_much_more_after_the_total_is_reached"]),
    (CT, "An `IterableDataset` (stream) has no epoch length.", ["error:epochs-without-length",
                                                                 UB + "test_a_stream_trains_with_a_batch_duration"]),
    (CT, "**Training never ends, no error.**", [
        CC + "test_iter_and_tuple_batch_tok_durations_never_end", CSC + "test_tok_duration_without_counter_would_never_end",
        UB + "test_dict_batches_count_tokens_only_under_input_ids"]),
    (CT, "A generated name differs on every launch", ["error:autoresume-no-run-name",
                                                      CC + "test_generated_run_names_differ_and_env_names_count"]),
    (CT, "Autoresume finds `<save_folder>/<save_latest_filename>`.", [
        "error:autoresume-no-save-folder", "error:autoresume-no-latest-filename",
        CC + "test_trainer_defaults_the_skill_states"]),
    (CT, "**Autoresume picked up the wrong run.**", [CSC + "test_autoresume_continues_by_folder_and_wins_over_load_path"]),
    (CT, "**`load_path` ignored.**", [CSC + "test_autoresume_continues_by_folder_and_wins_over_load_path",
                                       CC + "test_autoresume_without_a_latest_checkpoint_starts_from_load_path"]),
    (CT, "the Trainer keyword is `save_overwrite=True`", [
        "error:folder-conflict", CC + "test_invalid_names_are_rejected",
        CSC + "test_rerun_into_a_used_folder_raises_unless_save_overwrite"]),
    (CT, "Relative paths are relative to the working directory of the process.", [
        "error:load-path-missing", UB + "test_a_relative_load_path_is_relative_to_the_working_directory"]),
    (CT, "The head changed shape (new `num_classes`).", ["error:head-size-mismatch", TP + "test_changed_head_table"]),
    (CT, "The head's keys were ignored but loading is still strict.", ["error:head-missing-keys",
                                                                        TP + "test_changed_head_table"]),
    (CT, "a full load is never strict, so it succeeds", [
        "error:head-stale-optimizer-state",
        TP + "test_ignoring_the_head_without_weights_only_keeps_the_old_optimizer_state"]),
    (CT, "Misleading: on a single process, a strict load", ["error:ignore-every-key-strict"]),
    (CT, "Only a warning; the load continues without dropping anything", [
        "error:ignore-key-matches-nothing", CC + "test_ignore_pattern_that_matches_nothing_still_fails_on_a_changed_head"]),
    (CT, "From your own `torch.load(path)` on a Composer checkpoint", [
        "error:torch-load-refuses-checkpoint",
        CC + "test_checkpoints_are_pickles_loading_runs_code_and_preflight_does_not"]),
    (CT, "**A resumed run does not match an uninterrupted one.**", [
        CC + "test_spin_dataloaders_is_what_makes_a_resume_bitwise_equal",
        HC + "test_a_random_sampler_resumes_inside_a_later_epoch_bit_exact_only_if_training_draws_no_random_numbers"]),
    (CT, "What a kill leaves on disk and how to relaunch", [
        FDC + "test_a_damaged_load_path_is_one_line_and_exit_2_and_stays_unchanged",
        FDC + "test_preflight_refuses_a_latest_link_autoresume_cannot_use",
        HC + "test_preflight_refuses_code_unless_trusted_and_trusting_runs_it"]),
    (CT, "On the relaunch of a killed autoresume job", [
        "error:autoresume-torn-checkpoint",
        FDC + "test_a_kill_during_a_save_leaves_a_torn_file_that_blocks_the_relaunch_until_set_aside",
        FDC + "test_a_killed_job_relaunched_with_autoresume_ends_bitwise_equal"]),
    (CT, "A checkpoint cut short (a kill during the save", ["error:checkpoint-truncated",
                                                         "error:checkpoint-truncated-small"]),
    (CT, "A zero-byte file: the save died before writing anything.", ["error:checkpoint-empty"]),
    (CT, "Not a `torch.save` file at all (text, HTML", ["error:checkpoint-not-torch"]),
    (CT, "A `torch.save` file that is not a Composer checkpoint", ["error:checkpoint-not-composer"]),
    (CT, "**Autoresume started from batch 0 although checkpoints exist.**", [
        FDC + "test_a_dangling_latest_link_restarts_autoresume_from_zero_with_only_an_info_log",
        FDC + "test_preflight_refuses_a_latest_link_autoresume_cannot_use"]),
    (CT, "**A resumed run has wrong weights, no error.**", [
        FDC + "test_torch_load_reads_a_flipped_byte_without_complaint",
        FDC + "test_a_damaged_load_path_is_one_line_and_exit_2_and_stays_unchanged"]),
    (CT, "Every AMP precision (`amp_fp16`, `amp_bf16`, `amp_fp8`) is GPU-only.", [
        "error:amp-on-cpu", CC + "test_every_amp_precision_is_gpu_only",
        CC + "test_with_cuda_device_none_is_gpu_and_precision_none_is_amp_fp16"]),
    (CT, "(the last needs NVIDIA Transformer Engine)", [
        "error:precision-unknown", CC + "test_with_cuda_device_none_is_gpu_and_precision_none_is_amp_fp16"]),
    (CT, "on a machine (or a torch build) without CUDA", [
        "error:gpu-without-cuda", CC + "test_without_cuda_device_none_is_cpu_fp32",
        CC + "test_with_cuda_device_none_is_gpu_and_precision_none_is_amp_fp16"]),
    (CT, "Fix: an integer microbatch size on CPU.", [
        "error:auto-microbatch-on-cpu", "error:auto-microbatch-warning",
        CC + "test_preflight_accepts_what_composer_runs[integer-microbatch]"]),
    (CT, "Raised at the first batch. Fix: an integer number of samples.", [
        "error:microbatch-float", CC + "test_float_microbatch_is_accepted_by_the_constructor_and_fails_at_the_first_batch"]),
    (CT, "At the first eval batch, when the eval loader has no `batch_size`", [
        "error:eval-loader-without-batch-size",
        CG + "test_an_eval_loader_without_a_batch_size_needs_the_evaluators_microbatch_size"]),
    (CT, "Samples are counted from dim 0 of every tensor in the batch.", [
        "error:batch-size-ambiguous", CC + "test_default_split_and_sample_counting"]),
    (CT, "(and workers) was iterated before it reached Composer", [
        "error:dataloader-active-iterator", TP + "test_only_a_live_persistent_worker_iterator_is_rejected",
        TP + "test_an_iterated_dataloader_is_accepted_and_trains"]),
    (CT, "**Eval metrics are empty.**", [CC + "test_update_metric_is_not_implemented_by_default",
                                         CC + "test_eval_interval_zero_turns_evaluation_off"]),
    (CT, "**The learning rate never changes.**", [
        TP + "test_a_pytorch_scheduler_makes_composer_schedulers_step_per_epoch_too"]),
    (CT, "**Noisy logs in scripts and CI.**", [CC + "test_progress_bar_prints_to_stderr_and_false_silences_it"]),

    # ---- transformers-training SKILL.md: Preflight checks
    (TS, '- `eval_strategy="steps"` without `eval_steps` evaluates every', [
        TA + "test_eval_steps_falls_back_to_logging_steps"]),
    (TS, "- `load_best_model_at_end=True` needs matching eval and save strategies", [
        "error:load-best-strategies-differ", "error:save-steps-not-multiple",
        TA + "test_save_steps_multiple_rule_applies_only_with_load_best", TA + "test_load_best_without_metric_uses_loss"]),
    (TS, "- The multiple is not enough: a best evaluation on a step that is not saved", [
        ST + "test_best_evaluation_on_an_unsaved_step_is_never_loaded",
        ST + "test_saving_at_every_improving_evaluation_loads_the_best", *BEST_SAVED]),
    (TS, '- `save_strategy="best"` needs `metric_for_best_model`', [
        "error:best-without-metric", TA + "test_best_save_strategy_passes_training_arguments"]),
    (TS, "- An eval strategy with no `eval_dataset` raises at `Trainer(...)`", [
        "error:eval-strategy-without-dataset", "error:metric-for-best-model-typo"]),
    (TS, "- Labels must reach the model as `labels`.", [
        TP + "test_token_classification_collator_keeps_label_and_the_others_rename_it",
        TP + "test_token_classification_with_a_label_column_returns_no_loss", "error:no-loss-returned",
        UB + "test_label_names_does_not_fix_a_label_column_named_otherwise"]),
    (TS, "- Columns the model's `forward` does not take are dropped silently", [
        "error:no-loss-returned", "error:string-column-kept", TA + "test_label_and_labels_columns_both_train"]),
    (TS, "- Padding needs a pad token; for causal LM prefer a real pad token", [
        "error:no-pad-token", TA + "test_pad_token_equal_to_eos_masks_real_eos_labels"]),
    (TS, "- `push_to_hub=True` contacts the Hub at `Trainer(...)`", [
        "error:push-to-hub-at-init", UB + "test_push_to_hub_pushes_from_every_checkpoint_save"]),
    (TS, "- `bf16=True` on a machine without a GPU raises unless `use_cpu=True`.", [
        "error:bf16-without-gpu", TA + "test_bf16_on_cpu_is_accepted_with_use_cpu"]),

    # ---- transformers-training SKILL.md: What 5.x changed (table rows)
    (TS, "| `evaluation_strategy=` | `eval_strategy=` |", [
        REMOVED + "[evaluation_strategy]", "error:removed-training-argument"]),
    (TS, "| `no_cuda=True` | `use_cpu=True` |", [REMOVED + "[no_cuda]", TA + "test_bf16_on_cpu_is_accepted_with_use_cpu"]),
    (TS, "| `overwrite_output_dir=True` | removed, no replacement", [REMOVED + "[overwrite_output_dir]"]),
    (TS, "| `logging_dir=` | removed: TensorBoard writes to", [REMOVED + "[logging_dir]"]),
    (TS, "| `warmup_ratio=0.1` | `warmup_steps=0.1`", [REMOVED + "[warmup_ratio]", TA + "test_float_warmup_steps_is_a_ratio"]),
    (TS, '| `group_by_length=True` | `train_sampling_strategy="group_by_length"` |', [
        REMOVED + "[group_by_length]", TA + "test_replacement_fields_exist"]),
    (TS, '| `include_inputs_for_metrics=True` | `include_for_metrics=["inputs"]` |', [
        REMOVED + "[include_inputs_for_metrics]", TA + "test_replacement_fields_exist"]),
    (TS, "| `save_safetensors=`, `use_mps_device=`, `push_to_hub_token=` |", [
        REMOVED + "[save_safetensors]", REMOVED + "[use_mps_device]", REMOVED + "[push_to_hub_token]",
        TA + "test_replacement_fields_exist", TSC + "test_a_checkpoint_holds_weights_training_state_and_tokenizer"]),
    (TS, "| `Trainer(tokenizer=tok)` | `Trainer(processing_class=tok)` |", [
        "error:trainer-tokenizer-keyword", TA + "test_default_collator_depends_on_processing_class"]),
    (TS, "| `gradient_checkpointing=True` | `activation_checkpointing=True`", [
        TA + "test_gradient_checkpointing_is_a_deprecated_alias"]),
    (TS, "| expecting W&B/TensorBoard logging |", [TA + "test_report_to_defaults_to_none"]),
    (TS, '| `optim="adamw_hf"` | invalid;', ["error:invalid-optimizer", TA + "test_optim_default_depends_on_torch_version"]),
    (TS, '| `evaluate.load("accuracy")` offline |', [
        TA + "test_evaluate_offline_hub_name_fails_without_a_network_attempt",
        TA + "test_a_local_metric_module_loads_without_a_network_attempt_whatever_the_variables",
        TA + "test_a_hub_name_with_one_offline_variable_alone_still_reaches_for_the_network"]),
    (TS, "| `tokenizer.pad_token = tokenizer.eos_token` for causal LM |", [
        TA + "test_pad_token_equal_to_eos_masks_real_eos_labels"]),
    (TS, "| `math.exp(eval_loss)` as causal-LM perplexity |", [
        ST + "test_gpt2_eval_loss_counts_each_rows_first_token", ST + "test_recipe_perplexity_is_the_per_token_perplexity"]),
    (TS, "| resuming with a larger `max_steps` |", [
        TSC + "test_resuming_with_a_larger_max_steps_starts_at_learning_rate_0", "check:transformers-training/checkpoint_smoke.py:resume.larger_max_steps.first_learning_rate"]),
    (TS, "| `gradient_accumulation_steps=N` with a `*ForSequenceClassification` model |", [
        TA + "test_gradient_accumulation_inflates_sequence_classification_loss",
        TP + "test_accumulation_doubles_loss_and_gradient_but_adamw_barely_changes_its_update",
        TP + "test_accumulation_doubles_the_sgd_update_and_clipping_sees_the_doubled_norm"]),
    (TS, "| resuming from a checkpoint copy without `optimizer.pt`", [
        FDT + "test_missing_optimizer_or_scheduler_restarts_both_silently",
        FDT + "test_missing_rng_state_resumes_silently_but_not_reproducibly"]),
    (TS, "| `save_total_limit=1` with `load_best_model_at_end` |", [
        TSC + "test_save_total_limit_1_keeps_only_the_best_checkpoint",
        "check:transformers-training/checkpoint_smoke.py:best.only_best_kept_with_save_total_limit_1"]),
    (TS, "| `generation_max_length=8` with `predict_with_generate` |", [
        TP + "test_predict_with_generate_writes_the_generation_defaults_into_the_model",
        TSC + "test_seq2seq_predictions_are_padded_to_generation_config_max_length"]),
    (TS, "| `accelerate launch --cpu --num_processes 2` |", [
        DT + "test_accelerate_launch_cpu_with_two_processes_starts_one"]),
    (TS, "| DDP on 2 processes with a sequence-classification head |", [
        DT + "test_sequence_classification_loss_is_scaled_by_rank_count_until_fixed",
        TP + "test_ddp_scales_the_eval_loss_too_so_only_a_one_process_reference_shows_it"]),

    # ---- transformers-training references/troubleshooting.md
    (TT, "A field removed in 5.x. Replacements:", [
        "error:removed-training-argument", REMOVED, TA + "test_replacement_fields_exist",
        TA + "test_float_warmup_steps_is_a_ratio"]),
    (TT, "Pass the tokenizer, image processor, feature extractor or processor", [
        "error:trainer-tokenizer-keyword", TA + "test_default_collator_depends_on_processing_class"]),
    (TT, "`adamw_hf` is gone;", ["error:invalid-optimizer", TA + "test_optim_default_depends_on_torch_version"]),
    (TT, "`bf16=True` on a machine without a GPU. Set", ["error:bf16-without-gpu",
                                                        TA + "test_bf16_on_cpu_is_accepted_with_use_cpu"]),
    (TT, "Raised at `Trainer(...)`. Install the integration", ["error:report-to-not-installed",
                                                             TA + "test_report_to_defaults_to_none"]),
    (TT, "create the Hub repository at once, before any training", ["error:push-to-hub-at-init"]),
    (TT, "Give `eval_strategy` and `save_strategy` the same value", [
        "error:load-best-strategies-differ", ST + "test_saving_at_every_improving_evaluation_loads_the_best"]),
    (TT, "Only with `load_best_model_at_end=True` (without it", [
        "error:save-steps-not-multiple", TA + "test_save_steps_multiple_rule_applies_only_with_load_best",
        TA + "test_eval_steps_falls_back_to_logging_steps"]),
    (TT, "Raised at `Trainer(...)`, not by `TrainingArguments`", [
        "error:best-without-metric", TA + "test_best_save_strategy_passes_training_arguments",
        TA + "test_load_best_without_metric_uses_loss"]),
    (TT, 'Pass `eval_dataset=` or set `eval_strategy="no"`.', ["error:eval-strategy-without-dataset"]),
    (TT, "Raised at the first evaluation, after training already ran.", [
        "error:metric-for-best-model-typo", UB + "test_metric_keys_checks_metric_for_best_model_before_the_run"]),
    (TT, "`EarlyStoppingCallback` needs `metric_for_best_model`", ["error:early-stopping-without-metric"]),
    (TT, "downloads the module from the Hub; offline", [
        "error:evaluate-hub-metric-offline", TA + "test_evaluate_offline_hub_name_fails_without_a_network_attempt",
        TA + "test_a_local_metric_module_loads_without_a_network_attempt_whatever_the_variables",
        TA + "test_a_hub_name_with_one_offline_variable_alone_still_reaches_for_the_network"]),
    (TT, "The multiple rule is not enough, and nothing says so.", [
        ST + "test_best_evaluation_on_an_unsaved_step_is_never_loaded",
        "block:class LoadBestSavedCheckpoint",
        "tests/test_agent_questions_transformers.py::test_a_stale_checkpoint_of_an_earlier_run_is_loaded_as_the_best"]),
    (TT, "this callback: at every save it points `best_model_checkpoint`", [
        *BEST_SAVED, ST + "test_saving_at_every_improving_evaluation_loads_the_best",
        "tests/test_agent_questions_transformers.py::" + "test_of_equal_best_scores_the_first_wins", "block:class LoadBestSavedCheckpoint"]),
    (TT, "Choose a metric that moves from the first evaluation", [
        XG + "test_a_flat_metric_makes_every_saved_checkpoint_tie_and_the_callback_keep_the_first"]),
    (TT, "each checkpoint's `trainer_state.json` is written before the callback", [
        XG + "test_each_checkpoints_trainer_state_keeps_the_trainers_own_best_not_the_callbacks"]),
    (TT, "No labels reached the model.", [
        "error:no-loss-returned", UB + "test_label_names_does_not_fix_a_label_column_named_otherwise",
        TP + "test_token_classification_collator_keeps_label_and_the_others_rename_it",
        TP + "test_token_classification_with_a_label_column_returns_no_loss"]),
    (TT, "got integer 0/1 labels:", [
        "error:multi-label-int-labels", XG + "test_float_multi_hot_labels_stack_as_float32_for_a_bce_head"]),
    (TT, "Integer multi-hot labels and no `problem_type`", [
        "error:multi-label-without-problem-type", XG + "test_float_multi_hot_labels_stack_as_float32_for_a_bce_head",
        XG + "test_float_labels_without_problem_type_train_a_multi_label_head_and_set_it_in_the_config"]),
    (TT, "`remove_unused_columns=False` kept the raw `text` column", [
        "error:string-column-kept", TA + "test_label_and_labels_columns_both_train"]),
    (TT, "Typical for GPT-style tokenizers.", [
        "error:no-pad-token", TA + "test_pad_token_equal_to_eos_masks_real_eos_labels",
        "block:assert labels[0, -1] == -100"]),
    (TT, "`DataCollatorForLanguageModeling` defaults to `mlm=True`.", [
        "error:mlm-without-mask-token", TA + "test_data_collator_for_language_modeling_defaults_to_mlm"]),
    (TT, "`resume_from_checkpoint=True` found no `checkpoint-N` folder", [
        "error:no-checkpoint-in-output-dir", TA + "test_resume_helpers"]),
    (TT, "The folder holds no model weights.", ["error:no-checkpoint-at-path", TA + "test_resume_helpers"]),
    (TT, "Resumed, but the learning rate looks wrong", [
        TSC + "test_resuming_with_a_larger_max_steps_starts_at_learning_rate_0", "check:transformers-training/checkpoint_smoke.py:resume.larger_max_steps.first_learning_rate",
        TA + "test_save_only_model_checkpoint_resumes_with_a_fresh_schedule"]),
    (TT, "Rerun the same script with the same `output_dir`, `max_steps` and seed", [
        FDT + "test_killed_after_checkpoint_resumes_bit_exact",
        "tests/test_agent_questions_transformers.py::test_the_last_step_is_saved_and_resuming_a_finished_run"]),
    (TT, "- The run died before its first checkpoint", ["error:no-checkpoint-in-output-dir"]),
    (TT, "- The kill landed while a checkpoint was being written.", [
        FDT + "test_killed_while_saving_leaves_a_checkpoint_without_trainer_state", FDT + "test_trainer_state_is_written_last",
        "error:resume-incomplete-checkpoint"]),
    (TT, "without `trainer_state.json` is incomplete and cannot be resumed", [
        "error:resume-incomplete-checkpoint", FDT + "test_deleting_the_incomplete_checkpoint_resumes_bit_exact",
        'block:assert last_complete_checkpoint("outputs/killed")']),
    (TT, "Deleting it is optional, the resumed run writes `checkpoint-N` again whole", [
        "tests/test_agent_questions_transformers.py::test_a_torn_checkpoint_skipped_by_the_job_is_written_again_on_resume",
        FDT + "test_deleting_the_incomplete_checkpoint_resumes_bit_exact"]),
    (TT, "A full disk, a kill, or an interrupted copy between machines", [
        FDT + "test_the_trainer_raises_on_these_damages", FDT + "test_missing_optimizer_or_scheduler_restarts_both_silently"]),
    (TT, "| `model.safetensors` | `Can't find a valid checkpoint at ...` (above)", [
        FDT + "test_the_trainer_raises_on_these_damages", "error:safetensors-truncated"]),
    (TT, "| `optimizer.pt`, `scheduler.pt` | **no error**", [
        FDT + "test_missing_optimizer_or_scheduler_restarts_both_silently", FDT + "test_the_trainer_raises_on_these_damages"]),
    (TT, "| `rng_state.pth` | **no error**", [FDT + "test_missing_rng_state_resumes_silently_but_not_reproducibly",
                                             FDT + "test_the_trainer_raises_on_these_damages"]),
    (TT, "| `trainer_state.json` | `FileNotFoundError` (above) | `JSONDecodeError` |", [
        "error:resume-incomplete-checkpoint", "error:trainer-state-empty", FDT + "test_the_trainer_raises_on_these_damages"]),
    (TT, "The two silent cases are the dangerous ones", [
        FDT + "test_missing_optimizer_or_scheduler_restarts_both_silently",
        FDT + "test_missing_rng_state_resumes_silently_but_not_reproducibly",
        FDT + "test_damaged_checkpoint_is_refused_with_one_line_and_left_unchanged"]),
    (TT, "`model.safetensors` is truncated, empty, or not a safetensors file.", [
        "error:safetensors-truncated", "error:safetensors-empty", "error:safetensors-wrong-format"]),
    (TT, "is truncated (a `torch.save` file is a zip archive", ["error:torch-file-truncated",
                                                             "error:torch-file-truncated-mid-size"]),
    (TT, "One of them is empty (0 bytes): the message is empty too.", ["error:torch-file-empty"]),
    (TT, "Not a `torch.save` file at all (here a safetensors file", [
        "error:torch-file-wrong-format", FDT + "test_the_trainer_refuses_a_pickle_that_asks_to_run_code_and_runs_none"]),
    (TT, "`trainer_state.json` is empty or truncated", ["error:trainer-state-empty",
                                                        FDT + "test_deleting_the_incomplete_checkpoint_resumes_bit_exact"]),
    (TT, "The logged training loss is about N times the eval loss", [
        TA + "test_gradient_accumulation_inflates_sequence_classification_loss",
        TP + "test_accumulation_doubles_loss_and_gradient_but_adamw_barely_changes_its_update",
        TP + "test_ddp_scales_the_eval_loss_too_so_only_a_one_process_reference_shows_it",
        DT + "test_sequence_classification_loss_is_scaled_by_rank_count_until_fixed"]),
    (TT, "The script came from the `main` branch.", ["error:example-script-needs-newer-transformers"]),
    (TT, "torch is missing (plain `pip install transformers` does not pull it)", [
        "error:trainer-without-torch", XG + "test_a_torch_less_install_imports_with_a_warning_and_fails_at_trainer",
        TA + "test_plain_transformers_install_does_not_pull_torch"]),
]

# ---- transformers-training references/questions.md (proofs: tests/test_agent_questions_transformers.py)
TQ = "skills/transformers-training/references/questions.md"
XQ = "tests/test_agent_questions_transformers.py::"
FOOTPRINT = XQ + "test_what_a_run_writes_outside_output_dir"
FRESH_RUN = XQ + "test_a_fresh_run_in_a_used_output_dir_keeps_and_resumes_the_old_checkpoints"
LIST_DATA = XQ + "test_a_list_of_dicts_trains_groups_by_length_and_resumes_bit_exact"
LAST_STEP = XQ + "test_the_last_step_is_saved_and_resuming_a_finished_run"
DDP_EVAL = XQ + "test_ddp_evaluation_without_a_network_and_with_an_uneven_eval_set"
OPTIMIZER = XQ + "test_the_default_optimizer_and_fused_adamw_on_cpu"
TEXT_TARGET = XQ + "test_text_target_puts_the_target_ids_in_labels"
CONFIG_JSON = XQ + "test_a_config_loads_from_a_json_file_of_any_name"
LOAD_LOOKUP = ST + "test_load_dataset_from_a_local_file_looks_up_s3_unless_told_not_to"
RESIZE = XQ + "test_resize_token_embeddings_draws_new_rows_near_the_mean_of_the_old"
LOSS_TYPE = XQ + "test_loss_type_for_causal_lm_scales_the_training_gradient_and_is_read_at_init"
CACHES = XQ + "test_a_machines_specific_cache_variable_wins_over_the_scripts_hf_home"
TRAIN_MODE = XQ + "test_train_leaves_train_mode_on_and_generate_keeps_it"
UNROUNDED = XQ + "test_log_history_holds_unrounded_values_and_only_the_printed_logs_are_rounded"
SAVES_TOKENIZER = XQ + "test_save_model_saves_the_tokenizer_of_the_processing_class_or_else_of_the_collator"
BEST_BYTES = XQ + "test_the_best_checkpoint_loaded_at_the_end_is_saved_byte_for_byte"
LOSS_FLAG = XQ + "test_accepts_loss_kwargs_is_read_from_the_model_or_its_class_at_init_and_the_trainer_flag_acts_later"
PAD_ID = XQ + "test_the_trainer_copies_the_tokenizers_pad_id_into_the_model_config"
SEEDED_RESIZE = XQ + "test_mean_resizing_is_exact_or_a_draw_that_set_seed_repeats"
CLAIMS += [
    (TQ, "- Code to read a config from a JSON file with another name", [
        XQ + "test_a_config_loads_from_a_json_file_of_any_name"]),
    (TQ, "- `HF_HUB_OFFLINE`, `local_files_only` or a cache variable", [FOOTPRINT]),
    (TQ, "- A `Dataset`, or a dataset class, for data held in memory", [LIST_DATA]),
    (TQ, "- A save call for the last step", [LAST_STEP]),
    (TQ, "- An `optim` choice for a CPU run", [OPTIMIZER]),
    (TQ, "- Label code for seq2seq", [TEXT_TARGET]),
    (TQ, "- Gathering or de-duplicating predictions under DDP", [DDP_EVAL]),
    (TQ, "takes the path of a JSON file as well as a folder", [
        CONFIG_JSON, 'block:AutoConfig.from_pretrained("tiny-gpt2.json")']),
    (TQ, "`GPT2Config.from_json_file` does not check `model_type`", [CONFIG_JSON]),
    (TQ, "that stale folder is loaded as the best", [
        ST + "test_best_evaluation_on_an_unsaved_step_is_never_loaded", *BEST_SAVED,
        XQ + "test_a_stale_checkpoint_of_an_earlier_run_is_loaded_as_the_best"]),
    (TQ, "The first of equal scores wins", [XQ + "test_of_equal_best_scores_the_first_wins"]),
    (TQ, "The Trainer neither clears the folder nor refuses it.", [
        FRESH_RUN, XQ + "test_a_stale_checkpoint_of_an_earlier_run_is_loaded_as_the_best",
        "block:shutil.rmtree(args.output_dir"]),
    (TQ, "a `save_only_model=True` run leaves the earlier run's", [FRESH_RUN]),
    (TQ, "when N falls inside the epoch that holds the new `max_steps`", [FRESH_RUN]),
    (TQ, "No. A list of dicts is a", [
        LIST_DATA, FOOTPRINT, LOAD_LOOKUP]),
    (TQ, "loads without an offline variable but makes one DNS lookup", [LOAD_LOOKUP]),
    (TQ, "Measured with `HOME`, `TMPDIR`", [FOOTPRINT]),
    (TQ, "| `from_pretrained` of a local model folder", [FOOTPRINT]),
    (TQ, "| `Trainer.train()` with checkpoints and evaluation", [FOOTPRINT]),
    (TQ, "| an Arrow copy and lock files", [FOOTPRINT]),
    (TQ, '| `evaluate.load("accuracy_metric.py")` (a local file)', [FOOTPRINT]),
    (TQ, "| importing `Trainer`, torch 2.7 |", [
        FOOTPRINT, XQ + "test_a_killed_process_leaves_what_importing_trainer_put_in_tmpdir"]),
    (TQ, "| importing `Trainer`, torch 2.13 |", [FOOTPRINT]),
    (TQ, "Without `HF_HOME` those caches go to", [FOOTPRINT]),
    (TQ, "a data file read by `load_dataset` makes its one lookup", [LOAD_LOOKUP, FOOTPRINT]),
    (TQ, "`exp(eval_loss)` is not the perplexity of a causal LM", [
        ST + "test_gpt2_eval_loss_counts_each_rows_first_token", ST + "test_recipe_perplexity_is_the_per_token_perplexity"]),
    (TQ, "The model's own loss is right: `model(**batch).loss`", [
        XG + "test_the_models_own_loss_on_a_right_padded_batch_is_per_predicted_token_eos_included",
        XG + "test_a_tokenizer_without_eos_gets_it_appended_and_the_collator_keeps_it_as_a_label"]),
    (TQ, "GPT-2's `forward` takes `token_type_ids`", [
        XQ + "test_token_type_ids_shift_every_gpt2_position_and_reach_it_through_trainer"]),
    (TQ, "New vocabulary: for a model built from a config", [RESIZE]),
    (TQ, "draws each new row near the mean of the old ones", [RESIZE]),
    (TQ, "Yes, not only the logs.", [LOSS_TYPE, ST + "test_gpt2_training_loss_uses_the_same_count"]),
    (TQ, "`eval_loss` changes the same way", [
        LOSS_TYPE, ST + "test_gpt2_eval_loss_counts_each_rows_first_token",
        ST + "test_for_causal_lm_loss_type_counts_predicted_tokens_but_weighs_batches_per_row"]),
    (TQ, "Only if its post-processor or its constructor says so.", [
        XQ + "test_special_tokens_are_added_only_by_a_post_processor_or_add_bos_token"]),
    (TQ, "writes whatever `trainer.model` is at that moment", [XQ + "test_save_model_saves_whatever_trainer_model_is"]),
    (TQ, "Yes: at the last step the Trainer saves", [LAST_STEP]),
    (TQ, "does not skip a torn newest checkpoint", [
        FDT + "test_killed_while_saving_leaves_a_checkpoint_without_trainer_state",
        FDT + "test_trainer_state_is_written_last", FDT + "test_deleting_the_incomplete_checkpoint_resumes_bit_exact",
        "error:resume-incomplete-checkpoint"]),
    (TQ, "when the weights are missing too, `ValueError: Can't find a", [LAST_STEP]),
    (TQ, "(a scheduler retry) checks first, skipping", [
        LAST_STEP, XQ + "test_a_torn_checkpoint_skipped_by_the_job_is_written_again_on_resume"]),
    (TQ, "Resuming a run that already reached `max_steps`", [LAST_STEP, FRESH_RUN]),
    (TQ, "`Trainer(...)` reads `model.accepts_loss_kwargs` once", [
        XQ + "test_accepts_loss_kwargs_is_read_at_init_and_divides_once"]),
    (TQ, "still works in 5.24: it puts the target ids", [TEXT_TARGET]),
    (TQ, "With `padding=True` it pads `labels` with the pad id", [TEXT_TARGET]),
    (TQ, "`trainer.predict` returns each sample once, in dataset order", [DDP_EVAL]),
    (TQ, "a sequence classifier's eval loss is the mean over samples once", [
        DDP_EVAL, DT + "test_sequence_classification_loss_is_scaled_by_rank_count_until_fixed"]),
    (TQ, "`torchrun --standalone` sets `MASTER_ADDR`", [DDP_EVAL]),
    (TQ, "`optim` defaults to `adamw_torch` on torch 2.7", [OPTIMIZER, TA + "test_optim_default_depends_on_torch_version"]),
    # Q17-Q25: what the patterns of references/jobs.md leave out
    (TQ, "- `HF_HOME`, a cache variable or `chdir` to keep a run inside its folder", [FOOTPRINT, CACHES]),
    (TQ, "- Reading `log_history` or `best_model_checkpoint` to reload the best model by hand", [BEST_BYTES, UNROUNDED]),
    (TQ, "- A `save_pretrained` of the tokenizer", [SAVES_TOKENIZER]),
    (TQ, "- A fallback on `trainer.model_accepts_loss_kwargs`", [LOSS_FLAG]),
    (TQ, "- `model.config.pad_token_id` after adding a pad token", [PAD_ID]),
    (TQ, "- An offline variable to read a local JSON-lines file", [CACHES]),
    (TQ, "Do write `model.eval()` before calling `generate`", [TRAIN_MODE, SEEDED_RESIZE]),
    (TQ, "The machine's specific variable wins", [CACHES, FOOTPRINT]),
    (TQ, "No. `model.generate` leaves the model in the mode it finds", [TRAIN_MODE]),
    (TQ, "No. `trainer.state.log_history` and the `trainer_state.json`", [UNROUNDED]),
    (TQ, "Yes, when it is the Trainer's `processing_class`", [SAVES_TOKENIZER]),
    (TQ, "Yes. After `load_best_model_at_end` the `model.safetensors`", [BEST_BYTES]),
    (TQ, "`Trainer(...)` sets `trainer.model_accepts_loss_kwargs` once", [
        LOSS_FLAG, XQ + "test_accepts_loss_kwargs_is_read_at_init_and_divides_once"]),
    (TQ, "No. After `tokenizer.add_special_tokens", [PAD_ID]),
    (TQ, "Yes. With no more old rows than hidden units", [SEEDED_RESIZE, RESIZE]),
    (TQ, "The drawn rows lie within 1e-5 of the mean", [SEEDED_RESIZE]),
    (TQ, "`Dataset.from_json(path)` reads a local JSON-lines file", [CACHES, LOAD_LOOKUP]),
]


# ---- composer-training references/questions.md (proofs: tests/test_agent_questions_composer.py)
CQ = "skills/composer-training/references/questions.md"
AQ = "tests/test_agent_questions_composer.py::"
REPAIR = "test_the_repair_fixes_every_state_a_kill_leaves_and_the_relaunch_ends_bitwise_equal"
REPLAY = "test_a_resume_replays_one_batch_per_finished_epoch_and_the_current_epoch"
UNSPUN = "test_spin_dataloaders_false_retrains_the_epoch_from_its_start_and_changes_the_result"
ONE_FILE = "test_an_interval_save_and_the_end_of_training_save_write_one_file"
CONSTANT_LR = "test_without_schedulers_the_learning_rate_stays_the_optimizers"
ONLY_SAVE_FOLDER = "test_a_run_leaves_files_only_in_save_folder"
FINISHED = "test_a_finished_run_relaunched_raises_at_fit_and_the_timestamp_guard_skips_it"
EPOCH_END = "test_a_finished_epoch_run_saved_by_a_batch_interval_refits_its_last_epoch_unless_guarded"
REPAIR_ORDER = "test_the_repair_links_the_newest_checkpoint_by_epoch_then_batch"
KILLED = "test_a_killed_run_leaves_torchs_and_the_checkpoint_savers_temporary_folders_in_tmpdir"
BIT_EXACT = "test_a_resume_is_bit_exact_on_cpu_without_deterministic_algorithms"
F1 = "test_f1_comes_from_torchmetrics_which_composer_requires_and_scikit_learn_is_not_needed"
BRACES = "test_save_folder_is_formatted_and_a_literal_brace_breaks_the_autoresume_relaunch"
BACKBONE = "test_a_changed_head_load_fills_a_same_named_backbone_raises_on_a_shape_and_skips_renamed_layers_silently"
SIGNAL_FILES = "test_stale_signal_files_of_a_killed_autoresume_change_nothing_on_the_relaunch"
PRE_CREATED = "test_a_pre_created_save_folder_empty_or_holding_other_files_is_accepted"
ALL_METRICS = "test_an_evaluator_without_metric_names_computes_every_eval_metric_under_its_key"
LINK_KIND = "test_composer_writes_a_relative_latest_link_and_an_absolute_one_loads"
SHELL_BRACES = "test_the_shells_leave_run_name_and_rank_braces_unexpanded"
NO_GLOO = "test_the_jobs_ddp_script_runs_as_two_processes_with_only_loopback_and_no_network_variables"
CLAIMS += [
    (CQ, "- A `token_type` parameter on a token counter", [
        AQ + "test_a_token_counter_gets_the_batch_alone_and_must_return_an_int"]),
    (CQ, "- A `resolve()` of `latest-rank0.pt` before passing it", [
        AQ + "test_load_path_can_be_the_latest_link_and_autoresume_loads_through_it"]),
    (CQ, "- A search of the folder for an older checkpoint", [AQ + REPAIR]),
    (CQ, "- Code that skips the batches a resumed run already trained on", [AQ + REPLAY, AQ + UNSPUN]),
    (CQ, "- A check that the end-of-training save does not repeat", [AQ + ONE_FILE]),
    (CQ, "- A constant scheduler: with no `schedulers`", [AQ + CONSTANT_LR]),
    (CQ, "- Clean-up of temporary files, caches or the working directory", [
        AQ + ONLY_SAVE_FOLDER, AQ + KILLED]),
    (CQ, "- A `try`/`except ValueError` around `fit()`", [AQ + FINISHED, AQ + EPOCH_END]),
    (CQ, "- `torch.use_deterministic_algorithms(True)` or `deterministic_mode=True`", [AQ + BIT_EXACT]),
    (CQ, "- scikit-learn or `evaluate` for an F1 score", [AQ + F1]),
    (CQ, "- Your own `torch.load` of a checkpoint to check", [AQ + BACKBONE]),
    (CQ, "- Deleting the `._signal_file_*` files a killed run left", [AQ + SIGNAL_FILES]),
    (CQ, "- A `mkdir` of `save_folder`, or a check that it is new or empty", [AQ + PRE_CREATED]),
    (CQ, "- `metric_names` on an `Evaluator` that should compute every", [AQ + ALL_METRICS]),
    (CQ, "- An absolute target when re-creating `latest-rank0.pt`", [AQ + LINK_KIND]),
    (CQ, "- Quotes around `{run_name}` or `{rank}` in a bash or sh command", [AQ + SHELL_BRACES]),
    (CQ, "- `GLOO_SOCKET_IFNAME`, `MASTER_ADDR` or `MASTER_PORT` for 2 processes", [AQ + NO_GLOO]),
    (CQ, "calls `count(batch)` with the batch alone", [
        AQ + "test_a_token_counter_gets_the_batch_alone_and_must_return_an_int", "error:token-counter-returns-tensor",
        "block:def count_tokens(batch):"]),
    (CQ, "The counter returned `batch[\"attention_mask\"].sum()` (a tensor).", ["error:token-counter-returns-tensor"]),
    (CQ, "Yes: pass the link itself; Composer loads the file it points to.", [
        AQ + "test_load_path_can_be_the_latest_link_and_autoresume_loads_through_it"]),
    (CQ, "Autoresume never looks for another checkpoint", [AQ + REPAIR]),
    (CQ, "| checkpoints up to N, the link on N |", [AQ + REPAIR]),
    (CQ, "| a torn N (cut short while written), the link on N-1 |", [AQ + REPAIR, "error:autoresume-torn-checkpoint"]),
    (CQ, "| a complete N, the link still on N-1 |", [AQ + REPAIR]),
    (CQ, "| no link, or a link to nothing |", [AQ + REPAIR]),
    (CQ, "The shortest repair covers every row", [AQ + REPAIR, AQ + REPAIR_ORDER, AQ + EPOCH_END]),
    (CQ, "Not needed: `save_overwrite=True` (with the link missing", [AQ + REPAIR]),
    (CQ, "Before its first step a resumed run reads and drops", [AQ + REPLAY]),
    (CQ, "`spin_dataloaders=False` skips the replay", [AQ + UNSPUN]),
    (CQ, "Composer formats `save_folder` with `str.format`", [AQ + BRACES, "error:save-folder-lone-brace"]),
    (CQ, "A literal brace in the folder name also breaks autoresume", [
        AQ + BRACES, "error:save-folder-brace-autoresume"]),
    (CQ, "Fix for both: no braces in folder names", [AQ + BRACES]),
    (CQ, "mosaicml requires torchmetrics, not scikit-learn", [AQ + F1, "block:MulticlassF1Score(num_classes=3"]),
    (CQ, "No. A batch gets one checkpoint file at most", [AQ + ONE_FILE]),
    (CQ, "Yes. Composer adds no scheduler", [AQ + CONSTANT_LR]),
    (CQ, "No file is left outside it.", [AQ + ONLY_SAVE_FOLDER]),
    (CQ, "A killed run is the exception: importing Composer makes torch create", [AQ + KILLED]),
    (CQ, "`Trainer(...)` loads the last checkpoint. If its timestamp has reached", [
        AQ + FINISHED, AQ + EPOCH_END, "error:max-duration-elapsed", "block:def run_is_finished(job):"]),
    (CQ, "All exist in 0.32.1", [AQ + "test_the_names_exist_and_trainer_seed_acts_after_the_model_is_built",
                                 CC + "test_trainer_defaults_the_skill_states", "block:seed_all(0)  # random"]),
    (CQ, "On CPU, yes: with an unshuffled loader, dropout and Adam", [
        AQ + BIT_EXACT,
        HC + "test_a_random_sampler_resumes_inside_a_later_epoch_bit_exact_only_if_training_draws_no_random_numbers"]),
    (CQ, "Yes, when the new model is built by the same code as the checkpoint's", [
        AQ + BACKBONE, "block:assert not torch.equal(before, target.module[0].weight)"]),
    (CQ, "No. Composer writes a `._signal_file_node0_<6 random characters>` file", [AQ + SIGNAL_FILES]),
    (CQ, "Yes. An empty folder made before the first run", [AQ + PRE_CREATED]),
    (CQ, "Yes. It computes every metric that `get_metrics(is_train=False)` returns", [AQ + ALL_METRICS]),
    (CQ, "No, but relative is what Composer writes", [AQ + LINK_KIND]),
    (CQ, "No. bash expands braces only around a comma", [AQ + SHELL_BRACES]),
    (CQ, "No, measured here: the `jobs.md` DDP script launched", [AQ + NO_GLOO]),
]
