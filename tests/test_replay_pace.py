"""Replay as a performance: the recorded pace from the file's own timestamps, a speed factor, step mode.

The schedule is checked through the provider's drift log (when each event was due and when it
went out), never against the wall clock's speed: every event is due at its recorded offset
divided by the pace, and none goes out before it is due.
"""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path

import pytest

from pi_jupyter import Agent, Session
from pi_jupyter.messages import UserMessage
from pi_jupyter.providers import LlmRequest, ReplayProvider, StreamOptions
from pi_jupyter.providers.base import AbortSignal
from pi_jupyter.providers.pace import StepGate, parse_pace

T0 = 1_765_233_665_000  # ms; the recording's first request


def _iso(ms: int) -> str:
    from datetime import datetime, timezone

    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def write_recording(path: Path, replies: list[dict], *, question: str = "What is in notes.txt?") -> Path:
    """A pi-style file: one question, then each reply ``{"content", "took_ms", "stop", "times"}`` as a sibling answer."""
    lines = [{"type": "session", "version": 3, "id": "rec-1", "timestamp": _iso(T0 - 1000), "cwd": str(path.parent)}]
    n = 0
    for reply in replies:
        n += 1
        start = T0 + n * 100_000
        user = {"role": "user", "content": [{"type": "text", "text": question}], "timestamp": start}
        lines.append({"type": "message", "id": f"u{n}", "parentId": None, "timestamp": _iso(start), "message": user})
        message = {
            "role": "assistant",
            "content": reply["content"],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {"input": 10, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 30},
            "stopReason": reply.get("stop", "stop"),
        }
        entry = {"type": "message", "id": f"a{n}", "parentId": f"u{n}", "message": message}
        if reply.get("times", True):
            message["timestamp"] = start + 5
            entry["timestamp"] = _iso(start + 5 + reply["took_ms"])
        lines.append(entry)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


TEXT = [{"type": "text", "text": "The note says to buy milk, bread, eggs and some coffee before the weekend."}]
TOOL = [
    {"type": "text", "text": "Let me read it."},
    {"type": "toolCall", "id": "toolu_1", "name": "read", "arguments": {"path": "notes.txt"}},
]


async def _play(provider: ReplayProvider, request: LlmRequest, options: StreamOptions | None = None) -> list:
    return [e async for e in provider.stream(provider.model, request, options or StreamOptions())]


def _request(text: str = "What is in notes.txt?") -> LlmRequest:
    return LlmRequest(messages=[UserMessage.text(text)])


@pytest.mark.parametrize(("text", "factor"), [("2x", 2.0), ("0.5x", 0.5), ("1", 1.0), (3, 3.0), ("instant", None), (None, None)])
def test_pace_reads_a_speed_factor_or_instant(text, factor):
    assert parse_pace(text) == factor


@pytest.mark.parametrize("text", ["fast", "-2x", "nanx", True])
def test_a_bad_pace_is_one_line(text):
    with pytest.raises(ValueError, match=r"^pace: .* is not a speed; use e.g. 1x, 2x, 0.5x or instant$"):
        parse_pace(text)


def test_a_reply_streams_over_its_recorded_time_divided_by_the_pace(tmp_path):
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TEXT, "took_ms": 2000}])
    log: list[tuple[float, float]] = []
    events = asyncio.run(_play(ReplayProvider(path, pace="4x", drift_log=log), _request()))
    assert events[-1].type == "done" and events[-1].message.text == TEXT[0]["text"]
    deltas = [e for e in events if e.type == "text_delta"]
    assert len(deltas) >= 5 and len(log) >= len(deltas)
    start = log[0][0]
    due = [target - start for target, _ in log]
    assert due == sorted(due)
    assert due[-1] == pytest.approx(2.0 / 4, abs=1e-6)  # the recorded 2 s at 4x
    assert all(actual >= target for target, actual in log)  # never ahead of the recording


def test_the_pace_can_come_from_the_model(tmp_path):
    from pi_jupyter.providers import replay_model

    path = write_recording(tmp_path / "rec.jsonl", [{"content": TEXT, "took_ms": 1000}])
    log: list[tuple[float, float]] = []
    provider = ReplayProvider(path, drift_log=log)
    events = asyncio.run(_collect(provider, replay_model(path, pace="10x"), _request()))
    assert events[-1].type == "done"
    assert log[-1][0] - log[0][0] == pytest.approx(0.1, abs=1e-6)
    log.clear()
    asyncio.run(_collect(provider, replay_model(path), _request()))  # instant: nothing waits
    assert log == []


async def _collect(provider, model, request):
    return [e async for e in provider.stream(model, request, StreamOptions())]


def test_a_reply_without_times_plays_at_the_default_pace_and_says_so(tmp_path):
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TEXT, "took_ms": 0, "times": False}])
    notes: list[str] = []
    log: list[tuple[float, float]] = []
    events = asyncio.run(_play(ReplayProvider(path, pace="2x", on_note=notes.append, drift_log=log), _request()))
    assert events[-1].type == "done"
    chars = len(TEXT[0]["text"])
    assert log[-1][0] - log[0][0] == pytest.approx(chars / 200 / 2, abs=1e-6)
    assert notes == ["replay: rec.jsonl has no times for some replies; they play at the default pace (200 characters a second)"]


def test_a_replayed_copy_keeps_the_original_performances_timing(tmp_path):
    # the recording was replayed once into itself (fast): the copy is the latest, the timing is the original's
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TEXT, "took_ms": 3000}, {"content": TEXT, "took_ms": 30}])
    log: list[tuple[float, float]] = []
    asyncio.run(_play(ReplayProvider(path, pace="10x", drift_log=log), _request()))
    assert log[-1][0] - log[0][0] == pytest.approx(0.3, abs=1e-6)


def test_step_mode_holds_before_a_tool_call_until_go(tmp_path):
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TOOL, "took_ms": 200, "stop": "toolUse"}])
    gate = StepGate()
    paused: list[str] = []
    gate.on_pause(lambda p: paused.append(p.kind))

    async def main():
        seen: list[str] = []
        provider = ReplayProvider(path, pace="instant", step=gate)

        async def play():
            async for e in provider.stream(provider.model, _request(), StreamOptions()):
                seen.append(e.type)

        task = asyncio.create_task(play())
        while gate.paused is None:
            await asyncio.sleep(0.01)
        held = list(seen)
        await asyncio.sleep(0.05)
        assert seen == held  # nothing more while held
        gate.go()
        await task
        return held, seen

    held, seen = asyncio.run(main())
    assert "text_end" in held and "toolcall_start" not in held  # the text is out, the call is not
    assert seen[-1] == "done" and "toolcall_end" in seen
    assert paused == ["tool_call"]


def test_step_mode_holds_at_a_branch_point_of_the_recording(tmp_path):
    other = [{"type": "text", "text": "A different answer."}]
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TEXT, "took_ms": 100}, {"content": other, "took_ms": 100}])
    gate = StepGate()
    pauses = []
    gate.on_pause(lambda p: (pauses.append(p), gate.go()))
    events = asyncio.run(_play(ReplayProvider(path, step=gate), _request()))
    assert events[-1].message.text == "A different answer."  # the latest
    assert [p.kind for p in pauses] == ["branch_point"]
    assert "another answer here" in pauses[0].text


def test_stop_during_a_pause_ends_the_reply_as_aborted(tmp_path):
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TOOL, "took_ms": 200, "stop": "toolUse"}])
    gate = StepGate()
    signal = AbortSignal()
    gate.on_pause(lambda p: signal.abort())
    events = asyncio.run(_play(ReplayProvider(path, step=gate), _request(), StreamOptions(signal=signal)))
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert not any(e.type == "toolcall_start" for e in events)


def test_an_agent_on_a_paced_replay_runs_the_recorded_tool_call(tmp_path):
    (tmp_path / "notes.txt").write_text("buy milk\n")
    rec = tmp_path / "rec.jsonl"
    lines = write_recording(rec, [{"content": TOOL, "took_ms": 300, "stop": "toolUse"}]).read_text().splitlines()
    result = {"role": "toolResult", "toolCallId": "toolu_1", "toolName": "read", "content": [{"type": "text", "text": "buy milk\n"}]}
    final = json.loads(lines[-1])
    final["message"] = {**final["message"], "content": [{"type": "text", "text": "It says: buy milk."}], "stopReason": "stop"}
    final.update(id="a9", parentId="t1")
    extra = [{"type": "message", "id": "t1", "parentId": "a1", "timestamp": json.loads(lines[-1])["timestamp"], "message": result}, final]
    rec.write_text("\n".join([*lines, *map(json.dumps, extra)]) + "\n")
    gate = StepGate()
    gate.on_pause(lambda p: gate.go())
    player = ReplayProvider(rec, pace="20x", step=gate)
    s = Session.open(tmp_path / "class.jsonl", create=True, cwd=str(tmp_path))
    agent = Agent(s, model=player.model, stream=player.stream, tools=["read"], cwd=str(tmp_path))
    out = asyncio.run(agent.prompt("What is in notes.txt?"))
    assert out.text == "It says: buy milk."
    results = [m for m in s.context().messages if m.role == "toolResult"]
    assert results and "buy milk" in results[0].text  # the tool really ran in the class's session


def test_a_pause_in_step_mode_moves_the_rest_of_the_reply_later_by_the_pause(tmp_path):
    """Step mode holds before the tool call for 0.3 s: the rest of the reply then plays at its recorded pace from
    the moment Go is pressed (the schedule moves later by the pause), not at once to catch up."""
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TOOL, "took_ms": 800, "stop": "toolUse"}])
    gate = StepGate()
    log: list[tuple[float, float]] = []
    went: list[float] = []

    async def main():
        provider = ReplayProvider(path, pace="1x", step=gate, drift_log=log)
        task = asyncio.create_task(_play(provider, _request()))
        while gate.paused is None:
            await asyncio.sleep(0.01)
        before = len(log)
        await asyncio.sleep(0.3)
        went.append(time.monotonic())
        gate.go()
        events = await task
        return before, events

    before, events = asyncio.run(main())
    assert events[-1].type == "done"
    after = log[before:]
    assert after, "the tool call's pieces are paced after the pause"
    start = log[0][0]
    paused_at = log[before - 1][0] - start  # where in the recording the pause came
    for target, _ in after:
        assert target >= went[0] - 0.02  # nothing is due before Go was pressed
        assert target - start >= paused_at + 0.3 - 0.02  # every later piece moved by the time held


def test_a_go_pressed_early_passes_one_pause_only(tmp_path):
    """Go pressed before the replay reached its first pause lets that pause through; the next one holds again."""
    path = write_recording(tmp_path / "rec.jsonl", [{"content": TOOL, "took_ms": 100, "stop": "toolUse"}])
    gate = StepGate()
    gate.go()  # early: kept for the first pause

    async def main():
        provider = ReplayProvider(path, pace="instant", step=gate)
        first = await _play(provider, _request())  # the first pause is passed at once
        task = asyncio.create_task(_play(provider, _request()))
        while gate.paused is None and not task.done():
            await asyncio.sleep(0.01)
        held = gate.paused is not None and not task.done()
        gate.go()
        return first, held, await task

    first, held, second = asyncio.run(main())
    assert first[-1].type == "done" and second[-1].type == "done"
    assert held  # the second replay stopped at its tool call until Go
