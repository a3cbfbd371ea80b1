"""Secrets left in a session reach no exported page; URL passwords written raw are hidden, addresses in paths are not.

A session from elsewhere (written by hand, the way a careless colleague's or an attacker's file
holds them) keeps a key in its name, its file name, a label, a prompt, an answer and a tool's
output. ``pi-jupyter export`` (HTML and Markdown), ``%pi export`` and RPC ``export_html`` must show
none of it: the texts are redacted before they are drawn (Graphviz writes ``sk-`` as
``sk&#45;``, which a redaction of the finished page does not see) and before the page's data is
written. A tool that prints a URL whose password holds a raw ``#``, ``?`` or space
(``https://user:pa#ss@host/``) neither stores nor sends it; a port and a path holding an
address (``http://localhost:8080/api,admin@example.com``) are left as they are.
"""

from __future__ import annotations

import asyncio
import html
import json
from pathlib import Path

import pytest
from test_adversarial_export import cli
from test_notebook_magics import ip  # noqa: F401 - a fixture
from wire.server import openai_reply, tool_call

from pi_jupyter import Agent
from pi_jupyter.session import Session

BODY = "FGHJLMPQUWXZFGHJLMPQUWXZFG"
KEY = "sk-test-" + BODY
"""An OpenAI-shaped key; its body's letters appear nowhere else, so any three of them in a row is a leak."""
PASSWORD = "QZ#W?X Z"
RAW = f"postgres://admin:{PASSWORD}@db.internal/prod"
KEPT = "http://localhost:8080/api,admin@example.com"


def leaks(text: str) -> list[str]:
    """Pieces of a secret in ``text``, read as a page shows it (entities such as ``&#45;`` resolved)."""
    shown = html.unescape(text)
    pieces = [BODY[i : i + 4] for i in range(len(BODY) - 3)] + ["QZ#W", "W?X", "?X Z"]
    return [p for p in pieces if p in text or p in shown]


def hostile_session(folder: Path) -> Path:
    """A session file written by hand: a key in every text an export shows, the file's name too."""
    path = folder / f"run-{KEY}.jsonl"
    ts = "2026-01-01T00:00:0{}Z"
    rows = [
        {"type": "session", "version": 3, "id": "s1", "timestamp": ts.format(0), "cwd": str(folder)},
        {"type": "session_info", "id": "n1", "parentId": None, "timestamp": ts.format(0), "name": f"study {KEY}"},
        {"type": "message", "id": "a1", "parentId": "n1", "timestamp": ts.format(1),
         "message": {"role": "user", "content": f"use {KEY} and {RAW}", "timestamp": 1}},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": ts.format(2),
         "message": {"role": "assistant", "api": "openai-completions", "provider": "openai", "model": "gpt-test", "stopReason": "toolUse",
                     "timestamp": 2, "content": [{"type": "text", "text": f"reading with {KEY}"},
                                                 {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": f"{KEY}.txt"}}]}},
        {"type": "message", "id": "a3", "parentId": "a2", "timestamp": ts.format(3),
         "message": {"role": "toolResult", "toolCallId": "c1", "toolName": "read", "isError": False, "timestamp": 3,
                     "content": [{"type": "text", "text": f"token={KEY}\n{RAW}"}]}},
        {"type": "message", "id": "a4", "parentId": "a3", "timestamp": ts.format(4),
         "message": {"role": "assistant", "api": "openai-completions", "provider": "openai", "model": "gpt-test", "stopReason": "stop",
                     "timestamp": 4, "content": [{"type": "text", "text": f"done; the key was {KEY}"}]}},
        {"type": "label", "id": "l1", "parentId": "a4", "timestamp": ts.format(5), "targetId": "a4", "label": f"best {KEY} {RAW}"},
        {"type": "message", "id": "b1", "parentId": "n1", "timestamp": ts.format(6),
         "message": {"role": "user", "content": f"another branch {KEY}", "timestamp": 6}},
    ]  # fmt: skip
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


@pytest.mark.parametrize("fmt", ["html", "markdown"])
def test_pi_jupyter_export_shows_no_key_held_in_names_labels_or_messages(tmp_path: Path, fmt: str) -> None:
    source = hostile_session(tmp_path)
    out = tmp_path / f"page.{fmt}"
    proc = cli("export", str(source), "--format", fmt, "--branch", "a4", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    page = out.read_text()
    assert leaks(page) == [], leaks(page)
    assert "[REDACTED:openai-key]" in page or "[REDACTED:openai&#45;key]" in page
    assert "study" in page and "best" in page and "another branch" in (page if fmt == "html" else "another branch")


def test_rpc_export_html_redacts_the_tree_drawing_and_the_page_data(rpc, tmp_path: Path) -> None:
    source = hostile_session(tmp_path)
    server = rpc("--session", str(source))
    server.send({"id": "e", "type": "export_html", "outputPath": str(tmp_path / "rpc.html")})
    reply = server.until(lambda o: o.get("id") == "e")
    assert reply["success"] is True, reply
    page = (tmp_path / "rpc.html").read_text()
    assert leaks(page) == [], leaks(page)
    svg = page[page.index("<svg") : page.index("</svg>")]
    assert "REDACTED" in html.unescape(svg)  # the label and the prompts in the drawing, redacted before Graphviz
    data = json.loads(page.split('<script type="application/json" id="pi-data">', 1)[1].split("</script>", 1)[0])
    assert all("REDACTED" in label for label in data["labels"].values())
    assert server.finish() == 0


def test_pi_export_in_a_notebook_shows_no_key(ip, tmp_path: Path) -> None:  # noqa: F811 - the fixture
    source = hostile_session(tmp_path)
    ip.run_line_magic("pi", f"open {source}")
    ip.run_line_magic("pi", "export --force notebook-page.html")
    page = (tmp_path / "notebook-page.html").read_text()
    assert leaks(page) == [], leaks(page)


def test_a_url_password_written_raw_by_a_tool_is_neither_stored_nor_sent(wire, tmp_path: Path) -> None:
    (tmp_path / "creds.txt").write_text(
        f"primary {RAW}\nbackup https://ops:pa#{BODY[:6]}@backup.example/x\nspare https://ops:pa {BODY[6:12]}@spare.example\n"
        f"numeric mysql://root:2024{BODY[12:18]}@num.example/db\napi {KEPT}\n"
    )
    wire.queue("openai", openai_reply(tool_calls=[tool_call("read", {"path": "creds.txt"}, id="call_1")]), openai_reply(text="read it"))
    session = Session.open(tmp_path / "s.jsonl", create=True)
    key = "sk-test-" + "k" * 24
    agent = Agent(session, model="openai/gpt-test", base_url=wire.openai_url, api_key=key, tools=["read"], cwd=str(tmp_path))
    result = asyncio.run(agent.prompt("read creds.txt"))
    assert result.ok
    stored = (tmp_path / "s.jsonl").read_text()
    sent = json.dumps(wire.requests_to("openai")[-1].body)
    for where, text in (("session file", stored), ("request", sent)):
        assert leaks(text) == [], (where, leaks(text))
        assert text.count("[REDACTED:url-password]") >= 4, where
        assert KEPT in text, where  # a port, a path and an address: nothing hidden
        assert all(host in text for host in ("db.internal", "backup.example", "spare.example", "num.example")), where  # hosts stay


def test_an_experiments_prompt_and_values_are_recorded_without_the_key(tmp_path: Path) -> None:
    """A key pasted into a grid's prompt (and a value): the template each branch records, the end record and the
    messages hold none of it; the table still shows where it was."""
    from pi_jupyter.experiment import experiment, load_experiment

    session = Session.open(tmp_path / "grid.jsonl", create=True)
    result = asyncio.run(experiment(session, f"Use {KEY} and {RAW} to answer {{how}}.", vary={"how": ["briefly", f"with {KEY}"]}))
    text = (tmp_path / "grid.jsonl").read_text()
    assert leaks(text) == [], leaks(text)
    again = load_experiment(Session.open(tmp_path / "grid.jsonl", readonly=True))
    assert "[REDACTED:openai-key]" in again.grid.prompt and "[REDACTED:url-password]" in again.grid.prompt
    assert [r.state for r in result.rows] == ["done", "done"]
