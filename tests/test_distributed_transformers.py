"""Distributed Transformers: with `torchrun` and `accelerate launch` (transformers-training/scripts/distributed_smoke.py,
the shared canonical run; tests/test_distributed_smokes.py has what both skills' smokes prove) the global batch is
the per-device batch times the ranks, the checkpoint is written once and the DDP loss scaling is real; the `accelerate launch --cpu` trap, the saved accelerate config, the DeepSpeed config and the
launch commands of references/distributed-training.md are what the docs say. Runs in both legs."""

import json
import math
import shlex

import pytest

from support.checks import assert_equal_check, same_value
from support.docs import blocks
from support.harness import DEVICES, GUARD_DIR, SKILLS_DIR, import_script, run_python
from support.manifest import SKILLS
from support.shared_runs import canonical_run, smoke_world_size

SCRIPT = SKILLS_DIR / "transformers-training" / "scripts" / "distributed_smoke.py"
DOC = SKILLS_DIR / "transformers-training" / "references" / "distributed-training.md"
LAUNCHERS = SKILLS["transformers-training"].launchers


@pytest.fixture(scope="module", params=DEVICES)
def smoke(request, tmp_path_factory):
    return canonical_run(tmp_path_factory, "transformers-training/distributed_smoke.py", request.param)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_global_batch_is_per_device_batch_times_ranks(smoke, launcher):
    check = smoke.check(f"{launcher}.global_samples")
    assert check["ok"], check
    global_batch = 8 * smoke_world_size(smoke)  # 8 per rank: each of 3 steps reads every sample once
    assert_equal_check(check, {"steps": [3], "samples_per_step": [list(range(global_batch))] * 3})


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_checkpoint_is_written_once_with_one_rng_state_per_rank(smoke, launcher):
    check = smoke.check(f"{launcher}.checkpoint_written_once")
    assert check["ok"], check
    assert same_value(check["actual"]["should_save"], [0]), check
    if smoke_world_size(smoke) == 2:
        assert same_value(check["actual"]["rng_files"], ["rng_state_0.pth", "rng_state_1.pth"]), check


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_sequence_classification_loss_is_scaled_by_rank_count_until_fixed(smoke, launcher):
    shipped = smoke.check(f"{launcher}.loss_scaled_by_ranks_as_shipped")
    fixed = smoke.check(f"{launcher}.loss_fixed_by_accepts_loss_kwargs_false")
    assert shipped["ok"] and fixed["ok"], (shipped, fixed)
    tolerance = 0.05 if smoke.json["device"] == "gpu" else 1e-3
    assert math.isclose(shipped["actual"]["loss_ratio"], smoke_world_size(smoke), rel_tol=tolerance), shipped
    assert math.isclose(shipped["actual"]["gradient_ratio"], smoke_world_size(smoke), rel_tol=tolerance), shipped
    assert math.isclose(fixed["actual"]["loss_ratio"], 1.0, rel_tol=tolerance), fixed


# ---------------------------------------------------------------- accelerate launch, in-process on tiny scripts

PROBE = """import json, os, sys
from accelerate import PartialState
state = PartialState()
with open(sys.argv[1], "a") as ran:
    ran.write(json.dumps({"num_processes": state.num_processes, "WORLD_SIZE": os.environ.get("WORLD_SIZE")}) + "\\n")
"""
ONE_NODE = ["--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no"]


@pytest.fixture
def accelerate_launch(tmp_path, monkeypatch):
    """accelerate's own `launch` module, with no saved `accelerate config` file in the way."""
    import accelerate.commands.config.config_args as saved_config
    import accelerate.commands.launch as launch

    for module in (launch, saved_config):
        monkeypatch.setattr(module, "default_config_file", str(tmp_path / "default_config.yaml"))
    return launch


def test_accelerate_launch_cpu_with_two_processes_starts_one(accelerate_launch, tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", str(GUARD_DIR))  # the child runs under the offline guard
    monkeypatch.setenv("OFFLINE_GUARD_LOG", str(tmp_path / "network-attempts.log"))
    (tmp_path / "probe.py").write_text(PROBE)
    ran = tmp_path / "ran.jsonl"
    args = accelerate_launch.launch_command_parser().parse_args(
        ["--cpu", "--num_processes", "2", *ONE_NODE, str(tmp_path / "probe.py"), str(ran)])
    accelerate_launch.launch_command(args)
    processes = [json.loads(line) for line in ran.read_text().splitlines()]
    assert processes == [{"num_processes": 1, "WORLD_SIZE": None}], "one ordinary process, not two ranks"
    assert not (tmp_path / "network-attempts.log").exists()
    assert "--mpirun_hostfile" in accelerate_launch.launch_command_parser()._option_string_actions  # the MPI route


def test_saved_accelerate_config_is_read_and_flags_win(accelerate_launch, tmp_path):
    saved = tmp_path / "default_config.yaml"  # where the fixture points accelerate
    saved.write_text("compute_environment: LOCAL_MACHINE\ndistributed_type: MULTI_GPU\nnum_machines: 1\n"
                     "num_processes: 2\nmixed_precision: 'no'\n")
    parser = accelerate_launch.launch_command_parser()
    args, _, _ = accelerate_launch._validate_launch_command(parser.parse_args(["train.py"]))
    assert (args.multi_gpu, args.num_processes) == (True, 2)
    args, _, _ = accelerate_launch._validate_launch_command(parser.parse_args(["--num_processes", "3", "train.py"]))
    assert args.num_processes == 3


# ---------------------------------------------------------------- what references/distributed-training.md shows

def launch_commands(doc) -> list[list[str]]:
    """Every `torchrun ...` and `accelerate launch ...` line of the document's bash blocks, run here or not."""
    commands = []
    for block in blocks(doc):
        if block.language == "bash":
            for line in block.source.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words and words[0] in ("torchrun", "accelerate"):
                    commands.append(words[:words.index("|")] if "|" in words else words)
    return commands


def test_every_documented_launch_command_parses_with_the_installed_launchers(accelerate_launch, monkeypatch):
    from torch.distributed.run import config_from_args, parse_args

    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # config_from_args would set it otherwise
    commands = launch_commands(DOC)
    multi_node = [words[0] for words in commands if "--node_rank" in words or "--machine_rank" in words]
    assert sorted(multi_node) == ["accelerate", "torchrun"], "both launchers' multi-node forms"
    for words in commands:
        if words[0] == "torchrun":
            config, _, script_args = config_from_args(parse_args(words[1:]))
            assert script_args[1].startswith("train_"), words
            assert config.min_nodes == config.max_nodes == (2 if "--node_rank" in words else 1), words
        else:
            assert words[1] == "launch", words
            args, _, _ = accelerate_launch._validate_launch_command(
                accelerate_launch.launch_command_parser().parse_args(words[2:]))
            assert args.training_script.startswith("train_") and args.multi_gpu, words


def test_documented_deepspeed_config_gets_every_auto_from_training_arguments(tmp_path, monkeypatch):
    """As far as it goes without DeepSpeed: the Trainer's own code fills the doc's "auto" values."""
    from transformers import TrainingArguments
    from transformers.integrations import deepspeed as hf_deepspeed

    block = next(block for block in blocks(DOC) if block.language == "python" and "ds_config = {" in block.source)
    monkeypatch.chdir(tmp_path)
    namespace = {"TrainingArguments": TrainingArguments}  # the doc imported it in an earlier block
    exec(compile(block.source, block.where, "exec"), namespace)  # noqa: S102 - the documented block itself
    # Without DeepSpeed, transformers' config class has a placeholder base; with it, the base is accelerate's reader.
    # Rebuild that class and skip only the install check: the "auto" filling is the Trainer's own code.
    from accelerate.utils.deepspeed import HfDeepSpeedConfig

    class TrainerDeepSpeedConfig(hf_deepspeed.HfTrainerDeepSpeedConfig, HfDeepSpeedConfig):
        pass

    monkeypatch.setattr(hf_deepspeed, "dep_version_check", lambda requirement: None)
    config = TrainerDeepSpeedConfig(namespace["ds_config"])
    try:
        args = TrainingArguments(output_dir=str(tmp_path), per_device_train_batch_size=4,
                                 gradient_accumulation_steps=8, bf16=True, use_cpu=True, report_to="none")
        config.trainer_config_process(args)
        assert '"auto"' not in json.dumps(config.config) and config.mismatches == []
        assert config.config["train_batch_size"] == 4 * 8 * args.world_size
        assert config.config["bf16"]["enabled"] is True
        assert config.config["optimizer"]["params"]["lr"] == args.learning_rate
        pinned = TrainerDeepSpeedConfig({**namespace["ds_config"], "train_micro_batch_size_per_gpu": 16})
        pinned.trainer_config_process(args)
        assert pinned.mismatches == ["- ds train_micro_batch_size_per_gpu=16 vs hf per_device_train_batch_size=4"]
    finally:
        hf_deepspeed.unset_hf_deepspeed_config()


def test_auto_find_batch_size_retries_at_ninety_percent_after_out_of_memory():
    """The wrapper Trainer.train puts around its loop when auto_find_batch_size=True."""
    from transformers.trainer_utils import find_executable_batch_size

    tried = []

    def inner_training_loop(batch_size):
        tried.append(batch_size)
        if batch_size > 6:
            raise RuntimeError("CUDA out of memory.")
        return batch_size

    assert find_executable_batch_size(inner_training_loop, 8, auto_find_batch_size=True)() == 6
    assert tried == [8, 7, 6]


def test_port_zero_is_an_ephemeral_port_released_before_the_rendezvous_binds_it():
    """What distributed-training.md says of `--main_process_port 0`: accelerate binds port 0, reads the port and
    releases it; the port is from the ephemeral range, another socket can take it, and then the rendezvous fails."""
    import datetime
    import inspect
    import socket

    from accelerate.utils import launch
    from accelerate.utils.other import get_free_port
    from torch.distributed import DistNetworkError, TCPStore

    assert "args.main_process_port = get_free_port()" in inspect.getsource(launch.prepare_multi_gpu_env)
    low, high = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    port = get_free_port()
    assert low <= port <= high
    with socket.socket() as other_job:  # the port is free again: anything may take it
        other_job.bind(("", port))
        other_job.listen()
        with pytest.raises(DistNetworkError, match="EADDRINUSE"):
            TCPStore("127.0.0.1", port, 2, True, timeout=datetime.timedelta(seconds=5))


def test_accelerate_gets_a_port_below_the_ephemeral_range():
    """Port 0 lets accelerate hand torchrun a port from the ephemeral range, which a concurrent job's outgoing
    connections can take before torchrun binds it; the smoke gives a free port below that range instead."""
    module = import_script(SCRIPT)
    first_ephemeral = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    port = module.free_port_below_ephemeral_range()
    assert 20000 <= port < first_ephemeral
    command = module.accelerate_command(2, "--multi_gpu")
    assert 20000 <= int(command[command.index("--main_process_port") + 1]) < first_ephemeral


# ---------------------------------------------------------------- the teardown of a gloo group

# Rounds of: a gloo group, an all_gather whose lists are dropped at once, then what the round's mode does before
# destroy_process_group(). A round that does not end in 15 s dumps its stack and exits 1 (faulthandler).
TEARDOWN = r"""
import faulthandler, os, sys, time
import torch, torch.distributed as dist

rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), world, False)  # torchrun's store
for round, mode in enumerate(["sleep"] * 10 + [sys.argv[1]] * 190):
    faulthandler.dump_traceback_later(15, exit=True)
    dist.init_process_group("gloo", store=dist.PrefixStore(f"round{round}", store), rank=rank, world_size=world)
    gathered = [torch.zeros(1000) for _ in range(world)]
    dist.all_gather(gathered, torch.ones(1000))
    del gathered  # the last references to the gathered tensors are now the gloo worker's
    if mode == "sleep":
        time.sleep(0.1)
    elif mode == "barrier":
        dist.barrier()
    dist.destroy_process_group()
    faulthandler.cancel_dump_traceback_later()
    if rank == 0 and round in (9, 199):  # one rank prints: lines of two ranks can interleave
        print(f"ENDED {round + 1} ROUNDS", flush=True)
"""


@pytest.mark.parametrize("mode", ["nothing", "barrier"])
def test_gloo_teardown_hangs_on_torch_2_7_unless_it_sleeps_first(tmp_path, mode):
    """What distributed-training.md says of the teardown: on torch 2.7 destroy_process_group() of a gloo group waits
    for gloo's worker threads while holding the GIL, and a worker freeing the tensors of the last collective needs
    it: a hang, even after a barrier (its work holds the collective's). A 0.1 s sleep first lets the worker finish;
    torch 2.13 needs nothing."""
    import torch

    (tmp_path / "teardown.py").write_text(TEARDOWN)
    launched = run_python(["-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", "teardown.py",
                           mode], tmp_path, env={"OMP_NUM_THREADS": "1"}, timeout=180)
    ended = [line for line in launched.stdout.splitlines() if line.startswith("ENDED ")]
    assert launched.network_attempts == []
    assert ended[:1] == ["ENDED 10 ROUNDS"], launched.stderr[-3000:]  # the 10 rounds that sleep first
    if tuple(int(part) for part in torch.__version__.split(".")[:2]) < (2, 8):
        destroy_line = TEARDOWN.splitlines().index("    dist.destroy_process_group()") + 1
        assert launched.returncode != 0 and ended == ["ENDED 10 ROUNDS"], launched.stdout[-3000:]
        # the stack faulthandler dumped: the main thread in destroy_process_group (its frame already left: the hang is
        # in freeing the group)
        assert f'teardown.py", line {destroy_line} in <module>' in launched.stderr, launched.stderr[-3000:]
    else:
        assert launched.returncode == 0 and ended == ["ENDED 10 ROUNDS", "ENDED 200 ROUNDS"], launched.stderr[-3000:]
