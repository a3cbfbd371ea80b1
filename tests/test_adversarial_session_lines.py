"""Session lines built to break the readers: nesting a thousand deep, a number of 5,000 digits.

A line nested 1,000 deep (arrays in a message's ``details``, a tool call's arguments, a custom
entry's data, beside the entry's fields, as its id) crashed every command with a
``RecursionError``; a 5,000-digit ``usage.totalTokens`` made the file unusable with a false
"another program rewrote the file". Now a line nested more than
:data:`~pi_jupyter.session.jsonl.MAX_DEPTH` deep is a malformed line, reported with its number
by every reader (the command line's bulk reader, the line reader, ``Session.open``, the class
view) and left in the file; a number too long for a double is read as JSON.parse reads it
(infinity, as ``1e400`` already was). Each file here is written the way an attacker would: by
hand, around a real session.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from pi_jupyter.session import Session
from pi_jupyter.session.jsonl import MAX_DEPTH
from pi_jupyter.session.scan import scan

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2026-01-01T00:00:00Z", "cwd": "/tmp"}
COST = '{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0}'
USAGE = '{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"totalTokens":2,"cost":' + COST + "}"
ASSISTANT = (
    '{"type":"message","id":"a2","parentId":"a1","timestamp":"2026-01-01T00:00:02Z","message":{"role":"assistant",'
    '"content":[{"type":"text","text":"the answer"},{"type":"toolCall","id":"c1","name":"read","arguments":{"path":"a"}}],'
    f'"api":"x","provider":"p","model":"m","usage":{USAGE},"stopReason":"toolUse","timestamp":2}}}}'
)
TAIL = [
    {"type": "message", "id": "a3", "parentId": "a2", "timestamp": "2026-01-01T00:00:03Z",
     "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "content": [{"type": "text", "text": "ok"}],
                 "isError": False, "timestamp": 3}},
    {"type": "custom", "id": "a4", "parentId": "a3", "timestamp": "2026-01-01T00:00:04Z", "customType": "x", "data": {"d": 1}},
    {"type": "message", "id": "a5", "parentId": "a4", "timestamp": "2026-01-01T00:00:05Z",
     "message": {"role": "user", "content": "again", "timestamp": 5}},
]  # fmt: skip


def nest(depth: int) -> str:
    return "[" * depth + "1" + "]" * depth


def deep_in(field: str, depth: int) -> str:
    """The assistant line (line 3) with a value ``depth`` arrays deep in ``field``."""
    deep = nest(depth)
    return {
        "details": ASSISTANT[:-2] + f',"details":{deep}}}}}',
        "arguments": ASSISTANT.replace('{"path":"a"}', f'{{"path":"a","x":{deep}}}'),
        "beside": ASSISTANT[:-1] + f',"extra":{deep}}}',
        "id": ASSISTANT.replace('"id":"a2"', f'"id":{deep}'),
        "usage": ASSISTANT.replace('"totalTokens":2', f'"totalTokens":{deep}'),
    }[field]


def write(path: Path, assistant: str, custom: str | None = None) -> bytes:
    tail = [json.dumps(e, separators=(",", ":")) for e in TAIL]
    if custom is not None:
        tail[1] = custom
    lines = [json.dumps(HEADER), json.dumps({"type": "message", "id": "a1", "parentId": None, "timestamp": "2026-01-01T00:00:01Z",
                                             "message": {"role": "user", "content": "hi", "timestamp": 1}}), assistant, *tail]  # fmt: skip
    data = ("\n".join(lines) + "\n").encode()
    path.write_bytes(data)
    return data


def readers(path: Path) -> dict[str, object]:
    """The file as each reader gives it: the lazy open a kernel does, the line reader, and the command line's bulk reader."""
    return {
        "Session.open": Session.open(path, readonly=True),
        "line reader": Session._from_bytes(str(path), path.read_bytes(), readonly=True, durability="never"),
        "bulk reader": scan(str(path)),
    }


def problems(read: object) -> list[tuple[int | None, str, str]]:
    return [(p.line, p.kind, p.message.split(";")[0]) for p in read.load_report.problems]  # type: ignore[attr-defined]


def contents(read: object) -> list[object]:
    if isinstance(read, Session):
        return [m.get("content") for m in read.context().raw_messages]
    plan = read.plan(read.leaf_id)  # type: ignore[attr-defined]
    return [m.get("content") for m in read.messages(plan)]  # type: ignore[attr-defined]


TOO_DEEP = f"not JSON: nested too deeply (more than {MAX_DEPTH} levels of arrays and objects)"


@pytest.mark.parametrize("field", ["details", "arguments", "beside", "id", "usage", "custom data"])
@pytest.mark.parametrize("depth", [1000, 5000, MAX_DEPTH + 1])
def test_a_line_nested_too_deeply_is_a_malformed_line_for_every_reader(tmp_path: Path, field: str, depth: int) -> None:
    path = tmp_path / "deep.jsonl"
    if field == "custom data":
        custom = json.dumps(TAIL[1], separators=(",", ":")).replace('{"d":1}', f'{{"d":{nest(depth)}}}')
        before, line = write(path, ASSISTANT, custom), 5
    else:
        before, line = write(path, deep_in(field, depth)), 3
    for name, read in readers(path).items():
        assert problems(read)[0] == (line, "malformed", TOO_DEEP), name
        # the line is left out, and what hung below it starts its own branch (as for any malformed line)
        assert contents(read) == ["again"] if field == "custom data" else contents(read) == [[{"type": "text", "text": "ok"}], "again"], (
            name
        )
    assert path.read_bytes() == before  # reading never rewrites


def test_up_to_the_limit_a_deep_value_reads_and_every_reader_agrees(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    write(path, deep_in("details", MAX_DEPTH - 2))  # the entry, its message and the arrays: MAX_DEPTH levels exactly
    seen = readers(path)
    for name, read in seen.items():
        assert problems(read) == [], name
        assert contents(read)[1] == [{"type": "text", "text": "the answer"}, {"type": "toolCall", "id": "c1", "name": "read",
                                                                            "arguments": {"path": "a"}}], name  # fmt: skip
    write(path, deep_in("details", MAX_DEPTH - 1))  # one level more
    for name, read in readers(path).items():
        assert problems(read)[0] == (3, "malformed", TOO_DEEP), name


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pi_jupyter", *args], capture_output=True, text=True, timeout=120)


def test_every_command_names_the_deep_line_and_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "deep.jsonl"
    before = write(path, deep_in("details", 1000))
    for command in (["context"], ["context", "--json"], ["info"], ["tree"]):
        proc = cli(*command, str(path))
        shown = proc.stdout + proc.stderr
        assert "Traceback" not in shown and "RecursionError" not in shown, command
        assert "line 3" in shown and "nested too deeply" in shown, command
    proc = cli("context", "--json", str(path))
    assert [m["content"] for m in json.loads(proc.stdout)["messages"]] == [[{"type": "text", "text": "ok"}], "again"]
    assert path.read_bytes() == before


def test_a_number_of_5000_digits_reads_as_javascript_reads_it(tmp_path: Path) -> None:
    """``usage.totalTokens`` of 5,000 nines: JSON.parse makes it Infinity; so does every reader here, and the file stays usable."""
    path = tmp_path / "huge.jsonl"
    before = write(path, ASSISTANT.replace('"totalTokens":2', '"totalTokens":' + "9" * 5000))
    for name, read in readers(path).items():
        assert problems(read) == [], name
        assert len(contents(read)) == 4, name
    opened = Session.open(path, readonly=True)
    assert opened.context().raw_messages[1]["usage"]["totalTokens"] == float("inf")
    for command in (["context"], ["context", "--json"], ["info"], ["tree"]):
        proc = cli(*command, str(path))
        assert proc.returncode == 0, (command, proc.stderr)
        assert "rewrote" not in proc.stderr and "Traceback" not in proc.stderr, command
    # the session goes on: a new entry lands after it, and the file reads back whole
    s = Session.open(path)
    s.append_message({"role": "user", "content": "next", "timestamp": 6})
    s.close()
    assert path.read_bytes().startswith(before)
    assert [m.get("content") for m in Session.open(path, readonly=True).context().raw_messages][-1] == "next"


def test_the_class_view_reads_deep_lines_as_every_reader_does(tmp_path: Path) -> None:
    from pi_jupyter.session.report import LoadReport
    from pi_jupyter.views.class_view.lines import parse_session_lines

    path = tmp_path / "deep.jsonl"
    # a tool result the class view does not parse (its shortcut), deep
    deep_result = json.dumps(TAIL[0], separators=(",", ":")).replace('"isError":false', f'"isError":false,"details":{nest(1000)}')
    data = write(path, ASSISTANT, None).replace(json.dumps(TAIL[0], separators=(",", ":")).encode(), deep_result.encode())
    report = LoadReport(path=str(path))
    objs, lines, _ = parse_session_lines(data, report)
    assert [(p.line, p.kind, p.message.split(";")[0]) for p in report.problems] == [(4, "malformed", TOO_DEEP)]
    assert 4 not in lines and len(objs) == 5
