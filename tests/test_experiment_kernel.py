"""``%%pi --vary`` in a real kernel, driven as JupyterLab drives it: the grid, its outputs, re-runs, errors."""

from __future__ import annotations

import json

import pytest
from kernel_client import Kernel

from pi_jupyter import Session
from pi_jupyter.experiment import load_experiment
from pi_jupyter.experiment.records import VARIANT_TYPE

pytestmark = pytest.mark.kernel

SETUP = """
%load_ext pi_jupyter
%config PiMagics.session_dir = {dir!r}
%config PiMagics.model = "offline/echo"
%config PiMagics.thinking = "off"
"""

GRID = """%%pi --vary model=offline/echo,offline/typewriter --vary "tone='very terse',warm" --repeat 2 --score length
Explain {topic} in a {tone} way."""


@pytest.fixture(scope="module")
def kernel(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("grid")
    k = Kernel(str(tmp))
    try:
        setup = k.run(SETUP.format(dir=str(tmp / "sessions")) + "\ntopic = 'recursion'")
        assert setup.status == "ok", setup.error
        k.tmp = tmp
        yield k
    finally:
        k.close()


def session_of(kernel) -> Session:
    files = sorted((kernel.tmp / "sessions").glob("*.jsonl"))
    assert len(files) == 1, files
    return Session.open(files[0], readonly=True)


def test_grid_cell_runs_siblings_and_leaves_durable_outputs(kernel):
    first = kernel.run("%%pi\nHello, I am studying recursion.", cell_id="intro")
    assert first.status == "ok", first.error
    run = kernel.run(GRID, cell_id="grid")
    assert run.status == "ok", run.error
    # the live view was displayed, then replaced by a plain progress line (no widget needed to read it)
    assert run.data("application/vnd.jupyter.widget-view+json")
    final = run.outputs[-2]["content"]["data"] if run.outputs[-2]["msg_type"] == "update_display_data" else None
    assert final is not None and "application/vnd.jupyter.widget-view+json" not in final
    assert "8 branches: 8 done" in final["text/plain"] and "cells below continue from branch #0" in final["text/plain"]
    # the value is the result: an HTML table and an SVG figure in the bundle
    value = run.outputs[-1]["content"]["data"]
    assert run.outputs[-1]["msg_type"] == "execute_result"
    assert "<table" in value["text/html"] and "<svg" in value["text/html"] and value["image/svg+xml"].startswith("<svg")
    assert "very terse" in value["text/html"] and "recursion" in value["text/html"]
    s = session_of(kernel)
    result = load_experiment(s)
    assert [r.state for r in result.rows] == ["done"] * 8
    assert {r.values["tone"] for r in result.rows} == {"very terse", "warm"}
    assert all(r.scores["length"] > 0 for r in result.rows)
    intro_leaf = [e for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "assistant"][0]["id"]
    starts = {s.raw_entry(r.variant_entry)["parentId"] for r in result.rows}
    assert starts == {intro_leaf}  # all siblings from where the cell started
    # the cell below continues from the first branch
    below = kernel.run("%%pi\nAnd now?", cell_id="below")
    assert below.status == "ok", below.error
    s = session_of(kernel)
    user = [e for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "user"][-1]
    assert result.rows[0].leaf in s.branch_ids(user["id"])


def test_rerun_adds_siblings_and_the_value_has_the_table(kernel):
    again = kernel.run(GRID + "\n", cell_id="grid")  # same cell id: new siblings beside the old set
    assert again.status == "ok", again.error
    s = session_of(kernel)
    variants = [e for e in s.raw_entries() if e.get("customType") == VARIANT_TYPE]
    assert len(variants) == 16 and len({v["parentId"] for v in variants}) == 1
    table = kernel.run("r = _\nprint(type(r).__name__, r.table().shape[0], len(r.branches), r.compare().__class__.__name__)")
    assert table.stdout.split() == ["ExperimentResult", "8", "8", "Comparison"], table.stdout + str(table.error)
    scored = kernel.run("%pi score last answered")
    assert scored.status == "ok", scored.error
    assert all(r.scores.get("answered") is True for r in load_experiment(session_of(kernel)).rows)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("--vary tone", "--vary 'tone': write KEY=V1,V2"),
        ("--vary model=offline/echo,nope/nope", "unknown model 'nope/nope'"),
        ("--vary mood=a,b", "tone"),
        ("--vary n=" + ",".join(str(i) for i in range(70)), "70 branches, more than the limit of 64"),
        ("--vary tone=a --budget -1", "--budget -1.0"),
        ("--vary tone=a,b --vary style=x --vary n=1 --repeat 3 --until-decided", "--until-decided: give a --score to decide on"),
        ("--vary tone=a,b --vary style=x --vary n=1 --executor tcp://127.0.0.1:1", "no Dask scheduler answered there within 10 s"),
    ],
)
def test_bad_grid_is_one_line_and_writes_nothing(kernel, options, message):
    if not list((kernel.tmp / "sessions").glob("*.jsonl")):  # run alone (-k, xdist): give the session a first turn
        assert kernel.run("%%pi\nHello, I am studying recursion.", cell_id="intro").status == "ok"
    before = session_of(kernel).path
    size = open(before, "rb").read()
    run = kernel.run(f"%%pi {options}\nWrite in a {{tone}} {{style}} way {{n}}.", cell_id="bad")
    assert run.error is not None
    text = run.error.get("evalue") or ""
    assert message in text and "\n" not in text.strip(), text
    assert "Traceback" not in run.stderr
    assert open(before, "rb").read() == size


REGISTER = """
from pi_jupyter.providers import register_model, Model, ModelCost
for name in ("gpt-a", "gpt-b"):
    register_model(Model(id=name, provider="openai", api="openai-completions", base_url={url!r},
                         cost=ModelCost(input=3.0, output=15.0)))
"""


def test_a_recorded_grid_replays_in_a_fresh_kernel_without_a_key(wire, tmp_path):
    """Recorded once with a key; re-run in a new kernel with no key: same tree shape and table, no request sent."""
    from wire.server import openai_reply

    wire.respond_with("openai", lambda r: openai_reply(text=f"{r.body['model']} says {str(r.body['messages'][-1]['content'])[:60]}"))
    cell = "%%pi --vary model=openai/gpt-a,openai/gpt-b --vary q=one,two\nAnswer {q}."
    setup = SETUP.format(dir=str(tmp_path / "sessions")) + REGISTER.format(url=wire.openai_url)
    tables = []
    notebook = tmp_path / "grid.ipynb"  # JupyterLab tells the kernel its notebook (JPY_SESSION_NAME)
    notebook.write_text(json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    for env in ({"OPENAI_API_KEY": "sk-test-recording"}, {"OPENAI_API_KEY": ""}):
        k = Kernel(str(tmp_path), env={**env, "JPY_SESSION_NAME": str(notebook)})
        try:
            assert k.run(setup).status == "ok"
            run = k.run(cell, cell_id="grid")
            assert run.status == "ok", run.error
            tables.append(k.run("print(_.table()[['model','q','state','turns','tokens_in','tokens_out','answer']].to_json())").stdout)
        finally:
            k.close()
    assert len(wire.requests_to("openai")) == 4  # the second kernel sent nothing
    assert tables[0] == tables[1] and "gpt-a says" in tables[0] and "Answer one" in tables[0]
    files = sorted((tmp_path / "sessions").glob("*.jsonl"))
    s = Session.open(files[0], readonly=True)
    assert "sk-test-recording" not in open(files[0]).read()
    first, second = (load_experiment(s, i) for i in __import__("pi_jupyter.experiment.records", fromlist=["x"]).experiment_ids(s))

    def shape(row):
        return [
            (e["type"], (e.get("message") or {}).get("role"))
            for e in s.raw_branch(row.leaf)[s.branch_ids(row.leaf).index(row.variant_entry) :]
        ]

    assert [shape(r) for r in first.rows] == [shape(r) for r in second.rows]


def test_interrupt_stops_the_grid_and_the_kernel_keeps_working(tmp_path):
    k = Kernel(str(tmp_path))
    try:
        assert k.run(SETUP.format(dir=str(tmp_path / "sessions"))).status == "ok"
        values = ",".join(str(i) for i in range(20))
        cell = f"%%pi --model offline/typewriter --vary n={values} --concurrency 1 --name sg\nCount slowly to {{n}} hundred."
        msg_id = k.send(cell, "slow")
        k.until(msg_id, _a_branch_finished)  # the grid is under way (one branch done, the rest to come): then interrupt
        k.interrupt()
        run = k.collect(msg_id)
        assert run.error is not None and run.error["ename"] == "RunStopped", run.error
        # the message says how the grid ended, not "nothing was answered yet"
        message = run.error["evalue"]
        assert "nothing was answered" not in message and "\n" not in message, message
        assert "grid stopped:" in message and " of 20 branches finished" in message and " not started" in message, message
        # the output is the durable progress line, not a live widget left half-way
        final = [o["content"]["data"] for o in run.outputs if o["msg_type"] == "update_display_data"]
        assert final and "application/vnd.jupyter.widget-view+json" not in final[-1] and "20 branches" in final[-1]["text/plain"]
        s = Session.open(next((tmp_path / "sessions").glob("*.jsonl")), readonly=True)
        rows = load_experiment(s).rows
        assert {r.state for r in rows} <= {"done", "aborted", "skipped"} and "skipped" in {r.state for r in rows}
        assert all(r.error == "stopped" for r in rows if r.state == "skipped")
        counts = {state: sum(r.state == state for r in rows) for state in ("done", "aborted", "skipped")}
        assert f"grid stopped: {counts['done']} of 20 branches finished" in message and f"{counts['skipped']} not started" in message
        if counts["aborted"]:
            assert f"{counts['aborted']} stopped (partial answers kept as aborted)" in message, message
        assert "the result is in sg" in message
        kept = k.run("print(type(sg).__name__, sg.table().shape[0])")
        assert kept.stdout.split() == ["ExperimentResult", "20"], kept.stdout + str(kept.error)
        after = k.run("%%pi\nStill here?", cell_id="after")
        assert after.status == "ok", after.error
    finally:
        k.close()


def test_grid_branches_run_python_in_the_notebook_namespace(tmp_path):
    """A DataFrame defined in the notebook is what each branch's python tool sees, as in a plain cell."""
    k = Kernel(str(tmp_path))
    try:
        setup = SETUP.format(dir=str(tmp_path / "sessions")) + "\nimport pandas as pd\nsales = pd.DataFrame({'amount': [1, 2, 3]})"
        assert k.run(setup).status == "ok"
        cell = "%%pi --vary n=1,2\ncall python with {{\"code\": \"print('total', sales['amount'].sum() * {n})\"}}"
        run = k.run(cell, cell_id="grid")
        assert run.status == "ok", run.error
        s = Session.open(next((tmp_path / "sessions").glob("*.jsonl")), readonly=True)
        rows = load_experiment(s).rows
        results = [
            json.dumps([e["message"]["content"] for e in s.raw_branch(r.leaf) if (e.get("message") or {}).get("role") == "toolResult"])
            for r in rows
        ]
        assert [r.state for r in rows] == ["done", "done"] and [r.tool_calls for r in rows] == [1, 1]
        assert "total 6" in results[0] and "total 12" in results[1] and "NameError" not in "".join(results), results
    finally:
        k.close()


def _a_branch_finished(msg: dict) -> bool:
    """An update of the grid's live view that counts a finished branch."""
    data = msg["content"].get("data") if msg["msg_type"] == "comm_msg" else None
    sent = data.get("content") if isinstance(data, dict) and data.get("method") == "custom" else None
    progress = sent.get("progress") if isinstance(sent, dict) else None
    return isinstance(progress, dict) and (progress.get("done") or 0) >= 1
