"""Experiments on the offline model: the grid as sibling branches, records, scores, bad input, replay."""

from __future__ import annotations

import asyncio
import os

import pytest

from pi_jupyter import Session
from pi_jupyter.experiment import BranchSession, GridError, experiment, load_experiment, parse_vary, register_scorer
from pi_jupyter.experiment.records import SCORE_TYPE, VARIANT_TYPE
from pi_jupyter.messages import text_of


@pytest.fixture
def session(tmp_path):
    (tmp_path / "notes.txt").write_text("the loss diverges at step 40\n")
    s = Session.open(tmp_path / "study.jsonl", create=True, cwd=str(tmp_path))
    s.append_message({"role": "user", "content": "Hello", "timestamp": 1})
    s.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "Hi."}],
            "stopReason": "stop",
            "timestamp": 2,
            "api": "offline",
            "provider": "offline",
            "model": "echo",
            "usage": {
                "input": 1,
                "output": 1,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
        }
    )
    return s


def run(coro):
    return asyncio.run(coro)


def test_grid_is_siblings_from_the_start_with_bound_prompts(session):
    start = session.leaf_id
    result = run(
        experiment(
            session,
            "Use the read tool on notes.txt and explain it in a {tone} way.",
            vary={"model": ["offline/echo", "offline/typewriter"], "tone": ["terse", "warm"]},
            repeat=2,
            tools=["read"],
        )
    )
    rows = result.rows
    assert len(rows) == 8 and all(r.state == "done" for r in rows)
    # every branch starts with its variant record, a child of the start node
    firsts = [session.raw_entry(c) for c in session.child_ids(start) if session.raw_entry(c).get("customType") == VARIANT_TYPE]
    assert len(firsts) == 8
    assert sorted((f["data"]["values"]["model"], f["data"]["values"]["tone"], f["data"]["repeat"]) for f in firsts) == sorted(
        (m, t, r) for m in ("offline/echo", "offline/typewriter") for t in ("terse", "warm") for r in (0, 1)
    )
    # each branch holds its own prompt, its tool call and its own model
    for row in rows:
        ctx = session.context(row.leaf)
        users = [text_of(m.content) for m in ctx.messages if m.role == "user"]
        assert users[-1] == f"Use the read tool on notes.txt and explain it in a {row.values['tone']} way."
        assert row.tool_calls == 1 and row.turns == 1
        assert ctx.model.provider + "/" + ctx.model.model_id == row.values["model"]
        assert any(m.role == "toolResult" and "loss diverges" in m.text for m in ctx.messages)
    # distinct leaves, and the session continues from the first combination's first repeat
    assert len(set(result.branches)) == 8
    assert result.continue_from == rows[0].leaf == session.leaf_id
    assert f"continues from branch #0 (leaf {rows[0].leaf})" in result.summary()


def test_table_is_rebuilt_from_the_file_alone(session):
    result = run(experiment(session, "Say {word}.", vary={"word": ["yes", "no", "maybe"]}, scorers=["length", "answered"]))
    live = result.table()
    reopened = load_experiment(Session.open(session.path, readonly=True)).table()
    assert list(live.columns) == list(reopened.columns)
    assert live.equals(reopened)
    assert {
        "word",
        "repeat",
        "state",
        "stop_reason",
        "turns",
        "tool_calls",
        "tokens_in",
        "tokens_out",
        "cost",
        "duration_s",
        "answer",
    } <= set(live.columns)
    assert list(live["word"]) == ["yes", "no", "maybe"]
    assert live["answered"].tolist() == [True, True, True]
    assert all(length >= len(r.answer) > 0 for length, r in zip(live["length"], result.rows, strict=True))


def test_scores_are_entries_on_the_leaf_with_name_and_version(session):
    def keywords(branch):
        return {"has_yes": "yes" in branch.answer, "words": len(branch.answer.split())}

    keywords.version = "2"
    result = run(experiment(session, "Say {word}.", vary={"word": ["yes", "no"]}, scorers=[keywords]))
    scores = [e for e in session.raw_entries() if e.get("customType") == SCORE_TYPE]
    assert len(scores) == 2
    for e in scores:
        assert e["data"]["scorer"] == "keywords" and e["data"]["version"] == "2"
        assert e["parentId"] in result.branches
    table = result.table()
    assert table["keywords.has_yes"].tolist() == [True, False]
    # scoring later adds a column, and the leaf of each branch does not move
    leaves = list(result.branches)
    result.score(lambda b: b.values["word"] == "no")
    assert result.branches == leaves
    assert table.shape[1] + 1 == result.table().shape[1]
    assert load_experiment(Session.open(session.path, readonly=True)).table()["<lambda>"].tolist() == [False, True]


def test_judge_scorer_offline_is_deterministic(session):
    first = run(experiment(session, "Say {word}.", vary={"word": ["correct and clear", "nothing"]}, scorers=["judge"])).table()
    second = run(experiment(session, "Say {word}.", vary={"word": ["correct and clear", "nothing"]}, scorers=["judge"])).table()
    assert first["judge"].tolist() == second["judge"].tolist()
    assert first["judge"][0] > first["judge"][1]


def test_registered_scorer_by_name(session):
    register_scorer(lambda b: 1.5, name="constant")
    result = run(experiment(session, "Hi {x}", vary={"x": ["a"]}, scorers=["constant"]))
    assert result.table()["constant"].tolist() == [1.5]
    with pytest.raises(ValueError, match="unknown scorer 'nope'"):
        run(experiment(session, "Hi {x}", vary={"x": ["a"]}, scorers=["nope"]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"vary": {"model": ["offline/nope"]}}, "unknown model 'offline/nope'"),
        ({"vary": {"tone": []}}, "--vary tone: no values"),
        ({"vary": {}, "prompt": "In a {tone} way"}, "{tone} is bound by no --vary"),
        ({"vary": {"x": [str(i) for i in range(10)]}, "repeat": 10, "prompt": "{x}"}, "100 branches, more than the limit of 64"),
        ({"budget": -1.0}, "--budget -1.0"),
        ({"vary": {"thinking": ["huge"]}}, "unknown level 'huge'"),
        ({"vary": {"tools": ["read+sing"]}}, "unknown tool 'sing'"),
        ({"vary": {"tone": ["a"]}, "prompt": "no field"}, "the prompt has no {tone}"),
        ({"repeat": 0}, "--repeat 0"),
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(session, kwargs, message):
    before = open(session.path, "rb").read()
    prompt = kwargs.pop("prompt", "Hello")
    with pytest.raises(GridError) as err:
        run(experiment(session, prompt, **kwargs))
    assert message in str(err.value) and "\n" not in str(err.value)
    assert open(session.path, "rb").read() == before


def test_parse_vary_quoting_and_errors():
    assert parse_vary(["tone='very terse, dry',warm", "model=a/b"]) == {"tone": ["very terse, dry", "warm"], "model": ["a/b"]}
    for bad, message in [
        (["tone"], "write KEY=V1,V2"),
        (["tone="], "no values"),
        (["a=1", "a=2"], "given twice"),
        (["1x=a"], "not a name"),
    ]:
        with pytest.raises(GridError, match=message):
            parse_vary(bad)


def test_grid_over_the_limit_runs_with_yes(session):
    result = run(experiment(session, "{x}", vary={"x": [str(i) for i in range(5)]}, limit=4, yes=True, concurrency=5))
    assert [r.state for r in result.rows] == ["done"] * 5


def test_rerun_makes_new_siblings_and_replays_the_same_table(session):
    start = session.leaf_id
    kwargs = {"vary": {"model": ["offline/echo", "offline/typewriter"], "tone": ["terse", "warm"]}, "start": start, "tools": ["read"]}
    first = run(experiment(session, "Use the read tool on notes.txt in a {tone} way.", **kwargs))
    again = run(experiment(session, "Use the read tool on notes.txt in a {tone} way.", replay=True, **kwargs))
    assert set(first.branches).isdisjoint(again.branches)
    variants = [c for c in session.child_ids(start) if session.raw_entry(c).get("customType") == VARIANT_TYPE]
    assert len(variants) == 8  # two sets of four siblings beside each other
    cols = ["model", "tone", "repeat", "state", "stop_reason", "turns", "tool_calls", "tokens_in", "tokens_out", "answer"]
    assert first.table()[cols].equals(again.table()[cols])

    def shape(leaf, var):
        return [(e["type"], (e.get("message") or {}).get("role")) for e in session.raw_branch(leaf)[session.branch_ids(leaf).index(var) :]]

    for a, b in zip(first.rows, again.rows, strict=True):
        assert shape(a.leaf, a.variant_entry) == shape(b.leaf, b.variant_entry)
        # replayed: answers come from the recording (provider replay serves them at no cost)
        assert b.cost == 0.0


def test_replay_without_recording_is_refused(session):
    before = open(session.path, "rb").read()
    with pytest.raises(GridError, match="no recorded branch"):
        run(experiment(session, "Never run {x}", vary={"x": ["a"]}, replay=True))
    assert open(session.path, "rb").read() == before


def test_budget_zero_on_free_model_runs_and_stop_skips(session):
    from pi_jupyter.experiment import Experiment

    exp = Experiment(session, "{x}", vary={"x": ["a", "b", "c"]}, budget=0.0, concurrency=1)
    result = run(exp.run())
    assert [r.state for r in result.rows] == ["done"] * 3  # the offline model costs nothing

    exp = Experiment(session, "{x}", vary={"x": ["a", "b", "c"]}, concurrency=1)
    exp.abort()
    result = run(exp.run())
    assert [r.state for r in result.rows] == ["skipped"] * 3
    assert [r.error for r in result.rows] == ["stopped"] * 3
    assert {k: exp.progress()[k] for k in ("done", "running", "queued", "failed", "skipped", "total")} == {
        "done": 0,
        "running": 0,
        "queued": 0,
        "failed": 0,
        "skipped": 3,
        "total": 3,
    }
    assert load_experiment(Session.open(session.path)).grid.skipped == {0: "stopped", 1: "stopped", 2: "stopped"}


def test_branch_session_keeps_its_own_leaf(session):
    start = session.leaf_id
    a, b = BranchSession(session, start), BranchSession(session, start)
    ida = a.append_custom("x", {"n": 1})
    idb = b.append_custom("x", {"n": 2})
    a.append_custom("x", {"n": 3})
    assert session.leaf_id == start
    assert session.raw_entry(ida)["parentId"] == start and session.raw_entry(idb)["parentId"] == start
    assert session.raw_entry(a.leaf_id)["parentId"] == ida and b.leaf_id == idb
    assert os.path.exists(session.path)


def test_replay_serves_the_latest_recording_of_each_variant(session, wire, monkeypatch):
    """The grid ran twice against a real model's wire (its answers changed); a replay serves each variant the answer
    of its latest run, not its first."""
    from wire.server import openai_reply

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-" + "r" * 24)
    options = {"vary": {"how": ["briefly", "slowly"]}, "model": "openai/gpt-test", "base_url": wire.openai_url, "concurrency": 1}
    wire.queue("openai", openai_reply(text="first run, briefly"), openai_reply(text="first run, slowly"))
    run(experiment(session, "Say it {how}.", **options))
    wire.queue("openai", openai_reply(text="second run, briefly"), openai_reply(text="second run, slowly"))
    latest = run(experiment(session, "Say it {how}.", **options))
    asked = len(wire.requests)
    replayed = run(experiment(session, "Say it {how}.", replay=True, **options))
    assert len(wire.requests) == asked  # served from the file
    assert [r.answer for r in replayed.rows] == [r.answer for r in latest.rows] == ["second run, briefly", "second run, slowly"]
