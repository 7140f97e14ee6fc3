"""The smoke-script contract, shared by every smoke script of a skill.

This file is copied verbatim into each skill's ``scripts/`` folder so a skill folder copied on its own still
works; ``tests/test_contract.py`` fails when a copy drifts from ``scripts/smoke_contract.py`` at the bundle root
(run ``make sync-contract`` after editing the root copy).

The contract (``references/smoke-script-contract.md`` explains it for users):
  flags      --device {auto,cpu,gpu}  --seed N  --output-dir DIR  --keep  --json
  exit codes 0 all checks passed, 1 a check failed, 2 usage error, 3 missing dependency, 4 device not there
  --json     one object on stdout: script, ok, device, versions, checks [{name, ok, detail}], seconds
  logs       stderr only; a bad argument or a failure is one line, never a traceback
             (set SMOKE_DEBUG=1 to see the traceback of an unexpected error)
  files      written only inside the output directory, which is a fresh temporary directory removed at exit
             unless --output-dir or --keep is given; Hub, dataset and compiler caches are pointed into it and
             the Hugging Face libraries are put in offline mode before they are imported
"""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from contextlib import contextmanager
from pathlib import Path

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_MISSING_DEPENDENCY = 3
EXIT_NO_DEVICE = 4

EXIT_CODES_HELP = """exit codes:
  0  all checks passed
  1  a check failed (the message names the check)
  2  usage error (bad argument, output dir not usable or not empty, missing or damaged input file)
  3  a dependency is missing (the message gives the pip line that fixes it)
  4  the requested device is not there (--device gpu without CUDA)"""

# Variables set before any Hugging Face or torch import so nothing is fetched and nothing is cached outside
# the output directory. Values are relative to the output directory's ".cache" folder, or literal strings.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_EVALUATE_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "HF_HUB_DISABLE_UPDATE_CHECK": "1",
    "DISABLE_MLFLOW_INTEGRATION": "TRUE",
    "WANDB_DISABLED": "true",
    "TOKENIZERS_PARALLELISM": "false",
}
CACHE_ENV = {
    "HF_HOME": "hf",
    "HF_DATASETS_CACHE": "hf/datasets",
    "HF_EVALUATE_CACHE": "hf/evaluate",
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TRITON_CACHE_DIR": "triton",
    "MPLCONFIGDIR": "matplotlib",
    "XDG_CACHE_HOME": "xdg",
    "TMPDIR": "tmp",
}


class SmokeError(Exception):
    """An expected failure: one line on stderr and the given exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_CHECK_FAILED):
        super().__init__(message)
        self.exit_code = exit_code


class _OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse prints usage plus a message; the contract wants one line
        raise SmokeError(f"{message} (see --help)", EXIT_USAGE)


def build_parser(script: str, description: str, example: str) -> argparse.ArgumentParser:
    """A parser with the contract flags; ``example`` is a working command shown by --help."""
    parser = _OneLineParser(
        prog=script,
        description=description,
        epilog=f"example:\n  {example}\n\n{EXIT_CODES_HELP}",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    contract = parser.add_argument_group("contract flags (every smoke script)")
    contract.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto",
                          help="auto picks gpu when CUDA is available (default: auto)")
    contract.add_argument("--seed", type=seed_int, default=0, help=f"random seed, 0 to {MAX_SEED} (default: 0)")
    contract.add_argument("--output-dir", type=Path, default=None,
                          help="where every file is written: a new or empty folder (default: a temporary "
                               "directory removed at exit)")
    contract.add_argument("--keep", action="store_true", help="keep the temporary output directory")
    contract.add_argument("--json", action="store_true", help="print one JSON summary object on stdout")
    return parser


MAX_COUNT = 10_000  # a smoke run stays small: a larger count is a typo, not a test
MAX_SEED = 2**32 - 1  # numpy's seed range, which Composer and Transformers both seed


def _int_between(text: str, low: int, high: int) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not low <= value <= high:
        raise argparse.ArgumentTypeError(f"{text!r} must be between {low} and {high}")
    return value


def positive_int(text: str) -> int:
    """argparse type for counts such as --batches: 1 to MAX_COUNT."""
    return _int_between(text, 1, MAX_COUNT)


def seed_int(text: str) -> int:
    return _int_between(text, 0, MAX_SEED)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def require(module: str, pip_line: str):
    """Import ``module`` or fail with exit code 3 and the pip line that fixes it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise SmokeError(f"missing dependency {module!r} ({exc}); fix: {pip_line}", EXIT_MISSING_DEPENDENCY) from None


def package_versions(distributions: list[str]) -> dict[str, str | None]:
    versions = {}
    for name in distributions:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            versions[name] = None
    return versions


class SmokeRun:
    """Collects checks, owns the output directory and prints the summary. Use through ``run_main``."""

    def __init__(self, script: str, args: argparse.Namespace, distributions: list[str]):
        self.script = script
        self.args = args
        self.distributions = distributions
        self.checks: list[dict] = []
        self.device = args.device
        self.started = time.perf_counter()
        self._temporary = args.output_dir is None
        self.output_dir = self._prepare_output_dir(args.output_dir)
        self._isolate_caches()

    @staticmethod
    def _prepare_output_dir(requested: Path | None) -> Path:
        if requested is None:
            return Path(tempfile.mkdtemp(prefix="smoke-")).resolve()
        if requested.exists() and not requested.is_dir():
            raise SmokeError(f"--output-dir {str(requested)!r} exists and is not a directory", EXIT_USAGE)
        if requested.is_dir() and any(requested.iterdir()):  # never mix with (and maybe overwrite) other files
            raise SmokeError(f"--output-dir {str(requested)!r} is not empty; give a new or empty folder", EXIT_USAGE)
        try:
            requested.mkdir(parents=True, exist_ok=True)
            probe = requested / ".smoke-write-probe"
            probe.touch()
            probe.unlink()
        except OSError as exc:
            raise SmokeError(f"--output-dir {str(requested)!r} is not writable: {exc.strerror or exc}",
                             EXIT_USAGE) from None
        return requested.resolve()

    def _isolate_caches(self) -> None:
        cache_root = self.output_dir / ".cache"
        for name, value in OFFLINE_ENV.items():
            os.environ[name] = value
        for name, relative in CACHE_ENV.items():
            path = cache_root / relative
            path.mkdir(parents=True, exist_ok=True)
            os.environ[name] = str(path)
        tempfile.tempdir = os.environ["TMPDIR"]

    def resolve_device(self) -> str:
        """Turn --device into 'cpu' or 'gpu' (imports torch); gpu without CUDA is exit code 4."""
        torch = require("torch", "pip install torch")
        has_cuda = torch.cuda.is_available()
        if self.args.device == "gpu" and not has_cuda:
            raise SmokeError("--device gpu was requested but CUDA is not available on this machine", EXIT_NO_DEVICE)
        self.device = "gpu" if self.args.device == "gpu" or (self.args.device == "auto" and has_cuda) else "cpu"
        return self.device

    def check(self, name: str, ok: bool, detail: object = "") -> bool:
        ok = bool(ok)
        self.checks.append({"name": name, "ok": ok, "detail": detail if isinstance(detail, (str, int, float, list, dict)) else str(detail)})
        log(f"[{'ok' if ok else 'FAIL'}] {name}: {detail}")
        return ok

    def check_equal(self, name: str, actual: object, expected: object) -> bool:
        return self.check(name, actual == expected, f"got {actual!r}, expected {expected!r}")

    @contextmanager
    def step(self, name: str):
        """Run a block; an exception inside it fails the check ``name`` and stops the script with exit 1."""
        try:
            yield
        except SmokeError:
            raise
        except Exception as exc:  # noqa: BLE001 - every unexpected error becomes a named failed check
            if os.environ.get("SMOKE_DEBUG"):
                traceback.print_exc()
            message = " ".join(f"{type(exc).__name__}: {exc}".split())
            self.check(name, False, message[:500])
            raise SmokeError(f"check {name!r} failed: {message[:300]}", EXIT_CHECK_FAILED) from None

    def summary(self, error: str | None = None, exit_code: int = EXIT_OK) -> dict:
        summary = {
            "script": self.script,
            "ok": exit_code == EXIT_OK,
            "device": self.device,
            "versions": package_versions(self.distributions),
            "checks": self.checks,
            "seconds": round(time.perf_counter() - self.started, 3),
            "exit_code": exit_code,
        }
        if error:
            summary["error"] = error
        if not self._temporary or self.args.keep:
            summary["output_dir"] = str(self.output_dir)
        return summary

    def cleanup(self) -> None:
        if self._temporary and not self.args.keep:
            shutil.rmtree(self.output_dir, ignore_errors=True)


def run_main(script: str, parser: argparse.ArgumentParser, body, distributions: list[str],
             argv: list[str] | None = None, validate=None) -> int:
    """Parse, run ``body(run)``, print the summary and return the contract exit code.

    ``validate(args)`` runs before anything is imported or written and may raise SmokeError (usage errors).
    ``body(run)`` records checks with ``run.check``; a failed check gives exit code 1.
    """
    run = None
    json_requested = "--json" in (sys.argv[1:] if argv is None else argv)
    try:
        args = parser.parse_args(argv)
        if validate is not None:
            validate(args)
        run = SmokeRun(script, args, distributions)
        body(run)
        failed = [check["name"] for check in run.checks if not check["ok"]]
        if not run.checks:
            raise SmokeError("no check ran", EXIT_CHECK_FAILED)
        if failed:
            raise SmokeError(f"failed checks: {', '.join(failed)}", EXIT_CHECK_FAILED)
        exit_code, error = EXIT_OK, None
    except SmokeError as exc:
        exit_code, error = exc.exit_code, str(exc)
    except KeyboardInterrupt:
        exit_code, error = 130, "interrupted"
    except Exception as exc:  # noqa: BLE001 - the contract forbids tracebacks
        if os.environ.get("SMOKE_DEBUG"):
            traceback.print_exc()
        exit_code, error = EXIT_CHECK_FAILED, " ".join(f"unexpected {type(exc).__name__}: {exc}".split())[:500]
    if error:
        log(f"{script}: error: {error}")
    if json_requested:
        summary = run.summary(error, exit_code) if run else {
            "script": script, "ok": False, "device": None, "versions": package_versions(distributions),
            "checks": [], "seconds": 0.0, "exit_code": exit_code, "error": error}
        print(json.dumps(summary, indent=None, sort_keys=False, default=str), flush=True)
    elif exit_code == EXIT_OK and run:
        log(f"{script}: {len(run.checks)} checks passed on {run.device} in {run.summary()['seconds']:.1f}s")
    if run:
        run.cleanup()
    return exit_code
