"""The agent loop against the real OpenAI and Anthropic SDKs talking to the local wire server.

Assertions are on the events a subscriber sees, the entries persisted in the session file,
and what the next request carried over the wire.
"""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import BaseModel
from wire.helpers import wire_model
from wire.server import anthropic_reply, http_error, openai_reply, text_block, thinking_block, tool_call

from pi_jupyter import Agent, AgentSettings, Session
from pi_jupyter.agent.agent import RetrySettings
from pi_jupyter.agent.loop import ToolDecision
from pi_jupyter.agent.tools import Tool, ToolContext, ToolResult, tool

KEY = "sk-test-0123456789abcdef0123456789"


def fast_retry(**kw) -> AgentSettings:
    return AgentSettings(retry=RetrySettings(base_delay_ms=5, **kw))


class EchoArgs(BaseModel):
    text: str


class Echo(Tool[EchoArgs]):
    name = "echo"
    description = "Echo the text back."
    parameters = EchoArgs

    async def execute(self, args: EchoArgs, ctx: ToolContext) -> ToolResult:
        return ToolResult.text(f"echo: {args.text}", details={"len": len(args.text)})


class SlowArgs(BaseModel):
    seconds: float


class Slow(Tool[SlowArgs]):
    name = "slow"
    description = "Sleep, reporting progress."
    parameters = SlowArgs

    async def execute(self, args: SlowArgs, ctx: ToolContext) -> ToolResult:
        ctx.update(ToolResult.text("started"))
        await asyncio.sleep(args.seconds)
        return ToolResult.text(f"slept {args.seconds}")


def make_agent(wire, tmp_path, api="openai-completions", **kw) -> Agent:
    session = Session.create(tmp_path)
    return Agent(session, model=wire_model(wire, api), api_key=KEY, settings=kw.pop("settings", fast_retry()), **kw)


def types(events):
    return [e.type for e in events]


def collapse_updates(names):
    out = []
    for n in names:
        if n == "message_update" and out and out[-1] == "message_update":
            continue
        out.append(n)
    return out


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_text_answer_events_entries_and_next_request(wire, tmp_path, api):
    reply = openai_reply("Hello Ada!") if api == "openai-completions" else anthropic_reply([text_block("Hello Ada!")])
    wire.queue("openai" if api == "openai-completions" else "anthropic", reply)
    agent = make_agent(wire, tmp_path, api)
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("My name is Ada."))

    assert result.text == "Hello Ada!" and result.stop_reason == "stop"
    assert collapse_updates(types(events)) == [
        "agent_start",
        "turn_start",
        "message_start",
        "message_end",
        "message_start",
        "message_end",
        "message_start",
        "message_update",
        "message_end",
        "turn_end",
        "agent_end",
    ]  # fmt: skip  (the recorded system message is announced too, as pi 1.6 does)
    roles = [e["message"]["role"] for e in Session.open(agent.session.path).raw_entries() if e["type"] == "message"]
    assert roles == ["system", "user", "assistant"]  # the prompt is recorded first, as pi 1.x does
    assert KEY not in open(agent.session.path).read()

    # the next request carries the whole conversation
    kind = "openai" if api == "openai-completions" else "anthropic"
    wire.queue(kind, openai_reply("again") if kind == "openai" else anthropic_reply([text_block("again")]))
    asyncio.run(agent.prompt("Say it again."))
    body = wire.requests[-1].body
    texts = json.dumps(body["messages"])
    assert "My name is Ada." in texts and "Hello Ada!" in texts and "Say it again." in texts


def test_thinking_is_kept_and_replayed_with_its_signature(wire, tmp_path):
    wire.queue("anthropic", anthropic_reply([thinking_block("Let me think.", signature="sig-1"), text_block("Done.")]))
    agent = make_agent(wire, tmp_path, "anthropic-messages", thinking="high")
    result = asyncio.run(agent.prompt("Think first."))
    assert result.messages[-1].thinking == "Let me think."
    wire.queue("anthropic", anthropic_reply([text_block("ok")]))
    asyncio.run(agent.prompt("Next."))
    sent = wire.requests[-1].body["messages"][1]["content"]
    assert sent[0] == {"type": "thinking", "thinking": "Let me think.", "signature": "sig-1"}


def test_tool_loop_over_several_turns_runs_tools_and_feeds_results_back(wire, tmp_path):
    wire.queue(
        "openai",
        openai_reply(tool_calls=[tool_call("echo", {"text": "one"}, id="call_1")]),
        openai_reply(tool_calls=[tool_call("echo", {"text": "two"}, id="call_2")]),
        openai_reply("All done."),
    )
    agent = make_agent(wire, tmp_path, tools=[Echo()])
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("Echo twice."))
    assert result.text == "All done."
    assert [m.role for m in result.messages] == [
        "system", "user", "assistant", "toolResult", "assistant", "toolResult", "assistant"
    ]  # fmt: skip
    assert types(events).count("turn_start") == 3
    tool_msgs = [m for m in wire.requests[2].body["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_msgs] == ["echo: one", "echo: two"]
    persisted = Session.open(agent.session.path).context().messages
    assert [m.role for m in persisted] == ["system", "user", "assistant", "toolResult", "assistant", "toolResult", "assistant"]
    assert persisted[3].details == {"len": 3}


def test_parallel_results_in_source_order_even_when_early_ones_fail(wire, tmp_path):
    # pi emits immediate failures (unknown tool, bad arguments) before executed results (§10 item 20)
    wire.queue(
        "openai",
        openai_reply(
            tool_calls=[
                tool_call("slow", {"seconds": 0.2}, id="call_a"),
                tool_call("nope", {}, id="call_b"),
                tool_call("echo", {"text": 5}, id="call_c"),
                tool_call("echo", {"text": "fast"}, id="call_d"),
            ]
        ),
        openai_reply("ok"),
    )
    agent = make_agent(wire, tmp_path, tools=[Echo(), Slow()])
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("go"))
    results = [m for m in result.messages if m.role == "toolResult"]
    assert [r.tool_call_id for r in results] == ["call_a", "call_b", "call_c", "call_d"]
    assert [r.is_error for r in results] == [False, True, True, False]
    assert results[1].text == "Tool nope not found"
    assert "text" in results[2].text and "Validation failed" in results[2].text
    starts = {e.tool_call_id: i for i, e in enumerate(events) if e.type == "tool_execution_start"}
    ends = {e.tool_call_id: i for i, e in enumerate(events) if e.type == "tool_execution_end"}
    assert max(starts.values()) < min(ends["call_a"], ends["call_d"])  # the tools that run all start first
    assert ends["call_d"] < ends["call_a"]  # the slow tool finishes last, its end event says so
    updates = [e for e in events if e.type == "tool_execution_update"]
    assert updates and updates[0].tool_call_id == "call_a"


def test_before_tool_hook_blocks_with_a_reason_the_model_sees(wire, tmp_path):
    wire.queue("openai", openai_reply(tool_calls=[tool_call("echo", {"text": "rm -rf /"}, id="c1")]), openai_reply("understood"))
    agent = make_agent(wire, tmp_path, tools=[Echo()], before_tool_call=lambda call: ToolDecision(block=True, reason="not allowed here"))
    asyncio.run(agent.prompt("go"))
    sent = [m for m in wire.requests[1].body["messages"] if m["role"] == "tool"]
    assert sent[0]["content"] == "not allowed here"


def test_retry_after_429_and_500_then_success_is_a_sibling_of_the_failures(wire, tmp_path):
    wire.queue("openai", http_error(429, "Rate limit reached"), http_error(500, "internal error"), openai_reply("finally"))
    agent = make_agent(wire, tmp_path)
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("hi"))
    assert result.text == "finally" and result.ok
    retry = [e for e in events if e.type.startswith("auto_retry")]
    assert [(e.type, getattr(e, "attempt", None)) for e in retry] == [
        ("auto_retry_start", 1), ("auto_retry_start", 2), ("auto_retry_end", 2)
    ]  # fmt: skip
    assert retry[-1].success is True
    s = Session.open(agent.session.path)
    msgs = [e for e in s.raw_entries() if e["type"] == "message"]
    system, user, *assistants = msgs
    assert system["message"]["role"] == "system" and user["parentId"] == system["id"]
    assert [a["message"]["stopReason"] for a in assistants] == ["error", "error", "stop"]
    assert all(a["parentId"] == user["id"] for a in assistants)  # siblings, not a chain
    assert [m.role for m in s.context().messages] == ["system", "user", "assistant"]
    assert s.context().messages[-1].text == "finally"


def test_retry_gives_up_after_max_retries(wire, tmp_path):
    wire.queue("openai", *[http_error(503, "service unavailable") for _ in range(3)])
    agent = make_agent(wire, tmp_path, settings=fast_retry(max_retries=2))
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("hi"))
    assert result.stop_reason == "error" and "503" in result.error_message
    end = [e for e in events if e.type == "auto_retry_end"]
    assert len(end) == 1 and end[0].success is False and end[0].attempt == 2


def test_context_overflow_is_not_retried(wire, tmp_path):
    wire.queue("openai", http_error(400, "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens"))
    agent = make_agent(wire, tmp_path)
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("hi"))
    assert result.stop_reason == "error"
    assert not [e for e in events if e.type == "auto_retry_start"]


def test_stream_cut_midway_keeps_partial_text_as_an_error(wire, tmp_path):
    wire.queue("openai", openai_reply("one two three four five six", pieces=6).cut(4))
    agent = make_agent(wire, tmp_path, settings=AgentSettings(retry=RetrySettings(enabled=False)))
    result = asyncio.run(agent.prompt("hi"))
    assert result.stop_reason == "error"
    assert result.messages[-1].text.startswith("one")
    assert Session.open(agent.session.path).context().messages[-1].stop_reason == "error"


def test_abort_mid_stream_persists_aborted_partial(wire, tmp_path):
    wire.queue("openai", openai_reply("a b c d e f g h i j", pieces=10).slow(0.2))
    agent = make_agent(wire, tmp_path)

    async def run():
        events = []
        agent.subscribe(events.append)
        task = asyncio.ensure_future(agent.prompt("hi"))
        while not any(e.type == "message_update" for e in events):
            await asyncio.sleep(0.01)
        agent.abort()
        return await asyncio.wait_for(task, 5)

    result = asyncio.run(run())
    assert result.stop_reason == "aborted"
    last = Session.open(agent.session.path).context().messages[-1]
    assert last.stop_reason == "aborted" and last.text  # partial content kept
    assert wire.wait_for_disconnects(1)


def test_abort_mid_tool_leaves_no_task_and_an_aborted_answer(wire, tmp_path):
    wire.queue("openai", openai_reply(tool_calls=[tool_call("slow", {"seconds": 30}, id="c1")]))
    agent = make_agent(wire, tmp_path, tools=[Slow()])

    async def run():
        events = []
        agent.subscribe(events.append)
        task = asyncio.ensure_future(agent.prompt("wait"))
        while not any(e.type == "tool_execution_update" for e in events):
            await asyncio.sleep(0.01)
        agent.abort()
        result = await asyncio.wait_for(task, 5)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return result, events, others

    result, events, others = asyncio.run(run())
    assert others == []
    assert result.stop_reason == "aborted"
    tool_results = [m for m in result.messages if m.role == "toolResult"]
    # the tool did not stop by itself and was cancelled: what it had reported stays, as Stop leaves it
    assert tool_results[0].is_error and tool_results[0].text == "started\n\nTool execution was aborted."
    roles = [m.role for m in Session.open(agent.session.path).context().messages]
    assert roles == ["system", "user", "assistant", "toolResult", "assistant"]


def test_steering_is_injected_before_the_next_model_call(wire, tmp_path):
    wire.queue("openai", openai_reply(tool_calls=[tool_call("slow", {"seconds": 0.3}, id="c1")]), openai_reply("adjusted"))
    agent = make_agent(wire, tmp_path, tools=[Slow()])

    async def run():
        events = []
        agent.subscribe(events.append)
        task = asyncio.ensure_future(agent.prompt("start"))
        while not any(e.type == "tool_execution_start" for e in events):
            await asyncio.sleep(0.01)
        agent.steer("actually, be brief")
        return await task

    result = asyncio.run(run())
    assert result.text == "adjusted"
    sent = wire.requests[-1].body["messages"]
    assert sent[-1]["role"] == "user" and "be brief" in json.dumps(sent[-1]["content"])


def test_follow_up_runs_after_the_agent_would_stop(wire, tmp_path):
    wire.queue("openai", openai_reply("first"), openai_reply("second"))
    agent = make_agent(wire, tmp_path)
    agent.follow_up("and then?")
    result = asyncio.run(agent.prompt("go"))
    assert [m.role for m in result.messages] == ["system", "user", "assistant", "user", "assistant"]
    assert result.text == "second"


def test_prompt_while_running_is_refused(wire, tmp_path):
    from pi_jupyter.agent.agent import AgentBusyError

    wire.queue("openai", openai_reply("slow answer", pieces=5).slow(0.1))
    agent = make_agent(wire, tmp_path)

    async def run():
        task = asyncio.ensure_future(agent.prompt("one"))
        await asyncio.sleep(0.05)
        with pytest.raises(AgentBusyError):
            await agent.prompt("two")
        return await task

    assert asyncio.run(run()).text == "slow answer"


def test_function_tools_and_json_event_log(wire, tmp_path):
    @tool
    def add(a: int, b: int) -> str:
        "Add two integers."
        return str(a + b)

    wire.queue("openai", openai_reply(tool_calls=[tool_call("add", {"a": 2, "b": 40}, id="c1")]), openai_reply("42"))
    agent = make_agent(wire, tmp_path, tools=[add])
    log = tmp_path / "events.jsonl"
    stop = agent.log_events(log)
    asyncio.run(agent.prompt("add"))
    stop()
    schema = wire.requests[0].body["tools"][0]["function"]
    assert schema["name"] == "add" and schema["parameters"]["required"] == ["a", "b"]
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert lines[0] == {"type": "agent_start"}
    ends = [x for x in lines if x["type"] == "tool_execution_end"]
    assert ends[0]["result"]["content"][0]["text"] == "42" and ends[0]["toolName"] == "add"
    assert KEY not in log.read_text()


def test_set_model_and_thinking_write_entries_and_clamp(wire, tmp_path):
    agent = make_agent(wire, tmp_path, thinking="high")
    assert agent.thinking_level == "off"  # the wire model has no reasoning support
    reasoning = wire_model(wire, "anthropic-messages", reasoning=True)
    agent.set_model(reasoning)
    assert agent.thinking_level == "off"
    assert agent.set_thinking_level("xhigh") == "high"  # no xhigh support: clamped down
    kinds = [(e["type"], e.get("thinkingLevel") or e.get("modelId")) for e in agent.session.raw_entries()]
    assert ("model_change", "claude-test") in kinds and kinds[-1] == ("thinking_level_change", "high")
    ctx = Session.open(agent.session.path).context()
    assert ctx.thinking_level == "high" and ctx.model.model_id == "claude-test"
    with pytest.raises(ValueError, match="unknown thinking level"):
        agent.set_thinking_level("max")


def test_no_key_becomes_an_error_message_not_an_exception(wire, tmp_path, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    session = Session.create(tmp_path)
    agent = Agent(session, model=wire_model(wire), settings=AgentSettings(retry=RetrySettings(enabled=False)))
    result = asyncio.run(agent.prompt("hi"))
    assert result.stop_reason == "error" and "key" in result.error_message.lower()
    assert [m.role for m in Session.open(session.path).context().messages] == ["system", "user", "assistant"]


def test_a_recorded_session_replays_without_a_key_and_divergence_is_named(wire, tmp_path, monkeypatch):
    from pi_jupyter.providers import get_model

    wire.queue(
        "openai",
        openai_reply(tool_calls=[tool_call("echo", {"text": "data"}, id="call_9")]),
        openai_reply("The data says hello."),
        openai_reply("Goodbye."),
    )
    recorder = make_agent(wire, tmp_path / "rec", tools=[Echo()])
    asyncio.run(recorder.prompt("Look at the data."))
    asyncio.run(recorder.prompt("Thanks!"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    requests_before = len(wire.requests)

    replay = Agent(Session.create(tmp_path / "re"), model=get_model(f"replay/{recorder.session.path}"), tools=[Echo()], thinking="off")
    first = asyncio.run(replay.prompt("Look at the data."))
    assert first.text == "The data says hello." and [m.role for m in first.messages].count("toolResult") == 1
    assert asyncio.run(replay.prompt("Thanks!")).text == "Goodbye."
    off_script = asyncio.run(replay.prompt("Something never recorded"))
    assert off_script.stop_reason == "error" and "Something never recorded" in off_script.error_message
    assert len(wire.requests) == requests_before  # nothing went to a server


def test_an_unknown_thinking_level_is_refused_not_silently_turned_off(wire, tmp_path):
    with pytest.raises(ValueError, match="unknown thinking level 'hihg'"):
        make_agent(wire, tmp_path, thinking="hihg")
    agent = Agent(Session.in_memory(), model="offline/echo", thinking="high")
    assert agent.thinking_level == "high"


@pytest.mark.parametrize("when", ["agent_end", "auto_retry_start"])
def test_an_abort_between_a_failed_attempt_and_its_retry_is_not_lost(wire, tmp_path, when):
    # abort() used to reach only the finished attempt's signal: the retry then ran as if nothing happened
    wire.queue("openai", http_error(429, "Rate limit reached"), openai_reply("should not be asked for"))
    agent = make_agent(wire, tmp_path)
    events = []

    def on_event(event):
        events.append(event)
        if event.type == when:
            agent.abort()

    agent.subscribe(on_event)
    result = asyncio.run(agent.prompt("hi"))
    assert len(wire.requests) == 1
    assert result.stop_reason == "error" and "429" in result.error_message
    retry = [(e.type, getattr(e, "success", None), getattr(e, "final_error", None)) for e in events if e.type.startswith("auto_retry")]
    if when == "auto_retry_start":
        assert retry == [("auto_retry_start", None, None), ("auto_retry_end", False, "Retry cancelled")]
    else:
        assert retry == []
    # the next prompt is not affected by the old abort
    wire.reset()
    wire.queue("openai", openai_reply("fresh"))
    assert asyncio.run(agent.prompt("again")).text == "fresh"


@pytest.mark.parametrize("api", ["openai-completions", "anthropic-messages"])
def test_a_finished_run_leaves_no_tasks_and_no_half_closed_streams(wire, tmp_path, api):
    # Streams left suspended were closed later by the garbage collector, concurrently with the
    # response's own close: "an error occurred during closing of asynchronous generator".
    kind = "openai" if api == "openai-completions" else "anthropic"
    wire.queue(kind, openai_reply("hello") if kind == "openai" else anthropic_reply([text_block("hello")]))
    agent = make_agent(wire, tmp_path, api)

    async def run():
        problems = []
        asyncio.get_running_loop().set_exception_handler(lambda loop, context: problems.append(context["message"]))
        result = await agent.prompt("hi")
        for _ in range(3):  # httpcore's own pool stream is finalized by the event loop: let it
            await asyncio.sleep(0)
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return result, others, problems

    result, others, problems = asyncio.run(run())
    assert result.text == "hello"
    assert others == [] and problems == []


def test_sequential_tools_run_one_by_one_and_steering_skips_the_rest(tmp_path):
    agent = Agent(
        Session.create(tmp_path), model="offline/echo", tools=[Slow()], thinking="off", settings=AgentSettings(tool_execution="sequential")
    )
    events = []

    def on_event(event):
        events.append(event)
        if event.type == "tool_execution_end" and event.tool_call_id == "offline_0_0":
            agent.steer("stop that")

    agent.subscribe(on_event)
    calls = " and ".join(f'call slow with {{"seconds": {s}}}' for s in (0.05, 0.01, 0.01))
    result = asyncio.run(agent.prompt(calls))
    tool_events = [(e.type, e.tool_call_id) for e in events if e.type.startswith("tool_execution") and e.type != "tool_execution_update"]
    assert tool_events == [
        ("tool_execution_start", "offline_0_0"), ("tool_execution_end", "offline_0_0"),
        ("tool_execution_start", "offline_0_1"), ("tool_execution_end", "offline_0_1"),
        ("tool_execution_start", "offline_0_2"), ("tool_execution_end", "offline_0_2"),
    ]  # fmt: skip
    results = [m for m in result.messages if m.role == "toolResult"]
    assert [r.text for r in results] == ["slept 0.05", "Skipped due to queued user message.", "Skipped due to queued user message."]
    assert [r.is_error for r in results] == [False, True, True]
    assert [m.role for m in result.messages][-2:] == ["user", "assistant"] and "stop that" in result.text


def test_anthropic_tool_loop_retry_and_malformed_stream_through_the_agent(wire, tmp_path):
    from wire.server import raw_reply, tool_use_block

    wire.queue(
        "anthropic",
        http_error(429, "rate limited", kind="anthropic"),
        anthropic_reply([text_block("Let me look."), tool_use_block("echo", {"text": "one"}, id="toolu_1")]),
        http_error(529, "Overloaded", kind="anthropic"),
        anthropic_reply([tool_use_block("echo", {"text": "two"}, id="toolu_2"), tool_use_block("echo", {"text": "three"}, id="toolu_3")]),
        anthropic_reply([text_block("All done.")]),
    )
    agent = make_agent(wire, tmp_path, "anthropic-messages", tools=[Echo()])
    events = []
    agent.subscribe(events.append)
    result = asyncio.run(agent.prompt("Echo a few things."))
    assert result.text == "All done." and result.ok
    # each failure is retried on its own: the success after the first retry ends it (pi), so
    # the 529 two turns later starts again at attempt 1 instead of using up the same budget
    retry = [(e.type, e.attempt) for e in events if e.type.startswith("auto_retry")]
    assert retry == [("auto_retry_start", 1), ("auto_retry_end", 1)] * 2
    first_end = next(i for i, e in enumerate(events) if e.type == "auto_retry_end")
    assert events[first_end - 1].type == "message_end" and events[first_end - 1].message.stop_reason == "toolUse"
    # the last request carries the whole tool loop, results grouped in one user message, and no failed attempt
    sent = wire.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user", "assistant", "user"]
    results = [b for b in sent[4]["content"] if b["type"] == "tool_result"]
    assert [(b["tool_use_id"], b["content"]) for b in results] == [("toolu_2", "echo: two"), ("toolu_3", "echo: three")]
    context = Session.open(agent.session.path).context().messages
    assert [m.role for m in context] == [
        "system", "user", "assistant", "toolResult", "assistant", "toolResult", "toolResult", "assistant"
    ]  # fmt: skip

    wire.queue("anthropic", raw_reply(b"event: message_start\ndata: {not json\n\n"))
    broken = asyncio.run(
        make_agent(wire, tmp_path / "b", "anthropic-messages", settings=AgentSettings(retry=RetrySettings(enabled=False))).prompt("hi")
    )
    assert broken.stop_reason == "error" and "Malformed stream" in broken.error_message


def test_continue_after_a_failed_reply_asks_again_from_before_it(wire, tmp_path):
    # continue_() said "after an error, for example" but refused: the failed reply was the last message
    wire.queue("openai", http_error(500, "boom"), openai_reply("recovered"))
    agent = make_agent(wire, tmp_path, settings=AgentSettings(retry=RetrySettings(enabled=False)))
    assert asyncio.run(agent.prompt("hi")).stop_reason == "error"
    result = asyncio.run(agent.continue_())
    assert result.text == "recovered" and result.ok
    assert [m["role"] for m in wire.requests[-1].body["messages"]] == ["system", "user"]
    s = Session.open(agent.session.path)
    system, user, failed, answer = [e for e in s.raw_entries() if e["type"] == "message"]
    assert system["message"]["role"] == "system" and user["parentId"] == system["id"]
    assert failed["parentId"] == user["id"] == answer["parentId"]  # a sibling of the failure, as a retry is
    assert [m.role for m in s.context().messages] == ["system", "user", "assistant"]
    assert s.context().messages[-1].text == "recovered"
    with pytest.raises(RuntimeError, match="nothing to continue from"):
        asyncio.run(agent.continue_())  # the last reply is a complete answer: prompt instead


def test_each_branch_records_the_thinking_level_it_ran_at(tmp_path):
    """The experiment notebook's loop: back to one node, set the level, ask; every branch's file says its level."""
    seen: list[str] = []
    agent = Agent(Session.create(tmp_path), model="offline/echo", thinking="medium")
    start = agent.session.leaf_id
    for level in ["off", "off", "medium", "off"]:
        asyncio.run(agent.checkout(start))
        agent.set_thinking_level(level)
        result = asyncio.run(agent.prompt(f"asked at {level}"))
        seen.append(Session.open(agent.session.path, readonly=True).context(result.entry_ids[-1]).thinking_level)
    assert seen == ["off", "off", "medium", "off"]
