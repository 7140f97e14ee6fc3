"""Confinement: every skill script, run in full from a copy of its skill folder with a fresh HOME, HF_HOME, TMPDIR
and working directory, writes nothing outside its output directory (not even __pycache__ next to itself) and
attempts no network connection. The runs are the shared ones the route tests read (shared_runs.CANONICAL_RUNS)."""

import re
import shutil
from pathlib import Path

import pytest

from support.harness import DEVICES, SKILLS_DIR, import_script, leg_marks, run_python
from support.shared_runs import CANONICAL_RUNS, canonical_run

SCRIPTS = sorted(f"{path.parent.parent.name}/{path.name}" for path in SKILLS_DIR.glob("*/scripts/*.py")
                 if path.name != "smoke_contract.py" and not path.name.startswith("_"))  # _*.py: modules, not scripts


@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("script", [pytest.param(script, marks=leg_marks(SKILLS_DIR / script)) for script in SCRIPTS])
def test_script_writes_only_inside_its_output_dir_and_stays_offline(script, device, tmp_path_factory):
    assert script in CANONICAL_RUNS, f"add a full run of {script} to support.shared_runs.CANONICAL_RUNS"
    result = canonical_run(tmp_path_factory, script, device)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stray_files == [], result.stray_files
    assert result.network_attempts == [], result.network_attempts


def test_a_stray_file_is_caught(tmp_path):
    """The check above can fail: a script that writes into HOME and next to itself is reported, and a file inside
    its output directory is not."""
    skill = tmp_path / "skill"
    (skill / "scripts").mkdir(parents=True)
    (skill / "SKILL.md").write_text("---\nname: skill\n---\n")
    script = skill / "scripts" / "leaky.py"
    script.write_text("import os, pathlib, sys\npathlib.Path(os.environ['HOME'], 'leak').write_text('x')\n"
                      "pathlib.Path(__file__).with_name('leak2').write_text('x')\n"
                      "pathlib.Path(sys.argv[2], 'kept').write_text('x')\n")
    (tmp_path / "out").mkdir()
    result = run_python([str(script), "--output-dir", "out"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stray_files == [str(tmp_path / "home" / "leak"), str(script.with_name("leak2"))]


# ---- every variable the installed stack reads for a cache or a folder it writes or imports from ----

STACK = ("torch", "torchvision", "triton", "transformers", "huggingface_hub", "tokenizers", "safetensors", "datasets",
         "evaluate", "accelerate", "composer", "torchmetrics", "ssl", "urllib3", "httpx", "requests")  # and their HTTP
READ = re.compile(r"""(?:getenv|environ\.get|environ\.setdefault|environ\[|\benv_\w*|_env\w*)\(?\s*\[?\s*["']([A-Z][A-Z0-9_]*)["']""")
NAMED = re.compile(r"""^\s*\w*ENV\w*\s*=\s*["']([A-Z][A-Z0-9_]*)["']""", re.MULTILINE)  # ENV_TORCH_HOME = "TORCH_HOME"
PATH_LIKE = re.compile(r"(CACHE|_HOME|_DIR|_PATH|_FILE|FILENAME|LOGFILE|_ROOT)$")  # SSLKEYLOGFILE, ..._FILENAME
# Names that say "path" but that a smoke run never writes or imports code from, by what the library does with them.
TOOLCHAIN = ("CUDA_HOME CUDA_INC_PATH CUDA_PATH CUDNN_HOME CUDNN_PATH CPLUS_INCLUDE_PATH LD_LIBRARY_PATH "
             "LEVEL_ZERO_V1_SDK_PATH LLVM_PASS_PLUGIN_PATH NVSHMEM_LIB_DIR NVTOOLSEXT_PATH ONEAPI_ROOT ROCM_HOME "
             "ROCM_PATH ROCSHMEM_LIB_DIR TORCHELASTIC_ETCD_BINARY_PATH TORCHINDUCTOR_CK_DIR TORCHINDUCTOR_CUTLASS_DIR "
             "TORCH_CUPTI_MONITOR_LIBCUPTI_PATH TRITON_CUPTI_LIB_PATH TRITON_HIP_LLD_PATH TRITON_LIBCUDA_PATH "
             "TRITON_LIBDEVICE_PATH TRITON_LIBHIP_PATH TRITON_PTXAS_PATH WINDOWS_CUDA_HOME").split()
SWITCHES = ("INDUCTOR_TEST_DISABLE_FRESH_CACHE TORCHINDUCTOR_AUTOGRAD_REMOTE_CACHE TORCHINDUCTOR_AUTOTUNE_REMOTE_CACHE "
            "TORCHINDUCTOR_BUNDLED_AUTOTUNE_REMOTE_CACHE TORCHINDUCTOR_BUNDLE_TRITON_INTO_FX_GRAPH_CACHE "
            "TORCHINDUCTOR_DISABLE_MULTI_KERNEL_CACHE TORCHINDUCTOR_FX_GRAPH_REMOTE_CACHE "
            "TORCHINDUCTOR_SEARCH_AUTOTUNE_CACHE TORCH_FAKE_TENSOR_DISPATCH_CACHE").split()
NOT_REDIRECTED = {
    **dict.fromkeys(TOOLCHAIN, "where an installed toolkit or library is read from"),
    **dict.fromkeys(SWITCHES, "a switch (0/1) or a remote cache's address, not a folder"),
    "ACCELERATE_DEEPSPEED_CONFIG_FILE": "a config file the user gives accelerate launch, read only",
    "ACCELERATE_DEEPSPEED_OFFLOAD_OPTIMIZER_NVME_PATH": "DeepSpeed NVMe offload, which no smoke script configures",
    "ACCELERATE_DEEPSPEED_OFFLOAD_PARAM_NVME_PATH": "DeepSpeed NVMe offload, which no smoke script configures",
    "OCI_CONFIG_FILE": "Oracle Cloud credentials for Composer's object store, read only (the scripts are offline)",
    "HF_TOKEN_PATH": "the Hub token, read only (written by `hf auth login`; the scripts are offline)",
    "CLAUDE_CONFIG_DIR": "read by huggingface_hub's `hf skills` command only",
    "MOSAICML_ACCESS_TOKEN_FILE": "a MosaicML platform credential, read only (the scripts are offline)",
    **dict.fromkeys(["TEMP_DIR", "DISABLED_TESTS_FILE", "SLOW_TESTS_FILE"], "set and read by torch's own test suite"),
}


def paths_read_by_the_stack() -> set[str]:
    import importlib.util

    names = set()
    for package in STACK:
        spec = importlib.util.find_spec(package)
        roots = (spec.submodule_search_locations or []) if spec else []
        sources = [source for root in roots for source in Path(root).rglob("*.py")]
        for source in sources or ([Path(spec.origin)] if spec and spec.origin else []):  # ssl is one file
            text = source.read_text(errors="ignore")
            names.update(match.group(1) for pattern in (READ, NAMED) for match in pattern.finditer(text))
    return {name for name in names if PATH_LIKE.search(name)}


def test_every_cache_or_module_path_the_stack_reads_is_pointed_into_the_output_dir():
    """HF_MODULES_CACHE, set by the user, made train_smoke.py write evaluate's module copy outside its output folder
    and import code from there. The installed libraries' sources are swept for the variables they read whose name
    says cache, home, dir, path, file or root: each is redirected by the contract or named here with the reason it is
    not."""
    contract = import_script(SKILLS_DIR / "transformers-training" / "scripts" / "smoke_contract.py")
    handled = set(contract.CACHE_ENV) | set(contract.OUTPUT_ENV_IF_SET) | set(contract.CLEARED_ENV) | set(NOT_REDIRECTED)
    assert sorted(paths_read_by_the_stack() - handled) == []


def test_cache_and_module_variables_set_outside_are_neither_written_nor_imported_from(tmp_path):
    """Every variable of the contract's lists set to a folder of its own outside the output folder, and evaluate's
    copy of the metric module planted in HF_MODULES_CACHE with code that leaves a file when it runs: a full
    train_smoke.py run writes nothing there and runs none of it."""
    contract = import_script(SKILLS_DIR / "transformers-training" / "scripts" / "smoke_contract.py")
    script = SKILLS_DIR / "transformers-training" / "scripts" / "train_smoke.py"
    probe = tmp_path / "probe"
    where = run_python(["-c", "import evaluate, sys; evaluate.load(sys.argv[1])", str(script.parent.parent / "assets" /
                                                                                  "accuracy_metric.py")], tmp_path,
                       env={"HF_MODULES_CACHE": str(probe), "HF_EVALUATE_OFFLINE": "1"})
    assert where.returncode == 0, where.stderr[-2000:]
    outside = tmp_path / "outside"
    shutil.copytree(probe, outside / "HF_MODULES_CACHE")
    ran = tmp_path / "planted-code-ran"
    for copied in (outside / "HF_MODULES_CACHE").rglob("accuracy_metric.py"):
        copied.write_text(f"open({str(ran)!r}, 'w').write('ran')\n" + copied.read_text())
    env = {name: str(outside / name) for name in [*contract.CACHE_ENV, *contract.OUTPUT_ENV_IF_SET]
           if name not in ("TMPDIR", "HF_MODULES_CACHE")}
    for folder in env.values():
        Path(folder).mkdir()
    env["HF_MODULES_CACHE"] = str(outside / "HF_MODULES_CACHE")
    env.update({name: str(outside / name) for name in contract.CLEARED_ENV})  # files, made by the first write
    result = run_python([str(script), "--device", "cpu", "--json"], tmp_path, env=env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert not ran.exists(), "train_smoke.py imported the code planted in HF_MODULES_CACHE"
    assert result.stray_files == [], result.stray_files
