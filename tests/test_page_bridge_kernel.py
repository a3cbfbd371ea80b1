"""The page bridge in a real kernel: comm messages as ``page_bridge.js`` sends them, from a cell's static output.

A cell re-run three times leaves "answer 3 of 3" with the other answers; the static output
names its session and the kernel's bridge token. The bridge widget's ``comm_open`` is read from
iopub (as the page's widget manager reads it), and ``act`` messages are sent on the shell
channel, as the browser sends a widget's custom message.
"""

from __future__ import annotations

import queue
import re
import time
from typing import Any

import pytest
from kernel_client import Kernel

from pi_jupyter import Session
from pi_jupyter.messages import text_of
from pi_jupyter.views.static_html import FORGOTTEN_NOTE

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
%config PiMagics.thinking = "off"
"""


def run_all_iopub(k: Kernel, code: str, cell_id: str) -> list[dict[str, Any]]:
    """Execute ``code`` and return every iopub message it caused (comm messages included)."""
    msg_id = k.send(code, cell_id)
    msgs = []
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            msg = k.kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            break
        msgs.append(msg)
    while k.kc.get_shell_msg(timeout=30)["parent_header"].get("msg_id") != msg_id:
        pass
    return msgs


def act(k: Kernel, comm_id: str, content: dict[str, Any], seen: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    """Send a custom message to the widget ``comm_id`` as the browser does; return its answer (other iopub messages go to ``seen``)."""
    msg = k.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}})
    k.kc.shell_channel.send(msg)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            reply = k.kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if seen is not None and reply["parent_header"].get("msg_id") == msg["header"]["msg_id"]:
            seen.append(reply)
        if reply["msg_type"] == "comm_msg" and reply["content"]["comm_id"] == comm_id:
            data = reply["content"]["data"]
            if data.get("method") == "custom" and data["content"].get("type") == "acted":
                return data["content"]
    raise AssertionError("no answer from the bridge")


def last_html(msgs: list[dict[str, Any]]) -> str:
    return [m["content"]["data"]["text/html"] for m in msgs if "text/html" in m["content"].get("data", {})][-1]


@pytest.fixture
def kernel(tmp_path):
    k = Kernel(str(tmp_path))
    try:
        assert k.run(SETUP.format(dir=str(tmp_path / "sessions"))).status == "ok"
        yield k
    finally:
        k.close()


def test_continue_from_an_earlier_answer_and_forget_a_message_through_the_bridge(kernel, tmp_path):
    opened: list[dict[str, Any]] = []
    for n in (1, 2, 3):
        kernel.run(f"n = {n}", cell_id="setn")
        msgs = run_all_iopub(kernel, "%%pi\nremember the number {n}", cell_id="c1")
        opened += [m["content"] for m in msgs if m["msg_type"] == "comm_open" and "token" in m["content"]["data"]["state"]]
    # one bridge for the session, opened once
    assert len(opened) == 1
    state = opened[0]["data"]["state"]
    html = last_html(msgs)
    assert "answer 3 of 3" in html
    assert f'data-pi-session="{state["session_id"]}"' in html and f'data-pi-bridge="{state["token"]}"' in html
    first_end = re.search(r'data-n="1"><summary>answer 1 of 3.*?%pi checkout (\w+)', html, re.S).group(1)
    comm_id = opened[0]["comm_id"]

    answer = act(kernel, comm_id, {"type": "act", "rid": "r1", "action": "checkout", "target": first_end, "token": state["token"]})
    assert answer == {"type": "acted", "rid": "r1", "ok": True, "text": f"checked out {first_end}: cells below continue from here"}
    nxt = kernel.run("%%pi\nwhich number?", cell_id="c2")
    assert nxt.status == "ok", nxt.error
    s = Session.open(sorted((tmp_path / "sessions").glob("*.jsonl"))[0], readonly=True)
    said = [m.text for m in s.context().messages if m.role == "assistant"]
    assert any("remember the number 1" in t for t in said) and not any("number 3" in t or "number 2" in t for t in said)

    # run 3's prompt is on another branch now: refused with pi's reason, in one line
    off_branch = re.search(r'class="pi-entry" data-pi-entry="(\w+)"><div class="pi-user"', html).group(1)
    answer = act(kernel, comm_id, {"type": "act", "rid": "r2", "action": "forget", "target": off_branch, "token": state["token"]})
    assert not answer["ok"] and answer["text"].startswith("forget refused:") and "branch" in answer["text"], answer
    # the new cell's prompt, named in its output as the browser's "forget this" names it
    target = re.search(r'class="pi-entry" data-pi-entry="(\w+)"><div class="pi-user"', nxt.data("text/html")[-1]).group(1)
    seen: list[dict[str, Any]] = []
    answer = act(kernel, comm_id, {"type": "act", "rid": "r3", "action": "forget", "target": target, "token": state["token"]}, seen)
    assert answer["ok"] and answer["text"].startswith(f"not sent any more: forgot {target}"), answer
    # the cell's output is re-rendered through its display id, so the saved notebook says so too
    updates = [m["content"] for m in seen if m["msg_type"] == "update_display_data"]
    assert len(updates) == 1 and FORGOTTEN_NOTE in updates[0]["data"]["text/html"]
    assert "which number?" in updates[0]["data"]["text/html"] and f'data-pi-entry="{target}"' not in updates[0]["data"]["text/html"]
    s = Session.open(s.path, readonly=True)
    assert [e["targetId"] for e in s.raw_entries() if e["type"] == "context_edit"] == [target]
    prompts = [text_of(m.content, "") for m in s.context().messages if m.role == "user"]
    assert prompts == ["remember the number 1"]


def test_refusals_are_one_line_and_another_kernels_output_cannot_act(kernel, tmp_path):
    msgs = run_all_iopub(kernel, "%%pi\nhello", cell_id="c1")
    opened = next(m["content"] for m in msgs if m["msg_type"] == "comm_open" and "token" in m["content"]["data"]["state"])
    comm_id, token = opened["comm_id"], opened["data"]["state"]["token"]
    cases = [
        ({"action": "forget", "target": "nope", "token": token}, "forget refused"),
        ({"action": "checkout", "target": "nope", "token": token}, "checkout refused"),
        ({"action": "delete", "target": "nope", "token": token}, "unknown action"),
        ({"action": "forget", "target": 7, "token": token}, "no entry id"),
        ({"action": "checkout", "target": "nope", "token": "0123456789abcdef"}, "another kernel"),
    ]
    for i, (content, expected) in enumerate(cases):
        answer = act(kernel, comm_id, {"type": "act", "rid": f"r{i}", **content})
        assert not answer["ok"] and expected in answer["text"] and "\n" not in answer["text"], answer
    s = Session.open(sorted((tmp_path / "sessions").glob("*.jsonl"))[0], readonly=True)
    assert not [e for e in s.raw_entries() if e["type"] == "context_edit"]
