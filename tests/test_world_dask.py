"""Grid branches on Dask workers each run in their own world, rebuilt from the saved state at the start."""

from __future__ import annotations

import asyncio
import json

import pytest

from pi_jupyter import Agent, Session
from pi_jupyter.experiment import experiment
from pi_jupyter.experiment.dask_executor import DaskExecutor
from pi_jupyter.world import World

distributed = pytest.importorskip("distributed", reason="the Dask executor is the optional 'dask' extra")


def braces(obj: dict) -> str:
    return json.dumps(obj).replace("{", "{{").replace("}", "}}")


def test_dask_branches_start_in_the_saved_world_and_never_see_each_other(tmp_path):
    session = Session.open(tmp_path / "shared.jsonl", create=True, cwd=str(tmp_path))
    ns: dict = {}
    world = World(session, ns, cwd=str(tmp_path))
    agent = Agent(session, tools=["python", "write"], cwd=str(tmp_path), tool_extra={"namespace": ns, "world": world})
    asyncio.run(agent.prompt('call python with {"code": "base = 10"}\ncall write with {"path": "notes.txt", "content": "start"}'))
    world.settle()
    code = braces({"code": "counter = globals().get('counter', 0) + base; print(counter)"})
    write = '{{"path": "notes.txt", "content": "branch {n}"}}'
    prompt = f"call python with {code}\ncall write with {write}"
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=40
    )
    try:
        with distributed.Client(cluster) as client:
            result = asyncio.run(
                experiment(session, prompt, vary={"n": ["0", "1", "2", "3"]}, tools=["python", "write"], cwd=str(tmp_path),
                           executor=DaskExecutor(client=client), continue_from="start")
            )  # fmt: skip
    finally:
        cluster.close()
    assert [r.state for r in result.rows] == ["done"] * 4
    reopened = Session.open(session.path)
    printed = [
        [e["message"]["content"][0]["text"] for e in reopened.raw_branch(r.leaf) if (e.get("message") or {}).get("toolName") == "python"][
            -1
        ]
        for r in result.rows
    ]
    assert [p.splitlines()[0] for p in printed] == ["10", "10", "10", "10"]
    assert (tmp_path / "notes.txt").read_text() == "start" and "counter" not in ns
    world.session.refresh()
    report = world.move(result.rows[2].leaf)
    assert ns["counter"] == 10 and (tmp_path / "notes.txt").read_text() == "branch 2"
    assert report.line() == "restored counter and notes.txt"
