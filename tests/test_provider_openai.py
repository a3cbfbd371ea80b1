"""The openai-completions provider, through the real ``openai`` SDK, against the local wire server."""

from __future__ import annotations

import asyncio
import json

import pytest
from wire.helpers import abort_mid_stream, acollect, collect, user_request, wire_model
from wire.server import http_error, openai_reply, raw_reply, tool_call

from pi_jupyter.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, Usage, UserMessage
from pi_jupyter.providers import AbortSignal, LlmRequest, StreamOptions, ToolSpec, is_context_overflow, openai_compatible, stream

KEY = "sk-test-abcdefghijklmnop"
READ = ToolSpec(
    name="read", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
)


def opts(**kw):
    return StreamOptions(api_key=KEY, **kw)


def test_text_streams_in_deltas_into_one_partial_message(wire):
    wire.queue("openai", openai_reply("Hello there, general Kenobi", pieces=4))
    events, final = collect(wire_model(wire), user_request("hi"), opts())
    types = [e.type for e in events]
    assert types[0] == "start" and types[-1] == "done"
    assert types.count("text_delta") == 4
    assert types.index("text_start") < types.index("text_delta") < types.index("text_end")
    assert final.text == "Hello there, general Kenobi"
    assert final.stop_reason == "stop" and final.error_message is None
    assert final.api == "openai-completions" and final.provider == "openai" and final.model == "gpt-test"
    # every event carries the same partial object, updated in place
    partials = {id(e.partial) for e in events if hasattr(e, "partial")}
    assert partials == {id(final)}
    deltas = "".join(e.delta for e in events if e.type == "text_delta")
    assert deltas == final.text
    end = next(e for e in events if e.type == "text_end")
    assert end.content == final.text


def test_request_carries_system_prompt_tools_key_and_options(wire):
    wire.queue("openai", openai_reply("ok"))
    model = wire_model(wire)
    request = user_request("what is in a.txt?", system_prompt="You are terse.", tools=[READ])
    collect(model, request, opts(max_tokens=123, temperature=0.2))
    [sent] = wire.requests
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert body["model"] == "gpt-test" and body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0] == {"role": "system", "content": "You are terse."}
    assert body["messages"][1] == {"role": "user", "content": [{"type": "text", "text": "what is in a.txt?"}]}
    assert body["max_completion_tokens"] == 123 and body["temperature"] == 0.2
    assert body["tools"][0]["function"]["name"] == "read"
    assert body["tools"][0]["function"]["parameters"]["required"] == ["path"]


def test_usage_with_cached_tokens_and_cost(wire):
    usage = {"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 400}}
    wire.queue("openai", openai_reply("priced", usage=usage))
    _, final = collect(wire_model(wire), user_request(), opts())
    u = final.usage
    # pi's input excludes the cached part of the prompt
    assert (u.input, u.cache_read, u.cache_write, u.output, u.total_tokens) == (600, 400, 0, 200, 1200)
    assert u.cost.input == pytest.approx(600 * 3.0 / 1e6)
    assert u.cost.cache_read == pytest.approx(400 * 0.3 / 1e6)
    assert u.cost.output == pytest.approx(200 * 15.0 / 1e6)
    assert u.cost.total == pytest.approx(u.cost.input + u.cost.cache_read + u.cost.output)


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_fields_become_thinking_and_are_sent_back(wire, field):
    wire.queue("openai", openai_reply("The answer is 4.", reasoning="2 plus 2 is 4", reasoning_field=field))
    model = wire_model(wire, reasoning=True)
    events, final = collect(model, user_request("2+2?"), opts(reasoning="medium"))
    thinking = [b for b in final.content if isinstance(b, ThinkingContent)]
    assert [t.thinking for t in thinking] == ["2 plus 2 is 4"]
    assert thinking[0].thinking_signature == field
    assert "thinking_delta" in [e.type for e in events]
    assert wire.requests[0].body["reasoning_effort"] == "medium"
    # the next turn replays the reasoning in the same field
    wire.queue("openai", openai_reply("sure"))
    follow = LlmRequest(messages=[UserMessage.text("2+2?"), final, UserMessage.text("and 3+3?")])
    collect(model, follow, opts())
    assistant = wire.requests[1].body["messages"][1]
    assert assistant["role"] == "assistant" and assistant["content"] == "The answer is 4."
    assert assistant[field] == "2 plus 2 is 4"


def test_one_tool_call_streams_arguments_as_json_fragments(wire):
    wire.queue("openai", openai_reply(tool_calls=[tool_call("read", {"path": "notes/a.txt", "limit": 20}, id="call_1")], pieces=5))
    events, final = collect(wire_model(wire), user_request("read it", tools=[READ]), opts())
    assert final.stop_reason == "toolUse"
    [call] = final.tool_calls
    assert (call.id, call.name, call.arguments) == ("call_1", "read", {"path": "notes/a.txt", "limit": 20})
    deltas = [e for e in events if e.type == "toolcall_delta" and e.delta]
    assert len(deltas) >= 4
    assert "".join(d.delta for d in deltas) == json.dumps({"path": "notes/a.txt", "limit": 20})
    end = next(e for e in events if e.type == "toolcall_end")
    assert end.tool_call.arguments == {"path": "notes/a.txt", "limit": 20}


def test_partial_arguments_are_parsed_while_streaming(wire):
    wire.queue("openai", openai_reply(tool_calls=[tool_call("read", {"path": "a-very-long-file-name.txt"})], pieces=6))
    seen = []

    async def main():
        async for e in stream(wire_model(wire), user_request(tools=[READ]), opts()):
            if e.type == "toolcall_delta":
                seen.append(dict(e.partial.content[e.content_index].arguments))

    asyncio.run(main())
    # a prefix of the path is visible before the JSON is complete
    assert any(s.get("path") and s["path"] != "a-very-long-file-name.txt" for s in seen)
    assert seen[-1] == {"path": "a-very-long-file-name.txt"}


def test_several_tool_calls_in_one_message(wire):
    calls = [
        tool_call("read", {"path": "a.txt"}, id="call_a"),
        tool_call("read", {"path": "b.txt"}, id="call_b"),
        tool_call("ls", {}, id="call_c"),
    ]
    wire.queue("openai", openai_reply("Reading both.", tool_calls=calls))
    _, final = collect(wire_model(wire), user_request(tools=[READ]), opts())
    assert [(c.id, c.name, c.arguments) for c in final.tool_calls] == [
        ("call_a", "read", {"path": "a.txt"}),
        ("call_b", "read", {"path": "b.txt"}),
        ("call_c", "ls", {}),
    ]
    assert final.text == "Reading both."


@pytest.mark.parametrize(
    ("status", "message"),
    [(429, "Rate limit reached for gpt-test in organization org-1"), (500, "The server had an error while processing your request")],
)
def test_http_errors_become_error_messages_without_sdk_retries(wire, status, message):
    wire.queue("openai", http_error(status, message))
    events, final = collect(wire_model(wire), user_request(), opts())
    assert events[-1].type == "error" and events[-1].reason == "error"
    assert final.stop_reason == "error"
    assert final.error_message == f"{status} {message}"
    assert len(wire.requests) == 1  # max_retries=0: retrying is the agent's job
    assert not is_context_overflow(final)


def test_context_overflow_error_is_recognised(wire):
    text = "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens."
    wire.queue("openai", http_error(400, text))
    _, final = collect(wire_model(wire), user_request(), opts())
    assert final.error_message.startswith("400 ")
    assert is_context_overflow(final)


def test_stream_cut_midway_keeps_partial_text(wire):
    wire.queue("openai", openai_reply("one two three four five six", pieces=6).cut(4))
    events, final = collect(wire_model(wire), user_request(), opts())
    assert events[-1].type == "error" and final.stop_reason == "error"
    assert final.text and "one two three four five six".startswith(final.text) and final.text != "one two three four five six"
    assert "Connection error" in final.error_message


def test_stream_that_ends_without_finish_is_an_error(wire):
    reply = openai_reply("half", done=False)
    reply.events = reply.events[:-1]  # no finish_reason chunk either
    wire.queue("openai", reply)
    _, final = collect(wire_model(wire), user_request(), opts())
    assert final.stop_reason == "error" and "ended before" in final.error_message
    assert final.text == "half"


def test_malformed_sse_is_an_error_naming_the_problem(wire):
    wire.queue("openai", raw_reply(b'data: {"id":"x","choices":[{"index":0,"delta":{"content":"ok"}}]}\n\ndata: {not json\n\n'))
    _, final = collect(wire_model(wire), user_request(), opts())
    assert final.stop_reason == "error"
    assert "Malformed stream" in final.error_message and "not json" in final.error_message
    assert final.text == "ok"


@pytest.mark.parametrize(("reason", "stop"), [("length", "length"), ("content_filter", "error")])
def test_finish_reasons_map_to_stop_reasons(wire, reason, stop):
    wire.queue("openai", openai_reply("cut", finish_reason=reason))
    _, final = collect(wire_model(wire), user_request(), opts())
    assert final.stop_reason == stop
    if stop == "error":
        assert final.error_message == "Provider finish_reason: content_filter"


def test_abort_mid_stream_keeps_partial_content_and_closes_the_connection(wire):
    wire.queue("openai", openai_reply("alpha beta gamma delta epsilon zeta eta theta", pieces=8).slow(0.15))
    events = abort_mid_stream(wire_model(wire), user_request(), opts(), after_events=3)
    final = events[-1].error
    assert events[-1].type == "error" and events[-1].reason == "aborted"
    assert final.stop_reason == "aborted" and final.error_message == "Request was aborted"
    assert final.text and final.text != "alpha beta gamma delta epsilon zeta eta theta"
    assert wire.wait_for_disconnects(1)


def test_abort_while_waiting_for_the_server_to_answer(wire):
    wire.queue("openai", openai_reply("too late").late(1.0))
    signal = AbortSignal()

    async def main():
        asyncio.get_running_loop().call_later(0.1, signal.abort)
        return await acollect(wire_model(wire), user_request(), opts(signal=signal))

    events, final = asyncio.run(main())
    assert final.stop_reason == "aborted" and final.content == []
    assert [e.type for e in events] == ["start", "error"]


def test_abort_before_the_call_sends_nothing(wire):
    signal = AbortSignal()
    signal.abort()
    _, final = collect(wire_model(wire), user_request(), opts(signal=signal))
    assert final.stop_reason == "aborted"
    assert wire.requests == []


def test_key_from_environment_and_missing_key(wire, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env-0123456789")
    wire.queue("openai", openai_reply("ok"))
    _, final = collect(wire_model(wire), user_request(), StreamOptions())
    assert final.stop_reason == "stop"
    assert wire.requests[0].headers["authorization"] == "Bearer sk-from-env-0123456789"
    monkeypatch.delenv("OPENAI_API_KEY")
    _, final = collect(wire_model(wire), user_request(), StreamOptions())
    assert final.stop_reason == "error"
    assert "No API key for provider 'openai'" in final.error_message and "OPENAI_API_KEY" in final.error_message
    assert len(wire.requests) == 1


def test_key_never_reaches_events_reprs_or_error_text(wire):
    secret = "sk-proj-SECRETSECRETSECRET1234"
    wire.require_key = "sk-the-right-one-000000"
    options = StreamOptions(api_key=secret)
    assert secret not in repr(options) and secret not in str(options.model_dump())
    # a server that echoes the key back in its error
    wire.require_key = None
    wire.queue("openai", http_error(401, f"Incorrect API key provided: {secret}. You can find your key at ..."))
    events, final = collect(wire_model(wire), user_request(), options)
    assert final.stop_reason == "error" and final.error_message.startswith("401 Incorrect API key provided")
    for e in events:
        assert secret not in json.dumps(e.to_dict())
        assert secret not in repr(e)
    assert secret not in final.error_message


def test_wrong_key_rejected_by_server(wire):
    wire.require_key = "sk-the-right-one-000000"
    _, final = collect(wire_model(wire), user_request(), StreamOptions(api_key="sk-wrong-key-1111111"))
    assert final.stop_reason == "error" and final.error_message.startswith("401 ")
    assert "sk-wrong-key-1111111" not in final.error_message


def test_openai_compatible_server_by_base_url_without_key(wire, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = openai_compatible(wire.openai_url, "smollm2", provider="llamacpp", context_window=4096)
    wire.queue("openai", openai_reply("local hello", model="smollm2"))
    _, final = collect(model, user_request(), StreamOptions())
    assert final.text == "local hello" and final.provider == "llamacpp"
    body = wire.requests[0].body
    assert body["model"] == "smollm2"
    assert "max_tokens" in body and "store" not in body  # generic servers get the classic field names


def test_history_is_normalized_before_sending(wire):
    model = wire_model(wire)
    long_id = "call_" + "x" * 60
    tool_turn = AssistantMessage(
        content=[ToolCall(id=long_id, name="read", arguments={"path": "a"})],
        api="anthropic-messages",
        provider="anthropic",
        model="claude-x",
        stop_reason="toolUse",
    )
    failed = AssistantMessage(
        content=[TextContent(text="partial")], api=model.api, provider=model.provider, model=model.id, stop_reason="error"
    )
    orphan = AssistantMessage(
        content=[ToolCall(id="call_orphan", name="read", arguments={})],
        api=model.api,
        provider="openai",
        model="gpt-test",
        stop_reason="toolUse",
    )
    messages = [
        UserMessage.text("one"),
        tool_turn,
        ToolResultMessage(tool_call_id=long_id, tool_name="read", content=[TextContent(text="file a")]),
        failed,
        orphan,
        UserMessage.text("two"),
    ]
    wire.queue("openai", openai_reply("ok"))
    collect(model, LlmRequest(messages=messages), opts())
    sent = wire.requests[0].body["messages"]
    roles = [m["role"] for m in sent]
    assert roles == ["user", "assistant", "tool", "assistant", "tool", "user"]
    assert sent[1]["tool_calls"][0]["id"] == long_id[:40]  # OpenAI's 40-character limit
    assert sent[2]["tool_call_id"] == long_id[:40]
    assert "partial" not in json.dumps(sent)  # the failed reply is not replayed
    assert sent[4] == {"role": "tool", "content": "No result provided", "tool_call_id": "call_orphan"}
    assert messages[1].tool_calls[0].id == long_id  # the caller's messages are untouched


def test_client_is_reused_within_a_loop(wire):
    wire.queue("openai", openai_reply("a"), openai_reply("b"))
    model = wire_model(wire)

    async def main():
        _, first = await acollect(model, user_request(), opts())
        _, second = await acollect(model, user_request(), opts())
        return first, second

    first, second = asyncio.run(main())
    assert (first.text, second.text) == ("a", "b")


def test_usage_default_is_zero_without_usage_chunk(wire):
    wire.queue("openai", openai_reply("no usage"))
    _, final = collect(wire_model(wire), user_request(), opts())
    assert final.usage == Usage()
