"""The messages layer reads what odd session files hold (the kinds of tests/test_session_odd_values.py):
``convert_to_llm``, ``SessionContext.llm()`` and an Agent's first prompt never raise, build pi's
wrapper texts from odd values exactly as pi does (checked against pi 0.73.1 through its oracle,
tests/interop), and keep every message of a known role, an odd value shown as text or left out."""

from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from pi_jupyter import Agent
from pi_jupyter.cli.context_cmd import context_json
from pi_jupyter.messages import (
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    OpaqueMessage,
    UserMessage,
    as_message,
    convert_to_llm,
    iso_from_ms,
    message_from_dict,
    ms_from_iso,
    text_of,
)
from pi_jupyter.providers.offline import OfflineProvider
from pi_jupyter.session import Session

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
TS = "2025-01-01T00:00:01.000Z"


def user(eid: str, parent: str | None, content: object = "hi") -> dict:
    return message(eid, parent, {"role": "user", "content": content, "timestamp": 1})


def message(eid: str, parent: str | None, msg: object) -> dict:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": msg}


def compaction(eid: str, parent: str, stamp: object, summary: object = "earlier") -> dict:
    entry = {"type": "compaction", "id": eid, "parentId": parent, "timestamp": stamp}
    return entry | {"summary": summary, "firstKeptEntryId": "a", "tokensBefore": 5}


def write(path: Path, *rows: dict) -> bytes:
    blob = "".join(json.dumps(r) + "\n" for r in (HEADER, *rows)).replace("Infinity", "1e400").encode()
    path.write_bytes(blob)
    return blob


def dicts(messages: list) -> list[dict]:
    return [m.to_dict() for m in messages]


# -- convert_to_llm ---------------------------------------------------------------------------


@pytest.mark.parametrize("role", ["compactionSummary", "branchSummary", "custom"])
def test_a_summary_without_a_valid_time_converts_with_a_null_time(role):
    # pi: new Date("not a time").getTime() is NaN, which JSON.stringify writes as null
    field = {"content": "c"} if role == "custom" else {"summary": "s"}
    out = convert_to_llm([{"role": role, **field, "timestamp": None}])
    assert len(out) == 1 and isinstance(out[0], UserMessage) and out[0].timestamp is None
    assert out[0].to_dict()["timestamp"] is None  # written as null, as pi writes NaN


def summary_of(text: str) -> str:
    return COMPACTION_SUMMARY_PREFIX + text + COMPACTION_SUMMARY_SUFFIX


@pytest.mark.parametrize(
    "raw, text",
    [
        ({"role": "compactionSummary", "summary": 5}, summary_of("5")),
        ({"role": "compactionSummary", "summary": None}, summary_of("null")),
        ({"role": "compactionSummary", "summary": [1, None, "a", [2, 3]]}, summary_of("1,,a,2,3")),
        ({"role": "compactionSummary", "summary": {"a": 1}}, summary_of("[object Object]")),
        ({"role": "compactionSummary", "summary": 1e21}, summary_of("1e+21")),
        ({"role": "compactionSummary"}, summary_of("undefined")),
        ({"command": 5, "output": None, "exitCode": "x"}, "Ran `5`\n(no output)\n\nCommand exited with code x"),
        ({"command": [1, 2], "output": 0, "exitCode": False}, "Ran `1,2`\n(no output)\n\nCommand exited with code false"),
        (
            {"command": None, "output": "", "exitCode": 0.0, "cancelled": 1, "truncated": "y", "fullOutputPath": 5},
            "Ran `null`\n(no output)\n\n(command cancelled)\n\n[Output truncated. Full output: 5]",
        ),
        ({"output": {"a": 1}}, "Ran `undefined`\n```\n[object Object]\n```"),
    ],
)
def test_wrapper_texts_are_built_from_odd_values_as_pi_builds_them(raw, text):
    # pi concatenates the values into its text, whatever their JSON type (seen through the oracle)
    out = convert_to_llm([{"role": "bashExecution", **raw, "timestamp": 3}])
    assert dicts(out) == [{"role": "user", "content": [{"type": "text", "text": text}], "timestamp": 3}]


@pytest.mark.parametrize(
    "raw, sent",
    [
        ({"role": "user", "content": 5, "timestamp": 1}, {"role": "user", "content": "5", "timestamp": 1}),
        ({"role": "user", "content": {"a": 1}, "timestamp": 1}, {"role": "user", "content": '{"a":1}', "timestamp": 1}),
        (
            {"role": "user", "content": [{"type": "text", "text": 5}, None, {"type": 7}, {"type": "image", "data": 5}], "timestamp": 1e20},
            {"role": "user", "content": [{"type": "text", "text": "5"}], "timestamp": 10**20},
        ),
        (
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": ["x"], "name": None, "arguments": "x"}, {"type": "thinking", "thinking": 5}],
                **{"api": "a", "provider": 1, "model": None, "stopReason": 5, "timestamp": "x"},
                "usage": {"input": float("inf"), "output": 7, "cost": {"total": "y"}},
            },
            {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": '["x"]', "name": "", "arguments": {}}, {"type": "thinking", "thinking": "5"}],
                **{"api": "a", "provider": "1", "model": ""},
                "usage": {"output": 7, "cost": {}},
            },
        ),
        (
            {"role": "toolResult", "toolCallId": ["x"], "toolName": None, "content": 5, "isError": "x", "timestamp": None},
            {"role": "toolResult", "toolCallId": '["x"]', "toolName": "", "content": [{"type": "text", "text": "5"}], "isError": True},
        ),
        ({"role": "custom", "customType": 5, "content": 5, "timestamp": 3}, {"role": "user", "content": "5", "timestamp": 3}),
    ],
    ids=["user-number", "user-object", "user-blocks", "assistant", "tool-result", "custom"],
)
def test_a_message_of_a_known_role_with_odd_fields_still_reaches_the_model(raw, sent):
    # pi sends such a message as it is; a typed request cannot: its odd values are shown as
    # text (the tool call's id and its result's toolCallId alike, so they still pair) or left out
    assert isinstance(message_from_dict(raw), OpaqueMessage)
    assert dicts(convert_to_llm([raw])) == [sent]


@pytest.mark.parametrize("raw", [{"role": ["user"], "content": "x"}, {"role": {"a": 1}}, {"role": 5, "content": "x"}, {"role": None}])
def test_a_role_that_is_not_a_string_is_an_opaque_message_sent_to_no_model(raw):
    m = as_message(raw)
    assert isinstance(m, OpaqueMessage) and m.to_dict() == raw  # kept as read
    assert convert_to_llm([raw, {"role": "user", "content": "after", "timestamp": 1}])[0].content == "after"


def test_items_that_are_no_message_at_all_are_skipped():
    # pi's convertToLlm drops a role it does not know (and fails on null): nothing is sent for them
    out = convert_to_llm([None, 5, "text", [1], {"role": "user", "content": "hi", "timestamp": 1}])
    assert dicts(out) == [{"role": "user", "content": "hi", "timestamp": 1}]
    with pytest.raises(TypeError, match="JSON object, not a JSON null"):
        message_from_dict(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "content, text",
    [
        ([{"type": "text", "text": 5}, {"type": "text", "text": "a"}], "5a"),
        ([{"type": "text", "text": [1, "b"]}], '[1,"b"]'),
        (5, "5"),
        (True, "true"),
        ({"a": 1}, '{"a":1}'),
    ],
)
def test_text_of_shows_odd_values_as_text(content, text):
    assert text_of(content) == text


# -- dates at the calendar's edges --------------------------------------------------------


def test_times_at_the_edges_of_the_calendar():
    # a date-time without offset is local time, which may shift year 1 into year 0 (Python's
    # datetime stops at year 1; JavaScript's Date does not)
    assert isinstance(ms_from_iso("0001-01-01T00:00:00"), int) and isinstance(ms_from_iso("9999-12-31T23:59:59"), int)
    assert iso_from_ms(-62135596800000) == "0001-01-01T00:00:00.000Z"
    assert iso_from_ms(253402300799999) == "9999-12-31T23:59:59.999Z"


# -- the session's context, and an agent on it --------------------------------------------


def summaries_without_time(path: Path) -> bytes:
    summary = {"type": "branch_summary", "id": "d", "parentId": "c", "timestamp": None, "fromId": "a", "summary": "left"}
    return write(path, user("a", None), compaction("c", "a", "not a time"), summary)


def test_the_llm_messages_of_a_summary_without_a_valid_time_are_pis(tmp_path):
    path = tmp_path / "s.jsonl"
    summaries_without_time(path)
    s = Session.open(path, readonly=True)
    llm = dicts(s.context().llm())
    assert llm == context_json(s)["llm"]  # the CLI's llm is pi's (tests/test_session_odd_values.py)
    assert [m["timestamp"] for m in llm] == [None, 1, 0]


def test_the_context_of_a_branch_whose_last_entry_has_the_empty_id_is_pis(tmp_path):
    # pi: a leaf id of "" names no entry, so buildSessionContext walks from the last entry up
    path = tmp_path / "s.jsonl"
    write(path, user("a", None), user("c", "a", "two"), user("", "c", "last"))
    s = Session.open(path, readonly=True)
    assert s.leaf_id == "" and s.branch_ids() == []  # pi's getBranch("") is empty too
    assert [m["content"] for m in s.context().raw_messages] == ["hi", "two", "last"]
    assert [m.content for m in s.context().llm()] == ["hi", "two", "last"]


ODD_ASSISTANT = {"role": "assistant", "content": [{"type": "text", "text": 7}], "provider": 1, "model": None, "usage": {"input": 1e400}}

ODD_FILES = {
    "summary-times": lambda p: summaries_without_time(p),
    "far-times": lambda p: write(p, user("a", None), compaction("c", "a", 1e20), compaction("d", "c", "2025"), compaction("e", "d", [1])),
    "calendar-edge": lambda p: write(p, user("a", None), compaction("c", "a", "0001-01-01T00:00:00")),
    "odd-messages": lambda p: write(
        p,
        user("a", None, 5),
        message("b", "a", ODD_ASSISTANT),
        message("n", "b", None),
        message("r", "n", {"role": ["user"], "content": "x"}),
        compaction("c", "r", TS, summary={"a": 1}),
        message("x", "c", {"role": "bashExecution", "command": 5, "output": None, "timestamp": "x"}),
    ),
}


# what the model is sent before the prompt, per file: (role, start of the text) for each message
SENT = {
    "summary-times": [("user", COMPACTION_SUMMARY_PREFIX + "earlier"), ("user", "hi"), ("user", "The following is a summary")],
    "far-times": [("user", COMPACTION_SUMMARY_PREFIX + "earlier"), ("user", "hi")],
    "calendar-edge": [("user", COMPACTION_SUMMARY_PREFIX + "earlier"), ("user", "hi")],
    "odd-messages": [
        ("user", COMPACTION_SUMMARY_PREFIX + "[object Object]"),
        ("user", "5"),
        ("assistant", "7"),
        ("user", "Ran `5`\n(no output)"),
    ],
}


@pytest.mark.parametrize("kind", list(ODD_FILES))
def test_an_agent_prompts_on_a_session_with_odd_values(tmp_path, monkeypatch, kind):
    original = tmp_path / "original.jsonl"
    before = ODD_FILES[kind](original)
    path = tmp_path / "copy.jsonl"
    shutil.copy(original, path)
    sent: list[list[dict]] = []
    stream = OfflineProvider.stream

    def recording(self, model, request, options=None):
        sent.append(dicts(request.messages))
        return stream(self, model, request, options)

    monkeypatch.setattr(OfflineProvider, "stream", recording)
    agent = Agent(Session.open(path), model="offline/echo")
    result = asyncio.run(agent.prompt("hi"))
    assert result.stop_reason == "stop" and "You said: hi" in result.text
    assert path.read_bytes().startswith(before)  # the file's lines are kept as they were
    *history, prompt = sent[0]
    assert prompt["content"] == [{"type": "text", "text": "hi"}]
    assert [(m["role"], text_of(m["content"])[: len(start)]) for m, (_, start) in zip(history, SENT[kind], strict=True)] == SENT[kind]
    added = Session.open(path, readonly=True).raw_entries()[len(Session.open(original, readonly=True)) :]
    assert [e["message"]["role"] for e in added if e["type"] == "message"] == ["system", "user", "assistant"]  # our prompt recorded first
