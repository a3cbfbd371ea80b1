"""The command line's fast reading (runs of lines decoded at once) gives exactly what reading the file whole gives.

``pi-jupyter context`` reads a large file a run of lines at a time (``session.bulk``); a run that
is not plainly one clean entry per line is read one line at a time. Whatever the file holds
(damaged lines, odd layouts, lines cut by the reading buffer), the load report, the leaf, the
labels and the context must be the ones ``Session.open`` finds.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pi_jupyter.cli.context_cmd import context_json
from pi_jupyter.session import CycleError, Session
from pi_jupyter.session import scan as scan_module
from pi_jupyter.session.scan import NeedsFullRead, scan

HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
TS = "2025-01-01T00:00:01.000Z"


def _message(eid: str, parent: object, role: str = "user", **extra: object) -> dict:
    message: dict = {"role": role, "content": [{"type": "text", "text": f"{role} {eid} ü"}], "timestamp": 1, **extra}
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": message}


def _entry(kind: str, eid: str, parent: object, **fields: object) -> dict:
    return {"type": kind, "id": eid, "parentId": parent, "timestamp": TS, **fields}


def _assistant(eid: str, parent: object) -> dict:
    return _message(eid, parent, "assistant", provider="openai", model=f"m{len(eid) % 3}", stopReason="stop")


# what a line holds, given its id and its parent; most lines are plain messages, as in a real file
_MAKERS = [
    _message,
    _message,
    _assistant,
    _assistant,
    lambda i, p: _message(i, p, "toolResult", toolCallId="t", toolName="python"),
    lambda i, p: _message(i, p, "bashExecution", command="ls", output="", exitCode=0),
    lambda i, p: _entry("label", i, p, targetId=p, label="best"),
    lambda i, p: _entry("session_info", i, p, name=f"run {i}"),
    lambda i, p: _entry("custom", i, p, customType="pi_jupyter.checkout", data={}),
    lambda i, p: _entry("custom", i, p, customType="pi_jupyter.cell", data={"cellId": "x"}),
    lambda i, p: _entry("model_change", i, p, provider="p", modelId="q"),
    lambda i, p: _entry("thinking_level_change", i, p, thinkingLevel="high"),
    lambda i, p: _entry("compaction", i, p, summary="S", firstKeptEntryId=p, tokensBefore=5),
    lambda i, p: _entry("branch_summary", i, p, summary="left", fromId=p),
    lambda i, p: _entry("message", i, p),  # no message
    lambda i, p: _entry("someday", i, p),  # an unknown type
    lambda i, p: _message(i, p, "developer"),  # an unknown role
]
# damaged or odd lines, as raw bytes (ID and PARENT are filled in)
_DAMAGED = [
    b"not json",
    b"",
    b"   ",
    b"[1, 2]",
    b"123",
    b'{"type":"message"}',
    b'{"type":"message","id":5,"message":{"role":"user"}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":"text"}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"x"}}{"type":"label","id":"ID2"}',
    b'{"type":"message","id":"ID","parentId":PARENT,\n"message":{"role":"user","content":"split"}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"bad \xff byte"}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"x\\ud83d"}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"x","n":1e400}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"x","n":NaN}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"crlf"}}\r',
    b'  {"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"indented"}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"system","content":"pi 1.x"}}',
    json.dumps(HEADER).encode(),
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":null}}',
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"assistant","content":null,"usage":{"totalTokens":'
    + b"9" * 5000
    + b"}}}",
    b'{"type":"message","id":"ID","parentId":PARENT,"message":{"role":"user","content":"x","details":' + b"[" * 600 + b"]" * 600 + b"}}",
]
_PARENTS = ["previous", "previous", "previous", "two back", "none", "absent", "ahead", "missing", "empty", "number", "itself"]


@st.composite
def _bodies(draw: st.DrawFn) -> list[bytes]:
    """Lines with ids e0, e1, ... (now and then one used before), parents mostly the line before."""
    rows: list[bytes] = []
    for n in range(draw(st.integers(0, 40))):
        eid = f"e{n}" if draw(st.integers(0, 80)) else f"e{max(n - 1, 0)}"
        choice = draw(st.sampled_from(_PARENTS))
        parents = {"previous": n - 1, "two back": n - 2, "ahead": n + 1}
        parent: object = {"missing": "gone", "empty": "", "number": 7, "itself": eid}.get(choice)
        if choice in parents:
            parent = f"e{parents[choice]}" if parents[choice] >= 0 else None
        if draw(st.integers(0, 7)):
            obj = draw(st.sampled_from(_MAKERS))(eid, parent)
            if choice == "absent":
                obj.pop("parentId")
            rows.append(json.dumps(obj, ensure_ascii=draw(st.booleans())).encode())
        else:
            raw = draw(st.sampled_from(_DAMAGED))
            rows.append(raw.replace(b"ID", eid.encode()).replace(b"PARENT", json.dumps(parent).encode()))
    return rows


def _answers(read: Session | scan_module.ScannedSession) -> tuple:
    report = read.load_report
    return (report.problems, report.omitted, read.leaf_id, len(read), read.labels, read.name)


def _context(read: Session | scan_module.ScannedSession, leaf: str | None = None) -> object:
    """The context at ``leaf`` (default: the current leaf), as ``pi-jupyter context --json`` builds it."""
    try:
        if isinstance(read, Session):
            return (read.context() if leaf is None else read.context(leaf)).to_pi_json()
        plan = read.plan(read.leaf_id if leaf is None else leaf)
        messages = list(read.messages(plan))
        # what context --json writes: messages it passes on taken from the line as written, the rest parsed
        written = [json.loads(bytes(text)) if text is not None else message for text, message in read.message_texts(plan)]
        assert written == messages
        return {"messages": messages, **plan.settings()}
    except CycleError:
        return "cycle"


def _read_whole(path: Path) -> Session:
    """The file read one line at a time, every entry whole: what old versions and odd files get, the reference here."""
    return Session._from_bytes(str(path), path.read_bytes(), readonly=True, durability="never")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_bodies(), newline=st.booleans(), chunk=st.sampled_from([16, 64, 200, 1 << 20]))
def test_runs_read_at_once_give_what_the_whole_file_gives(tmp_path: Path, lines: list[bytes], newline: bool, chunk: int) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([json.dumps(HEADER).encode(), *lines]) + (b"\n" if newline else b""))
    whole = _read_whole(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan_module, "CHUNK", chunk)  # runs and lines cut by the reading buffer, carried over, a buffer grown
        try:
            fast = scan(str(path))
        except NeedsFullRead:
            event("opened whole")
            return
    event("read by runs" if any(type(stub) is not dict for stub in fast._index.order) else "read line by line")
    assert _answers(fast) == _answers(whole)
    for leaf in [None, *(eid for eid in {*whole.child_ids(None), *whole.labels} if eid and eid in whole)]:
        assert _context(fast, leaf) == _context(whole, leaf)


def test_a_clean_file_is_read_by_runs_and_its_damaged_run_line_by_line(tmp_path: Path) -> None:
    """A clean file takes the fast way; one damaged line sends only its run the slow way, and is reported as before."""
    path = tmp_path / "s.jsonl"
    rows = [json.dumps(HEADER).encode()]
    parent = None
    for n in range(400):
        eid = f"e{n:04d}"
        rows.append(json.dumps(_message(eid, parent, "assistant" if n % 2 else "user", provider="openai", model="m1")).encode())
        parent = eid
    rows[200] = b'{"type":"message","id":"broken'
    path.write_bytes(b"\n".join(rows) + b"\n")
    whole = Session.open(path, readonly=True)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan_module, "CHUNK", 4096)
        fast = scan(str(path))
    assert _answers(fast) == _answers(whole)
    assert [(p.line, p.kind) for p in fast.load_report.problems] == [(201, "malformed"), (202, "orphan")]
    assert _context(fast) == _context(whole)
    kinds = {type(stub).__name__ for stub in fast._index.order}
    assert kinds == {"LineStub", "dict"}  # most lines read by runs; the run with the damaged line one by one


def test_cli_context_json_on_a_damaged_file_is_the_stores_context(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    rows = [json.dumps(HEADER)]
    parent = None
    for n in range(300):
        eid = f"e{n:04d}"
        rows.append(json.dumps(_message(eid, parent, "assistant" if n % 2 else "user", provider="openai", model=f"m{n % 3}")))
        parent = eid
    rows.insert(150, "{not json")
    rows.append(json.dumps({"type": "label", "id": "lab", "parentId": parent, "timestamp": TS, "targetId": "e0100", "label": "mid"}))
    path.write_text("\n".join(rows) + "\n")
    proc = subprocess.run([sys.executable, "-m", "pi_jupyter", "context", "--json", str(path)], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1 and f"{path}: line 151: error: not JSON" in proc.stderr
    assert json.loads(proc.stdout) == context_json(Session.open(path, readonly=True))


def _chain(n: int) -> list[bytes]:
    return [json.dumps(HEADER).encode()] + [json.dumps(_message(f"e{i}", f"e{i - 1}" if i else None)).encode() for i in range(n)]


def _null_content(line: bytes) -> bytes:
    entry = json.loads(line)
    entry["message"]["content"] = None  # pi reads it as empty; written as it stands, it would differ
    return json.dumps(entry).encode()


_LAYOUTS = {
    # name: (change the lines, the line the command must name, or None when the file reads clean)
    "a byte that is not UTF-8 in a skipped field": (lambda L: [*L[:10], L[10].replace(b"user e9", b"user \xffe9"), *L[11:]], 11),
    "a NUL inside a string": (lambda L: [*L[:5], L[5].replace(b"user e4", b"user \x00e4"), *L[6:]], 6),
    "two entries on one line": (lambda L: [*L[:15], L[15] + L[16], *L[17:]], 16),
    "Windows line ends": (lambda L: [line + b"\r" for line in L], None),
    "spaces after an entry": (lambda L: [*L[:20], L[20] + b"   ", *L[21:]], None),
    "blank lines": (lambda L: [*L[:25], b"", b"  ", *L[25:]], None),
    "a message whose content is null": (lambda L: [*L[:12], _null_content(L[12]), *L[13:]], None),
    "a line nested 1,000 deep": (lambda L: [*L[:8], L[8][:-2] + b',"x":' + b"[" * 1000 + b"]" * 1000 + b"}}", *L[9:]], 9),
    "a number of 5,000 digits": (lambda L: [*L[:7], L[7][:-2] + b',"n":' + b"9" * 5000 + b"}}", *L[8:]], None),
    "a 3 MB line, longer than the read buffer": (
        lambda L: [*L[:30], json.dumps(_message("e29", "e28", note="x" * 3_000_000)).encode(), *L[31:]],
        None,
    ),
}


@pytest.mark.parametrize("layout", list(_LAYOUTS))
def test_cli_context_json_on_odd_layouts_is_the_stores_context_and_names_the_damaged_line(tmp_path: Path, layout: str) -> None:
    change, damaged = _LAYOUTS[layout]
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join(change(_chain(50))) + b"\n")
    before = path.read_bytes()
    proc = subprocess.run([sys.executable, "-m", "pi_jupyter", "context", "--json", str(path)], capture_output=True, text=True, timeout=60)
    # read as JSON.parse reads it (a number too long for a double is infinity, as Session.open reads it)
    assert json.loads(proc.stdout, parse_int=lambda s: int(s) if len(s) < 300 else float(s)) == context_json(
        Session.open(path, readonly=True)
    )
    if damaged is None:
        assert proc.returncode == 0 and proc.stderr == ""
    else:
        assert f"{path}: line {damaged}:" in proc.stderr
    assert path.read_bytes() == before  # reading never rewrites


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_bodies(), newline=st.booleans(), chunk=st.sampled_from([16, 64, 200, 1 << 20]))
def test_a_session_opened_by_runs_is_the_session_read_whole(tmp_path: Path, lines: list[bytes], newline: bool, chunk: int) -> None:
    """Session.open reads the usual file a run at a time, its message lines as stubs: nothing a kernel asks may differ."""
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"\n".join([json.dumps(HEADER).encode(), *lines]) + (b"\n" if newline else b""))
    whole = _read_whole(path)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(scan_module, "CHUNK", chunk)
        opened = Session.open(path, readonly=True)
    assert _answers(opened) == _answers(whole)
    for leaf in [None, *(eid for eid in {*whole.child_ids(None), *whole.labels} if eid and eid in whole)]:
        assert _context(opened, leaf) == _context(whole, leaf)
        if leaf:
            assert opened.child_ids(leaf) == whole.child_ids(leaf)
            assert _branch(opened, leaf) == _branch(whole, leaf)
    assert opened.custom_entries("pi_jupyter.cell") == whole.custom_entries("pi_jupyter.cell")
    assert opened.raw_entries() == whole.raw_entries()
    assert [node.entry["id"] for node in _walk(opened.tree())] == [node.entry["id"] for node in _walk(whole.tree())]


def test_a_session_opened_by_runs_appends_where_a_whole_read_would(tmp_path: Path) -> None:
    """After a torn last line, a file without a final newline, or a clean end: the next entry lands as before."""
    tails = (
        b"",  # a clean end
        b'{"type":"message","id":"t1","parentId":"e1","mess',  # torn
        b'{"type":"message","id":"t2","parentId":"e1","message":{"role":"user","content":"x"}}',  # no final newline
    )
    for tail in tails:
        path = tmp_path / "s.jsonl"
        body = [json.dumps(HEADER).encode(), json.dumps(_message("e0", None)).encode(), json.dumps(_assistant("e1", "e0")).encode()]
        path.write_bytes(b"\n".join(body) + b"\n" + tail)
        copy = tmp_path / "copy.jsonl"
        copy.write_bytes(path.read_bytes())
        opened = Session.open(path)
        reference = Session._from_bytes(str(copy), copy.read_bytes(), readonly=False, durability="never")
        reference._path = str(copy)  # (the whole read appends to the copy)
        for s in (opened, reference):
            s.append_message({"role": "user", "content": "next", "timestamp": 5})
            s.close()
        assert Session.open(path, readonly=True).load_report.problems == Session.open(copy, readonly=True).load_report.problems
        assert [m.get("content") for m in Session.open(path, readonly=True).context().raw_messages] == [
            m.get("content") for m in Session.open(copy, readonly=True).context().raw_messages
        ]


def _branch(read: Session, leaf: str) -> object:
    try:
        return read.branch_ids(leaf)
    except CycleError:
        return "cycle"


def _walk(nodes: list) -> list:
    out = []
    for node in nodes:
        out.append(node)
        out.extend(_walk(node.children))
    return out
