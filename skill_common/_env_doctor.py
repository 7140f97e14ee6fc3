"""The environment doctor every skill's scripts/env_check.py runs: the skill's table goes in, the findings come out.

It puts the installed versions of what a skill needs next to the versions the skill was tested with (the tested-*
keys of its SKILL.md), reports CUDA and bf16, missing optional packages and known-bad combinations, and gives the pip
line that fixes each problem. It reads versions from package metadata and imports only torch, so it answers in about
the time `import torch` takes.

This file is copied verbatim into each skill's ``scripts/`` folder from ``skill_common/`` at the bundle root (``make
sync``; tests/test_shared_source.py fails when a copy drifts). It holds nothing of one skill: both skills' copies may
be imported into one process, so the skill's folder comes in with its table, never from this file's path.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import operator
import re
import shlex
from pathlib import Path
from typing import Callable, NamedTuple

from smoke_contract import EXIT_CHECK_FAILED, EXIT_MISSING_DEPENDENCY, SmokeError, build_parser

SCRIPT = "env_check.py"


class Finding(NamedTuple):
    """One check. status: ok, warning (advice, stays ok), error (exit 1) or missing (exit 3)."""

    name: str
    status: str
    detail: str
    fix: dict[str, str]  # distribution -> requirement specifier the fix installs, e.g. {"torch": "==2.7.0"}
    uninstall: tuple[str, ...] = ()

    @property
    def ok(self) -> bool:
        return self.status in ("ok", "warning")


def installed_version(distribution: str) -> str | None:
    """The installed version, read from package metadata (nothing is imported)."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def tested_versions(skill_md: Path) -> dict[str, list[str]]:
    """The tested-<distribution> keys of SKILL.md's metadata block, e.g. {"torch": ["2.7.0", "2.13.0"]}.

    A small reader for the block-style `metadata:` mapping of the frontmatter, so no YAML library is needed.
    """
    frontmatter = re.match(r"---\r?\n(.*?)\r?\n---", skill_md.read_text(encoding="utf-8"), flags=re.S)
    found: dict[str, list[str]] = {}
    in_metadata = False
    for line in (frontmatter[1] if frontmatter else "").splitlines():
        if line and not line[0].isspace():
            in_metadata = line.rstrip() == "metadata:"
            continue
        entry = re.match(r"\s+tested-([A-Za-z0-9_.-]+):\s*(.*?)\s*$", line) if in_metadata else None
        if entry:
            versions = entry[2].strip("\"'").split(",")
            found[entry[1].lower()] = [version.strip() for version in versions if version.strip()]
    return found


def version_key(version: str) -> tuple[tuple[int, ...], int, str]:
    """Enough of PEP 440 for the skills' ranges: (release, stage, suffix) with trailing zeros dropped; stage 0 is a
    pre or dev release (below its release), 1 the release, 2 a post release; local labels (+cpu) are ignored."""
    match = re.match(r"v?(\d+(?:\.\d+)*)(.*)$", version.strip().split("+")[0])
    if not match:
        raise ValueError(f"cannot read the version {version!r}")
    release = tuple(int(part) for part in match[1].split("."))
    while len(release) > 1 and release[-1] == 0:
        release = release[:-1]
    suffix = match[2].lower().lstrip(".-_")
    return release, 1 if not suffix else 2 if suffix.startswith("post") else 0, suffix


_COMPARE = {"==": operator.eq, "!=": operator.ne, "<=": operator.le, ">=": operator.ge, ">": operator.gt,
            "<": lambda key, bound: key < (bound[0], 0, "")}  # <X also excludes X's pre-releases


def satisfies(version: str, specifier: str) -> bool:
    key = version_key(version)
    for clause in specifier.split(","):
        match = re.match(r"\s*(==|!=|<=|>=|<|>)\s*(\S+)\s*$", clause)
        if not match:
            raise ValueError(f"cannot read the specifier {specifier!r}")
        if not _COMPARE[match[1]](key, version_key(match[2])):
            return False
    return True


def same_version(left: str, right: str) -> bool:
    return version_key(left) == version_key(right)


def newest(versions: list[str]) -> str:
    return max(versions, key=version_key)


def public(version: str) -> str:
    """The version without its local label: 2.13.0+cpu -> 2.13.0 (pip's ==2.13.0 accepts either build)."""
    return version.split("+")[0]


def torchvision_series(torch_version: str) -> str | None:
    """torchvision 0.N is built for torch 2.(N-15): 0.22 for torch 2.7, 0.28 for 2.13; None outside torch 2.x."""
    release = version_key(torch_version)[0] + (0,)
    return f"0.{release[1] + 15}" if release[0] == 2 else None


def series_of(version: str) -> str:
    release = version_key(version)[0] + (0,)
    return f"{release[0]}.{release[1]}"


class EnvironmentDoctor(NamedTuple):
    """One skill's table, and the checks that read it. The table is the only part that differs between skills."""

    skill: str
    skill_md: Path
    required: dict[str, tuple[str, str]]  # distribution -> (the range this skill supports, why)
    optional: dict[str, tuple[str, str]]  # distribution -> (what it enables, the version specifier to install)
    gpu_bf16: str  # this library's setting for bf16, and for fp16 where the GPU has no bf16
    gpu_fp16: str
    advisories: list[tuple[str, str, str]]  # installed versions that work with a caveat: (distribution, range, caveat)

    @property
    def description(self) -> str:
        return (f"Check this Python environment for the {self.skill} skill: the installed versions next to the tested "
                "ones (SKILL.md metadata), known-bad combinations, missing optional packages, CUDA and bf16, each "
                "problem with the pip line that fixes it. Checks package.* and compat.* fail the run for a version "
                "outside the supported range or a combination known to break; a detail starting 'warning:' is advice "
                "(an untested version inside the range, a missing optional package) and keeps exit code 0.")

    @property
    def distributions(self) -> list[str]:
        """What the JSON summary reports the versions of."""
        return [*self.required, *self.optional]

    def parser(self) -> argparse.ArgumentParser:
        return build_parser(SCRIPT, self.description, f"python scripts/{SCRIPT}")

    def finding(self, name: str, status: str, text: str, fix: dict[str, str] | None = None,
                uninstall: tuple[str, ...] = (), fix_label: str = "fix") -> Finding:
        """A finding whose detail names the command that fixes it."""
        detail = f"warning: {text}" if status == "warning" else text
        if fix:
            detail += f"; {fix_label}: {self.pip_command(fix, uninstall)}"
        return Finding(name, status, detail, fix or {}, uninstall)

    def pip_command(self, fix: dict[str, str], uninstall: tuple[str, ...] = ()) -> str:
        """pip install with the required distributions first, in the table's order."""
        order = [*self.required, *sorted(set(fix) - set(self.required))]
        install = "pip install " + " ".join(shlex.quote(name + fix[name]) for name in order if name in fix)
        return f"pip uninstall -y {' '.join(uninstall)} && {install}" if uninstall else install

    def combined_fix(self, findings: list[Finding]) -> str:
        """One command that fixes every failing finding (warnings left out)."""
        fix: dict[str, str] = {}
        uninstall: dict[str, None] = {}
        for item in [item for item in findings if not item.ok]:
            fix.update(item.fix)
            uninstall.update(dict.fromkeys(item.uninstall))
        return self.pip_command(fix, tuple(uninstall))

    def diagnose(self, installed: dict[str, str | None], tested: dict[str, list[str]]) -> list[Finding]:
        """Every finding for these installed versions (None: not installed) against the tested ones."""
        findings = []
        after = {}  # the version of each required distribution once the fixes are applied
        for name, (supported, why) in self.required.items():
            version, pick, tested_text = installed.get(name), newest(tested[name]), ", ".join(tested[name])
            pinned = {name: f"=={pick}"}
            in_range = version is not None and satisfies(version, supported)
            after[name] = version if in_range else pick
            check = f"package.{name}"
            if version is None:
                findings.append(self.finding(check, "missing", f"not installed (tested: {tested_text})", pinned))
            elif not in_range:
                findings.append(self.finding(
                    check, "error", f"{version} is outside {supported}: {why} (tested: {tested_text})", pinned))
            elif not any(same_version(version, candidate) for candidate in tested[name]):
                findings.append(self.finding(check, "warning", f"{version} is untested but inside {supported} "
                                             f"(tested: {tested_text})", pinned, fix_label="to match the tested set"))
            else:
                findings.append(self.finding(check, "ok", f"{version} (tested)"))
        findings += self.torchvision_findings(installed, tested, after)
        for name, (purpose, specifier) in self.optional.items():
            version = installed.get(name)
            findings.append(self.finding(f"optional.{name}", "ok", f"{version} (for {purpose})") if version else
                            self.finding(f"optional.{name}", "warning", f"not installed; needed only for {purpose}",
                                         {name: specifier}))
        for name, affected, caveat in self.advisories:
            version = installed.get(name)
            if version and satisfies(version, affected):
                findings.append(self.finding(f"advisory.{name}", "warning", f"{name} {version}: {caveat}"))
        return findings

    def torchvision_findings(self, installed: dict[str, str | None], tested: dict[str, list[str]],
                             after: dict[str, str]) -> list[Finding]:
        """torchvision must be built for the torch beside it: the matching series, and a +cpu torch needs a +cpu
        torchvision. A problem fails the run when this skill requires torchvision, and is a warning otherwise."""
        required = "torchvision" in self.required
        torch_version = after.get("torch") or installed.get("torch")
        vision = after.get("torchvision") or installed.get("torchvision")
        if torch_version is None or vision is None:
            return []
        status = "error" if required else "warning"
        series = torchvision_series(torch_version)
        if series is None:
            return [self.finding("compat.torchvision", "warning",
                                 f"no known torchvision series for torch {torch_version}")]
        if series_of(vision) != series:
            matching = [candidate for candidate in tested.get("torchvision", []) if series_of(candidate) == series]
            if matching:
                fix = {"torch": f"=={public(torch_version)}", "torchvision": f"=={newest(matching)}"}
            elif required:
                fix = {"torch": f"=={newest(tested['torch'])}", "torchvision": f"=={newest(tested['torchvision'])}"}
            else:
                fix = {"torch": f"=={public(torch_version)}", "torchvision": f"=={series}.*"}
            return [self.finding("compat.torchvision", status, f"torchvision {vision} is not built for torch "
                                 f"{torch_version} (torch {series_of(torch_version)} pairs with torchvision "
                                 f"{series}.x)", fix)]
        if torch_version.partition("+")[2] == "cpu" and vision.partition("+")[2] != "cpu":
            return [self.finding("compat.torch-build", status,
                                 f"torch {torch_version} is a CPU-only (+cpu) build and torchvision {vision} is not, "
                                 "so torchvision fails to load its operators (operator torchvision::nms does not "
                                 "exist); PyPI's torch and torchvision builds pair",
                                 {"torch": f"=={public(torch_version)}", "torchvision": f"=={public(vision)}"},
                                 ("torch",))]
        return []

    def probe_torch(self, run, torch_version: str) -> None:
        """CUDA and bf16, and --device gpu without CUDA (exit 4). Imports torch, the only import the doctor makes."""
        try:
            import torch
        except Exception as exc:  # noqa: BLE001 - a broken torch raises OSError or RuntimeError as well as ImportError
            message = " ".join(f"{type(exc).__name__}: {exc}".split())[:300]
            run.check("torch.import", False, message)
            raise SmokeError(f"torch does not import ({message}); fix: pip install --force-reinstall "
                             f"torch=={public(torch_version)}", EXIT_CHECK_FAILED) from None
        build = f"CUDA {torch.version.cuda} build" if torch.version.cuda else "CPU-only build"
        has_cuda = torch.cuda.is_available()
        run.check("torch.import", True, f"torch {torch.__version__} ({build})")
        run.check("cuda", True, f"{torch.cuda.device_count()} x {torch.cuda.get_device_name(0)}" if has_cuda else
                  "not available: training runs on the CPU")
        run.resolve_device()
        if not has_cuda:
            run.check("bf16", True, f"not applicable without CUDA ({self.gpu_bf16} is the GPU setting)")
        elif torch.cuda.is_bf16_supported(including_emulation=False):
            run.check("bf16", True, f"native bf16 on this GPU: {self.gpu_bf16} applies")
        else:
            run.check("bf16", True,
                      f"warning: this GPU has no native bf16: use {self.gpu_fp16} instead of {self.gpu_bf16}")

    def body(self, run, version_of: Callable[[str], str | None]) -> None:
        if not self.skill_md.is_file():
            raise SmokeError(f"{self.skill_md} is missing: copy the whole skill folder", EXIT_CHECK_FAILED)
        tested = tested_versions(self.skill_md)
        lacking = [name for name in self.required if not tested.get(name)]
        if lacking:
            raise SmokeError(f"{self.skill_md} records no tested-{lacking[0]} metadata", EXIT_CHECK_FAILED)
        names = dict.fromkeys([*self.required, "torch", "torchvision", *self.optional,
                               *(name for name, _, _ in self.advisories)])
        installed = {name: version_of(name) for name in names}
        findings = self.diagnose(installed, tested)
        for item in findings:
            run.check(item.name, item.ok, item.detail)
        missing = [item for item in findings if item.status == "missing"]
        if missing:
            raise SmokeError(f"missing {', '.join(item.name.split('.', 1)[1] for item in missing)}; "
                             f"fix: {self.combined_fix(findings)}", EXIT_MISSING_DEPENDENCY)
        self.probe_torch(run, installed["torch"])
        failed = [item for item in findings if not item.ok]
        if failed:
            problems = "; ".join(f"{item.name}: {item.detail.split('; fix: ')[0]}" for item in failed)
            raise SmokeError(f"{problems}; fix: {self.combined_fix(findings)}", EXIT_CHECK_FAILED)
