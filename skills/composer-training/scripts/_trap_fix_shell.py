"""The renames of trap_check.py --fix on shell lines: the words of a shell text as bash reads them, and the flags of
a command that runs a script whose flags may be renamed (the .py file found next to the shell script or in the
working folder, one file only, and no cd before it; a `--flag=$VAR` word is one flag, kept as written). A module of
trap_check.py (synced from skill_common/ into every skill's scripts/ folder).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

from _trap_fix_renames import Edit, argv_rewrites, hf_script_flags

SHELL_BREAKS = set(";&|()\n")
BREAK = ";"  # the value of a command break (never a word's: ";" always breaks)


def shell_words(text: str):
    """(start, end, value) per word of a shell text, BREAK for a command break: the value the command gets, quotes
    removed, or None when an escape, an expansion or a glob makes it unknown. Comments are skipped; a
    backslash-newline joins lines. A rewrite replaces a whole word by a plain one."""
    index, length = 0, len(text)
    while index < length:
        char = text[index]
        if text.startswith("\\\n", index) or text.startswith("\\\r\n", index):
            index += 2 if text[index + 1] == "\n" else 3
            continue
        if char in " \t\r":
            index += 1
            continue
        if char == "#":
            index = text.find("\n", index)
            index = length if index < 0 else index
            continue
        if char in SHELL_BREAKS:
            yield index, index + 1, BREAK
            index += 1
            continue
        start, value = index, ""
        while index < length and text[index] not in " \t\r" and text[index] not in SHELL_BREAKS:
            char = text[index]
            if char in "'\"":  # a quoted part: its text, unless double quotes hold an expansion or an escape
                closing = text.find(char, index + 1)
                closing = length - 1 if closing < 0 else closing
                inner = text[index + 1:closing]
                value = None if value is None or char == '"' and any(c in inner for c in "$`\\") else value + inner
                index = closing + 1
            else:
                value = None if value is None or char in "\\$`*?[{~" else value + char
                index += 1
        yield start, index, value


FLAG_WITH_VALUE = re.compile(r"--[A-Za-z][\w-]*=")  # --flag=$VAR: one flag, whatever its value
MOVES = {"cd", "pushd", "popd"}


def shell_edits(path: Path, text: str) -> list[Edit]:
    """The flags after the first .py word of a command that names a script parsing TrainingArguments, while the
    working folder is the one the script is found from: none after a cd, and none when the script's path names
    two different files from the shell file's folder and from the working folder."""
    commands, command = [], []
    for word in shell_words(text):
        if word[2] == BREAK:
            commands.append(command)
            command = []
        else:
            command.append(word)
    edits = []
    for command in [*commands, command]:
        if command and command[0][2] in MOVES:
            break  # where a later relative script path points is not known for sure
        for position, (_, _, value) in enumerate(command):
            if value is None or not value.endswith(".py"):
                continue
            scripts = {os.path.realpath(found) for found in (path.parent / value, Path(value)) if found.is_file()}
            allowed = hf_script_flags(Path(scripts.pop())) if len(scripts) == 1 else set()
            if allowed:
                arguments = command[position + 1:]
                words, kept = [], set()
                for index, (start, stop, word) in enumerate(arguments):
                    flag = FLAG_WITH_VALUE.match(text, start, stop) if word is None else None
                    if flag:  # its flag counts as given; the word stays as written
                        kept.add(index)
                    words.append(flag[0] if flag else word)
                for index, new_words, what in argv_rewrites(words, allowed, kept):
                    start, stop, old = arguments[index]
                    edits.append(renamed_flag(text, start, old, new_words, what) or
                                 Edit(start, stop, " ".join(map(shlex.quote, new_words)), what))
            break
    return edits


def renamed_flag(text: str, start: int, old: str, new_words: list[str], what: str) -> "Edit | None":
    """A rename that keeps the value, as an edit of the flag's name alone: `--evaluation_strategy="steps"` keeps its
    quotes. None when the name is not written plainly at the word's start (a quoted flag: the word is rewritten)."""
    if len(new_words) != 1:
        return None
    old_name, new_name = old.split("=", 1)[0], new_words[0].split("=", 1)[0]
    if old[len(old_name):] != new_words[0][len(new_name):] or not text.startswith(old_name, start):
        return None
    return Edit(start, start + len(old_name), new_name, what)
