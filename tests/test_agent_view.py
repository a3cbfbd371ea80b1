"""AgentView without a browser: coalescing, snapshots, the display bundle, Stop, threads.

Widgets run on a recording comm (the ``comm`` package's own extension point), so every
message the frontend would receive is captured with its content. The frontend's merge
logic (``Store`` in ``agent_view.js``) is run in node on those recorded messages, delivered
in the orders a browser can produce.
"""

from __future__ import annotations

import importlib.util
import json
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import comm
import pytest
from comm.base_comm import BaseComm

from pi_jupyter.agent.events import (
    AgentEndEvent,
    AgentStartEvent,
    AutoCompactionEndEvent,
    AutoCompactionStartEvent,
    AutoRetryEndEvent,
    AutoRetryStartEvent,
    MessageEndEvent,
    MessageStartEvent,
    MessageUpdateEvent,
    ToolExecutionEndEvent,
    ToolExecutionStartEvent,
    ToolExecutionUpdateEvent,
)
from pi_jupyter.messages import AssistantMessage, TextContent
from pi_jupyter.notebook.agent_view.view import AgentView, esm_source
from pi_jupyter.providers.base import DoneEvent, StartEvent, TextDeltaEvent, TextEndEvent, TextStartEvent

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fake_agent", Path(__file__).parent / "browser" / "fake_agent.py")
fake_agent = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fake_agent)


class RecordingComm(BaseComm):
    """A comm that keeps every message it would publish to the frontend."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[tuple[str, Any]] = []
        self._sent_lock = threading.Lock()
        super().__init__(*args, **kwargs)

    def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None, buffers: Any = None, **keys: Any) -> None:
        with self._sent_lock:
            self.sent.append((msg_type, json.loads(json.dumps(data))))

    def frontend_says(self, content: dict[str, Any]) -> None:
        """Deliver a custom message from the browser, through ipywidgets' real handler."""
        self.handle_msg({"content": {"data": {"method": "custom", "content": content}}, "buffers": []})


@pytest.fixture
def recorded(monkeypatch):
    monkeypatch.setattr(comm, "create_comm", lambda *a, **k: RecordingComm(*a, **k))


def custom_msgs(view: AgentView, kind: str = "ops") -> list[dict[str, Any]]:
    return [d["content"] for t, d in view.comm.sent if t == "comm_msg" and d.get("method") == "custom" and d["content"]["type"] == kind]


def state_msgs(view: AgentView) -> list[dict[str, Any]]:
    return [d["state"] for t, d in view.comm.sent if t == "comm_msg" and d.get("method") == "update"]


def delta_text(view: AgentView, item: str, block: int) -> str:
    return "".join(op["t"] for m in custom_msgs(view) for op in m["ops"] if op["o"] == "d" and op["i"] == item and op["b"] == block)


def streamed_message(deltas: list[str]):
    """Events of one assistant message whose only text block streams ``deltas`` (built up front)."""
    partial = AssistantMessage(model="m", provider="p")
    block = TextContent(text="")
    partial.content.append(block)
    head = [
        MessageStartEvent(message=AssistantMessage(model="m", provider="p")),
        MessageUpdateEvent(message=partial, assistant_message_event=StartEvent(partial=partial)),
        MessageUpdateEvent(message=partial, assistant_message_event=TextStartEvent(content_index=0, partial=partial)),
    ]
    body = [
        MessageUpdateEvent(message=partial, assistant_message_event=TextDeltaEvent(content_index=0, delta=d, partial=partial))
        for d in deltas
    ]
    final = AssistantMessage(model="m", provider="p", content=[TextContent(text="".join(deltas))])
    tail = [
        MessageUpdateEvent(
            message=partial, assistant_message_event=TextEndEvent(content_index=0, content="".join(deltas), partial=partial)
        ),
        MessageUpdateEvent(message=partial, assistant_message_event=DoneEvent(reason="stop", message=final)),
        MessageEndEvent(message=final),
    ]
    return head, body, tail


def wait_until(predicate, timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("condition not reached")
        time.sleep(0.01)


def test_ten_thousand_deltas_become_a_few_messages_carrying_the_exact_text(recorded):
    view = AgentView(model="p/m")
    deltas = [f"w{i} " for i in range(10_000)]
    head, body, tail = streamed_message(deltas)
    view.handle(AgentStartEvent())
    for ev in head:
        view.handle(ev)
    start = time.monotonic()
    for ev in body:
        view.handle(ev)
    elapsed = time.monotonic() - start
    for ev in tail:
        view.handle(ev)
    view.handle(AgentEndEvent(messages=[tail[-1].message]))

    ops_messages = custom_msgs(view)
    assert len(ops_messages) <= 30 * elapsed + 3, (len(ops_messages), elapsed)
    assert len(ops_messages) < 100
    item = view.transcript[-1]["id"]
    assert delta_text(view, item, 0) == "".join(deltas)
    assert view.transcript[-1]["blocks"][0]["text"] == "".join(deltas)
    assert view.state == "done"


def test_a_paced_stream_is_sent_live_at_a_bounded_rate(recorded):
    view = AgentView()
    deltas = [f"t{i} " for i in range(300)]
    head, body, tail = streamed_message(deltas)
    for ev in head:
        view.handle(ev)
    start = time.monotonic()
    for ev in body:
        view.handle(ev)
        time.sleep(0.002)
    elapsed = time.monotonic() - start
    sent_while_streaming = len(custom_msgs(view))
    for ev in tail:
        view.handle(ev)
    view.flush()
    # Live: many messages went out before the message ended; bounded: about 30 a second.
    assert sent_while_streaming >= 5
    assert len(custom_msgs(view)) <= 30 * elapsed + 3
    assert delta_text(view, view.transcript[0]["id"], 0) == "".join(deltas)
    seqs = [op["s"] for m in custom_msgs(view) for op in m["ops"]]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)


def test_snapshot_after_message_end_holds_the_whole_turn(recorded):
    view = AgentView(title="t")
    events = list(fake_agent.full_run())
    cut = next(i for i, ev in enumerate(events) if ev.type == "tool_execution_end")
    for ev in events[: cut + 1]:
        view.handle(ev)
    # A boundary: the snapshot follows within the snapshot interval, without an agent_end.
    wait_until(lambda: view.transcript and view.transcript[-1]["blocks"][-1].get("x", {}).get("status") == "done")
    user, assistant = view.transcript
    assert user == {"id": user["id"], "kind": "user", "text": "Why does the loss diverge?", "images": 0}
    kinds = [b["type"] for b in assistant["blocks"]]
    assert kinds == ["thinking", "text", "toolCall"]
    assert assistant["blocks"][0]["text"] == fake_agent.THINKING
    assert assistant["stopReason"] == "toolUse"
    call = assistant["blocks"][2]
    assert call["name"] == "bash" and json.loads(call["text"]) == {"command": "tail -n 3 train.log"}
    assert call["x"]["output"].endswith("step 220 loss nan\n") and isinstance(call["x"]["ms"], int)
    # Every op numbered up to the snapshot's seq was sent before the snapshot itself.
    snap_at = max(i for i, (t, d) in enumerate(view.comm.sent) if d.get("method") == "update" and "transcript_seq" in d.get("state", {}))
    before = [op["s"] for t, d in view.comm.sent[:snap_at] if d.get("method") == "custom" for op in d["content"]["ops"]]
    assert max(before) <= view.transcript_seq


def test_display_bundle_extends_the_widget_bundle_with_the_transcript(recorded):
    view = AgentView(title="Loss", model="offline/fake-model")
    for ev in fake_agent.full_run():
        view.handle(ev)
    data, _meta = view._repr_mimebundle_()
    assert data["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
    md = data["text/markdown"]
    assert md.startswith("#### Loss")
    assert "> Why does the loss diverge?" in md
    assert '**Tool** `bash(command="tail -n 3 train.log")`' in md and "step 220 loss nan" in md
    assert "## Why the loss diverges" in md
    assert "&lt;b>not bold&lt;/b>" in md and "<b>" not in md
    assert "done" in md.splitlines()[-1]
    assert "User: Why does the loss diverge?" in data["text/plain"]
    assert view.bundle() == data
    assert "step 220 loss nan" in data["text/html"] and "<b>not bold" not in data["text/html"]
    final = view.final_bundle()  # what a finished %%pi run leaves: no widget, so no "model not found" after a restart
    assert set(final) == {"text/html", "text/markdown", "text/plain"}
    assert final["text/html"] == data["text/html"]
    view.close()  # a closed widget still gives its transcript
    assert set(view.bundle()) == {"text/html", "text/markdown", "text/plain"}


def test_stop_button_message_calls_the_callbacks_and_shows_a_failing_one(recorded):
    view = AgentView()
    calls = []
    view.on_stop(lambda: calls.append("a"))

    @view.on_stop
    def broken():
        raise RuntimeError("no agent")

    view.handle(AgentStartEvent())
    view.comm.frontend_says({"type": "stop"})
    assert calls == ["a"]
    assert view.state == "stopping"
    view.flush()
    notice = view.transcript[-1]
    assert notice["kind"] == "notice" and notice["tone"] == "error" and "RuntimeError: no agent" in notice["text"]
    assert view.status["state"] == "stopping" and view.status["running"]


def test_stop_without_a_handler_says_so_instead_of_hanging_in_stopping(recorded):
    view = AgentView()
    view.handle(AgentStartEvent())
    view.comm.frontend_says({"type": "stop"})
    view.flush()
    assert view.state == "running"
    assert "interrupt the kernel" in view.transcript[-1]["text"]


def test_sync_reply_carries_the_message_still_streaming(recorded):
    view = AgentView()
    head, body, _tail = streamed_message([f"x{i}" for i in range(50)])
    for ev in head + body:
        view.handle(ev)
    view.comm.frontend_says({"type": "sync", "seq": view.transcript_seq})
    reply = custom_msgs(view, "state")[-1]
    assert reply["items"][0]["blocks"][0]["text"] == "".join(f"x{i}" for i in range(50))
    assert reply["seq"] >= max(op["s"] for m in custom_msgs(view) for op in m["ops"])
    assert reply["status"]["state"] == "streaming"


def test_compaction_and_retry_notices_update_in_place(recorded):
    view = AgentView()
    view.handle(AgentStartEvent())
    view.handle(AutoCompactionStartEvent(reason="threshold"))
    assert view.state == "compacting"
    view.handle(AutoCompactionEndEvent(result={"tokensBefore": 120_000}))
    view.handle(AutoRetryStartEvent(attempt=1, max_attempts=3, delay_ms=2000, error_message="overloaded"))
    assert view.state == "retrying"
    view.handle(AutoRetryStartEvent(attempt=2, max_attempts=3, delay_ms=4000, error_message="overloaded"))
    view.handle(AutoRetryEndEvent(success=False, attempt=2, final_error="still overloaded"))
    view.flush()
    notices = [i for i in view.transcript if i["kind"] == "notice"]
    assert [n["text"] for n in notices] == [
        "Context compacted (120,000 tokens before).",
        "Retry gave up after attempt 2: still overloaded",
    ]
    assert notices[1]["tone"] == "error" and not notices[1]["active"]


def test_the_status_line_cost_includes_what_a_compaction_summary_cost(recorded):
    view = AgentView()
    view.handle(AgentStartEvent())
    view.handle(AutoCompactionStartEvent(reason="threshold"))
    view.handle(AutoCompactionEndEvent(result={"tokensBefore": 1000, "usage": {"totalTokens": 50, "cost": {"total": 0.125}}}))
    view.flush()
    assert view.status["cost"] == 0.125


def test_tool_events_without_an_announcing_message_get_their_own_card(recorded):
    view = AgentView()
    view.handle(ToolExecutionStartEvent(tool_call_id="c9", tool_name="read", args={"path": "a.py"}))
    view.handle(ToolExecutionUpdateEvent(tool_call_id="c9", tool_name="read", partial_result={"content": [{"type": "text", "text": "li"}]}))
    view.handle(
        ToolExecutionEndEvent(tool_call_id="c9", tool_name="read", result={"content": [{"type": "text", "text": "line"}]}, is_error=True)
    )
    view.flush()
    (item,) = view.transcript
    assert item["kind"] == "tool"
    assert item["blocks"][0]["name"] == "read" and item["blocks"][0]["x"]["status"] == "error"
    assert item["blocks"][0]["x"]["output"] == "line"


def test_bad_input_is_refused_with_the_reason():
    view = AgentView()
    with pytest.raises(TypeError, match="expected an agent event"):
        view.handle({"type": "agent_start"})
    with pytest.raises(ValueError, match="unknown state 'nope'"):
        view.set_status("nope")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="expected a callable"):
        view.on_stop(42)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="max_rate"):
        AgentView(max_rate=0)


def test_handle_from_many_threads_loses_nothing(recorded):
    view = AgentView()
    head, _, _ = streamed_message([])
    for ev in head:
        view.handle(ev)
    partial = head[-1].message
    for t in range(3):
        view.handle(ToolExecutionStartEvent(tool_call_id=f"c{t}", tool_name="sh"))

    def text_worker(t: int) -> None:
        for i in range(2000):
            view.handle(
                MessageUpdateEvent(
                    message=partial, assistant_message_event=TextDeltaEvent(content_index=0, delta=f"<{t}.{i}>", partial=partial)
                )
            )

    def tool_worker(t: int) -> None:
        for i in range(500):
            view.handle(
                ToolExecutionUpdateEvent(
                    tool_call_id=f"c{t}", tool_name="sh", partial_result={"content": [{"type": "text", "text": str(i)}]}
                )
            )
        view.handle(
            ToolExecutionEndEvent(tool_call_id=f"c{t}", tool_name="sh", result={"content": [{"type": "text", "text": f"done {t}"}]})
        )

    def status_worker() -> None:
        for i in range(200):
            view.set_status(note=f"n{i}")

    threads = [threading.Thread(target=text_worker, args=(t,)) for t in range(4)]
    threads += [threading.Thread(target=tool_worker, args=(t,)) for t in range(3)]
    threads.append(threading.Thread(target=status_worker))
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    view.flush()
    text = view.transcript[0]["blocks"][0]["text"]
    tokens = text[1:-1].split("><")
    assert sorted(tokens) == sorted(f"{t}.{i}" for t in range(4) for i in range(2000))
    # The live ops carry the same text in the same order as the snapshot.
    assert delta_text(view, view.transcript[0]["id"], 0) == text
    outputs = sorted(i["blocks"][0]["x"]["output"] for i in view.transcript if i["kind"] == "tool")
    assert outputs == ["done 0", "done 1", "done 2"]
    assert view.status["note"] == "n199"


# ---------------------------------------------------------------- the browser-side merge, in node

NODE_SCRIPT = r"""
import { readFileSync } from "node:fs";
import { pathToFileURL } from "node:url";
const { Store, parseBlocks, renderInline, highlightInto } = await import(pathToFileURL(process.argv[2]).href);
// Just enough DOM for renderInline: elements with children, text and attributes.
class N {
  constructor(tag) { this.tag = tag; this.kids = []; this.text = ""; }
  appendChild(k) { this.kids.push(k); return k; }
  set textContent(v) { this.text = v; }
}
const doc = { createElement: (t) => new N(t), createTextNode: (t) => Object.assign(new N("#text"), { text: t }) };
const esc = (t) => t.replace(/</g, "&lt;");
const open = (n) => `<${n.tag}${n.href ? " href=" + n.href : ""}>`;
const show = (nodes) =>
  nodes.map((n) => (n.tag === "#text" ? esc(n.text) : `${open(n)}${esc(n.text)}${show(n.kids)}</${n.tag}>`)).join("");
const input = JSON.parse(readFileSync(process.argv[3], "utf8"));
const out = {};
for (const [name, messages] of Object.entries(input.scenarios)) {
  const store = new Store();
  store.loadSnapshot(input.initial.items, input.initial.seq);
  for (const m of messages) {
    if (m.kind === "snapshot") store.loadSnapshot(m.items, m.seq);
    else if (m.kind === "ops") store.applyOps(m.ops);
    else if (m.kind === "state" && m.items) store.loadSnapshot(m.items, m.seq);
  }
  out[name] = store.items;
}
out.blocks = input.markdown.map((s) => parseBlocks(s));
out.inline = input.inline.map((s) => show(renderInline(doc, s)));
out.hl = input.code.map(([text, lang]) => { const c = new N("code"); highlightInto(doc, c, text, lang); return show([c]); });
console.log(JSON.stringify(out));
"""


def _frontend_stream(view: AgentView) -> list[dict[str, Any]]:
    """The recorded messages as the frontend sees them (snapshot updates, ops, state replies)."""
    out = []
    for t, d in view.comm.sent:
        if t != "comm_msg":
            continue
        if d.get("method") == "update" and "transcript_seq" in d["state"]:
            out.append({"kind": "snapshot", "items": d["state"]["transcript"], "seq": d["state"]["transcript_seq"]})
        elif d.get("method") == "custom":
            out.append({"kind": d["content"]["type"], **d["content"]})
    return out


def _move_after_state(msgs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The first snapshot delivered only after the (newer) sync state: it must be ignored."""
    first = next(i for i, m in enumerate(msgs) if m["kind"] == "snapshot")
    rest = msgs[:first] + msgs[first + 1 :]
    at = next(i for i, m in enumerate(rest) if m["kind"] == "state")
    return rest[: at + 1] + [msgs[first]] + rest[at + 1 :]


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node to run the widget's JavaScript")
def test_js_store_merges_snapshots_and_ops_in_any_delivery_order(recorded, tmp_path):
    view = AgentView(snapshot_rate=1000)  # a snapshot at every boundary: the hardest case for the merge
    events = list(fake_agent.full_run(chunk=1))
    joined_at = len(events) // 2
    stream_before = None
    for i, ev in enumerate(events):
        view.handle(ev)
        if i % 50 == 0:
            time.sleep(0.035)  # let flushes happen mid-stream
        if i == joined_at:
            stream_before = len(_frontend_stream(view))
            view.comm.frontend_says({"type": "sync", "seq": 0})  # a view rendered mid-run asks for the state
    view.flush()
    stream = _frontend_stream(view)

    def late_snapshots(msgs: list[dict[str, Any]], lag: int) -> list[dict[str, Any]]:
        # ipywidgets applies state updates a few ticks after custom messages: deliver each late.
        out: list[dict[str, Any]] = []
        held: list[tuple[int, dict[str, Any]]] = []
        for i, m in enumerate(msgs):
            if m["kind"] == "snapshot":
                held.append((i + lag, m))
            else:
                out.append(m)
            while held and held[0][0] <= i:
                out.append(held.pop(0)[1])
        return out + [m for _, m in held]

    final = max(i for i, m in enumerate(stream) if m["kind"] == "snapshot")
    no_final = stream[:final] + stream[final + 1 :]  # the state must come from older snapshots + ops
    scenarios = {
        "in_order": stream,
        "ops_only": [m for m in stream if m["kind"] == "ops"],
        "snapshots_late_1": late_snapshots(no_final, 1),
        "snapshots_late_4": late_snapshots(no_final, 4),
        "snapshots_late_no_sync": late_snapshots([m for m in no_final if m["kind"] != "state"], 2),
        "stale_snapshot_after_state": _move_after_state(no_final),
        "joined_mid_run": no_final[stream_before:],
        "everything_twice": no_final + no_final,
    }
    markdown = ["# T\n\n- a\n- b\n  - c\n\n```py\nx = 1", "| a | b |\n|---|:-:|\n| 1 | 2 |"]
    data = tmp_path / "input.json"
    inline = [
        "*a **b** c* and snake_case_name",
        "[x](javascript:alert(1)) <b>hi</b> `*no*`",
        "see https://x.y/z. [ok](https://e.com)",
        "[y](javascript:alert(1)//https://e.com) [z](JavaScript:x#https://e.com)",
    ]
    code = [["def f(x):\n    return 'if' + 2  # done", "python"], ["let a = `x`; // note", "ts"], ["plain <b>", "nosuchlang"]]
    data.write_text(
        json.dumps({"initial": {"items": [], "seq": 0}, "scenarios": scenarios, "markdown": markdown, "inline": inline, "code": code})
    )
    script = tmp_path / "run.mjs"
    script.write_text(NODE_SCRIPT)
    module = tmp_path / "agent_view.mjs"
    module.write_text(esm_source())  # the module the widget ships: its four parts joined
    proc = subprocess.run(["node", str(script), str(module), str(data)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    expected = view.transcript
    for name in scenarios:
        assert result[name] == expected, name
    heading, lst, code = result["blocks"][0]
    assert heading == {"type": "heading", "level": 1, "text": "T"}
    assert lst["type"] == "list" and lst["items"][1][1]["type"] == "list"
    assert code == {"type": "code", "lang": "py", "text": "x = 1"}  # an open fence while streaming is still code
    assert result["inline"] == [
        "<em>a <strong>b</strong> c</em> and snake_case_name",
        "x &lt;b>hi&lt;/b> <code>*no*</code>",  # an unsafe link is dropped to its text; HTML stays text
        "see <a href=https://x.y/z>https://x.y/z</a>. <a href=https://e.com>ok</a>",
        "y z",  # the link filter is anchored: an https tail does not make a javascript: link safe
    ]
    # the shipped highlighter: keywords, strings, numbers and comments in spans; names and unknown languages stay text
    assert result["hl"][0] == (
        "<code><span>def</span> f(x):\n    <span>return</span> <span>'if'</span> + <span>2</span>  <span># done</span></code>"
    )
    assert result["hl"][1] == "<code><span>let</span> a = <span>`x`</span>; <span>// note</span></code>"
    assert result["hl"][2] == "<code>plain &lt;b></code>"
    (table,) = result["blocks"][1]
    assert table["head"] == ["a", "b"] and table["aligns"] == ["", "center"] and table["rows"] == [["1", "2"]]


def test_a_recorded_system_message_is_a_one_line_notice(recorded):
    from pi_jupyter.messages import SystemMessage

    view = AgentView()
    view.handle(AgentStartEvent())
    delta = SystemMessage(content="", sections={"preamble": "P", "cwd": None}, tools_added=[{"name": "read"}])
    view.handle(MessageStartEvent(message=delta))
    view.handle(MessageEndEvent(message=delta))
    view.flush()
    notices = [i["text"] for i in view.transcript if i["kind"] == "notice"]
    # in plain words: no section names, no "+read" (%pi context has the details)
    assert notices == ["The model's instructions were set; tools offered: read (%pi context shows them)"]
