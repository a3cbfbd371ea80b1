"""Benchmark: a long randomized run of a branch's world in a real kernel, counted value by value.

Runs ``--sequences`` sequences of ``--steps`` random steps (``%%pi`` cells whose offline model
calls ``python`` and ``write``, cells of the user's own, re-runs, checkouts with ``--force``,
``--conversation-only`` and ``--world-only``, forks and returns to the first session, grids,
kernel restarts) against the model of every node's world in ``tests/world_model.py``, one
fresh kernel per sequence, seeds ``--seed``, ``--seed + 1``, ... After every step each
variable and file the tools touched is compared with the model: *correct*, *named* (the step's
output says it is not the target's, and why), or *silent* (neither: a bug). Prints a line per
sequence, every silent difference with its steps, and the totals.

Run::

    python bench/bench_world_random.py [--sequences 500] [--steps 15] [--seed 1000]
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from world_model import Counts, WorldModel  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sequences", type=int, default=500)
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--seed", type=int, default=1000)
    args = parser.parse_args()
    counts = Counts()
    started = time.monotonic()
    failures = 0
    for n in range(args.sequences):
        seed = args.seed + n
        root = Path(tempfile.mkdtemp(prefix=f"pi-world-random-{seed}-"))
        model = WorldModel(root, seed, counts, strict=False)
        silent_before = counts.silent
        t = time.monotonic()
        try:
            model.run(args.steps)
        except Exception as exc:  # noqa: BLE001 - a run that broke is reported with its steps, and the others go on
            failures += 1
            print(f"seed {seed}: broke: {type(exc).__name__}: {exc}\n  " + "\n  ".join(model.log), flush=True)
        for what in model.silent:
            print(f"seed {seed}: SILENT {what}\n  " + "\n  ".join(model.log), flush=True)
        print(f"seed {seed}: {args.steps} steps, {counts.silent - silent_before} silent ({time.monotonic() - t:.0f} s)", flush=True)
        shutil.rmtree(root, ignore_errors=True)
    print(f"\n{counts.line()}; {failures} sequences broke; {time.monotonic() - started:.0f} s", flush=True)
    return 0 if counts.silent == 0 and failures == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
