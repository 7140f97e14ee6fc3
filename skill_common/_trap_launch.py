"""Launch commands, read without running them: shell lines (continuations, here-documents, variables, loops, exports),
the launchers' options and process counts, and UNKNOWN, a value not read here. A module of trap_check.py (synced
from skill_common/ into every skill's scripts/ folder).
"""

import os
import re
import shlex
from dataclasses import dataclass, field




# composer's launcher parses with argparse's allow_abbrev: --np, --npr and --npro are --nproc (--n is also --node_rank);
# without it, LOCAL_WORLD_SIZE from the environment is the process count
COMPOSER_NPROC = ("--nproc", "--npro", "--npr", "--np")
LAUNCHERS = ("accelerate", "accelerate-launch", "torchrun", "composer", "deepspeed", "python", "python3")
PYTHON = re.compile(r"^python(\d+(\.\d+)*)?$")  # python, python3, python3.11
# Commands that run the command after them (with their own options first): `timeout 600 torchrun ...`
WRAPPERS = {"exec", "nohup", "time", "env", "srun", "uv", "run", "timeout", "sudo", "nice", "ionice", "numactl",
            "taskset", "stdbuf", "command", "builtin", "setsid", "chrt", "caffeinate", "xvfb-run", "unbuffer",
            "poetry", "pipenv", "conda", "mamba", "micromamba", "pdm", "hatch", "pixi", "rye"}
SHELL_KEYWORDS = {"if", "then", "else", "elif", "do", "while", "until", "!", "{", "time"}  # before a command
ASSIGNMENT = re.compile(r"^[A-Za-z_]\w*=")
WRAPPER_VALUE = re.compile(r"^\d+(\.\d+)?[smhd]?$")  # timeout 600, nice -n 10: a number, never a command
PYTHON_MODULES = {"torch.distributed.run": "torchrun", "torch.distributed.launch": "torchrun",
                  "accelerate.commands.launch": "accelerate launch", "accelerate.commands.accelerate_cli": "accelerate",
                  "composer.cli.launcher": "composer", "deepspeed": "deepspeed",
                  "deepspeed.launcher.runner": "deepspeed"}
PYTHON_TOOLS = {"pytest", "pip", "venv", "virtualenv", "unittest", "ensurepip", "build", "twine", "mypy", "ruff",
                "black", "isort", "flake8", "pylint", "coverage", "cProfile", "pdb", "timeit", "http", "json",
                "tests", "py_compile", "compileall", "zipfile", "tarfile", "site", "sysconfig", "platform",
                "transformers", "accelerate", "composer", "torch", "datasets", "evaluate", "huggingface_hub",
                "streaming", "tensorboard", "wandb", "mlflow"}  # python -m X that starts no training script of its own
OFFLINE_NAMES = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
COUNTS = "HF_UPDATE_DOWNLOAD_COUNTS"  # set false, datasets skips the download-count ping (offline stays off)
SETTINGS = (*OFFLINE_NAMES, COUNTS)
FALSE_VALUES = {"0", "OFF", "NO", "FALSE"}
TRUE_VALUES = {"1", "ON", "YES", "TRUE"}  # huggingface_hub's constants._is_true and datasets' config: upper-cased


def offline_value(value) -> bool:
    """Whether an environment value turns offline mode on: huggingface_hub and datasets take 1, on, yes, true in any
    case. A value that cannot be read here (a variable) is counted as on: no finding that depends on it."""
    if value is UNKNOWN or (isinstance(value, str) and "$" in value):
        return True
    return isinstance(value, str) and value.upper() in TRUE_VALUES


def launcher_name(token: str) -> str | None:
    name = os.path.basename(token)
    return "python" if PYTHON.match(name) else name if name in LAUNCHERS else None


@dataclass
class Launch:
    path: str
    line: int
    launcher: str  # accelerate, torchrun, composer, deepspeed, python
    options: list[str]  # the launcher's own flags, before the script
    script: str | None
    args: list[str]  # the script's flags
    env: dict[str, str] = field(default_factory=dict)
    several: str = ""  # why this line starts several different jobs (a shell loop over a variable, a Slurm array)
    runs: object = None  # the Module of the script it runs, when that file is given or found next to the launch
    text_lines: list[str] = field(default_factory=list)  # a shell command's physical lines, from `line` on
    _flags: dict | None = field(default=None, init=False, repr=False, compare=False)  # flag()'s, read once

    def option(self, *names: str) -> str | None:
        """The value of a launcher option given as `--x N`, `--x=N` or `-nN`; '' for a bare flag."""
        for index, token in enumerate(self.options):
            for name in names:
                if token == name:
                    following = self.options[index + 1] if index + 1 < len(self.options) else ""
                    return "" if following.startswith("-") else following
                if token.startswith(name + "=") or (len(name) == 2 and token.startswith(name) and len(token) > 2):
                    return token[len(name) + (token[len(name)] == "="):]
        return None

    @property
    def processes(self) -> int | None:
        """Processes started; None when the default or a variable decides. accelerate launch --cpu runs one process
        whatever --num_processes says (accelerate-cpu-processes names that): the other rules count one."""
        requested = self.requested
        if requested is not None and self.launcher == "accelerate" and self.option("--cpu") is not None:
            return 1
        return requested

    @property
    def requested(self) -> int | None:
        """The process count the launch line asks for; None when the default or a variable decides."""
        value = {"accelerate": self.option("--num_processes", "--num-processes"),
                 "torchrun": self.option("--nproc_per_node", "--nproc-per-node"),
                 "composer": self.option("-n", *COMPOSER_NPROC) or self.env.get("LOCAL_WORLD_SIZE"),
                 "deepspeed": self.option("--num_gpus", "--num-gpus")}.get(self.launcher, "1")
        return count(value)

    def flag(self, name: str) -> str | None:
        """The value of an HfArgumentParser flag on the script's command line (`--x v`, `--x=v`, dashes or not); the
        first one given counts."""
        if self._flags is None:  # read the command line once: the rules ask each launch for dozens of flags
            self._flags = {}
            for index, token in enumerate(self.args):
                key, equals, value = token.partition("=")
                if key.startswith("--") and key[2:].replace("-", "_") not in self._flags:
                    following = self.args[index + 1] if index + 1 < len(self.args) else ""
                    self._flags[key[2:].replace("-", "_")] = value if equals else \
                        "true" if not following or following.startswith("--") else following
        return self._flags.get(name)

    def flag_line(self, name: str) -> int:
        """The physical line of a shell command that gives the script's flag (`--x`, dashes or underscores), where an
        inline suppression and a GitHub annotation point; the command's first line when it is not found there."""
        written = re.compile(r"(?:^|\s)--" + re.escape(name).replace("_", "[-_]") + r"(?:[=\s\\]|$)")
        return next((self.line + offset for offset, text in enumerate(self.text_lines) if written.search(text)),
                    self.line)

    def job(self) -> tuple:
        """What makes two launches of one file different jobs: the script's arguments and the environment."""
        return tuple(self.args), tuple(sorted(self.env.items()))


def count(text: str | None) -> int | None:
    """A count written in ASCII digits ("²".isdigit() is true), else None; one past 18 digits is read as 10**18 (int()
    refuses strings of over 4,300 digits)."""
    if not text or not text.isascii() or not text.isdigit():
        return None
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10 ** 18


def parse_launch(tokens: list[str], path: str, line: int, env: dict[str, str]) -> Launch | None:
    """The launch in one simple command, behind shell keywords (`then`, `do`), variable assignments and wrappers
    with their options (`timeout 600`, `srun -N 2`, `sudo -E`, `env A=1`, `uv run`); None when it is not one."""
    env, index, wrapped, option_value = dict(env), 0, False, False
    while index < len(tokens):
        token = tokens[index]
        if launcher_name(token):
            break
        if ASSIGNMENT.match(token):
            name, _, value = token.partition("=")
            env[name] = value
        elif token in WRAPPERS:
            wrapped, option_value = True, False
        elif not wrapped and token in SHELL_KEYWORDS:
            pass
        elif wrapped and token.startswith("-"):
            option_value = "=" not in token  # `--partition gpu`: the next word may be its value
        elif wrapped and (option_value or WRAPPER_VALUE.match(token)):
            option_value = False
        else:
            return None  # another command (echo, bash -c ...): what follows it is not a launch
        index += 1
    if index >= len(tokens):
        return None
    launcher, rest = launcher_name(tokens[index]), tokens[index + 1:]
    if launcher == "python":
        while rest and rest[0].startswith("-") and not rest[0].startswith("-m"):  # -u, -B, -W arg, -X arg
            if rest[0].startswith("-c"):
                return None  # python -c "...": no script
            rest = rest[2:] if rest[0] in ("-W", "-X") else rest[1:]
        if rest and rest[0].startswith("-m"):
            module = rest[0][2:] or (rest[1] if len(rest) > 1 else "")
            rest = rest[1:] if rest[0][2:] else rest[2:]
            if module in PYTHON_MODULES:
                launcher, _, word = PYTHON_MODULES[module].partition(" ")
                rest = [word, *rest] if word else rest
            elif module.split(".")[0] in PYTHON_TOOLS or not MODULE_NAME.fullmatch(module):
                return None  # python -m pytest tests/x.py runs no training script of its own
            else:  # python -m pkg.train: the module, read as pkg/train.py
                return Launch(path, line, "python", [], module.replace(".", "/") + ".py", rest, env)
    if launcher == "accelerate-launch":
        launcher, rest = "accelerate", ["launch", *rest]
    if launcher == "accelerate":
        if not rest or rest[0] != "launch":
            return None
        rest = rest[1:]
    scripts = [index for index, token in enumerate(rest) if token.endswith(".py") and not token.startswith("-")]
    if not scripts and launcher != "python":  # `accelerate launch -m pkg.train`: a module, read as pkg/train.py
        flags = [index for index, token in enumerate(rest) if token in ("-m", "--module", "--module_mode")]
        modules = [index for index in range(flags[0] + 1, len(rest)) if MODULE_NAME.fullmatch(rest[index])] \
            if flags else []
        # not an option's value (`--rdzv-backend c10d`, `--config_file cfg.yaml`), unless every candidate is one
        free = [index for index in modules if index == flags[0] + 1 or not rest[index - 1].startswith("-")]
        if modules:
            at = (free or modules)[0]
            return Launch(path, line, launcher, rest[:at], rest[at].replace(".", "/") + ".py", rest[at + 1:], env)
    if not scripts:
        return None
    at = scripts[0]
    return Launch(path, line, launcher, rest[:at], rest[at], rest[at + 1:], env)


MODULE_NAME = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)*")
HEREDOC = re.compile(r"(?<!<)<<(-?)\s*(['\"]?)([A-Za-z_][\w.-]*)\2")
SHELLS = re.compile(r"^(?:\S*/)?(?:ba|z|k|da)?sh$")


def shell_commands(text: str):
    """(line, tokens) per simple command of a shell script: continuations joined, comments and operators split off."""
    lines = text.split("\n")  # as the shell counts lines: splitlines() also breaks at \f, \x85 and U+2028
    index = 0
    while index < len(lines):
        start, parts = index + 1, [lines[index]]
        while parts[-1].endswith("\\") and index + 1 < len(lines):  # a list joined once: linear in the length
            index += 1
            parts[-1] = parts[-1][:-1]
            parts.append(lines[index])
        index += 1
        if parts[-1].endswith("\\") and index >= len(lines):  # a continued last line with no line after it
            parts[-1] = parts[-1][:-1]
        joined = " ".join(parts)
        heredoc = HEREDOC.search(joined)
        if heredoc and not (joined.split() and SHELLS.match(joined.split()[0])):
            # a here-document's body is text for its command (`cat > README <<EOF`), not commands, unless a shell reads it
            strip_tabs, end = heredoc[1] == "-", heredoc[3]
            while index < len(lines) and (lines[index].lstrip("\t") if strip_tabs else lines[index]) != end:
                index += 1
            index += 1
        lexer = shlex.shlex(joined, posix=True, punctuation_chars=";&|()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        try:
            tokens = list(lexer)
        except ValueError:  # an unbalanced quote: not a command this checker can read
            continue
        command: list[str] = []
        for token in [*tokens, ";"]:
            if token and set(token) <= set(";&|()"):
                if command:
                    yield start, command
                command = []
            else:
                command.append(token)


SHELL_VARIABLE = re.compile(r"\$(?:\{([A-Za-z_]\w*)\}|([A-Za-z_]\w*))")
OPENS = {"if": "fi", "case": "esac", "for": "done", "select": "done", "while": "done", "until": "done"}


def shell_blocks(commands):
    """(line, tokens, enclosing blocks) per command, the keywords in front of it (then, do, else...) taken off;
    a block is (keyword, the for loop's variable or None). A loop's header is no command."""
    blocks: list[tuple[str, str | None]] = []
    for line, tokens in commands:
        while tokens and tokens[0] in (*OPENS, *OPENS.values(), *SHELL_KEYWORDS):
            word = tokens[0]
            if word in OPENS:
                blocks.append((word, tokens[1] if word in ("for", "select") and len(tokens) > 1 else None))
                if word in ("for", "select", "case"):
                    yield line, [], list(blocks)
                    tokens = []
                    break
            elif word in OPENS.values():
                closing = [index for index, (opened, _) in enumerate(blocks) if OPENS[opened] == word]
                del blocks[closing[-1] if closing else len(blocks):]
            tokens = tokens[1:]
        if tokens:
            yield line, tokens, list(blocks)


def launches_in_shell(text: str, path: str, first_line: int = 1) -> list[Launch]:
    """The launches of a shell script. A variable assigned one literal value, once, outside any if or loop, is read
    (`NP=2` then `--nproc_per_node $NP`); any other stays unknown. A launch inside a for loop whose variable is on its
    line, or in a Slurm array job (#SBATCH --array), starts several jobs."""
    commands = list(shell_blocks((line + first_line - 1, tokens) for line, tokens in shell_commands(text)))
    assigned: dict[str, list[str | None]] = {}
    for _, tokens, blocks in commands:  # which variables hold one known value
        if not tokens and blocks and blocks[-1][1]:  # a for loop's header: its variable takes many values
            assigned.setdefault(blocks[-1][1], []).append(None)
        words = tokens[1:] if tokens and tokens[0] in ("export", "local", "declare", "readonly") else tokens
        plain = all(ASSIGNMENT.match(word) for word in words)  # `NP=2`, not `NP=2 torchrun ...`
        for word in words:
            if not ASSIGNMENT.match(word):
                break
            name, _, value = word.partition("=")
            known = plain and not blocks and not re.search(r"[$`]", value)
            assigned.setdefault(name, []).append(value if known else None)
    known = {name: values[0] for name, values in assigned.items() if len(values) == 1 and values[0] is not None}

    def expand(word: str) -> str:
        return SHELL_VARIABLE.sub(lambda match: known.get(match[1] or match[2], match[0]), word)

    array = re.search(r"(?m)^#SBATCH\s+(--array|-a)\b", text)
    physical = text.split("\n")
    found, exported = [], {}
    for line, tokens, blocks in commands:
        if not tokens:
            continue
        if tokens[0] == "export":
            exported.update(expand(token).split("=", 1) for token in tokens[1:] if "=" in token)
            continue
        launch = parse_launch([expand(token) for token in tokens], path, line, exported)
        if launch:
            varied = sorted({variable for _, variable in blocks if variable and any(
                f"${variable}" in token or f"${{{variable}}}" in token for token in tokens)})
            if varied:
                launch.several = f"launched in a loop over ${varied[0]}"
            elif array:
                launch.several = "a Slurm array job (#SBATCH --array)"
            launch.text_lines = continued_lines(physical, line - first_line)
            found.append(launch)
    return found


def continued_lines(lines: list[str], start: int) -> list[str]:
    """The physical lines of the command that starts at lines[start]: that line and those its backslashes continue."""
    end = start
    while end + 1 < len(lines) and lines[end].endswith("\\"):
        end += 1
    return lines[start:end + 1]


UNKNOWN = object()
