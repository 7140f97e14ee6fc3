#!/usr/bin/env python3
"""Run every skill's smoke scripts on every device present and print a table (or JSON with --json).

Each skill's bare import is timed in the same run (the import its smoke scripts cannot avoid), so the table
shows how close each script stays to that floor. Each row is printed as its script finishes; on a terminal a
progress line on stderr names the script running. Times are reported, never judged: the exit status follows
the scripts' results alone. Exit status: 0 all scripts passed (every --repeat run), 1 any failed, 2 usage
(an unknown --skill or --script, named with the valid ones, or no smoke script to run: nothing run is no pass).

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
from collections.abc import Iterator
from pathlib import Path

from skill_manifest import SKILLS

REPO = Path(__file__).resolve().parent.parent
SCRIPT_TIMEOUT_S = 600
TABLE_HEADER = ("skill", "script", "device", "result", "seconds", "x import")


class OneLineParser(argparse.ArgumentParser):
    def error(self, message: str):
        print(f"smoke_runner.py: error: {message} (see --help)", file=sys.stderr)
        sys.exit(2)


class Progress:
    """One line on stderr, rewritten in place (show("") clears it); only on a terminal, so logs and pipes stay
    clean."""

    def __init__(self):
        self.stream = sys.stderr if sys.stderr.isatty() else None

    def show(self, text: str) -> None:
        if self.stream:
            self.stream.write(f"\r\033[K{text}")  # back to column 0, clear the old line
            self.stream.flush()


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
    """skill -> the smoke scripts to run. Raises ValueError, naming the valid names, for a --skill or --script that
    matches nothing, and when there is nothing to run at all."""
    available = {skill_md.parent.name: sorted((skill_md.parent / "scripts").glob("*_smoke.py"))
                 for skill_md in sorted(skills_dir.glob("*/SKILL.md"))}
    if skill_filter is not None and skill_filter not in available:
        raise ValueError(f"unknown skill {skill_filter!r}; skills under {skills_dir}: {', '.join(available) or 'none'}")
    chosen = {name: scripts for name, scripts in available.items() if skill_filter in (None, name)}
    stems = sorted({script.stem for scripts in chosen.values() for script in scripts})
    if script_filter is not None and script_filter not in stems:
        of_skill = f" of {skill_filter}" if skill_filter else ""
        raise ValueError(f"unknown script {script_filter!r}; smoke scripts{of_skill}: {', '.join(stems) or 'none'} "
                         "(the runner runs */scripts/*_smoke.py)")
    found = {name: [script for script in scripts if script_filter in (None, script.stem)]
             for name, scripts in chosen.items()}
    found = {name: scripts for name, scripts in found.items() if scripts}
    if not found:
        raise ValueError(f"no smoke scripts under {skills_dir} (looked for */scripts/*_smoke.py)")
    return found


def median_seconds(command: list[str], repeat: int) -> tuple[float, list[subprocess.CompletedProcess]]:
    runs = [timed(command) for _ in range(repeat)]
    return statistics.median(seconds for _, seconds in runs), [completed for completed, _ in runs]


def run_all(skills: dict[str, list[Path]], devices: list[str], repeat: int, progress: Progress) -> Iterator[dict]:
    """One row per script and device, yielded as soon as that script has finished."""
    total = sum(map(len, skills.values())) * len(devices)
    started = 0
    for skill, scripts in skills.items():
        # a skill outside skills.toml (another --skills-dir) has no baseline: its rows show no ratio
        baseline = SKILLS[skill].baseline_import if skill in SKILLS else None
        baseline_s = None
        if baseline:
            progress.show(f"timing the bare import of {skill}: {baseline}")
            baseline_s, results = median_seconds([sys.executable, "-c", baseline], repeat)
            if results[0].returncode != 0:
                baseline_s = None
        for script in scripts:
            for device in devices:
                started += 1
                progress.show(f"[{started}/{total}] running {skill}/{script.name} on {device}")
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
                yield {
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
                }


def column_widths(skills: dict[str, list[Path]], devices: list[str]) -> list[int]:
    """Fixed before the first row is printed: the names are known, a result is at most 'FAIL (-15)' wide and a
    time rarely over '9999.99'."""
    longest = [max(map(len, skills)), max(len(script.name) for scripts in skills.values() for script in scripts),
               max(map(len, devices)), len("FAIL (-15)"), len("9999.99"), 0]
    return [max(len(title), width) for title, width in zip(TABLE_HEADER, longest)]


def table_line(cells: tuple[str, ...], widths: list[int]) -> str:
    return "  ".join(cell.ljust(width) for cell, width in zip(cells, widths)).rstrip()


def row_cells(row: dict) -> tuple[str, ...]:
    result = "pass" if row["ok"] else f"FAIL ({row['exit_code']})"
    ratio = f"{row['ratio']:.2f}" if row["ratio"] is not None else "-"
    return row["skill"], row["script"], row["device"], result, f"{row['seconds']:.2f}", ratio


def table_footer(rows: list[dict]) -> str:
    """The import baselines and each failure's error line, printed after the last row."""
    text = []
    baselines = {row["skill"]: (row["baseline_import"], row["baseline_seconds"]) for row in rows}
    for skill, (statement, seconds) in baselines.items():
        text.append(f"import baseline {skill}: `{statement}` {seconds if seconds is not None else '?'}s")
    for row in rows:
        if not row["ok"]:
            text.append(f"{row['skill']}/{row['script']} on {row['device']}: {row['error']}")
    return "\n".join(text)


def main(argv: list[str] | None = None) -> int:
    # allow_abbrev=False: a prefix of a flag is not that flag (--sk is not --skill).
    parser = OneLineParser(prog="smoke_runner.py", allow_abbrev=False, description=__doc__.split("\n\n")[0],
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

    try:
        skills = discover(args.skills_dir, args.skill, args.script)
    except ValueError as exc:  # before the CUDA probe: a typo answers at once
        parser.error(str(exc))
    devices = ["cpu", "gpu"] if args.device == "all" and cuda_available() else (
        ["cpu"] if args.device == "all" else [args.device])
    widths = column_widths(skills, devices)
    if not args.json:
        print(table_line(TABLE_HEADER, widths), "  ".join("-" * width for width in widths), sep="\n", flush=True)
    progress = Progress()
    rows = []
    for row in run_all(skills, devices, args.repeat, progress):
        rows.append(row)
        progress.show("")
        if not args.json:
            print(table_line(row_cells(row), widths), flush=True)
    if args.json:
        print(json.dumps({"devices": devices, "rows": rows, "ok": all(row["ok"] for row in rows)}, indent=2))
    else:
        print(table_footer(rows))
    return 0 if all(row["ok"] for row in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
