"""Benchmark: checkpoint and checkout of a 100 MB frame (and an array, a dict) in the world store.

*Checkpoint* is what a tool call pays to keep a value: :func:`serialize` (hash included) and
:meth:`Store.put_value` (compression when it pays, the write). *Checkout* is what a move pays to
bring it back: :meth:`Store.get_value` (read, decompress, hash check, load). The values:

* ``frame``: a pandas DataFrame of ``--mb`` MB: float64 and int64 columns, a text column
  (``"item 123"``, pandas' default string dtype), a category; realistic, compressible data;
* ``frame, random``: the same shape of random float64 only (incompressible: stored raw);
* ``array``: a float64 array of ``--mb`` MB, random;
* ``dict``: 100,000 small items (``{"k123": [123, "v123", 1.5]}``).

Only the entry points every version of the store has are used, so the same file runs against
an older checkout (``PYTHONPATH=/path/to/old/checkout python bench/bench_world_formats.py``) to
compare the pickled store with the plain-data formats. Each figure is the best of ``--runs``
(the disk cache is warm: a checkout right after a checkpoint, as in a notebook).

Pickle's threads aside (a value that needs pickle is pickled in a helper thread with a
deadline), the CPU time is the process's own, so it moves less than the wall clock when other
work shares the machine.

Run::

    python bench/bench_world_formats.py [--mb 100] [--runs 3]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

from pi_jupyter.world.store import Store
from pi_jupyter.world.values import serialize


def frame(mb: int) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = mb * 1024**2 // (8 * 10 + 8 + 16)  # 10 float, 1 int, text and category ≈ 104 bytes a row
    out = {f"x{i}": np.round(rng.normal(size=rows), 3) for i in range(10)}
    out["n"] = rng.integers(0, 1000, size=rows)
    out["label"] = pd.Series([f"item {i % 5000}" for i in range(rows)])
    out["kind"] = pd.Categorical(rng.choice(["train", "test", "valid"], size=rows))
    return pd.DataFrame(out)


def random_frame(mb: int) -> pd.DataFrame:
    rows = mb * 1024**2 // (8 * 8)
    rng = np.random.default_rng(1)
    return pd.DataFrame({f"r{i}": rng.normal(size=rows) for i in range(8)})


def best(fn: Callable[[], Any], runs: int) -> tuple[float, float, Any]:
    """Best wall-clock and best CPU time of ``runs`` calls (CPU time moves less when other work shares the machine)."""
    top, cpu, out = float("inf"), float("inf"), None
    for _ in range(runs):
        t, c = time.perf_counter(), time.process_time()
        out = fn()
        top = min(top, time.perf_counter() - t)
        cpu = min(cpu, time.process_time() - c)
    return top, cpu, out


def measure(name: str, value: Any, folder: str, runs: int) -> None:
    store = Store(os.path.join(folder, name.replace(" ", "_").replace(",", "")))

    def checkpoint() -> str:
        ser = serialize(value)
        for ref, _size in list(store.refs()):  # a fresh write each time, as for a new value
            store.remove(ref)
        return store.put_value(ser)

    save_s, save_cpu, ref = best(checkpoint, runs)
    load_s, load_cpu, back = best(lambda: store.get_value(ref), runs)
    same = (
        value.equals(back)
        if hasattr(value, "equals")
        else (np.array_equal(value, back) if isinstance(value, np.ndarray) else value == back)
    )
    size = store.size(ref) or 0
    mem = value.memory_usage(deep=True).sum() if hasattr(value, "memory_usage") else getattr(value, "nbytes", 0)
    kind = "in memory" if mem else ""
    print(
        f"{name:<14} checkpoint {save_s * 1000:5.0f} ms ({save_cpu * 1000:5.0f} CPU)   "
        f"checkout {load_s * 1000:5.0f} ms ({load_cpu * 1000:5.0f} CPU)   "
        f"on disk {size / 1024**2:7.1f} MB{f' ({mem / 1024**2:.0f} MB {kind})' if mem else ''}   equal: {same}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--runs", type=int, default=3)
    opts = parser.parse_args()
    import pi_jupyter

    print(f"pi_jupyter from {os.path.dirname(pi_jupyter.__file__)}; pandas {pd.__version__}, numpy {np.__version__}")
    values = {
        "frame": frame(opts.mb),
        "frame, random": random_frame(opts.mb),
        "array": np.random.default_rng(2).normal(size=opts.mb * 1024**2 // 8),
        "dict": {f"k{i}": [i, f"v{i}", 1.5] for i in range(100_000)},
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, value in values.items():
            measure(name, value, tmp, opts.runs)


if __name__ == "__main__":
    main()
