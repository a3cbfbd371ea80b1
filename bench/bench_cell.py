"""Benchmark: what a ``%%pi`` cell costs beyond the model's own time, on small and very large sessions.

A real kernel (``tests/kernel_client.py``) runs ``%%pi`` cells as JupyterLab sends them, with
the default settings (the live widget on) and the offline model, given a window of 10M tokens
so that a branch of 10,000 messages is a request it accepts. The model's own time (the offline
model counting and writing its answer) is measured and taken out; what remains is ours:

* ``open``: opening the session file (the first cell only);
* ``refresh``: reading what other writers appended since the last cell;
* ``context``: where the cell starts (its earlier runs), the agent's messages, the compaction
  check before and after the run, the recorded system prompt;
* ``request``: turning the messages into the request (``convert_to_llm``, the provider's
  normalisation);
* ``persistence``: appending the entries (prompt, answer, the cell's record) to the file;
* ``rendering``: the live widget's events, the durable output, the sibling answers;
* ``gc``: of all that, Python's cyclic garbage collector, wherever it ran during the cell.

Sessions: a new small one; 100k entries with a short current branch (``short``: the work went
back near the start); the same file with a current branch of 2,771 entries; one branch of 10,000
messages (``linear 10k``). The first cell on each (open + first request), then the best of three
more cells. Beside the 10k branch, the time to serialize its messages for a request
(``json.dumps`` of the context, as the vendor SDKs do): the goal is no more than that. Beside the
first cell, pi 1.6 opening the same file and building its context (node, when pi is installed).

Targets (issue 27): a later cell's own overhead on the 100k/short file at most 3x the small
session's; on the 10k branch at most the serialization; the first cell on the 100k/short file
under 0.5 s. Run ``python bench/bench_cell.py`` (``--cells N``, ``--no-pi``, ``--cache DIR``).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import sessiongen  # noqa: E402
from kernel_client import Kernel  # noqa: E402

from pi_jupyter.session import Session  # noqa: E402

FORMAT = "v2"
ORACLE = ROOT / "tests" / "interop" / "pi_session_oracle.mjs"
PHASES = ("open", "refresh", "context", "request", "persistence", "rendering", "gc")

PROBE = r"""
import functools, threading, time, json as _json
_pi_t = {}
_pi_local = threading.local()

def _pi_enter(phase):
    stack = getattr(_pi_local, "stack", None)
    if stack is None:
        stack = _pi_local.stack = []
    stack.append([phase, time.perf_counter(), 0.0])

def _pi_leave():
    phase, start, inner = _pi_local.stack.pop()
    spent = time.perf_counter() - start
    if phase == "total":  # the whole cell: its phases run on the agent's thread meanwhile
        _pi_t[phase] = _pi_t.get(phase, 0.0) + spent
        return
    _pi_t[phase] = _pi_t.get(phase, 0.0) + spent - inner  # exclusive of the phases it called
    if _pi_local.stack:
        _pi_local.stack[-1][2] += spent

def _pi_sync(phase, fn):
    @functools.wraps(fn)
    def timed(*a, **k):
        _pi_enter(phase)
        try:
            return fn(*a, **k)
        finally:
            _pi_leave()
    return timed

def _pi_async(phase, fn):
    @functools.wraps(fn)
    async def timed(*a, **k):
        _pi_enter(phase)
        try:
            return await fn(*a, **k)
        finally:
            _pi_leave()
    return timed

def _pi_agen(phase, fn):
    @functools.wraps(fn)
    def timed(*a, **k):
        gen = fn(*a, **k)
        async def steps():
            while True:
                _pi_enter(phase)
                try:
                    item = await gen.__anext__()
                except StopAsyncIteration:
                    return
                finally:
                    _pi_leave()
                yield item
        return steps()
    return timed

import gc as _gc
_pi_gc = [0.0]
def _pi_gc_cb(phase, info):
    if phase == "start":
        _pi_gc[0] = time.perf_counter()
    else:
        _pi_t["gc"] = _pi_t.get("gc", 0.0) + time.perf_counter() - _pi_gc[0]
_gc.callbacks.append(_pi_gc_cb)

import pi_jupyter.providers as _pv, pi_jupyter.providers.offline as _off
import pi_jupyter.agent.agent as _ag, pi_jupyter.agent.loop as _lp, pi_jupyter.agent.compaction_runner as _cr
import pi_jupyter.notebook.magics as _mg, pi_jupyter.notebook.agent_view.view as _av
import pi_jupyter.session.appending as _ap, pi_jupyter.session.store as _st
from pi_jupyter.providers import register_model
from pi_jupyter.providers.offline import offline_model

register_model(offline_model("echo-10m", context_window=10_000_000))
_st.Session.open = classmethod(_pi_sync("open", _st.Session.open.__func__))
_mg.fresh_agent = _pi_sync("refresh", _mg.fresh_agent)
_mg.start_for = _pi_sync("context", _mg.start_for)
_ag.Agent.__init__ = _pi_sync("context", _ag.Agent.__init__)
_ag.Agent.reload = _pi_sync("context", _ag.Agent.reload)
_ag.prepare_run = _pi_sync("context", _ag.prepare_run)
_ag.reuse_recorded = _pi_sync("context", _ag.reuse_recorded)
_cr.Compactor.before_prompt = _pi_async("context", _cr.Compactor.before_prompt)
_cr.Compactor.after_run = _pi_async("context", _cr.Compactor.after_run)
_lp._stream_assistant = _pi_async("request", _lp._stream_assistant)
_pv.stream = _pi_agen("model", _pv.stream)
_off.transform_messages = _pi_sync("request", _off.transform_messages)
_ap.SessionAppending._append = _pi_sync("persistence", _ap.SessionAppending._append)
_av.AgentView.handle = _pi_sync("rendering", _av.AgentView.handle)
_av.AgentView.final_bundle = _pi_sync("rendering", _av.AgentView.final_bundle)
_mg.siblings_footer = _pi_sync("rendering", _mg.siblings_footer)
_mg.PiMagics._make_view = _pi_sync("rendering", _mg.PiMagics._make_view)
_mg.PiMagics.pi_async = _pi_async("total", _mg.PiMagics.pi_async)
_pi_cell = _mg.PiMagics.pi_async

async def _pi_cpu_timed(self, *a, **k):
    started = time.process_time()
    try:
        return await _pi_cell(self, *a, **k)
    finally:
        _pi_t["cpu"] = _pi_t.get("cpu", 0.0) + time.process_time() - started
_mg.PiMagics.pi_async = _pi_cpu_timed
"""

LOAD = "%load_ext pi_jupyter\n%config PiMagics.model = 'offline/echo-10m'"

FLOOR = r"""
import json as _j, time as _t
from pi_jupyter import current_session as _cs
_msgs = _cs().context().raw_messages
_best = min((lambda a: (_j.dumps(_msgs), _t.perf_counter() - a)[1])(_t.perf_counter()) for _ in range(3))
print(_j.dumps({"floor": _best, "messages": len(_msgs)}))
"""


def _files(cache: Path) -> dict[str, Path]:
    cache.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}
    base = cache / f"bench-{FORMAT}-branched-100000.jsonl"
    if not base.exists():
        print(f"writing {base.name} ...", file=sys.stderr, flush=True)
        sessiongen.write_bench(str(base.with_suffix(".partial")), 100_000, branched=True)
        base.with_suffix(".partial").rename(base)
    for name, depth in (("short", 30), ("path2771", 2770)):
        path = cache / f"bench-cell-{FORMAT}-{name}-100000.jsonl"
        if not path.exists():
            tmp = path.with_suffix(".partial")
            shutil.copyfile(base, tmp)
            s = Session.open(tmp)
            s.checkout(s.branch_ids()[depth])
            s.close()
            tmp.rename(path)
        out[name] = path
    linear = cache / f"bench-{FORMAT}-linear-10000.jsonl"
    if not linear.exists():
        sessiongen.write_bench(str(linear.with_suffix(".partial")), 10_000, branched=False)
        linear.with_suffix(".partial").rename(linear)
    out["linear 10k"] = linear
    return out


def _cell(kernel: Kernel, session: str, n: int) -> dict[str, float]:
    kernel.run("_pi_t.clear()")
    started = time.perf_counter()
    ex = kernel.run(f"%%pi --session {session}\nquestion {n}: what changed?", cell_id=f"bench-cell-{n}", timeout=600)
    wall = time.perf_counter() - started
    if ex.error:
        raise RuntimeError(f"cell failed: {ex.error}")
    phases = json.loads(kernel.run("print(_json.dumps(_pi_t))").stdout)
    total = phases.get("total", 0.0)
    model = phases.get("model", 0.0)
    row = {k: phases.get(k, 0.0) for k in PHASES}
    row.update(total=total, model=model, overhead=total - model, wall=wall, cpu=phases.get("cpu", 0.0))
    row["other"] = row["overhead"] - sum(row[k] for k in PHASES if k != "gc")  # gc ran inside the phases
    return row


def _pi16(file: Path) -> dict[str, float] | None:
    modules = Path(os.environ.get("PI16_NODE_MODULES", Path.home() / ".cache/pi-jupyter/earendil-pi-1.6.0/node_modules"))
    if shutil.which("node") is None or not (modules / "@earendil-works/pi-coding-agent").exists():
        return None
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump([{"op": "bench", "file": str(file)}], fh)
    env = dict(os.environ, PI_NODE_MODULES=str(modules), PI_PACKAGE="@earendil-works/pi-coding-agent")
    try:
        proc = subprocess.run(["node", str(ORACLE), fh.name], capture_output=True, text=True, env=env, timeout=900, check=False)
    finally:
        os.unlink(fh.name)
    result = json.loads(proc.stdout.split("\n")[0]) if proc.returncode == 0 and proc.stdout else {}
    return result if result.get("ok") else None


def _target(what: str, figure: str, target: str, met: bool) -> None:
    print(f"  {what}: {figure} (target {target}: {'met' if met else 'NOT met'})")


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:7.1f}"


def main(argv: list[str] | None = None) -> int:
    """Run the cells and print the table."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cells", type=int, default=3, help="cells after the first, per session (the best is shown)")
    parser.add_argument("--no-pi", action="store_true", help="skip pi 1.6's figures")
    parser.add_argument(
        "--cache", type=Path, default=Path(os.environ.get("PI_JUPYTER_BENCH_CACHE", Path.home() / ".cache/pi-jupyter/bench"))
    )
    args = parser.parse_args(argv)
    files = _files(args.cache)
    results: dict[str, tuple[dict[str, float], dict[str, float], dict | None]] = {}
    floor: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        kernel = Kernel(tmp, env={"PI_JUPYTER_CONFIG": os.path.join(tmp, "none.toml")})
        try:
            kernel.run(PROBE)
            kernel.run(LOAD)
            cases = [("small (new)", os.path.join(tmp, "small.jsonl"), None)]
            for name, path in files.items():
                copy = Path(tmp) / path.name
                shutil.copyfile(path, copy)
                cases.append((name, str(copy), path))
            for n_case, (name, session, source) in enumerate(cases):
                first = _cell(kernel, session, 1000 * n_case)
                later = [_cell(kernel, session, 1000 * n_case + i) for i in range(1, args.cells + 1)]
                best = min(later, key=lambda r: r["overhead"])
                pi = _pi16(source) if source is not None and not args.no_pi else None
                results[name] = (first, best, pi)
                if name == "linear 10k":
                    floor = json.loads(kernel.run(FLOOR).stdout)
                done = f"{name}: first {first['overhead'] * 1000:.0f} ms, later {best['overhead'] * 1000:.1f} ms"
                print(done, file=sys.stderr, flush=True)
        finally:
            kernel.close()

    head = "session            cell      wall     cpu   model overhead |" + "".join(f"{p:>12}" for p in PHASES) + "       other"
    print(
        "\nms per %%pi cell (wall: as the client saw it; cpu: the kernel's CPU time, which other jobs on the machine disturb "
        "far less; overhead: all but the model's own time; the phases split it)"
    )
    print(head)
    for name, (first, best, _pi) in results.items():
        for label, row in (("first", first), ("later", best)):
            line = f"{name:18} {label:6} {_ms(row['wall'])} {_ms(row['cpu'])} {_ms(row['model'])} {_ms(row['overhead'])}  |"
            line += "".join(f"{_ms(row[p]):>12}" for p in PHASES) + f"{_ms(row['other']):>12}"
            print(line)
    small = results["small (new)"][1]["overhead"]
    short = results["short"][1]["overhead"]
    print("\ntargets (issue 27)")
    _target(
        "later cell, 100k/short vs small session",
        f"{short * 1000:.1f} ms vs {small * 1000:.1f} ms = {short / small:.2f}x",
        "<= 3x",
        short <= 3 * small,
    )
    first_short = results["short"][0]
    _target(
        "first cell on 100k/short (open + first request)",
        f"{first_short['wall'] * 1000:.0f} ms wall, {first_short['cpu'] * 1000:.0f} ms CPU",
        "<= 500 ms, by CPU: wall time counts the other jobs of a busy machine",
        first_short["cpu"] <= 0.5,
    )
    for name, (first, _best, pi) in results.items():
        if pi is not None:
            ours, theirs = first["overhead"] * 1000, pi["openMs"] + pi["contextMs"]
            print(f"    {name}: pi 1.6 opens it and builds its context in {theirs:.0f} ms (our first cell: {ours:.0f} ms)")
    if floor:
        line10k = results["linear 10k"][1]["overhead"]
        what = f"{line10k * 1000:.0f} ms vs serializing its messages for a request {floor['floor'] * 1000:.0f} ms"
        _target(
            f"later cell on a branch of {floor['messages']:,} messages",
            f"{what} = {line10k / floor['floor']:.2f}x",
            "<= 1x",
            line10k <= floor["floor"],
        )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"\nPython {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.1f} at the end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
