"""The Dask executor against a real LocalCluster: worker processes append to the shared session file."""

from __future__ import annotations

import asyncio

import pytest

from pi_jupyter import Session
from pi_jupyter.experiment import experiment, load_experiment
from pi_jupyter.experiment.dask_executor import DaskExecutor

distributed = pytest.importorskip("distributed", reason="the Dask executor is the optional 'dask' extra")

COLUMNS = ["model", "tone", "repeat", "state", "stop_reason", "turns", "tool_calls", "tokens_in", "tokens_out", "answer"]


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=2, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=40
    )
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def test_dask_workers_run_the_grid_and_the_table_matches_the_local_one(tmp_path, client):
    (tmp_path / "notes.txt").write_text("numbers go up\n")
    grid = {"vary": {"model": ["offline/echo", "offline/typewriter"], "tone": ["terse", "warm"]}, "repeat": 2, "tools": ["read"]}
    prompt = "Use the read tool on notes.txt and say it in a {tone} way."
    local_s = Session.open(tmp_path / "local.jsonl", create=True, cwd=str(tmp_path))
    local = asyncio.run(experiment(local_s, prompt, **grid))
    shared = Session.open(tmp_path / "shared.jsonl", create=True, cwd=str(tmp_path))
    with distributed.get_task_stream(client) as stream:
        remote = asyncio.run(experiment(shared, prompt, executor=DaskExecutor(client=client), scorers=["length"], **grid))
    assert [r.state for r in remote.rows] == ["done"] * 8
    # the branches ran as tasks on the worker processes
    tasks = [t for t in stream.data if "run_on_worker" in t["key"]]
    assert len(tasks) == 8
    assert local.table()[COLUMNS].equals(remote.table()[COLUMNS])
    # the file alone gives the same table; every line is whole (the store's lock serialized the workers)
    reopened = Session.open(shared.path)
    assert reopened.load_report.ok
    assert load_experiment(reopened).table()[COLUMNS].equals(remote.table()[COLUMNS])
    assert (load_experiment(reopened).table()["length"] > 0).all()
    # each branch is a sibling below the same start, with its own tool call and result
    for row in remote.rows:
        ctx = reopened.context(row.leaf)
        assert [m.role for m in ctx.messages] == ["system", "user", "assistant", "toolResult", "assistant"]  # the prompt is recorded
