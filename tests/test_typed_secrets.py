"""Every text a user types is redacted, not only prompts.

A key typed into ``%pi edit`` text, into ``--instructions`` of a compaction or a summarized
checkout, into a label, a session name or a ``--vary`` value never reaches a request body (read
on a local OpenAI-compatible server) nor the session file. A URL password written raw, with a
``#``, a ``?`` or a space in it, is hidden too.
"""

from __future__ import annotations

import asyncio

import pytest
from test_notebook_magics import ip  # noqa: F401 - the in-process IPython fixture
from wire.helpers import sent_since, wire_model

from pi_jupyter import Agent, Session

KEY = "sk-proj-TYPEDKEYtypedkey0123456789abcdef"


@pytest.fixture
def answers(wire, monkeypatch):
    from wire.server import openai_reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wire-0000000000000000000000")
    wire.queue_default("openai", openai_reply("## Goal\nnoted"))
    return wire


def file_text(session: Session) -> str:
    return open(session.path, encoding="utf-8").read()


@pytest.mark.parametrize(
    "typed",
    [
        "postgres://bob:pa#ss%word@db.example.com:5432/app",
        "postgres://bob:pa?ss#word@db.example.com/app",
        "postgres://bob:my secret pass@db.example.com:5432/app",
        "mysql://root:h?llo w#rld@10.0.0.7/x",
    ],
)
def test_url_passwords_written_raw_are_redacted(typed):
    from pi_jupyter.agent.redact import redact_typed

    out = redact_typed(f"connect with {typed} please")
    assert "bob" in out or "root" in out  # the user and the host stay readable
    assert "db.example.com" in out or "10.0.0.7" in out
    for piece in ("pa#ss", "pa?ss", "secret pass", "h?llo", "w#rld", "word@"):
        assert piece not in out, out
    assert "[REDACTED:url-password]" in out


@pytest.mark.parametrize(
    "text",
    [
        "open http://localhost:8888 and mail bob@example.com",
        "the server db.example.com:5432 is down, ask ops@example.com",
        "see https://example.com/a?b=c#frag and write to me@example.org",
        "plain text with a@b and c:d",
    ],
)
def test_ordinary_typed_text_is_left_alone(text):
    from pi_jupyter.agent.redact import redact_typed

    assert redact_typed(text) == text


def test_edit_text_and_instructions_are_never_sent_nor_stored(answers, tmp_path):
    agent = Agent(Session.open(tmp_path / "s.jsonl", create=True), model=wire_model(answers), thinking="off")
    asyncio.run(agent.prompt("Hello."))
    asyncio.run(agent.prompt("Tell me about keys."))
    target = agent.session.raw_branch()[-2]["id"]  # the second prompt
    agent.edit_context(target, f"My key is {KEY}, and the db is postgres://bob:pa#ss@db.example.com/x")
    asyncio.run(agent.prompt("Go on."))
    asyncio.run(agent.compact(f"keep the key {KEY} in mind", keep_recent_tokens=1))
    first = agent.session.branch_ids()[0]
    asyncio.run(agent.checkout(first, summarize=True, instructions=f"focus on {KEY}", label=f"label {KEY}"))
    body = sent_since(answers)
    assert "Go on." in body and "focus on" in body and "keep the key" in body  # all three requests went out
    for secret in (KEY, "pa#ss"):
        assert secret not in body
        assert secret not in file_text(agent.session)
    assert "[REDACTED" in file_text(agent.session)


def test_labels_names_and_vary_values_typed_in_a_notebook_are_stored_redacted(ip, tmp_path):  # noqa: F811
    answer = ip.run_cell_magic("pi", "", "Hello.").entry_ids[-1]
    ip.run_line_magic("pi", f"label {answer} mine-{KEY}")
    ip.run_line_magic("pi", f"name project {KEY}")
    ip.run_cell_magic("pi", f"--vary tone=plain,{KEY}", "Say hi in a {tone} way.")
    ip.run_line_magic("pi", f"new other {KEY}")
    stored = "".join(p.read_text() for p in (tmp_path / "sessions").glob("*.jsonl"))
    assert KEY not in stored
    assert stored.count("[REDACTED:openai-key]") >= 4  # the label, both names, the variant (and its branch's prompt)


def test_a_label_typed_in_the_tree_is_stored_redacted(tmp_path):
    from pi_jupyter.notebook.tree_view.view import TreeView

    s = Session.create(tmp_path)
    entry = s.append_message({"role": "user", "content": "hello", "timestamp": 1})
    TreeView(s).label(entry, f"baseline {KEY}")
    assert s.label_of(entry) == "baseline [REDACTED:openai-key]"
    assert KEY not in file_text(s)
