"""Once forgotten, never sent again: a context edit follows its entry onto every branch.

A user forgets a message holding a secret (``%pi forget``). Whatever they do next (re-run a
later cell, re-run an earlier one, check out a node from before the edit and go on, fork, run
a grid, compact, summarize a branch), the secret is in no request body a local
OpenAI-compatible server receives. pi 1.6 applies only the edits on a branch's path, so the
record carries the edit onto the branch (a copy of it) and pi rebuilds the same context.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from wire.helpers import sent_since

from pi_jupyter import Agent, Session
from pi_jupyter.compaction import CompactionWouldGrow

SECRET = "SWORDFISH-93"


@pytest.fixture
def answers(wire):
    from wire.server import openai_reply

    wire.queue_default("openai", openai_reply("## Goal\nnoted"))
    return wire


def user_entry(session: Session, text: str) -> str:
    for e in session.raw_entries():
        m = e.get("message") if e.get("type") == "message" else None
        if m and m.get("role") == "user" and text in json.dumps(m.get("content")):
            return e["id"]
    raise AssertionError(f"no user message with {text!r}")


# ------------------------------------------------------------------ the Python API


def wire_agent(wire, path: Path, monkeypatch) -> Agent:
    from wire.helpers import wire_model

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-wire-0000000000000000000000")
    return Agent(Session.open(path, create=True), model=wire_model(wire), thinking="off")


def forgotten_conversation(wire, tmp_path: Path, monkeypatch) -> tuple[Agent, str]:
    """Three turns, the second holding the secret and then forgotten; returns the agent and the answer before the edit."""
    agent = wire_agent(wire, tmp_path / "s.jsonl", monkeypatch)

    async def talk() -> str:
        await agent.prompt("Hello, I am Ada.")
        await agent.prompt(f"The vault code is {SECRET}.")
        before_edit = agent.session.leaf_id
        await agent.prompt("What else should I know?")
        return before_edit

    before_edit = asyncio.run(talk())
    agent.edit_context(user_entry(agent.session, SECRET), None)
    sent_since(wire)
    return agent, before_edit


def test_checkout_before_the_edit_then_continue(answers, tmp_path, monkeypatch):
    agent, before_edit = forgotten_conversation(answers, tmp_path, monkeypatch)
    asyncio.run(agent.checkout(before_edit))
    asyncio.run(agent.prompt("Go on from there."))
    body = sent_since(answers)
    assert "Go on from there." in body and SECRET not in body
    # pi, which applies only the edits on the path, rebuilds the same context from the file
    reopened = Session.open(agent.session.path, readonly=True)
    assert SECRET not in json.dumps(reopened.context().raw_messages)


def test_compaction_after_checking_out_before_the_edit(answers, tmp_path, monkeypatch):
    agent, before_edit = forgotten_conversation(answers, tmp_path, monkeypatch)
    asyncio.run(agent.checkout(before_edit))
    # three short turns: the summary does not make the context smaller, so it is refused after the request went out
    with pytest.raises(CompactionWouldGrow):
        asyncio.run(agent.compact(keep_recent_tokens=1))
    body = sent_since(answers)
    assert "<conversation>" in body or "conversation" in body  # the summary request went out
    assert SECRET not in body


def test_branch_summary_of_a_branch_that_holds_the_forgotten_entry(answers, tmp_path, monkeypatch):
    agent, before_edit = forgotten_conversation(answers, tmp_path, monkeypatch)
    asyncio.run(agent.checkout(before_edit))  # a branch where the entry is, without the edit
    asyncio.run(agent.prompt("Another thought."))
    sent_since(answers)
    first = agent.session.branch_ids()[0]
    asyncio.run(agent.checkout(first, summarize=True))  # leave it with a summary
    body = sent_since(answers)
    assert "Another thought." in body and SECRET not in body


def test_a_fork_from_before_the_edit(answers, tmp_path, monkeypatch):
    agent, before_edit = forgotten_conversation(answers, tmp_path, monkeypatch)
    fork = agent.session.fork(before_edit)
    assert SECRET not in json.dumps(fork.context().raw_messages)  # the fork carries the edit
    other = Agent(fork, model=agent.model, thinking="off")
    asyncio.run(other.prompt("In the fork."))
    body = sent_since(answers)
    assert "In the fork." in body and SECRET not in body


def test_a_restore_is_the_latest_word_too(answers, tmp_path, monkeypatch):
    agent, before_edit = forgotten_conversation(answers, tmp_path, monkeypatch)
    target = user_entry(agent.session, SECRET)
    agent.edit_context(target, f"The vault code is {SECRET}.")  # the user restores it on purpose
    asyncio.run(agent.checkout(before_edit))
    asyncio.run(agent.prompt("Go on."))
    assert SECRET in sent_since(answers)


# ------------------------------------------------------------------ in a notebook


@pytest.mark.kernel
@pytest.mark.timeout(600)
def test_forgotten_secret_is_never_sent_again_whatever_the_notebook_does(answers, tmp_path):
    from kernel_client import Kernel

    k = Kernel(str(tmp_path), env={"OPENAI_API_KEY": "sk-test-wire-0000000000000000000000"})

    def run(code: str, cell: str | None = None) -> str:
        out = k.run(code, cell_id=cell)
        assert out.status == "ok", out.error
        return out.stdout

    def session() -> Session:
        (path,) = sorted((tmp_path / "pi-sessions").glob("*.jsonl"))[:1]
        return Session.open(path, readonly=True)

    try:
        run(
            "%load_ext pi_jupyter\n"
            '%config PiMagics.model = "openai/gpt-test"\n'
            f"%config PiMagics.base_url = {answers.openai_url!r}\n"
            '%config PiMagics.thinking = "off"',
            "setup",
        )
        run("%%pi\nHello, I am Ada.", "c0")
        run(f"%%pi\nThe vault code is {SECRET}.", "c1")
        run("%%pi\nWhat else should I know?", "c2")
        s = session()
        target = user_entry(s, SECRET)
        before_edit = s.raw_branch()[-2]["id"]  # the answer to c1: a node from before the edit
        run(f"%pi forget {target}", "forget")
        sent_since(answers)

        run("%%pi\nWhat else should I know?", "c2")  # re-run a later cell (it forks from before the edit)
        assert SECRET not in sent_since(answers)
        run("%%pi\nHello, I am Ada.", "c0")  # re-run an earlier cell, then the one after the secret
        run("%%pi\nWhat else should I know?", "c2")
        assert SECRET not in sent_since(answers)
        run(f"%pi checkout {before_edit}", "co")  # check out before the edit, then continue
        run("%%pi\nAnd then?", "c3")
        assert "And then?" in (body := sent_since(answers)) and SECRET not in body
        run(f"%pi checkout {before_edit}", "co2")
        run("%%pi --vary tone=terse,warm\nSay it in a {tone} way.", "grid")  # a grid from there
        body = sent_since(answers)
        assert body.count("Say it in a") == 2 and SECRET not in body
        run(f"%pi fork {before_edit}", "fork")  # a fork from before the edit
        run("%%pi\nIn the fork.", "c4")
        assert "In the fork." in (body := sent_since(answers)) and SECRET not in body
    finally:
        k.close()
