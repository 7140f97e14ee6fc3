"""The smoke-script contract, shared by every smoke script of a skill.

This file is copied verbatim into each skill's ``scripts/`` folder so a skill folder copied on its own still
works; ``tests/test_shared_source.py`` fails when a copy drifts from ``skill_common/smoke_contract.py`` at the
bundle root (run ``make sync`` after editing the root copy).

The contract (``references/smoke-script-contract.md`` explains it for users):
  flags      --device {auto,cpu,gpu}  --seed N  --output-dir DIR  --keep  --json
  exit codes 0 all checks passed, 1 a check failed, 2 usage error (an output dir in use by another run, a deleted
             working directory...), 3 missing dependency or one installed that fails to load (told apart in the
             message), 4 device not there, 129 / 130 / 143 interrupted by SIGHUP / SIGINT / SIGTERM
  --json     one object on stdout: script, ok, device, versions, checks [{name, ok, detail, actual, expected}],
             seconds
  checks     detail is the check's line for people (the log line's text). actual is the value the check looked at and
             expected what it had to be, both null when the check compares no value: expected is that value itself,
             or an object of conditions actual meets ({">=": 0.0, "<=": 1.0}; "<", "<=", ">", ">=", "isclose" with
             "rel_tol", "finite", "in", "startswith", "contains", "excludes"), which may also stand for one value
             inside an expected object or list. Both are JSON values (json_value): a tuple is a list, a float that is
             not finite the string "nan", "inf" or "-inf", anything else that is not JSON its str()
  logs       stderr only; a bad argument or a failure is one line, never a traceback
             (set SMOKE_DEBUG=1 to see the traceback of an unexpected error)
  files      written only inside the output directory, which is a fresh temporary directory removed at exit
             unless --output-dir or --keep is given; every cache or module folder the stack reads from a variable
             (CACHE_ENV; log outputs in OUTPUT_ENV_IF_SET when set; SSLKEYLOGFILE, in CLEARED_ENV, is removed) is
             pointed into it and the Hugging Face libraries
             are put in offline mode before they are imported; distributed variables inherited from a launcher or a
             cluster job (RANK, MASTER_ADDR...) are cleared, with one log line
  claim      a run holds its output directory (_Claim: CLAIM_FILE, flock-locked, removed at exit): a second run
             given it is exit 2 naming the holder; a killed run's marker binds no one (the kernel drops its lock)
  steps      every step of the checks belongs to a named check (run.step): an error is never "unexpected"
  signals    SIGINT, SIGTERM and SIGHUP raise ``Interrupted`` (a KeyboardInterrupt) in the main thread while the body runs,
             so its ``finally`` blocks run; then the error line, the JSON summary, the temporary directory removed,
             exit 128 + the signal (130, 143, 129). It is raised once, so later signals do not cut the body's clean-up
             short, and once a signal came the run ends as interrupted whatever the body did next. A signal during
             an import is raised when the import is done (at the next require(), check or step): an exception inside
             torch's import can abort the process. But while require() imports, SIGTERM and SIGHUP keep their default
             action (an import stuck in C never lets a Python handler run): the process dies by the signal, with no
             summary, and a temporary output directory is left (smoke-* in TMPDIR). One before the body stops it
             as it starts; one after it (from the summary on) is ignored (SIG_IGN), until the process exits when
             run_main read sys.argv itself. A process forked from the script dies by the signal as it would without
             the contract; one the checks started with multiprocessing and left running is killed before the output
             directory is removed. Importing Composer installs its own handler (``sys.exit(128 + signal)``):
             ``require`` takes the signals back, and a SystemExit with that code from the body counts as the
             interruption it is.
  stdout     a summary that cannot be written (a closed pipe, a full disk) is a failure: exit 1 unless the run
             already failed, one error line saying so
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import importlib
import importlib.metadata
import json
import math
import os
import re
import shutil
import signal
import stat
import sys
import tempfile
import threading
import time
import traceback
from pathlib import Path

EXIT_OK = 0
EXIT_CHECK_FAILED = 1
EXIT_USAGE = 2
EXIT_MISSING_DEPENDENCY = 3
EXIT_NO_DEVICE = 4
EXIT_INTERRUPTED = 128  # plus the signal number, as a shell reports it: 130 for SIGINT (Ctrl-C), 143 for SIGTERM
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)  # SIGHUP: the terminal closed

EXIT_CODES_HELP = """exit codes:
  0  all checks passed
  1  a check failed (the message names the check)
  2  usage error (bad argument, output dir not usable, not empty or in use by another run, missing or damaged
     input file, a working directory that was deleted)
  3  a dependency is missing (the message gives the pip line that fixes it) or is installed but fails to load
     (the message names the error: a memory limit, a broken install)
  4  the requested device is not there (--device gpu without CUDA)
  129, 130, 143  interrupted by SIGHUP (a closed terminal), SIGINT (Ctrl-C) or SIGTERM; the temporary
                 output directory is removed, unless SIGHUP or SIGTERM ended the process while a library was
                 being imported (then smoke-* is left in TMPDIR)"""

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
# Every variable the installed stack reads for a cache or a folder it writes or imports code from (swept from the
# libraries' sources by tests/test_confinement.py): each is pointed into the output directory, whether the user set
# it or not, so a value set outside the run cannot make it write (or import) elsewhere.
CACHE_ENV = {
    "HF_HOME": "hf",
    "HF_HUB_CACHE": "hf/hub",
    "HUGGINGFACE_HUB_CACHE": "hf/hub",  # the older name huggingface_hub still reads
    "HF_ASSETS_CACHE": "hf/assets",
    "HUGGINGFACE_ASSETS_CACHE": "hf/assets",
    "HF_XET_CACHE": "hf/xet",
    "HF_MODULES_CACHE": "hf/modules",  # transformers, datasets and evaluate write code there and import it
    "HF_DATASETS_CACHE": "hf/datasets",
    "HF_DATASETS_DOWNLOADED_DATASETS_PATH": "hf/datasets/downloads",
    "HF_DATASETS_EXTRACTED_DATASETS_PATH": "hf/datasets/downloads/extracted",
    "HF_EVALUATE_CACHE": "hf/evaluate",
    "HF_METRICS_CACHE": "hf/metrics",
    "HF_DATASETS_DOWNLOADED_EVALUATE_PATH": "hf/evaluate/downloads",
    "HF_DATASETS_EXTRACTED_EVALUATE_PATH": "hf/evaluate/downloads/extracted",
    "TORCH_HOME": "torch",
    "TORCH_EXTENSIONS_DIR": "torch/extensions",  # compiled C++ extensions, imported from there
    "PYTORCH_KERNEL_CACHE_PATH": "torch/kernels",  # read by torch's C++ (CUDA jiterator kernels)
    "TORCHINDUCTOR_CACHE_DIR": "inductor",
    "TORCHVISION_DATASETS_HOME": "torchvision",
    "QUACK_CACHE_DIR": "quack",  # torch's CuTe DSL kernels (newer torch)
    "TRITON_HOME": "triton-home",
    "TRITON_CACHE_DIR": "triton",
    "TRITON_DUMP_DIR": "triton-dump",
    "TRITON_OVERRIDE_DIR": "triton-override",  # kernels loaded from there with TRITON_KERNEL_OVERRIDE=1
    "CUDA_CACHE_PATH": "nv",  # the CUDA driver's JIT cache, else ~/.nv/ComputeCache (seen on an H200 run)
    "MPLCONFIGDIR": "matplotlib",
    "XDG_CACHE_HOME": "xdg",
    "XDG_CONFIG_HOME": "xdg-config",
    "XDG_DATA_HOME": "xdg-data",
    "XDG_STATE_HOME": "xdg-state",
    "TMPDIR": "tmp",
}
# Where a library writes a log, a report, a dump or a rendezvous file, only when the variable is set: a value the
# user set is pointed into the output directory (its folder is made there); unset, it stays unset (setting it would
# turn that output on).
OUTPUT_ENV_IF_SET = {
    "TORCH_LOGS_OUT": "logs/torch-logs.txt",
    "TORCHINDUCTOR_AUTOHEURISTIC_LOG_PATH": "logs/autoheuristic",
    "TORCHINDUCTOR_MM_LOGGING_FILE": "logs/inductor-mm.txt",
    "TORCHINDUCTOR_CONV_LOGGING_FILE": "logs/inductor-conv.txt",
    "TORCHINDUCTOR_FLEX_ATTENTION_LOGGING_FILE": "logs/inductor-flex-attention.txt",
    "TORCHINDUCTOR_TRITON_PROTON_OUTPUT_DIR": "logs/proton",
    "FX_NET_ACC_SPLITTER_TRACKER_DUMP_PATH": "logs/splitter-tracker",
    "TORCHCOMM_STORE_PATH": "logs/torchcomm-store",
    "TORCHELASTIC_ERROR_FILE": "logs/torchelastic-error.json",  # a launcher sets its own for each rank it starts
    "ACCELERATE_DEBUG_RDV_FILE": "logs/accelerate-debug-rdv",
    "ONNXRT_DUMP_PATH": "logs/onnxrt-dump",
    "PARTITIONER_MEMORY_BUDGET_PARETO_DIR": "logs/memory-budget-pareto",
    "NETWORK_DEBUG_REPORT_PATH": "logs/network-debug-report.json",
    "TENSORBOARD_LOGGING_DIR": "logs/tensorboard",
    "MOSAICML_LOG_DIR": "logs/mosaicml",  # the composer launcher's rank logs ("false" turns them off: kept)
    "PYTORCH_TUNABLEOP_FILENAME": "logs/tunableop-results.csv",  # TunableOp's tuned GEMMs (GPU, when enabled)
}
# Files a library would write outside the output directory that the run has no use for: removed from the environment.
CLEARED_ENV = {
    "SSLKEYLOGFILE": "TLS session keys (ssl, urllib3, httpx append to it): the run makes no TLS connection, and a "
                     "copy of that secret-bearing file inside the output directory would outlive the run with --keep",
}
# What torchrun, the composer launcher, accelerate and MPI set for one rank of a job. A smoke script inherits them
# inside a cluster job or a launched shell; left in place, torch would try to join that job (connect to its
# MASTER_ADDR) or Composer would train as one of its ranks. Scripts that need ranks launch their own.
DISTRIBUTED_ENV = (
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK", "GROUP_RANK", "GROUP_WORLD_SIZE",
    "ROLE_RANK", "ROLE_WORLD_SIZE", "ROLE_NAME", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RUN_ID",
    "TORCHELASTIC_RESTART_COUNT", "TORCHELASTIC_MAX_RESTARTS", "TORCHELASTIC_USE_AGENT_STORE",
    "PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "MPI_LOCALNRANKS",
    "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE",
    "MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE", "MV2_COMM_WORLD_LOCAL_RANK", "MV2_COMM_WORLD_LOCAL_SIZE",
)


class SmokeError(Exception):
    """An expected failure: one line on stderr and the given exit code."""

    def __init__(self, message: str, exit_code: int = EXIT_CHECK_FAILED):
        super().__init__(message)
        self.exit_code = exit_code


class Interrupted(KeyboardInterrupt):
    """SIGINT, SIGTERM or SIGHUP arrived while the body ran. Raised in the main thread, so the body's ``finally`` blocks
    run; run_main reports it and exits with ``exit_code``."""

    def __init__(self, signum: int):
        super().__init__(f"interrupted by {signal.Signals(signum).name}")
        self.signum = signum
        self.exit_code = EXIT_INTERRUPTED + signum


class _SignalGate:
    """SIGINT, SIGTERM and SIGHUP for the length of run_main (see the module docstring)."""

    active: _SignalGate | None = None  # the gate of the run_main in progress, for require() and SmokeRun

    def __init__(self, until_exit: bool = False):
        self.until_exit = until_exit
        self.pid = os.getpid()
        self.in_body = False
        self.signum: int | None = None  # the first stop signal of the run
        self.raised = False  # Interrupted was raised for it: once, so the body's clean-up is not cut short
        self.previous: dict[int, object] = {}

    def __enter__(self) -> _SignalGate:
        if threading.current_thread() is threading.main_thread():  # the only thread that may set handlers
            for signum in STOP_SIGNALS:
                if signal.getsignal(signum) is not signal.SIG_IGN:  # e.g. SIGINT of a `cmd &` job stays ignored
                    self.previous[signum] = signal.signal(signum, self.handle)
        _SignalGate.active = self
        return self

    def __exit__(self, *exc_info) -> None:
        _SignalGate.active = None
        if self.until_exit:
            return  # ignored since the summary (ignore_from_summary), until the process exits
        for signum, handler in self.previous.items():
            signal.signal(signum, handler or signal.SIG_DFL)  # None: a handler set outside Python

    def ignore_from_summary(self) -> None:
        """The outcome is decided: a signal from here on is ignored, so the exit code cannot disagree with the
        summary (a late Ctrl-C once gave exit 130 after a summary saying ok). For a command-line run
        (``until_exit``) they stay ignored after run_main returns, while the process exits; a caller that passed its
        own argv gets its handlers back."""
        for signum in self.previous:
            signal.signal(signum, signal.SIG_IGN)

    def reclaim(self) -> None:
        """Set the handlers again where an import replaced them (Composer installs its own)."""
        for signum in self.previous:
            if signal.getsignal(signum) != self.handle:
                signal.signal(signum, self.handle)

    def handle(self, signum: int, frame) -> None:
        if os.getpid() != self.pid:  # a forked child (multiprocessing) dies by the signal, as without the contract
            signal.signal(signum, signal.SIG_DFL)
            os.kill(os.getpid(), signum)
            return
        if self.signum is None:
            self.signum = signum
        if not _importing(frame):
            self.interrupt_point()

    def interrupt_point(self) -> None:
        """Raise Interrupted if a signal came while the body runs and none was raised yet."""
        if self.in_body and self.signum is not None and not self.raised:
            self.raised = True
            raise Interrupted(self.signum)

    def run_body(self, body, run) -> None:
        """``body(run)``, interruptible. A signal during the set-up stops it before it starts; once a signal came, the
        run ends as interrupted whatever the body did next (a library may have swallowed the exception)."""
        self.in_body = True
        try:
            self.interrupt_point()
            body(run)
        except SystemExit as exc:  # Composer's handler, if it got in (it exits with 128 + the signal), or sys.exit
            if exc.code not in [EXIT_INTERRUPTED + signum for signum in STOP_SIGNALS]:
                raise SmokeError(f"the checks stopped with sys.exit({exc.code!r})", EXIT_CHECK_FAILED) from None
            self.signum = self.signum or exc.code - EXIT_INTERRUPTED
        finally:
            self.in_body = False
            if self.signum is not None:
                raise Interrupted(self.signum) from None


def _importing(frame) -> bool:
    """Whether the main thread is inside an import. An exception raised there can abort the process (torch's C++
    initialisation calls back into Python) or leave a module half imported (numpy without ndarray), so a signal
    that lands there is raised at the next interrupt point: the end of require(), a check or a step."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def _interrupt_point() -> None:
    if _SignalGate.active is not None:
        _SignalGate.active.interrupt_point()


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
        allow_abbrev=False,  # `--js` must not pass for --json: run_main looks for the literal flag
    )
    contract = parser.add_argument_group("contract flags (every smoke script)")
    contract.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto",
                          help="auto picks gpu when CUDA is available (default: auto)")
    contract.add_argument("--seed", type=seed_int, default=0, help=f"random seed, 0 to {MAX_SEED} (default: 0)")
    contract.add_argument("--output-dir", type=output_dir_path, default=None,
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


def output_dir_path(text: str) -> Path:
    """argparse type for --output-dir: the empty string is refused (Path reads it as the working folder)."""
    if not text:
        raise argparse.ArgumentTypeError("an empty path is not a folder; give a new or empty folder")
    return Path(text)


def log(message: str) -> None:
    """One line on stderr. A stderr that cannot be written (closed, a full disk) is skipped, never an error."""
    if sys.stderr is None:  # started with stderr closed (2>&-)
        return
    try:
        print(message, file=sys.stderr, flush=True)
    except OSError:
        _discard(sys.stderr)


def _discard(stream) -> None:
    """Point a stream whose write failed at os.devnull, so what is still buffered, and the interpreter's flush at
    exit, do not fail again (Python's advice for BrokenPipeError)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())
    os.close(devnull)


def json_value(value: object) -> object:
    """``value`` as JSON data for a check's actual or expected: a tuple is a list, a key a string, a numpy or torch
    scalar its number, a float that is not finite its name ("nan", "inf", "-inf": JSON has none), anything else that
    is not JSON (a path) its str()."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if getattr(value, "ndim", None) == 0 and callable(getattr(value, "item", None)):
        return json_value(value.item())  # numpy.int64(3), torch.tensor(0.5)
    if isinstance(value, int):
        return int(value)  # an IntEnum such as signal.SIGKILL is its number
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else str(float(value))
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_value(item) for item in value]
    return str(value)


def require(module: str, pip_line: str):
    """Import ``module`` or fail with exit code 3: not installed, with the pip line that fixes it; installed but failing
    to load (a shared library a memory limit kept out, a broken install), with the error it raised."""
    try:
        with _ended_by_supervisor_signals():
            imported = importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (module == exc.name or module.startswith(exc.name + ".")):
            raise SmokeError(f"missing dependency {module!r} ({exc}); fix: {pip_line}",
                             EXIT_MISSING_DEPENDENCY) from None
        raise SmokeError(_failed_to_load(module, exc), EXIT_MISSING_DEPENDENCY) from None
    except Exception as exc:  # noqa: BLE001 - ImportError, OSError...: whatever the package's import raised
        raise SmokeError(_failed_to_load(module, exc), EXIT_MISSING_DEPENDENCY) from None
    if _SignalGate.active is not None:
        _SignalGate.active.reclaim()  # `import composer` replaces the SIGINT and SIGTERM handlers with its own
    _interrupt_point()
    return imported


SUPERVISOR_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


@contextlib.contextmanager
def _ended_by_supervisor_signals():
    """SIGTERM and SIGHUP end the process (their default action) while require() imports. A Python handler runs only
    between bytecodes: an import stuck in C holding the interpreter (OpenBLAS's thread start retrying ENOMEM forever
    under `ulimit -v`, inside numpy's dlopen) never lets it run, so `kill`, `timeout` or a closed terminal could not
    end the run, only SIGKILL. The price: a run ended there writes no summary and leaves its temporary folder
    (smoke-* in TMPDIR, its .smoke-run naming the script and pid). SIGINT stays held (raised when the import is
    done): Ctrl-C keeps its clean outcome, and Ctrl-\\ (SIGQUIT) or `kill` ends a stuck import."""
    gate = _SignalGate.active
    ending = [signum for signum in SUPERVISOR_SIGNALS if gate is not None and signum in gate.previous
              and threading.current_thread() is threading.main_thread()]
    for signum in ending:
        signal.signal(signum, signal.SIG_DFL)
    try:
        yield
    finally:
        for signum in ending:
            signal.signal(signum, gate.handle)


def _failed_to_load(module: str, exc: Exception) -> str:
    error = _exception_line(exc)[:400]
    return (f"dependency {module!r} is installed but failed to load ({error}); not a missing package: look for a "
            "memory limit (ulimit -v) or a broken install (pip install --force-reinstall)")


def package_versions(distributions: list[str]) -> dict[str, str | None]:
    versions = {}
    for name in distributions:
        try:
            versions[name] = importlib.metadata.version(name)
        except Exception:  # noqa: BLE001 - not installed, a broken METADATA, a memory limit: null, never a traceback
            versions[name] = None
    return versions


class SmokeRun:
    """Collects checks, owns the output directory and prints the summary. Use through ``run_main``."""

    def __init__(self, script: str, args: argparse.Namespace, distributions: list[str], braced_tmpdir_ok: bool = False):
        self.script = script
        self.args = args
        self.distributions = distributions
        self.checks: list[dict] = []
        self.device = args.device
        self.started = time.perf_counter()
        self._temporary = args.output_dir is None
        self._previous_tempdir = tempfile.tempdir
        self.output_dir, self._claim = self._prepare_output_dir(args.output_dir, braced_tmpdir_ok)
        try:
            self._isolate_caches()
        except BaseException:
            self.cleanup()
            raise
        self._clear_distributed_env()

    def _prepare_output_dir(self, requested: Path | None, braced_tmpdir_ok: bool) -> tuple[Path, _Claim]:
        if requested is None:
            if not braced_tmpdir_ok:
                _refuse_braces(Path(tempfile.gettempdir()).resolve(), "the temporary folder",
                               "set TMPDIR to a folder without braces or give --output-dir")
            try:
                folder = Path(tempfile.mkdtemp(prefix="smoke-")).resolve()
            except OSError as exc:  # no writable TMPDIR, /tmp or /var/tmp
                raise SmokeError(f"cannot make a temporary output folder ({exc.strerror or exc}); set TMPDIR to a "
                                 "writable folder or give --output-dir", EXIT_USAGE) from None
            try:
                claim = _Claim.take(folder, self.script, "the temporary output folder")
                claim.write_holder()
                return folder, claim
            except BaseException:
                shutil.rmtree(folder, ignore_errors=True)
                raise
        named = f"--output-dir {str(requested)!r}"
        for path in [requested, *requested.parents]:  # mkdir would only say "File exists"
            if path.is_symlink() and not path.exists():
                raise SmokeError(f"{named}: {str(path)!r} is a dangling symbolic link (to {os.readlink(path)!r}: a "
                                 "missing target or a loop of links); give a new or empty folder", EXIT_USAGE)
        _refuse_braces(requested.resolve(), named, "choose a folder without braces")
        if requested.exists() and not requested.is_dir():
            raise SmokeError(f"{named} exists and is not a directory", EXIT_USAGE)
        if requested.is_dir():
            _refuse_unless_empty(requested, named)  # before writing anything: a folder of yours is left untouched
        try:
            requested.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise SmokeError(f"{named} is not writable: {exc.strerror or exc}", EXIT_USAGE) from None
        claim = _Claim.take(requested, self.script, named)
        try:  # again, now that no other run can start in it: one may have written and ended since the first look
            _refuse_unless_empty(requested, named, claimed=True)
        except SmokeError:
            claim.release()
            raise
        claim.write_holder()
        return requested.resolve(), claim

    def _isolate_caches(self) -> None:
        cache_root = self.output_dir / ".cache"
        for name, value in OFFLINE_ENV.items():
            os.environ[name] = value
        for name, relative in CACHE_ENV.items():
            path = cache_root / relative
            path.mkdir(parents=True, exist_ok=True)
            os.environ[name] = str(path)
        for name in CLEARED_ENV:
            os.environ.pop(name, None)
        for name, relative in OUTPUT_ENV_IF_SET.items():
            if os.environ.get(name, "false").lower() != "false":
                path = cache_root / relative
                path.parent.mkdir(parents=True, exist_ok=True)
                os.environ[name] = str(path)
        tempfile.tempdir = os.environ["TMPDIR"]

    def _clear_distributed_env(self) -> None:
        inherited = [name for name in DISTRIBUTED_ENV if name in os.environ]
        for name in inherited:
            del os.environ[name]
        if inherited:
            log(f"{self.script}: cleared inherited distributed variables {', '.join(inherited)}: this script runs "
                "as one process and launches its own ranks where it needs them")

    def resolve_device(self) -> str:
        """Turn --device into 'cpu' or 'gpu' (imports torch); gpu without CUDA is exit code 4."""
        torch = require("torch", "pip install torch")
        has_cuda = torch.cuda.is_available()
        if self.args.device == "gpu" and not has_cuda:
            raise SmokeError("--device gpu was requested but CUDA is not available on this machine", EXIT_NO_DEVICE)
        self.device = "gpu" if self.args.device == "gpu" or (self.args.device == "auto" and has_cuda) else "cpu"
        return self.device

    def check(self, name: str, ok: bool, detail: object = "", *, actual: object = None,
              expected: object = None) -> bool:
        """Record a check. ``actual``: the value it looked at; ``expected``: that value as it had to be, or conditions
        such as {"<": 0.7} (the module docstring lists them); both None when the check compares no value."""
        _interrupt_point()
        ok = bool(ok)
        kept = detail if isinstance(detail, (str, int, float, list, dict)) else str(detail)
        self.checks.append({"name": name, "ok": ok, "detail": kept, "actual": json_value(actual),
                            "expected": json_value(expected)})
        log(f"[{'ok' if ok else 'FAIL'}] {name}: {detail}")
        return ok

    def check_equal(self, name: str, actual: object, expected: object) -> bool:
        return self.check(name, actual == expected, f"got {actual!r}, expected {expected!r}", actual=actual,
                          expected=expected)

    @contextlib.contextmanager
    def step(self, name: str):
        """Run a block; an exception inside it fails the check ``name`` and stops the script with exit 1."""
        _interrupt_point()
        try:
            yield
        except SmokeError:
            raise
        except Exception as exc:  # noqa: BLE001 - every unexpected error becomes a named failed check
            if os.environ.get("SMOKE_DEBUG"):
                traceback.print_exc()
            message = _error_text(exc)
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

    def remove_empty_cache(self) -> None:
        """Remove the empty folders left under <output-dir>/.cache, for a script that writes nothing (trap_check.py),
        so the same --output-dir can be given again. Only while this run holds the folder: then all of .cache was
        made by this run (the folder was empty when it was claimed), never by another run. A folder with a file in
        it stays, and so does a link (os.walk does not follow it)."""
        cache = self.output_dir / ".cache"
        if not self._claim.held or cache.is_symlink() or not cache.is_dir():
            return
        for folder, dirs, _files in os.walk(cache, topdown=False):
            for name in dirs:
                with contextlib.suppress(OSError):  # not empty, or a link to a folder: kept
                    os.rmdir(os.path.join(folder, name))
        with contextlib.suppress(OSError):
            os.rmdir(cache)

    def cleanup(self) -> None:
        tempfile.tempdir = self._previous_tempdir  # a second main() in this process must not use the removed folder
        if self._temporary and not self.args.keep:
            shutil.rmtree(self.output_dir, ignore_errors=True)
        self._claim.release()


CLAIM_FILE = ".smoke-run"  # in the output directory while a run uses it; holds who that is


class _Claim:
    """A run's hold on its output directory: ``CLAIM_FILE`` in it, locked (flock) while the run lasts, removed at
    exit. Two runs given one folder cannot both pass the "new or empty" check: the second finds the lock taken and
    is refused (exit 2) naming the run that holds it. The lock is the kernel's, so a run killed by SIGKILL or the
    OOM killer holds nothing: its marker stays (it never ran its clean-up) but binds no one. A later run takes over
    a folder that holds nothing else, and refuses one with the killed run's files as not empty, saying whose they
    are. Only a marker a run left is taken over (_open_marker, _holder_line): never a link, a pipe or a user's file."""

    def __init__(self, marker: Path, fd: int, script: str):
        self.marker, self.fd, self.script = marker, fd, script

    @property
    def held(self) -> bool:
        return self.fd is not None

    @classmethod
    def take(cls, folder: Path, script: str, named: str) -> _Claim:
        marker = folder / CLAIM_FILE
        while True:
            fd = _open_marker(marker, named)
            if fd is None:
                continue  # a stale marker went between our two opens: make a fresh one
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                in_use = _in_use(named, fd)
                os.close(fd)
                raise in_use from None
            except OSError as exc:  # a file system without locks
                os.close(fd)
                raise SmokeError(f"{named} cannot be locked for this run ({exc.strerror or exc}); give a folder on "
                                 "a local disk", EXIT_USAGE) from None
            claim = cls(marker, fd, script)
            if not claim._is_at_marker():
                os.close(fd)  # its holder removed the marker between our open and our lock: a fresh one is due
                continue
            if not _holder_line(os.pread(fd, MAX_HOLDER_BYTES + 1, 0)):
                os.close(fd)  # someone's own file of that name: never truncated, never removed
                raise _not_a_marker(named, "a file that is not a smoke run's marker")
            return claim

    def _is_at_marker(self) -> bool:
        try:
            on_disk, ours = os.stat(self.marker, follow_symlinks=False), os.fstat(self.fd)
        except OSError:
            return False
        return (on_disk.st_dev, on_disk.st_ino) == (ours.st_dev, ours.st_ino)

    def write_holder(self) -> None:
        """Say who holds the folder, for the run that is refused (a stale marker's text is replaced)."""
        started = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime())
        with contextlib.suppress(OSError):  # a full disk: the refused run then names "one that is starting"
            os.ftruncate(self.fd, 0)
            os.pwrite(self.fd, f"{self.script}, pid {os.getpid()}, started {started}\n".encode(), 0)

    def release(self) -> None:
        """Remove the marker if it is still ours, then unlock: never another run's marker. Forked children share the
        lock; they are ended before this (run_main) or die with the process."""
        if self.fd is None:
            return
        if self._is_at_marker():
            with contextlib.suppress(OSError):
                self.marker.unlink()
        os.close(self.fd)
        self.fd = None


MAX_HOLDER_BYTES = 1000
# What write_holder writes; a marker that holds anything else is not taken over
HOLDER_LINE = re.compile(rb"[^\n]{1,300}, pid \d+, started \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\n")


def _holder_line(content: bytes) -> bool:
    """Whether a marker's content is one a run of this contract left: its holder line, or nothing (a run killed
    between making the marker and writing it; an empty file of anyone's loses nothing when taken over)."""
    return not content or (len(content) <= MAX_HOLDER_BYTES and HOLDER_LINE.fullmatch(content) is not None)


def _open_marker(marker: Path, named: str) -> int | None:
    """The marker, made afresh or an existing one opened for a take-over; None if it went between the two tries. Only
    a regular file with no other hard link is opened (never through a link, never a pipe or a device): writing to
    anything else would write outside the folder or block. O_NONBLOCK: a named pipe never blocks the open."""
    flags = os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        return os.open(marker, flags | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        pass
    except OSError as exc:
        raise SmokeError(f"{named} is not writable: {exc.strerror or exc}", EXIT_USAGE) from None
    try:
        found = os.lstat(marker)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SmokeError(f"{named} is not writable: {exc.strerror or exc}", EXIT_USAGE) from None
    if not stat.S_ISREG(found.st_mode) or found.st_nlink != 1:
        raise _not_a_marker(named, _what_it_is(found))
    try:
        fd = os.open(marker, flags)
    except FileNotFoundError:
        return None
    except OSError as exc:  # ELOOP: replaced by a link since the look
        raise SmokeError(f"{named} is not empty ({CLAIM_FILE} cannot be opened as a marker: {exc.strerror or exc}); "
                         "give a new or empty folder", EXIT_USAGE) from None
    opened = os.fstat(fd)
    if not stat.S_ISREG(opened.st_mode) or opened.st_nlink != 1:
        os.close(fd)
        raise _not_a_marker(named, _what_it_is(opened))
    return fd


def _what_it_is(found: os.stat_result) -> str:
    if stat.S_ISREG(found.st_mode):
        return f"a file with {found.st_nlink - 1} other hard link(s)"  # writing it would write outside the folder
    kinds = {stat.S_ISDIR: "a directory", stat.S_ISLNK: "a symbolic link", stat.S_ISFIFO: "a named pipe",
             stat.S_ISSOCK: "a socket"}
    return next((name for test, name in kinds.items() if test(found.st_mode)), "a device file")


def _not_a_marker(named: str, what: str) -> SmokeError:
    return SmokeError(f"{named} is not empty ({CLAIM_FILE} there is {what}, not a smoke run's marker; it is left "
                      "as it is); give a new or empty folder", EXIT_USAGE)


def _holder_text(fd: int) -> str:
    text = os.pread(fd, 300, 0).decode("utf-8", "replace").strip()
    return " ".join(text.split()) or "one that is starting"


def _in_use(named: str, fd: int) -> SmokeError:
    return SmokeError(f"{named} is in use by another run ({_holder_text(fd)}); wait for it to end or give another "
                      "folder", EXIT_USAGE)


def _refuse_unless_empty(folder: Path, named: str, claimed: bool = False) -> None:
    """Refuse a folder with anything in it but a claim marker (never mix with, and maybe overwrite, other files): a
    folder a live run holds is in use; files next to the marker of a run that ended are that run's. ``claimed``: the
    marker is this run's own, so the files are those of a run that ended since the first look."""
    try:
        entries = [entry.name for entry in folder.iterdir()]
    except OSError as exc:
        raise SmokeError(f"{named} cannot be read: {exc.strerror or exc}", EXIT_USAGE) from None
    if not [name for name in entries if name != CLAIM_FILE]:
        return
    left_by = ""
    if CLAIM_FILE in entries and not claimed:
        try:
            fd = os.open(folder / CLAIM_FILE, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except OSError:
            fd = None
        if fd is not None and not stat.S_ISREG(os.fstat(fd).st_mode):  # a directory, a pipe: no holder to name
            os.close(fd)
            fd = None
        if fd is not None:
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
                except BlockingIOError:
                    raise _in_use(named, fd) from None
                except OSError:
                    pass
                left_by = f" (files of a run that ended without cleaning up, killed perhaps: {_holder_text(fd)})"
            finally:
                os.close(fd)
    raise SmokeError(f"{named} is not empty{left_by}; give a new or empty folder", EXIT_USAGE)


def _error_text(exc: Exception) -> str:
    """An exception on one line. shutil.copytree's Error holds one (source, destination, reason) per file it could
    not copy: the first reason comes first, so a long list of paths does not hide it (a full disk)."""
    copies = exc.args[0] if isinstance(exc, shutil.Error) and exc.args and isinstance(exc.args[0], list) else None
    if copies and all(isinstance(item, tuple) and len(item) == 3 for item in copies):
        _source, destination, reason = copies[0]
        more = f" (and {len(copies) - 1} more)" if len(copies) > 1 else ""
        return " ".join(f"Error: copying to {destination!r} failed: {reason}{more}".split())
    return _exception_line(exc)


def _exception_line(exc: BaseException) -> str:
    """``Type: message`` on one line. A MemoryError usually has no message (the allocation that failed says
    nothing): it is named "out of memory", so the line never ends in an empty message."""
    message = " ".join(str(exc).split()) or ("out of memory" if isinstance(exc, MemoryError) else "")
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def _refuse_braces(path: Path, named: str, remedy: str) -> None:
    """Composer expands {rank}, {run_name}... in the paths it is given (an unknown name or a lone brace raises), so
    files would land in sibling folders outside the output directory."""
    if "{" in str(path) or "}" in str(path):
        raise SmokeError(f"{named} has a brace in its path {str(path)!r}: Composer expands {{rank}}-style "
                         f"placeholders in paths, so files would land outside it; {remedy}", EXIT_USAGE)


def run_main(script: str, parser: argparse.ArgumentParser, body, distributions: list[str],
             argv: list[str] | None = None, validate=None, braced_tmpdir_ok: bool = False) -> int:
    """Parse, run ``body(run)``, print the summary and return the contract exit code.

    A temporary folder with braces is refused (Composer would expand them in the paths a smoke script writes to)
    unless ``braced_tmpdir_ok``: for scripts that run no Composer; ``--output-dir`` with braces is always refused.

    ``validate(args)`` runs before anything is imported or written and may raise SmokeError (usage errors).
    ``body(run)`` records checks with ``run.check``; a failed check gives exit code 1. SIGINT, SIGTERM and SIGHUP
    reach the body as ``Interrupted`` (exit 130 / 143 / 129); the temporary output directory is removed in every case.
    """
    command_line = argv is None  # the script's own run: the process exits when run_main returns
    argv = sys.argv[1:] if argv is None else argv
    json_requested = "--json" in argv  # the parser takes no abbreviation, so this is the only spelling
    run = None
    with _SignalGate(until_exit=command_line) as gate:
        try:
            try:
                args = parser.parse_args(argv)
                _require_working_directory()
                if validate is not None:
                    validate(args)
                run = SmokeRun(script, args, distributions, braced_tmpdir_ok)
                gate.run_body(body, run)
                failed = [check["name"] for check in run.checks if not check["ok"]]
                if not run.checks:
                    raise SmokeError("no check ran", EXIT_CHECK_FAILED)
                if failed:
                    raise SmokeError(f"failed checks: {', '.join(failed)}", EXIT_CHECK_FAILED)
                exit_code, error = EXIT_OK, None
            except SmokeError as exc:
                exit_code, error = exc.exit_code, str(exc)
            except KeyboardInterrupt as exc:  # Interrupted, or a SIGINT where the gate could not be set
                interrupted = exc if isinstance(exc, Interrupted) else Interrupted(signal.SIGINT)
                exit_code, error = interrupted.exit_code, str(interrupted)
            except Exception as exc:  # noqa: BLE001 - the contract forbids tracebacks
                if os.environ.get("SMOKE_DEBUG"):
                    traceback.print_exc()
                exit_code, error = EXIT_CHECK_FAILED, f"unexpected {_error_text(exc)}"[:500]
            gate.ignore_from_summary()
            summary = None
            if json_requested:
                summary = run.summary(error, exit_code) if run else {
                    "script": script, "ok": False, "device": None, "versions": package_versions(distributions),
                    "checks": [], "seconds": 0.0, "exit_code": exit_code, "error": error}
            unwritten = _write_stdout(None if summary is None else json.dumps(summary, default=str))
            if unwritten:
                exit_code, error = exit_code or EXIT_CHECK_FAILED, f"{error}; {unwritten}" if error else unwritten
            if error:
                log(f"{script}: error: {error}")
            elif not json_requested:
                log(f"{script}: {len(run.checks)} checks passed on {run.device} in {run.summary()['seconds']:.1f}s")
        finally:
            _end_child_processes()
            if run is not None:
                run.cleanup()
    return exit_code


def _require_working_directory() -> None:
    """Before anything heavy is imported: torch's import dies in oneMKL (exit 2, no message) when the working
    directory was deleted, and a relative path would mean nothing."""
    try:
        os.getcwd()
    except FileNotFoundError:
        raise SmokeError("the working directory no longer exists (deleted or moved after the shell entered it): cd "
                         "into an existing folder and run again", EXIT_USAGE) from None


def _end_child_processes() -> None:
    """Processes the checks started with multiprocessing and left running (a crash drill that was interrupted) would
    go on writing into the output directory after it is removed, and keep the script from exiting: kill them."""
    multiprocessing = sys.modules.get("multiprocessing")
    for child in multiprocessing.active_children() if multiprocessing else []:
        child.kill()
        child.join()


def _write_stdout(line: str | None) -> str | None:
    """Print ``line`` (if any) and flush stdout, with whatever the checks printed; returns why that failed."""
    stream = sys.stdout
    if stream is None:  # started with stdout closed (>&-)
        return None if line is None else "could not write to stdout: it is closed"
    try:
        if line is not None:
            print(line, file=stream)
        stream.flush()
    except OSError as exc:
        _discard(stream)
        return f"could not write to stdout: {exc.strerror or exc}"
    return None
