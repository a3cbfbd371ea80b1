"""A grid on a real Dask cluster (worker processes) against the wire server: one rate limit for every worker,
a shared Retry-After, a worker killed mid-grid, Stop, the live view, and the bad inputs."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from wire.server import http_error, openai_reply, responses_reply, tool_call

from pi_jupyter import Session
from pi_jupyter.experiment import Experiment, load_experiment
from pi_jupyter.experiment.dask_executor import LOST, DaskExecutor, ExecutorError
from pi_jupyter.experiment.records import VARIANT_TYPE

distributed = pytest.importorskip("distributed", reason="the Dask executor is the optional 'dask' extra")

MODEL = "lab/gpt-wire"  # any provider/model at base_url is that server's model (no key needed)


def cluster_of(workers: int, threads: int = 2):
    import dask

    # A worker that stops answering is dropped after a minute, not Dask's five: on a loaded 2-core CI machine
    # one once went silent, and its grid (and the tests after it, on a shared cluster) waited out their timeouts.
    with dask.config.set({"distributed.scheduler.worker-ttl": "60s"}):
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=threads, processes=True, host="127.0.0.1", dashboard_address=None, silence_logs=50
        )
    return cluster, distributed.Client(cluster)


@pytest.fixture
def four():
    cluster, client = cluster_of(4)
    yield client
    client.close()
    cluster.close()


@pytest.fixture
def session(tmp_path):
    (tmp_path / "notes.txt").write_text("the loss diverges at step 40\n")
    return Session.open(tmp_path / "grid.jsonl", create=True, cwd=str(tmp_path))


def grid(session, wire, n, **options):
    return Experiment(session, "Go {x}.", vary={"x": [str(i) for i in range(n)]}, model=MODEL, base_url=wire.openai_url, **options)


def recorder(wire, reply):
    times, lock = [], threading.Lock()

    def respond(request):
        with lock:
            times.append(time.monotonic())
            n = len(times)
        return reply(n)

    wire.respond_with("openai", respond)
    return times


def workers_used(stream) -> set[str]:
    return {t["worker"] for t in stream.data if "run_on_worker" in t["key"]}


def test_four_workers_share_one_rate_limit(wire, four, session):
    times = recorder(wire, lambda n: openai_reply(text="ok"))
    exp = grid(session, wire, 16, concurrency=16, rate_limit=4)
    with distributed.get_task_stream(four) as stream:
        result = asyncio.run(exp.run(DaskExecutor(client=four)))
    assert [r.state for r in result.rows] == ["done"] * 16
    assert len(workers_used(stream)) == 4  # the branches really ran on every worker
    assert len(times) == 16
    # in no window of one second did the server see more than 4 requests
    busiest = max(sum(t <= u < t + 1.0 for u in times) for t in times)
    assert busiest <= 4, busiest


def test_a_retry_after_heard_by_one_worker_pauses_them_all(wire, four, session):
    def reply(n):
        if n == 1:
            return http_error(429, "Rate limit reached. Please retry after 1.5 seconds.", headers={"retry-after": "1.5"})
        return openai_reply(text="ok").late(0.5)

    times = recorder(wire, reply)
    exp = grid(session, wire, 12, concurrency=4, retry_delay_ms=10)
    with distributed.get_task_stream(four) as stream:
        result = asyncio.run(exp.run(DaskExecutor(client=four)))
    assert [r.state for r in result.rows] == ["done"] * 12
    assert len(workers_used(stream)) > 1
    first = times[0]
    # The first 4 requests are the 4 branches started together, already on their way when the 429 came back
    # (on a loaded machine they reach the server over a few tenths of a second). Every later one (the 429's
    # retry, and the branches started after a first one ended, 0.5 s on) waits out the 1.5 s the 429 named.
    after = times[4:]
    assert len(after) == 9 and all(t >= first + 1.4 for t in after), [round(t - first, 2) for t in times]


@pytest.mark.parametrize("allowed_failures", [3, 0], ids=["dask-reschedules-it", "dask-gives-up-on-it"])
def test_a_worker_killed_mid_grid_marks_its_branches_and_runs_nothing_twice(wire, session, allowed_failures):
    """Dask's default reschedules a lost worker's task (the rerun finds the branch started and only ends it);
    with allowed-failures 0 it gives up at once (KilledWorker) and the kernel ends the branch in the file."""
    import dask

    times = recorder(wire, lambda n: openai_reply(text=f"answer {n}").late(2.0))
    with dask.config.set({"distributed.scheduler.allowed-failures": allowed_failures}):
        cluster, client = cluster_of(2)
    try:
        exp = grid(session, wire, 8, concurrency=4, scorers=["length"])

        async def main():
            task = asyncio.ensure_future(exp.run(DaskExecutor(client=client)))
            deadline = time.monotonic() + 120
            while len(times) < 4:
                assert time.monotonic() < deadline, f"only {len(times)} of the 4 first requests arrived in 120 s"
                assert not task.done(), task.result()
                await asyncio.sleep(0.05)
            pid = next(iter(client.run(os.getpid).values()))
            os.kill(pid, signal.SIGKILL)  # a worker with branches waiting on the model
            return await task

        result = asyncio.run(main())
    finally:
        client.close()
        cluster.close()
    states = [r.state for r in result.rows]
    lost = [r for r in result.rows if r.state == "failed"]
    assert 1 <= len(lost) <= 2 and states.count("done") == 8 - len(lost), states
    assert all(r.error == LOST for r in lost)
    # never run twice: one request and one start per branch, however Dask rescheduled the lost tasks
    assert len(times) == 8
    reopened = Session.open(session.path, readonly=True)
    starts = [e["data"]["index"] for e in reopened.raw_entries() if e.get("customType") == VARIANT_TYPE]
    assert sorted(starts) == list(range(8))
    # the lost branches keep their partial entries (the prompt) and end as failed; the table agrees with the live state
    table = load_experiment(reopened)
    assert [r.state for r in table.rows] == [s.state for s in exp.statuses] == states
    for row in table.rows:
        if row.state == "failed":
            assert row.turns == 1 and row.runs == 1
        else:
            assert row.scores["length"] > 0  # every finished branch was scored
    # the session continues from the branch the summary names
    first_done = next(r for r in table.rows if r.state == "done")
    assert reopened.leaf_id == table.continue_from == first_done.leaf
    assert f"continues from branch #{first_done.index}" in table.status_line()


def test_stop_aborts_the_remote_branches_and_the_live_view_follows_the_file(wire, four, session):
    def reply(n):
        if n <= 4:  # the first turn of the four running branches: a tool call, with tokens
            return openai_reply(tool_calls=[tool_call("read", {"path": "notes.txt"}, id=f"c{n}")], usage={"prompt_tokens": 50})
        return openai_reply(text="the answer, slowly " * 20, pieces=40).slow(0.5)

    recorder(wire, reply)
    exp = grid(session, wire, 8, concurrency=4, tools=["read"])
    seen: list[int] = []

    async def main():
        task = asyncio.ensure_future(exp.run(DaskExecutor(client=four)))
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not any(s.state == "running" and s.tokens > 0 for s in exp.statuses):
            await asyncio.sleep(0.1)
        seen.extend(s.tokens for s in exp.statuses if s.state == "running")
        exp.abort()
        return await task

    result = asyncio.run(main())
    assert any(t > 0 for t in seen)  # the live view showed remote branches' tokens while they ran
    states = [r.state for r in result.rows]
    assert states[:4] == ["aborted"] * 4 and states[4:] == ["skipped"] * 4, states
    assert {r.error for r in result.rows[4:]} == {"stopped"}
    assert wire.wait_for_disconnects(4)  # the streams were closed, not left running (counted as each closes)


def test_an_unreachable_scheduler_is_one_line_and_writes_nothing(session, wire):
    before = Path(session.path).read_bytes()
    exp = grid(session, wire, 2)
    with pytest.raises(ExecutorError) as info:
        asyncio.run(exp.run(DaskExecutor("tcp://127.0.0.1:1", connect_timeout=2)))
    assert str(info.value) == "--executor tcp://127.0.0.1:1: no Dask scheduler answered there within 2 s"
    assert Path(session.path).read_bytes() == before


def _can_unshare() -> bool:
    if shutil.which("unshare") is None:
        return False
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", "mount -t tmpfs none /mnt"], capture_output=True)
    return probe.returncode == 0


@pytest.mark.skipif(
    not _can_unshare(), reason="needs unprivileged mount namespaces (unshare -rm) to start a worker that cannot see the folder"
)
def test_a_worker_without_the_session_folder_is_one_line_and_writes_nothing(session, wire, tmp_path):
    cluster, client = cluster_of(1, 1)
    dask = Path(sys.executable).with_name("dask")
    # a real worker process whose view of the filesystem lacks the session's folder (a tmpfs mounted over it)
    worker = f"{dask} worker {cluster.scheduler_address} --nthreads 1 --no-nanny --no-dashboard --name blind"
    script = f"mount -t tmpfs none {tmp_path} && exec {worker}"
    blind = subprocess.Popen(["unshare", "-rm", "sh", "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client.wait_for_workers(2, timeout=60)
        address = next(a for a, w in client.scheduler_info()["workers"].items() if w.get("name") == "blind")
        before = Path(session.path).read_bytes()
        exp = grid(session, wire, 2)
        with pytest.raises(ExecutorError) as info:
            asyncio.run(exp.run(DaskExecutor(client=client)))
        assert str(info.value) == (
            f"--executor: worker {address} cannot see the session file {session.path} (no such file there); "
            "put the session on a folder every worker shares (see the manual, Experiments: Beyond one machine)"
        )
        assert Path(session.path).read_bytes() == before
        assert wire.requests_to("openai") == []
    finally:
        blind.terminate()
        blind.wait(10)
        client.close()
        cluster.close()


def test_the_budget_holds_on_the_cluster_at_the_default_concurrency(wire, session, monkeypatch):
    """A priced model served by the wire server: at the default concurrency every branch is queued at once,
    and the budget lets two through at their estimate, on the cluster as in the kernel."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")  # before the workers start: they read keys from their environment
    times: list[float] = []

    def respond(request):  # gpt-4.1 speaks the Responses API
        times.append(time.monotonic())
        return responses_reply(text="priced", usage={"input_tokens": 1000, "output_tokens": 1000, "total_tokens": 2000}).late(0.5)

    wire.respond_with("responses", respond)
    cluster, client = cluster_of(2)
    try:
        vary = {"x": [str(i) for i in range(6)]}
        probe = Experiment(session, "Go {x}.", vary=vary, model="openai/gpt-4.1", base_url=wire.openai_url)
        exp = Experiment(session, "Go {x}.", vary=vary, model="openai/gpt-4.1", base_url=wire.openai_url, budget=2.5 * probe.estimate)
        result = asyncio.run(exp.run(DaskExecutor(client=client)))
    finally:
        client.close()
        cluster.close()
    states = [r.state for r in result.rows]
    assert states.count("done") == 2 and states.count("skipped") == 4, [(r.state, r.error) for r in result.rows]
    assert {r.error for r in result.rows if r.state == "skipped"} == {"budget"}
    assert len(times) == 2
    assert "sk-test-key" not in Path(session.path).read_text()
