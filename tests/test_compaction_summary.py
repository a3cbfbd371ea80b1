"""Summary generation: pi's prompts and merge, file lists, failures, and the compaction entry it produces."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from test_compaction_gen import Builder, QuotingSummarizer, compact_session, section

from pi_jupyter.compaction import (
    CompactionSettings,
    NothingToCompact,
    SummaryAborted,
    SummaryError,
    SummaryRequest,
    compact,
    compaction_requests,
    conversation_text,
    estimate_tokens_pi,
    prepare_compaction,
    serialize_conversation,
    to_llm_dicts,
)
from pi_jupyter.compaction.prompts import (
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from pi_jupyter.messages import AssistantMessage, TextContent
from pi_jupyter.session import Session


def _session(turns: int = 6, rounds: int = 1, tool: str = "read") -> tuple[Session, Builder]:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    for i in range(turns):
        b.turn(f"request {i} " + "words " * 80, rounds=rounds, tool=tool)
    return s, b


def _prep(s: Session, keep: int = 300, **kw: Any):
    return prepare_compaction(s.raw_branch(), CompactionSettings(keep_recent_tokens=keep), cwd=s.cwd, **kw)


def test_first_summary_uses_pis_prompt_and_sections() -> None:
    s, _ = _session()
    summarizer = QuotingSummarizer()
    result = asyncio.run(compact(_prep(s), summarizer))
    req = summarizer.requests[0]
    assert req.kind == "history" and req.system_prompt == SUMMARIZATION_SYSTEM_PROMPT
    assert req.max_tokens == int(0.8 * 16384) == 13107 and req.reasoning
    assert req.prompt_text.startswith("<conversation>\n[User]: request 0 ")
    assert req.prompt_text.endswith("\n</conversation>\n\n" + SUMMARIZATION_PROMPT)
    for heading in ("## Goal", "## Constraints & Preferences", "## Progress", "### Done", "### In Progress", "### Blocked"):
        assert f"\n{heading}\n" in SUMMARIZATION_PROMPT
    for heading in ("## Key Decisions", "## Next Steps", "## Critical Context"):
        assert f"\n{heading}\n" in SUMMARIZATION_PROMPT
    assert "[Assistant tool calls]: read(path=" in req.prompt_text and "[Tool result]: done" in req.prompt_text
    assert result.summary.startswith("## Goal\nrequest 0 ")


def test_update_prompt_carries_the_previous_summary_and_custom_focus() -> None:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    for i in range(6):  # long tool output, which the quoting summary leaves out: each compaction shrinks the context
        b.turn(f"request {i} " + "words " * 80, rounds=1, result="output " * 200)
    asyncio.run(compact_session(s, QuotingSummarizer(), 300))
    previous = s.raw_branch()[-1]["summary"]
    for i in range(4):
        b.turn(f"later {i} " + "more " * 80, rounds=1, result="output " * 200)
    summarizer = QuotingSummarizer()
    asyncio.run(compact(_prep(s), summarizer, custom_instructions="the parser bug"))
    (req,) = [r for r in summarizer.requests if r.kind != "turn_prefix"]
    assert req.kind == "update"
    assert f"\n</conversation>\n\n<previous-summary>\n{previous}\n</previous-summary>\n\n" in req.prompt_text
    assert req.prompt_text.endswith(UPDATE_SUMMARIZATION_PROMPT + "\n\nAdditional focus: the parser bug")


class _Concurrent:
    """Records whether the split turn's two requests were in flight at the same time."""

    def __init__(self, fail: str | None = None) -> None:
        self.active = 0
        self.peak = 0
        self.cancelled: list[str] = []
        self.fail = fail
        self.requests: list[SummaryRequest] = []

    async def __call__(self, request: SummaryRequest) -> AssistantMessage:
        self.requests.append(request)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await asyncio.sleep(0.01 if request.kind == self.fail else 0.2)
            if request.kind == self.fail:
                return AssistantMessage(content=[], stop_reason="error", error_message="boom")
            return AssistantMessage(content=[TextContent(text=f"{request.kind} summary")])
        except asyncio.CancelledError:
            self.cancelled.append(request.kind)
            raise
        finally:
            self.active -= 1


def _split_session() -> Session:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    for i in range(3):
        b.turn(f"request {i}", rounds=1)
    b.user("a long agentic turn")
    for r in range(10):
        b.assistant(f"step {r}", [("edit", {"path": f"src/m{r % 3}.py", "oldText": "a", "newText": "b"})])
        b.results("x" * 600)
    b.assistant("finished")
    return s


def test_split_turn_sends_two_requests_at_once_and_merges_them() -> None:
    s = _split_session()
    prep = _prep(s, 500)
    assert prep.is_split_turn
    summarizer = _Concurrent()
    result = asyncio.run(compact(prep, summarizer))
    assert summarizer.peak == 2
    kinds = {r.kind: r for r in summarizer.requests}
    assert set(kinds) == {"history", "turn_prefix"}
    prefix = kinds["turn_prefix"]
    assert prefix.max_tokens == 8192 and prefix.prompt_text.endswith("</conversation>\n\n" + TURN_PREFIX_SUMMARIZATION_PROMPT)
    assert "[User]: a long agentic turn" in prefix.prompt_text
    assert result.summary.startswith("history summary\n\n---\n\n**Turn Context (split turn):**\n\nturn_prefix summary")


def test_one_failed_request_cancels_the_other_and_writes_nothing() -> None:
    s = _split_session()
    before = len(s)
    summarizer = _Concurrent(fail="turn_prefix")
    with pytest.raises(SummaryError, match="Turn prefix summarization failed: boom"):
        asyncio.run(compact_session(s, summarizer, 500))
    assert summarizer.cancelled == ["history"]
    assert len(s) == before


def test_file_lists_are_appended_with_pis_tags_and_stored_in_details() -> None:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    b.user("look at things")
    b.assistant(None, [("read", {"path": "src/a.py"}), ("read", {"path": "/work/project/src/b.py"})])
    b.results()
    b.assistant(
        None, [("edit", {"path": "./src/b.py", "oldText": "x", "newText": "y"}), ("write", {"path": "/tmp/out.txt", "content": "z"})]
    )
    b.results()
    b.assistant("done")
    for i in range(3):
        b.turn(f"then {i} " + "w " * 200)
    result = asyncio.run(compact(_prep(s, 200), QuotingSummarizer()))
    # one spelling per file: ./src/b.py, /work/project/src/b.py and src/b.py are the same file (pi-design §10 item 25)
    assert result.details == {"readFiles": ["src/a.py"], "modifiedFiles": ["/tmp/out.txt", "src/b.py"]}
    assert result.summary.endswith(
        "\n\n<read-files>\nsrc/a.py\n</read-files>\n\n<modified-files>\n/tmp/out.txt\nsrc/b.py\n</modified-files>"
    )

    pi = asyncio.run(compact(_prep(s, 200, pi_compatible=True), QuotingSummarizer()))
    assert pi.details == {"readFiles": ["/work/project/src/b.py", "src/a.py"], "modifiedFiles": ["./src/b.py", "/tmp/out.txt"]}


def test_file_lists_accumulate_over_compactions_but_not_from_extension_summaries() -> None:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    for i in range(4):
        b.turn(f"r{i} " + "w " * 200)
    s.append_compaction("by an extension", s.raw_branch()[-2]["id"], 10, {"readFiles": ["ext.txt"], "modifiedFiles": []}, from_hook=True)
    for i in range(4):
        b.turn(f"s{i} " + "w " * 200, rounds=1)
    first = asyncio.run(compact(_prep(s, 200), QuotingSummarizer()))
    assert "ext.txt" not in first.details["readFiles"]
    first.append_to(s)
    for i in range(4):
        b.turn(f"t{i} " + "w " * 200, rounds=1, tool="write")
    second = asyncio.run(compact(_prep(s, 200), QuotingSummarizer()))
    assert set(first.details["readFiles"]) <= set(second.details["readFiles"]) | set(second.details["modifiedFiles"])
    assert second.details["modifiedFiles"]


@pytest.mark.parametrize(
    ("reply", "error", "match"),
    [
        ({"stop_reason": "error", "error_message": "overloaded"}, SummaryError, "ummarization failed: overloaded"),
        ({"stop_reason": "length", "content": [TextContent(text="## Goal\nhalf")]}, SummaryError, "cut off"),
        ({"stop_reason": "aborted"}, SummaryAborted, "aborted"),
        ({"content": [TextContent(text="  \n")]}, SummaryError, "no summary text"),
    ],
)
def test_fix_pi_10_13b_failed_truncated_aborted_or_empty_summary_writes_nothing(reply: dict, error: type, match: str) -> None:
    """pi-design §10 item 13: pi stores a truncated (``length``), aborted or empty summary as if it were good."""
    s, _ = _session()
    before = len(s)

    async def summarize(request: SummaryRequest) -> AssistantMessage:
        return AssistantMessage(**reply)

    with pytest.raises(error, match=match):
        asyncio.run(compact_session(s, summarize, 300))
    assert len(s) == before
    if reply.get("stop_reason") != "error":
        pi = asyncio.run(compact(_prep(s, 300, pi_compatible=True), summarize))  # pi accepts it
        assert pi.first_kept_entry_id


def test_fix_pi_10_11_split_turn_with_empty_history_keeps_the_previous_summary() -> None:
    """pi-design §10 item 11: a split turn whose turn starts at the range start gets "No prior history."
    and pi drops the previous summary, so everything before that turn vanishes from the context."""
    results = {}
    for mode in ("fixed", "pi"):
        s = Session.in_memory(cwd="/work/project")
        b = Builder(s)
        for i in range(4):
            b.turn(f"early request {i} " + "w " * 100, rounds=1)
        long_turn = b.user("the long agentic turn")
        for r in range(3):
            b.assistant(f"step {r}", [("read", {"path": "a.py"})])
            b.results("y" * 400)
        branch = s.raw_branch()
        at = [e["id"] for e in branch].index(long_turn)
        keep = sum(estimate_tokens_pi(e["message"]) for e in branch[at:])
        summarizer = QuotingSummarizer()
        first = asyncio.run(compact_session(s, summarizer, keep, pi_compatible=mode == "pi"))
        assert s.raw_entry(first)["firstKeptEntryId"] == long_turn  # a clean cut at the turn's user message
        for r in range(3, 15):  # the same turn goes on (an overflow compaction mid-run, then the retry)
            b.assistant(f"step {r}", [("read", {"path": "b.py"})])
            b.results("z" * 400)
        prep = _prep(s, 300, pi_compatible=mode == "pi")
        assert prep.is_split_turn and not prep.messages_to_summarize
        asyncio.run(compact(prep, summarizer)).append_to(s)
        results[mode] = (s, summarizer)
    s, summarizer = results["fixed"]
    context = conversation_text(s.context().raw_messages)
    assert all(f"early request {i}" in context for i in range(4))
    assert [r.kind for r in summarizer.requests][-1] == "turn_prefix"  # no history request: the old summary is carried over
    s_pi, _ = results["pi"]
    context_pi = conversation_text(s_pi.context().raw_messages)
    assert "No prior history." in context_pi and "early request 0" not in context_pi


def test_result_is_a_compaction_entry_and_nothing_is_deleted(tmp_path) -> None:
    path = tmp_path / "s.jsonl"
    s = Session.create(path=path, cwd="/work/project")
    b = Builder(s)
    for i in range(8):
        b.turn(f"request {i} " + "w " * 100, rounds=1, result="output " * 100)
    ids_before = [e["id"] for e in s.raw_entries()]
    prep = _prep(s, 400)
    result = asyncio.run(compact(prep, QuotingSummarizer()))
    cid = result.append_to(s)
    s.close()
    reopened = Session.open(path)
    entry = reopened.raw_entry(cid)
    assert entry["type"] == "compaction" and entry["summary"] == result.summary and entry["fromHook"] is False
    assert entry["firstKeptEntryId"] == prep.first_kept_entry_id and entry["tokensBefore"] == prep.tokens_before
    assert [e["id"] for e in reopened.raw_entries()] == [*ids_before, cid]
    messages = reopened.context().raw_messages
    assert messages[0]["role"] == "compactionSummary" and messages[0]["summary"] == result.summary
    branch = reopened.raw_branch()
    kept = [e["message"] for e in branch[prep.first_kept_index : -1] if e["type"] == "message"]
    assert messages[1:] == kept


def test_conversation_that_serializes_to_nothing_is_not_sent() -> None:
    s = Session.in_memory(cwd="/work/project")
    b = Builder(s)
    b.user("")
    b.assistant(None, stop="error", errorMessage="overloaded")
    b.user("")
    b.turn("the real request " + "w " * 300)
    with pytest.raises(NothingToCompact):
        asyncio.run(compact(_prep(s, 100), QuotingSummarizer()))
    assert compaction_requests(_prep(s, 100, pi_compatible=True))[0].prompt_text.startswith("<conversation>\n\n</conversation>")


def test_serialized_conversation_uses_pis_labels() -> None:
    messages = [
        {"role": "user", "content": "plain"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "a"},
                {"type": "image", "data": "x", "mimeType": "image/png"},
                {"type": "text", "text": "b"},
            ],
        },
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "first"},
                {"type": "toolCall", "id": "1", "name": "edit", "arguments": {"path": "a.py", "n": 1.0, "2": [0.5, None, True]}},
                {"type": "thinking", "thinking": "hmm"},
                {"type": "text", "text": "second"},
                {"type": "toolCall", "id": "2", "name": "ls", "arguments": {}},
            ],
        },
        {"role": "toolResult", "toolCallId": "1", "toolName": "edit", "content": [{"type": "text", "text": "🎉" * 1001}], "isError": False},
        {"role": "bashExecution", "command": "make", "output": "", "exitCode": 2, "cancelled": False, "truncated": False},
        {"role": "bashExecution", "command": "secret", "output": "x", "excludeFromContext": True},
        {"role": "custom", "customType": "note", "content": "from an extension"},
        {"role": "compactionSummary", "summary": "S", "tokensBefore": 1},
        {"role": "branchSummary", "summary": "B", "fromId": "x"},
        {"role": "user", "content": []},
    ]
    text = serialize_conversation(to_llm_dicts(messages))
    parts = text.split("\n\n")
    assert parts[0] == "[User]: plain" and parts[1] == "[User]: ab"
    assert parts[2] == "[Assistant thinking]: hmm"
    assert parts[3] == "[Assistant]: first\nsecond"
    assert parts[4] == '[Assistant tool calls]: edit(2=[0.5,null,true], path="a.py", n=1); ls()'
    # 1001 emoji are 2002 UTF-16 units: cut after 1000 emoji, 2 units reported as cut
    assert parts[5] == "[Tool result]: " + "🎉" * 1000 and parts[6] == "[... 2 more characters truncated]"
    assert parts[7] == "[User]: Ran `make`\n(no output)" and "Command exited with code 2" in text and "secret" not in text
    assert "[User]: from an extension" in text
    assert "[User]: The conversation history before this point was compacted into the following summary:" in text
    assert "[User]: The following is a summary of a branch that this conversation came back from:" in text


def test_summary_request_is_one_user_message() -> None:
    req = SummaryRequest(kind="history", system_prompt="sys", prompt_text="hello", max_tokens=10)
    msg = req.user_message(timestamp=5)
    assert msg.to_dict() == {"role": "user", "content": [{"type": "text", "text": "hello"}], "timestamp": 5}
    assert "hello" not in repr(req)  # a prompt may be long; the repr stays short


def test_models_and_dicts_give_the_same_conversation() -> None:
    s, _ = _session(turns=2)
    raw = s.context().raw_messages
    assert conversation_text(s.context().messages) == conversation_text(raw)
    assert section("<conversation>\nx\n</conversation>", "conversation") == "x"
