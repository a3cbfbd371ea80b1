"""Experiments at scale: 1, 10, 100 and 1,000 concurrent branches in one process.

Each branch is a 3-turn conversation with tool calls: the model asks for the ``read`` tool,
then for it again, then answers (three model requests, two tool runs). Two backends:

* ``wire``: the real ``openai`` SDK streaming over HTTP from the tests' wire server, which
  runs in a separate process (so its CPU is not counted as ours) and waits ``--latency``
  seconds before each reply's status line, as a remote model would;
* ``offline``: the built-in offline model (a tool call, then the answer: two requests).

Every grid runs in a fresh subprocess (so peak memory is that grid's) with the default
concurrency (what a user gets without ``--concurrency``; ``--concurrency N`` to compare) and a
live ``ExperimentView`` following it (its messages are counted, not sent to a browser).
Printed per grid: wall time; on ``wire``, the bare SDK's wall time for the same requests and
the grid's time as a multiple of it (the target: 1,000 branches within 1.5x); speed-up over
running the branches one by one (N times the single branch's wall time); our process's CPU
per branch and per model request (SDK included for ``wire``); entries appended per second;
peak RSS; widget messages per second. Then appends per second of P processes appending to
one session file through the store's lock.

    python bench/bench_experiment.py [--sizes 1,10,100,1000] [--latency 0.5] [--backends wire,offline]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))
sys.path.insert(0, str(HERE.parent))


def _serve(latency: float, conn) -> None:  # runs in the server process
    from wire import server as wire_server
    from wire.server import WireServer, openai_reply, tool_call

    # the stdlib server listens with a backlog of 5; a thousand clients connecting at once would
    # be refused (and retried), which measures the test server, not the grid
    wire_server._Server.request_queue_size = 4096
    server = WireServer()

    def respond(request):
        tools_seen = sum(1 for m in request.body.get("messages", []) if m.get("role") == "tool")
        if tools_seen < 2:
            reply = openai_reply(tool_calls=[tool_call("read", {"path": "notes.txt"}, id=f"call_{tools_seen}")])
        else:
            reply = openai_reply(text="The notes say the loss diverges at step 40; lower the learning rate.")
        return reply.late(latency)

    server.respond_with("openai", respond)
    conn.send(server.openai_url)
    while conn.recv() == "bodies":  # the requests of the grid that just ran (the warm-up's left out), then forget them
        with server._lock:
            bodies = [r.body for r in server.requests if r.body and "(w)" not in json.dumps(r.body.get("messages", []))]
            server.requests.clear()
        conn.send(bodies)
    server.close()


def one(size: int, backend: str, url: str | None, cap: int = 0) -> dict:
    """Run one grid of ``size`` branches; returns the figures."""
    from pi_jupyter import Session
    from pi_jupyter.experiment import Experiment
    from pi_jupyter.notebook.experiments.view import ExperimentView
    from pi_jupyter.providers import Model, ModelCost, register_model

    folder = tempfile.mkdtemp(prefix="pi-bench-exp-")
    Path(folder, "notes.txt").write_text("loss diverges at step 40\n")
    session = Session.open(Path(folder, "grid.jsonl"), create=True, cwd=folder, durability="never")
    if backend == "wire":
        os.environ["OPENAI_API_KEY"] = "sk-bench-0000"
        model = register_model(
            Model(id="bench", provider="openai", api="openai-completions", base_url=url, cost=ModelCost(input=3, output=15))
        )
        ref = model.ref
    else:
        ref = "offline/echo"
    # warm up in this process first (imports, the SDK client, the first request): a kernel pays it once
    warm = Session.open(Path(folder, "warm.jsonl"), create=True, cwd=folder, durability="never")
    prompt = "Use the read tool on notes.txt, then tell me what it says ({i})."
    asyncio.run(Experiment(warm, prompt, vary={"i": ["w"]}, model=ref, tools=["read"]).run())
    exp = Experiment(
        session,
        "Use the read tool on notes.txt, then tell me what it says ({i}).",
        vary={"i": [str(i) for i in range(size)]},
        model=ref,
        tools=["read"],
        concurrency=min(size, cap) if cap else None,  # None: the default a user gets
        yes=True,
        limit=size,
    )
    view = ExperimentView(title="bench")
    sent = [0]
    original_send = view.send

    def counting_send(*args, **kwargs):
        sent[0] += 1
        return original_send(*args, **kwargs)

    view.send = counting_send
    view.observe(lambda change: sent.__setitem__(0, sent[0] + 1), names=["snapshot", "progress"])
    before = len(session)

    async def go():
        ticker = asyncio.ensure_future(view.follow(exp))
        try:
            return await exp.run()
        finally:
            ticker.cancel()

    cpu0, t0 = time.process_time(), time.perf_counter()
    result = asyncio.run(go())
    wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    rows = result.rows
    requests = sum(r.turns + r.tool_calls for r in rows)  # model requests: one per user turn and per tool round
    slowest = max((r.duration_s or 0.0) for r in rows)
    return {
        "size": size,
        "backend": backend,
        "done": sum(r.state == "done" for r in rows),
        "wall_s": wall,
        "slowest_branch_s": slowest,
        "cpu_ms_per_branch": 1000 * cpu / size,
        "cpu_ms_per_request": 1000 * cpu / max(1, requests),
        "appends_per_s": (len(session) - before) / wall,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "widget_msgs": sent[0],
        "widget_msgs_per_s": sent[0] / max(wall, 1.0),  # a run shorter than a second still sends its first and last state
    }


def sdk_alone(path: str) -> dict:
    """The grid's own requests (the bodies the server received, read from ``path``) sent again through the
    bare ``openai`` SDK: every first-turn request at once, then every second-turn one, then every third."""
    from openai import AsyncOpenAI

    bodies = json.loads(Path(path).read_text())
    rounds: dict[int, list[dict]] = {}
    for body in bodies:
        rounds.setdefault(sum(1 for m in body.get("messages", []) if m.get("role") == "tool"), []).append(body)
    failed = [0]

    async def main() -> float:
        client = AsyncOpenAI(base_url=os.environ["BENCH_URL"], api_key="sk-bench-0000", max_retries=0)

        async def request(body: dict) -> None:
            stream = await client.chat.completions.create(**{**body, "stream": True})
            async for _ in stream:
                pass

        await request(bodies[0])  # warm the client, as the grid was
        t0 = time.perf_counter()
        for turn in sorted(rounds):
            outcomes = await asyncio.gather(*(request(b) for b in rounds[turn]), return_exceptions=True)
            failed[0] += sum(isinstance(o, BaseException) for o in outcomes)
        wall = time.perf_counter() - t0
        await client.close()
        return wall

    cpu0 = time.process_time()
    wall = asyncio.run(main())
    if failed[0]:
        print(f"bare SDK: {failed[0]} of {len(bodies)} requests failed (no retries there)", file=sys.stderr)
    return {
        "sdk_wall_s": wall,
        "sdk_cpu_ms_per_request": 1000 * (time.process_time() - cpu0) / max(1, len(bodies)),
        "sdk_requests": len(bodies),
    }


def _append_worker(path: str, n: int) -> None:
    from pi_jupyter import Session

    s = Session.open(path, durability="never")
    for i in range(n):
        s.append_custom("bench", {"i": i})
    s.close()


def contention(processes: int, per_process: int) -> float:
    """Appends per second of ``processes`` processes appending to one file at once."""
    from pi_jupyter import Session

    path = str(Path(tempfile.mkdtemp(prefix="pi-bench-lock-"), "shared.jsonl"))
    Session.create(path=path).close()
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_append_worker, args=(path, per_process)) for _ in range(processes)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    for p in procs:
        p.join()
    wall = time.perf_counter() - t0
    assert len(Session.open(path, readonly=True)) == processes * per_process
    return processes * per_process / wall


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="1,10,100,1000")
    parser.add_argument("--latency", type=float, default=0.5, help="seconds the wire server waits before each reply")
    parser.add_argument("--backends", default="wire,offline")
    parser.add_argument("--concurrency", type=int, default=0, help="branches at once (default: the experiment's default)")
    parser.add_argument("--one", nargs=4, metavar=("SIZE", "BACKEND", "URL", "CAP"), help=argparse.SUPPRESS)
    parser.add_argument("--sdk", nargs=2, metavar=("BODIES", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        size, backend, url, cap = args.one
        print(json.dumps(one(int(size), backend, url, int(cap))))
        return
    if args.sdk:
        os.environ["BENCH_URL"] = args.sdk[1]
        print(json.dumps(sdk_alone(args.sdk[0])))
        return
    sizes = [int(s) for s in args.sizes.split(",")]
    ctx = multiprocessing.get_context("spawn")
    parent, child = ctx.Pipe()
    server = ctx.Process(target=_serve, args=(args.latency, child), daemon=True)
    server.start()
    url = parent.recv()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(HERE.parent), os.environ.get("PYTHONPATH", "")])}
    print(f"wire server latency {args.latency}s per reply; 3 model requests per branch on wire, 2 offline")
    print("SDK s / SDK ms/req: the grid's own requests (as the server received them) sent again through the bare openai SDK,")
    print("  all of one turn at once, turn by turn; vs SDK: the grid's wall time as a multiple of it (target: within 1.5x)")
    from pi_jupyter.experiment.variants import DEFAULT_CONCURRENCY

    print(f"concurrency: {args.concurrency or f'the default ({DEFAULT_CONCURRENCY}, no --concurrency given)'}")
    head = (
        f"{'backend':8} {'branches':>8} {'done':>5} {'wall s':>7} {'SDK s':>6} {'vs SDK':>6} {'slowest':>7} {'speed-up':>8} "
        f"{'CPU ms/br':>9} "
        f"{'ms/req':>7} {'SDK ms/req':>10} {'appends/s':>9} {'peak MB':>7} {'widget msgs':>11}"
    )
    print(head)
    try:
        for backend in args.backends.split(","):
            single = None
            for size in sizes:
                out = subprocess.run(
                    [sys.executable, __file__, "--one", str(size), backend, url, str(args.concurrency)],
                    capture_output=True,
                    text=True,
                    env=env,
                )
                if out.returncode != 0:
                    print(f"{backend:8} {size:>8} failed: {out.stderr.strip().splitlines()[-1] if out.stderr.strip() else out.returncode}")
                    continue
                r = json.loads(out.stdout.strip().splitlines()[-1])
                r.update(sdk_wall_s=0.0, sdk_cpu_ms_per_request=0.0)
                if backend == "wire":
                    parent.send("bodies")
                    bodies = Path(tempfile.mkdtemp(prefix="pi-bench-sdk-"), "bodies.json")
                    bodies.write_text(json.dumps(parent.recv()))
                    sdk = subprocess.run([sys.executable, __file__, "--sdk", str(bodies), url], capture_output=True, text=True, env=env)
                    if sdk.returncode == 0:
                        r.update(json.loads(sdk.stdout.strip().splitlines()[-1]))
                    else:
                        print(f"bare SDK failed: {sdk.stderr.strip().splitlines()[-1] if sdk.stderr.strip() else sdk.returncode}")
                if single is None:
                    single = r["wall_s"] / r["size"]
                speedup = size * single / r["wall_s"]
                versus = f"{r['wall_s'] / r['sdk_wall_s']:>5.2f}x" if r["sdk_wall_s"] else f"{'-':>6}"
                print(
                    f"{backend:8} {size:>8} {r['done']:>5} {r['wall_s']:>7.2f} {r['sdk_wall_s']:>6.2f} {versus} "
                    f"{r['slowest_branch_s']:>7.2f} "
                    f"{speedup:>7.1f}x {r['cpu_ms_per_branch']:>9.1f} {r['cpu_ms_per_request']:>7.2f} {r['sdk_cpu_ms_per_request']:>10.2f} "
                    f"{r['appends_per_s']:>9.0f} {r['peak_rss_mb']:>7.0f} {r['widget_msgs']:>5} ({r['widget_msgs_per_s']:.1f}/s)",
                    flush=True,
                )
    finally:
        parent.send("stop")
        server.join(5)
    for procs in (1, 4):
        print(f"lock contention: {procs} process(es) appending to one file: {contention(procs, 2000):,.0f} appends/s")


if __name__ == "__main__":
    main()
