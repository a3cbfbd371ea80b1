"""The anthropic-messages provider, through the real ``anthropic`` SDK, against the local wire server."""

from __future__ import annotations

import json

import pytest
from wire.helpers import abort_mid_stream, collect, user_request, wire_model
from wire.server import anthropic_reply, http_error, raw_reply, redacted_block, sse, text_block, thinking_block, tool_use_block

from pi_jupyter.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from pi_jupyter.providers import LlmRequest, StreamOptions, ToolSpec, is_context_overflow

KEY = "sk-ant-test-abcdefghijklmnop"
READ = ToolSpec(
    name="read", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
)


def model(wire, **kw):
    kw.setdefault("reasoning", True)
    kw.setdefault("max_tokens", 64_000)
    return wire_model(wire, "anthropic-messages", **kw)


def opts(**kw):
    return StreamOptions(api_key=KEY, **kw)


def test_text_and_usage_with_cache_tokens(wire):
    usage = {"input_tokens": 100, "output_tokens": 50, "cache_read_input_tokens": 1000, "cache_creation_input_tokens": 200}
    wire.queue("anthropic", anthropic_reply([text_block("Bonjour tout le monde")], usage=usage, pieces=4))
    events, final = collect(model(wire), user_request("hi", system_prompt="Be brief."), opts())
    assert [e.type for e in events].count("text_delta") == 4
    assert final.text == "Bonjour tout le monde" and final.stop_reason == "stop"
    u = final.usage
    assert (u.input, u.output, u.cache_read, u.cache_write, u.total_tokens) == (100, 50, 1000, 200, 1350)
    expected = (100 * 3.0 + 50 * 15.0 + 1000 * 0.3 + 200 * 3.75) / 1e6
    assert u.cost.total == pytest.approx(expected)
    body = wire.requests[0].body
    assert wire.requests[0].path == "/v1/messages"
    assert body["system"] == [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}]
    assert body["thinking"] == {"type": "disabled"}  # a reasoning model with thinking off


def test_key_is_sent_and_never_leaks(wire):
    wire.queue("anthropic", http_error(401, f"invalid x-api-key {KEY}", kind="anthropic"))
    events, final = collect(model(wire), user_request(), opts())
    headers = wire.requests[0].headers
    assert headers.get("x-api-key") == KEY or headers.get("authorization") == f"Bearer {KEY}"
    assert final.stop_reason == "error" and final.error_message.startswith("401 invalid x-api-key")
    for e in events:
        assert KEY not in json.dumps(e.to_dict()) and KEY not in repr(e)


def test_signed_and_redacted_thinking_are_kept_and_replayed(wire):
    blocks = [thinking_block("Let me think about cats.", signature="SIG-abc"), redacted_block("OPAQUE-xyz"), text_block("Cats purr.")]
    wire.queue("anthropic", anthropic_reply(blocks))
    m = model(wire)
    events, final = collect(m, user_request("why do cats purr?"), opts(reasoning="medium"))
    body = wire.requests[0].body
    assert body["thinking"]["type"] == "enabled" and body["thinking"]["budget_tokens"] == 8192
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]
    assert "temperature" not in body
    assert "interleaved-thinking" in wire.requests[0].headers.get("anthropic-beta", "")
    signed, redacted, text = final.content
    assert isinstance(signed, ThinkingContent) and signed.thinking == "Let me think about cats." and signed.thinking_signature == "SIG-abc"
    assert isinstance(redacted, ThinkingContent) and redacted.redacted and redacted.thinking_signature == "OPAQUE-xyz"
    assert isinstance(text, TextContent) and text.text == "Cats purr."
    assert [e.type for e in events].count("thinking_start") == 2
    # next turn: both thinking blocks go back exactly as Anthropic needs them
    wire.queue("anthropic", anthropic_reply([text_block("ok")]))
    collect(m, LlmRequest(messages=[UserMessage.text("why do cats purr?"), final, UserMessage.text("more")]), opts(reasoning="medium"))
    assistant = wire.requests[1].body["messages"][1]
    assert assistant == {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Let me think about cats.", "signature": "SIG-abc"},
            {"type": "redacted_thinking", "data": "OPAQUE-xyz"},
            {"type": "text", "text": "Cats purr."},
        ],
    }


def test_thinking_from_another_model_is_dropped(wire):
    other = AssistantMessage(
        content=[
            ThinkingContent(thinking="secret plan", thinking_signature="S"),
            ThinkingContent(thinking="x", thinking_signature="R", redacted=True),
            TextContent(text="done"),
        ],
        api="openai-completions",
        provider="openai",
        model="gpt-test",
    )
    wire.queue("anthropic", anthropic_reply([text_block("ok")]))
    collect(model(wire), LlmRequest(messages=[UserMessage.text("a"), other, UserMessage.text("b")]), opts())
    assistant = wire.requests[0].body["messages"][1]
    # as pi 1.6 does: another model's thinking would read as part of the visible reply, and its signatures are not ours
    assert assistant["content"] == [{"type": "text", "text": "done"}]


def test_one_and_several_tool_calls(wire):
    wire.queue("anthropic", anthropic_reply([text_block("Reading."), tool_use_block("read", {"path": "a.txt"}, id="toolu_1")], pieces=4))
    events, final = collect(model(wire), user_request(tools=[READ]), opts())
    assert final.stop_reason == "toolUse"
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [("toolu_1", "read", {"path": "a.txt"})]
    assert len([e for e in events if e.type == "toolcall_delta"]) == 4
    tools = wire.requests[0].body["tools"]
    assert tools[0]["name"] == "read" and tools[0]["input_schema"]["required"] == ["path"]
    calls = [tool_use_block("read", {"path": "a.txt"}, id="toolu_a"), tool_use_block("read", {"path": "b.txt"}, id="toolu_b")]
    wire.queue("anthropic", anthropic_reply(calls))
    _, final = collect(model(wire), user_request(tools=[READ]), opts())
    assert [(c.id, c.arguments["path"]) for c in final.tool_calls] == [("toolu_a", "a.txt"), ("toolu_b", "b.txt")]


def test_tool_results_are_grouped_and_foreign_ids_normalized(wire):
    bad_id = "call_1|fc_abc+/=xyz"
    turn = AssistantMessage(
        content=[ToolCall(id=bad_id, name="read", arguments={"path": "a"}), ToolCall(id="call_2", name="read", arguments={"path": "b"})],
        api="openai-responses",
        provider="openai",
        model="gpt-5",
        stop_reason="toolUse",
    )
    results = [
        ToolResultMessage(tool_call_id=bad_id, tool_name="read", content=[TextContent(text="A")]),
        ToolResultMessage(tool_call_id="call_2", tool_name="read", content=[TextContent(text="B")], is_error=True),
    ]
    wire.queue("anthropic", anthropic_reply([text_block("ok")]))
    collect(model(wire), LlmRequest(messages=[UserMessage.text("go"), turn, *results]), opts())
    sent = wire.requests[0].body["messages"]
    assert [c["id"] for c in sent[1]["content"]] == ["call_1_fc_abc___xyz", "call_2"]
    assert sent[2]["role"] == "user"
    assert [(r["tool_use_id"], r["content"], r["is_error"]) for r in sent[2]["content"]] == [
        ("call_1_fc_abc___xyz", "A", False),
        ("call_2", "B", True),
    ]


@pytest.mark.parametrize(
    ("status", "message"),
    [(429, "Number of request tokens has exceeded your per-minute rate limit"), (500, "Internal server error"), (529, "Overloaded")],
)
def test_http_errors(wire, status, message):
    wire.queue("anthropic", http_error(status, message, kind="anthropic"))
    _, final = collect(model(wire), user_request(), opts())
    assert final.stop_reason == "error" and final.error_message == f"{status} {message}"
    assert len(wire.requests) == 1
    assert not is_context_overflow(final)


def test_context_overflow(wire):
    wire.queue("anthropic", http_error(400, "prompt is too long: 213462 tokens > 200000 maximum", kind="anthropic"))
    _, final = collect(model(wire), user_request(), opts())
    assert final.error_message == "400 prompt is too long: 213462 tokens > 200000 maximum"
    assert is_context_overflow(final)


def test_stream_cut_and_missing_message_stop(wire):
    wire.queue("anthropic", anthropic_reply([text_block("one two three four")], pieces=4).cut(5))
    _, final = collect(model(wire), user_request(), opts())
    assert final.stop_reason == "error" and "Connection error" in final.error_message
    assert final.text and final.text != "one two three four"
    wire.queue("anthropic", anthropic_reply([text_block("complete text")], stop=False))
    _, final = collect(model(wire), user_request(), opts())
    assert final.stop_reason == "error" and "message_stop" in final.error_message
    assert final.text == "complete text"


def test_error_event_mid_stream(wire):
    reply = anthropic_reply([text_block("partial answer")])
    reply.events = reply.events[:5] + [
        sse({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, event="error")
    ]
    wire.queue("anthropic", reply)
    _, final = collect(model(wire), user_request(), opts())
    assert final.stop_reason == "error"
    assert final.error_message == "Stream error from the server: overloaded_error: Overloaded"


def test_malformed_sse(wire):
    wire.queue("anthropic", raw_reply(b"event: message_start\ndata: {broken\n\n"))
    _, final = collect(model(wire), user_request(), opts())
    assert final.stop_reason == "error" and "Malformed stream" in final.error_message


def test_max_tokens_stop_and_refusal(wire):
    wire.queue("anthropic", anthropic_reply([text_block("long")], stop_reason="max_tokens"))
    _, final = collect(model(wire), user_request(), opts())
    assert final.stop_reason == "length"
    wire.queue("anthropic", anthropic_reply([text_block("no")], stop_reason="refusal"))
    _, final = collect(model(wire), user_request(), opts())
    assert final.stop_reason == "error" and "refusal" in final.error_message


def test_abort_mid_stream(wire):
    wire.queue("anthropic", anthropic_reply([text_block("a b c d e f g h i j")], pieces=10).slow(0.15))
    events = abort_mid_stream(model(wire), user_request(), opts())
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    final = events[-1].error
    assert final.stop_reason == "aborted" and final.text and final.text != "a b c d e f g h i j"
    assert wire.wait_for_disconnects(1)


def test_adaptive_thinking_for_newer_models(wire):
    wire.queue("anthropic", anthropic_reply([text_block("ok")]))
    collect(model(wire, id="claude-sonnet-4-6"), user_request(), opts(reasoning="high", temperature=0.5))
    body = wire.requests[0].body
    assert body["thinking"] == {"type": "adaptive"} and body["output_config"] == {"effort": "high"}
    assert "temperature" not in body
