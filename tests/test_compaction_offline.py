"""Compaction through a real provider: the offline model, wired the way the agent wires a summarize function."""

from __future__ import annotations

import asyncio

from test_compaction_gen import Builder, compact_session

from pi_jupyter import Agent
from pi_jupyter.compaction import (
    CompactionSettings,
    SummaryRequest,
    checkout_with_summary,
    compaction_trigger,
    conversation_text,
    is_context_overflow,
)
from pi_jupyter.providers import LlmRequest, StreamOptions, complete
from pi_jupyter.providers.offline import offline_model
from pi_jupyter.session import Session

MODEL = offline_model("summarizer", context_window=60_000)


async def summarize(request: SummaryRequest):
    """What the agent does with a SummaryRequest: one model call with the request's system prompt and message."""
    llm = LlmRequest(system_prompt=request.system_prompt, messages=[request.user_message()])
    return await complete(MODEL, llm, StreamOptions(max_tokens=request.max_tokens, reasoning="high" if request.reasoning else None))


def test_a_fact_from_the_first_turn_survives_many_compactions_through_the_offline_model() -> None:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s, model=("offline", "summarizer", "offline"))
    b.turn("remember: the launch code is PINEAPPLE-42")
    done = 0
    for i in range(40):
        b.turn(f"task {i}: " + "refactor the loader " * 20, rounds=2, result="ok " * 300)
        if i % 5 == 4:
            done += asyncio.run(compact_session(s, summarize, 1500)) is not None
    assert done >= 6
    context = conversation_text(s.context().raw_messages)
    assert "PINEAPPLE-42" in context
    assert context.count("[User]: The conversation history before this point was compacted") == 1


def test_the_offline_models_overflow_error_triggers_compaction() -> None:
    tiny = offline_model("tiny", context_window=2_000)
    s = Session.in_memory()
    b = Builder(s, model=("offline", "tiny", "offline"))
    for i in range(6):
        b.turn(f"question {i} " + "words " * 400)
    request = LlmRequest(messages=s.context().llm())
    reply = asyncio.run(complete(tiny, request))
    assert reply.stop_reason == "error" and is_context_overflow(reply, tiny.context_window)
    s.append_message(reply)
    trigger = compaction_trigger(
        s.raw_branch(), context_window=tiny.context_window, settings=CompactionSettings(reserve_tokens=500), model=("offline", "tiny")
    )
    assert trigger is not None and trigger.reason == "overflow"


def test_branch_summary_through_the_offline_model() -> None:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s, model=("offline", "summarizer", "offline"))
    b.turn("first question")
    base = s.leaf_id
    b.turn("try the risky migration on `db.sqlite`", rounds=1, tool="edit")
    outcome = asyncio.run(checkout_with_summary(s, base, summarize, context_window=MODEL.context_window))
    assert outcome.summary is not None and "risky migration" in outcome.summary.summary
    assert s.context().raw_messages[-1]["role"] == "branchSummary"


def test_manual_compaction_in_a_small_window_fits_pis_defaults_to_it() -> None:
    """pi's keep-recent default (20,000 tokens) is larger than a 16k window: a manual compact
    used it unfitted and always answered "Nothing to compact" (automatic compaction fitted it)."""
    small = offline_model("small16k", context_window=16_000)
    agent = Agent(Session.in_memory(), model=small, thinking="off")
    agent.settings.compaction = CompactionSettings(enabled=False)  # manual compaction still works
    for i in range(10):
        asyncio.run(agent.prompt(f"Question {i}: " + "lorem ipsum " * 300))
    result = asyncio.run(agent.compact())
    assert "Question 0" in result.summary
    messages = agent.session.context().raw_messages
    assert [m["role"] for m in messages[:2]] == ["system", "compactionSummary"]  # the prompt snapshot leads
    assert sum(m["role"] == "system" for m in messages) == 1  # kept entries skip it: not repeated
    assert "Question 9" in conversation_text(messages[2:])  # the recent turns are kept as they were


def test_a_summarized_checkout_on_a_small_model_fits_its_window() -> None:
    """The offline model refuses a request larger than its window, as a server does; pi's branch
    budget (window - 16384) is no limit for an 8k model, so the summary request overflowed."""
    small = offline_model("small8k", context_window=8_000)
    agent = Agent(Session.in_memory(), model=small, thinking="off")
    asyncio.run(agent.prompt("base question"))
    fork_point = agent.session.leaf_id
    for i in range(12):
        asyncio.run(agent.prompt(f"explore {i}: " + "lorem ipsum " * 120))
    leaf = asyncio.run(agent.checkout(fork_point, summarize=True))
    entry = agent.session.raw_entry(leaf)
    assert entry["type"] == "branch_summary" and entry["parentId"] == fork_point
    assert "explore 11" in entry["summary"]
