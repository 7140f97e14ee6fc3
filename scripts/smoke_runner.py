#!/usr/bin/env python3
"""Run every skill's smoke scripts on every device present and print a table (or JSON with --json).

Each skill's bare import is timed in the same run (the import its smoke scripts cannot avoid), so the table
shows how close each script stays to that floor. Exit status: 0 all scripts passed, 1 any failed, 2 usage.

example:
  python scripts/smoke_runner.py                       # every script, cpu (and gpu when CUDA is present)
  python scripts/smoke_runner.py --skill composer-training --script train_smoke --repeat 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
# The import a skill's scripts cannot avoid; a smoke script's time is reported as a multiple of it.
BASELINE_IMPORTS = {
    "composer-training": "from composer import Trainer",
    "transformers-training": "from transformers import Trainer, TrainingArguments",
}
SCRIPT_TIMEOUT_S = 600


def timed(command: list[str]) -> tuple[subprocess.CompletedProcess, float]:
    started = time.perf_counter()
    try:
        completed = subprocess.run(command, capture_output=True, text=True, timeout=SCRIPT_TIMEOUT_S,
                                   stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        completed = subprocess.CompletedProcess(command, 124, "", f"timed out after {SCRIPT_TIMEOUT_S}s")
    return completed, time.perf_counter() - started


def cuda_available() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True)
    return probe.stdout.strip() == "True"


def discover(skills_dir: Path, skill_filter: str | None, script_filter: str | None) -> dict[str, list[Path]]:
    found = {}
    for skill in sorted(path.parent for path in skills_dir.glob("*/SKILL.md")):
        if skill_filter and skill.name != skill_filter:
            continue
        scripts = [path for path in sorted((skill / "scripts").glob("*_smoke.py"))
                   if not script_filter or path.stem == script_filter]
        if scripts:
            found[skill.name] = scripts
    return found


def median_seconds(command: list[str], repeat: int) -> tuple[float, list[subprocess.CompletedProcess]]:
    runs = [timed(command) for _ in range(repeat)]
    return statistics.median(seconds for _, seconds in runs), [completed for completed, _ in runs]


def run_all(skills: dict[str, list[Path]], devices: list[str], repeat: int) -> list[dict]:
    rows = []
    for skill, scripts in skills.items():
        baseline = BASELINE_IMPORTS.get(skill)
        baseline_s = None
        if baseline:
            baseline_s, results = median_seconds([sys.executable, "-c", baseline], repeat)
            if results[0].returncode != 0:
                baseline_s = None
        for script in scripts:
            for device in devices:
                seconds, results = median_seconds([sys.executable, str(script), "--device", device, "--json"], repeat)
                completed = results[-1]
                failed = next((result for result in results if result.returncode != 0), None)
                try:
                    summary = json.loads(completed.stdout)
                except json.JSONDecodeError:
                    summary = {}
                error_line = ""
                if failed is not None:
                    lines = [line for line in failed.stderr.splitlines() if line.strip()]
                    error_line = next((line for line in lines if ": error: " in line), lines[-1] if lines else "")
                rows.append({
                    "skill": skill,
                    "script": script.name,
                    "device": device,
                    "ok": failed is None,
                    "exit_code": (failed or completed).returncode,
                    "seconds": round(seconds, 2),
                    "baseline_import": baseline,
                    "baseline_seconds": round(baseline_s, 2) if baseline_s else None,
                    "ratio": round(seconds / baseline_s, 2) if baseline_s else None,
                    "checks": len(summary.get("checks", [])),
                    "error": error_line,
                })
    return rows


def table(rows: list[dict]) -> str:
    header = ("skill", "script", "device", "result", "seconds", "x import")
    lines = [header]
    for row in rows:
        result = "pass" if row["ok"] else f"FAIL ({row['exit_code']})"
        ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
        lines.append((row["skill"], row["script"], row["device"], result, f"{row['seconds']:.2f}", ratio))
    widths = [max(len(line[column]) for line in lines) for column in range(len(header))]
    text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths)).rstrip() for line in lines]
    text.insert(1, "  ".join("-" * width for width in widths))
    baselines = {row["skill"]: (row["baseline_import"], row["baseline_seconds"]) for row in rows}
    for skill, (statement, seconds) in baselines.items():
        text.append(f"import baseline {skill}: `{statement}` {seconds if seconds is not None else '?'}s")
    for row in rows:
        if not row["ok"]:
            text.append(f"{row['skill']}/{row['script']} on {row['device']}: {row['error']}")
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     epilog=__doc__.split("\n\n", 1)[1], formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--skills-dir", type=Path, default=REPO / "skills", help="folder holding the skills")
    parser.add_argument("--skill", help="only this skill (folder name)")
    parser.add_argument("--script", help="only scripts with this stem, e.g. train_smoke")
    parser.add_argument("--device", choices=["all", "cpu", "gpu"], default="all",
                        help="all = cpu, plus gpu when CUDA is present (default)")
    parser.add_argument("--repeat", type=int, default=1, help="runs per script; the median time is reported")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON on stdout")
    args = parser.parse_args(argv)
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if not args.skills_dir.is_dir():
        parser.error(f"--skills-dir {args.skills_dir} is not a directory")

    skills = discover(args.skills_dir, args.skill, args.script)
    devices = ["cpu", "gpu"] if args.device == "all" and cuda_available() else (
        ["cpu"] if args.device == "all" else [args.device])
    rows = run_all(skills, devices, args.repeat)
    if args.json:
        print(json.dumps({"devices": devices, "rows": rows, "ok": all(row["ok"] for row in rows)}, indent=2))
    elif rows:
        print(table(rows))
    else:
        print(f"no smoke scripts yet under {args.skills_dir} (looked for */scripts/*_smoke.py)")
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
