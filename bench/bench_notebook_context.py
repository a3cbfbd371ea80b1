"""Benchmark: what telling the agent the notebook costs (DESIGN 16, issue 39).

Two figures, in IPython's own shell with the cell log hooked in as ``%load_ext pi_jupyter`` hooks it:

* ``record``: the work a ``%%pi`` cell does before its prompt when 50 cells ran since the last
  turn: find what the branch was last told, write the 50 cells into the budget (newest whole,
  older shorter), redact the text, attach the images, and append the ``custom_message`` to a
  session file. The 50 cells are a realistic mix: DataFrames printed and shown, a plot (when
  matplotlib is installed), loops printing hundreds of lines, a cell failing in pandas with a
  KeyError. Target: at most 5 ms.
* ``capture``: what noting a user cell adds to it (its output, displays, result and error), per
  cell, for a cell that only assigns and for one that prints 200 lines.

Times are CPU time of the thread doing the work (``time.thread_time``), so a busy machine does
not inflate them. Run ``python bench/bench_notebook_context.py`` (``--cells N``, ``--repeat N``).
"""

from __future__ import annotations

import argparse
import io
import statistics
import sys
import tempfile
import time
from contextlib import redirect_stdout
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from pi_jupyter.notebook.cell_log import CellLog  # noqa: E402
from pi_jupyter.notebook.notebook_context import ContextBudget, notebook_message  # noqa: E402
from pi_jupyter.session import Session  # noqa: E402

SETUP = "import pandas as pd\nimport numpy as np\nfrom IPython.display import display, HTML"
KINDS = [
    "df{i} = pd.DataFrame({{'region': ['north', 'south', 'east'] * 20, 'revenue': np.arange(60) * {i}.5}})\nprint(df{i}.describe())",
    "display(HTML(df{i}.head(20).to_html()))\ndf{i}.groupby('region').revenue.sum()",
    "for k in range(300):\n    print('step', k, 'loss', 1 / (k + {i} + 1))",
    "df{i}['revenue_eur'].sum()",
    "total_{i} = float(df{i}.revenue.sum())\ntotal_{i}",
]
PLOT = "fig = plt.figure()\nplt.plot(np.arange({i}))\nplt.title('run {i}')\ndisplay(fig)\nplt.close(fig)"


def shell_with_log() -> tuple[InteractiveShell, CellLog]:
    shell = InteractiveShell.instance()
    log = CellLog(shell)
    shell.events.register("pre_run_cell", log.pre_run_cell)
    shell.events.register("post_run_cell", log.post_run_cell)
    return shell, log


def run_cells(shell: InteractiveShell, codes: list[str]) -> None:
    with redirect_stdout(io.StringIO()):
        for code in codes:
            shell.run_cell(code, store_history=True)


def bench_record(cells: int, repeat: int) -> tuple[float, float, int, int]:
    shell, log = shell_with_log()
    try:
        import matplotlib  # noqa: F401

        kinds = [*KINDS, PLOT]
        # figures shown as PNG, as a kernel's inline backend shows them
        figures = "import matplotlib\nmatplotlib.use('Agg')\nimport matplotlib.pyplot as plt\n"
        figures += "from IPython.core.pylabtools import select_figure_formats\nselect_figure_formats(get_ipython(), {'png'})"
        setup = [SETUP, figures]
    except ImportError:
        kinds, setup = KINDS, [SETUP]
    run_cells(shell, setup)
    folder = tempfile.mkdtemp(prefix="bench-nbctx-")
    session = Session.create(folder)
    first = notebook_message(log, session, session.leaf_id)
    assert first is not None
    record = session.append_custom_message(first.custom_type, first.content, display=True, details=first.details)
    session.append_message({"role": "user", "content": "first"})
    start = session.append_message({"role": "assistant", "content": [{"type": "text", "text": "ok"}]})
    assert session.raw_entry(record)
    codes = [kinds[i % len(kinds)].format(i=i + 1) for i in range(cells)]
    run_cells(shell, codes)
    times: list[float] = []
    size = images = 0
    for _ in range(repeat):
        for done in log.records:
            done.memo.clear()  # every try is a first telling: nothing made for an earlier one is reused
        started = time.thread_time()
        message = notebook_message(log, session, start, budget=ContextBudget())
        assert message is not None
        entry = session.append_custom_message(message.custom_type, message.content, display=True, details=message.details)
        times.append((time.thread_time() - started) * 1000)
        session.checkout(start, persist=False)  # the next try starts from the same turn, as a re-run would
        size = len(message.content[0].text)  # type: ignore[union-attr]
        images = len(message.content) - 1
        assert len(message.details["cells"]) == cells, message.details
        assert entry
    session.close()
    return statistics.median(times), max(times), size, images


def bench_capture(cells: int) -> dict[str, float]:
    out: dict[str, float] = {}
    for name, code in (("assign", "x = 1"), ("print 200 lines", "for k in range(200):\n    print('line', k)")):
        timings = {}
        for hooked in (False, True):
            shell = InteractiveShell.instance()
            log = CellLog(shell) if hooked else None
            if log is not None:
                shell.events.register("pre_run_cell", log.pre_run_cell)
                shell.events.register("post_run_cell", log.post_run_cell)
            samples = []
            with redirect_stdout(io.StringIO()):
                for _ in range(cells):
                    started = time.thread_time()
                    shell.run_cell(code, store_history=True)
                    samples.append(time.thread_time() - started)
            if log is not None:
                shell.events.unregister("pre_run_cell", log.pre_run_cell)
                shell.events.unregister("post_run_cell", log.post_run_cell)
            timings[hooked] = statistics.median(samples) * 1e6
        out[name] = timings[True] - timings[False]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=50)
    parser.add_argument("--repeat", type=int, default=30)
    args = parser.parse_args()
    median, worst, size, images = bench_record(args.cells, args.repeat)
    verdict = "meets" if median <= 5 else "MISSES"
    print(
        f"notebook context: {args.cells} cells since the last turn -> one record of {size:,} characters and {images} image(s),"
        f" built and appended in {median:.2f} ms CPU (median of {args.repeat}; worst {worst:.2f} ms); target <= 5 ms: {verdict}"
    )
    for name, extra in bench_capture(200).items():
        print(f"noting a user cell ({name}): +{extra:.0f} µs CPU per cell (median of 200)")


if __name__ == "__main__":
    main()
