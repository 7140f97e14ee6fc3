#!/usr/bin/env python3
# /// script
# requires-python = ">=3.11"
# dependencies = [
#     "mosaicml==0.32.1",
#     "torch==2.7.0",
#     "torchvision==0.22.0",
# ]
# ///
"""Trap check: read training code and launch commands, without running or importing them, and name every trap this
skill documents that they contain: the rule, the file and line, what goes wrong, the fix and the section to read.

Give Python files, shell scripts (.sh, .bash, .sbatch, .slurm) or folders (searched for both). Python is read with
the standard library's ast, decoded as Python decodes it (a PEP 263 coding line); constant values are followed through
simple assignments (`args = dict(...)`, `cfg["x"] = ...` then `TrainingArguments(**args)`, a variable that holds a model
class) and into the functions of the project that build what a Trainer gets (a model factory, a DataLoader helper,
`def make(**o): return TrainingArguments(**o)`); imports are followed to tell Composer's Trainer from Transformers',
and a module the code imports from its own project (given here, or a file next to it) is read for what it defines (a
get_metrics or a sequence classification model in model.py, MAX_DURATION in config.py, a pad token set in data.py: a
trap written there is named at its own file and line). Launch commands are read from shell lines (shlex; behind if,
for, timeout, srun, sudo, env and variable prefixes) and from Python strings and argv lists (`LAUNCH = "composer -n 2
train.py"`, `subprocess.run([sys.executable, "-m", "composer.cli.launcher", ...])`). A launch of a Python file given
here (or of a module, `-m pkg.train` read as pkg/train.py) checks that file under the launch (process count, flags,
offline variables, the values its argparse flags get); a value the launch takes from a variable is unknown and no
finding depends on it.

--device is the device the checked code will run on where it does not name one itself (Composer picks the GPU when
there is one): auto is a GPU when one is visible here, and gpu is accepted on a machine without one (nothing runs
here, so the checker never exits 4). Links are relative to this skill's folder.

This file and its modules are the source of the checker of every skill: skill_common/trap_check.py and _trap_*.py at
the bundle root, copied into each skill's scripts/ folder (`make sync`; the suite fails when a copy drifts). The core:
this file (reading the files and linking a project), a module read with ast (_trap_module) and the values it gives
(_trap_values), launch commands (_trap_launch), training arguments as the Transformers rules read them
(_trap_hf_arguments), the Rule entry (_trap_rules) and the reporting (_trap_report). The rules: one module per rule
family, each rule's table entry and examples next to the code that finds it (_trap_hf_removed, _trap_hf_imports,
_trap_hf_best_model, _trap_hf_distributed, _trap_hf_tasks, _trap_hf_offline, _trap_hf_resume, _trap_composer), listed
once in _trap_families, which assembles the table and runs the Transformers families. --fix is _trap_fix's (with
_trap_fix_renames and _trap_fix_shell). Each copy runs the rules of the skill it sits in, read from that skill's
SKILL.md.
"""

import os
import signal
import sys

if __name__ == "__main__":  # Ctrl-C while the modules below load: one line and exit 130, as run_main's handler gives
    signal.signal(signal.SIGINT, lambda signum, frame: (
        os.write(2, b"trap_check.py: error: interrupted by SIGINT\n"), os._exit(128 + signal.SIGINT)))

import ast  # noqa: E402
import gc  # noqa: E402
import io  # noqa: E402
import re  # noqa: E402
import stat  # noqa: E402
import textwrap  # noqa: E402
import tokenize  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
import _trap_fix  # noqa: E402
import smoke_contract  # noqa: E402
from smoke_contract import EXIT_USAGE, SmokeError, build_parser, run_main  # noqa: E402
import _trap_report as report  # noqa: E402
from _trap_rules import CP, TF  # noqa: E402
from _trap_families import RULES, launch_findings, transformers_findings  # noqa: E402
from _trap_composer import composer_findings, sys_path_entries  # noqa: E402
from _trap_launch import Launch, launches_in_shell  # noqa: E402
from _trap_module import Module  # noqa: E402

SCRIPT = "trap_check.py"
HERE = Path(__file__).resolve().parent
MAX_BYTES = 5_000_000  # a training script is far smaller; a bigger file is a data file given by mistake
PYTHON_VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"  # the grammar ast.parse knows


@dataclass
class Finding:
    rule: str
    path: str
    line: int
    note: str = ""


def gpu_visible() -> bool:
    """A CUDA device is visible, judged without importing torch: the driver's device files, not hidden."""
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) in ("", "-1"):
        return False
    return any(Path("/dev").glob("nvidia[0-9]*"))


def skill_name() -> str | None:
    """The skill this copy belongs to: the name in the SKILL.md above its scripts folder."""
    try:
        text = (HERE.parent / "SKILL.md").read_text(encoding="utf-8")
    except OSError:
        return None
    match = re.search(r"^name:\s*(\S+)\s*$", text, re.M)
    return match[1] if match else None


SKIP_DIRS = {"__pycache__", "node_modules", "site-packages", "dist-packages", "venv", ".venv"}


def input_files(paths: list[str], unreadable: list[str] | None = None) -> list[Path]:
    """The files to read under ``paths``; a folder the walk cannot list is added to ``unreadable`` (never skipped
    silently)."""
    found = []
    for given in paths:
        path = Path(given)
        try:
            mode = path.stat().st_mode
        except FileNotFoundError:
            mode = None
        except (OSError, ValueError) as exc:  # a folder above it cannot be searched, a name too long
            reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
            raise SmokeError(f"{shown(given)}: cannot be read ({reason})", EXIT_USAGE) from None
        if mode is not None and stat.S_ISDIR(mode):
            def skipped(exc: OSError) -> None:
                reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
                if unreadable is not None:
                    unreadable.append(f"{shown(str(exc.filename or given))}: folder cannot be read ({reason})")

            for folder, dirs, files in os.walk(path, onerror=skipped):
                dirs[:] = sorted(name for name in dirs if not name.startswith(".") and name not in SKIP_DIRS)
                found += [Path(folder) / name for name in sorted(files) if name.endswith((".py", *SHELL_SUFFIXES))]
        elif mode is not None and stat.S_ISREG(mode):
            found.append(path)
        elif mode is not None:
            raise SmokeError(f"{given!r} is not a regular file or folder (a FIFO or device is never read)", EXIT_USAGE)
        elif os.path.islink(path):
            raise SmokeError(f"{given!r} is a dangling symbolic link; give a file or folder to read", EXIT_USAGE)
        else:
            raise SmokeError(f"{given!r}: no such file or folder; give Python files, shell scripts or folders",
                             EXIT_USAGE)
    return found


SHELL_SUFFIXES = (".sh", ".bash", ".sbatch", ".slurm")  # a Slurm job script is a shell script


def is_shell(path: Path, text: str) -> bool:
    first = text.split("\n", 1)[0]
    return path.suffix in SHELL_SUFFIXES or (first.startswith("#!") and "sh" in first and "python" not in first)


def read(path: Path) -> str:
    """The text of a file, decoded as Python decodes it (a PEP 263 coding line, a UTF-8 byte-order mark, else UTF-8;
    shell scripts as UTF-8). Opened without blocking and checked on the open file: a FIFO or device put in its place
    after it was listed is named, never read (a FIFO would block, /dev/zero never ends)."""
    descriptor = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(descriptor, "rb") as file:
        if not stat.S_ISREG(os.fstat(file.fileno()).st_mode):
            raise ValueError("not a regular file: never read")
        data = file.read(MAX_BYTES + 1)
    if len(data) > MAX_BYTES:
        raise ValueError(f"larger than {MAX_BYTES // 1_000_000} MB: not a training script")
    if b"\0" in data:
        raise ValueError("holds NUL bytes: not a text file")
    first = data.split(b"\n", 1)[0]
    if path.suffix in SHELL_SUFFIXES or (first.startswith(b"#!") and b"sh" in first and b"python" not in first):
        return data.decode("utf-8-sig", errors="replace")  # bash runs a latin-1 byte in a comment: so read it
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:  # a coding line that names no codec Python has, or bytes that are not UTF-8 without one
        message = " ".join(str(exc.msg).split())
        raise ValueError(message if "unknown encoding" in message else
                         "not UTF-8, and no PEP 263 coding line names its encoding") from None
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise ValueError(f"not valid {encoding} ({exc.reason} at byte {exc.start})") from None


def shown(path: str) -> str:
    """A path as a check name or an error line shows it: as it is, or as a Python string literal (repr) when it
    holds ':', '@', a quote, a backslash or a character that is not printable (a newline), so that one finding stays
    one line and RULE@PATH:LINE splits at the first '@' and the last ':'."""
    return repr(path) if not path.isprintable() or any(char in path for char in ":@'\"\\") else path


MAX_FOUND_MODULES = 40  # project modules read from disk because a given file imports them, per run
MAX_FOUND_BYTES = 1_000_000  # a larger one is a library's, not the project's
MAX_PROJECT = 40  # project modules looked through for one module


class Project:
    """The Python files of one run, indexed by resolved path: a launch finds the file it runs, and a module the
    project modules it imports (given in the run, or found next to the importing file), in one lookup each."""

    def __init__(self, modules: dict[str, Module]):
        self.resolved: dict[str, Path] = {}
        self.given: dict[Path, Module] = {}
        for module in modules.values():
            self.given.setdefault(self.resolve(module.path), module)
        self.files: dict[Path, Module | None] = dict(self.given)  # every file looked at, by resolved path
        self.at: dict[str, Module | None] = {}  # the same, by the path as written
        self.imports: dict[int, list[tuple[int, Module]]] = {}
        self.found = 0

    def resolve(self, path: str | Path) -> Path:
        key = str(path)
        if key not in self.resolved:
            try:
                self.resolved[key] = Path(key).resolve()
            except (OSError, RuntimeError, ValueError):  # a loop of links, a NUL byte in the path
                self.resolved[key] = Path(os.path.abspath(key))
        return self.resolved[key]

    def launched(self, launch: Launch) -> Module | None:
        """The given module a launch runs: its script relative to the launching file's folder, or to the folder
        the checker runs in."""
        for candidate in (Path(launch.path).parent / launch.script, Path(launch.script)):
            module = self.given.get(self.resolve(candidate))
            if module is not None:
                return module
        return None

    def script_next_to(self, launch: Launch) -> Module | None:
        """The script a launch runs, read from the launching file's folder when it was not given."""
        if not launch.script or "$" in launch.script:
            return None
        try:
            module = self.module_at(Path(launch.path).parent / launch.script)
            if module is not None and len(module.project) == 1:
                self.link(module)
        except (OSError, ValueError, RecursionError):
            return None
        except Exception:  # noqa: BLE001 - a defect of this checker on a file not given: the launch is read alone
            return None
        return module

    def module_at(self, file: Path) -> Module | None:
        key = str(file)
        if key not in self.at:
            self.at[key] = None
            if os.path.isfile(key):  # most imports are of libraries: one stat, then nothing
                real = self.resolve(file)
                if real not in self.files:
                    self.files[real] = None
                    if self.found < MAX_FOUND_MODULES and os.path.getsize(key) <= MAX_FOUND_BYTES and \
                            not SKIP_DIRS & set(real.parts):  # a library's files are not the project
                        self.found += 1
                        try:
                            self.files[real] = Module(key, ast.parse(read(file), filename=key), read_launches=False)
                        except (OSError, UnicodeDecodeError, ValueError, SyntaxError, RecursionError, MemoryError):
                            pass  # not given: a file next to it that cannot be read is no error of this run
                self.at[key] = self.files[real]
        return self.at[key]

    def imports_of(self, module: Module) -> list[tuple[int, Module]]:
        """(line, module) per project module that ``module`` imports: a .py file or package of that name in the
        importing file's folder (or above it, for a package's absolute imports)."""
        if id(module) in self.imports:
            return self.imports[id(module)]
        folder = Path(module.path).parent
        roots = [folder]
        while os.path.isfile(roots[-1] / "__init__.py") and len(roots) < 5:
            roots.append(roots[-1].parent)
        # a namespace package (no __init__.py): `import llmtuner.tuner.x` in src/llmtuner/tuner/y.py reads from src/
        absolute = {alias.name.split(".")[0] for node in module.of_types(ast.Import) for alias in node.names} | \
            {node.module.split(".")[0] for node in module.of_types(ast.ImportFrom) if node.module and not node.level}
        roots += [ancestor.parent for ancestor in [folder, *folder.parents][:6]
                  if ancestor.name in absolute and ancestor.parent not in roots]
        for entry, relative in sys_path_entries(module):
            # the project's own folder put on sys.path (found from the file, or holding a given file); a library's
            # (/opt/llm-foundry) is not the project
            inside = relative or any(self.resolve(entry) in path.parents for path in self.given)
            module.own_sys_path |= inside
            if inside and entry is not None and entry not in roots:
                roots.append(entry)
        found, targets = [], {}  # an import written again (5 MB of the same line): its files looked up once
        for node in module.of_types(ast.Import, ast.ImportFrom):
            key = (type(node), getattr(node, "module", None), getattr(node, "level", 0),
                   tuple((alias.name, alias.asname) for alias in node.names))
            if key not in targets:
                targets[key] = self.import_targets(node, module, folder, roots)
            for imported, local, name, dotted in targets[key]:
                if local in (None, "*") or not name:
                    found.append((node.lineno, imported))
                if local == "*":  # from util import *: each function and top-level name of it
                    for defined in [*imported.functions, *imported.assigned]:
                        module.linked.setdefault(defined, (imported, defined))
                elif local is not None and (not name or name in imported.names or name in imported.imports):
                    module.linked.setdefault(local, (imported, name))
                if dotted is not None:
                    module.dotted.setdefault(dotted, imported)
        self.imports[id(module)] = found
        module._const_names.clear()  # names imported from project modules are read there from now on
        return found

    def import_targets(self, node: ast.AST, module: Module, folder: Path, roots: list[Path]) -> list[tuple]:
        """(project module, the local name it binds, the name it stands for there, `import pkg.util`'s dotted name)
        per project file an import statement reads."""
        candidates = []  # (a path without .py, the local name it binds, the name it stands for there)
        dotted = {}
        if isinstance(node, ast.Import):
            candidates = [(root.joinpath(*alias.name.split(".")), alias.asname or (
                alias.name if "." not in alias.name else None), "") for alias in node.names for root in roots]
            dotted = {root.joinpath(*alias.name.split(".")): alias.name for alias in node.names
                      if "." in alias.name and not alias.asname for root in roots}
        elif isinstance(node, ast.ImportFrom) and node.level <= len(folder.parents) + 1:
            bases = ([folder.parents[node.level - 2]] if node.level > 1 else [folder]) if node.level else roots
            for base in bases:
                package = base.joinpath(*node.module.split(".")) if node.module else base
                candidates += [(package, "*" if any(alias.name == "*" for alias in node.names) else None, "")]
                candidates += [(package / alias.name, alias.asname or alias.name, "") for alias in node.names
                               if alias.name != "*"]
                names = [(alias.asname or alias.name, alias.name) for alias in node.names if alias.name != "*"]
                candidates += [(package, local, name) for local, name in names]
        targets = []
        for candidate, local, name in candidates:
            for file in ([candidate.with_name(candidate.name + ".py")] if candidate.name else []) + [
                    candidate / "__init__.py"]:
                imported = self.module_at(file)
                if imported is not None and imported is not module:
                    targets.append((imported, local, name, dotted.get(candidate)))
        return targets

    def link(self, module: Module) -> None:
        """Set ``module.project`` to it and the project modules it imports, directly or through each other."""
        module.imported = self.imports_of(module)
        seen, queue = {id(module)}, [imported for _, imported in module.imported]
        while queue and len(module.project) < MAX_PROJECT:
            imported = queue.pop(0)
            if id(imported) not in seen:
                seen.add(id(imported))
                module.project.append(imported)
                queue += [further for _, further in self.imports_of(imported)]


def check_sources(sources: dict[str, str], skill: str, device: str) -> tuple[list[Finding], list[str]]:
    """Findings for ``sources`` (display path -> text; a path ending in .sh, .bash, .sbatch or .slurm is a shell script) and the files
    that could not be parsed, each with why."""
    findings, broken = check_all(sources, skill, device)
    return findings, list(broken.values())


def check_all(sources: dict[str, str], skill: str, device: str) -> tuple[list[Finding], dict[str, str]]:
    """check_sources' work, with the cyclic garbage collector paused: ast.parse makes many objects, and each
    collection they set off walks every object of the process (in a large process, most of the parse time)."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _check_all(sources, skill, device)
    finally:
        if collecting:
            gc.enable()


def _check_all(sources: dict[str, str], skill: str, device: str) -> tuple[list[Finding], dict[str, str]]:
    findings, broken, modules, shell_launches = [], {}, {}, []
    for path, text in sources.items():
        if is_shell(Path(path), text):
            shell_launches += launches_in_shell(text, path)
            continue
        try:
            modules[path] = Module(path, ast.parse(text, filename=path))
        except SyntaxError as exc:
            if Path(path).suffix not in (".py", ".pyw", ".pyi"):  # a Makefile, a YAML file given by mistake
                broken[path] = f"{shown(path)}: not a Python or shell file (give .py files, shell scripts " \
                    f"({', '.join(SHELL_SUFFIXES)} or a #! line) or folders)"
                continue
            broken[path] = f"{shown(path)}:{exc.lineno or 1}: does not parse as Python {PYTHON_VERSION}, the Python " \
                f"this checker runs on ({' '.join(str(exc.msg).split())}; if it is valid in a newer Python, run the " \
                "checker with that one)"
        except (ValueError, RecursionError, MemoryError) as exc:
            broken[path] = f"{shown(path)}: does not parse as Python ({type(exc).__name__}: {' '.join(str(exc).split())})"
    project = Project(modules)
    for path, module in list(modules.items()):  # every module linked first: a launch's rules read the module it runs
        try:
            project.link(module)
        except RecursionError:
            pass
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[path] = checker_defect(path, exc)
            del modules[path]
    launches_of: dict[int, list[Launch]] = {}  # a module -> the launches that run it, from any file of the run
    unattached = []
    for launch in shell_launches + [launch for module in modules.values() for launch in module.launches]:
        try:
            target = project.launched(launch)
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[launch.path] = checker_defect(launch.path, exc)
            continue
        launch.runs = target if target is not None else project.script_next_to(launch)
        if target is not None:
            launches_of.setdefault(id(target), []).append(launch)
        elif launch.path not in modules:
            unattached.append(launch)
        if skill == TF:  # the rules about the launch alone, whatever it runs
            findings += [Finding(rule, where.path, where.line, note) for rule, where, note in launch_findings(launch)]
    for module in modules.values():  # before any rule reads a parsed flag (Module.launched_value)
        module.launched_with = [launch.args for launch in launches_of.get(id(module), [])]
    for module in list(modules.values()):  # a config.py that parses the flags of the script that imports it
        for part in module.project[1:]:
            if not launches_of.get(id(part)):
                part.launched_with = part.launched_with + module.launched_with
    for part in {id(part): part for module in modules.values() for part in module.project}.values():
        part._const_names.clear()
        part._mappings.clear()
    for path, module in modules.items():
        runs = launches_of.get(id(module), [])
        launches = module.launches + [launch for launch in runs if launch.path != path]
        several = next((f"{shown(launch.path)}:{launch.line}: {launch.several}" for launch in runs if launch.several),
                       "") or (f"launched with other arguments at {', '.join(f'{shown(launch.path)}:{launch.line}' for launch in runs)}"
                               if len({launch.job() for launch in runs}) > 1 else "")
        try:  # the rules walk expressions recursively: a pathological one must not crash the run
            found = list(transformers_findings(module, launches) if skill == TF
                         else composer_findings(module, launches, device, several))
        except RecursionError:
            broken[path] = f"{shown(path)}: an expression is nested too deeply to check"
            continue
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[path] = checker_defect(path, exc)
            continue
        for rule, where, note in found:
            where_path, line = (where.path, where.line) if isinstance(where, Launch) else where \
                if isinstance(where, tuple) else (path, where)  # a tuple: in a project module this one imports
            findings.append(Finding(rule, where_path, line, note))
    for launch in unattached:
        try:
            findings += unattached_launch_findings(launch, skill, device)
        except Exception as exc:  # noqa: BLE001 - a defect of this checker: name the file, check the others
            broken[launch.path] = checker_defect(launch.path, exc)
    unique = {(f.rule, f.path, f.line): f for f in findings}
    return sorted(unique.values(), key=lambda f: (f.path, f.line, f.rule)), broken


def checker_defect(path: str, exc: Exception) -> str:
    return f"{shown(path)}: this checker failed on it ({type(exc).__name__}: {' '.join(str(exc).split())[:200]}; a " \
        "defect of the checker, not of the file: the other files are still checked)"


def unattached_launch_findings(launch: Launch, skill: str, device: str) -> list[Finding]:
    """A shell launch of a file not given here: the flags on its own line are still checked."""
    empty = Module(launch.path, ast.parse(""))
    found = transformers_findings(empty, [launch]) if skill == TF else composer_findings(empty, [launch], device)
    return [Finding(rule, launch.path, where[1] if isinstance(where, tuple) else launch.line, note)
            for rule, where, note in found]


def body(run) -> None:
    try:
        check_paths(run)
    finally:  # the empty cache folders the contract made here: a rerun with the same --output-dir finds it empty
        run.remove_empty_cache()


def check_paths(run) -> None:
    skill = skill_name()
    if skill not in (TF, CP):
        raise SmokeError(f"no skill found above {HERE} (its SKILL.md names the rules to run): run the copy in a "
                         "skill's scripts folder, python skills/<skill>/scripts/trap_check.py", EXIT_USAGE)
    args = run.args
    if args.format == "github" and args.json:
        raise SmokeError("--format github and --json both write to stdout: give one", EXIT_USAGE)
    rules = report.chosen_rules(skill, args.select, args.ignore)
    if args.list_rules:
        if not args.json:
            print("\n".join(report.rule_lines(skill)))
        run.check("rules", True, report.rule_table(skill) if args.json else f"{len(report.rule_table(skill))} rules "
                  f"of {skill}, {len(rules)} of them selected")
        return
    # --device names the device the checked code runs on, not this machine's: nothing runs here, so gpu is never
    # refused (no exit 4); auto is a GPU when one is visible here
    run.device = args.device if args.device != "auto" else ("gpu" if gpu_visible() else "cpu")
    if not args.paths:
        raise SmokeError("give the Python files, shell scripts or folders to check (see --help)", EXIT_USAGE)
    sources, unreadable = {}, []
    if args.fix or args.diff:  # the exact 5.x rewrites (_trap_fix), then the check of what is left
        unreadable += _trap_fix.fix_paths(input_files(args.paths), skill, args.diff and (
            sys.stderr if args.json else sys.stdout) or None, shown)
    for path in input_files(args.paths, unreadable):
        try:
            sources[str(path)] = read(path)
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            reason = " ".join(str(getattr(exc, "strerror", None) or exc).split())
            unreadable.append(f"{shown(str(path))}: cannot be read ({reason})")
    if not sources and not unreadable:
        raise SmokeError(f"no .py, .sh, .bash, .sbatch or .slurm file under {', '.join(map(repr, args.paths))}", EXIT_USAGE)
    findings, broken = check_all(sources, skill, run.device)
    suppressions: dict[str, report.Suppressions] = {}  # a file's comments, read once when a finding is in it

    def accepted(finding: Finding) -> bool:
        if finding.path not in suppressions:
            suppressions[finding.path] = report.Suppressions(source_text(sources, finding.path),
                                                             finding.path.endswith(".py"))
        return suppressions[finding.path].covers(rules[finding.rule], finding.line)

    findings = [finding for finding in findings if finding.rule in rules and not accepted(finding)]
    # the findings are final here: --fix / --diff (issue #26, _trap_fix.py) take them from this point
    by_path: dict[str, list[Finding]] = {}
    for finding in findings:
        by_path.setdefault(finding.path, []).append(finding)
    # a finding may be in a project module a given file imports (data.py found next to train.py): listed after them
    for path in [*sources, *sorted(set(by_path) - set(sources))]:
        if path in by_path:
            for finding in by_path[path]:
                rule = rules[finding.rule]
                note = " ".join(finding.note.split())
                note = f" ({note if len(note) <= 200 else note[:200] + '...'})" if note else ""  # a 5,000-digit value
                message = f"{rule.what}{note} Fix: {rule.fix}. See: {rule.see}"
                report.record(run, f"{finding.rule}@{shown(path)}:{finding.line}", rule, message, args.strict)
                if args.format == "github":
                    print(report.annotation(rule, path, finding.line, message, args.strict))
        elif path not in broken:
            run.check(f"clean@{shown(path)}", True, f"no trap of the {len(rules)} rules of {skill} that ran")
    if broken or unreadable:  # exit 2 wins over 1: the check is incomplete; the traps found are still listed
        also = f" (and {len(findings)} trap{'s' * (len(findings) != 1)} found in what was read, listed above)" \
            if findings else ""
        raise SmokeError("; ".join([*unreadable, *broken.values()]) + f": fix the file or leave it out{also}",
                         EXIT_USAGE)


def source_text(sources: dict[str, str], path: str) -> str:
    """The text of a file a finding is in, for its inline suppressions: a given file's text, else (a project module
    found next to one) read again; one that cannot be read suppresses nothing."""
    if path not in sources:
        try:
            sources[path] = read(Path(path))
        except (OSError, UnicodeDecodeError, ValueError):
            sources[path] = ""
    return sources[path]


NAMES_HELP = ("each error found is one [FAIL] line on stderr named RULE@PATH:LINE (a clean file: clean@PATH), with "
              "what goes wrong, the fix and the section to read, and exit 1; a warning is a [warn] line and exit 0 "
              "(--strict: exit 1 too). --json gives the same names as checks, each with its code and severity. "
              "A PATH that holds ':', '@', a quote, a backslash or a character that is not printable is written as "
              "a Python string literal, so a name splits at its first '@' and its last ':'")
NO_DEVICE_LINE = "  4  the requested device is not there (--device gpu without CUDA)"
EXIT_2_OVER_1 = ("A file that cannot be read or parsed (for this checker's Python) is exit 2 even when traps were "
                 "found in the others: the check is incomplete. Each trap found is still a [FAIL] line (and a failed check in "
                 "--json), and the error line counts them. The checker writes nothing (but the files --fix rewrites): --output-dir may be given again "
                 "(the empty cache folders the contract makes there are removed at exit), and a temporary folder whose "
                 "path holds a brace is accepted (the smoke scripts refuse one because Composer expands {rank} in the "
                 "paths they write to)")
SUPPRESSION_HELP = ("To accept one finding, write `# trap-check: ignore[RULE]` (a code or a name; several comma-separated) "
                    "at the end of its line, or alone on the line above it, in Python and shell scripts alike. As a "
                    "pre-commit hook: repo: <this bundle's repository>, hooks: [{id: trap-check-transformers}] or "
                    "trap-check-composer (.pre-commit-hooks.yaml at its root)")


def make_parser():
    paragraphs = __doc__.split("\n\n")
    parser = build_parser(SCRIPT, "\n\n".join(paragraphs[:3]), f"python scripts/{SCRIPT} train.py launch.sh\n\n"
                          + "\n".join(textwrap.wrap(NAMES_HELP, 110)))
    parser.epilog = parser.epilog.replace(NO_DEVICE_LINE, "  4  never: --device gpu names the device the checked code "
                                          "runs on, which this machine need not have") + "\n\n" + "\n".join(
        textwrap.wrap(EXIT_2_OVER_1, 110)) + "\n\n" + "\n".join(textwrap.wrap(SUPPRESSION_HELP, 110))
    parser.add_argument("paths", nargs="*", metavar="PATH", help="Python files, shell scripts or folders to read")
    lint = parser.add_argument_group("rules and output, as linters have them")
    lint.add_argument("--list-rules", action="store_true", help="print every rule of this skill (code, name, "
                      "severity, what goes wrong, the section to read) and exit 0")
    lint.add_argument("--select", action="append", metavar="RULES", help="run only these rules: codes, names or "
                      "code prefixes, comma-separated (--select TF011,pad-token-eos; --select CP0)")
    lint.add_argument("--ignore", action="append", metavar="RULES", help="do not run these rules (same words)")
    lint.add_argument("--strict", action="store_true", help="fail (exit 1) on warnings too, not only on errors")
    lint.add_argument("--format", choices=["text", "github"], default="text", help="github: also print each finding "
                      "as a GitHub Actions annotation (::error file=..,line=..::) on stdout (default: text)")
    _trap_fix.add_arguments(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    # this checker runs no Composer, so a brace in TMPDIR expands nothing; --output-dir keeps the contract's refusal
    return run_main(SCRIPT, make_parser(), body, [], argv, braced_tmpdir_ok=True)


if __name__ == "__main__":
    sys.exit(main())
