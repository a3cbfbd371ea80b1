"""The openai-responses provider, through the real ``openai`` SDK, against the local wire server."""

from __future__ import annotations

import json

import pytest
from pydantic import TypeAdapter
from wire.helpers import abort_mid_stream, collect, user_request, wire_model
from wire.server import http_error, raw_reply, responses_reply, sse, tool_call

from pi_jupyter.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from pi_jupyter.providers import LlmRequest, StreamOptions, ToolSpec, get_model, is_context_overflow, resolve_model

KEY = "sk-test-responses-abcdefghijkl"
READ = ToolSpec(
    name="read", description="Read a file", parameters={"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}
)


def opts(**kw):
    return StreamOptions(api_key=KEY, **kw)


def model_of(wire, **fields):
    return wire_model(wire, "openai-responses", **fields)


def test_the_scripted_stream_is_one_the_sdk_itself_parses(wire):
    # Guards the tests below: every event of the wire server is a valid SDK ResponseStreamEvent.
    from openai.types.responses import ResponseStreamEvent

    adapter = TypeAdapter(ResponseStreamEvent)
    reply = responses_reply("hi", reasoning="think", tool_calls=[tool_call("read", {"path": "a"})])
    for frame in reply.events + responses_reply("cut", status="incomplete", usage={"input_tokens": 3}).events:
        data = frame.decode().split("data: ", 1)[1]
        try:
            adapter.validate_json(data)
        except ValueError:
            pytest.fail(f"the SDK rejects the scripted {json.loads(data)['type']} event: {data}")


def test_text_streams_in_deltas_and_keeps_the_message_id(wire):
    wire.queue("responses", responses_reply("Hello there, general Kenobi", pieces=4))
    events, final = collect(model_of(wire), user_request("hi"), opts())
    types = [e.type for e in events]
    assert types[0] == "start" and types[-1] == "done"
    assert types.count("text_delta") == 4
    assert final.text == "Hello there, general Kenobi" and final.stop_reason == "stop"
    assert final.api == "openai-responses" and final.provider == "openai"
    [block] = final.content
    assert json.loads(block.text_signature) == {"v": 1, "id": "msg_wire"}  # pi's text signature, version 1
    assert wire.requests[0].path == "/v1/responses"


def test_request_shape(wire):
    wire.queue("responses", responses_reply("ok"))
    request = user_request("what is in a.txt?", system_prompt="You are terse.", tools=[READ])
    collect(model_of(wire), request, opts(max_tokens=123, temperature=0.2, session_id="sess-1"))
    [sent] = wire.requests
    assert sent.headers["authorization"] == f"Bearer {KEY}"
    body = sent.body
    assert body["model"] == "gpt-test" and body["stream"] is True and body["store"] is False
    assert body["input"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": [{"type": "input_text", "text": "what is in a.txt?"}]},
    ]
    assert body["max_output_tokens"] == 123 and body["temperature"] == 0.2
    assert body["prompt_cache_key"] == "sess-1"
    [tool] = body["tools"]
    assert tool == {"type": "function", "name": "read", "description": "Read a file", "parameters": READ.parameters, "strict": False}
    assert "reasoning" not in body and "include" not in body  # not a reasoning model


def test_reasoning_summary_becomes_thinking_and_the_item_is_replayed(wire):
    wire.queue("responses", responses_reply("The answer is 4.", reasoning="2 plus 2 is 4"))
    model = model_of(wire, reasoning=True)
    events, final = collect(model, user_request("2+2?", system_prompt="Be exact."), opts(reasoning="medium"))
    body = wire.requests[0].body
    assert body["reasoning"] == {"effort": "medium", "summary": "auto"}
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["input"][0]["role"] == "developer"  # reasoning models take the system prompt as developer
    thinking, text = final.content
    assert isinstance(thinking, ThinkingContent) and thinking.thinking == "2 plus 2 is 4"
    item = json.loads(thinking.thinking_signature)
    assert item["type"] == "reasoning" and item["encrypted_content"] == "enc-wire"
    assert "thinking_delta" in [e.type for e in events]
    assert text.text == "The answer is 4."

    # the next turn sends the reasoning item back, unchanged, before the message it led to
    wire.queue("responses", responses_reply("6"))
    collect(model, LlmRequest(messages=[UserMessage.text("2+2?"), final, UserMessage.text("and 3+3?")]), opts(reasoning="medium"))
    sent = wire.requests[1].body["input"]
    assert sent[1] == item
    assert sent[2]["type"] == "message" and sent[2]["id"] == "msg_wire"
    assert sent[2]["content"] == [{"type": "output_text", "text": "The answer is 4.", "annotations": []}]


def test_thinking_off_sends_no_effort_and_xhigh_is_clamped(wire):
    model = model_of(wire, reasoning=True)
    wire.queue("responses", responses_reply("a"), responses_reply("b"))
    collect(model, user_request(), opts(reasoning="off"))
    collect(model, user_request(), opts(reasoning="xhigh"))
    assert "reasoning" not in wire.requests[0].body
    assert wire.requests[1].body["reasoning"]["effort"] == "high"


def test_tool_calls_stream_and_the_result_is_sent_as_function_call_output(wire):
    calls = [tool_call("read", {"path": "notes/a.txt"}, id="call_1"), tool_call("read", {"path": "b.txt"}, id="call_2")]
    wire.queue("responses", responses_reply("Reading.", tool_calls=calls, pieces=4))
    model = model_of(wire)
    events, final = collect(model, user_request("read", tools=[READ]), opts())
    assert final.stop_reason == "toolUse"
    assert [(c.id, c.arguments) for c in final.tool_calls] == [("call_1|fc_0", {"path": "notes/a.txt"}), ("call_2|fc_1", {"path": "b.txt"})]
    deltas = [e.delta for e in events if e.type == "toolcall_delta" and e.content_index == 1]
    assert len(deltas) >= 3 and "".join(deltas) == json.dumps({"path": "notes/a.txt"})

    results = [
        ToolResultMessage(tool_call_id=c.id, tool_name="read", content=[TextContent(text=f"text of {c.arguments['path']}")])
        for c in final.tool_calls
    ]
    wire.queue("responses", responses_reply("done"))
    collect(model, LlmRequest(messages=[UserMessage.text("read"), final, *results], tools=[READ]), opts())
    sent = wire.requests[1].body["input"]
    assert [i.get("type", i.get("role")) for i in sent] == [
        "user",
        "message",
        "function_call",
        "function_call",
        "function_call_output",
        "function_call_output",
    ]
    assert sent[2] == {"type": "function_call", "call_id": "call_1", "name": "read", "id": "fc_0", "arguments": '{"path":"notes/a.txt"}'}
    assert sent[4] == {"type": "function_call_output", "call_id": "call_1", "output": "text of notes/a.txt"}


def test_history_from_other_models_is_sent_in_a_form_the_api_accepts(wire):
    model = model_of(wire, reasoning=True)
    claude = AssistantMessage(
        content=[
            ThinkingContent(thinking="Claude's own reasoning", thinking_signature="anthropic-sig"),
            ToolCall(id="toolu_01 A.b", name="read", arguments={"path": "x"}),
        ],
        api="anthropic-messages",
        provider="anthropic",
        model="claude-x",
        stop_reason="toolUse",
    )
    other_gpt = AssistantMessage(
        content=[
            ThinkingContent(thinking="", thinking_signature=json.dumps({"type": "reasoning", "id": "rs_9", "summary": []})),
            ToolCall(id="call_9|fc_9", name="read", arguments={"path": "y"}),
        ],
        api="openai-responses",
        provider="openai",
        model="gpt-older",
        stop_reason="toolUse",
    )
    messages = [
        UserMessage.text("one"),
        claude,
        ToolResultMessage(tool_call_id="toolu_01 A.b", tool_name="read", content=[TextContent(text="x text")]),
        other_gpt,
        ToolResultMessage(tool_call_id="call_9|fc_9", tool_name="read", content=[TextContent(text="y text")]),
        UserMessage.text("two"),
    ]
    wire.queue("responses", responses_reply("ok"))
    collect(model, LlmRequest(messages=messages), opts())
    sent = wire.requests[0].body["input"]
    # Claude's thinking is dropped (as pi 1.6 does: readable thinking sent as text reads as the visible reply);
    # its tool-call id is made valid and its result follows
    assert "Claude's own reasoning" not in json.dumps(sent)
    assert sent[1] == {"type": "function_call", "call_id": "toolu_01_A_b", "name": "read", "arguments": '{"path":"x"}'}
    assert sent[2]["call_id"] == "toolu_01_A_b"
    # another OpenAI model's reasoning item cannot be replayed, so its function call goes without the paired item id
    assert not any(i.get("type") == "reasoning" for i in sent)
    assert sent[3] == {"type": "function_call", "call_id": "call_9", "name": "read", "arguments": '{"path":"y"}'}
    assert sent[4]["call_id"] == "call_9"
    assert messages[1].content[1].id == "toolu_01 A.b"  # the caller's messages are untouched


def test_usage_with_cached_tokens_and_cost(wire):
    details = {"cached_tokens": 400, "cache_write_tokens": 100}
    usage = {"input_tokens": 1000, "output_tokens": 200, "total_tokens": 1200, "input_tokens_details": details}
    wire.queue("responses", responses_reply("priced", usage=usage))
    _, final = collect(model_of(wire), user_request(), opts())
    u = final.usage
    # input_tokens holds the cache reads and writes; pi's input is what is left
    assert (u.input, u.cache_read, u.cache_write, u.output, u.total_tokens) == (500, 400, 100, 200, 1200)
    assert u.cost.input == pytest.approx(500 * 3.0 / 1e6) and u.cost.cache_read == pytest.approx(400 * 0.3 / 1e6)
    assert u.cost.cache_write == pytest.approx(100 * 3.75 / 1e6)


def test_incomplete_response_is_a_length_stop(wire):
    wire.queue("responses", responses_reply("cut sh", status="incomplete"))
    _, final = collect(model_of(wire), user_request(), opts())
    assert final.stop_reason == "length" and final.text == "cut sh"


def test_failed_response_and_error_events_become_error_messages(wire):
    failed = {"id": "r", "status": "failed", "error": {"code": "server_error", "message": "The model crashed"}, "output": []}
    wire.queue("responses", raw_reply(sse({"type": "response.failed", "response": failed}, event="response.failed")))
    _, final = collect(model_of(wire), user_request(), opts())
    assert final.stop_reason == "error" and final.error_message == "server_error: The model crashed"

    wire.queue("responses", raw_reply(sse({"type": "error", "code": "rate_limit_exceeded", "message": "Slow down"}, event="error")))
    _, final = collect(model_of(wire), user_request(), opts())
    assert final.stop_reason == "error" and final.error_message == "Stream error from the server: rate_limit_exceeded: Slow down"


def test_http_error_and_context_overflow(wire):
    text = "Your input exceeds the context window of this model. Please adjust your input and try again."
    wire.queue("responses", http_error(400, text))
    _, final = collect(model_of(wire), user_request(), opts())
    assert final.stop_reason == "error" and final.error_message == f"400 {text}"
    assert is_context_overflow(final)
    assert len(wire.requests) == 1  # no SDK retries


def test_cut_stream_keeps_partial_text_and_is_an_error(wire):
    wire.queue("responses", responses_reply("one two three four five six", pieces=6).cut(5))
    _, final = collect(model_of(wire), user_request(), opts())
    assert final.stop_reason == "error" and "Connection error" in final.error_message
    assert final.text and "one two three four five six".startswith(final.text) and final.text != "one two three four five six"


def test_malformed_event_names_the_problem(wire):
    wire.queue("responses", raw_reply(b"event: response.output_text.delta\ndata: {oops\n\n"))
    _, final = collect(model_of(wire), user_request(), opts())
    assert final.stop_reason == "error" and "Malformed stream" in final.error_message and "oops" in final.error_message


def test_abort_mid_stream_keeps_partial_content(wire):
    wire.queue("responses", responses_reply("alpha beta gamma delta epsilon zeta eta theta", pieces=8).slow(0.15))
    events = abort_mid_stream(model_of(wire), user_request(), opts(), after_events=4)
    final = events[-1].error
    assert events[-1].reason == "aborted" and final.stop_reason == "aborted"
    assert final.text and final.text != "alpha beta gamma delta epsilon zeta eta theta"
    assert wire.wait_for_disconnects(1)


def test_key_never_reaches_events_or_errors(wire):
    secret = "sk-proj-RESPONSESSECRET123456"
    wire.queue("responses", http_error(401, f"Incorrect API key provided: {secret}."))
    events, final = collect(model_of(wire), user_request(), StreamOptions(api_key=secret))
    assert final.error_message.startswith("401 Incorrect API key provided") and secret not in final.error_message
    assert all(secret not in json.dumps(e.to_dict()) for e in events)


def test_builtin_openai_models_speak_responses(wire):
    model = resolve_model("openai/gpt-5-mini", base_url=wire.openai_url)
    assert get_model("openai/gpt-5-mini").api == "openai-responses" and model.reasoning
    wire.queue("responses", responses_reply("from gpt-5-mini", reasoning="brief"))
    _, final = collect(model, user_request(), opts(reasoning="low"))
    assert final.text == "from gpt-5-mini" and final.model == "gpt-5-mini"
    assert wire.requests[0].path == "/v1/responses" and wire.requests[0].body["reasoning"]["effort"] == "low"


def test_404_from_openais_own_api_keeps_the_servers_message(wire, monkeypatch):
    # A model without base_url talks to OpenAI's API (here the wire server through the SDK's OPENAI_BASE_URL):
    # its 404 is an unknown model, reported as the server said, not a crash nor "no Responses API".
    monkeypatch.setenv("OPENAI_BASE_URL", wire.openai_url)
    text = "The model `gpt-nope` does not exist or you do not have access to it."
    wire.queue("responses", http_error(404, text))
    _, final = collect(model_of(wire).model_copy(update={"base_url": None}), user_request(), opts())
    assert final.stop_reason == "error" and final.error_message == f"404 {text}"
    assert len(wire.requests) == 1


def test_404_from_a_custom_server_says_it_has_no_responses_api(wire):
    wire.queue("responses", http_error(404, "Not Found"))
    _, final = collect(model_of(wire), user_request(), opts())
    assert final.stop_reason == "error" and final.error_message.startswith("404 Not Found (POST ")
    assert "/responses: this server has no OpenAI Responses API" in final.error_message
