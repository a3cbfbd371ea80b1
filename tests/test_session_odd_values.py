"""Files whose fields hold values of the wrong JSON type (a list where a string belongs, a number
as a header's cwd, a message that is not an object) still open, list, rebuild and print: pi
reads such files without complaint, so the store, the listing and ``pi-jupyter context|tree|info``
must too (never a traceback), and the file is never touched."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_jupyter.cli.context_cmd import context_json
from pi_jupyter.session import CHECKOUT_TYPE, Session

HEADER = {"type": "session", "version": 3, "id": "s", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
TS = "2025-01-01T00:00:01.000Z"


def user(eid: str, parent: str | None, content: object = "hi") -> dict:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": TS,
        "message": {"role": "user", "content": content, "timestamp": 1},
    }


def assistant(eid: str, parent: str | None, **fields: object) -> dict:
    message = {"role": "assistant", "content": [{"type": "text", "text": "yo"}], "api": "a", "provider": "p", "model": "m"}
    message.update(usage={}, stopReason="stop", timestamp=2)
    message.update(fields)
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": message}


def write(path: Path, *rows: dict) -> bytes:
    blob = "".join(json.dumps(r) + "\n" for r in rows).encode()
    path.write_bytes(blob)
    return blob


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_jupyter", *args], capture_output=True, text=True, encoding="utf-8", timeout=60)


def test_a_custom_entry_whose_custom_type_is_not_a_string_opens(tmp_path):
    path = tmp_path / "s.jsonl"
    write(
        path,
        HEADER,
        user("a", None),
        {"type": "custom", "customType": ["x"], "id": "c", "parentId": "a", "timestamp": TS},
        {"type": "custom", "customType": {"k": CHECKOUT_TYPE}, "id": "d", "parentId": "c", "timestamp": TS},
    )
    s = Session.open(path)
    assert s.leaf_id == "d" and s.branch_ids() == ["a", "c", "d"]
    assert [m["content"] for m in s.context().raw_messages] == ["hi"]


def test_a_model_that_is_not_a_string_does_not_break_the_context(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, HEADER, user("a", None), assistant("b", "a", provider=1, model=None))
    s = Session.open(path)
    ctx = s.context()
    assert len(ctx.raw_messages) == 2
    # pi's shape exactly: {provider: 1, modelId: null}
    assert ctx.to_pi_json()["model"] == {"provider": 1, "modelId": None}
    assert context_json(s)["model"] == {"provider": 1, "modelId": None}


def test_a_header_with_odd_field_types_opens_and_is_described(tmp_path):
    path = tmp_path / "s.jsonl"
    odd = {"type": "session", "version": "abc", "id": "s", "timestamp": 7, "cwd": 5, "parentSession": 3}
    before = write(path, odd, user("a", None))
    s = Session.open(path, readonly=True)
    header = s.header
    assert header.id == "s" and header.cwd == "" and header.parent_session is None
    assert s.info().cwd == ""
    for args in (("info",), ("info", "--json"), ("context",), ("tree",)):
        proc = cli(*args, str(path))
        assert proc.returncode in (0, 1), (args, proc.stderr)
        assert "Traceback" not in proc.stderr, (args, proc.stderr)
    info = json.loads(cli("info", "--json", str(path)).stdout)
    assert info["version"] == "abc"  # what the file says, not a default
    assert path.read_bytes() == before


@pytest.mark.parametrize("content", [True, 1.5, [1, 2], [{"type": "text", "text": 5}], {"a": 1}])
def test_message_content_of_any_type_lists_and_prints(tmp_path, content):
    path = tmp_path / "s.jsonl"
    before = write(path, HEADER, user("a", None, content), assistant("b", "a", content=content))
    infos = Session.list(tmp_path)
    assert [i.id for i in infos] == ["s"] and infos[0].message_count == 2
    assert Session.open(path, readonly=True).info().id == "s"
    for args in (("info",), ("context",), ("context", "--json"), ("tree",)):
        proc = cli(*args, str(path))
        assert proc.returncode in (0, 1), (args, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stdout, (args, proc.stderr)
    assert path.read_bytes() == before


@pytest.mark.parametrize("message", [None, 1.5, True, "text", [1], {"role": 5, "content": "x"}, {"role": ["user"]}])
def test_a_message_that_is_not_a_message_is_left_out_of_llm_as_pi_leaves_it(tmp_path, message):
    path = tmp_path / "s.jsonl"
    odd = {"type": "message", "id": "b", "parentId": "a", "timestamp": TS, "message": message}
    before = write(path, HEADER, user("a", None), odd, user("c", "b", "after"))
    s = Session.open(path, readonly=True)
    out = context_json(s)
    assert out["messages"][1] == message  # the context is pi's, verbatim
    assert [m["content"] for m in out["llm"]] == ["hi", "after"]
    for args in (("info",), ("context",), ("context", "--json"), ("tree",)):
        proc = cli(*args, str(path))
        assert proc.returncode in (0, 1), (args, proc.stderr)
        assert "Traceback" not in proc.stderr and proc.stdout, (args, proc.stderr)
    assert path.read_bytes() == before


def test_an_entry_whose_id_is_the_empty_string(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, HEADER, user("", None), user("b", "", "two"))
    proc = cli("info", "--json", str(path))
    assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, proc.stderr
    assert json.loads(proc.stdout)["messages"] == 2


def test_timestamps_far_outside_the_calendar(tmp_path):
    path = tmp_path / "s.jsonl"
    row = user("a", None)
    row["message"]["timestamp"] = 10**20
    write(path, HEADER, row)
    assert Session.list(tmp_path)[0].id == "s"
    for args in (("info",), ("context",), ("tree",)):
        proc = cli(*args, str(path))
        assert proc.returncode in (0, 1) and "Traceback" not in proc.stderr, (args, proc.stderr)


def test_a_summary_entry_without_a_valid_time_converts_as_pi_converts_it(tmp_path):
    # pi: new Date("not a time").getTime() is NaN, written as null, in the summary and in llm
    path = tmp_path / "s.jsonl"
    compaction = {"type": "compaction", "id": "c", "parentId": "a", "timestamp": "not a time"}
    compaction.update(summary="earlier", firstKeptEntryId="a", tokensBefore=5)
    summary = {"type": "branch_summary", "id": "d", "parentId": "c", "timestamp": None, "fromId": "a", "summary": "left"}
    write(path, HEADER, user("a", None), compaction, summary)
    out = context_json(Session.open(path, readonly=True))
    assert [m["role"] for m in out["messages"]] == ["compactionSummary", "user", "branchSummary"]
    # new Date("not a time") is NaN (null in JSON); new Date(null) is 0
    assert out["messages"][0]["timestamp"] is None and out["messages"][2]["timestamp"] == 0
    assert [m["timestamp"] for m in out["llm"]] == [None, 1, 0]
    assert "earlier" in out["llm"][0]["content"][0]["text"] and "left" in out["llm"][2]["content"][0]["text"]
    proc = cli("context", str(path))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr


@pytest.mark.parametrize(
    "stamp, ms",
    [(None, 0), (5, 5), (5.9, 5), (True, 1), ("2025", 1735689600000), ("2025-02", 1738368000000), (1735689600000, 1735689600000)],
)
def test_entry_times_that_are_not_iso_strings_read_as_javascript_reads_them(tmp_path, stamp, ms):
    # pi: new Date(entry.timestamp).getTime() (checked against pi 0.73.1 through its oracle)
    path = tmp_path / "s.jsonl"
    compaction = {"type": "compaction", "id": "c", "parentId": "a", "timestamp": stamp}
    compaction.update(summary="s", firstKeptEntryId="a", tokensBefore=5)
    custom = {"type": "custom_message", "customType": "n", "content": "cm", "display": True, "id": "d", "parentId": "c", "timestamp": stamp}
    summary = {"type": "branch_summary", "id": "e", "parentId": "d", "timestamp": stamp, "fromId": "a", "summary": "left"}
    write(path, HEADER, user("a", None), compaction, custom, summary)
    out = context_json(Session.open(path, readonly=True))
    assert [m["timestamp"] for m in out["messages"]] == [ms, 1, ms, ms]
    assert [m["timestamp"] for m in out["llm"]] == [ms, 1, ms, ms]


def test_children_with_numeric_times_are_ordered_by_them_as_in_pi(tmp_path):
    path = tmp_path / "s.jsonl"
    late, early = user("late", "a"), user("early", "a")
    late["timestamp"], early["timestamp"] = 2000, 1000
    write(path, HEADER, user("a", None), late, early)
    s = Session.open(path, readonly=True)
    assert [n.id for n in s.tree()[0].children] == ["early", "late"]


@pytest.mark.parametrize("message", [{"role": ["user"], "content": "x"}, {"role": {"a": 1}}, 5, None])
def test_typed_entries_of_odd_messages_are_opaque_not_errors(tmp_path, message):
    path = tmp_path / "s.jsonl"
    odd = {"type": "message", "id": "b", "parentId": "a", "timestamp": TS, "message": message}
    write(path, HEADER, user("a", None), odd)
    s = Session.open(path, readonly=True)
    assert [type(e).__name__ for e in s.entries()][0] == "MessageEntry"
    assert [e.id for e in s.branch()] == ["a", "b"]
    assert s.entry("b").to_dict() == odd
    assert len(s.context().messages) == 2 and len(s.context().llm()) == 1


def test_a_message_time_of_1e400_reads_as_infinity_and_lists(tmp_path):
    path = tmp_path / "s.jsonl"
    row = json.dumps(user("a", None)).replace('"timestamp": 1}', '"timestamp": 1e400}')
    path.write_text(json.dumps(HEADER) + "\n" + row + "\n")
    assert Session.open(path).context().raw_messages[0]["timestamp"] == float("inf")  # JSON.parse gives Infinity too
    assert Session.list(tmp_path)[0].modified.year == 2025  # an invalid date: the header's time
    assert cli("info", str(path)).returncode == 0
