"""Compaction through the Agent: automatic (threshold, overflow), manual, branch summaries, aborts.

The offline model is a real provider with a context window that it enforces; the wire server
runs the real OpenAI SDK. Every request is measured as the provider sees it.
"""

from __future__ import annotations

import asyncio
import json
import math

import pytest
from wire.helpers import wire_model
from wire.server import openai_reply

from pi_jupyter import Agent, AgentSettings, Session
from pi_jupyter.agent.agent import RetrySettings
from pi_jupyter.compaction import CompactionSettings, SummaryAborted
from pi_jupyter.compaction.prompts import TURN_PREFIX_SUMMARIZATION_PROMPT
from pi_jupyter.messages import COMPACTION_SUMMARY_PREFIX
from pi_jupyter.providers import offline_model, stream
from pi_jupyter.providers.offline import input_chars

FACT = "My name is Ada and the launch code is PINEAPPLE-42."


class Recorder:
    """A stream function that records the size of every request, then calls the real provider."""

    def __init__(self) -> None:
        self.sizes: list[int] = []
        self.summaries = 0

    def __call__(self, model, request, options):
        self.sizes.append(math.ceil(input_chars(request) / 4))
        if request.system_prompt and "summar" in request.system_prompt.lower():
            self.summaries += 1
        return stream(model, request, options)


def test_200_turns_in_a_small_window_always_fit_and_keep_the_first_fact(tmp_path):
    window = 4_000
    model = offline_model("small", context_window=window)
    rec = Recorder()
    agent = Agent(Session.create(tmp_path), model=model, thinking="off", stream=rec)
    events = []
    agent.subscribe(lambda e: events.append(e) if e.type.startswith("auto_compaction") else None)
    asyncio.run(agent.prompt(FACT))
    for turn in range(2, 201):
        result = asyncio.run(agent.prompt(f"Turn {turn}: please look at section {turn} of the report. " + "details " * 30))
        assert result.ok, (turn, result.error_message)
    assert max(rec.sizes) <= window, f"a request of {max(rec.sizes)} tokens exceeded the {window}-token window"
    starts = [e for e in events if e.type == "auto_compaction_start"]
    ends = [e for e in events if e.type == "auto_compaction_end"]
    assert len(starts) >= 10 and len(starts) == len(ends) and all(e.result for e in ends)
    assert {e.reason for e in starts} == {"threshold"}
    context = Session.open(agent.session.path).context()
    text = json.dumps(context.raw_messages)
    assert "PINEAPPLE-42" in text  # stated in turn 1, still there at turn 200
    assert [m["role"] for m in context.raw_messages[:2]] == ["system", "compactionSummary"]  # the prompt snapshot leads
    entries = Session.open(agent.session.path).raw_entries()
    users = [e for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]
    assert len(users) == 200  # every original entry is still in the file


def test_overflow_error_compacts_and_retries_once(tmp_path):
    window = 4_000
    small = offline_model("tinywindow", context_window=window)
    session = Session.create(tmp_path)
    agent = Agent(session, model=small, thinking="off")
    agent.settings.compaction = CompactionSettings(enabled=False)
    for i in range(7):
        asyncio.run(agent.prompt(f"Question {i}: " + "lorem ipsum " * 50))
    agent.settings.compaction = CompactionSettings(reserve_tokens=200, keep_recent_tokens=400)
    events = []
    agent.subscribe(events.append)
    # this prompt pushes the request over the window: the model refuses it (a 400-style overflow)
    result = asyncio.run(agent.prompt("A long question: " + "dolor sit amet " * 530))
    assert result.ok, result.error_message
    kinds = [(e.type, getattr(e, "reason", None), getattr(e, "will_retry", None)) for e in events if e.type.startswith("auto_")]
    assert kinds[:2] == [("auto_compaction_start", "overflow", None), ("auto_compaction_end", None, True)]
    assert all(k[1] in (None, "threshold") for k in kinds[2:])  # the long answer may fill the window again
    stops = [m.stop_reason for m in result.messages if m.role == "assistant"]
    assert stops == ["error", "stop"]  # the refused attempt, then the retried answer
    context = Session.open(session.path).context()
    assert [m["role"] for m in context.raw_messages[:2]] == ["system", "compactionSummary"]  # the prompt snapshot leads
    assert "Question 0" in context.raw_messages[1]["summary"]


def _last_user_text(body: dict) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


def test_manual_compaction_with_instructions_over_the_wire(wire, tmp_path):
    def respond(request):
        body = json.dumps(request.body)
        if "<conversation>" in body:
            return openai_reply("## Goal\n- Ada asked about the launch code PINEAPPLE-42")
        return openai_reply("ok " * 40)

    wire.respond_with("openai", respond)
    agent = Agent(
        Session.create(tmp_path), model=wire_model(wire), api_key="sk-test", settings=AgentSettings(retry=RetrySettings(enabled=False))
    )
    asyncio.run(agent.prompt(FACT))
    for i in range(6):
        asyncio.run(agent.prompt(f"Follow-up {i}: " + "more words " * 200))
    result = asyncio.run(agent.compact("Focus on the launch code", keep_recent_tokens=600))
    assert "PINEAPPLE-42" in result.summary
    # A split turn sends its prefix summary concurrently with the history one, so the order of
    # the two requests on the wire varies; pick the history request by its prompt.
    summary_request, prompt = next(
        (r, text)
        for r in wire.requests
        if "<conversation>" in (text := _last_user_text(r.body)) and TURN_PREFIX_SUMMARIZATION_PROMPT not in text
    )
    assert "[User]: " + FACT in prompt and "Additional focus: Focus on the launch code" in prompt
    assert summary_request.body["messages"][0]["role"] in ("system", "developer")
    wire.queue("openai", openai_reply("after"))
    asyncio.run(agent.prompt("What was the code?"))
    sent = wire.requests[-1].body["messages"]
    first_user = next(m for m in sent if m["role"] == "user")
    text = first_user["content"] if isinstance(first_user["content"], str) else first_user["content"][0]["text"]
    assert text.startswith(COMPACTION_SUMMARY_PREFIX) and "PINEAPPLE-42" in text
    assert "What was the code?" in json.dumps(sent[-1])


def test_compaction_interrupted_by_an_abort_leaves_the_session_as_it_was(tmp_path):
    model = offline_model("slowsum")
    session = Session.create(tmp_path)
    agent = Agent(session, model=model, thinking="off")
    for i in range(6):
        asyncio.run(agent.prompt(f"Turn {i} " + "text " * 300))
    model.compat["delta_delay_s"] = 0.05  # only the summary streams slowly (the history was written at full speed)
    before = open(session.path, "rb").read()

    async def run():
        task = asyncio.ensure_future(agent.compact(keep_recent_tokens=300))
        await asyncio.sleep(0.3)
        agent.abort()
        return await task

    with pytest.raises(SummaryAborted):
        asyncio.run(run())
    assert open(session.path, "rb").read() == before
    assert [m.role for m in agent.messages] == [m.role for m in Session.open(session.path).context().messages]


def test_checkout_with_a_branch_summary_from_python_and_the_session_api(tmp_path):
    session = Session.create(tmp_path)
    agent = Agent(session, model="offline/echo", thinking="off")
    asyncio.run(agent.prompt("Plan A: use a linear model."))
    fork_point = session.leaf_id
    asyncio.run(agent.prompt("Try plan A on the March data."))
    asyncio.run(agent.prompt("Plan A fails on outliers."))
    leaf = asyncio.run(agent.checkout(fork_point, summarize=True, label="back to A"))
    label = session.raw_entry(leaf)  # as in pi, the label entry follows the summary it labels
    assert label["type"] == "label"
    summary = session.raw_entry(label["targetId"])
    assert summary["type"] == "branch_summary" and summary["parentId"] == fork_point
    assert "The user explored a different conversation branch" in summary["summary"] and "outliers" in summary["summary"]
    assert session.label_of(summary["id"]) == "back to A"
    assert agent.messages[-1].role == "branchSummary"
    # the synchronous session API goes through the same agent
    asyncio.run(agent.prompt("Plan B: gradient boosting."))
    leaf2 = session.checkout(fork_point, summarize=True)
    assert Session.open(session.path).raw_entry(leaf2)["type"] == "branch_summary"
    assert Session.open(session.path).leaf_id == leaf2  # persisted: a reopened session resumes there


def test_200_turns_over_the_real_sdk_with_a_small_window(wire, tmp_path):
    """The OpenAI SDK against a server that enforces a 3,000-token window and reports usage."""
    from wire.server import http_error

    window = 3_000
    sizes: list[int] = []

    def respond(request):
        body = request.body
        size = math.ceil(len(json.dumps(body["messages"], ensure_ascii=False)) / 4)
        sizes.append(size)
        if size > window:
            return http_error(400, f"This model's maximum context length is {window} tokens. However, you requested {size} tokens.")
        last = body["messages"][-1]["content"]
        last = last if isinstance(last, str) else " ".join(p.get("text", "") for p in last)
        usage = {"prompt_tokens": size, "completion_tokens": 20, "total_tokens": size + 20}
        if "<conversation>" in last:
            # a summarizer that keeps the fact wherever it sees it (in the conversation or the previous summary)
            keep = "- The launch code is PINEAPPLE-42." if "PINEAPPLE-42" in last else "- (nothing notable)"
            return openai_reply(f"## Goal\n{keep}\n\n## Progress\n### Done\n- [x] earlier turns", usage=usage)
        return openai_reply("Noted. " + "ok " * 30, usage=usage)

    wire.respond_with("openai", respond)
    model = wire_model(wire, context_window=window, max_tokens=500)
    agent = Agent(Session.create(tmp_path), model=model, api_key="sk-test", thinking="off", system_prompt="You are terse.")
    agent.settings.retry = RetrySettings(enabled=False)
    asyncio.run(agent.prompt(FACT))
    for turn in range(2, 201):
        result = asyncio.run(agent.prompt(f"Turn {turn}: " + "status update " * 25))
        assert result.ok, (turn, result.error_message)
    assert max(sizes) <= window, f"a request of {max(sizes)} tokens was sent to a {window}-token window"
    context = Session.open(agent.session.path).context()
    assert [m["role"] for m in context.raw_messages[:2]] == ["system", "compactionSummary"]  # the prompt snapshot leads
    assert "PINEAPPLE-42" in context.raw_messages[1]["summary"]
    compactions = [e for e in Session.open(agent.session.path).raw_entries() if e["type"] == "compaction"]
    assert len(compactions) >= 10


def test_switching_to_a_smaller_model_compacts_before_the_first_request(tmp_path):
    # pi's check before a prompt (pi-design 4.3): the last reply's usage already passes the new
    # model's window minus the reserve, so the history is compacted before anything is sent.
    big = offline_model("big", context_window=128_000)
    small = offline_model("small8k", context_window=8_000)
    rec = Recorder()
    agent = Agent(Session.create(tmp_path), model=big, thinking="off", stream=rec)
    asyncio.run(agent.prompt(FACT))
    for turn in range(12):
        asyncio.run(agent.prompt(f"turn {turn}: " + "a long note about the data " * 60))
    assert not any(e["type"] == "compaction" for e in agent.session.raw_entries())  # the big window never needed it
    agent.set_model(small)
    events = []
    agent.subscribe(lambda e: events.append(e.type) if e.type.startswith("auto_compaction") else None)
    rec.sizes.clear()
    result = asyncio.run(agent.prompt("What is the launch code?"))
    assert result.stop_reason == "stop", result.error_message
    assert events[:2] == ["auto_compaction_start", "auto_compaction_end"]
    assert any(e["type"] == "compaction" for e in agent.session.raw_entries())
    assert max(rec.sizes) <= small.context_window  # the summary request and the prompt both fit
    assert "PINEAPPLE-42" in json.dumps([m.model_dump(mode="json") for m in agent.session.context().messages])
