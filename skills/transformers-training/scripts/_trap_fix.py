"""trap_check.py --fix and --diff: rewrite the 4.x spellings that have one exact 5.x spelling with the same behaviour.

What is rewritten, and only when nothing else decides the value (the file is read, never run or imported):
- keyword arguments of TrainingArguments and Seq2SeqTrainingArguments imported from transformers (and of a class
  of the same file or of a project module next to it derived from them that declares neither name of a rename and no
  __init__), and `tokenizer=` of Trainer and Seq2SeqTrainer imported from transformers (or such a subclass without
  an __init__ of its own), any value (tokenizer=None is processing_class=None, the default), in a call of the class
  or of functools.partial(Trainer, ...); never where the name is also bound another way (the project's own class
  may shadow it);
- the keys of a dict those calls unpack (`TrainingArguments(**cfg)`), when the dict is a literal or dict(...) of
  named keywords with no unpacking of its own, assigned once, and the name is used for nothing else than
  `cfg["key"] = value` and that unpacking;
- the flags of a script that parses TrainingArguments with HfArgumentParser (and declares no flag of the old name),
  on a shell line that runs it (the .py file found next to the shell script or in the working folder, one file
  only, and no cd before it; a `--flag=$VAR` word is one flag, kept as written) or in an argv
  list in Python: one passed to parse_args_into_dataclasses, assigned to sys.argv, or naming such a script (a
  command line in a Python string is not rewritten).

RENAMES says which value each rename needs; a rename is never made when its new name is given too. Everything else
(overwrite_output_dir, logging_dir, save_safetensors, use_mps_device, warmup_ratio with warmup_steps, a value that
cannot be read where the rewrite depends on it, group_by_length=False) stays a finding of the checker. Composer has
no rewrite: none of its traps on mosaicml 0.32.1 has one exact spelling.

Text outside the rewritten tokens stays byte for byte (comments, quotes, line endings, the PEP 263 encoding); the
file is replaced atomically (a temporary file in its folder, renamed over it) with its mode bits, owner and
group. Left as it was and named: a file that does not compile or would not after the rewrite, a read-only or
hard-linked file, one whose owner cannot be kept, and one that changed after it was read.

This module reads, rewrites and replaces the files; the renames and their edits of Python source and argv lists
are _trap_fix_renames.py's, those of shell lines _trap_fix_shell.py's.
"""

from __future__ import annotations

import ast
import difflib
import os
import stat
import sys
import tempfile
import warnings
from pathlib import Path

from _trap_fix_renames import Edit, PythonFile, decode, hf_script_flags, project_module
from _trap_fix_shell import shell_edits

SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")


def is_shell(path: Path, data: bytes) -> bool:
    first = data.split(b"\n", 1)[0]
    return path.suffix in SHELL_SUFFIXES or (first.startswith(b"#!") and b"sh" in first and b"python" not in first)


def fixed_text(path: Path, data: bytes) -> tuple[str, str, str, list[Edit]]:
    """(old text, new text, encoding, edits) of a file's exact rewrites; ValueError when it cannot be read."""
    if is_shell(path, data):
        text, encoding = data.decode("utf-8", "surrogateescape"), "utf-8"  # bash runs any byte in a comment
        edits = shell_edits(path, text)
    else:
        text, encoding = decode(data)
        try:
            tree = ast.parse(text)
        except SyntaxError:
            return text, text, encoding, []  # the checker names a file that does not parse
        edits = PythonFile(path, text, tree).edits()
    edits = sorted({(edit.start, edit.end): edit for edit in edits}.values(), key=lambda edit: edit.start)
    if any(left.end > right.start for left, right in zip(edits, edits[1:])):
        return text, text, encoding, []  # two rewrites of one token: none is exact
    pieces, done = [], 0
    for edit in edits:
        pieces += [text[done:edit.start], edit.text]
        done = edit.end
    return text, "".join(pieces) + text[done:], encoding, edits


MAX_BYTES = 5_000_000  # the checker's limit: a larger file is not a training script


def read_regular(path: Path) -> tuple[bytes, os.stat_result]:
    """A file's bytes and status, opened without following a symbolic link (the link's target may be anyone's file:
    fix that file itself) and without blocking, and refused unless it is a regular file."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_NONBLOCK", 0))
    with os.fdopen(descriptor, "rb") as file:
        status = os.fstat(file.fileno())
        if not stat.S_ISREG(status.st_mode):
            raise ValueError("not a regular file")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1_000_000} MB")
    return data, status


def refusal(status: os.stat_result) -> str | None:
    """Why a file is not ours to replace: marked read-only, or one of several hard links (a new file would split
    them: the other names would keep the old text)."""
    if not status.st_mode & stat.S_IWUSR:
        return "it is read-only"
    if status.st_nlink > 1:
        return f"it has {status.st_nlink} hard links and a new file would split them"
    return None


def write_atomically(path: Path, data: bytes, status: os.stat_result, read: bytes) -> None:
    """Replace a file by a temporary one in its folder, with its mode, owner and group: a crash leaves the old file
    or the new one. ValueError, and the file left, when its owner cannot be kept or it changed since it was read
    (an edit made meanwhile would be lost)."""
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".fix")
    try:
        with os.fdopen(descriptor, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(temporary, stat.S_IMODE(status.st_mode))
        made = os.stat(temporary)
        if (made.st_uid, made.st_gid) != (status.st_uid, status.st_gid):
            try:
                os.chown(temporary, status.st_uid, status.st_gid)
            except PermissionError:
                raise ValueError("its owner and group cannot be kept") from None
            os.chmod(temporary, stat.S_IMODE(status.st_mode))  # chown clears set-user-ID bits
        now_data, now = read_regular(path)
        if now_data != read or (now.st_ino, now.st_size, now.st_mtime_ns) != (
                status.st_ino, status.st_size, status.st_mtime_ns):
            raise ValueError("it changed while --fix ran")
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise


def compile_failure(text: str) -> str | None:
    """Why the text does not compile (ast.parse accepts some files the compiler refuses: a repeated keyword)."""
    try:
        with warnings.catch_warnings():  # an invalid escape warns: not this tool's finding
            warnings.simplefilter("ignore")
            compile(text, "<fix>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError) as exc:
        return " ".join(str(exc).split())
    return None


def unified_diff(path: Path, old: str, new: str) -> str:
    lines = difflib.unified_diff(old.splitlines(True), new.splitlines(True), str(path), str(path))
    return "".join(line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
                   for line in lines)


def fix_paths(paths: list[Path], skill: str, diff_to=None, shown=str) -> list[str]:
    """Rewrite each file's exact 5.x spellings in place, or with ``diff_to`` (a stream) write their unified diff
    there and change nothing; a line on stderr per file changed. Returns one line per file left as it was that the
    user must see: it would not parse after the change, or it cannot be read or written."""
    if skill != "transformers-training":
        log(f"--fix changes nothing in {skill}: none of its traps has one exact rewrite on the tested versions")
        return []
    problems = []
    hf_script_flags.cache_clear()  # scripts are read again in each run: they may have changed
    project_module.cache_clear()
    for path in paths:
        try:
            if path.is_symlink():
                raise ValueError("a symbolic link: give the file it points to")
            data, status = read_regular(path)
            old, new, encoding, edits = fixed_text(path, data)
        except (OSError, ValueError, UnicodeError, RecursionError) as exc:
            reason = getattr(exc, "strerror", None) or exc
            problems.append(f"{shown(str(path))}: left as it was: cannot be read for --fix "
                            f"({' '.join(str(reason).split())})")
            continue
        if not edits:
            continue
        if not is_shell(path, data):
            version = f"Python {sys.version_info[0]}.{sys.version_info[1]}"
            if (failure := compile_failure(old)) is not None:
                problems.append(f"{shown(str(path))}: left as it was: it does not compile as {version} ({failure})")
                continue
            if (failure := compile_failure(new)) is not None:
                problems.append(f"{shown(str(path))}: left as it was: the rewritten file would not parse as {version} "
                                f"({failure})")
                continue
        if diff_to is not None:
            diff_to.write(unified_diff(path, old, new).encode("utf-8", "surrogateescape").decode("utf-8", "replace"))
            continue
        if (reason := refusal(status)) is not None:
            problems.append(f"{shown(str(path))}: left as it was: not rewritten because {reason}")
            continue
        try:
            write_atomically(path, new.encode(encoding, "surrogateescape"), status, data)
        except ValueError as exc:
            problems.append(f"{shown(str(path))}: left as it was: not rewritten because {exc}")
            continue
        except OSError as exc:
            problems.append(f"{shown(str(path))}: left as it was: cannot be written ({exc.strerror or exc})")
            continue
        log(f"fixed {shown(str(path))}: {', '.join(dict.fromkeys(edit.what for edit in edits))}")
    return problems


def log(message: str) -> None:
    print(f"trap_check.py: {message}", file=sys.stderr, flush=True)


def add_arguments(parser) -> None:
    parser.add_argument("--fix", action="store_true", help="first rewrite in place what has one exact 5.x spelling "
                        "(evaluation_strategy=, no_cuda=, warmup_ratio=, group_by_length=True, "
                        "include_inputs_for_metrics=True, push_to_hub_token=, Trainer(tokenizer=) and "
                        "partial(Trainer, tokenizer=), and the same flags of a script that parses TrainingArguments), "
                        "then check what is left")
    parser.add_argument("--diff", action="store_true", help="print those rewrites as a unified diff on stdout "
                        "(stderr with --json) and change nothing")
