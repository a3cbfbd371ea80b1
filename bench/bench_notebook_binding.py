"""What choosing a notebook's conversation costs at the first ``%%pi`` of a kernel (``notebook/binding.py``).

A session folder holds ``--sessions`` files of ``--turns`` turns each, every turn recorded as a
notebook cell run (as JupyterLab cells leave them). Timed, each ``--runs`` times:

* ``new notebook``: a notebook whose file has no ``%%pi`` output yet; its cell ids are looked
  for in the most recent session files (the restart-before-the-first-save case), found nowhere;
* ``saved notebook``: its saved outputs name its session: the file is opened directly;
* ``restart before a save``: no saved output; the session is found by the cell ids it recorded.

    python bench/bench_notebook_binding.py [--sessions 64] [--turns 200] [--runs 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from notebook_runs import bound_notebook  # noqa: E402

from pi_jupyter import Session  # noqa: E402
from pi_jupyter.notebook.binding import Binder  # noqa: E402
from pi_jupyter.notebook.cells import CellRun, record_run  # noqa: E402


def make_folder(root: Path, sessions: int, turns: int) -> list[Session]:
    made = []
    for n in range(sessions):
        s = Session.create(root / "pi-sessions")
        for t in range(turns):
            start = s.leaf_id
            u = s.append_message({"role": "user", "content": f"question {t} " + "words " * 40, "timestamp": 1})
            a = s.append_message({"role": "assistant", "content": [{"type": "text", "text": "answer " * 80}], "timestamp": 2})
            record_run(s, CellRun(cell_id=f"s{n}-cell{t}", started_from=start, produced=[u, a], end=a))
        made.append(s)
    return made


def timed(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=64)
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        made = make_folder(root, args.sessions, args.turns)
        size = sum(Path(s.path).stat().st_size for s in made)
        target = made[len(made) // 2]

        def binder() -> Binder:
            return Binder(root / "pi-sessions", lambda p: Session.open(p), lambda name: Session.create(root / "scratch"))

        bound_notebook(root / "new.ipynb", None, "", [f"fresh{i}" for i in range(30)])
        bound_notebook(root / "saved.ipynb", target, "nb-bench", [f"x{i}" for i in range(30)])
        own = [f"s{len(made) // 2}-cell{t}" for t in range(min(30, args.turns))]
        bound_notebook(root / "unsaved.ipynb", None, "", own)
        print(f"{args.sessions} session files, {args.turns} turns each, {size / 1e6:.1f} MB in all")
        new = timed(lambda: binder().choose(str(root / "new.ipynb"), {"fresh0"}), args.runs)
        print(f"new notebook            {new * 1000:8.1f} ms  (looks in the {args.sessions} most recent files, finds nothing)")
        saved = timed(lambda: binder().choose(str(root / "saved.ipynb"), {"x0"}), args.runs)
        print(f"saved notebook          {saved * 1000:8.1f} ms  (opens the session its outputs name)")
        unsaved = timed(lambda: binder().choose(str(root / "unsaved.ipynb"), {own[0]}), args.runs)
        print(f"restart before a save   {unsaved * 1000:8.1f} ms  (found by its cell ids)")


if __name__ == "__main__":
    main()
