"""``%%pi --replay`` in a real kernel: a lecture recorded once, performed in class with no key, at its pace, in step mode.

The recording is made in one kernel (the offline typewriter model, which streams slowly enough
for its timestamps to mean something); the class is another kernel whose model has no key. Step
mode is driven as the browser drives the cell's view: its widget messages (``sync`` when drawn,
``go`` when the button is pressed) are sent on the shell channel.
"""

from __future__ import annotations

import queue
import time
from typing import Any

import pytest
from kernel_client import Kernel

from pi_jupyter import Session
from pi_jupyter.messages.text import ms_from_iso

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = {model!r}
%config PiMagics.thinking = "off"
"""
TOOL_CELL = "use python:\n```python\nprint(6 * 7)\n```"
THANKS_CELL = "Thanks! Say it once more."


def _kernel(tmp_path, model: str) -> Kernel:
    k = Kernel(str(tmp_path), env={"ANTHROPIC_API_KEY": ""})
    setup = k.run(SETUP.format(dir=str(tmp_path / "sessions"), model=model))
    assert setup.status == "ok", setup.error
    return k


@pytest.fixture
def lecture(tmp_path):
    """The recording: two cells run with a model, the night before."""
    k = _kernel(tmp_path, "offline/typewriter")
    try:
        for cell_id, text in (("c1", TOOL_CELL), ("c2", THANKS_CELL)):
            run = k.run(f"%%pi --session lecture\n{text}", cell_id=cell_id)
            assert run.status == "ok", run.error
    finally:
        k.close()
    (path,) = sorted((tmp_path / "sessions").glob("*.jsonl"))
    return path


@pytest.fixture
def classroom(tmp_path, lecture):
    k = _kernel(tmp_path, "anthropic/claude-sonnet-4-5")
    try:
        yield k
    finally:
        k.close()


def _answers(path) -> list[dict[str, Any]]:
    s = Session.open(path, readonly=True)
    try:
        return [e for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "assistant"]
    finally:
        s.close()


def _took_ms(entry: dict[str, Any]) -> int:
    return ms_from_iso(entry["timestamp"]) - entry["message"]["timestamp"]


def test_the_class_replays_the_lecture_at_its_pace_without_a_key(classroom, lecture):
    recorded = _answers(lecture)
    assert len(recorded) == 3  # the tool call, the answer quoting 42, the thanks
    plain = classroom.run(f"%%pi --session lecture\n{TOOL_CELL}", cell_id="c1")
    assert plain.error is not None and "no API key for anthropic" in plain.error["evalue"]

    first = classroom.run(f"%%pi --session lecture --replay --pace 2x\n{TOOL_CELL}", cell_id="c1")
    assert first.status == "ok", first.error
    assert "42" in first.data("text/markdown")[-1]
    second = classroom.run(f"%%pi --session lecture --replay --pace 2x\n{THANKS_CELL}", cell_id="c2")
    assert second.status == "ok", second.error

    replayed = _answers(lecture)[3:]
    assert [e["message"]["content"] for e in replayed] == [e["message"]["content"] for e in recorded]
    assert all(e["message"]["provider"] == "offline" and e["message"]["model"] == "typewriter" for e in replayed)
    # never faster than the recording at twice its speed (a busy machine only makes it slower)
    for was, now in zip(recorded, replayed, strict=True):
        assert _took_ms(now) >= 0.9 * _took_ms(was) / 2, (_took_ms(was), _took_ms(now))
    # a re-run is a sibling branch: the recording is kept as it was
    s = Session.open(lecture, readonly=True)
    users = [e for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "user"]
    assert len(users) == 4 and users[0]["parentId"] == users[2]["parentId"]
    # the python tool really ran in the class's kernel
    results = [e for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "toolResult"]
    assert len(results) == 2 and "42" in str(results[1]["message"]["content"])


def _messages_until(k: Kernel, msg_id: str, stop, timeout: float = 120) -> list[dict[str, Any]]:
    """iopub messages of ``msg_id`` (comm messages included) until ``stop(msg)`` is true."""
    out = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            msg = k.kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id and msg["msg_type"] != "comm_msg":
            continue
        out.append(msg)
        if stop(msg):
            return out
    raise AssertionError(f"timed out; last messages: {[m['msg_type'] for m in out[-8:]]}")


def _send(k: Kernel, comm_id: str, content: dict[str, Any]) -> None:
    k.kc.shell_channel.send(k.kc.session.msg("comm_msg", {"comm_id": comm_id, "data": {"method": "custom", "content": content}}))


def _waiting_step(msg: dict[str, Any]) -> bool:
    if msg["msg_type"] != "comm_msg":
        return False
    content = msg["content"]["data"].get("content") or {}
    items = [op.get("item") or {} for op in content.get("ops") or []] + list(content.get("items") or [])
    return any(i.get("step") and i.get("waiting") for i in items)


def test_step_mode_holds_before_the_tool_call_until_go_is_pressed(classroom, lecture):
    before = len(_answers(lecture))
    msg_id = classroom.send(f"%%pi --session lecture --replay --step --pace instant\n{TOOL_CELL}", cell_id="c1")
    opened = _messages_until(classroom, msg_id, lambda m: m["msg_type"] == "comm_open" and "transcript" in m["content"]["data"]["state"])
    comm_id = opened[-1]["content"]["comm_id"]
    _send(classroom, comm_id, {"type": "sync", "seq": 0})  # the view is drawn in a browser
    _messages_until(classroom, msg_id, _waiting_step)
    time.sleep(0.5)
    s = Session.open(lecture, readonly=True)
    results = [e for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "toolResult"]
    assert len(results) == 1  # held before the call: the tool has not run in class
    assert len(_answers(lecture)) == before
    _send(classroom, comm_id, {"type": "go"})
    rest = _messages_until(classroom, msg_id, lambda m: m["msg_type"] == "status" and m["content"]["execution_state"] == "idle")
    html = [m["content"]["data"]["text/html"] for m in rest if m["msg_type"] == "update_display_data"][-1]
    assert "Paused: The agent is about to call a tool. What will it do?" in html and "42" in html
    assert len(_answers(lecture)) == before + 2


def test_step_mode_with_no_browser_plays_through_and_says_so(classroom, lecture):
    run = classroom.run(f"%%pi --session lecture --replay --step --pace instant\n{TOOL_CELL}", cell_id="c1")
    assert run.status == "ok", run.error
    html = run.data("text/html")[-1]
    assert "no browser shows this cell, so the replay does not stop here" in html and "42" in html


def test_pace_and_step_outside_a_replay_are_one_line(classroom):
    bad = classroom.run("%%pi --session lecture --pace 2x\nHello", cell_id="c9")
    assert bad.error is not None and "--pace and --step apply to a replay" in bad.error["evalue"]
    assert "Traceback" not in bad.stderr
    worse = classroom.run("%%pi --session lecture --replay --pace fast\nHello", cell_id="c9")
    assert worse.error is not None and "--pace: 'fast' is not a speed" in worse.error["evalue"]
    grid = classroom.run("%%pi --session lecture --vary tone=a,b --replay --step\nHello {tone}", cell_id="c9")
    assert grid.error is not None and "apply to one cell's replay, not to a grid" in grid.error["evalue"]
