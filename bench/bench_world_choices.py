"""The measurements behind the world's design choices (see docs/world.md, "How, and why this way").

Serializers (pickle, cloudpickle, dill when installed) on a 100 MB frame, a 100 MB array and a
dict of 100,000 small items; hashing and compressing the frame's 100 MB; and the copy-on-write
alternative: ``os.fork`` of a process holding ``--gb`` GB with four threads running, against
the shallow copy of the namespace a branch starts from.

Run::

    python bench/bench_world_choices.py [--gb 1]
"""

from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import pickle
import threading
import time
from typing import Any

import numpy as np
import pandas as pd


def best(fn: Any, n: int = 3) -> tuple[float, Any]:
    out, top = None, float("inf")
    for _ in range(n):
        t = time.perf_counter()
        out = fn()
        top = min(top, time.perf_counter() - t)
    return top, out


def serializers(values: dict[str, Any]) -> None:
    libs = [("pickle", pickle)]
    for name in ("cloudpickle", "dill"):
        try:
            libs.append((name, importlib.import_module(name)))
        except ImportError:
            print(f"({name} not installed: skipped)")
    for label, value in values.items():
        cells = []
        for name, lib in libs:
            dump, data = best(lambda lib=lib, value=value: lib.dumps(value, protocol=5))
            load, _ = best(lambda lib=lib, data=data: lib.loads(data))
            cells.append(f"{name} dump {dump * 1000:5.0f} ms load {load * 1000:5.0f} ms")
        print(f"{label:7s} " + " | ".join(cells))


def hashing_and_compression(data: bytes) -> None:
    import zstandard

    for name, fn in [("sha256", lambda: hashlib.sha256(data).digest()), ("blake2b", lambda: hashlib.blake2b(data).digest())]:
        took, _ = best(fn)
        print(f"hash {name:8s} {took * 1000:6.0f} ms ({len(data) / took / 1e9:.2f} GB/s)")
    import zlib

    for name, comp, decomp in [
        ("zlib-1", lambda: zlib.compress(data, 1), zlib.decompress),
        ("zstd-1", lambda: zstandard.ZstdCompressor(level=1).compress(data), lambda b: zstandard.ZstdDecompressor().decompress(b)),
    ]:
        took, packed = best(comp, 1)
        back, _ = best(lambda packed=packed, decomp=decomp: decomp(packed), 1)
        print(f"compress {name:6s} {took * 1000:6.0f} ms, back {back * 1000:5.0f} ms, ratio {len(data) / len(packed):.2f}")


def fork_against_copy(gb: float) -> None:
    n = int(gb * 1024**3 / 8 / 8)
    ns = {f"a{i}": np.random.default_rng(i).normal(size=n) for i in range(8)}
    ns.update({f"x{i}": i for i in range(2000)})
    stop = threading.Event()
    threads = [threading.Thread(target=lambda: [time.sleep(0.001) for _ in iter(stop.is_set, True)], daemon=True) for _ in range(4)]
    for t in threads:
        t.start()
    forks = []
    for _ in range(5):
        r, w = os.pipe()
        t0 = time.perf_counter()
        pid = os.fork()
        if pid == 0:  # the child: ready at once, then gone
            os.write(w, b"x")
            os._exit(0)
        os.read(r, 1)
        forks.append(time.perf_counter() - t0)
        os.waitpid(pid, 0)
        os.close(r)
        os.close(w)
    stop.set()
    copy, _ = best(lambda: dict(ns), 5)
    print(f"fork with {gb:.1f} GB and 4 threads: {min(forks) * 1000:.1f}-{max(forks) * 1000:.1f} ms to a ready child;"
          f" shallow namespace copy: {copy * 1e6:.0f} µs")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0)
    opts = parser.parse_args()
    rng = np.random.default_rng(0)
    rows = 1_300_000
    frame = pd.DataFrame({f"c{i}": rng.normal(size=rows) for i in range(8)})
    frame["cat"] = rng.integers(0, 20, rows)
    values = {"frame": frame, "array": rng.normal(size=100_000_000 // 8), "small": {f"k{i}": [i, str(i)] for i in range(100_000)}}
    serializers(values)
    hashing_and_compression(pickle.dumps(frame, protocol=5))
    fork_against_copy(opts.gb)


if __name__ == "__main__":
    main()
