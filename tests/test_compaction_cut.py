"""Cut points and compaction preparation: pi's choices, and the pi bugs the default mode fixes."""

from __future__ import annotations

import asyncio
import json

import pytest
from test_compaction_gen import Builder, QuotingSummarizer, compact_session

from pi_jupyter.compaction import (
    CompactionSettings,
    NothingToCompact,
    compact,
    conversation_text,
    estimate_tokens_pi,
    find_cut_point,
    find_turn_start_index,
    find_valid_cut_points,
    prepare_compaction,
)
from pi_jupyter.session import Session


def _keep_from(branch: list[dict], entry_id: str) -> int:
    """The keep budget whose crossing falls exactly on ``entry_id`` (pi's estimate of it and everything after)."""
    at = next(i for i, e in enumerate(branch) if e["id"] == entry_id)
    return sum(estimate_tokens_pi(e["message"]) for e in branch[at:] if e["type"] == "message")


def _prep(session: Session, keep: int, **kw):
    return prepare_compaction(session.raw_branch(), CompactionSettings(keep_recent_tokens=keep), **kw)


def test_cut_keeps_about_the_budget_and_never_starts_at_a_tool_result() -> None:
    s = Session.in_memory()
    b = Builder(s)
    for i in range(10):
        b.turn(f"task {i} " + "word " * 50, rounds=2, result="r" * 400)
    branch = s.raw_branch()
    points = set(find_valid_cut_points(branch, 0, len(branch)))
    for keep in (1, 100, 300, 1000, 3000):
        cut = find_cut_point(branch, 0, len(branch), keep)
        assert cut.first_kept_index in points
        assert branch[cut.first_kept_index]["message"]["role"] != "toolResult"
        after_first = sum(estimate_tokens_pi(e["message"]) for e in branch[cut.first_kept_index + 1 :])
        assert after_first < keep  # the budget is crossed at the first kept message or before it


def _crossing(branch: list[dict], keep: int) -> int:
    """The index where, walking back from the end, the kept messages first reach ``keep`` tokens (0: never)."""
    total = 0
    for i in range(len(branch) - 1, -1, -1):
        total += estimate_tokens_pi(branch[i]["message"])
        if total >= keep:
            return i
    return 0


@pytest.mark.parametrize("keep", [1, 100, 300, 1000, 3000, 10**9])
def test_cut_is_the_first_valid_point_at_or_after_the_budget_crossing(keep: int) -> None:
    # pinned exactly: a cut one point too late keeps less than the budget, one too early keeps a turn too many
    s = Session.in_memory()
    b = Builder(s)
    for i in range(10):
        b.turn(f"task {i} " + "word " * 50, rounds=2, result="r" * 400)
    branch = s.raw_branch()
    points = sorted(find_valid_cut_points(branch, 0, len(branch)))
    crossing = _crossing(branch, keep)
    expected = next((p for p in points if p >= crossing), points[0])
    cut = find_cut_point(branch, 0, len(branch), keep)
    assert cut.first_kept_index == expected
    # what is kept: the budget, plus only the tool results between the crossing and the cut (never a cut point)
    kept = sum(estimate_tokens_pi(e["message"]) for e in branch[cut.first_kept_index :])
    skipped = branch[crossing : cut.first_kept_index]
    assert all(e["message"]["role"] == "toolResult" for e in skipped)
    assert kept + sum(estimate_tokens_pi(e["message"]) for e in skipped) >= min(keep, sum(estimate_tokens_pi(e["message"]) for e in branch))


def test_split_turn_is_reported_with_its_turn_start() -> None:
    s = Session.in_memory()
    b = Builder(s)
    b.turn("first request", rounds=1)
    u2 = b.user("second request, a long agentic turn")
    for r in range(8):
        b.assistant(f"step {r}", [("read", {"path": f"f{r}.py"})])
        b.results("x" * 800)
    b.assistant("finished")
    prep = _prep(s, 500)
    assert prep.is_split_turn
    assert s.raw_branch()[prep.cut.turn_start_index]["id"] == u2
    assert [m["role"] for m in prep.turn_prefix_messages][0] == "user"
    assert "first request" in conversation_text(prep.messages_to_summarize)
    assert "second request" in conversation_text(prep.turn_prefix_messages)
    assert find_turn_start_index(s.raw_branch(), prep.first_kept_index, 0) == prep.cut.turn_start_index


def test_fix_pi_10_12a_settings_entry_before_a_user_message_is_not_a_split_turn() -> None:
    """pi-design §10 item 12 (first half): pi absorbs the thinking_level_change before the cut user
    message, then sees a non-user entry and calls the whole previous turn a split-turn prefix."""
    s = Session.in_memory()
    b = Builder(s)
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    b.turn("earlier request", rounds=1)
    level = s.append_thinking_level_change("high")
    u = b.user("the request that starts the kept part " + "w " * 200)
    b.assistant("answer " * 100)
    keep = _keep_from(s.raw_branch(), u)

    pi = _prep(s, keep, pi_compatible=True)
    assert pi.first_kept_entry_id == level
    assert pi.is_split_turn and not pi.messages_to_summarize  # the bug: a clean turn boundary read as a split turn
    assert "earlier request" in conversation_text(pi.turn_prefix_messages)

    fixed = _prep(s, keep)
    assert fixed.first_kept_entry_id == level  # the same entries are kept
    assert not fixed.is_split_turn and not fixed.turn_prefix_messages
    assert "earlier request" in conversation_text(fixed.messages_to_summarize)
    assert fixed.deviations == ("pi-10.12a",)


def test_fix_pi_10_12b_huge_last_tool_result_still_lets_the_history_be_summarized() -> None:
    """pi-design §10 item 12 (second half): when the budget is crossed inside trailing tool results,
    pi finds no cut point after the crossing and keeps everything (summarizing nothing)."""
    s = Session.in_memory()
    b = Builder(s)
    for i in range(4):
        b.turn(f"request {i}", rounds=1)
    b.user("read the big log")
    call = b.assistant("reading", [("read", {"path": "big.log"})])
    b.results("log line\n" * 3000)  # the session ends on a huge tool result

    pi = _prep(s, 1000, pi_compatible=True)
    assert not pi.messages_to_summarize and not pi.turn_prefix_messages  # nothing summarized, nothing gained

    fixed = _prep(s, 1000)
    assert fixed.first_kept_entry_id == call  # the nearest valid cut before the crossing
    assert fixed.is_split_turn and "request 3" in conversation_text(fixed.messages_to_summarize)
    assert "read the big log" in conversation_text(fixed.turn_prefix_messages)
    # pi 1.6 fixed it the same way: the default (which chooses as pi 1.6) no longer deviates from current pi
    assert "pi-10.12b" not in fixed.deviations
    assert _prep(s, 1000, pi_compatible="1.6").first_kept_entry_id == call


def test_fix_pi_10_13a_nothing_to_summarize_is_reported_not_sent() -> None:
    """pi-design §10 item 13: when everything fits in the kept part pi still asks the model to summarize an empty conversation."""
    s = Session.in_memory()
    b = Builder(s)
    s.append_model_change("anthropic", "claude-sonnet-4-5")
    b.turn("hello")
    with pytest.raises(NothingToCompact) as err:
        _prep(s, 20000)
    assert err.value.reason == "too_small" and str(err.value) == "Nothing to compact (session too small)"

    pi = _prep(s, 20000, pi_compatible=True)
    summarizer = QuotingSummarizer()
    asyncio.run(compact(pi, summarizer))
    assert "<conversation>\n\n</conversation>" in summarizer.requests[0].prompt_text  # what pi sends


def test_already_compacted_and_empty_branches() -> None:
    s = Session.in_memory()
    with pytest.raises(NothingToCompact):
        _prep(s, 100)
    b = Builder(s)
    for i in range(5):  # the bulk in tool output, which the quoting summary leaves out: the compaction shrinks the context
        b.turn(f"request {i} " + "x " * 20, rounds=1, result="x " * 300)
    asyncio.run(compact_session(s, QuotingSummarizer(), 100))
    with pytest.raises(NothingToCompact) as err:
        _prep(s, 100)
    assert err.value.reason == "already_compacted" and str(err.value) == "Already compacted"


def test_range_starts_at_the_previous_compactions_first_kept_entry() -> None:
    """pi-design §10 item 10 (fixed in pi 0.73.1 too): what the previous compaction kept is summarized or kept again, never dropped."""
    s = Session.in_memory()
    b = Builder(s)
    for i in range(6):  # the bulk in tool output, which the quoting summary leaves out: the compaction shrinks the context
        b.turn(f"old request {i} " + "x " * 20, rounds=1, result="x " * 300)
    first = asyncio.run(compact_session(s, QuotingSummarizer(), 700))
    kept_id = s.raw_entry(first)["firstKeptEntryId"]
    kept_texts = [
        e["message"]["content"][0]["text"]
        for e in s.raw_branch()[[e["id"] for e in s.raw_branch()].index(kept_id) :]
        if e["type"] == "message" and e["message"]["role"] == "user"
    ]
    assert kept_texts
    for i in range(3):
        b.turn(f"new request {i} " + "y " * 20, rounds=1, result="y " * 300)
    prep = _prep(s, 400)
    branch = s.raw_branch()
    assert branch[prep.boundary_start]["id"] == kept_id
    text = conversation_text(prep.messages_to_summarize)
    assert all(t in text for t in kept_texts)
    assert prep.previous_summary == s.raw_entry(first)["summary"]


def test_a_custom_estimator_changes_what_is_kept() -> None:
    s = Session.in_memory()
    b = Builder(s)
    for i in range(12):
        b.turn(f"请求 {i} " + "中文文本" * 200)
    from pi_jupyter.compaction import estimate_tokens

    by_pi = _prep(s, 1000)
    by_ours = _prep(s, 1000, estimator=estimate_tokens)
    # pi's chars/4 counts CJK at a quarter: it keeps about four times more than the budget
    assert by_ours.first_kept_index > by_pi.first_kept_index


def test_a_compaction_summarizes_what_the_model_saw_never_a_forgotten_entry_nor_the_prompt() -> None:
    secret = "the door code is 4711"
    s = Session.in_memory()
    b = Builder(s)
    lead = s.append_message({"role": "system", "content": "", "sections": {"preamble": "P " * 500}, "timestamp": 1})
    for i in range(3):
        b.turn(f"request {i}", rounds=1)
    forgotten = b.user(secret)
    b.assistant("noted")
    s.edit_context(forgotten, None)
    delta = s.append_message({"role": "system", "content": "Be brief.", "timestamp": 2})
    for i in range(3, 6):
        b.turn(f"request {i} " + "word " * 100, rounds=1)
    prep = _prep(s, 300)
    assert "request 0" in conversation_text(prep.messages_to_summarize)
    summarized = json.dumps(prep.messages_to_summarize + prep.turn_prefix_messages)
    assert secret not in summarized and "system" not in {m["role"] for m in prep.messages_to_summarize}
    assert prep.first_kept_entry_id not in (lead, delta)
    ids = s.branch_ids()
    assert ids.index(forgotten) < ids.index(prep.first_kept_entry_id)  # the forgotten entry lies in the summarized part
