"""Which recorded reply replay serves: the conversation, then what the variant changed, then the latest.

A grid over thinking levels replayed from its recording must give each level its own recorded
answer (its token counts, its thinking); a recording that lacks the requested variant is served
the nearest one and says so; of several recorded replies to the same request the latest wins.
"""

from __future__ import annotations

import asyncio

from wire.helpers import collect

from pi_jupyter import Session
from pi_jupyter.experiment import experiment
from pi_jupyter.messages import AssistantMessage, TextContent, Usage, UserMessage
from pi_jupyter.providers import LlmRequest, ReplayProvider, StreamOptions, replay_model

QUESTION = "Which region sold most?"


def reply(text: str, output: int, model: str = "claude-sonnet-4-5") -> AssistantMessage:
    return AssistantMessage(
        content=[TextContent(text=text)],
        api="anthropic-messages",
        provider="anthropic",
        model=model,
        usage=Usage(input=100, output=output, total_tokens=100 + output),
        stop_reason="stop",
    )


def test_a_grid_over_thinking_levels_replays_each_levels_own_answer(tmp_path):
    recorded = Session.open(tmp_path / "recorded.jsonl", create=True, cwd=str(tmp_path))
    original = asyncio.run(experiment(recorded, QUESTION, model="offline/echo", vary={"thinking": ["off", "medium"]}))
    by_level = {r.values["thinking"]: r for r in original.rows}
    assert by_level["off"].tokens_out != by_level["medium"].tokens_out  # the offline model thinks at "medium"
    recorded.close()

    again = Session.open(tmp_path / "again.jsonl", create=True, cwd=str(tmp_path))
    model = f"replay/{tmp_path / 'recorded.jsonl'}"
    result = asyncio.run(experiment(again, QUESTION, vary={"model": [model], "thinking": ["off", "medium"]}))
    for row in result.rows:
        assert row.state == "done"
        want = by_level[row.values["thinking"]]
        assert (row.tokens_in, row.tokens_out) == (want.tokens_in, want.tokens_out), row.values
        thought = [m for m in again.context(row.leaf).messages if m.role == "assistant"][-1].thinking
        assert bool(thought) == (row.values["thinking"] == "medium")


def _recording(tmp_path, *answers: tuple[str, str, int]) -> tuple[str, UserMessage]:
    """One question answered once per ``(thinking level, text, output tokens)``, each a sibling branch, in that order."""
    path = tmp_path / "recorded.jsonl"
    s = Session.create(path=path, cwd=str(tmp_path))
    question = UserMessage.text(QUESTION)
    for level, text, output in answers:
        s.checkout(None)
        s.append_thinking_level_change(level)
        s.append_message(question)
        s.append_message(reply(text, output))
    s.close()
    return str(path), question


def test_a_request_at_a_level_the_recording_has_gets_that_levels_reply(tmp_path):
    path, question = _recording(tmp_path, ("high", "North, after some thought.", 900), ("off", "North.", 3))
    _, high = collect(replay_model(path), LlmRequest(messages=[question]), StreamOptions(reasoning="high"))
    _, off = collect(replay_model(path), LlmRequest(messages=[question]), StreamOptions())
    assert (high.text, high.usage.output) == ("North, after some thought.", 900)
    assert (off.text, off.usage.output) == ("North.", 3)


def test_a_level_the_recording_lacks_is_served_the_nearest_and_says_so(tmp_path):
    path, question = _recording(tmp_path, ("off", "North.", 3))
    notes: list[str] = []
    provider = ReplayProvider(path, on_note=notes.append)
    _, final = collect(provider.model, LlmRequest(messages=[question]), StreamOptions(reasoning="medium"))
    # the registry's provider is another object: ask this one directly
    events = asyncio.run(_events(provider, LlmRequest(messages=[question]), StreamOptions(reasoning="medium")))
    assert events[-1].type == "done" and events[-1].message.text == "North."
    assert len(notes) == 1
    assert "recorded.jsonl" in notes[0] and "thinking level 'medium'" in notes[0] and "'off'" in notes[0]
    assert notes == provider.notes
    assert final.text == "North."


async def _events(provider, request, options):
    return [e async for e in provider.stream(provider.model, request, options)]


def test_of_duplicate_recordings_the_latest_is_served(tmp_path):
    path, question = _recording(tmp_path, ("off", "First answer.", 5), ("off", "Second answer.", 6), ("off", "Third answer.", 7))
    s = Session.open(path)
    first_leaf = [e["id"] for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "assistant"][0]
    s.checkout(first_leaf)  # the recording's current branch is the earliest: the latest still wins
    s.close()
    _, final = collect(replay_model(path), LlmRequest(messages=[question]))
    assert final.text == "Third answer." and final.usage.output == 7


def test_the_latest_of_the_matching_variant_wins_over_a_later_other_variant(tmp_path):
    path, question = _recording(tmp_path, ("medium", "Medium one.", 50), ("medium", "Medium two.", 60), ("off", "Off, recorded last.", 4))
    _, final = collect(replay_model(path), LlmRequest(messages=[question]), StreamOptions(reasoning="medium"))
    assert final.text == "Medium two."


def test_the_model_a_request_names_picks_that_models_reply(tmp_path):
    path = tmp_path / "two-models.jsonl"
    s = Session.create(path=path, cwd=str(tmp_path))
    question = UserMessage.text(QUESTION)
    for model in ("claude-sonnet-4-5", "claude-opus-4-5"):
        s.checkout(None)
        s.append_message(question)
        s.append_message(reply(f"Answered by {model}.", 10, model=model))
    s.close()
    provider = ReplayProvider(path)
    sonnet = provider.model.model_copy(update={"provider": "anthropic", "id": "claude-sonnet-4-5", "api": "anthropic-messages"})
    events = asyncio.run(_events_for(provider, sonnet, LlmRequest(messages=[question])))
    assert events[-1].message.text == "Answered by claude-sonnet-4-5."


async def _events_for(provider, model, request):
    return [e async for e in provider.stream(model, request, StreamOptions())]
