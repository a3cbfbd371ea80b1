"""Opening a session reads its message lines as stubs and the whole entries when they are needed.

Whatever is asked of the session afterwards (the branch, another branch, every entry, the tree) is
what the file holds, byte for byte as JSON; a damaged line anywhere is reported as a full read
reports it; a file renamed over ours is no concern; a file rewritten in place is a clear error
when an entry that was not read yet is asked for.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pi_jupyter.session import Session, SessionChangedError


def write(path: Path, lines: list[object]) -> None:
    path.write_bytes(b"".join(json.dumps(x, ensure_ascii=False).encode() + b"\n" for x in lines))


def header() -> dict:
    return {"type": "session", "version": 3, "id": "s1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}


def message(eid: str, parent: str | None, role: str, text: str, **extra: object) -> dict:
    body = {"role": role, "content": [{"type": "text", "text": text}], "timestamp": 1, **extra}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": "2025-01-01T00:00:01.000Z", "message": body}


def two_branches(path: Path) -> None:
    """a -> b -> c (an old branch), then a -> d -> e (the current one, last in the file)."""
    write(
        path,
        [
            header(),
            message("a", None, "user", "start"),
            message("b", "a", "assistant", "old answer", provider="anthropic", model="claude"),
            message("c", "b", "user", "old follow-up ünïcödé 😀"),
            {"type": "label", "id": "l1", "parentId": "c", "timestamp": "2025-01-01T00:00:02.000Z", "targetId": "b", "label": "old"},
            message("d", "a", "assistant", "new answer", provider="openai", model="gpt"),
            message("e", "d", "user", "new follow-up"),
        ],
    )


def test_every_entry_read_back_is_the_line_as_written(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    written = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    s = Session.open(path)
    assert [m["content"][0]["text"] for m in s.context().raw_messages] == ["start", "new answer", "new follow-up"]
    assert s.raw_entry("c") == written[2]  # off the branch: read back from the file
    assert s.context("c").raw_messages[-1]["content"][0]["text"] == "old follow-up ünïcödé 😀"
    assert s.raw_entries() == written
    assert [n.entry for n in s.tree()[0].children] == [written[1], written[4]]
    assert s.labels == {"b": "old"} and s.load_report.ok


def test_the_model_of_a_branch_comes_from_its_assistant_messages(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    s = Session.open(path, readonly=True)
    assert s.context().model.model_id == "gpt"
    assert s.context("c").model.model_id == "claude"


def test_a_line_that_is_not_utf8_off_the_branch_is_reported_and_read_with_replacement(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3].replace("ünïcödé".encode(), b"caf\xe9")  # Latin-1 in a UTF-8 file
    path.write_bytes(b"\n".join(lines))
    s = Session.open(path)
    assert [(p.line, p.kind) for p in s.load_report.problems] == [(4, "invalid_utf8")]
    assert "caf\ufffd" in s.raw_entry("c")["message"]["content"][0]["text"]


def test_a_damaged_line_off_the_branch_is_reported_with_its_line(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    lines = path.read_bytes().split(b"\n")
    lines[3] = lines[3][:-30] + b"}"  # cut inside the text: not JSON any more
    path.write_bytes(b"\n".join(lines))
    s = Session.open(path)
    # the label below it has lost its parent: reported too, as by any reader
    assert [(p.line, p.kind) for p in s.load_report.problems] == [(4, "malformed"), (5, "orphan")]
    assert "c" not in s and s.leaf_id == "e"


def test_numbers_json_parse_reads_but_orjson_refuses_read_back_as_before(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    text = path.read_text().replace('"old follow-up ünïcödé 😀"}], "timestamp": 1', '"old follow-up ünïcödé 😀"}], "timestamp": 1e400')
    path.write_text(text)
    s = Session.open(path)
    assert s.raw_entry("c")["message"]["timestamp"] == float("inf")
    assert s.load_report.ok


def test_a_file_renamed_over_ours_leaves_what_we_opened_readable(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    written = [json.loads(line) for line in path.read_text().splitlines()[1:]]
    s = Session.open(path, readonly=True)
    other = tmp_path / "other.jsonl"
    write(other, [header(), message("x", None, "user", "something else")])
    os.replace(other, path)
    assert s.raw_entry("c") == written[2]
    assert s.raw_entries() == written


def test_a_file_rewritten_in_place_is_a_clear_error_when_an_unread_entry_is_needed(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    s = Session.open(path, readonly=True)
    s.context()  # the current branch is read
    with open(path, "r+b") as fh:  # another program rewrites the file in place (same inode)
        blob = fh.read()
        fh.seek(0)
        fh.write(blob.replace(b'"id": "c"', b'"id": "C"'))
    assert [m["content"][0]["text"] for m in s.context().raw_messages][-1] == "new follow-up"
    with pytest.raises(SessionChangedError, match="rewrote the file since it was opened.*open it again"):
        s.raw_entry("c")


def test_appends_and_other_writers_mix_with_entries_read_as_stubs(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    s = Session.open(path)
    other = Session.open(path)
    theirs = other.append_message({"role": "user", "content": "from another writer", "timestamp": 2})
    s.append_message({"role": "user", "content": "mine", "timestamp": 3})
    assert s.raw_entry(theirs)["message"]["content"] == "from another writer"
    assert [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"] for m in s.context().raw_messages] == [
        "start",
        "new answer",
        "new follow-up",
        "mine",
    ]
    reread = Session.open(path, readonly=True)
    assert reread.raw_entries() == s.raw_entries()


def test_every_entry_type_has_a_kind_code_in_the_index():
    from pi_jupyter.session.entries import ENTRY_TYPES
    from pi_jupyter.session.kinds import KINDS

    assert set(KINDS) == set(ENTRY_TYPES)


def test_records_of_a_custom_type_are_found_without_reading_the_message_lines(tmp_path):
    path = tmp_path / "s.jsonl"
    two_branches(path)
    s = Session.open(path)
    s.append_custom("pi_jupyter.notebook", {"notebook": "nb-1", "path": "a.ipynb"})
    s.append_custom("other.tool", {"x": 1})
    s.append_custom("pi_jupyter.notebook", {"notebook": "nb-1", "path": "b.ipynb"})
    s.close()
    expected = [e for e in Session.open(path, readonly=True).raw_entries() if e.get("customType") == "pi_jupyter.notebook"]
    assert [e["data"]["path"] for e in expected] == ["a.ipynb", "b.ipynb"]
    s = Session.open(path, readonly=True)
    with open(path, "r+b") as fh:  # the old branch's message lines change under us (same inode, same size)
        blob = fh.read()
        fh.seek(0)
        fh.write(blob.replace(b'"id": "c"', b'"id": "C"'))
    # what a notebook's first cell asks (which notebooks this session belongs to) needs no message line
    assert s.custom_entries("pi_jupyter.notebook") == expected
    assert s.custom_entries("no.such.type") == []
    both = [e for e in Session.open(path, readonly=True).raw_entries() if e.get("type") == "custom"]
    assert s.custom_entries() == both and [e["customType"] for e in both] == ["pi_jupyter.notebook", "other.tool", "pi_jupyter.notebook"]
    assert s.custom_entries("other.tool", "pi_jupyter.notebook") == both  # several types: still in file order
    with pytest.raises(SessionChangedError):
        s.raw_entries()  # every entry: the message lines are read, and the change is seen
