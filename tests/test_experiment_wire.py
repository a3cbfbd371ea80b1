"""Experiments through the real vendor SDKs against the local wire server: failures, budget, 429s, replay."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest
from wire.helpers import wire_model
from wire.server import http_error, openai_reply

from pi_jupyter import Session
from pi_jupyter.experiment import Experiment, GridError, experiment, load_experiment
from pi_jupyter.providers import register_model
from pi_jupyter.providers.registry import REGISTRY


@pytest.fixture
def models(wire, monkeypatch):
    """Two OpenAI-compatible models served by the wire server, registered as a user registers a custom endpoint."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-key")
    made = [register_model(wire_model(wire, id=name)) for name in ("gpt-a", "gpt-b")]
    yield [m.ref for m in made]
    for m in made:
        REGISTRY.unregister(m.ref)


@pytest.fixture
def session(tmp_path):
    return Session.open(tmp_path / "grid.jsonl", create=True, cwd=str(tmp_path))


def _by_model(request) -> str:
    return request.body.get("model", "")


def test_concurrent_branches_stream_through_the_sdk(wire, models, session):
    in_flight, peak, lock = [0], [0], threading.Lock()

    def respond(request):
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.2)
        with lock:
            in_flight[0] -= 1
        return openai_reply(text=f"answer from {_by_model(request)}", usage={"prompt_tokens": 10, "completion_tokens": 5})

    wire.respond_with("openai", respond)
    result = asyncio.run(experiment(session, "Rate {x}.", vary={"model": models, "x": ["a", "b", "c"]}, concurrency=6))
    assert [r.state for r in result.rows] == ["done"] * 6
    assert peak[0] > 1  # branches were in flight together
    table = result.table()
    assert table["answer"].tolist() == [f"answer from {m.split('/')[1]}" for m in models for _ in range(3)]
    assert table["tokens_in"].tolist() == [10] * 6 and table["tokens_out"].tolist() == [5] * 6
    assert (table["cost"] > 0).all()
    assert "sk-test-key" not in open(session.path).read()


def test_a_failed_branch_is_a_row_with_its_error(wire, models, session):
    def respond(request):
        if "bad" in str(request.body["messages"]):
            return http_error(400, "this prompt is not allowed")
        return openai_reply(text="fine")

    wire.respond_with("openai", respond)
    vary = {"x": ["bad", "good", "also good"]}
    result = asyncio.run(experiment(session, "Say {x}.", vary=vary, model=models[0], scorers=["length"], max_retries=0))
    states = [r.state for r in result.rows]
    assert states == ["failed", "done", "done"]
    assert "not allowed" in result.rows[0].error
    assert result.continue_from == result.rows[1].leaf  # the first branch that finished
    # the failed branch has no score, yet the column is there (and empty for it) in every view of the table
    assert list(result.table()["length"].isna()) == [True, False, False]
    assert ">length</th>" in result.table_html() and "length" in result.text().splitlines()[0]
    assert load_experiment(Session.open(session.path)).rows[0].state == "failed"


def test_budget_stops_launching_and_the_table_says_which_were_skipped(wire, models, session):
    # 1M input tokens per reply at $3/M: every branch costs about $3
    wire.respond_with("openai", lambda r: openai_reply(text="costly", usage={"prompt_tokens": 1_000_000, "completion_tokens": 0}))
    result = asyncio.run(experiment(session, "Go {x}.", vary={"x": ["1", "2", "3", "4", "5"]}, model=models[0], budget=7.0, concurrency=1))
    states = [r.state for r in result.rows]
    assert states[:2] == ["done", "done"] and states[2:] == ["skipped"] * 3
    assert [r.error for r in result.rows[2:]] == ["budget"] * 3
    assert sum(r.cost for r in result.rows) <= 7.0
    assert len(wire.requests_to("openai")) == 2
    assert load_experiment(Session.open(session.path)).grid.skipped == {2: "budget", 3: "budget", 4: "budget"}


def test_429_with_retry_after_slows_the_whole_grid(wire, models, session):
    times: list[float] = []
    first = [True]
    lock = threading.Lock()

    def respond(request):
        with lock:
            times.append(time.monotonic())
            if first[0]:
                first[0] = False
                return http_error(429, "Rate limit reached. Please retry after 1.5 seconds.", headers={"retry-after": "1.5"})
        return openai_reply(text="ok").slow(0.05)

    wire.respond_with("openai", respond)
    exp = Experiment(session, "Go {x}.", vary={"x": [str(i) for i in range(6)]}, model=models[0], concurrency=1, retry_delay_ms=10)
    result = asyncio.run(exp.run())
    assert [r.state for r in result.rows] == ["done"] * 6  # no branch failed because of the 429
    # every call after the 429 waited for Retry-After, not just the branch that got it
    assert all(t - times[0] >= 1.4 for t in times[1:])
    assert exp.limiter.stats()["openai"]["rate_limited"] == 1


def test_rerun_without_a_key_replays_every_branch(wire, models, session, monkeypatch):
    wire.respond_with("openai", lambda r: openai_reply(text=f"recorded {_by_model(r)} {len(str(r.body))}"))
    first = asyncio.run(experiment(session, "Answer {q}.", vary={"model": models, "q": ["one", "two"]}, repeat=2))
    sent = len(wire.requests_to("openai"))
    monkeypatch.delenv("OPENAI_API_KEY")
    again = asyncio.run(experiment(session, "Answer {q}.", vary={"model": models, "q": ["one", "two"]}, repeat=2))
    assert len(wire.requests_to("openai")) == sent  # nothing was sent: every branch was replayed
    cols = ["model", "q", "repeat", "state", "turns", "tool_calls", "tokens_in", "tokens_out", "answer"]
    assert first.table()[cols].equals(again.table()[cols])
    # a prompt that was never recorded, without a key, is refused before anything runs
    before = open(session.path, "rb").read()
    with pytest.raises(GridError, match="no API key"):
        asyncio.run(experiment(session, "New {q}.", vary={"model": models, "q": ["x"]}))
    assert open(session.path, "rb").read() == before


@pytest.mark.parametrize("repeat", [1, 3], ids=["once", "repeated"])
def test_budget_at_the_default_concurrency_counts_the_running_branches(wire, models, session, repeat):
    """Every branch is queued at once (the default concurrency runs them all together): the budget
    must count each running branch at its estimate, or it launches them all before any has a cost."""
    wire.respond_with("openai", lambda r: openai_reply(text="priced", usage={"prompt_tokens": 1004, "completion_tokens": 1000}).late(0.3))
    vary = {"x": ["1", "2", "3", "4", "5"]}
    probe = Experiment(session, "Go {x}.", vary=vary, repeat=repeat, model=models[0])
    assert probe.concurrency >= len(probe.specs)  # the default runs this whole grid at once
    each = probe.estimate
    exp = Experiment(session, "Go {x}.", vary=vary, repeat=repeat, model=models[0], budget=2.5 * each)
    result = asyncio.run(exp.run())
    states = [r.state for r in result.rows]
    assert states.count("done") == 2, states  # two fit the budget at their estimate; a third would pass it
    assert states.count("skipped") == len(states) - 2 and {r.error for r in result.rows if r.state == "skipped"} == {"budget"}
    assert len(wire.requests_to("openai")) == 2
    assert sum(r.cost for r in result.rows) <= 2.5 * each
