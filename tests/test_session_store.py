"""The session store's everyday behaviour: creating, naming, listing, resolving, checking out,
forking, in-memory sessions, and keeping what it does not understand."""

from __future__ import annotations

import dataclasses
import json
import os
import re
import time
from pathlib import Path

import pytest

from pi_jupyter.messages import AssistantMessage, TextContent, UserMessage
from pi_jupyter.session import (
    CHECKOUT_TYPE,
    EntryNotFoundError,
    OpaqueEntry,
    Session,
    SessionError,
    SessionFileError,
    default_session_dir,
    encode_cwd,
)


def user(text: str, ts: int = 1) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ts}


def reply(text: str, ts: int = 2, model: str = "gpt-5") -> AssistantMessage:
    return AssistantMessage(content=[TextContent(text=text)], provider="openai", model=model, api="openai-responses", timestamp=ts)


def texts(ctx) -> list[str]:
    return [m["content"][0]["text"] if isinstance(m["content"], list) else m["content"] for m in ctx.raw_messages]


# -- creating and naming --------------------------------------------------------------------


def test_create_names_the_file_as_pi_does_and_writes_the_header_at_once(tmp_path):
    s = Session.create(tmp_path, cwd="/home/me/proj")
    name = os.path.basename(s.path)
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z_[0-9a-f-]{36}\.jsonl", name)
    assert name.endswith(f"_{s.id}.jsonl")
    header = json.loads(Path(s.path).read_text())
    assert header == {"type": "session", "version": 3, "id": s.id, "timestamp": header["timestamp"], "cwd": "/home/me/proj"}
    assert name.startswith(header["timestamp"].replace(":", "-").replace(".", "-"))
    assert s.id[14] == "7"  # a UUIDv7, like pi 0.7x
    assert len(s) == 0 and s.leaf_id is None and s.context().raw_messages == []


def test_default_folder_is_pis_per_project_folder_under_the_agent_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    s = Session.create(cwd="/home/me/proj")
    assert Path(s.path).parent == tmp_path / "agent" / "sessions" / "--home-me-proj--"
    assert default_session_dir("/home/me/proj") == tmp_path / "agent" / "sessions" / "--home-me-proj--"
    assert encode_cwd("C:\\src\\x") == "--C--src-x--" and encode_cwd("/") == "----"
    assert Session.list(cwd="/home/me/proj")[0].id == s.id
    assert [i.id for i in Session.list_all()] == [s.id]


def test_create_refuses_to_overwrite(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_text("precious\n")
    with pytest.raises(SessionFileError, match="already exists"):
        Session.create(path=path, cwd="/w")
    assert path.read_text() == "precious\n"


def test_open_with_create_starts_a_session_only_when_there_is_none(tmp_path):
    path = tmp_path / "new.jsonl"
    s = Session.open(path, create=True, cwd="/w")
    s.append_message(user("hi"))
    again = Session.open(path, create=True)
    assert again.id == s.id and len(again) == 1


def test_in_memory_sessions_never_touch_disk(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    s = Session.in_memory(cwd="/w")
    a = s.append_message(user("one"))
    s.append_message(reply("two"))
    s.checkout(a)
    s.append_message(user("three"))
    assert s.path is None and texts(s.context()) == ["one", "three"]
    assert len(s) == 3  # no checkout marker without a file
    fork = s.fork()
    assert fork.path is None and texts(fork.context()) == ["one", "three"]
    assert list(tmp_path.iterdir()) == []


# -- listing --------------------------------------------------------------------------------


def test_listing_gives_pis_info_fields_most_recent_first(tmp_path):
    old = Session.create(tmp_path, cwd="/w")
    old.append_message(user("first question", ts=1_700_000_000_000))
    old.append_message(reply("answer", ts=1_700_000_001_000))
    old.set_name("  the old one  ")
    new = Session.create(tmp_path, cwd="/w2")
    new.append_message(user("newer", ts=1_800_000_000_000))
    (tmp_path / "not-a-session.jsonl").write_text('{"type":"message"}\n')
    (tmp_path / "notes.txt").write_text("x")
    # file times must not matter: pi's /resume and our "most recent" use message times
    os.utime(new.path, (time.time() - 10_000, time.time() - 10_000))
    infos = Session.list(tmp_path)
    assert [i.id for i in infos] == [new.id, old.id]
    info = infos[1]
    assert info.name == "the old one"
    assert info.cwd == "/w" and info.message_count == 2
    assert info.first_message == "first question"
    assert info.all_messages_text == "first question answer"
    assert info.modified.timestamp() == 1_700_000_001.0
    assert infos[0].parent_session_path is None and infos[0].problems == 0
    assert Session.continue_recent(tmp_path).id == new.id
    assert dataclasses.asdict(old.info()) == dataclasses.asdict(info)


def test_continue_recent_starts_a_session_in_an_empty_folder(tmp_path):
    s = Session.continue_recent(tmp_path / "none-yet", cwd="/w")
    assert Path(s.path).parent == tmp_path / "none-yet" and len(s) == 0


# -- resolving and checking out -------------------------------------------------------------


def test_resolve_by_id_prefix_and_label(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    a = s.append_message(user("a"))
    s.label(a, "baseline")
    assert s.resolve(a) == a and s.resolve(a[:5]) == a and s.resolve("baseline") == a
    with pytest.raises(EntryNotFoundError, match="nope"):
        s.resolve("nope")
    with pytest.raises(EntryNotFoundError):
        s.resolve(a[:3])  # too short to be a prefix
    path = tmp_path / "ambiguous.jsonl"
    lines = [{"type": "session", "version": 3, "id": "s", "timestamp": "", "cwd": "/w"}]
    lines += [{"type": "custom", "customType": "x", "id": eid, "parentId": None, "timestamp": ""} for eid in ("abcd1111", "abcd2222")]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    amb = Session.open(path)
    with pytest.raises(SessionError, match="matches 2 entries"):
        amb.resolve("abcd")
    assert amb.resolve("abcd1") == "abcd1111"


def test_checkout_is_persisted_across_reopening(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    s.append_model_change("openai", "gpt-5")
    a = s.append_message(user("one"))
    s.append_message(reply("two"))
    s.append_message(user("three"))
    s.checkout(a)
    marker = s.raw_entries()[-1]
    assert marker["type"] == "custom" and marker["customType"] == CHECKOUT_TYPE and marker["parentId"] == a
    assert s.checkout(a) == a and s.raw_entries()[-1] is marker  # already there: nothing appended
    reopened = Session.open(s.path)
    assert reopened.leaf_id == a and texts(reopened.context()) == ["one"]
    b = reopened.append_message(user("branch"))
    assert reopened.raw_entry(b)["parentId"] == a
    assert texts(Session.open(s.path).context()) == ["one", "branch"]
    # before the first entry
    reopened.checkout(None)
    again = Session.open(s.path)
    assert again.leaf_id is None and again.context().raw_messages == []
    root = again.append_message(user("new root"))
    assert again.raw_entry(root)["parentId"] is None
    assert [n.id for n in again.tree()][-1] == root


def test_checkout_without_persist_only_moves_the_leaf_in_memory(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    a = s.append_message(user("one"))
    b = s.append_message(user("two"))
    before = Path(s.path).read_bytes()
    s.checkout(a, persist=False)
    assert s.leaf_id == a and Path(s.path).read_bytes() == before
    assert Session.open(s.path).leaf_id == b
    c = s.append_message(user("three"))
    assert s.raw_entry(c)["parentId"] == a and Session.open(s.path).leaf_id == c


def test_summarize_needs_an_agent(tmp_path):
    s = Session.in_memory()
    a = s.append_message(user("one"))
    with pytest.raises(SessionError, match="Agent"):
        s.checkout(a, summarize=True)


def test_branch_with_summary_and_labels_as_pi_writes_them(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    a = s.append_message(user("one"))
    s.append_message(user("two"))
    bs = s.branch_with_summary(a, "we tried two", details={"k": 1}, from_hook=False)
    entry = s.raw_entry(bs)
    assert list(entry) == ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "fromHook"]
    assert entry["parentId"] == a and entry["fromId"] == a
    root_bs = s.branch_with_summary(None, "from the start")
    assert s.raw_entry(root_bs)["fromId"] == "root" and s.raw_entry(root_bs)["parentId"] is None
    lab = s.raw_entry(s.label(a, None))
    assert "label" not in lab  # unset fields are left out, not null


# -- forks -----------------------------------------------------------------------------------


def test_fork_of_the_current_branch_recreates_its_labels(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    a = s.append_message(user("one"))
    b = s.append_message(reply("two"))
    s.label(a, "start")
    s.label(b, "answer")
    s.checkout(a)
    s.append_message(user("other"))
    s.checkout(b)
    s.label(b, "answer-2")
    fork = s.fork()
    assert Path(fork.path).parent == tmp_path
    assert fork.header.parent_session == s.path and fork.id != s.id
    assert texts(fork.context()) == ["one", "two"]
    assert fork.labels == {a: "start", b: "answer-2"}
    kinds = [e["type"] for e in fork.raw_entries()]
    assert kinds == ["message", "message", "label", "label"]
    assert fork.load_report.ok
    at_a = s.fork(a, path=str(tmp_path / "at-a.jsonl"))
    assert texts(at_a.context()) == ["one"] and at_a.labels == {a: "start"}


def test_fork_from_copies_a_whole_file_migrated_with_parent_session(tmp_path):
    src = tmp_path / "other" / "v1.jsonl"
    src.parent.mkdir()
    src.write_text(
        '{"type":"session","id":"old","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/elsewhere"}\n'
        '{"type":"message","timestamp":"2025-01-01T00:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    )
    before = src.read_bytes()
    copy = Session.fork_from(src, cwd="/here", dir=tmp_path / "mine")
    assert src.read_bytes() == before  # the source is only read
    assert copy.header.parent_session == str(src) and copy.cwd == "/here" and copy.header.version == 3
    assert texts(copy.context()) == ["hi"]
    assert json.loads(Path(copy.path).read_text().split("\n")[1])["parentId"] is None


def test_unknown_fields_survive_a_round_trip(tmp_path):
    path = tmp_path / "s.jsonl"
    header = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w", "extra": {"x": 1}}
    entry = {
        "type": "message",
        "id": "a",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "futureField": [1, {"deep": True}],
        "message": {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c", "name": "n", "arguments": {}, "partialJson": "{"}, {"type": "newBlock", "x": 1}],
            "api": "a",
            "provider": "p",
            "model": "m",
            "usage": {"input": 1, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 1, "cost": {"total": 0}, "vendorUsage": 9},
            "stopReason": "stop",
            "timestamp": 1,
            "newKey": "kept",
        },
    }
    path.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n")
    s = Session.open(path)
    assert s.raw_entry("a") == entry
    fork = s.fork("a")
    assert fork.raw_entry("a") == entry
    assert json.loads(Path(fork.path).read_text().split("\n")[1]) == entry
    # the typed view keeps them too
    typed = s.entry("a")
    assert typed.to_dict() == entry
    s.append_message(UserMessage.text("more"))
    assert Session.open(path).raw_entry("a") == entry


def test_unknown_entry_types_are_kept_as_opaque_tree_nodes(tmp_path):
    path = tmp_path / "s.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"},
        {"type": "message", "id": "a", "parentId": None, "timestamp": "2025-01-01T00:00:01.000Z", "message": user("one")},
        {"type": "hologram", "id": "h", "parentId": "a", "timestamp": "2025-01-01T00:00:02.000Z", "payload": {"x": 1}},
        {"type": "message", "id": "b", "parentId": "h", "timestamp": "2025-01-01T00:00:03.000Z", "message": user("two")},
    ]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    s = Session.open(path)
    assert [(p.kind, p.line, p.severity) for p in s.load_report.problems] == [("unknown_type", 3, "info")]
    assert s.load_report.ok
    assert texts(s.context()) == ["one", "two"]  # it adds nothing, and the branch goes through it
    assert s.branch_ids() == ["a", "h", "b"]
    opaque = s.entry("h")
    assert isinstance(opaque, OpaqueEntry) and opaque.to_dict() == lines[2]
    assert s.tree()[0].children[0].type == "hologram"
    assert s.fork().raw_entry("h") == lines[2]


def test_name_is_the_last_session_info_as_in_pi(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    s.set_name("  first  ")
    assert s.name == "first"
    s.set_name("second")
    assert Session.open(s.path).name == "second"
    with pytest.raises(SessionError):
        s.set_name("   ")


def test_read_only_sessions_refuse_appends(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    s.append_message(user("one"))
    ro = Session.open(s.path, readonly=True)
    with pytest.raises(SessionError, match="read-only"):
        ro.append_message(user("two"))
    s.close()
    with pytest.raises(SessionError, match="closed"):
        s.append_message(user("two"))
    assert texts(s.context()) == ["one"]  # reading still works after close


def test_listeners_see_every_append(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    seen: list[str] = []
    stop = s.on_append(lambda e: seen.append(e["type"]))
    s.append_message(user("one"))
    s.append_thinking_level_change("high")
    stop()
    s.append_custom("x")
    assert seen == ["message", "thinking_level_change"]


def test_fork_of_an_empty_branch_says_so(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    s.append_message(user("one"))
    s.checkout(None)
    for call in (lambda: s.fork(), lambda: s.fork(None), lambda: Session.in_memory().fork()):
        with pytest.raises(SessionError, match="nothing to fork") as info:
            call()
        assert "object at 0x" not in str(info.value)
    assert [p.name for p in tmp_path.iterdir()] == [Path(s.path).name]


def test_a_checkout_that_cannot_be_written_leaves_the_leaf_where_it_was(tmp_path):
    s = Session.create(tmp_path, cwd="/w")
    a = s.append_message(user("one"))
    b = s.append_message(user("two"))
    ro = Session.open(s.path, readonly=True)
    with pytest.raises(SessionError, match="read-only"):
        ro.checkout(a)
    assert ro.leaf_id == b
    # a writer whose marker could not be written must not believe the move was saved
    Path(s.path).write_bytes(Path(s.path).read_bytes()[:-5])  # another program cut the file
    with pytest.raises(SessionError, match="shrank"):
        s.checkout(a)
    assert s.leaf_id == b
