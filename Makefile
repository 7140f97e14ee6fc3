# Set-up and test entry points. Each venv is rebuilt only when pyproject.toml or its constraint file changes.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
PIP_INSTALL = -m pip install --quiet --disable-pip-version-check
PYTEST_ARGS ?=

.PHONY: smoke test test-latest bench mutation-drill lock sync check-latest package clean

.venv/.installed: pyproject.toml constraints/default.txt
	test -x .venv/bin/python || $(PYTHON) -m venv .venv
	.venv/bin/python $(PIP_INSTALL) -c constraints/default.txt '.[composer,transformers,test]'
	touch $@

.venv-latest/.installed: pyproject.toml constraints/latest.txt
	test -x .venv-latest/bin/python || $(PYTHON) -m venv .venv-latest
	.venv-latest/bin/python $(PIP_INSTALL) -c constraints/latest.txt '.[transformers,test]'
	touch $@

## smoke: the main job, every skill's smoke scripts on every device present, as a table
smoke: .venv/.installed
	.venv/bin/python scripts/smoke_runner.py

## test: the suite in the default leg (torch 2.7.0, both stacks)
test: .venv/.installed
	.venv/bin/python -m pytest -n 2 $(PYTEST_ARGS)

## test-latest: the Transformers tests on current torch
test-latest: .venv-latest/.installed
	.venv-latest/bin/python -m pytest -n 2 -m "not composer" $(PYTEST_ARGS)

## bench: each train_smoke's wall time over its library's bare import, median of 3, and the trap checker's time on
## 5 MB generated files; times are reported, never judged (only a failing script fails it), and no test asserts on a
## time: timings belong here
bench: .venv/.installed
	.venv/bin/python scripts/smoke_runner.py --script train_smoke --device cpu --repeat 3
	-.venv/bin/python scripts/bench_trap_check.py

## mutation-drill: break the bundle on purpose, one realistic bug of tests/mutations.toml at a time in a copy of the
## tree (every skill's copy of a shared file in turn), run the tests listed for it and report each bug as caught or
## survived; exit 1 when one survived. Not part of CI: it takes minutes
mutation-drill: .venv/.installed
	.venv/bin/python scripts/mutation_drill.py --jobs 2

## lock: rewrite the constraint files from the venvs (after a deliberate upgrade); local labels such as +cpu
## are dropped so a pin matches the build each platform's index serves
lock:
	.venv/bin/python -m pip freeze --exclude training-skills | sed 's/+[a-z0-9.]*$$//' > constraints/default.txt
	.venv-latest/bin/python -m pip freeze --exclude training-skills | sed 's/+[a-z0-9.]*$$//' > constraints/latest.txt

## sync: copy every file of skill_common/ (the one source of the code every skill carries) into every skill's
## scripts/ (tests/test_shared_source.py fails when a copy drifts) and give each script its skill's PEP 723 header
## from constraints/default.txt; a missing pin or skills.toml entry is one error line and nothing is written
sync:
	$(PYTHON) scripts/sync_inline_metadata.py

## check-latest: the Transformers tests on the newest releases, in a throwaway venv (needs the network; not CI)
check-latest: .venv-latest/.installed
	.venv-latest/bin/python scripts/check_latest.py

## package: dist/<skill>.zip per skill, reproducible, for upload to agent products
package:
	$(PYTHON) scripts/package_skills.py

clean:
	rm -rf .venv .venv-latest build dist *.egg-info
