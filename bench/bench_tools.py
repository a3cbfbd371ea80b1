"""Benchmark: what confinement and streamed redaction cost the file and code tools.

* ``grep``/``find``/``read``: a project of ``--files`` small files in nested folders (each path
  is checked and opened one folder at a time without following links), median of runs;
* ``stream``: a tool that streams ``--mb`` MB of output in 4 KB chunks (with a few secrets in
  it), the snapshot redacted with the unfinished tail held back at each update, as bash and
  python updates are: total time and time per update.

Run::

    python bench/bench_tools.py [--files 5000] [--mb 1] [--runs 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time

from pi_jupyter.agent.redact import redact_partial
from pi_jupyter.agent.toolbox import builtin_tools
from pi_jupyter.agent.toolbox.output import OutputAccumulator
from pi_jupyter.agent.tools import ToolContext, run_tool
from pi_jupyter.providers.base import AbortSignal


def make_project(root: str, files: int) -> None:
    for i in range(files):
        folder = os.path.join(root, f"pkg{i % 50}", f"mod{i % 7}")
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"f{i}.py"), "w") as fh:
            fh.write("".join(f"def fn_{i}_{j}(x):\n    return x * {j}\n" for j in range(20)))


def timed(tool, args, cwd, runs: int) -> tuple[float, str]:
    ctx = ToolContext(tool_call_id="b", signal=AbortSignal(), cwd=cwd)
    times = []
    text = ""
    for _ in range(runs):
        start = time.perf_counter()
        result = asyncio.run(run_tool(tool, args, ctx))
        times.append(time.perf_counter() - start)
        text = result.text_content
    return statistics.median(times), text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--mb", type=float, default=1.0)
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as root:
        make_project(root, opts.files)
        tools = {t.name: t for t in builtin_tools(["read", "grep", "find"], cwd=root)}
        for name, args in (
            ("grep", {"pattern": "fn_1234_", "limit": 1000}),
            ("find", {"pattern": "*.py", "limit": opts.files + 1}),
            ("read", {"path": "pkg3/mod3/f3.py"}),
        ):
            seconds, text = timed(tools[name], args, root, opts.runs)
            print(f"{name:6s} {opts.files:>6,} files  {seconds * 1000:9.1f} ms  ({len(text):,} chars out)")
    os.environ.setdefault("BENCH_API_KEY", "QZ7XW9FG3HJ5LM8PU2WQZ")
    line = "epoch 12: loss=0.2345 acc=0.91 lr=3e-4 " * 2 + "\n"
    secret_line = f"token {os.environ['BENCH_API_KEY']} url postgres://u:pw@db/x\n"
    total = int(opts.mb * 1024 * 1024)
    text = "".join(secret_line if i % 200 == 0 else line for i in range(total // len(line)))
    out = OutputAccumulator("pi-bench")
    updates = 0
    start = time.perf_counter()
    for at in range(0, len(text), 4096):
        out.append_text(text[at : at + 4096])
        redact_partial(out.snapshot().content)
        updates += 1
    seconds = time.perf_counter() - start
    out.finish()
    print(f"stream {opts.mb:g} MB in 4 KB chunks  {seconds * 1000:9.1f} ms  ({updates} updates, {seconds / updates * 1e3:.2f} ms each)")


if __name__ == "__main__":
    main()
