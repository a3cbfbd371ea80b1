"""Benchmark: what carrying each branch's world costs, printed side by side with a plain run.

* ``start``: starting a branch of a grid in its own world (its namespace a copy of the
  notebook's, the tracker copied) with ``--gb`` GB of arrays in the namespace;
* ``checkout``: moving to a branch whose tools changed ``--mb`` MB of variables (restored from
  the store), and a checkout between two nodes that changed nothing (the world's cost is then
  only finding that out), each against ``session.checkout`` alone;
* ``grid``: ``--branches`` python-using branches on the offline model, each in its own world,
  against the same grid with every branch sharing the notebook's namespace (before worlds);
* ``call``: one python tool call (about 20-50 ms of work) recorded against the same call
  unrecorded, with ``--gb`` GB of data in the namespace;
* ``files``: the same call in a 10,000-file project, writing no file and writing one, and
  what a scan of the project for changed files would cost instead.

Run::

    python bench/bench_world.py [--gb 1] [--mb 100] [--branches 100] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from typing import Any

import numpy as np

from pi_jupyter import Agent, Session
from pi_jupyter.agent.toolbox.python import PythonParams, PythonTool
from pi_jupyter.agent.tools import ToolContext
from pi_jupyter.providers.base import AbortSignal
from pi_jupyter.world import World


def median_ms(fn: Any, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1000


def cpu_ms(fn: Any) -> float:
    t = time.process_time()
    fn()
    return (time.process_time() - t) * 1000


def big_namespace(gb: float) -> dict[str, Any]:
    n = int(gb * 1024**3 / 8 / 8)
    ns: dict[str, Any] = {f"arr{i}": np.random.default_rng(i).normal(size=n) for i in range(8)}
    ns.update({f"x{i}": i for i in range(2000)})
    return ns


def bench_start(ns: dict[str, Any], tmp: str, runs: int) -> None:
    session = Session.create(tmp)
    world = World(session, ns, cwd=tmp)
    plain = median_ms(lambda: None, runs)
    own = median_ms(world.branch, runs)
    print(f"start a branch       plain {plain:8.3f} ms   own world {own:8.3f} ms   ({len(ns):,} names, target 50 ms)")


def bench_checkout(mb: int, tmp: str, runs: int) -> None:
    ns: dict[str, Any] = {}
    session = Session.create(tmp)
    world = World(session, ns, cwd=tmp)
    agent = Agent(session, tools=["python"], cwd=tmp, tool_extra={"namespace": ns, "world": world})
    start = session.leaf_id
    n = mb * 1024**2 // 8 // 4
    code = f"import numpy as np\nfor i in range(4):\n    globals()[f'v{{i}}'] = np.random.default_rng(i).normal(size={n})"
    asyncio.run(agent.prompt(f"use python\n```python\n{code}\n```"))
    asyncio.run(agent.prompt("use python\n```python\nsmall = 1\n```"))
    world.settle()
    changed = session.branch_ids()[-1]
    answer_before = session.branch_ids()[-2]  # the answer's parent: no tool changed anything between the two
    restore, plain, idle, idle_plain = [], [], [], []
    for _ in range(runs):
        session.checkout(start, persist=False)
        world.move(start)
        t = time.perf_counter()
        session.checkout(changed, persist=False)
        report = world.move(changed)
        restore.append(time.perf_counter() - t)
        assert report.line() == "restored i, np, v0, v1, v2, v3 and small", report.line()
        t = time.perf_counter()
        session.checkout(start, persist=False)
        session.checkout(changed, persist=False)
        plain.append((time.perf_counter() - t) / 2)
        t = time.perf_counter()
        session.checkout(answer_before, persist=False)
        session.checkout(changed, persist=False)
        idle_plain.append((time.perf_counter() - t) / 2)
        t = time.perf_counter()
        for target in (answer_before, changed):
            session.checkout(target, persist=False)
            world.move(target)
        idle.append((time.perf_counter() - t) / 2)
    ms = statistics.median
    print(f"checkout {mb} MB      plain {ms(plain) * 1000:8.3f} ms   restoring {ms(restore) * 1000:8.1f} ms   (target 1000 ms)")
    print(f"checkout, no change  plain {ms(idle_plain) * 1000:8.3f} ms   with world {ms(idle) * 1000:8.3f} ms")


def bench_grid(branches: int, tmp: str) -> None:
    from pi_jupyter.experiment import Experiment, runner

    code = '{{"code": "import math\\nresult = sum(math.sqrt(i) for i in range(20000))\\nprint(round(result, {n}))"}}'
    prompt = f"call python with {code}"

    def grid(isolated: bool) -> float:
        session = Session.create(tmp)
        ns: dict[str, Any] = {"data": list(range(1000))}
        world = World(session, ns, cwd=tmp)
        extra: dict[str, Any] = {"namespace": ns, "world": world} if isolated else {"namespace": ns}
        saved = runner.for_branch
        if not isolated:
            runner.for_branch = lambda _s, _start, tool_extra, _cwd: dict(tool_extra or {})  # type: ignore[assignment]
        try:
            exp = Experiment(
                session, prompt, vary={"n": [str(i) for i in range(branches // 10)]}, repeat=10, tools=["python"], cwd=tmp,
                concurrency=8, agent_options={"tool_extra": extra}, continue_from="start", yes=True,
            )  # fmt: skip
            t = time.perf_counter()
            result = asyncio.run(exp.run())
            took = time.perf_counter() - t
        finally:
            runner.for_branch = saved
        assert all(r.state == "done" for r in result.rows), [r.error for r in result.rows if r.error]
        return took

    plains, owns = [], []
    for _ in range(3):  # interleaved, so warming up and the machine's load fall on both
        plains.append(grid(False))
        owns.append(grid(True))
    plain, own = min(plains), min(owns)
    print(f"grid of {branches}        shared {plain * 1000:8.0f} ms   own worlds {own * 1000:8.0f} ms   ({own / plain:.2f}×, target 1.5×)")


def bench_call(ns: dict[str, Any], tmp: str, runs: int) -> None:
    session = Session.create(tmp)
    world = World(session, ns, cwd=tmp)
    tool = PythonTool(ns, timeout=None)
    code = "import math\ntotal = sum(math.sqrt(i) for i in range(300000))\nparts = [total] * 10"
    args = PythonParams(code=code)

    def call(extra: dict[str, Any]) -> None:
        ctx = ToolContext(tool_call_id="b", signal=AbortSignal(), cwd=tmp, extra=extra)
        asyncio.run(tool.run(args, ctx))

    plains, recordeds = [], []
    for _ in range(runs):  # interleaved: the machine's load falls on both
        plains.append(median_ms(lambda: call({}), 1))
        recordeds.append(median_ms(lambda: call({"world": world}), 1))
    plain, recorded = statistics.median(plains), statistics.median(recordeds)
    extra = (recorded - plain) / plain * 100
    print(f"python call          plain {plain:8.1f} ms   recorded {recorded:8.1f} ms   (+{extra:.1f}%, target 5%)")
    # the recording alone, in CPU time (wall time above moves with the machine's load): what the call changes is
    # set by hand between the two halves of the recording, so the code's own work is not counted
    cpu = []
    for n in range(runs * 20):
        t = time.process_time()
        recording = world.python_call(ns, code)
        ns["total"], ns["parts"] = float(n), [float(n)] * 10
        recording.finish()
        cpu.append(time.process_time() - t)
    rec_ms = statistics.median(cpu) * 1000
    print(f"  recording alone    {rec_ms:6.2f} ms CPU ({rec_ms / plain * 100:.1f}% of the plain call)")
    # the cost that does scale: a call that changes a large array in place saves it before and after
    args = PythonParams(code="arr0[0] = 1.0\nparts = [arr0[0]] * 10")
    plain = median_ms(lambda: call({}), 3)
    recorded = median_ms(lambda: call({"world": world}), 3)
    mb = ns["arr0"].nbytes / 1024**2
    print(f"  ...in place, {mb:.0f} MB  plain {plain:8.1f} ms   recorded {recorded:8.1f} ms   (the array saved before and after)")


def scan(root: str) -> int:
    """What a scan of the project by modification time and size would cost (the way not taken, see world/files_seen.py)."""
    seen, stack = 0, [root]
    while stack:
        with os.scandir(stack.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
                else:
                    e.stat(follow_symlinks=False)
                    seen += 1
    return seen


@contextlib.contextmanager
def _no_file_watch() -> Any:
    """The recording as it was before files written by python were kept (variables only)."""
    from pi_jupyter.world import recorder

    class Off:
        def __init__(self, _rec: Any) -> None:
            self.before: dict[str, Any] = {}
            self.overflow = 0

        def __enter__(self) -> Off:
            return self

        def __exit__(self, *exc: object) -> None:
            pass

        def changes(self) -> list[Any]:
            return []

        def runs_here(self) -> None:
            pass

    saved = recorder.Watch
    recorder.Watch = Off  # type: ignore[assignment,misc]
    try:
        yield
    finally:
        recorder.Watch = saved  # type: ignore[misc]


def bench_files(tmp: str, runs: int) -> None:
    """A python call in a 10,000-file project: writing no file, and writing one, recorded against unrecorded."""

    from pi_jupyter.world import files_seen

    project = os.path.join(tmp, "project")
    for d in range(500):
        folder = os.path.join(project, f"d{d // 50}", f"s{d}")
        os.makedirs(folder)
        for f in range(20):
            with open(os.path.join(folder, f"f{f}.txt"), "w") as fh:
                fh.write("x" * 100)
    cwd = os.getcwd()
    os.chdir(project)
    try:
        n = scan(project)
        scan_ms = median_ms(lambda: scan(project), runs)
        ns: dict[str, Any] = {}
        session = Session.create(os.path.join(tmp, "files-sessions"))
        world = World(session, ns, cwd=project)
        tool = PythonTool(ns, timeout=None)
        work = "import math\ntotal = sum(math.sqrt(i) for i in range(300000))\n"
        for label, code in (("no file", work), ("one file", work + "open('out.txt', 'w').write('y' * 100_000)\n")):
            args = PythonParams(code=code)

            def call(extra: dict[str, Any], args: PythonParams = args) -> None:
                ctx = ToolContext(tool_call_id="b", signal=AbortSignal(), cwd=project, extra=extra)
                asyncio.run(tool.run(args, ctx))

            plains, variables, recordeds = [], [], []
            for _ in range(runs * 8):  # interleaved, in CPU time (all threads): the machine's load falls on all three
                plains.append(cpu_ms(lambda: call({})))
                with _no_file_watch():
                    variables.append(cpu_ms(lambda: call({"world": world})))
                recordeds.append(cpu_ms(lambda: call({"world": world})))
            plain, var_only, recorded = statistics.median(plains), statistics.median(variables), statistics.median(recordeds)
            print(
                f"python call, {label:8} plain {plain:6.1f} ms   variables recorded {var_only:6.1f} ms   and files {recorded:6.1f} ms CPU"
                f"   (files: {(recorded - var_only) / plain * 100:+.1f}% of the call; {n:,} files in the project, target 5%)"
            )
        share = 2 * scan_ms / plain * 100
        print(f"  a scan of the project by mtime and size: {scan_ms:.1f} ms (twice per call: {share:.0f}% of the call; not done)")
        from pi_jupyter.agent.toolbox.bash import BashParams, BashTool

        bash = BashTool(project)
        bash_args = BashParams(command="echo hi > out.txt")
        bash_ms = median_ms(
            lambda: asyncio.run(bash.run(bash_args, ToolContext(tool_call_id="b", signal=AbortSignal(), cwd=project, extra={}))), runs * 3
        )
        print(f"  bash call {bash_ms:.1f} ms: the same scan twice would add {2 * scan_ms / bash_ms * 100:.0f}% (bash stays counted)")
        # while a call runs, Python's file functions are wrapped: what that adds to an open() that writes nothing
        probe = os.path.join(project, "d0", "s0", "f0.txt")

        def opens() -> None:
            for _ in range(2000):
                open(probe).close()

        bare = median_ms(opens, runs) / 2000 * 1000
        with files_seen.Watch(world.recorder()):
            wrapped = median_ms(opens, runs) / 2000 * 1000
        assert not files_seen._wrapped
        print(f"  an open() for reading while a call runs: {wrapped - bare:+.2f} µs ({bare:.2f} µs); outside calls nothing is wrapped")
    finally:
        os.chdir(cwd)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--gb", type=float, default=1.0)
    parser.add_argument("--mb", type=int, default=100)
    parser.add_argument("--branches", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    opts = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ns = big_namespace(opts.gb)
        print(f"namespace: {sum(v.nbytes for v in ns.values() if hasattr(v, 'nbytes')) / 1024**3:.2f} GB in {len(ns):,} names")
        bench_start(ns, tmp, opts.runs)
        bench_call(ns, tmp, opts.runs)
        del ns
        bench_files(tmp, opts.runs)
        bench_checkout(opts.mb, tmp, opts.runs)
        bench_grid(opts.branches, tmp)


if __name__ == "__main__":
    main()
