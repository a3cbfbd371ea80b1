"""pi opens a session whose tool results carry world records (``details.world``) and rebuilds the same context.

A re-run sibling, a grid's branches (each in its own world) and a checkout back, written by the
real agent with world recording, then read by pi 0.73.1 and 1.6.0 at every leaf.
"""

from __future__ import annotations

import asyncio

import pytest

from pi_jupyter import Agent, Session
from pi_jupyter.agent.agent import AgentSettings
from pi_jupyter.experiment import Experiment
from pi_jupyter.world import World, delta_of

from .test_session_interop import assert_same, oracle, ours  # noqa: F401 - oracle is a fixture

pytestmark = pytest.mark.interop


def test_sessions_with_world_records_read_the_same_in_pi(oracle, tmp_path):  # noqa: F811 - the fixture
    path = tmp_path / "world.jsonl"
    session = Session.open(path, create=True, cwd=str(tmp_path))
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    # no recorded system prompt: pi 0.73 has no system messages in the transcript (test_pi16_interop covers them)
    settings = AgentSettings(record_system_prompt=False)
    agent = Agent(
        session, tools=["python", "write", "bash"], cwd=str(tmp_path), settings=settings, tool_extra={"namespace": ns, "world": world}
    )
    start = session.leaf_id
    turn = 'call python with {"code": "plan = \'A\'"}\ncall write with {"path": "notes.txt", "content": "A"}\nuse bash `echo hi`'
    asyncio.run(agent.prompt(turn))
    world.settle()
    first = session.leaf_id
    session.checkout(start)
    world.move(start)
    agent.reload()
    asyncio.run(agent.prompt(turn.replace("A", "B")))
    world.settle()
    grid = Experiment(
        session, 'call python with {{"code": "n = {n}"}}', vary={"n": ["1", "2"]}, tools=["python"], cwd=str(tmp_path),
        agent_options={"tool_extra": {"namespace": ns, "world": world}},
    )  # fmt: skip
    result = asyncio.run(grid.run())
    assert [r.state for r in result.rows] == ["done", "done"]
    agent.checkout_sync(first)
    session.close()
    reopened = Session.open(path, readonly=True)
    assert sum(1 for e in reopened.raw_entries() if delta_of(e)) >= 6
    leaves = [None, first, *result.branches]
    answers = oracle([{"op": "context", "file": str(path), **({"leaf": leaf} if leaf else {})} for leaf in leaves])
    for leaf, pi in zip(leaves, answers, strict=True):
        if leaf is None:
            assert_same(ours(path), pi, "the file as it ends")
            continue
        mine = ours(path, leaf)
        # a grid branch's agent records its system prompt, which pi 0.73 does not convert for a model
        keys = ("messages", "branchIds") + (("llm",) if leaf == first or oracle.version != "pi-0.73.1" else ())
        for key in keys:
            assert mine[key] == pi[key], f"leaf {leaf}: {key} differs"
        assert any("world" in (m.get("details") or {}) for m in pi["messages"] if m.get("role") == "toolResult")


def test_the_worlds_own_records_read_the_same_in_pi(oracle, tmp_path):  # noqa: F811 - the fixture
    """Names saved together (group slots), the user's versions a run starts from and ``--force`` keeps, and the worlds
    a one-sided rewind records: ``pi_jupyter.world`` custom entries, which pi keeps out of the context."""
    from pi_jupyter.world import rewind

    path = tmp_path / "records.jsonl"
    session = Session.open(path, create=True, cwd=str(tmp_path))
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(
        session, tools=["python", "write"], cwd=str(tmp_path), settings=AgentSettings(record_system_prompt=False),
        tool_extra={"namespace": ns, "world": world},
    )  # fmt: skip
    world.attach(agent)
    asyncio.run(agent.prompt('call python with {"code": "a = [1]; b = a; plan = \'A\'"}'))
    first = session.leaf_id
    ns["plan"] = "mine"
    world.keep_users()  # the user's own version, recorded before a run starts from it
    agent.reload()
    asyncio.run(agent.prompt('call write with {"path": "notes.txt", "content": "B"}'))
    second = session.leaf_id
    asyncio.run(rewind(world, agent, first, "world"))
    brought = session.leaf_id
    asyncio.run(rewind(world, agent, second, "conversation"))
    kept = session.leaf_id
    ns["plan"] = "again"
    asyncio.run(rewind(world, agent, first, force=True))
    kinds = [(e.get("data") or {}).get("why") for e in session.raw_entries() if e.get("customType") == "pi_jupyter.world"]
    assert sorted(kinds) == ["bring", "stay", "user", "user"] and any(
        isinstance(c.after, dict) and "group" in c.after for e in session.raw_entries() if (d := delta_of(e)) for c in d.vars
    )
    session.close()
    leaves = [None, first, second, brought, kept]
    answers = oracle([{"op": "context", "file": str(path), **({"leaf": leaf} if leaf else {})} for leaf in leaves])
    for leaf, pi in zip(leaves, answers, strict=True):
        if leaf is None:
            assert_same(ours(path), pi, "the file as it ends")
            continue
        mine = ours(path, leaf)
        for key in ("messages", "branchIds", "llm"):
            assert mine[key] == pi[key], f"leaf {leaf}: {key} differs"
