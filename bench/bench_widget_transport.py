"""Widget transport: comm messages and kernel CPU for one streamed answer of N deltas.

Runs inside a real ipykernel (started with jupyter_client) and counts the ``comm_msg``
messages that actually arrive on iopub for each widget, with their size. Compared in the
same kernel, on the same pre-built event stream (N text deltas as fast as possible):

* ``AgentView``: coalesced ops (<= ~30 messages a second) plus snapshots at boundaries;
* ``naive full``: a trivial anywidget whose ``text`` trait is set to the text so far on
  every delta (each message re-sends the whole text);
* ``naive delta``: a trivial anywidget whose ``delta`` trait is set to each delta.

Kernel CPU is ``time.process_time()`` of the kernel process (every thread, the iopub thread
that serializes messages included) from the first delta until the widget's last message
was handed to iopub.

Then the same answer as a real stream, the way ``%%pi`` runs it: the tests' wire server
(started inside the kernel) streams an OpenAI chat-completions answer of N deltas as fast as
it can, the ``Agent`` reads it through the official SDK on the kernel's agent thread, once
with no widget (the bare stream) and once with an ``AgentView`` subscribed. Printed: the
stream's wall time, the comm messages per second of streaming, and the kernel CPU the widget
added over the bare stream.

Usage: ``python bench/bench_widget_transport.py [--deltas 10000]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from queue import Empty

TESTS = str(Path(__file__).resolve().parent.parent / "tests")

KERNEL_CODE = r"""
import json, time
import anywidget, traitlets
from pi_jupyter.agent.events import AgentEndEvent, AgentStartEvent, MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from pi_jupyter.messages import AssistantMessage, TextContent
from pi_jupyter.notebook.agent_view.view import AgentView
from pi_jupyter.providers.base import DoneEvent, StartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent

N = __N__
deltas = [f"tok{i} " for i in range(N)]
partial = AssistantMessage(model="bench", provider="offline", content=[TextContent(text="")])
final = AssistantMessage(model="bench", provider="offline", content=[TextContent(text="".join(deltas))])

def stream():
    # Built up front: the benchmark measures the widget, not event construction.
    evs = [AgentStartEvent(), MessageStartEvent(message=AssistantMessage(model="bench")),
           MessageUpdateEvent(message=partial, assistant_message_event=StartEvent(partial=partial)),
           MessageUpdateEvent(message=partial, assistant_message_event=TextStartEvent(content_index=0, partial=partial))]
    evs += [MessageUpdateEvent(message=partial, assistant_message_event=TextDeltaEvent(content_index=0, delta=d, partial=partial))
            for d in deltas]
    evs += [MessageUpdateEvent(message=partial, assistant_message_event=TextEndEvent(content_index=0, content=final.text, partial=partial)),
            MessageUpdateEvent(message=partial, assistant_message_event=DoneEvent(reason="stop", message=final)),
            MessageEndEvent(message=final), AgentEndEvent(messages=[final])]
    return evs

class NaiveFull(anywidget.AnyWidget):
    _esm = "export default { render() {} }"
    text = traitlets.Unicode("").tag(sync=True)

class NaiveDelta(anywidget.AnyWidget):
    _esm = "export default { render() {} }"
    delta = traitlets.Unicode("").tag(sync=True)

def count_sends(widget):
    # wraps the widget's comm.send; the one-item list holds the number of calls so far
    sent = [0]
    send = widget.comm.send
    def counting(*args, **kwargs):
        sent[0] += 1
        return send(*args, **kwargs)
    widget.comm.send = counting
    return sent

def measure(name, widget, feed):
    evs = stream()
    sent = count_sends(widget)
    time.sleep(0.3)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    feed(widget, evs)
    wall = time.perf_counter() - wall0
    time.sleep(1.0)  # the last flush and the iopub thread's serialization are counted too
    cpu = time.process_time() - cpu0
    row = {"name": name, "comm_id": widget.comm.comm_id, "sent": sent[0], "cpu_s": cpu, "feed_wall_s": wall}
    print("BENCH " + json.dumps(row), flush=True)

def feed_view(view, evs):
    for ev in evs:
        view.handle(ev)
    view.flush()

def feed_full(w, evs):
    text = ""
    for ev in evs:
        if ev.type == "message_update" and ev.assistant_message_event.type == "text_delta":
            text += ev.assistant_message_event.delta
            w.text = text

def feed_delta(w, evs):
    for ev in evs:
        if ev.type == "message_update" and ev.assistant_message_event.type == "text_delta":
            w.delta = ev.assistant_message_event.delta

measure("AgentView", AgentView(title="bench", model="offline/bench"), feed_view)
measure("naive delta", NaiveDelta(), feed_delta)
measure("naive full", NaiveFull(), feed_full)

# The same answer streamed for real through the Agent, as %%pi runs it.
import sys
sys.path.insert(0, __TESTS__)
from wire.helpers import wire_model
from wire.server import WireServer, openai_reply
from pi_jupyter import Agent, Session
from pi_jupyter.notebook.runner import KernelRunner

server = WireServer().__enter__()
server.queue_default("openai", openai_reply("".join(deltas), pieces=N))
runner = KernelRunner()

def agent_run(name, view):
    agent = Agent(Session.in_memory(), model=wire_model(server), api_key="sk-bench-0000000000000000", thinking="off")
    sent = [0]
    if view is not None:
        sent = count_sends(view)
        agent.subscribe(view.handle)
    time.sleep(0.3)
    cpu0, wall0 = time.process_time(), time.perf_counter()
    runner.wait(runner.submit(agent.prompt("go")), on_interrupt=agent.abort)
    wall = time.perf_counter() - wall0
    if view is not None:
        view.flush()
    cpu = time.process_time() - cpu0
    time.sleep(1.0)
    row = {"name": name, "comm_id": view.comm.comm_id if view is not None else "", "sent": sent[0], "cpu_s": cpu, "feed_wall_s": wall}
    print("AGENT " + json.dumps(row), flush=True)

agent_run("warm-up", None)  # the first prompt of a kernel builds the SDK client
for _ in range(3):  # interleaved, so machine noise hits both alike
    agent_run("bare stream", None)
    agent_run("AgentView", AgentView(title="bench", model="openai/gpt-test"))
print("BENCH-DONE", flush=True)
"""


def run(n: int) -> tuple[list[dict], list[dict]]:
    """Run the widgets in one real kernel; returns rows per widget (fed directly, and through the Agent) with iopub counts."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        kc.execute(KERNEL_CODE.replace("__N__", str(n)).replace("__TESTS__", repr(TESTS)))
        rows: list[dict] = []
        agent_rows: list[dict] = []
        counts: dict[str, int] = defaultdict(int)
        sizes: dict[str, int] = defaultdict(int)
        deadline = time.monotonic() + 600
        done = False
        while not done and time.monotonic() < deadline:
            try:
                msg = kc.get_iopub_msg(timeout=5)
            except Empty:
                continue
            kind = msg["msg_type"]
            content = msg["content"]
            if kind == "comm_msg":
                counts[content["comm_id"]] += 1
                sizes[content["comm_id"]] += len(json.dumps(content["data"]))
            elif kind == "stream":
                for line in content["text"].splitlines():
                    if line.startswith("BENCH "):
                        rows.append(json.loads(line[6:]))
                    elif line.startswith("AGENT "):
                        agent_rows.append(json.loads(line[6:]))
                    elif line.startswith("BENCH-DONE"):
                        done = True
            elif kind == "error":
                raise RuntimeError("kernel code failed:\n" + "\n".join(content["traceback"]))
        # Messages still in flight after BENCH-DONE are not expected (each measure waits), but drain.
        while True:
            try:
                msg = kc.get_iopub_msg(timeout=0.5)
            except Empty:
                break
            if msg["msg_type"] == "comm_msg":
                counts[msg["content"]["comm_id"]] += 1
                sizes[msg["content"]["comm_id"]] += len(json.dumps(msg["content"]["data"]))
        for row in rows + agent_rows:
            row["messages"] = counts[row["comm_id"]]
            row["bytes"] = sizes[row["comm_id"]]
        return rows, agent_rows
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main(argv: list[str] | None = None) -> int:
    """Print comm messages, bytes and kernel CPU per widget for one streamed answer."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deltas", type=int, default=10_000, help="text deltas in the streamed answer (default 10000)")
    args = parser.parse_args(argv)
    rows, agent_rows = run(args.deltas)
    print(f"{args.deltas:,} text deltas as fast as possible, one real ipykernel")
    print("sent: comm.send calls in the kernel; received: comm_msg on iopub (ZMQ drops what a slow reader misses)\n")
    print(f"{'widget':<12} {'sent':>7} {'received':>9} {'bytes received':>15} {'kernel CPU':>11} {'CPU/delta':>10} {'feed wall':>10}")
    for r in rows:
        print(
            f"{r['name']:<12} {r['sent']:>7,} {r['messages']:>9,} {r['bytes']:>15,} {r['cpu_s']:>10.3f}s "
            f"{r['cpu_s'] / args.deltas * 1e6:>8.1f}µs {r['feed_wall_s']:>9.3f}s"
        )
    bare = [r for r in agent_rows if r["name"] == "bare stream"]
    viewed = [r for r in agent_rows if r["name"] == "AgentView"]
    if bare and viewed:
        wall_bare = statistics.median(r["feed_wall_s"] for r in bare)
        wall_view = statistics.median(r["feed_wall_s"] for r in viewed)
        cpu_bare = statistics.median(r["cpu_s"] for r in bare)
        cpu_view = statistics.median(r["cpu_s"] for r in viewed)
        msgs = statistics.median(r["messages"] for r in viewed)
        print(f"\nthe same answer streamed by the wire server through the Agent and the SDK, median of {len(viewed)} runs")
        print(f"{'run':<12} {'stream wall':>12} {'kernel CPU':>11} {'messages':>9} {'msg/s':>7}")
        print(f"{'bare stream':<12} {wall_bare:>11.3f}s {cpu_bare:>10.3f}s {'-':>9} {'-':>7}")
        print(f"{'AgentView':<12} {wall_view:>11.3f}s {cpu_view:>10.3f}s {msgs:>9,.0f} {msgs / wall_view:>7.1f}")
        print(
            f"  -> the widget added {max(cpu_view - cpu_bare, 0.0) * 1000:.0f} ms of kernel CPU to a {wall_bare:.2f} s stream "
            f"({max(cpu_view - cpu_bare, 0.0) / wall_bare:.0%} of it), at {msgs / wall_view:.0f} messages a second"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
