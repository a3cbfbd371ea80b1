"""Hostile and damaged inputs found by an audit (issue 19): each one gets a clear one-line answer.

Non-regular files, numbers JSON cannot hold, parent cycles under the agent commands, message
entries without a message, millions of orphans, a full disk, odd RPC ids and unbounded names.
The CLI runs as a real subprocess; the store is the real one; a full disk is a real tiny tmpfs.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pi_jupyter.session import CycleError, LoadReport, Session, SessionError, SessionFileError
from pi_jupyter.session.report import SAMPLE_PER_KIND

HEADER = {"type": "session", "version": 3, "id": "sess-1", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
TS = "2025-01-01T00:00:01.000Z"


def cli(*args: str, stdin: str | None = None, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_jupyter", *args],
        capture_output=True,
        text=True,
        encoding="utf-8",
        input=stdin,
        timeout=timeout,
        stdin=None if stdin is not None else subprocess.DEVNULL,
    )


def jl(*objs: dict | str) -> str:
    return "".join((o if isinstance(o, str) else json.dumps(o)) + "\n" for o in objs)


def user(eid: str, parent: str | None, text: str = "hi") -> dict:
    return {"type": "message", "id": eid, "parentId": parent, "timestamp": TS, "message": {"role": "user", "content": text, "timestamp": 1}}


def assistant_raw(eid: str, parent: str, usage: str) -> str:
    # written by hand: a number such as 1e400 is valid JSON text that json.dumps cannot produce
    message = (
        '{"role":"assistant","content":[{"type":"text","text":"ok"}],"api":"openai-responses","provider":"openai",'
        f'"model":"gpt-5","usage":{usage},"stopReason":"stop","timestamp":2}}'
    )
    return f'{{"type":"message","id":"{eid}","parentId":"{parent}","timestamp":"{TS}","message":{message}}}'


def one_line_error(proc: subprocess.CompletedProcess[str]) -> str:
    assert "Traceback" not in proc.stderr, proc.stderr
    errors = [row for row in proc.stderr.splitlines() if row.startswith("pi-jupyter: error:")]
    assert len(errors) == 1, proc.stderr
    return errors[0]


# ------------------------------------------------------------------ not a regular file


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe.jsonl"
    os.mkfifo(path)
    return path


@pytest.mark.parametrize("command", [["context"], ["context", "--json"], ["tree"], ["info"], ["info", "--json"]])
def test_cli_refuses_a_fifo_with_one_line(fifo: Path, command: list[str]) -> None:
    proc = cli(*command, str(fifo), timeout=30)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert str(fifo) in line and "named pipe" in line and proc.stdout == ""


@pytest.mark.parametrize("command", [["context"], ["info"], ["tree"]])
def test_cli_refuses_dev_zero_without_reading_it(command: list[str]) -> None:
    proc = cli(*command, "/dev/zero", timeout=30)
    assert proc.returncode == 2
    assert "character device" in one_line_error(proc)


def test_session_open_refuses_a_fifo_at_once(fifo: Path) -> None:
    errors: list[BaseException] = []

    def go() -> None:
        try:
            Session.open(fifo)
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion below
            errors.append(exc)

    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(20)
    if worker.is_alive():
        # unblock the reader so the test process can end, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("Session.open blocked on a FIFO")
    assert len(errors) == 1 and isinstance(errors[0], SessionFileError)
    assert "named pipe" in str(errors[0])


def test_prompt_session_refuses_a_fifo(fifo: Path) -> None:
    proc = cli("prompt", "--session", str(fifo), "hi", timeout=30)
    assert proc.returncode == 2 and "named pipe" in one_line_error(proc)


def test_a_fifo_in_the_sessions_folder_does_not_hang_a_listing(tmp_path: Path) -> None:
    s = Session.create(tmp_path, cwd="/w")
    s.append_message({"role": "user", "content": "hello", "timestamp": 1})
    s.close()
    os.mkfifo(tmp_path / "stuck.jsonl")
    infos = Session.list(tmp_path)
    assert [i.path for i in infos] == [s.path]


# ------------------------------------------------------------------ numbers and names


def test_info_on_a_usage_of_1e400_prints_totals_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "big.jsonl"
    usage = '{"input":1e400,"output":7,"cacheRead":0,"cacheWrite":0,"totalTokens":-1e400,"cost":{"total":1e400}}'
    path.write_text(jl(HEADER, user("u1", None), assistant_raw("a1", "u1", usage)))
    proc = cli("info", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    tokens = next(row for row in proc.stdout.splitlines() if row.startswith("tokens:"))
    # a number JSON cannot hold is not a count: the finite ones still add up
    assert "input 0" in tokens and "output 7" in tokens
    proc = cli("info", "--json", str(path))
    assert proc.returncode == 0 and json.loads(proc.stdout)["tokens"]["output"] == 7


def test_info_cuts_an_unbounded_session_name_with_a_marker(tmp_path: Path) -> None:
    s = Session.create(tmp_path, cwd="/w")
    s.set_name("n" * 100_000)
    s.close()
    proc = cli("info", str(s.path))
    assert proc.returncode == 0
    name = next(row for row in proc.stdout.splitlines() if row.startswith("name:"))
    assert len(name) < 400 and "100000 characters" in name
    assert json.loads(cli("info", "--json", str(s.path)).stdout)["name"] == "n" * 100_000


# ------------------------------------------------------------------ parent cycles under prompt and rpc


@pytest.fixture
def cyclic(tmp_path: Path) -> Path:
    path = tmp_path / "cycle.jsonl"
    path.write_text(jl(HEADER, user("a", "b"), user("b", "a")))
    return path


def test_prompt_on_a_leaf_in_a_parent_cycle_is_one_line_exit_2(cyclic: Path) -> None:
    before = cyclic.read_bytes()
    proc = cli("prompt", "--session", str(cyclic), "hello")
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert f"{cyclic}:" in line and "parent cycle" in line
    assert cyclic.read_bytes() == before


def test_rpc_on_a_leaf_in_a_parent_cycle_answers_every_command_with_the_error(cyclic: Path) -> None:
    commands = [{"id": "1", "type": "get_state"}, {"id": 2, "type": "prompt", "message": "hi"}, "not json"]
    proc = cli("rpc", "--session", str(cyclic), stdin=jl(*commands))
    assert proc.returncode == 2
    assert "parent cycle" in one_line_error(proc)
    answers = [json.loads(row) for row in proc.stdout.splitlines()]
    assert [(a.get("id"), a["command"], a["success"]) for a in answers] == [
        ("1", "get_state", False),
        (2, "prompt", False),
        (None, "parse", False),
    ]
    assert all("parent cycle" in a["error"] for a in answers)


@pytest.mark.parametrize("raw_id", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_rpc_answers_odd_numeric_ids_with_valid_json(raw_id: str) -> None:
    proc = cli("rpc", "--no-session", stdin=f'{{"id":{raw_id},"type":"get_state"}}\n{{"id":"ok","type":"get_state"}}\n')
    rows = proc.stdout.splitlines()
    answers = [json.loads(row, parse_constant=lambda name: pytest.fail(f"{name} in the output")) for row in rows]
    first = answers[0]
    assert first["success"] is False and "finite number" in first["error"] and "id" not in first
    assert answers[1]["id"] == "ok" and answers[1]["success"] is True


# ------------------------------------------------------------------ entries the report must name


def test_a_message_entry_without_its_message_is_reported(tmp_path: Path) -> None:
    path = tmp_path / "nomsg.jsonl"
    path.write_text(jl(HEADER, user("u1", None), {"type": "message", "id": "m2", "parentId": "u1", "timestamp": TS}))
    s = Session.open(path, readonly=True)
    problems = [p for p in s.load_report.problems if p.kind == "no_message"]
    assert [(p.line, p.entry_id, p.severity) for p in problems] == [(3, "m2", "error")]
    assert len(s.context().raw_messages) == 1
    for command in (["context"], ["info"], ["context", "--json"]):
        proc = cli(*command, str(path))
        assert proc.returncode == 1, (command, proc.stderr)
    assert "m2" in cli("info", str(path)).stdout


def test_millions_of_orphans_make_a_compact_report(tmp_path: Path) -> None:
    count = 20_000
    path = tmp_path / "orphans.jsonl"
    with open(path, "w") as fh:
        fh.write(json.dumps(HEADER) + "\n")
        for i in range(count):
            fh.write(json.dumps(user(f"o{i}", f"gone{i}")) + "\n")
    s = Session.open(path, readonly=True)
    report = s.load_report
    orphans = [p for p in report.problems if p.kind == "orphan"]
    assert len(orphans) == SAMPLE_PER_KIND
    assert [p.entry_id for p in orphans[:3]] == ["o0", "o1", "o2"] and orphans[0].line == 2
    assert report.omitted == {"orphan": count - SAMPLE_PER_KIND}
    assert report.total == count and report.serious == count
    proc = cli("info", str(path))
    assert proc.returncode == 1
    assert f"load report:    {count} problem(s)" in proc.stdout
    assert f"and {count - SAMPLE_PER_KIND} more orphan problem(s)" in proc.stdout
    assert len(proc.stdout.splitlines()) < 200
    assert json.loads(cli("info", "--json", str(path)).stdout)["omittedProblems"] == {"orphan": count - SAMPLE_PER_KIND}


# ------------------------------------------------------------------ a full disk


@pytest.fixture
def tiny_disk(tmp_path: Path):
    mount = tmp_path / "tiny"
    mount.mkdir()
    proc = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True, text=True)
    if proc.returncode != 0:
        pytest.skip(f"cannot mount a tiny tmpfs to fill up (needs root): {proc.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(folder: Path) -> None:
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        with contextlib.suppress(OSError):
            while True:
                os.write(fd, b"x" * 512)
    finally:
        os.close(fd)


def test_disk_full_during_create_leaves_no_empty_file(tiny_disk: Path) -> None:
    _fill(tiny_disk)
    target = tiny_disk / "new.jsonl"
    with pytest.raises(SessionError) as info:
        Session.create(path=target, cwd="/w" * 2000)  # a header far larger than whatever space is left
    assert "No space left" in str(info.value) and str(target) in str(info.value)
    assert not target.exists()
    (tiny_disk / "filler").unlink()
    s = Session.create(path=target, cwd="/w")  # the path is free again
    assert Session.open(target, readonly=True).id == s.id


# ------------------------------------------------------------------ property: any damage, a bounded report

_ids = st.sampled_from([f"e{i}" for i in range(12)])
_entry = st.fixed_dictionaries(
    {"type": st.sampled_from(["message", "label", "custom", "model_change"]), "id": _ids},
    optional={"parentId": st.one_of(st.none(), _ids, st.text(max_size=3)), "message": st.one_of(st.none(), st.integers())},
)
_line = st.one_of(_entry.map(json.dumps), st.text(max_size=20), st.just("[1,2]"), st.just('{"id":1e400}'))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(_line, max_size=30))
def test_any_damaged_body_opens_reports_and_never_crashes(tmp_path: Path, lines: list[str]) -> None:
    path = tmp_path / "damaged.jsonl"
    blob = (json.dumps(HEADER) + "\n" + "\n".join(line.replace("\n", " ") for line in lines)).encode()
    path.write_bytes(blob)
    s = Session.open(path, readonly=True)
    report: LoadReport = s.load_report
    assert report.total == len(report.problems) + sum(report.omitted.values())
    assert all(p.line >= 0 for p in report.problems)
    with contextlib.suppress(CycleError):
        s.context()
    s.tree()
    s.info()
    assert path.read_bytes() == blob  # reading never rewrites


# ------------------------------------------------------------------ the CLI's streamed reading agrees with the store

_body = st.lists(
    st.one_of(
        _line,
        st.builds(lambda i, p: json.dumps(user(f"u{i}", p)), st.integers(0, 9), st.one_of(st.none(), st.sampled_from(["u1", "u2", "x"]))),
        st.just(
            json.dumps({"type": "compaction", "id": "c1", "parentId": "u1", "timestamp": TS, "summary": "S", "firstKeptEntryId": "u1"})
        ),
        st.just(json.dumps({"type": "custom", "id": "k1", "parentId": "u2", "timestamp": TS, "customType": "pi_jupyter.checkout"})),
    ),
    max_size=25,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=_body, bom=st.booleans(), newline=st.booleans())
def test_streamed_reading_gives_the_same_answers_as_the_store(tmp_path: Path, lines: list[str], bom: bool, newline: bool) -> None:
    from pi_jupyter.cli.info_cmd import _scanned_summary, session_summary
    from pi_jupyter.cli.render import entry_summary
    from pi_jupyter.cli.tree_cmd import render_tree
    from pi_jupyter.session.scan import NeedsFullRead, scan

    path = tmp_path / "s.jsonl"
    text = "\n".join([json.dumps(HEADER), *(line.replace("\n", " ") for line in lines)]) + ("\n" if newline else "")
    path.write_bytes((b"\xef\xbb\xbf" if bom else b"") + text.encode())
    whole = Session.open(path, readonly=True)
    try:
        scanned = scan(str(path), keep=entry_summary)
    except NeedsFullRead:
        event("opened whole")
        return  # the CLI opens these whole
    assert scanned.load_report.problems == whole.load_report.problems
    assert scanned.load_report.omitted == whole.load_report.omitted
    assert (scanned.leaf_id, len(scanned), scanned.labels) == (whole.leaf_id, len(whole), whole.labels)
    try:
        expected = whole.context().to_pi_json()
    except CycleError:
        with pytest.raises(CycleError):
            scanned.plan(scanned.leaf_id)
    else:
        plan = scanned.plan(scanned.leaf_id)
        assert {"messages": list(scanned.messages(plan)), **plan.settings()} == expected
    assert render_tree(scanned, summary=lambda stub: stub["_keep"]) == render_tree(whole)
    streamed = _scanned_summary(str(path))
    assert streamed is not None and streamed[1] == session_summary(whole)


def test_streamed_reading_refuses_what_the_store_refuses(tmp_path: Path) -> None:
    from pi_jupyter.session.scan import scan

    cases = {"empty": b"", "blank": b"\n \n", "not json": b"hello\nworld\n", "no header": json.dumps(user("a", None)).encode() + b"\n"}
    for name, blob in cases.items():
        path = tmp_path / f"{name}.jsonl"
        path.write_bytes(blob)
        with pytest.raises(SessionFileError) as whole:
            Session.open(path, readonly=True)
        with pytest.raises(SessionFileError) as streamed:
            scan(str(path))
        assert str(streamed.value) == str(whole.value), name
