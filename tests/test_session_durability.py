"""The durability setting decides when appends are fsynced: every entry, the end of each
turn (the default), or never. Counted by wrapping ``os.fsync``, the operating system call."""

from __future__ import annotations

import os

import pytest

from pi_jupyter.session import Session


@pytest.fixture
def fsyncs(monkeypatch):
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(os, "fsync", counting)
    return calls


def _user(i: int) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": f"u{i}"}], "timestamp": i}


def _assistant(i: int) -> dict:
    return {
        "role": "assistant",
        "content": [],
        "api": "a",
        "provider": "p",
        "model": "m",
        "usage": {},
        "stopReason": "stop",
        "timestamp": i,
    }


def _turns(s: Session, n: int) -> None:
    for i in range(n):
        s.append_message(_user(i))
        s.append_custom("ext", {"i": i})
        s.append_message(_assistant(i))


def test_default_is_turn_fsync_after_each_assistant_message(tmp_path, fsyncs):
    s = Session.create(tmp_path, cwd="/w")
    assert s.durability == "turn"
    fsyncs.clear()
    _turns(s, 5)
    assert len(fsyncs) == 5
    s.append_compaction("sum", s.leaf_id, 10)
    s.branch_with_summary(s.branch_ids()[0], "left")
    assert len(fsyncs) == 7
    s.append_message(_user(9))
    s.close()  # the trailing user message is synced on close
    assert len(fsyncs) == 8


def test_entry_fsyncs_every_append(tmp_path, fsyncs):
    s = Session.create(tmp_path, cwd="/w", durability="entry")
    fsyncs.clear()
    _turns(s, 4)
    assert len(fsyncs) == 12
    s.close()
    assert len(fsyncs) == 12


def test_never_fsyncs_nothing_not_even_on_close(tmp_path, fsyncs):
    s = Session.create(tmp_path, cwd="/w", durability="never")
    _turns(s, 4)
    s.close()
    assert fsyncs == []
    assert len(Session.open(s.path)) == 12


def test_sync_forces_pending_appends_to_disk(tmp_path, fsyncs):
    s = Session.open(tmp_path / "s.jsonl", create=True, durability="never")
    fsyncs.clear()
    s.append_message(_user(1))
    s.sync()
    s.sync()  # nothing new: no second fsync
    assert len(fsyncs) == 1


def test_create_makes_the_header_durable_unless_never(tmp_path, fsyncs):
    Session.create(tmp_path, cwd="/w")
    assert len(fsyncs) == 2  # the file and its folder
    fsyncs.clear()
    Session.create(tmp_path, cwd="/w", durability="never")
    assert fsyncs == []


def test_unknown_durability_is_refused(tmp_path):
    with pytest.raises(ValueError, match="durability"):
        Session.create(tmp_path, cwd="/w", durability="sometimes")  # type: ignore[arg-type]
