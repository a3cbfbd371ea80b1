"""Benchmark: how fast the shell starts, and ``pi-jupyter context --json`` on 100k entries beside pi 1.6 and orjson.

Every figure is a fresh process, timed from outside (wall time, and CPU time: user + system, which
other jobs on a shared machine disturb far less), best of ``--runs``, the commands alternating:

* ``python -c pass``: the interpreter alone, the floor of every command;
* ``pi-jupyter --help`` and ``pi-jupyter info`` on a small session (12 entries): goal, at most
  100 ms above the bare interpreter;
* ``import pi_jupyter`` in a process that has IPython and ipykernel imported already (a kernel):
  goal, at most 150 ms; and ``%load_ext pi_jupyter``'s import (``pi_jupyter.notebook``) beside it;
* ``pi-jupyter context --json`` on 100k-entry files (a short current branch; a branch of 86k
  entries), beside pi 1.6 doing the same in node (open the file, build the context, convert it
  for the model, write it as JSON), and beside a Python process that only parses every line of
  the file with orjson: goals, at most 0.25x pi's time and memory, and at most 1.5x the orjson pass.

Run ``python bench/bench_shell.py`` (``--runs N``, ``--no-pi``, ``--cache DIR``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

from bench_cell import _files  # noqa: E402 - the same 100k files as the cell benchmark

from pi_jupyter.session import Session  # noqa: E402

PEAK = """import atexit, os, sys
def _peak():
    for row in open('/proc/self/status'):
        if row.startswith('VmHWM:'):
            sys.stderr.write('PEAK ' + row.split()[1] + '\\n')
            sys.stderr.flush()
atexit.register(_peak)
def _exit(code, _exit=os._exit):
    _peak()
    _exit(code)
os._exit = _exit
"""
"""Prepended to a Python child: its own peak RSS (VmHWM) on stderr when it exits, by ``os._exit`` too.

(``wait4``'s peak would not do: a child started by ``vfork`` inherits its parent's peak.)"""

ORJSON_PASS = PEAK + "import orjson, sys\nwith open(sys.argv[1], 'rb') as fh:\n    for line in fh:\n        orjson.loads(line)\n"

CLI = PEAK + "from pi_jupyter.cli.main import entry\nentry()\n"
"""What the ``pi-jupyter`` script runs."""

IMPORT_IN_KERNEL = r"""
import sys, time, IPython, ipykernel.ipkernel  # what a kernel has imported before any cell
t = time.perf_counter()
import pi_jupyter
t1 = time.perf_counter()
import pi_jupyter.notebook.magics
t2 = time.perf_counter()
print(f"{t1 - t} {t2 - t1}")
"""

PI_CONTEXT = r"""
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
const dist = path.join(process.env.PI_NODE_MODULES, "@earendil-works/pi-coding-agent/dist");
const imp = (rel) => import(pathToFileURL(path.join(dist, rel)).href);
const { SessionManager } = await imp("core/session-manager.js");
const { convertToLlm } = await imp("core/messages.js");
const file = process.argv[1];
const sm = SessionManager.open(file, path.dirname(file));
const ctx = sm.buildSessionContext();
const out = JSON.stringify({ messages: ctx.messages, thinkingLevel: ctx.thinkingLevel, model: ctx.model, llm: convertToLlm(ctx.messages) });
fs.writeSync(1, out + "\n");
const status = fs.readFileSync("/proc/self/status", "utf8").split("\n").find((r) => r.startsWith("VmHWM:"));
process.stderr.write("PEAK " + status.split(/\s+/)[1] + "\n");
"""


_NOT_A_USERS = ("PYTHONUNBUFFERED", "PYTHONDONTWRITEBYTECODE")
"""Settings a developer's shell may have and a user's does not (unbuffered output costs a write per print)."""


def _run(args: list[str], env: dict[str, str] | None = None) -> tuple[float, float, int, str]:
    """(wall s, CPU s, peak RSS KB, stdout) of one fresh process, its output to a pipe that is drained.

    CPU time is the child's own, from ``wait4``; its peak memory is what it wrote on stderr (:data:`PEAK`).
    """
    started = time.perf_counter()
    env = {k: v for k, v in (env or os.environ).items() if k not in _NOT_A_USERS}
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    errors: list[bytes] = []
    drain = threading.Thread(target=lambda: errors.append(proc.stderr.read()))  # type: ignore[union-attr]
    drain.start()
    out = proc.stdout.read()  # type: ignore[union-attr]
    drain.join()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    proc.returncode = os.waitstatus_to_exitcode(status)
    cpu = usage.ru_utime + usage.ru_stime
    if proc.returncode not in (0, 1):
        raise RuntimeError(f"{args[:4]} failed: {b''.join(errors).decode(errors='replace')[-500:]}")
    err = b"".join(errors).decode(errors="replace")
    peak = next((int(r.split()[1]) for r in err.splitlines() if r.startswith("PEAK ")), 0)
    return wall, cpu, peak, out.decode(errors="replace") if len(out) < 10_000 else ""


def _best(runs: list[tuple[float, float, int, str]]) -> dict[str, float]:
    return {"wall": min(r[0] for r in runs), "cpu": min(r[1] for r in runs), "peak_kb": min(r[2] for r in runs)}


def _small_session(folder: Path) -> Path:
    path = folder / "small.jsonl"
    s = Session.create(path=path, cwd="/w")
    s.append_model_change("offline", "echo")
    for i in range(5):
        s.append_message({"role": "user", "content": [{"type": "text", "text": f"question {i}"}], "timestamp": i})
        s.append_message({"role": "assistant", "content": [{"type": "text", "text": f"answer {i}"}], "stopReason": "stop", "timestamp": i})
    s.set_name("small")
    s.close()
    return path


def main(argv: list[str] | None = None) -> int:
    """Run the processes and print the figures with their targets."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--no-pi", action="store_true")
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("PI_JUPYTER_BENCH_CACHE", Path.home() / ".cache/pi-jupyter/bench"))
    )
    args = parser.parse_args(argv)
    py = sys.executable
    # as pip leaves an installed package: compiled, so no run pays for compiling (PYTHONDONTWRITEBYTECODE would hide it)
    subprocess.run([py, "-m", "compileall", "-q", str(ROOT / "pi_jupyter")], check=True)
    modules = Path(os.environ.get("PI16_NODE_MODULES", Path.home() / ".cache/pi-jupyter/earendil-pi-1.6.0/node_modules"))
    with_pi = not args.no_pi and shutil.which("node") is not None and (modules / "@earendil-works/pi-coding-agent").exists()
    node_env = dict(os.environ, PI_NODE_MODULES=str(modules))

    with tempfile.TemporaryDirectory() as tmp:
        small = _small_session(Path(tmp))
        starts: dict[str, list] = {"python -c pass": [], "pi-jupyter --help": [], "pi-jupyter info (12 entries)": []}
        for _ in range(args.runs):  # alternating, so a busy moment of the machine hits all of them alike
            starts["python -c pass"].append(_run([py, "-c", "pass"]))
            starts["pi-jupyter --help"].append(_run([py, "-c", CLI, "--help"]))
            starts["pi-jupyter info (12 entries)"].append(_run([py, "-c", CLI, "info", str(small)]))
        imports = [tuple(map(float, _run([py, "-c", IMPORT_IN_KERNEL])[3].split())) for _ in range(args.runs)]

    bare = _best(starts["python -c pass"])
    print(f"shell start (fresh processes, best of {args.runs})")
    for name, runs in starts.items():
        b = _best(runs)
        extra = (
            ""
            if name.startswith("python")
            else f"  +{(b['wall'] - bare['wall']) * 1000:4.0f} ms wall, +{(b['cpu'] - bare['cpu']) * 1000:4.0f} ms CPU above bare"
        )
        met = "" if name.startswith("python") else f"  (target +100 ms: {'met' if b['cpu'] - bare['cpu'] <= 0.1 else 'NOT met'}, by CPU)"
        print(f"  {name:30} {b['wall'] * 1000:6.0f} ms wall {b['cpu'] * 1000:6.0f} ms CPU{extra}{met}")
    pkg = min(i[0] for i in imports)
    nb = min(i[1] for i in imports)
    verdict = "met" if pkg <= 0.15 else "NOT met"
    print(f"  import pi_jupyter in a kernel     {pkg * 1000:6.1f} ms (target 150 ms: {verdict})")
    print(f"  then its magics (%load_ext)       {nb * 1000:6.0f} ms")

    print(f"\npi-jupyter context --json on 100k entries (fresh processes, best of {args.runs}, alternating)")
    files = _files(args.cache)
    for name in ("short", "path2771"):
        path = files[name]
        rows: dict[str, list] = {"ours": [], "orjson": [], "pi": []}
        for _ in range(args.runs):
            rows["ours"].append(_run([py, "-c", CLI, "context", "--json", str(path)]))
            rows["orjson"].append(_run([py, "-c", ORJSON_PASS, str(path)]))
            if with_pi:
                rows["pi"].append(
                    _run(["node", "--max-old-space-size=16384", "--input-type=module", "-e", PI_CONTEXT, str(path)], node_env)
                )
        ours, floor = _best(rows["ours"]), _best(rows["orjson"])
        depth = len(Session.open(path, readonly=True).branch_ids())
        line = f"  {name:9} (branch {depth:>5,}): ours {ours['wall']:.2f} s wall {ours['cpu']:.2f} s CPU {ours['peak_kb'] / 1024:5.0f} MB"
        w, c = ours["wall"] / floor["wall"], ours["cpu"] / floor["cpu"]
        line += f"\n      orjson pass {floor['wall']:.2f} s wall {floor['cpu']:.2f} s CPU: ours {w:.2f}x wall, {c:.2f}x CPU"
        line += f" (target 1.5x: {'met' if c <= 1.5 else 'NOT met'}, by CPU)"
        if rows["pi"]:
            pi = _best(rows["pi"])
            t, tc, m = ours["wall"] / pi["wall"], ours["cpu"] / pi["cpu"], ours["peak_kb"] / pi["peak_kb"]
            line += f"\n      pi 1.6 {pi['wall']:.2f} s wall {pi['cpu']:.2f} s CPU {pi['peak_kb'] / 1024:.0f} MB:"
            verdict = "met" if tc <= 0.25 and m <= 0.25 else "NOT met"
            line += f" ours {t:.2f}x wall, {tc:.2f}x CPU, {m:.2f}x memory (target 0.25x: {verdict}, by CPU)"
        print(line)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
