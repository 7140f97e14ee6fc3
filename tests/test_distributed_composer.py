"""Distributed Composer: with `composer -n N` and `torchrun` (composer-training/scripts/distributed_smoke.py, the
shared canonical run; tests/test_distributed_smokes.py has what both skills' smokes prove) the timestamp counts
global samples, ranks read disjoint shards and only rank 0 writes the checkpoint; the `composer` launcher's output
handling and the commands of references/distributed.md are what the docs say."""

import dataclasses
import shlex
import sys

import pytest

from support.checks import assert_equal_check, same_value
from support.docs import blocks
from support.harness import DEVICES, SKILLS_DIR
from support.manifest import SKILLS
from support.shared_runs import canonical_run, smoke_world_size

pytestmark = pytest.mark.composer

DOC = SKILLS_DIR / "composer-training" / "references" / "distributed.md"
LAUNCHERS = SKILLS["composer-training"].launchers


@pytest.fixture(scope="module", params=DEVICES)
def smoke(request, tmp_path_factory):
    return canonical_run(tmp_path_factory, "composer-training/distributed_smoke.py", request.param)


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_timestamp_counts_global_samples_and_ranks_read_disjoint_shards(smoke, launcher):
    samples, shards = smoke.check(f"{launcher}.global_samples"), smoke.check(f"{launcher}.sampler_shards")
    assert samples["ok"] and shards["ok"], (samples, shards)
    total = 3 * 4 * smoke_world_size(smoke)  # 3 batches of 4 per rank
    assert_equal_check(samples, [[3, total]])


@pytest.mark.parametrize("launcher", LAUNCHERS)
def test_only_rank_zero_writes_the_checkpoint(smoke, launcher):
    check = smoke.check(f"{launcher}.checkpoint_rank0_only")
    assert check["ok"], check
    assert check["actual"]["rank0_checkpoints"] > 0 and same_value(check["actual"]["other_files"], []), check


# ---------------------------------------------------------------- the `composer` launcher, run in-process on a tiny script

ECHO = "import os, sys\nprint('rank', os.environ['RANK'], 'stdout')\nprint('rank', os.environ['RANK'], 'stderr', file=sys.stderr)\n"
LAUNCH_ENV = ("RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "BASE_RANK", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT")


@pytest.fixture
def composer_cli(tmp_path, monkeypatch):
    """``composer_cli(*argv)`` runs the `composer` launcher's main() in tmp_path, as `composer *argv` would."""
    from composer.cli import launcher

    (tmp_path / "echo.py").write_text(ECHO)
    monkeypatch.chdir(tmp_path)
    for name in LAUNCH_ENV:
        monkeypatch.delenv(name, raising=False)

    def run(*argv: str) -> int:
        monkeypatch.setattr(sys, "argv", ["composer", *argv])
        return launcher.main()

    return run


def test_composer_launcher_keeps_only_rank_zero_output_by_default(composer_cli, capfd):
    assert composer_cli("-n", "2", "echo.py") == 0
    out, err = capfd.readouterr()
    assert "rank 0 stdout" in out and "rank 0 stderr" in err
    assert "rank 1" not in out + err, "rank 1 printed both lines, and neither may reach the console"


def test_composer_stdout_pattern_alone_still_drops_stderr_and_files_are_appended(composer_cli, tmp_path, capfd):
    assert composer_cli("-n", "2", "--stdout", "logs/rank{rank}.out", "echo.py") != 0, "logs/ does not exist yet"
    (tmp_path / "logs").mkdir()
    for _ in range(2):
        assert composer_cli("-n", "2", "--stdout", "logs/rank{rank}.out", "echo.py") == 0
    assert (tmp_path / "logs" / "rank1.out").read_text() == "rank 1 stdout\n" * 2, "appended, not truncated"
    assert not (tmp_path / "logs" / "rank0.out").exists(), "local rank 0 always prints to the console"
    out, err = capfd.readouterr()
    assert "rank 1 stderr" not in out + err
    assert composer_cli("-n", "2", "--stdout", "logs/rank{rank}.out", "--stderr", "logs/rank{rank}.err", "echo.py") == 0
    assert (tmp_path / "logs" / "rank1.err").read_text() == "rank 1 stderr\n"


def test_composer_launcher_defaults_to_one_process_without_gpus(monkeypatch):
    import torch
    from composer.cli import launcher

    for name in LAUNCH_ENV:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("LOCAL_WORLD_SIZE", raising=False)
    monkeypatch.setattr(sys, "argv", ["composer", "train.py"])
    assert launcher._parse_args().nproc == max(1, torch.cuda.device_count())


# ---------------------------------------------------------------- the commands references/distributed.md shows

def launcher_commands(doc) -> list[list[str]]:
    """Every `composer ...` and `torchrun ...` line of the document's bash blocks, run here or not."""
    commands = []
    for block in blocks(doc):
        if block.language == "bash":
            for line in block.source.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)
                if words and words[0] in ("composer", "torchrun"):
                    commands.append(words)
    return commands


def test_every_documented_launch_command_parses_with_the_installed_launchers(monkeypatch):
    from composer.cli import launcher
    from torch.distributed.run import config_from_args, parse_args

    monkeypatch.setenv("OMP_NUM_THREADS", "1")  # config_from_args would set it otherwise
    for name in LAUNCH_ENV:
        monkeypatch.delenv(name, raising=False)
    commands = launcher_commands(DOC)
    multi_node = [words for words in commands if "--node_rank" in words]
    assert {words[0] for words in multi_node} == {"composer", "torchrun"}, "both launchers' multi-node forms"
    for words in commands:
        if words[0] == "composer":
            monkeypatch.setattr(sys, "argv", words)
            args = launcher._parse_args()  # also applies the launcher's multi-node rules
            assert args.training_script == "train_ddp.py", words
        else:
            config, _, script_args = config_from_args(parse_args(words[1:]))
            assert script_args[-2] == "train_ddp.py", words
            if "--node_rank" in words:
                assert config.min_nodes == config.max_nodes == 2


def test_fsdp_config_accepts_misspelt_keys_silently():
    from composer.utils.parallelism import FSDPConfig

    config = FSDPConfig(sharding_stratgey="SHARD_GRAD_OP")  # misspelt on purpose: no error
    assert config.sharding_strategy == "FULL_SHARD"
    assert "sharding_stratgey" not in {field.name for field in dataclasses.fields(FSDPConfig)}
