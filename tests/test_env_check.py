"""The environment doctor of each skill (scripts/env_check.py): against the real venv of this leg, run from a copy
of the skill folder made alone, and against broken combinations made by faking the version lookup in-process."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import json
import os
import re
import sys
import tempfile
import tomllib

import pytest
import skills_ref
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from support import manifest
from support.harness import CUDA, REPO, SKILLS_DIR, assert_one_line_error, import_script
from support.shared_runs import canonical_run

SKILLS = list(manifest.SKILLS)
HAS_MOSAICML = importlib.util.find_spec("composer") is not None


ENV_CHECKS = {skill: import_script(SKILLS_DIR / skill / "scripts" / "env_check.py") for skill in SKILLS}
DOCTORS = {skill: script.DOCTOR for skill, script in ENV_CHECKS.items()}  # each skill's table with the shared checks
# Each skill's own copy of the shared doctor (the one its env_check.py imports): a bug in either copy fails a test
ENV_DOCTORS = {skill: import_script(SKILLS_DIR / skill / "scripts" / "_env_doctor.py") for skill in SKILLS}


def clauses(specifier: str) -> set[str]:
    return {clause.strip().replace(" ", "") for clause in specifier.split(",") if clause.strip()}


def declared(distribution: str, requirement: str, extra: str | None = None) -> set[str]:
    """The version clauses a distribution's metadata declares for one requirement (of one extra)."""
    for line in importlib.metadata.requires(distribution) or []:
        spec, _, marker = line.partition(";")
        name = re.match(r"[A-Za-z0-9_.-]+", spec)[0]
        wanted_marker = not marker if extra is None else f'extra == "{extra}"' in marker
        if name.lower() == requirement and wanted_marker:
            return clauses(spec[len(name):].strip().strip("()"))
    raise AssertionError(f"{distribution} declares no {requirement} requirement (extra {extra})")


def real_versions(doctor) -> dict[str, str | None]:
    names = [*doctor.required, "torch", "torchvision", *doctor.optional, *(name for name, _, _ in doctor.advisories)]
    return {name: installed(name) for name in names}


def pinned_for(skill: str) -> dict[str, list[str]]:
    """What the constraint files (the one source of truth) say this skill was tested with."""
    facts = manifest.SKILLS[skill]
    return {package: sorted({manifest.pins(leg)[package] for leg in facts.legs}) for package in facts.packages}


def installed(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def by_name(findings) -> dict:
    return {finding.name: finding for finding in findings}


# ---- one source of truth ----

@pytest.mark.parametrize("skill", SKILLS)
def test_reads_the_tested_versions_that_skills_ref_and_the_constraint_files_hold(skill):
    doctor = DOCTORS[skill]
    metadata = skills_ref.read_properties(SKILLS_DIR / skill).metadata or {}
    from_spec_parser = {key.removeprefix("tested-"): [v.strip() for v in value.split(",")]
                        for key, value in metadata.items() if key.startswith("tested-")}
    found = ENV_DOCTORS[skill].tested_versions(doctor.skill_md)
    assert found == from_spec_parser
    assert {package: sorted(versions) for package, versions in found.items()} == pinned_for(skill)


@pytest.mark.parametrize("skill", SKILLS)
def test_the_metadata_reader_agrees_with_the_spec_parser_on_odd_layouts(tmp_path, skill):
    variants = [
        'metadata:\n  disco-role: operating\n  tested-torch: "2.7.0, 2.13.0"\n  tested-mosaicml: 0.32.1\n',
        "metadata:\n  tested-torch: '2.7.0,2.13.0'\nlicense: MIT\n",
        "license: MIT\nmetadata:\n  tested-torch: 2.13.0\ncompatibility: any\n",
        "compatibility: tested-torch 1.0 is not metadata\nmetadata:\n  disco-role: operating\n",
    ]
    for number, variant in enumerate(variants):
        folder = tmp_path / f"s{number}"
        folder.mkdir()
        (folder / "SKILL.md").write_text(f"---\nname: s{number}\ndescription: d\n{variant}---\nbody\n")
        metadata = skills_ref.read_properties(folder).metadata or {}
        expected = {key.removeprefix("tested-"): [v.strip() for v in value.split(",")]
                    for key, value in metadata.items() if key.startswith("tested-")}
        assert ENV_DOCTORS[skill].tested_versions(folder / "SKILL.md") == expected, variant


@pytest.mark.parametrize("skill", SKILLS)
def test_required_packages_and_ranges_are_the_bundles(skill):
    doctor = DOCTORS[skill]
    assert list(doctor.required) == manifest.SKILLS[skill].packages, "the doctor checks what skills.toml lists"
    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    extra = extras[manifest.SKILLS[skill].extra]
    ranges = {}
    for requirement in extra:
        name = re.match(r"[A-Za-z0-9_.-]+", requirement)[0]
        ranges[name] = clauses(requirement.split("#")[0][len(name):])
    assert {name: clauses(spec) for name, (spec, _) in doctor.required.items()} == ranges


@pytest.mark.composer
def test_composer_table_is_what_mosaicml_declares():
    doctor = DOCTORS["composer-training"]
    assert clauses(doctor.required["torch"][0]) == declared("mosaicml", "torch")
    assert clauses(doctor.required["torchvision"][0]) == declared("mosaicml", "torchvision")
    assert clauses(doctor.optional["tensorboard"][1]) == declared("mosaicml", "tensorboard", "tensorboard")
    (name, affected, _), = doctor.advisories
    nlp = declared("mosaicml", "transformers", "nlp")
    assert name == "transformers" and "<4.54" in nlp and clauses(affected) == {">=4.54"}


def test_transformers_table_is_what_transformers_declares():
    doctor = DOCTORS["transformers-training"]
    assert clauses(doctor.required["torch"][0]) == declared("transformers", "torch", "torch")
    assert clauses(doctor.optional["deepspeed"][1]) == declared("transformers", "deepspeed", "deepspeed")
    assert doctor.optional["tensorboard"][1] == "" and declared("transformers", "tensorboard", "testing") == set()


@pytest.mark.parametrize("skill", SKILLS)
def test_version_comparison_agrees_with_pep_440(skill):
    env_doctor = ENV_DOCTORS[skill]
    versions = ["2.6.0", "2.7.0", "2.7.0+cpu", "2.7.0+cu126", "2.7.1", "2.7.1rc1", "2.7.1.dev0", "2.13.0",
                "0.32.1", "0.33.0", "4.57.1", "5.0.0rc1", "5.23", "5.24.0", "5.30.0.post1", "6.0.0", "1.9.9"]
    specifiers = [spec for doctor in DOCTORS.values() for spec, _ in doctor.required.values()] + [">=4.54", "!=2.7.0"]
    for version in versions:
        for specifier in specifiers:
            expected = SpecifierSet(specifier).contains(Version(version), prereleases=True)
            assert env_doctor.satisfies(version, specifier) == expected, (version, specifier)
    assert env_doctor.same_version("2.13.0+cpu", "2.13.0") and env_doctor.same_version("5.23", "5.23.0")
    assert not env_doctor.same_version("2.7.1rc1", "2.7.1")


# ---- the real venv of this leg, the skill folder copied alone ----

@pytest.fixture(scope="module", params=SKILLS)
def real_run(request, tmp_path_factory):
    """env_check.py of one skill, from a copy of the skill folder on its own: the shared canonical run, which in the
    latest leg (no mosaicml) runs for the Composer skill too."""
    return request.param, canonical_run(tmp_path_factory, f"{request.param}/env_check.py", "cpu")


def test_real_venv(real_run):
    skill, result = real_run
    assert result.network_attempts == []
    summary = result.json
    if skill == "composer-training" and not HAS_MOSAICML:
        # The latest leg has no composer: the doctor says so, with the one pip line that sets the stack up.
        assert_one_line_error(result, 3, "fix: pip install mosaicml==0.32.1 torch==2.7.0 torchvision==0.22.0")
        assert summary["exit_code"] == 3 and result.check("package.mosaicml")["ok"] is False
        assert "torch.import" not in [check["name"] for check in summary["checks"]], "it stops before importing torch"
        return
    assert result.returncode == 0, result.stderr[-2000:]
    assert summary["ok"] is True and summary["device"] == "cpu"
    for package, versions in pinned_for(skill).items():
        check, version = result.check(f"package.{package}"), installed(package)
        assert check["ok"] is True
        if any(Version(version).public == Version(pinned).public for pinned in versions):
            assert check["detail"] == f"{version} (tested)"
        else:  # a venv newer than the pins (scripts/check_latest.py builds one): advice, not a failure
            assert check["detail"].startswith(f"warning: {version} is untested but inside")
    assert result.check("torch.import")["detail"].startswith(f"torch {installed('torch')}")
    assert result.check("cuda")["detail"].startswith("1 x" if CUDA else "not available")
    assert result.check("bf16")["detail"].startswith("native bf16" if CUDA else "not applicable without CUDA")


# ---- broken combinations, faked in-process ----

def test_composer_known_bad_combinations():
    doctor, versions = DOCTORS["composer-training"], pinned_for("composer-training")
    good = {"mosaicml": "0.32.1", "torch": "2.7.0", "torchvision": "0.22.0"}
    assert [f.status for f in doctor.diagnose(good, versions)] == ["ok", "ok", "ok", "warning"]  # tensorboard

    newer_torch = by_name(doctor.diagnose({**good, "torch": "2.8.0", "torchvision": "0.23.0"}, versions))
    assert newer_torch["package.torch"].status == "error"
    assert "mosaicml 0.32.1 requires torch>=2.6.0,<2.7.1" in newer_torch["package.torch"].detail
    assert doctor.combined_fix(list(newer_torch.values())) == "pip install torch==2.7.0 torchvision==0.22.0"

    mismatched = by_name(doctor.diagnose({**good, "torchvision": "0.21.0"}, versions))
    assert mismatched["package.torchvision"].status == "warning", "0.21.0 is in mosaicml's range, only untested"
    assert mismatched["compat.torchvision"].status == "error"
    assert "torch 2.7 pairs with torchvision 0.22.x" in mismatched["compat.torchvision"].detail
    assert doctor.combined_fix([mismatched["compat.torchvision"]]) == "pip install torch==2.7.0 torchvision==0.22.0"

    older_pair = doctor.diagnose({**good, "torch": "2.6.0", "torchvision": "0.21.0"}, versions)
    assert all(finding.ok for finding in older_pair), "an untested but matching pair inside the ranges is a warning"

    cpu_build = by_name(doctor.diagnose({**good, "torch": "2.7.0+cpu"}, versions))
    assert cpu_build["package.torch"].detail == "2.7.0+cpu (tested)"
    assert cpu_build["compat.torch-build"].status == "error"
    assert doctor.combined_fix([cpu_build["compat.torch-build"]]) == \
        "pip uninstall -y torch && pip install torch==2.7.0 torchvision==0.22.0"

    old_composer = by_name(doctor.diagnose({**good, "mosaicml": "0.31.0"}, versions))
    assert old_composer["package.mosaicml"].status == "error"
    assert old_composer["package.mosaicml"].detail.endswith("fix: pip install mosaicml==0.32.1")

    nothing = doctor.diagnose({}, versions)
    assert [f.status for f in nothing if f.name.startswith("package.")] == ["missing"] * 3
    assert doctor.combined_fix(nothing) == "pip install mosaicml==0.32.1 torch==2.7.0 torchvision==0.22.0"

    advised = by_name(doctor.diagnose({**good, "transformers": "5.24.0"}, versions))
    assert advised["advisory.transformers"].status == "warning"
    assert "advisory.transformers" not in by_name(doctor.diagnose({**good, "transformers": "4.53.2"}, versions))


def test_transformers_known_bad_combinations():
    doctor, versions = DOCTORS["transformers-training"], pinned_for("transformers-training")
    good = {"transformers": "5.24.0", "torch": "2.13.0", "accelerate": "1.16.0", "datasets": "5.2.0",
            "evaluate": "0.4.6"}
    assert all(finding.ok for finding in doctor.diagnose(good, versions))

    four = by_name(doctor.diagnose({**good, "transformers": "4.57.1"}, versions))["package.transformers"]
    assert four.status == "error" and four.detail.endswith("fix: pip install transformers==5.24.0")
    six = by_name(doctor.diagnose({**good, "transformers": "6.0.0"}, versions))["package.transformers"]
    assert six.status == "error"
    newer = by_name(doctor.diagnose({**good, "transformers": "5.30.0"}, versions))["package.transformers"]
    assert newer.status == "warning" and "untested but inside >=5.23,<6" in newer.detail

    old_torch = by_name(doctor.diagnose({**good, "torch": "2.5.1"}, versions))["package.torch"]
    assert old_torch.status == "error" and "transformers 5 disables PyTorch below 2.6" in old_torch.detail
    assert old_torch.fix == {"torch": "==2.13.0"}, "the newest tested torch"

    # torchvision is optional here: a mismatch is a warning with its own pip line, and never fails the run
    stale_vision = by_name(doctor.diagnose({**good, "torchvision": "0.22.0"}, versions))["compat.torchvision"]
    assert stale_vision.status == "warning"
    assert stale_vision.detail.endswith("fix: pip install torch==2.13.0 'torchvision==0.28.*'")
    cpu_torch = by_name(doctor.diagnose({**good, "torch": "2.13.0+cpu", "torchvision": "0.28.0"}, versions))
    assert cpu_torch["compat.torch-build"].status == "warning"
    with_tensorboard = by_name(doctor.diagnose({**good, "tensorboard": "2.20.0"}, versions))
    assert with_tensorboard["optional.tensorboard"].status == "ok"


@pytest.fixture
def in_process(capsys):
    """Run a doctor's main() in this process with a faked version lookup. The contract points TMPDIR and the
    caches into its output directory and removes it at exit: both are put back after each run."""

    def run(skill: str, fake: dict[str, str | None]) -> tuple[int, dict, str]:
        doctor = DOCTORS[skill]
        versions = {**real_versions(doctor), **fake}
        saved_environ, saved_tempdir = dict(os.environ), tempfile.tempdir
        try:
            code = ENV_CHECKS[skill].main(["--json", "--device", "cpu"], version_of=versions.get)
        finally:
            os.environ.clear()
            os.environ.update(saved_environ)
            tempfile.tempdir = saved_tempdir
        captured = capsys.readouterr()
        return code, json.loads(captured.out), captured.err

    return run


def test_faked_newer_torch_fails_with_the_pip_line(in_process):
    code, summary, stderr = in_process("composer-training", {"mosaicml": "0.32.1", "torch": "2.8.0",
                                                             "torchvision": "0.23.0"})
    assert code == 1 and summary["ok"] is False
    packages = [check["ok"] for check in summary["checks"] if check["name"].startswith("package.")]
    assert packages == [True, False, False]
    assert summary["error"].endswith("fix: pip install torch==2.7.0 torchvision==0.22.0")
    assert "Traceback" not in stderr and stderr.count(": error: ") == 1


def test_faked_transformers_4_fails_and_missing_torch_exits_3(in_process):
    code, summary, _ = in_process("transformers-training", {"transformers": "4.57.1"})
    assert code == 1 and summary["error"].endswith("fix: pip install transformers==5.24.0")
    code, summary, _ = in_process("transformers-training", {"torch": None})
    assert code == 3 and summary["error"] == "missing torch; fix: pip install torch==2.13.0"


@pytest.mark.parametrize("skill", SKILLS)
def test_a_missing_required_package_exits_3_with_the_pip_line_in_each_skill(in_process, skill):
    code, summary, _ = in_process(skill, {"torch": None})  # in the latest leg mosaicml is missing too
    missing, fix = summary["error"].split("; fix: ")
    assert code == 3 and missing.startswith("missing ") and "torch" in missing and fix.startswith("pip install ")


def test_a_torch_that_does_not_import_is_one_line(in_process, monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` now raises ImportError
    code, summary, stderr = in_process("transformers-training", {"torch": "2.13.0"})
    assert code == 1 and summary["error"].startswith("torch does not import")
    assert summary["error"].endswith("fix: pip install --force-reinstall torch==2.13.0")
    assert "Traceback" not in stderr
