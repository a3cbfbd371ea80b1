"""Benchmark: how long each shipped notebook takes top to bottom with nbclient (what the README's table says).

Each notebook runs in a copy of ``notebooks/`` (so its outputs and session files stay out of the
repository) in a fresh kernel, as ``jupyter execute`` and papermill run it. Printed per notebook:
the wall time, the kernel's start, and the slowest cells; and the CPU time of this process and its
children (the kernel, and Dask's worker processes where a notebook starts a cluster), which a busy
machine does not inflate the way it inflates wall time. Run::

    python bench/bench_notebooks.py [NAME ...]     # default: every notebook in notebooks/
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def run(name: str) -> None:
    import nbformat
    from nbclient import NotebookClient

    work = Path(tempfile.mkdtemp(prefix="pi-bench-nb-"))
    try:
        shutil.copytree(NOTEBOOKS, work, dirs_exist_ok=True)
        path = work / name
        nb = nbformat.read(path, as_version=4)
        client = NotebookClient(nb, timeout=900, kernel_name="python3", resources={"metadata": {"path": str(work)}})
        cpu0, t0 = _cpu(), time.perf_counter()
        cells: list[tuple[float, str]] = []
        with client.setup_kernel(env={**os.environ, "JPY_SESSION_NAME": str(path)}):
            started = time.perf_counter() - t0
            for index, cell in enumerate(nb.cells):
                begun = time.perf_counter()
                client.execute_cell(cell, index)
                if cell.cell_type == "code":
                    cells.append((time.perf_counter() - begun, " ".join(cell.source.split())[:70]))
        wall, cpu = time.perf_counter() - t0, _cpu() - cpu0
        print(f"{name}: {wall:5.1f} s wall (kernel start {started:.1f} s), {cpu:5.1f} s CPU, load {os.getloadavg()[0]:.1f}")
        for seconds, source in sorted(cells, reverse=True)[:4]:
            print(f"    {seconds:5.1f} s  {source}")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("names", nargs="*", help="notebook file names in notebooks/ (default: all)")
    names = parser.parse_args().names or sorted(p.name for p in NOTEBOOKS.glob("*.ipynb"))
    print(f"{os.cpu_count()} CPUs; Python {sys.version.split()[0]}")
    for name in names:
        run(name)


if __name__ == "__main__":
    main()
