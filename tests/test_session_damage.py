"""Damaged session files lose nothing: bad lines are reported with line numbers and kept byte
for byte, a torn tail never swallows the next entry, and files that are no session at all are
refused without being touched."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from pi_jupyter.session import CycleError, Session, SessionFileError

HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def line(obj: dict) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def msg(eid: str, parent: str | None, text: str, role: str = "user", ts: str = "2025-01-01T00:00:01.000Z") -> dict:
    message: dict = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1}
    if role == "assistant":
        message.update(api="x", provider="p", model="m", usage={}, stopReason="stop")
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": message}


def write(path: Path, *parts: bytes) -> bytes:
    blob = b"".join(parts)
    path.write_bytes(blob)
    return blob


def texts(s: Session) -> list[str]:
    return [m["content"][0]["text"] for m in s.context().raw_messages]


BAD = b'{"type":"message","id":"zz", this is not json at all \xe2\x80\xa8 \xff'


def test_malformed_middle_line_is_reported_kept_and_survives_appends(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None, "one")), BAD + b"\n", line(msg("b", "a", "two")))
    s = Session.open(path)
    assert [(p.line, p.kind, p.severity) for p in s.load_report.problems] == [(3, "malformed", "error")]
    assert "not JSON" in s.load_report.problems[0].message
    assert texts(s) == ["one", "two"]
    s.append_message({"role": "user", "content": [{"type": "text", "text": "three"}], "timestamp": 2})
    s.close()
    lines = path.read_bytes().split(b"\n")
    assert lines[2] == BAD
    assert texts(Session.open(path)) == ["one", "two", "three"]
    reopened = Session.open(path)
    assert reopened.load_report.problems[0].line == 3


def test_malformed_line_in_v1_file_stays_in_place_through_the_migration(tmp_path):
    path = tmp_path / "v1.jsonl"
    v1_header = {"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w", "branchedFrom": "/x.jsonl"}
    m1 = {"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": {"role": "user", "content": "hi", "timestamp": 1}}
    m2 = {"type": "message", "timestamp": "2025-01-01T00:00:02.000Z", "message": {"role": "hookMessage", "content": "x", "timestamp": 2}}
    comp = {"type": "compaction", "timestamp": "2025-01-01T00:00:03.000Z", "summary": "s", "firstKeptEntryIndex": 1, "tokensBefore": 9}
    write(path, line(v1_header), line(m1), BAD + b"\n", line(m2), line(comp))
    s = Session.open(path)
    kinds = [p.kind for p in s.load_report.problems]
    assert kinds == ["migrated", "malformed"]
    out = path.read_bytes().split(b"\n")
    assert out[2] == BAD  # the unreadable line, byte for byte, on its line
    header = json.loads(out[0])
    assert header["version"] == 3 and header["parentSession"] == "/x.jsonl"
    entries = [json.loads(x) for x in (out[1], out[3], out[4])]
    assert entries[0]["parentId"] is None and entries[1]["parentId"] == entries[0]["id"]
    assert entries[1]["message"]["role"] == "custom"
    assert entries[2]["firstKeptEntryId"] == entries[0]["id"] and "firstKeptEntryIndex" not in entries[2]
    assert not list(tmp_path.glob(".*.tmp"))  # the atomic rewrite left no temp file
    # a second open finds a v3 file: nothing more to migrate
    assert [p.kind for p in Session.open(path).load_report.problems] == ["malformed"]


def test_readonly_never_migrates_on_disk(tmp_path):
    path = tmp_path / "v1.jsonl"
    before = write(
        path,
        line({"type": "session", "id": "old", "timestamp": "t", "cwd": "/w"}),
        line({"type": "message", "message": {"role": "user", "content": "hi"}}),
    )
    s = Session.open(path, readonly=True)
    assert len(s) == 1 and s.header.version == 3
    assert path.read_bytes() == before


def test_torn_tail_is_reported_and_the_next_entry_starts_on_a_new_line(tmp_path):
    path = tmp_path / "s.jsonl"
    torn = b'{"type":"message","id":"c","parentId":"b","timest'
    write(path, line(HEADER), line(msg("a", None, "one")), line(msg("b", "a", "two", "assistant")), torn)
    s = Session.open(path)
    problem = s.load_report.problems[0]
    assert (problem.line, problem.kind) == (4, "torn_tail")
    assert s.leaf_id == "b"
    new = s.append_message({"role": "user", "content": [{"type": "text", "text": "three"}], "timestamp": 3})
    s.close()
    lines = path.read_bytes().split(b"\n")
    assert lines[3] == torn  # the fragment stays, alone on its line
    assert json.loads(lines[4])["id"] == new and json.loads(lines[4])["parentId"] == "b"
    again = Session.open(path)
    assert texts(again) == ["one", "two", "three"]
    assert [(p.line, p.kind) for p in again.load_report.problems] == [(4, "malformed")]


def test_a_valid_last_line_without_newline_gets_one_before_the_next_entry(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None, "one")).rstrip(b"\n"))
    s = Session.open(path)
    assert s.load_report.ok
    s.append_message({"role": "user", "content": [{"type": "text", "text": "two"}], "timestamp": 3})
    assert texts(Session.open(path)) == ["one", "two"]


@pytest.mark.parametrize(
    "blob, reason",
    [
        (b"", "empty"),
        (b"  \n\n\t\n", "empty"),
        (b"this is not json\nnor this\n", "no line could be read"),
        (b"[1, 2, 3]\n", "no line could be read"),
        (line(msg("a", None, "no header")), "not a session header"),
        (line({"type": "session", "id": 5}) + line(msg("a", None, "x")), "not a session header"),
        (b"\xef\xbb\xbf" + line({"foo": 1}), "not a session header"),
    ],
)
def test_files_that_are_not_sessions_are_refused_untouched(tmp_path, blob, reason):
    path = tmp_path / "bad.jsonl"
    path.write_bytes(blob)
    past = time.time() - 1000
    os.utime(path, (past, past))
    mtime = path.stat().st_mtime_ns
    for readonly in (False, True):
        with pytest.raises(SessionFileError, match=reason) as info:
            Session.open(path, readonly=readonly)
        assert str(path) in str(info.value) and "untouched" in str(info.value)
    assert path.read_bytes() == blob
    assert path.stat().st_mtime_ns == mtime
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_a_folder_or_a_missing_file_is_a_clear_error(tmp_path):
    with pytest.raises(SessionFileError, match="folder"):
        Session.open(tmp_path)
    with pytest.raises(FileNotFoundError, match="create=True"):
        Session.open(tmp_path / "nope.jsonl")
    assert not (tmp_path / "nope.jsonl").exists()


def test_bom_crlf_blank_lines_and_separators_inside_strings(tmp_path):
    path = tmp_path / "s.jsonl"
    a = msg("a", None, "line\u2028sep\u2029para\x85nel")
    b = msg("b", "a", "two")
    write(path, b"\xef\xbb\xbf", line(HEADER).replace(b"\n", b"\r\n"), b"\n   \n", line(a).replace(b"\n", b"\r\n"), line(b))
    s = Session.open(path)
    assert s.load_report.ok, s.load_report
    assert texts(s) == ["line\u2028sep\u2029para\x85nel", "two"]
    s.append_message({"role": "user", "content": [{"type": "text", "text": "three"}], "timestamp": 3})
    data = path.read_bytes()
    assert data.startswith(b"\xef\xbb\xbf")
    assert texts(Session.open(path)) == ["line\u2028sep\u2029para\x85nel", "two", "three"]


def test_lone_surrogate_escapes_read_as_pi_reads_them(tmp_path):
    path = tmp_path / "s.jsonl"
    write(
        path,
        line(HEADER),
        b'{"type":"message","id":"a","parentId":null,"timestamp":"t","message":{"role":"user","content":"x\\ud83d","timestamp":1}}\n',
    )
    s = Session.open(path)
    assert s.load_report.ok
    assert s.context().raw_messages[0]["content"] == "x\ud83d"


# -- structure: cycles, self-parents, duplicates, orphans -----------------------------------


def test_parent_cycle_is_reported_and_walking_it_raises(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("r", None, "root")), line(msg("a", "b", "A")), line(msg("b", "c", "B")), line(msg("c", "a", "C")))
    s = Session.open(path)
    cycle = [p for p in s.load_report.problems if p.kind == "cycle"]
    assert len(cycle) == 1 and cycle[0].severity == "error" and cycle[0].line in (3, 4, 5)
    assert s.leaf_id == "c"
    with pytest.raises(CycleError, match="parent cycle"):
        s.context()
    with pytest.raises(CycleError):
        s.branch_ids()
    assert texts_at(s, "r") == ["root"]
    assert [n.id for n in s.tree()] == ["r"]  # as in pi, the loop hangs off no root


def texts_at(s: Session, leaf: str) -> list[str]:
    return [m["content"][0]["text"] for m in s.context(leaf).raw_messages]


def test_self_parent_is_a_root(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None, "A")), line(msg("s", "s", "self")), line(msg("t", "s", "T")))
    s = Session.open(path)
    assert [(p.kind, p.line) for p in s.load_report.problems] == [("self_parent", 3)]
    assert texts(s) == ["self", "T"]
    assert [n.id for n in s.tree()] == ["a", "s"]
    assert s.child_ids(None) == ["a", "s"]


def test_orphans_start_their_branch_and_are_roots_in_the_tree(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None, "A")), line(msg("o", "gone", "orphan")), line(msg("p", "o", "P")))
    s = Session.open(path)
    assert [(p.kind, p.line, p.entry_id) for p in s.load_report.problems] == [("orphan", 3, "o")]
    assert texts(s) == ["orphan", "P"]
    assert [n.id for n in s.tree()] == ["a", "o"]


def test_forward_parent_reference_is_fine(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("b", "a", "B")), line(msg("a", None, "A")))
    s = Session.open(path)
    assert s.load_report.ok
    assert texts_at(s, "b") == ["A", "B"]


def test_duplicate_ids_the_later_line_wins_as_in_pi(tmp_path):
    path = tmp_path / "s.jsonl"
    write(
        path,
        line(HEADER),
        line(msg("a", None, "A")),
        line(msg("b", "a", "B-first")),
        line(HEADER | {"id": "again"}),
        line(msg("b", "a", "B-second")),
        line(msg("c", "b", "C")),
    )
    s = Session.open(path)
    assert [(p.kind, p.line) for p in s.load_report.problems] == [("duplicate_header", 4), ("duplicate_id", 5)]
    assert s.id == "sess-1"
    assert texts(s) == ["A", "B-second", "C"]
    assert len(s) == 3
    assert [n.id for n in s.tree()[0].children] == ["b"]


def test_a_duplicate_that_closes_a_loop_is_a_cycle_not_a_hang(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None, "A")), line(msg("b", "a", "B")), line(msg("a", "b", "A again")))
    s = Session.open(path)
    assert {p.kind for p in s.load_report.problems} == {"duplicate_id", "cycle"}
    with pytest.raises(CycleError):
        s.context()


def test_big_cycle_is_found_quickly(tmp_path):
    n = 20000
    entries = [line(msg(f"e{i}", f"e{(i + 1) % n}", str(i))) for i in range(n)]
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), *entries)
    s = Session.open(path)
    assert [p.kind for p in s.load_report.problems] == ["cycle"]
    with pytest.raises(CycleError):
        s.context()


def test_entries_without_id_or_type_are_reported_and_skipped(tmp_path):
    path = tmp_path / "s.jsonl"
    write(path, line(HEADER), line(msg("a", None, "A")), line({"foo": "bar"}), b"42\n", line(msg("b", "a", "B")))
    s = Session.open(path)
    assert [(p.kind, p.line) for p in s.load_report.problems] == [("not_an_entry", 3), ("malformed", 4)]
    assert texts(s) == ["A", "B"]


def test_a_line_another_writer_glued_to_a_torn_tail_reads_as_a_fresh_reader_sees_it(tmp_path):
    path = tmp_path / "s.jsonl"
    torn = b'{"type":"message","id":"c","par'
    write(path, line(HEADER), line(msg("a", None, "one")), torn)
    s = Session.open(path)
    with open(path, "ab") as fh:  # a writer that does not check for a torn tail (as pi)
        fh.write(line(msg("g", "a", "glued")))
    new = s.append_message({"role": "user", "content": [{"type": "text", "text": "ours"}], "timestamp": 5})
    fresh = Session.open(path, readonly=True)
    assert "g" not in s and "g" not in fresh  # one malformed line, for us as for a fresh reader
    assert [e["id"] for e in s.raw_entries()] == [e["id"] for e in fresh.raw_entries()] == ["a", new]
    assert [(p.line, p.kind) for p in fresh.load_report.problems] == [(3, "malformed")]
    assert (3, "malformed") in [(p.line, p.kind) for p in s.load_report.problems]
    assert path.read_bytes().split(b"\n")[3].startswith(b"{") and new.encode() in path.read_bytes().split(b"\n")[3]


def test_nan_and_infinity_are_not_json_as_for_pi(tmp_path):
    # Python's json reads NaN and Infinity; JSON.parse (pi) refuses the line, and so must we
    path = tmp_path / "s.jsonl"
    nan = line(msg("b", "a", "nan")).replace(b'"timestamp":1', b'"timestamp":NaN')
    inf = line(msg("c", "a", "inf")).replace(b'"timestamp":1', b'"timestamp":-Infinity')
    before = write(path, line(HEADER), line(msg("a", None, "one")), nan, inf)
    s = Session.open(path)
    assert [(p.line, p.kind) for p in s.load_report.problems] == [(3, "malformed"), (4, "malformed")]
    assert all("not JSON" in p.message for p in s.load_report.problems)
    assert s.leaf_id == "a" and texts(s) == ["one"] and "b" not in s
    assert Session.list(tmp_path)[0].message_count == 1
    assert path.read_bytes() == before


def test_two_openers_migrating_one_old_file_at_once_both_succeed(tmp_path, monkeypatch):
    import subprocess
    import sys

    from pi_jupyter.session import store

    path = tmp_path / "v1.jsonl"
    write(
        path,
        line({"type": "session", "id": "old", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}),
        line({"type": "message", "timestamp": "2025-01-01T00:00:01.000Z", "message": {"role": "user", "content": "hi", "timestamp": 1}}),
    )
    real = store.exclusive
    calls = {"n": 0}

    def other_process_migrates_first(fd, where, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:  # between our read and our rewrite, another process migrates the file
            code = (
                "import sys; from pi_jupyter.session import Session; "
                "Session.open(sys.argv[1]).append_message({'role': 'user', 'content': 'theirs', 'timestamp': 2})"
            )
            subprocess.run([sys.executable, "-c", code, str(path)], check=True, timeout=60)
        return real(fd, where, *args, **kwargs)

    monkeypatch.setattr(store, "exclusive", other_process_migrates_first)
    s = Session.open(path)  # reads the file again: the other process's entry is not written over
    assert texts_of_context(s) == ["hi", "theirs"] and s.header.version == 3
    assert json.loads(path.read_bytes().split(b"\n")[0])["version"] == 3
    assert len(path.read_bytes().strip().split(b"\n")) == 3
    s.append_message({"role": "user", "content": "more", "timestamp": 3})
    assert texts_of_context(Session.open(path)) == ["hi", "theirs", "more"]


def texts_of_context(s: Session) -> list:
    return [m["content"] for m in s.context().raw_messages]
