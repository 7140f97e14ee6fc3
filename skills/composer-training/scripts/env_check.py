#!/usr/bin/env python3
"""Environment doctor for the composer-training skill: run it first in an environment you do not know.

It puts the installed versions of what this skill needs next to the versions the skill was tested with (the
tested-* keys of ../SKILL.md), reports CUDA and bf16, missing optional packages and known-bad combinations,
and gives the pip line that fixes each problem. It reads versions from package metadata and imports only
torch, so it answers in about the time `import torch` takes.
"""

from __future__ import annotations

import importlib.metadata
import operator
import re
import shlex
import sys
from pathlib import Path
from typing import Callable, NamedTuple

sys.dont_write_bytecode = True  # importing the contract must not write __pycache__ into the skill folder
from smoke_contract import EXIT_CHECK_FAILED, EXIT_MISSING_DEPENDENCY, SmokeError, build_parser, run_main

# ---- this skill's table: the only lines that differ between the skills' env_check.py ----
SKILL = "composer-training"
# Required distributions: the range this skill supports (pyproject.toml's [composer] extra) and why.
REQUIRED = {
    "mosaicml": (">=0.32.1,<0.33", "this skill documents the mosaicml 0.32.1 API"),
    "torch": (">=2.6.0,<2.7.1", "mosaicml 0.32.1 requires torch>=2.6.0,<2.7.1; pip refuses newer torch with it "
                                "and forcing it is untested"),
    "torchvision": (">=0.21.0,<0.22.1", "mosaicml 0.32.1 requires torchvision>=0.21.0,<0.22.1"),
}
# Optional distributions: what each one enables, and the version specifier to install.
OPTIONAL = {
    "tensorboard": ("composer's TensorboardLogger", ">=2.9.1,<3.0.0"),
}
# Installed versions that work but carry a caveat: (distribution, range, caveat).
ADVISORIES = [
    ("transformers", ">=4.54", "composer's HuggingFaceModel is unsupported with it upstream (mosaicml[nlp] "
                               "declares transformers<4.54); this skill does not use HuggingFaceModel"),
]
GPU_BF16 = 'precision="amp_bf16"'
GPU_FP16 = 'precision="amp_fp16"'

# ---- shared: the same in every skill's env_check.py (tests/test_env_check.py compares the copies) ----
SCRIPT = "env_check.py"
SKILL_MD = Path(__file__).resolve().parent.parent / "SKILL.md"
DESCRIPTION = (
    f"Check this Python environment for the {SKILL} skill: the installed versions next to the tested ones "
    "(SKILL.md metadata), known-bad combinations, missing optional packages, CUDA and bf16, each problem with "
    "the pip line that fixes it. Checks package.* and compat.* fail the run for a version outside the "
    "supported range or a combination known to break; a detail starting 'warning:' is advice (an untested "
    "version inside the range, a missing optional package) and keeps exit code 0."
)


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


def finding(name: str, status: str, text: str, fix: dict[str, str] | None = None,
            uninstall: tuple[str, ...] = (), fix_label: str = "fix") -> Finding:
    """A finding whose detail names the command that fixes it."""
    detail = f"warning: {text}" if status == "warning" else text
    if fix:
        detail += f"; {fix_label}: {pip_command(fix, uninstall)}"
    return Finding(name, status, detail, fix or {}, uninstall)


def pip_command(fix: dict[str, str], uninstall: tuple[str, ...] = ()) -> str:
    """pip install with the required distributions first, in the table's order."""
    order = [*REQUIRED, *sorted(set(fix) - set(REQUIRED))]
    install = "pip install " + " ".join(shlex.quote(name + fix[name]) for name in order if name in fix)
    return f"pip uninstall -y {' '.join(uninstall)} && {install}" if uninstall else install


def combined_fix(findings: list[Finding]) -> str:
    """One command that fixes every failing finding (warnings left out)."""
    fix: dict[str, str] = {}
    uninstall: dict[str, None] = {}
    for item in [item for item in findings if not item.ok]:
        fix.update(item.fix)
        uninstall.update(dict.fromkeys(item.uninstall))
    return pip_command(fix, tuple(uninstall))


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
    """Enough of PEP 440 for the ranges above: (release, stage, suffix) with trailing zeros dropped; stage 0 is a
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


def diagnose(installed: dict[str, str | None], tested: dict[str, list[str]]) -> list[Finding]:
    """Every finding for these installed versions (None: not installed) against the tested ones."""
    findings = []
    after = {}  # the version of each required distribution once the fixes are applied
    for name, (supported, why) in REQUIRED.items():
        version, pick, tested_text = installed.get(name), newest(tested[name]), ", ".join(tested[name])
        pinned = {name: f"=={pick}"}
        in_range = version is not None and satisfies(version, supported)
        after[name] = version if in_range else pick
        check = f"package.{name}"
        if version is None:
            findings.append(finding(check, "missing", f"not installed (tested: {tested_text})", pinned))
        elif not in_range:
            findings.append(finding(check, "error",
                                    f"{version} is outside {supported}: {why} (tested: {tested_text})", pinned))
        elif not any(same_version(version, candidate) for candidate in tested[name]):
            findings.append(finding(check, "warning", f"{version} is untested but inside {supported} "
                                    f"(tested: {tested_text})", pinned, fix_label="to match the tested set"))
        else:
            findings.append(finding(check, "ok", f"{version} (tested)"))
    findings += torchvision_findings(installed, tested, after)
    for name, (purpose, specifier) in OPTIONAL.items():
        version = installed.get(name)
        findings.append(finding(f"optional.{name}", "ok", f"{version} (for {purpose})") if version else
                        finding(f"optional.{name}", "warning", f"not installed; needed only for {purpose}",
                                {name: specifier}))
    for name, affected, caveat in ADVISORIES:
        version = installed.get(name)
        if version and satisfies(version, affected):
            findings.append(finding(f"advisory.{name}", "warning", f"{name} {version}: {caveat}"))
    return findings


def torchvision_findings(installed: dict[str, str | None], tested: dict[str, list[str]],
                         after: dict[str, str]) -> list[Finding]:
    """torchvision must be built for the torch beside it: the matching series, and a +cpu torch needs a +cpu
    torchvision. A problem fails the run when this skill requires torchvision, and is a warning otherwise."""
    required = "torchvision" in REQUIRED
    torch_version = after.get("torch") or installed.get("torch")
    vision = after.get("torchvision") or installed.get("torchvision")
    if torch_version is None or vision is None:
        return []
    status = "error" if required else "warning"
    series = torchvision_series(torch_version)
    if series is None:
        return [finding("compat.torchvision", "warning", f"no known torchvision series for torch {torch_version}")]
    if series_of(vision) != series:
        matching = [candidate for candidate in tested.get("torchvision", []) if series_of(candidate) == series]
        if matching:
            fix = {"torch": f"=={public(torch_version)}", "torchvision": f"=={newest(matching)}"}
        elif required:
            fix = {"torch": f"=={newest(tested['torch'])}", "torchvision": f"=={newest(tested['torchvision'])}"}
        else:
            fix = {"torch": f"=={public(torch_version)}", "torchvision": f"=={series}.*"}
        return [finding("compat.torchvision", status, f"torchvision {vision} is not built for torch {torch_version} "
                        f"(torch {series_of(torch_version)} pairs with torchvision {series}.x)", fix)]
    if torch_version.partition("+")[2] == "cpu" and vision.partition("+")[2] != "cpu":
        return [finding("compat.torch-build", status,
                        f"torch {torch_version} is a CPU-only (+cpu) build and torchvision {vision} is not, so "
                        "torchvision fails to load its operators (operator torchvision::nms does not exist); "
                        "PyPI's torch and torchvision builds pair",
                        {"torch": f"=={public(torch_version)}", "torchvision": f"=={public(vision)}"}, ("torch",))]
    return []


def probe_torch(run, torch_version: str) -> None:
    """CUDA and bf16, and --device gpu without CUDA (exit 4). Imports torch, the only import this script makes."""
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
        run.check("bf16", True, f"not applicable without CUDA ({GPU_BF16} is the GPU setting)")
    elif torch.cuda.is_bf16_supported(including_emulation=False):
        run.check("bf16", True, f"native bf16 on this GPU: {GPU_BF16} applies")
    else:
        run.check("bf16", True, f"warning: this GPU has no native bf16: use {GPU_FP16} instead of {GPU_BF16}")


def body(run, version_of: Callable[[str], str | None]) -> None:
    if not SKILL_MD.is_file():
        raise SmokeError(f"{SKILL_MD} is missing: copy the whole skill folder", EXIT_CHECK_FAILED)
    tested = tested_versions(SKILL_MD)
    lacking = [name for name in REQUIRED if not tested.get(name)]
    if lacking:
        raise SmokeError(f"{SKILL_MD} records no tested-{lacking[0]} metadata", EXIT_CHECK_FAILED)
    names = dict.fromkeys([*REQUIRED, "torch", "torchvision", *OPTIONAL, *(name for name, _, _ in ADVISORIES)])
    installed = {name: version_of(name) for name in names}
    findings = diagnose(installed, tested)
    for item in findings:
        run.check(item.name, item.ok, item.detail)
    missing = [item for item in findings if item.status == "missing"]
    if missing:
        raise SmokeError(f"missing {', '.join(item.name.split('.', 1)[1] for item in missing)}; "
                         f"fix: {combined_fix(findings)}", EXIT_MISSING_DEPENDENCY)
    probe_torch(run, installed["torch"])
    failed = [item for item in findings if not item.ok]
    if failed:
        problems = "; ".join(f"{item.name}: {item.detail.split('; fix: ')[0]}" for item in failed)
        raise SmokeError(f"{problems}; fix: {combined_fix(findings)}", EXIT_CHECK_FAILED)


def main(argv: list[str] | None = None, version_of: Callable[[str], str | None] = installed_version) -> int:
    """``version_of`` maps a distribution name to its installed version or None (tests pass a fake one)."""
    parser = build_parser(SCRIPT, DESCRIPTION, f"python scripts/{SCRIPT}")
    return run_main(SCRIPT, parser, lambda run: body(run, version_of), [*REQUIRED, *OPTIONAL], argv)


if __name__ == "__main__":
    sys.exit(main())
