"""The exported page plays a recorded session in headless Chromium: no kernel, no network, at its recorded pace.

Pages are written by ``pi-jupyter export`` from session files whose timestamps are set by the
test (the way pi writes them: an assistant message's ``timestamp`` when its request started,
its entry's when it was written), and from the real pi sessions of the fixtures.
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from pi_jupyter.cli.main import main

sys.path.insert(0, str(Path(__file__).resolve().parent))
from offline_page import offline_page  # noqa: E402

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

ARTIFACTS = Path(__file__).resolve().parents[2] / "artifacts"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pi"
T0 = 1_765_233_665_000
FINAL = "The rate times the batch is 0.8: too large."
ANSWER = "The loss diverges because the learning rate is too large for the batch size. Let me check the numbers."


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def _msg(eid, parent, at, message, started=None):
    if started is not None:
        message = {**message, "timestamp": started}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": _iso(at), "message": message}


def _assistant(content, stop="stop"):
    return {"role": "assistant", "content": content, "api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5",
            "usage": {"input": 10, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 30}, "stopReason": stop}  # fmt: skip


def lecture(path: Path, *, timed: bool = True, second_branch: bool = False, title: str = "lecture") -> Path:
    """A prompt, an answer that calls a tool (3 s), its result (1 s later), the final answer (2 s); optionally a sibling answer."""
    call = {"type": "toolCall", "id": "toolu_1", "name": "python", "arguments": {"code": "print(0.1 * 8)"}}
    lines = [
        {"type": "session", "version": 3, "id": "lecture-1", "timestamp": _iso(T0 - 500), "cwd": str(path.parent)},
        _msg("u1", None, T0, {"role": "user", "content": [{"type": "text", "text": "Why does the loss diverge?"}], "timestamp": T0}),
        _msg("a1", "u1", T0 + 3000, _assistant([{"type": "text", "text": ANSWER}, call], "toolUse"), started=T0 + 10),
        _msg(
            "t1",
            "a1",
            T0 + 4000,
            {
                "role": "toolResult",
                "toolCallId": "toolu_1",
                "toolName": "python",
                "content": [{"type": "text", "text": "0.8\n"}],
                "isError": False,
            },
        ),  # fmt: skip
        _msg("a2", "t1", T0 + 6100, _assistant([{"type": "text", "text": FINAL}]), started=T0 + 4100),
    ]
    if second_branch:
        other = _assistant([{"type": "text", "text": "Another take: lower the rate."}])
        lines.append(_msg("a3", "t1", T0 + 9000, other, started=T0 + 8000))
        lines.append({"type": "session_info", "id": "n1", "parentId": "a3", "timestamp": _iso(T0 + 9100), "name": title})
    if not timed:
        for line in lines[1:]:
            line.pop("timestamp", None)
            if isinstance(line.get("message"), dict):
                line["message"].pop("timestamp", None)
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    return path


@contextlib.contextmanager
def exported(browser, session: Path, tmp_path: Path) -> Iterator[Any]:
    """The page ``pi-jupyter export`` writes for ``session``, open in Chromium; it must fetch nothing and raise nothing."""
    out = tmp_path / (session.stem + ".html")
    assert main(["export", str(session), "-o", str(out)]) == 0
    with offline_page(browser, out) as page:
        page.wait_for_function("() => !!window.piPlayback")
        yield page


SHOWN = "(id) => { const e = document.getElementById('e-' + id); return e && getComputedStyle(e).display !== 'none' ? e.innerText : ''; }"


def _text(page, entry: str) -> str:
    return page.evaluate(SHOWN, entry)


def test_the_page_streams_the_branch_at_its_pace_and_step_mode_stops_before_the_tool_call(browser, tmp_path):
    with exported(browser, lecture(tmp_path / "lecture.jsonl"), tmp_path) as page:
        full = page.locator("#transcript").inner_text()
        assert page.evaluate("() => window.piPlayback.length()") == pytest.approx(6100, abs=1)  # 0.01 + 2.99 + 1 + 0.1 + 2 s
        page.check(".pb-stepmode input")
        page.select_option(".pb-speed", "1")
        page.click(".pb-play")
        # the prompt is shown at once, the answer streams: part of its text, then more, never all at once
        partial = "(end) => { const t = document.getElementById('e-a1').innerText; return t.includes('The loss') && !t.includes(end); }"
        page.wait_for_function(partial, arg=ANSWER[-20:])
        assert "Why does the loss diverge?" in _text(page, "u1")
        # held before the tool call: the question to the class, the card not shown yet
        page.wait_for_function("() => window.piPlayback.state() === 'held'", timeout=20000)
        assert "The agent is about to call a tool. What will it do?" in page.locator(".pb-msg").inner_text()
        assert ANSWER in _text(page, "a1") and "print(0.1 * 8)" not in _text(page, "a1")
        assert _text(page, "a2") == ""
        page.screenshot(path=str(ARTIFACTS / "playback_step_held.png"))
        page.click(".pb-go")
        # the card appears running; its result comes in a second later (at the recorded 1x)
        page.wait_for_function("() => document.querySelector('#e-a1 details.pi-tool.pb-running') !== null")
        assert "0.8" not in _text(page, "a1")
        came = "() => !document.querySelector('#e-a1 .pb-running') && document.getElementById('e-a1').innerText.includes('0.8')"
        page.wait_for_function(came)
        page.wait_for_function("() => window.piPlayback.state() === 'ended'", timeout=20000)
        assert "too large" in _text(page, "a2")
        page.screenshot(path=str(ARTIFACTS / "playback_ended.png"))
        # "Show all" gives the page back exactly as it was
        page.click(".pb-done")
        assert page.locator("#transcript").inner_text() == full


def test_pause_step_and_speed(browser, tmp_path):
    with exported(browser, lecture(tmp_path / "lecture.jsonl"), tmp_path) as page:
        page.click(".pb-step")  # one event: the prompt
        assert page.evaluate("() => window.piPlayback.state()") == "paused"
        assert "Why does the loss diverge?" in _text(page, "u1") and _text(page, "a1") == ""
        page.click(".pb-step")  # the next: the answer starts
        page.click(".pb-step")  # then it is finished before the tool's result comes in
        assert ANSWER in _text(page, "a1")
        page.select_option(".pb-speed", "10")
        page.click(".pb-play")
        page.wait_for_function("() => window.piPlayback.state() === 'ended'", timeout=20000)
        assert "too large" in _text(page, "a2")


def test_a_branch_point_holds_in_step_mode(browser, tmp_path):
    with exported(browser, lecture(tmp_path / "branchy.jsonl", second_branch=True), tmp_path) as page:
        page.evaluate("() => window.piPlayback.play({speed: 20, stepMode: true})")
        page.wait_for_function("() => window.piPlayback.state() === 'held'")
        page.click(".pb-go")  # past the tool call
        at_branch = "() => window.piPlayback.state() === 'held' && document.querySelector('.pb-msg').innerText.includes('branch')"
        page.wait_for_function(at_branch)
        assert "A branch point: another branch continues from here" in page.locator(".pb-msg").inner_text()
        page.click(".pb-go")
        page.wait_for_function("() => window.piPlayback.state() === 'ended'")
        assert "Another take" in _text(page, "a3")


def test_a_session_without_times_plays_at_the_default_pace_and_says_so(browser, tmp_path):
    with exported(browser, lecture(tmp_path / "untimed.jsonl", timed=False), tmp_path) as page:
        page.evaluate("() => window.piPlayback.play({speed: 50})")
        assert "have no times in the session file: they play at a default pace" in page.locator(".pb-msg").inner_text()
        page.wait_for_function("() => window.piPlayback.state() === 'ended'")
        assert "too large" in _text(page, "a2")


def test_hostile_text_does_not_stop_the_player(browser, tmp_path):
    # in the session's name, a prompt, an answer and a tool's output; the player's own data holds ids and times only
    hostile = "</script><script>alert(1)</script><!--<script> <img src=x onerror=alert(2)> </style>"
    session = lecture(tmp_path / "hostile.jsonl", second_branch=True, title=hostile)
    session.write_text(session.read_text().replace("Why does the loss diverge?", hostile.replace('"', '\\"')).replace("0.8\\n", hostile))
    with exported(browser, session, tmp_path) as page:
        page.evaluate("() => window.piPlayback.play({speed: 50})")
        page.wait_for_function("() => window.piPlayback.state() === 'ended'")
        assert "alert(1)" in _text(page, "u1")  # shown as text


def test_a_real_pi_session_plays_through(browser, tmp_path):
    with exported(browser, FIXTURES / "large-session.jsonl", tmp_path) as page:
        length = page.evaluate("() => window.piPlayback.length()")
        assert length > 600_000  # more than ten minutes of recorded work on the shown branch
        page.evaluate(f"() => window.piPlayback.play({{speed: {length / 8000}, log: true}})")
        page.wait_for_function("() => window.piPlayback.position() > 0.3 * window.piPlayback.length()", timeout=60000)
        page.screenshot(path=str(ARTIFACTS / "playback_pi_session.png"))
        page.wait_for_function("() => window.piPlayback.state() === 'ended'", timeout=120000)
        log = page.evaluate("() => window.piPlayback.log()")
        assert len(log) > 500 and all(shown >= due - 20 for due, shown in log)  # never ahead of the recording
