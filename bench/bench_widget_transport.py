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
was handed to iopub. Usage: ``python bench/bench_widget_transport.py [--deltas 10000]``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from queue import Empty

KERNEL_CODE = r"""
import json, time
import anywidget, traitlets
from pi_jupyter.agent.events import AgentEndEvent, AgentStartEvent, MessageEndEvent, MessageStartEvent, MessageUpdateEvent
from pi_jupyter.messages import AssistantMessage, TextContent
from pi_jupyter.notebook.agent_view import AgentView
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

def measure(name, widget, feed):
    evs = stream()
    sent = [0]
    send = widget.comm.send
    def counting(*args, **kwargs):
        sent[0] += 1
        return send(*args, **kwargs)
    widget.comm.send = counting
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
print("BENCH-DONE", flush=True)
"""


def run(n: int) -> list[dict]:
    """Run the three widgets in one real kernel; returns a row per widget with the iopub counts."""
    from jupyter_client.manager import start_new_kernel

    km, kc = start_new_kernel(kernel_name="python3")
    try:
        kc.execute(KERNEL_CODE.replace("__N__", str(n)))
        rows: list[dict] = []
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
        for row in rows:
            row["messages"] = counts[row["comm_id"]]
            row["bytes"] = sizes[row["comm_id"]]
        return rows
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def main(argv: list[str] | None = None) -> int:
    """Print comm messages, bytes and kernel CPU per widget for one streamed answer."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--deltas", type=int, default=10_000, help="text deltas in the streamed answer (default 10000)")
    args = parser.parse_args(argv)
    rows = run(args.deltas)
    print(f"{args.deltas:,} text deltas as fast as possible, one real ipykernel")
    print("sent: comm.send calls in the kernel; received: comm_msg on iopub (ZMQ drops what a slow reader misses)\n")
    print(f"{'widget':<12} {'sent':>7} {'received':>9} {'bytes received':>15} {'kernel CPU':>11} {'CPU/delta':>10} {'feed wall':>10}")
    for r in rows:
        print(
            f"{r['name']:<12} {r['sent']:>7,} {r['messages']:>9,} {r['bytes']:>15,} {r['cpu_s']:>10.3f}s "
            f"{r['cpu_s'] / args.deltas * 1e6:>8.1f}µs {r['feed_wall_s']:>9.3f}s"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
