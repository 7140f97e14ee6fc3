"""Producers for the errors quoted by the distributed references of both skills (launchers, DeepSpeed).

Each makes the installed library raise the real error, in-process and without launching any training.
"""

from .quoted_errors import produces, raised


@produces("composer-launcher-log-folder-missing")
def _(tmp):
    from composer.cli import launcher

    script = tmp / "noop.py"
    script.write_text("")
    processes = {}
    try:
        # What `composer -n 2 --stdout 'missing/rank{rank}.out' noop.py` does: rank 0 starts, rank 1's file fails.
        return raised(lambda: launcher._launch_processes(
            nproc=2, world_size=2, base_rank=0, node_rank=0, master_addr="127.0.0.1", master_port=29500,
            module_mode=False, command_mode=False, training_script=str(script),
            stdout_file_format=str(tmp / "missing" / "rank{rank}.out"), stderr_file_format=None,
            training_script_args=[], processes=processes))
    finally:
        for process in processes.values():
            process.wait()


def _accelerate_launch_error(*argv: str) -> str:
    from accelerate.commands.launch import launch_command, launch_command_parser

    args = launch_command_parser().parse_args([*argv, "train.py"])
    return raised(lambda: launch_command(args), ValueError)  # refused before anything starts


@produces("accelerate-cpu-and-multi-gpu")
def _(tmp):
    return _accelerate_launch_error("--cpu", "--multi_gpu", "--num_processes", "2")


@produces("accelerate-multi-gpu-one-process")
def _(tmp):
    return _accelerate_launch_error("--multi_gpu", "--num_processes", "1")


@produces("deepspeed-not-installed")
def _(tmp):
    from transformers import TrainingArguments

    config = {"train_micro_batch_size_per_gpu": "auto", "zero_optimization": {"stage": 2}}
    return raised(lambda: TrainingArguments(output_dir=str(tmp), deepspeed=config, report_to="none"))


@produces("bf16-without-bf16-gpu")
def _(tmp):
    from transformers import TrainingArguments, training_args

    # The check TrainingArguments makes, answered as on a machine without a bf16-capable GPU (this one, in CI).
    available = training_args.is_torch_bf16_gpu_available
    training_args.is_torch_bf16_gpu_available = lambda: False
    try:
        return raised(lambda: TrainingArguments(output_dir=str(tmp), bf16=True, report_to="none"))
    finally:
        training_args.is_torch_bf16_gpu_available = available
