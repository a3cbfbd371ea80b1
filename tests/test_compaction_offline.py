"""Compaction through a real provider: the offline model, wired the way the agent wires a summarize function."""

from __future__ import annotations

import asyncio

from test_compaction_gen import Builder, compact_session

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
