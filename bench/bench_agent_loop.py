"""Overhead of our loop over the raw SDK stream, on one long streamed answer.

A local server (the tests' wire server) streams an OpenAI chat-completions answer of N
deltas as fast as it can. Four consumers read it in the same run, each several times:

* ``sdk``: the official ``openai`` SDK's own typed stream (``async for chunk in stream``),
  the way a user would write a bare loop;
* ``sdk raw``: the SDK's HTTP response read as bytes and split into SSE lines by hand (the
  floor: nothing but the transport);
* ``provider``: our ``openai-completions`` provider (events with the partial message);
* ``agent``: the whole ``Agent``: loop, events to one subscriber, persistence of the final
  message into a session file.

Each run uses a fresh event loop. Every consumer builds its SDK client before the clock
starts (building one costs 50-150 ms here, mostly the TLS context; the agent builds one per
event loop and reuses it, so in a notebook only the first prompt of a kernel pays it): the
times compare reading the same stream, not constructing clients.

Printed: wall time, time to first text delta, and the cost per delta over ``sdk raw``.
Then the loop alone: the same N deltas from an in-memory provider through ``Agent`` (events,
one subscriber, persistence), against a bare ``async for`` over the same events. Over a
socket the numbers move with machine load; the in-memory line is the loop's own cost.

    python bench/bench_agent_loop.py [--deltas 10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

from openai import AsyncOpenAI  # noqa: E402
from pydantic import SecretStr  # noqa: E402
from wire.helpers import wire_model  # noqa: E402
from wire.server import WireServer, openai_reply  # noqa: E402

from pi_jupyter import Agent, Session  # noqa: E402
from pi_jupyter.messages import UserMessage  # noqa: E402
from pi_jupyter.providers import LlmRequest, StreamOptions, get_provider, stream  # noqa: E402

KEY = "sk-bench-0000000000000000"


async def run_sdk(server: WireServer) -> tuple[float, float, int]:
    client = AsyncOpenAI(base_url=server.openai_url, api_key=KEY, max_retries=0)
    t0 = time.perf_counter()
    first = None
    n = 0
    s = await client.chat.completions.create(model="gpt-test", messages=[{"role": "user", "content": "go"}], stream=True)
    async for chunk in s:
        if chunk.choices and chunk.choices[0].delta.content:
            if first is None:
                first = time.perf_counter() - t0
            n += 1
    await client.close()
    return time.perf_counter() - t0, first or 0.0, n


async def run_sdk_raw(server: WireServer) -> tuple[float, float, int]:
    client = AsyncOpenAI(base_url=server.openai_url, api_key=KEY, max_retries=0)
    t0 = time.perf_counter()
    first = None
    n = 0
    raw = await client.chat.completions.with_raw_response.create(
        model="gpt-test", messages=[{"role": "user", "content": "go"}], stream=True
    )
    buf = b""
    async for data in raw.http_response.aiter_bytes():
        buf += data
        *lines, buf = buf.split(b"\n")
        for line in lines:
            if line.startswith(b"data: {") and b'"content"' in line:
                if first is None:
                    first = time.perf_counter() - t0
                n += 1
    await client.close()
    return time.perf_counter() - t0, first or 0.0, n


def warm_client(server: WireServer) -> None:
    """Build the provider's SDK client for this event loop now (the agent reuses it per loop)."""
    model = wire_model(server)
    get_provider(model).client_for(model, SecretStr(KEY), StreamOptions(api_key=KEY))


async def run_provider(server: WireServer) -> tuple[float, float, int]:
    model = wire_model(server)
    request = LlmRequest(messages=[UserMessage.text("go")])
    warm_client(server)
    t0 = time.perf_counter()
    first = None
    n = 0
    async for event in stream(model, request, StreamOptions(api_key=KEY)):
        if event.type == "text_delta":
            if first is None:
                first = time.perf_counter() - t0
            n += 1
    return time.perf_counter() - t0, first or 0.0, n


async def run_agent(server: WireServer, folder: str) -> tuple[float, float, int]:
    agent = Agent(Session.create(folder, durability="never"), model=wire_model(server), api_key=KEY, thinking="off")
    state = {"first": None, "n": 0}
    t0 = time.perf_counter()

    def on_event(event) -> None:
        if event.type == "message_update" and event.assistant_message_event.type == "text_delta":
            if state["first"] is None:
                state["first"] = time.perf_counter() - t0
            state["n"] += 1

    agent.subscribe(on_event)
    warm_client(server)
    t0 = time.perf_counter()
    await agent.prompt("go")
    return time.perf_counter() - t0, state["first"] or 0.0, state["n"]


def loop_only(n: int, runs: int) -> tuple[float, float]:
    """Median µs per delta of a bare ``async for`` and of the Agent over an in-memory stream."""
    from pi_jupyter.messages import AssistantMessage, TextContent
    from pi_jupyter.providers.base import DoneEvent, Model, StartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent

    def events() -> list:
        m = AssistantMessage(content=[TextContent(text="")], api="memory", provider="memory", model="memory")
        out = [StartEvent(partial=m), TextStartEvent(content_index=0, partial=m)]
        out += [TextDeltaEvent(content_index=0, delta="w ", partial=m) for _ in range(n)]
        return out + [TextEndEvent(content_index=0, content="", partial=m), DoneEvent(reason="stop", message=m)]

    bare_t, agent_t = [], []
    for _ in range(runs):
        evs = events()

        async def fake(model, request, options, evs=evs):
            for e in evs:
                yield e

        async def bare(evs=evs) -> float:
            t = time.perf_counter()
            async for _e in fake(None, None, None):
                pass
            return time.perf_counter() - t

        bare_t.append(asyncio.run(bare()))
        agent = Agent(Session.in_memory(), model=Model(id="memory", provider="memory", api="memory"), stream=fake, thinking="off")
        agent.subscribe(lambda e: None)

        async def timed(agent=agent) -> float:
            t = time.perf_counter()
            await agent.prompt("go")
            return time.perf_counter() - t

        agent_t.append(asyncio.run(timed()))
    return statistics.median(bare_t) * 1e6 / n, statistics.median(agent_t) * 1e6 / n


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--deltas", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    text = "".join(f"w{i % 10} " for i in range(args.deltas))
    with WireServer() as server, tempfile.TemporaryDirectory() as folder:
        server.queue_default("openai", openai_reply(text, pieces=args.deltas))
        results: dict[str, list[tuple[float, float, int]]] = {k: [] for k in ("sdk raw", "sdk", "provider", "agent")}
        for _ in range(args.runs):  # interleaved, so machine noise hits every consumer alike
            results["sdk raw"].append(asyncio.run(run_sdk_raw(server)))
            results["sdk"].append(asyncio.run(run_sdk(server)))
            results["provider"].append(asyncio.run(run_provider(server)))
            results["agent"].append(asyncio.run(run_agent(server, folder)))
    base = statistics.median(r[0] for r in results["sdk raw"])
    sdk = statistics.median(r[0] for r in results["sdk"])
    print(f"one streamed answer of {args.deltas:,} deltas from a local server, median of {args.runs} runs")
    head = f"{'consumer':10s} {'wall':>9s} {'first delta':>12s} {'deltas':>7s} {'vs sdk raw':>11s} {'vs sdk':>8s}"
    print(head + f" {'per delta over raw':>19s}")
    for name, rows in results.items():
        wall = statistics.median(r[0] for r in rows)
        first = statistics.median(r[1] for r in rows)
        n = rows[-1][2]
        over = (wall - base) / max(n, 1) * 1e6
        print(
            f"{name:10s} {wall * 1000:7.1f}ms {first * 1000:10.2f}ms {n:7d} {100 * (wall / base - 1):+10.1f}% "
            f"{100 * (wall / sdk - 1):+7.1f}% {over:16.1f} µs"
        )
    bare, loop = loop_only(args.deltas, args.runs)
    print(f"loop alone, in-memory stream of {args.deltas:,} deltas: bare async-for {bare:.2f} µs/delta, Agent {loop:.2f} µs/delta")
    print(f"  -> the agent loop adds {loop - bare:.2f} µs per delta (target: under 20 µs)")
    agent_wall = statistics.median(r[0] for r in results["agent"])
    over_sdk = 100 * (agent_wall / sdk - 1)
    over_raw = 100 * (agent_wall / base - 1)
    per_delta = (agent_wall - base) / args.deltas * 1e6
    verdict = {True: "met", False: "NOT met"}
    print("targets: under 5% added wall time and under 20 µs per delta")
    print(f"  Agent vs the SDK's own stream: {over_sdk:+.1f}% ({verdict[over_sdk < 5]})")
    met = verdict[over_raw < 5 and per_delta < 20]
    print(f"  Agent vs sdk raw (bytes, no parsing): {over_raw:+.1f}%, {per_delta:.1f} µs per delta ({met})")


if __name__ == "__main__":
    main()
