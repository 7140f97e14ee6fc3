"""Test support: what the tests run things with, kept apart from the tests. Nothing here is collected; the tests
import it as ``support.<module>`` (pytest puts tests/ on sys.path; conftest registers the package for assertion
rewriting), so no test module imports another.

- harness.py: where the bundle is, devices and legs, a script run as a user runs it (offline, fresh HOME, TMPDIR and
  caches, stray files reported), the skills' worker process (ScriptWorker) and the one-line error contract.
- shared_runs.py: runs shared by one session (run_once) and each script's canonical run (CANONICAL_RUNS).
- composer_scripts.py, transformers_scripts.py: each skill's script paths, shared checkpoint run and what the tests
  read it with.
- composer_kit.py, transformers_kit.py: tiny models, data and trainers or arguments, built in-process.
- quoted_errors.py and quoted_errors_<skill prefix>.py: the producers of the error messages the documents quote.
- docs.py: the bundle's Markdown read (blocks, quoted errors, links); run_doc_blocks.py runs a skill's python blocks
  in one process (run by path); script_worker.py is the worker process (run by path).
- api_surface.py, surface_<skill prefix>.py: the API each skill may cite; claims_index.py: each claim -> its proofs.
- offline_guard/: the sitecustomize put first on every child's PYTHONPATH.
"""
