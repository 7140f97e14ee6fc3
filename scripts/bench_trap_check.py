#!/usr/bin/env python3
"""Time the trap checker on large generated files (about 5 MB, its size limit, and 2,000 Trainer calls) and print one
line per case. A report for people, never a gate: it always exits 0 (the suite proves linear time by counting work,
tests/test_trap_check.py's assert_linear; a loaded machine changes wall time, not work).

example:
  python scripts/bench_trap_check.py     # or: make bench
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COMPOSER = '''
loader{i} = DataLoader(data, batch_size=4, shuffle=True)
ev{i} = Evaluator(label="v{i}", dataloader=DataLoader(data, batch_size=4))
t{i} = Trainer(model=ComposerClassifier(net, num_classes=3), train_dataloader=loader{i}, eval_dataloader=ev{i},
               max_duration="{i}tok", optimizers=opt, autoresume=True, run_name="r{i}", save_folder="c/{{run_name}}")
t{i}.fit(duration="2ba")
'''
TRANSFORMERS = '''
args{i} = TrainingArguments(output_dir="o{i}", eval_strategy="steps", save_steps=100, eval_steps=50,
                            load_best_model_at_end=True)
trainer{i} = Trainer(model=model, args=args{i}, processing_class=tok)
trainer{i}.train(resume_from_checkpoint=get_last_checkpoint("o{i}"))
'''
CASES = [  # (name, skill, head, block, how many blocks: 0 fills the checker's size limit)
    ("2,000 Composer Trainer calls", "composer-training", "from composer import Trainer\n",
     "Trainer(model=m{i}, optimizers=o, max_duration='1ep')\n", 2000),
    ("Composer, 5 MB", "composer-training", "from composer import Trainer\n", COMPOSER, 0),
    ("Transformers, 5 MB", "transformers-training", "from transformers import Trainer, TrainingArguments\n",
     TRANSFORMERS, 0),
    # the outside tester's inputs (tc5 D1): a finding per line, + chains with none, launches joined with +
    ("a finding per line, 5 MB", "transformers-training", "", "from transformers import AdamW\n", 0),
    ("suppressed findings, 5 MB", "transformers-training", "",
     "from transformers import AdamW  # trap-check: ignore[TF035]\n", 0),
    ("+ chains, 5 MB", "transformers-training", "x = 1\n", 'c{i} = "a{i}" + "b" + f"{{x}}c"\n', 0),
    ("launches joined with +, 5 MB", "transformers-training", "import os\n",
     'os.system(f"torchrun --nproc_per_node {{2}} train.py " + "--warmup_ratio 0.1 " + f"--x{i}")\n', 0),
]


def main(argv: list[str] | None = None) -> int:
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
                            formatter_class=argparse.RawDescriptionHelpFormatter).parse_args(argv)
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(REPO / "skill_common"))
    try:
        import trap_check
    except Exception as exc:  # noqa: BLE001 - a report, never a gate
        print(f"bench_trap_check: cannot import the checker ({exc})", file=sys.stderr)
        return 0
    rules = {rule.id: rule for rule in trap_check.RULES}
    print(f"trap_check on generated files (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores):")
    for name, skill, head, block, count in CASES:
        count = count or (trap_check.MAX_BYTES - len(head)) // len(block.format(i=99999))
        text = head + "".join(block.format(i=index) for index in range(count))
        gc.collect()
        started, cpu = time.perf_counter(), time.process_time()
        try:
            findings, broken = trap_check.check_sources({"generated.py": text}, skill, "cpu")
            comments = trap_check.report.Suppressions(text, True)  # the command line's pass over the findings
            kept = [finding for finding in findings if not comments.covers(rules[finding.rule], finding.line)]
            outcome = f"{len(kept)} findings ({len(findings) - len(kept)} suppressed)" + (
                f", {broken[0][:80]}" if broken else "")
        except Exception as exc:  # noqa: BLE001 - a report, never a gate
            outcome = f"failed: {type(exc).__name__}: {exc}"[:120]
        print(f"  {name:<30} {len(text) / 1e6:5.2f} MB  {time.perf_counter() - started:6.2f} s wall  "
              f"{time.process_time() - cpu:6.2f} s CPU  {outcome}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
