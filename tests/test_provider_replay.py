"""The replay provider: recorded assistant messages served for the same conversation."""

from __future__ import annotations

import pytest
from wire.helpers import collect

from pi_jupyter.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UserMessage
from pi_jupyter.providers import LlmRequest, ReplayProvider, replay_model
from pi_jupyter.session import Session


def reply(*blocks, stop="stop", error=None):
    return AssistantMessage(
        content=list(blocks),
        api="anthropic-messages",
        provider="anthropic",
        model="claude-sonnet-4-5",
        usage=Usage(input=120, output=30, total_tokens=150),
        stop_reason=stop,
        error_message=error,
    )


@pytest.fixture
def recording(tmp_path):
    """A session recorded with a real model: a tool turn, a retried failure, and a sibling branch."""
    path = tmp_path / "recorded.jsonl"
    s = Session.create(path=path, cwd=str(tmp_path))
    u1 = UserMessage.text("What is in notes.txt?")
    s.append_message(u1)
    a1 = reply(
        ThinkingContent(thinking="I should read it.", thinking_signature="SIG1"),
        ToolCall(id="toolu_1", name="read", arguments={"path": "notes.txt"}),
        stop="toolUse",
    )
    s.append_message(a1)
    tr = ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[TextContent(text="buy milk")])
    s.append_message(tr)
    s.append_message(reply(stop="error", error="429 rate limited"))
    final = reply(TextContent(text="The note says: buy milk."))
    s.append_message(final)
    after_first = s.leaf_id
    s.append_message(UserMessage.text("Thanks!"))
    s.append_message(reply(TextContent(text="You're welcome.")))
    # a sibling branch from the first user message, re-asked differently
    s.checkout(after_first)
    s.append_message(UserMessage.text("Summarize it in French."))
    s.append_message(reply(TextContent(text="Acheter du lait.")))
    s.close()
    return path, u1, tr


def test_replays_each_turn_of_the_recorded_conversation(recording):
    path, u1, tr = recording
    model = replay_model(path)
    events, first = collect(model, LlmRequest(messages=[u1]))
    assert first.stop_reason == "toolUse"
    assert first.provider == "anthropic" and first.model == "claude-sonnet-4-5"  # as recorded
    assert first.content[0].thinking == "I should read it." and first.content[0].thinking_signature == "SIG1"
    assert [(c.id, c.arguments) for c in first.tool_calls] == [("toolu_1", {"path": "notes.txt"})]
    assert "toolcall_delta" in [e.type for e in events] and "thinking_delta" in [e.type for e in events]
    assert first.usage.input == 120 and first.usage.cost.total == 0
    events, second = collect(model, LlmRequest(messages=[u1, first, tr]))
    assert second.text == "The note says: buy milk."  # the success, not the recorded 429
    assert [e.type for e in events].count("text_delta") > 1
    _, third = collect(model, LlmRequest(messages=[u1, first, tr, second, UserMessage.text("Summarize it in French.")]))
    assert third.text == "Acheter du lait."
    _, fourth = collect(model, LlmRequest(messages=[u1, first, tr, second, UserMessage.text("Thanks!")]))
    assert fourth.text == "You're welcome."


def test_tool_output_that_changed_still_matches_by_tool_name(recording):
    path, u1, _ = recording
    model = replay_model(path)
    _, first = collect(model, LlmRequest(messages=[u1]))
    other = ToolResultMessage(tool_call_id="toolu_1", tool_name="read", content=[TextContent(text="buy oat milk")])
    _, second = collect(model, LlmRequest(messages=[u1, first, other]))
    assert second.text == "The note says: buy milk."


def test_divergence_names_where_and_both_sides(recording):
    path, u1, tr = recording
    model = replay_model(path)
    _, final = collect(model, LlmRequest(messages=[UserMessage.text("What is 3+3?")]))
    assert final.stop_reason == "error"
    assert "recorded.jsonl" in final.error_message and "at message 1" in final.error_message
    assert "'What is 3+3?'" in final.error_message and "'What is in notes.txt?'" in final.error_message
    _, first = collect(model, LlmRequest(messages=[u1]))
    _, second = collect(model, LlmRequest(messages=[u1, first, tr]))
    _, final = collect(
        model,
        LlmRequest(messages=[u1, first, tr, second, UserMessage.text("Thanks!"), reply(TextContent(text="x")), UserMessage.text("More?")]),
    )
    assert "no reply" in final.error_message and "'More?'" in final.error_message


def test_summaries_come_from_recorded_compactions(tmp_path):
    path = tmp_path / "c.jsonl"
    s = Session.create(path=path, cwd=str(tmp_path))
    first = s.append_message(UserMessage.text("Remember: the password hint is 'blue'."))
    s.append_message(reply(TextContent(text="Noted.")))
    kept = s.append_message(UserMessage.text("Next question."))
    s.append_message(reply(TextContent(text="Go on.")))
    s.append_compaction("## Goal\n- hint is blue\n\n<read-files>\na.txt\n</read-files>", kept, 5000)
    s.close()
    assert first
    prompt = (
        "<conversation>\n[User]: Remember: the password hint is 'blue'.\n\n[Assistant]: Noted.\n</conversation>\n\n"
        "Use this EXACT format: ## Goal"
    )
    request = LlmRequest(system_prompt="You are a context summarization assistant.", messages=[UserMessage.text(prompt)])
    _, final = collect(ReplayProvider(path).model, request)
    assert final.text == "## Goal\n- hint is blue"  # file lists are added again by compaction itself


def test_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError, match="replay: no session file"):
        ReplayProvider(tmp_path / "nope.jsonl")


def test_unknown_recorded_stop_reason_is_a_clear_error(tmp_path):
    path = tmp_path / "edited.jsonl"
    s = Session.create(path=path, cwd=str(tmp_path))
    question = UserMessage.text("Hello?")
    s.append_message(question)
    s.append_message(reply(TextContent(text="Hi.")))
    s.close()
    text = path.read_text()
    assert text.count('"stopReason":"stop"') == 1
    path.write_text(text.replace('"stopReason":"stop"', '"stopReason":"finished"'))  # edited by hand
    _, final = collect(replay_model(path), LlmRequest(messages=[question]))
    assert final.stop_reason == "error"
    assert final.error_message == "replay: the recorded reply has an unknown stopReason 'finished'"
