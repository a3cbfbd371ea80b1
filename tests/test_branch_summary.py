"""Branch summaries: what is left behind, fitting it to the window, pi's prompt, and where the summary goes."""

from __future__ import annotations

import asyncio

import pytest
from test_compaction_gen import Builder, QuotingSummarizer

from pi_jupyter.compaction import (
    BranchSummarySettings,
    SummaryAborted,
    SummaryError,
    SummaryRequest,
    apply_checkout,
    checkout_with_summary,
    collect_branch_entries,
    estimate_tokens,
    generate_branch_summary,
    plan_checkout,
    prepare_branch_entries,
)
from pi_jupyter.compaction.prompts import BRANCH_SUMMARY_PREAMBLE, BRANCH_SUMMARY_PROMPT, SUMMARIZATION_SYSTEM_PROMPT
from pi_jupyter.messages import AssistantMessage, TextContent
from pi_jupyter.session import Session
from pi_jupyter.session.report import EntryNotFoundError


def _tree() -> tuple[Session, dict[str, str]]:
    """main: u1 a1 u2 a2 u3 a3; side branch from a1: v1 (edit tool) r1 w1."""
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    ids = {}
    ids["u1"] = b.user("first question")
    ids["a1"] = b.assistant("first answer")
    ids["u2"] = b.user("second question")
    ids["a2"] = b.assistant("second answer")
    ids["u3"] = b.user("third question")
    ids["a3"] = b.assistant("third answer")
    s.checkout(ids["a1"], persist=False)
    ids["v1"] = b.user("try another way")
    ids["e1"] = b.assistant("editing", [("edit", {"path": "src/x.py", "oldText": "a", "newText": "b"})])
    ids["r1"] = b.results("edited")
    ids["w1"] = b.assistant("the other way works")
    return s, ids


def test_collect_goes_back_to_the_common_ancestor() -> None:
    s, ids = _tree()
    got = collect_branch_entries(s, ids["w1"], ids["a3"])
    assert got.common_ancestor_id == ids["a1"]
    assert [e["id"] for e in got.entries] == [ids["v1"], ids["e1"], ids["r1"], ids["w1"]]
    up = collect_branch_entries(s, ids["a3"], ids["u2"])  # target on the old path: what came after it
    assert up.common_ancestor_id == ids["u2"] and [e["id"] for e in up.entries] == [ids["a2"], ids["u3"], ids["a3"]]
    down = collect_branch_entries(s, ids["a1"], ids["w1"])  # going deeper leaves nothing behind
    assert down.entries == [] and down.common_ancestor_id == ids["a1"]
    everything = collect_branch_entries(s, ids["a3"], None)
    assert len(everything.entries) == 6 and everything.common_ancestor_id is None
    assert collect_branch_entries(s, None, ids["a3"]).entries == []
    from pi_jupyter.session.index import EntryIndex

    index = EntryIndex()
    for e in s.raw_entries():
        index.add(e)
    assert collect_branch_entries(index, ids["w1"], ids["a3"]) == got


def test_prepare_skips_tool_results_and_keeps_the_newest_that_fit() -> None:
    s, ids = _tree()
    entries = collect_branch_entries(s, ids["w1"], ids["a3"]).entries
    prep = prepare_branch_entries(entries)
    assert [m["role"] for m in prep.messages] == ["user", "assistant", "assistant"]
    assert prep.file_ops.details() == {"readFiles": [], "modifiedFiles": ["src/x.py"]}
    assert prepare_branch_entries(entries, pi_compatible=True).messages == prep.messages


def test_files_touched_before_the_budget_ran_out_are_still_listed() -> None:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    b.user("change things")
    b.assistant("editing", [("edit", {"path": "src/x.py", "oldText": "a", "newText": "b"})])
    b.results()
    b.assistant("checking " * 50)
    b.assistant("all good")
    entries = s.raw_branch()
    budget = estimate_tokens(entries[-1]["message"])
    fixed = prepare_branch_entries(entries, token_budget=budget)
    assert [m["content"][0]["text"] for m in fixed.messages] == ["all good"]
    assert fixed.file_ops.details()["modifiedFiles"] == ["src/x.py"] and fixed.deviations == ("pi-branch-fileops",)
    pi = prepare_branch_entries(entries, token_budget=budget, pi_compatible=True)
    assert pi.file_ops.details()["modifiedFiles"] == []  # pi lists only files of messages it walked over


def test_earlier_summaries_squeeze_in_under_ninety_percent_of_the_budget() -> None:
    s = Session.in_memory()
    b = Builder(s)
    s.append_compaction("C" * 400, "nowhere", 1)
    s.branch_with_summary(s.leaf_id, "B" * 400, {"readFiles": ["old.txt"], "modifiedFiles": ["old.py"]}, from_hook=False)
    b.user("x" * 200)
    entries = s.raw_branch()
    sizes = [estimate_tokens({"role": "user", "content": "x" * 200})]
    prep = prepare_branch_entries(entries, token_budget=sizes[0] + 10)
    assert [m["role"] for m in prep.messages] == ["branchSummary", "user"]  # over budget, but a summary, and total < 90%
    assert prep.file_ops.details() == {"readFiles": ["old.txt"], "modifiedFiles": ["old.py"]}


def test_generate_uses_pis_prompt_preamble_and_file_tags() -> None:
    s, ids = _tree()
    entries = collect_branch_entries(s, ids["w1"], ids["a3"]).entries
    summarizer = QuotingSummarizer()
    result = asyncio.run(generate_branch_summary(entries, summarizer, context_window=200_000))
    (req,) = summarizer.requests
    assert req.kind == "branch" and req.system_prompt == SUMMARIZATION_SYSTEM_PROMPT and req.max_tokens == 2048 and not req.reasoning
    assert req.prompt_text.startswith("<conversation>\n[User]: try another way\n\n[Assistant]: editing\n\n[Assistant tool calls]: edit(")
    assert req.prompt_text.endswith("\n</conversation>\n\n" + BRANCH_SUMMARY_PROMPT)
    assert "[Tool result]" not in req.prompt_text
    assert result is not None and result.summary.startswith(BRANCH_SUMMARY_PREAMBLE + "## Goal\ntry another way")
    assert result.summary.endswith("\n\n<modified-files>\nsrc/x.py\n</modified-files>")
    assert result.details == {"readFiles": [], "modifiedFiles": ["src/x.py"]}

    custom = QuotingSummarizer()
    asyncio.run(generate_branch_summary(entries, custom, custom_instructions="only the edits"))
    assert custom.requests[0].prompt_text.endswith(BRANCH_SUMMARY_PROMPT + "\n\nAdditional focus: only the edits")
    replaced = QuotingSummarizer()
    asyncio.run(generate_branch_summary(entries, replaced, custom_instructions="Just list files.", replace_instructions=True))
    assert replaced.requests[0].prompt_text.endswith("</conversation>\n\nJust list files.")


def test_the_budget_is_the_window_minus_the_reserve() -> None:
    s = Session.in_memory()
    b = Builder(s)
    for i in range(10):
        b.turn(f"q{i} " + "w " * 500)
    summarizer = QuotingSummarizer()
    asyncio.run(
        generate_branch_summary(s.raw_branch(), summarizer, context_window=2000, settings=BranchSummarySettings(reserve_tokens=1000))
    )
    text = summarizer.requests[0].prompt_text
    assert "q9" in text and "q0" not in text


def test_nothing_to_summarize() -> None:
    s = Session.in_memory()
    s.append_model_change("a", "b")
    s.label(s.leaf_id, "x")
    never = QuotingSummarizer()
    assert asyncio.run(generate_branch_summary(s.raw_branch(), never)) is None and never.requests == []
    pi = asyncio.run(generate_branch_summary(s.raw_branch(), never, pi_compatible=True))
    assert pi is not None and pi.summary == "No content to summarize" and never.requests == []


@pytest.mark.parametrize(
    ("reply", "error", "match"),
    [
        ({"stop_reason": "error", "error_message": "quota"}, SummaryError, "^quota$"),
        ({"stop_reason": "aborted"}, SummaryAborted, "aborted"),
        ({"content": []}, SummaryError, "no summary text"),
        ({"stop_reason": "length", "content": [TextContent(text="## Goal")]}, SummaryError, "cut off"),
    ],
)
def test_failures_raise_and_write_nothing(reply: dict, error: type, match: str) -> None:
    s, ids = _tree()
    before = (len(s), s.leaf_id)

    async def summarize(request: SummaryRequest) -> AssistantMessage:
        return AssistantMessage(**reply)

    with pytest.raises(error, match=match):
        asyncio.run(checkout_with_summary(s, ids["a3"], summarize))
    assert (len(s), s.leaf_id) == before


def test_plan_puts_the_leaf_where_pi_does() -> None:
    s, ids = _tree()
    user = plan_checkout(s, ids["w1"], ids["u2"])  # a user message: edit and resend it
    assert user.new_leaf_id == ids["a1"] and user.editor_text == "second question"
    assert user.common_ancestor_id == ids["a1"] and [e["id"] for e in user.entries_to_summarize] == [
        ids["v1"],
        ids["e1"],
        ids["r1"],
        ids["w1"],
    ]
    other = plan_checkout(s, ids["w1"], ids["a2"])
    assert other.new_leaf_id == ids["a2"] and other.editor_text is None
    root = plan_checkout(s, ids["w1"], ids["u1"])
    assert root.new_leaf_id is None and root.editor_text == "first question"
    assert plan_checkout(s, ids["w1"], ids["w1"]).noop
    s.label(ids["a2"], "baseline")
    assert plan_checkout(s, ids["w1"], "baseline").target_id == ids["a2"]
    with pytest.raises(EntryNotFoundError):
        plan_checkout(s, ids["w1"], "no-such-entry")
    cm = s.append_custom_message("ext.note", [{"type": "text", "text": "custom "}, {"type": "text", "text": "text"}])
    plan = plan_checkout(s, ids["w1"], cm)
    assert plan.editor_text == "custom text" and plan.new_leaf_id == s.raw_entry(cm)["parentId"]


def test_checkout_with_summary_attaches_it_at_the_new_leaf_and_persists(tmp_path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.create(path=path, cwd="/work/project")
    b = Builder(s)
    a1 = (b.user("first question"), b.assistant("first answer"))[1]
    b.user("second question")
    b.assistant("second answer")
    s.checkout(a1, persist=False)
    b.user("another way")
    b.assistant("it works", [("write", {"path": "/work/project/out.txt", "content": "x"})])
    b.results()
    b.assistant("written")
    outcome = asyncio.run(checkout_with_summary(s, a1, QuotingSummarizer(), label="tried another way"))
    summary = s.raw_entry(outcome.summary_entry_id)
    assert summary["type"] == "branch_summary" and summary["parentId"] == a1 and summary["fromId"] == a1 and summary["fromHook"] is False
    assert summary["details"] == {"readFiles": [], "modifiedFiles": ["out.txt"]}
    assert s.label_of(outcome.summary_entry_id) == "tried another way"
    s.close()
    reopened = Session.open(path)
    messages = reopened.context().raw_messages
    assert [m["role"] for m in messages] == ["user", "assistant", "branchSummary"]
    assert messages[-1]["summary"].startswith(BRANCH_SUMMARY_PREAMBLE) and "another way" in messages[-1]["summary"]


def test_checkout_without_summary_moves_the_leaf_and_labels_the_target() -> None:
    s, ids = _tree()
    plan = plan_checkout(s, s.leaf_id, ids["a2"])
    assert apply_checkout(s, plan, label="here") is None
    assert s.label_of(ids["a2"]) == "here" and s.raw_entry(s.leaf_id)["parentId"] == ids["a2"]
    outcome = asyncio.run(checkout_with_summary(s, ids["u3"], None))
    assert outcome.new_leaf_id == ids["a2"] and outcome.editor_text == "third question" and outcome.summary_entry_id is None
    to_root = asyncio.run(checkout_with_summary(s, ids["u1"], QuotingSummarizer()))
    root_summary = s.raw_entry(to_root.summary_entry_id)
    assert root_summary["parentId"] is None and root_summary["fromId"] == "root"


def test_a_small_window_still_gets_a_budget() -> None:
    """pi's budget is window - 16384: zero or less for a window of 16k or less, which pi reads as
    "no limit", so the whole branch goes to a small model that refuses it. Here the reserve is
    fitted to the window."""
    s = Session.in_memory()
    b = Builder(s)
    for i in range(30):
        b.turn(f"q{i} " + "word " * 800)
    assert BranchSummarySettings().fit_to(8192).reserve_tokens == 3072
    assert BranchSummarySettings().fit_to(200_000).reserve_tokens == 16384
    ours, pis = QuotingSummarizer(), QuotingSummarizer()
    asyncio.run(generate_branch_summary(s.raw_branch(), ours, context_window=8192))
    asyncio.run(generate_branch_summary(s.raw_branch(), pis, context_window=8192, pi_compatible=True))
    assert "q0 " in pis.requests[0].prompt_text  # pi: everything
    text = ours.requests[0].prompt_text
    assert "q29" in text and "q0 " not in text
    assert estimate_tokens({"role": "user", "content": text}) <= 8192 - 2048  # room for the summary itself
