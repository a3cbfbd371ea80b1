"""Two writers on one file: the lock serializes them, lines never interleave, ids never
collide, each writer's entries form its own branch, and both read everything afterwards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pi_jupyter.session import Session

WRITER = textwrap.dedent(
    """
    import sys, time
    from pi_jupyter.session import Session
    path, name, count, go = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    s = Session.open(path, durability="never")
    open(go + "." + name, "w").close()  # opened: ready
    while not __import__("os").path.exists(go):
        time.sleep(0.001)
    ids = []
    for i in range(count):
        text = f"{name}-{i} " + "x" * (i % 7) * 500  # some lines are long (several KB)
        ids.append(s.append_message({"role": "user", "content": [{"type": "text", "text": text}], "timestamp": i}))
    s.close()
    print(" ".join(ids))
    """
)


def test_two_processes_appending_at_once(tmp_path):
    s = Session.create(path=tmp_path / "shared.jsonl", cwd="/w")
    root = s.append_message({"role": "user", "content": [{"type": "text", "text": "root"}], "timestamp": 0})
    s.close()
    go = tmp_path / "go"
    count = 300
    procs = [
        subprocess.Popen([sys.executable, "-c", WRITER, s.path, name, str(count), str(go)], stdout=subprocess.PIPE, text=True)
        for name in ("A", "B")
    ]
    deadline = time.monotonic() + 60
    while not all((tmp_path / f"go.{n}").exists() for n in ("A", "B")) and time.monotonic() < deadline:
        time.sleep(0.005)
    go.write_text("")  # both have opened the file: now they race
    outs = [p.communicate(timeout=120)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    written = {name: out.split() for name, out in zip(("A", "B"), outs, strict=True)}

    raw = Path(s.path).read_bytes()
    lines = raw.split(b"\n")
    assert lines[-1] == b""
    objs = [json.loads(x) for x in lines[:-1]]  # every line is whole JSON: nothing interleaved
    assert len(objs) == 2 + 2 * count
    ids = [o["id"] for o in objs[1:]]
    assert len(set(ids)) == len(ids)

    reader = Session.open(s.path, readonly=True)
    assert reader.load_report.ok, reader.load_report
    for name, mine in written.items():
        assert len(mine) == count
        # each writer's entries chain to its own previous entry: its own branch from the root
        parents = [reader.raw_entry(eid)["parentId"] for eid in mine]
        assert parents == [root, *mine[:-1]]
        texts = [m["content"][0]["text"].split()[0] for m in reader.context(mine[-1]).raw_messages]
        assert texts == ["root", *[f"{name}-{i}" for i in range(count)]]
    assert sorted(reader.child_ids(root)) == sorted([written["A"][0], written["B"][0]])


def test_a_writer_sees_what_another_appended_and_keeps_its_own_leaf(tmp_path):
    first = Session.create(path=tmp_path / "s.jsonl", cwd="/w")
    a = first.append_message({"role": "user", "content": "a", "timestamp": 1})
    second = Session.open(first.path)
    b = second.append_message({"role": "user", "content": "b", "timestamp": 2})
    assert b not in first
    c = first.append_message({"role": "user", "content": "c", "timestamp": 3})  # catches up under the lock
    assert b in first and first.raw_entry(c)["parentId"] == a
    assert first.leaf_id == c
    assert second.refresh() == 1 and c in second and second.leaf_id == b


def test_a_file_replaced_behind_our_back_is_refused(tmp_path):
    s = Session.create(path=tmp_path / "s.jsonl", cwd="/w")
    s.append_message({"role": "user", "content": "a", "timestamp": 1})
    Path(s.path).write_bytes(Path(s.path).read_bytes()[:10])
    from pi_jupyter.session import SessionChangedError

    try:
        s.append_message({"role": "user", "content": "b", "timestamp": 2})
    except SessionChangedError as exc:
        assert "shrank" in str(exc)
    else:
        raise AssertionError("an append to a shrunken file must fail")


def test_a_file_replaced_by_another_program_is_refused(tmp_path):
    s = Session.create(path=tmp_path / "s.jsonl", cwd="/w")
    s.append_message({"role": "user", "content": "a", "timestamp": 1})
    replacement = tmp_path / "other.jsonl"
    replacement.write_bytes(Path(s.path).read_bytes() * 2)  # bigger, so only the inode tells
    os.replace(replacement, s.path)
    from pi_jupyter.session import SessionChangedError

    with pytest.raises(SessionChangedError, match="replaced"):
        s.append_message({"role": "user", "content": "b", "timestamp": 2})
    assert Path(s.path).read_bytes().count(b'"content":"b"') == 0
