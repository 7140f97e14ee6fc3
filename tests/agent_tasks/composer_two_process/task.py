"""A 2-process data-parallel Composer run on CPU.

Graded in two parts: the launch command the solution declares (``LAUNCH``) is read, not run, since a real launch
imports Composer once per rank (15-40 s on a 2-core machine); the training script itself runs as 2 real ranks
(gloo over 127.0.0.1), forked from the worker with the environment the `composer` launcher gives each rank."""

from __future__ import annotations

import ast
import re
import shlex
import socket
from pathlib import Path

from .. import cp_kit

SKILL = "composer-training"
SUMMARY = "2-rank DDP on CPU: each rank trains its own shard; the launch command starts 2 processes"
SAMPLES, PER_RANK_BATCH, RANKS = 64, 4, 2


def make_fixture(data: Path) -> None:
    cp_kit.write_model_def(data)
    cp_kit.save_tensors(data / "train.pt", cp_kit.classification_tensors(SAMPLES, 3, seed=13))


PYTHON = re.compile(r"(.*/)?python(3(\.\d+)?)?")
MODULE_LAUNCHERS = {"composer.cli.launcher": "composer", "torch.distributed.run": "torchrun"}


def launch_words(command: str) -> list[str]:
    """The words of the command that runs solution.py, from its launcher on: earlier commands (`mkdir ... &&`),
    variable assignments and `env` dropped; `python -m composer.cli.launcher` read as `composer`."""
    words = shlex.split(command)
    for index in range(len(words) - 1, -1, -1):  # the last command before solution.py
        if words[index] in ("&&", ";", "||") and "solution.py" in words[index + 1:]:
            words = words[index + 1:]
            break
    while words and (words[0] == "env" or re.fullmatch(r"[A-Za-z_]\w*=.*", words[0])):
        words = words[1:]
    if len(words) > 2 and PYTHON.fullmatch(words[0]) and words[1] == "-m" and words[2] in MODULE_LAUNCHERS:
        words = [MODULE_LAUNCHERS[words[2]], *words[3:]]
    return words


def launch_problem(source: str) -> str | None:
    """Why the LAUNCH string would not start 2 processes of solution.py on a CPU machine, or None."""
    constants = [node.value.value for node in ast.parse(source).body if isinstance(node, ast.Assign)
                 and any(getattr(target, "id", None) == "LAUNCH" for target in node.targets)
                 and isinstance(node.value, ast.Constant) and isinstance(node.value.value, str)]
    if not constants:
        return "no LAUNCH = \"...\" string at the top level of solution.py"
    words = launch_words(constants[0])
    if "solution.py" not in words:
        return f"{constants[0]!r} does not run solution.py"
    flags = {"composer": ("-n", "--nproc"), "torchrun": ("--nproc_per_node", "--nproc-per-node")}.get(words[0])
    if flags is None:
        return f"{constants[0]!r}: launch with composer or torchrun"
    count = None
    for index, word in enumerate(words[:words.index("solution.py")]):
        name, _, value = word.partition("=")
        if name in flags:
            count = value or (words[index + 1] if index + 1 < len(words) else None)
    if count is None:
        return f"{constants[0]!r} gives no process count: {words[0]} then starts 1 process on a machine without GPUs" \
            if words[0] == "composer" else f"{constants[0]!r} gives no process count ({flags[0]})"
    return None if count == str(RANKS) else f"{constants[0]!r} starts {count} processes, not {RANKS}"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def grade(ctx) -> None:
    problem = launch_problem(ctx.solution.read_text(encoding="utf-8"))
    ctx.check("launch_command", problem is None, problem or "starts 2 processes of solution.py (read, not run)")
    out, port = ctx.work / "out", str(free_port())
    ranks = [{"RANK": str(rank), "LOCAL_RANK": str(rank), "WORLD_SIZE": str(RANKS), "LOCAL_WORLD_SIZE": str(RANKS),
              "NODE_RANK": "0", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": port} for rank in range(RANKS)]
    runs = ctx.run(out, ranks=ranks, timeout=180)
    failed = [run for run in runs if not run.ok]
    if not ctx.check("ranks_run", not failed, "; ".join(run.error() for run in failed)):
        return ctx.skip("each_rank_reads_its_shard", "rank_0_saves")
    expected = SAMPLES // (PER_RANK_BATCH * RANKS)
    steps = [run.steps for run in runs]
    ctx.check("each_rank_reads_its_shard", steps == [expected] * RANKS,
              f"optimizer steps per rank {steps} for one epoch; {expected} when each rank reads half the data"
              + (": every rank read all the samples (no distributed sampler)" if steps == [2 * expected] * RANKS
                 else ""))
    files = sorted(path.name for path in (out / "checkpoints").glob("*.pt")) if (out / "checkpoints").is_dir() else []
    others = [name for name in files if not name.endswith("-rank0.pt")]
    ctx.check("rank_0_saves", bool(files) and not others and (out / "final.pt").exists(),
              f"OUT/checkpoints: {files}, OUT/final.pt {'present' if (out / 'final.pt').exists() else 'missing'}")
