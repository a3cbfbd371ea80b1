"""An export never destroys data (issue 29): not the session it reads, not another session, not a stranger's file.

``pi-jupyter export``, RPC ``export_html`` and ``%pi export`` share one rule: a file that reads
as a session header is never overwritten (not even with ``--force``), any other existing file
is replaced only when it is an earlier export or ``--force`` (RPC: ``"force": true``) says so,
and the page is written to a temporary file in the same folder and renamed over the target,
so a reader never sees half a page. A named pipe, a device or a folder as the output is
refused at once: nothing is opened, so nothing can block. The CLI runs as a real subprocess,
the RPC server as a real server, the magic in IPython's real shell.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_adversarial_files import one_line_error
from test_notebook_magics import ip, usage_error  # noqa: F401 - ip is a fixture

from pi_jupyter.messages import AssistantMessage, TextContent, UserMessage
from pi_jupyter.session import Session

FAST = 30
"""Seconds a refusal may take before the test fails by name (a hang, not load)."""


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pi_jupyter", *args], capture_output=True, text=True, timeout=FAST, stdin=subprocess.DEVNULL, cwd=cwd
    )


def session_file(path: Path, text: str = "Keep this conversation.") -> Path:
    s = Session.open(path, create=True)
    s.append_message(UserMessage.text(text))
    s.append_message(AssistantMessage(content=[TextContent(text="Kept.")]))
    s.close()
    return path


def snapshot(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}


# ------------------------------------------------------------------ the CLI


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_exporting_a_session_onto_itself_is_refused_and_the_file_is_untouched(tmp_path, force):
    s = session_file(tmp_path / "s.jsonl")
    before = snapshot(tmp_path)
    proc = cli("export", str(s), "-o", str(s), *force)
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert str(s) in line and "session file" in line
    assert snapshot(tmp_path) == before  # the session, byte for byte, and no temporary file left


@pytest.mark.parametrize("force", [[], ["--force"]])
def test_another_session_file_is_never_overwritten_even_with_force(tmp_path, force):
    s = session_file(tmp_path / "a.jsonl")
    other = session_file(tmp_path / "b.jsonl", "Another conversation.")
    # through a relative path and a symlink too: what counts is the file, not its name
    os.symlink(other, tmp_path / "link.html")
    before = snapshot(tmp_path)
    for target in ("b.jsonl", "link.html"):
        proc = cli("export", str(s), "-o", target, *force, cwd=tmp_path)
        assert proc.returncode == 2
        assert "session file" in one_line_error(proc)
    assert snapshot(tmp_path) == before


def test_an_existing_file_it_did_not_write_needs_force(tmp_path):
    s = session_file(tmp_path / "s.jsonl")
    notes = tmp_path / "notes.html"
    notes.write_text("<p>my own notes</p>")
    proc = cli("export", str(s), "-o", str(notes))
    assert proc.returncode == 2
    line = one_line_error(proc)
    assert str(notes) in line and "--force" in line
    assert notes.read_text() == "<p>my own notes</p>"
    proc = cli("export", str(s), "-o", str(notes), "--force")
    assert proc.returncode == 0, proc.stderr
    assert "Keep this conversation." in notes.read_text()


@pytest.mark.parametrize("fmt", ["html", "markdown"])
def test_its_own_earlier_export_is_replaced_without_force_and_atomically(tmp_path, fmt):
    s = session_file(tmp_path / "s.jsonl")
    assert cli("export", str(s), "--format", fmt).returncode == 0
    out = tmp_path / ("s.html" if fmt == "html" else "s.md")
    first = out.read_bytes()
    reader = open(out, "rb")  # a reader that opened the old page
    try:
        with Session.open(s) as again:
            again.append_message(UserMessage.text("A second question."))
        proc = cli("export", str(s), "--format", fmt)
        assert proc.returncode == 0, proc.stderr
        assert "A second question." in out.read_text()
        assert reader.read() == first  # renamed over, never rewritten in place: the old reader reads the whole old page
    finally:
        reader.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["s.jsonl", out.name])  # no temporary file left


def test_a_fifo_a_device_and_a_folder_are_refused_at_once(tmp_path):
    s = session_file(tmp_path / "s.jsonl")
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    (tmp_path / "folder.html").mkdir()
    for target, what in ((fifo, "named pipe"), ("/dev/null", "character device"), (tmp_path / "folder.html", "folder")):
        for force in ([], ["--force"]):
            proc = cli("export", str(s), "-o", str(target), *force)  # a hang fails here, after FAST seconds
            assert proc.returncode == 2
            line = one_line_error(proc)
            assert str(target) in line and what in line


def test_an_unwritable_folder_is_one_line_and_leaves_nothing(tmp_path):
    s = session_file(tmp_path / "s.jsonl")
    proc = cli("export", str(s), "-o", str(tmp_path / "missing" / "out.html"))
    assert proc.returncode == 2 and "missing" in one_line_error(proc)


# ------------------------------------------------------------------ RPC export_html


def _reply(server, command):
    server.send(command)
    return server.response(command["id"])


def test_rpc_export_html_never_overwrites_a_session_and_needs_force_for_other_files(rpc, tmp_path):
    own = tmp_path / "s.jsonl"
    other = session_file(tmp_path / "other.jsonl", "Another conversation.")
    server = rpc("--session", str(own))
    server.timeout = FAST
    server.send({"id": "p", "type": "prompt", "message": "Hello there"})
    server.until("agent_settled")
    before = snapshot(tmp_path)
    for path in (own, other, Path(os.path.relpath(own, tmp_path))):
        for force in (False, True):
            reply = _reply(server, {"id": f"x{path}{force}", "type": "export_html", "outputPath": str(path), "force": force})
            assert reply["success"] is False and "session file" in reply["error"], reply
            assert "\n" not in reply["error"] and "Traceback" not in reply["error"]
    assert snapshot(tmp_path) == before
    notes = tmp_path / "notes.html"
    notes.write_text("mine")
    reply = _reply(server, {"id": "n1", "type": "export_html", "outputPath": str(notes)})
    assert reply["success"] is False and "force" in reply["error"] and notes.read_text() == "mine"
    reply = _reply(server, {"id": "n2", "type": "export_html", "outputPath": str(notes), "force": True})
    assert reply["success"] is True and "Hello there" in notes.read_text()
    reply = _reply(server, {"id": "n3", "type": "export_html", "outputPath": str(notes)})  # its own page now
    assert reply["success"] is True
    # the session file itself is whole and still a session
    with Session.open(own, readonly=True) as reopened:
        assert [m.role for m in reopened.context().messages] == ["system", "user", "assistant"]
    assert "Hello there" in own.read_text()
    assert server.finish() == 0


def test_rpc_export_to_a_fifo_is_refused_and_the_server_goes_on(rpc, tmp_path):
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    server = rpc("--no-session")
    server.timeout = FAST  # a server blocked on the pipe fails here, by name
    server.send({"id": "p", "type": "prompt", "message": "Hello"})
    server.until("agent_settled")
    reply = _reply(server, {"id": "e", "type": "export_html", "outputPath": str(fifo)})
    assert reply["success"] is False and "named pipe" in reply["error"]
    assert _reply(server, {"id": "s", "type": "get_state"})["success"] is True  # answered: nothing blocked
    assert server.finish() == 0


# ------------------------------------------------------------------ %pi export


def test_pi_export_refuses_the_session_file_and_strangers_files(ip, tmp_path):  # noqa: F811 - the fixture
    ip.run_cell_magic("pi", "", "Do not lose me.")
    (path,) = [str(p) for p in (tmp_path / "sessions").glob("*.jsonl")]
    before = Path(path).read_bytes()
    for args in (f"export {path}", f"export --force {path}", f"export --format markdown --force {path}"):
        message = usage_error(ip, args)
        assert "session file" in message and "\n" not in message
    assert Path(path).read_bytes() == before
    (tmp_path / "mine.md").write_text("my notes")
    assert "--force" in usage_error(ip, "export --format markdown mine.md")
    assert (tmp_path / "mine.md").read_text() == "my notes"
    ip.run_line_magic("pi", "export --format markdown --force mine.md")
    assert "Do not lose me." in (tmp_path / "mine.md").read_text()
    ip.run_line_magic("pi", "export --format markdown mine.md")  # its own export now: no --force needed
    os.mkfifo(tmp_path / "pipe.html")
    assert "named pipe" in usage_error(ip, "export pipe.html")


def test_the_export_markers_are_where_the_writer_looks(tmp_path):
    """The page and the Markdown say who wrote them in their first line, so a re-export knows its own file."""
    s = session_file(tmp_path / "s.jsonl")
    assert cli("export", str(s)).returncode == 0
    assert cli("export", str(s), "--format", "markdown").returncode == 0
    head_html = (tmp_path / "s.html").read_text()[:300]
    head_md = (tmp_path / "s.md").read_text().splitlines()[0]
    assert "pi-jupyter export" in head_html and "pi-jupyter export" in head_md
