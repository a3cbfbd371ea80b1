"""Files written by pi 1.x: context edits, system messages in the transcript, usage entries,
compaction snapshots and ``null`` content are rebuilt as pi 1.6 rebuilds them, and bad ones are
named in the load report with their line instead of crashing (tests/interop checks the same
against pi itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pi_jupyter.providers import LlmRequest, ToolSpec
from pi_jupyter.providers.transcript import collapse_request
from pi_jupyter.session import Session

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2026-12-01T00:00:00.000Z", "cwd": "/w"}
TS = "2026-12-01T00:00:01.000Z"
READ = {"name": "read", "description": "Read a file", "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}
BASH = {"name": "bash", "description": "Run a command", "parameters": {"type": "object", "properties": {}}}


def msg(eid: str, parent: str | None, role: str, content: object, **extra: object) -> dict:
    message = {"role": role, "content": content, "timestamp": 1, **extra}
    if role == "assistant":
        message.update(api="anthropic-messages", provider="anthropic", model="claude", usage={}, stopReason="stop")
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": message}


def edit(eid: str, parent: str, target: object, replacement: object = None, **extra: object) -> dict:
    return {"type": "context_edit", "id": eid, "parentId": parent, "timestamp": TS, "targetId": target, "replacement": replacement, **extra}


def usage_entry(eid: str, parent: str, usage: object) -> dict:
    return {
        "type": "usage",
        "id": eid,
        "parentId": parent,
        "timestamp": TS,
        "kind": "compaction",
        "provider": "anthropic",
        "model": "claude",
        "usage": usage,
    }


def write(path: Path, *rows: dict) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def sent_text(s: Session, leaf: str | None = None) -> str:
    ctx = s.context() if leaf is None else s.context(leaf)
    return json.dumps([m.to_dict() for m in ctx.llm()])


def test_a_forgotten_message_is_not_sent_but_stays_in_the_file(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("u1", None, "user", "my token is sk-live-123"),
        msg("a1", "u1", "assistant", [{"type": "text", "text": "noted sk-live-123"}]),
        edit("e1", "a1", "u1", None),
        edit("e2", "e1", "a1", {"content": "noted"}),
        msg("u2", "e2", "user", "go on"),
    )
    s = Session.open(path)
    assert s.load_report.ok, str(s.load_report)
    assert "sk-live-123" not in sent_text(s)
    raw = s.context().raw_messages
    assert [m["role"] for m in raw] == ["assistant", "user"]
    assert raw[0]["content"] == [{"type": "text", "text": "noted"}]  # a string replacement of an assistant: one text block
    assert "sk-live-123" in path.read_text()  # the original stays in the file


def test_a_string_replacement_of_a_user_message_stays_a_string_and_the_latest_edit_wins(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("u1", None, "user", "first"),
        edit("e1", "u1", "u1", {"content": "second"}),
        edit("e2", "e1", "u1", {"content": "third"}),
    )
    assert Session.open(path).context().raw_messages[0]["content"] == "third"


def test_an_edit_on_another_branch_does_not_apply(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("u1", None, "user", "secret"),
        edit("e1", "u1", "u1", None),
        msg("u2", "u1", "user", "sibling branch"),
    )
    s = Session.open(path)
    assert [m["content"] for m in s.context("u2").raw_messages] == ["secret", "sibling branch"]
    assert s.context("e1").raw_messages == []


def test_system_messages_replay_into_one_prompt_and_tool_set(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("s1", None, "system", "", sections={"preamble": "You help.", "cwd": "<cwd>/a</cwd>"}, toolsAdded=[READ, BASH]),
        msg("u1", "s1", "user", "hi"),
        msg("s2", "u1", "system", "Be brief.", sections={"cwd": "<cwd>/b</cwd>"}, toolsRemoved=[{"name": "bash"}]),
        msg("u2", "s2", "user", "again"),
    )
    s = Session.open(path)
    llm = s.context().llm()
    assert [m.role for m in llm] == ["system", "user", "system", "user"]
    request = collapse_request(LlmRequest(messages=llm))
    assert request.system_prompt == "Be brief.\n\nYou help.\n\n<cwd>/b</cwd>"
    assert [t.name for t in request.tools] == ["read"] and request.tools[0].parameters == READ["parameters"]
    assert [m.role for m in request.messages] == ["user", "user"]


def test_a_request_prompt_leads_the_transcript_system_messages():
    request = LlmRequest(system_prompt="Base.", tools=[ToolSpec(name="bash")], messages=[])
    assert collapse_request(request) is request  # no system messages: nothing changes
    s = Session.in_memory()
    s.append_message({"role": "system", "content": "", "sections": {"extra": "More."}, "toolsRemoved": [{"name": "bash"}], "timestamp": 1})
    s.append_message({"role": "user", "content": "x", "timestamp": 2})
    out = collapse_request(request.model_copy(update={"messages": s.context().llm()}))
    assert out.system_prompt == "Base.\n\nMore." and out.tools == []


def test_after_a_compaction_its_snapshot_leads_and_kept_system_messages_are_skipped(tmp_path):
    snapshot = {"role": "system", "content": "Snapshot prompt.", "toolsAdded": [READ], "timestamp": 5}
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("s1", None, "system", "Old prompt."),
        msg("u1", "s1", "user", "old"),
        msg("s2", "u1", "system", "kept system message"),
        msg("u2", "s2", "user", "kept"),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "u2",
            "timestamp": TS,
            "summary": "S",
            "firstKeptEntryId": "s2",
            "tokensBefore": 10,
            "usage": {"input": 5, "output": 2, "totalTokens": 7, "cost": {"total": 0.5}},
            "systemMessage": snapshot,
        },
        msg("u3", "c1", "user", "new"),
    )
    s = Session.open(path)
    raw = s.context().raw_messages
    assert [m["role"] for m in raw] == ["system", "compactionSummary", "user", "user"]
    assert raw[0] == snapshot and [m["content"] for m in raw[2:]] == ["kept", "new"]
    assert s.load_report.ok


def test_null_content_is_read_as_empty(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("s1", None, "system", None),
        msg("u1", "s1", "user", None),
        msg("a1", "u1", "assistant", None),
    )
    raw = Session.open(path).context().raw_messages
    assert [m["content"] for m in raw] == ["", [], []]


def test_usage_entries_are_not_in_the_context(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("u1", None, "user", "hi"),
        usage_entry("g1", "u1", {"input": 10, "output": 5, "totalTokens": 15, "cost": {"total": 0.25}}),
    )
    s = Session.open(path)
    assert [m["content"] for m in s.context().raw_messages] == ["hi"]
    assert s.load_report.problems == []  # a known entry type now, not "not known to this version"


def test_bad_pi1_entries_are_reported_with_their_line_and_never_crash(tmp_path):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,  # line 1
        msg("u1", None, "user", "keep me"),  # 2
        msg("x1", None, "user", "another root"),  # 3
        edit("e1", "u1", "missing", None),  # 4: target not in the file
        edit("e2", "e1", "x1", None),  # 5: target on another branch
        edit("e3", "e2", "u1", "just a string"),  # 6: replacement neither null nor {content}
        {"type": "context_edit", "id": "e4", "parentId": "e3", "timestamp": TS, "targetId": "u1"},  # 7: no replacement
        msg("s1", "e4", "system", "p", sections={"a": 3, "b": None}),  # 8: non-string section
        usage_entry("g1", "s1", {"input": -1, "output": "5", "totalTokens": True, "cost": {"total": "free"}}),  # 9
        usage_entry("g2", "g1", [1, 2]),  # 10
    )
    text = path.read_text()
    s = Session.open(path)
    problems = {(p.line, p.kind) for p in s.load_report.problems}
    assert problems == {
        (4, "bad_context_edit"),
        (5, "bad_context_edit"),
        (6, "bad_context_edit"),
        (7, "bad_context_edit"),
        (8, "bad_system_message"),
        (9, "bad_usage"),
        (10, "bad_usage"),
    }, str(s.load_report)
    messages = {p.line: p.message for p in s.load_report.problems}
    assert "'missing' is not in the file" in messages[4] and "not on the edit's branch" in messages[5]
    assert "'a'" in messages[8] and "input, output, totalTokens, cost.total" in messages[9]
    raw = s.context().raw_messages
    # as pi 1.6: the bad replacement leaves the user's content out; the system message keeps its string section
    assert raw[0] == {"role": "user", "timestamp": 1}
    assert s.context().llm()[1].sections == {"b": None}
    assert path.read_text() == text  # nothing rewritten


def test_usage_entries_and_summary_usage_count_in_every_cost_total(tmp_path):
    from pi_jupyter.cli.info_cmd import session_summary
    from pi_jupyter.views import build_model, parse_options

    spent = {"input": 100, "output": 20, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 120, "cost": {"total": 0.5}}
    answer = msg("a1", "u1", "assistant", [{"type": "text", "text": "yo"}])
    answer["message"]["usage"] = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": {"total": 0.25}}
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("u0", None, "user", "start"),
        msg("u1", "u0", "user", "hi"),
        answer,
        usage_entry("g1", "a1", spent),
        {"type": "compaction", "id": "c1", "parentId": "g1", "timestamp": TS, "summary": "S", "firstKeptEntryId": "a1", "usage": spent},
        msg("u2", "c1", "user", "more"),
    )
    s = Session.open(path)
    info = session_summary(s)
    assert info["cost"] == 1.25 and info["tokens"]["input"] == 210 and info["tokens"]["totalTokens"] == 255
    comparison = s.compare("u0", "u2")
    assert [round(b.cost, 6) for b in comparison.branches][-1] == 1.25
    model = build_model(s, parse_options("test", {"mode": "full"}))
    assert round(sum(n.cost for n in model.nodes.values()), 6) == 1.25


def test_edit_context_forgets_and_replaces_as_pi_writes_it(tmp_path):
    s = Session.create(tmp_path)
    u1 = s.append_message({"role": "user", "content": "my key is sk-abc", "timestamp": 1})
    a1 = s.append_message(msg("a1", u1, "assistant", [{"type": "text", "text": "got sk-abc"}])["message"])
    s.edit_context(u1, None)
    edit_id = s.edit_context(a1, "got it")
    assert s.raw_entry(edit_id)["replacement"] == {"content": [{"type": "text", "text": "got it"}]}  # one text block, as pi writes
    assert "sk-abc" not in sent_text(s)
    reopened = Session.open(s.path)
    assert "sk-abc" not in sent_text(reopened) and reopened.load_report.ok
    assert [e["type"] for e in reopened.raw_entries()][-2:] == ["context_edit", "context_edit"]


def test_edit_context_refuses_with_pis_reasons(tmp_path):
    from pi_jupyter.session import ContextEditError

    s = Session.create(tmp_path)
    u1 = s.append_message({"role": "user", "content": "a", "timestamp": 1})
    s.append_thinking_level_change("high")
    thinking = s.leaf_id
    s.checkout(None)
    s.append_message({"role": "user", "content": "b", "timestamp": 2})
    before = len(s)
    cases = [
        ("nope", None, "Entry nope not found"),
        (u1, None, f"Entry {u1} is not on the active branch"),
        (s.leaf_id, 5, "Context edit replacement must be null or contain string/array content"),
    ]
    for target, replacement, reason in cases:
        with pytest.raises(ContextEditError, match=reason):
            s.edit_context(target, replacement)
    s.checkout(thinking)
    with pytest.raises(ContextEditError, match=f"Entry {thinking} does not contribute editable model content"):
        s.edit_context(thinking, None)
    assert len(s) == before + 1  # only the checkout marker was written


def test_a_compaction_keeps_the_system_prompt_snapshot_and_its_usage(tmp_path):
    s = Session.create(tmp_path)
    s.append_message({"role": "system", "content": "", "sections": {"preamble": "P"}, "toolsAdded": [READ], "timestamp": 1})
    s.append_message({"role": "user", "content": "old", "timestamp": 2})
    kept = s.append_message({"role": "user", "content": "kept", "timestamp": 3})
    cid = s.append_compaction("S", kept, 100, usage={"input": 5, "output": 1, "totalTokens": 6, "cost": {"total": 0.1}})
    entry = s.raw_entry(cid)
    assert entry["systemMessage"]["sections"] == {"preamble": "P"} and entry["usage"]["totalTokens"] == 6
    raw = s.context().raw_messages
    assert [m["role"] for m in raw] == ["system", "compactionSummary", "user"]


def test_the_tree_marks_edited_and_dropped_entries(tmp_path):
    from pi_jupyter.views import build_model, parse_options

    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("u1", None, "user", "secret"),
        msg("a1", "u1", "assistant", [{"type": "text", "text": "echo"}]),
        edit("e1", "a1", "u1", None),
        edit("e2", "e1", "a1", {"content": "short"}),
    )
    model = build_model(Session.open(path), parse_options("test", {"mode": "full"}))
    marks: dict[str, str] = {}
    for node in model.nodes.values():
        marks.update(node.to_dict()["contextEdits"])
    assert marks == {"u1": "dropped", "a1": "edited"}


def test_the_text_tree_names_pi1_entries():
    from pi_jupyter.cli.render import entry_summary

    system = msg("s1", None, "system", "", sections={"preamble": "P", "cwd": None}, toolsAdded=[READ], toolsRemoved=[{"name": "bash"}])
    assert entry_summary(system) == "system prompt: sections preamble, -cwd; tools -bash +read"
    assert entry_summary(edit("e1", "s1", "u1", None)) == "context edit: forget u1"
    assert entry_summary(edit("e2", "e1", "a1", {"content": [{"type": "text", "text": "short"}]})) == "context edit: a1 reads 'short'"
    spent = usage_entry("g1", "e2", {"totalTokens": 15, "cost": {"total": 0.25}})
    assert entry_summary(spent) == "usage compaction anthropic/claude: 15 tokens, $0.2500"


def test_system_messages_count_in_token_estimates_as_pi16_counts_them():
    from pi_jupyter.compaction.tokens import estimate_tokens, estimate_tokens_pi

    system = {"role": "system", "content": "abcd", "sections": {"a": "x" * 8, "b": None}, "toolsAdded": [{"name": "t"}], "timestamp": 1}
    assert estimate_tokens_pi(system) == -(-(4 + 8 + len('[{"name":"t"}]')) // 4)
    assert estimate_tokens(system) > 0


def _compaction(eid: str, parent: str, first: str, snapshot: object) -> dict:
    return {
        "type": "compaction",
        "id": eid,
        "parentId": parent,
        "timestamp": TS,
        "summary": "S",
        "firstKeptEntryId": first,
        "tokensBefore": 5,
        "systemMessage": snapshot,
    }


@pytest.mark.parametrize(
    ("fields", "says"),
    [
        ({"sections": None}, "sections is null"),
        ({"sections": ["a"]}, "sections is a JSON array, not an object"),
        ({"sections": "abc"}, "sections is a JSON string"),
        ({"toolsAdded": "read"}, "toolsAdded is a JSON string, not a list"),
        ({"toolsAdded": {"name": "read"}}, "toolsAdded is a JSON object, not a list"),
        ({"toolsRemoved": 5}, "toolsRemoved is a JSON number, not a list"),
        ({"toolsAdded": [1, {"name": 2}, READ]}, "toolsAdded holds a tool without a string name"),
    ],
)
def test_a_system_message_with_odd_fields_is_reported_and_the_rest_is_sent(tmp_path, fields, says):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("s0", None, "system", "Base prompt.", toolsAdded=[BASH]),
        msg("s1", "s0", "system", "Added rule.", **fields),  # line 3
        msg("u1", "s1", "user", "hi"),
    )
    text = path.read_text()
    s = Session.open(path)
    [problem] = s.load_report.problems
    assert (problem.line, problem.kind) == (3, "bad_system_message") and says in problem.message and "'s1'" in problem.message
    request = collapse_request(LlmRequest(messages=s.context().llm()))
    assert request.system_prompt == "Base prompt.\n\nAdded rule."  # the odd field is left out, the rest replays
    expected = ["bash", "read"] if fields.get("toolsAdded") == [1, {"name": 2}, READ] else ["bash"]
    assert [t.name for t in request.tools] == expected
    assert path.read_text() == text


@pytest.mark.parametrize(
    ("snapshot", "says", "prompt"),
    [
        ("oops", "is a JSON string, not a message; left out", None),
        ([1], "is a JSON array, not a message; left out", None),
        ({"content": "X"}, "has role None, not 'system'", None),
        ({"role": "system", "content": 3, "sections": {"a": "A"}, "timestamp": 1}, "content is a JSON number", "A"),
        ({"role": "system", "content": "P", "sections": {"a": 1, "b": "B"}, "timestamp": 1}, "section(s) 'a'", "P\n\nB"),
        ({"role": "system", "content": "P", "toolsAdded": "x", "timestamp": 1}, "toolsAdded is a JSON string", "P"),
    ],
)
def test_a_broken_compaction_snapshot_is_reported_and_the_context_still_rebuilds(tmp_path, snapshot, says, prompt):
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        msg("s0", None, "system", "Old prompt."),
        msg("u1", "s0", "user", "kept question"),
        _compaction("c1", "u1", "u1", snapshot),  # line 4
        msg("u2", "c1", "user", "after"),
    )
    s = Session.open(path)
    [problem] = s.load_report.problems
    assert (problem.line, problem.kind) == (4, "bad_system_message") and says in problem.message and "'c1'" in problem.message
    llm = s.context().llm()
    request = collapse_request(LlmRequest(messages=llm))
    assert request.system_prompt == prompt  # as pi 1.6: the snapshot stands for the prompt before the compaction
    texts = json.dumps([m.to_dict() for m in request.messages])
    assert "kept question" in texts and "after" in texts and "Old prompt." not in texts
    assert s.graph() is not None and s.context().messages  # views read it too
