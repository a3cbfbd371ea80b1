"""The agent knows the notebook it lives in, in a real kernel: what reaches the vendor, and what the file keeps.

A user's cells run in a real ipykernel, driven as JupyterLab drives it (execute requests with
``cellId``), with the default settings; the model is a real vendor SDK (OpenAI's, Anthropic's)
talking to the local wire server, which records each request as the vendor would receive it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from kernel_client import Kernel
from wire.server import anthropic_reply, openai_reply, responses_reply, text_block

from pi_jupyter import Session
from pi_jupyter.messages.notebook_context import NOTEBOOK_CONTEXT_TYPE

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(600)]

PRINTED_KEY = "sk-proj-" + "Zq4" * 15
KEYS = {"OPENAI_API_KEY": "sk-test-wire-0000000000000000000000", "ANTHROPIC_API_KEY": "sk-ant-test-wire-00000000000000000000"}

SALES = """import pandas as pd
sales = pd.DataFrame({"region": ["north", "south", "east"], "revenue": [120.5, 98.0, 143.2]})
print(sales.describe())
print("deploy key:", {key!r})"""
FAILING = "sales['revenue_eur'].sum()"


def setup_cell(tmp_path: Path, server, model: str = "openai/gpt-4o") -> str:
    return (
        "%load_ext pi_jupyter\n"
        f"%config PiMagics.session_dir = {str(tmp_path / 'sessions')!r}\n"
        f"%config PiMagics.model = {model!r}\n"
        f"%config PiMagics.base_url = {server.url!r}\n"
        '%config PiMagics.thinking = "off"'
    )


@pytest.fixture
def kernel(tmp_path):
    k = Kernel(str(tmp_path), env=KEYS)
    yield k
    k.close()


def ok(kernel: Kernel, code: str, cell_id: str | None = None):
    out = kernel.run(code, cell_id=cell_id)
    assert out.status == "ok", out.error
    return out


def session_text(tmp_path: Path) -> str:
    (path,) = sorted((tmp_path / "sessions").glob("*.jsonl"))
    return path.read_text(encoding="utf-8")


def records(tmp_path: Path) -> list[dict]:
    return [e for e in map(json.loads, session_text(tmp_path).splitlines()) if e.get("customType") == NOTEBOOK_CONTEXT_TYPE]


def test_why_did_my_last_cell_fail_sends_the_failing_code_and_the_error(kernel, tmp_path, wire):
    """The issue's example: a DataFrame cell, a cell failing with KeyError, then ``%%pi Why did my last cell fail?``."""
    wire.queue("responses", responses_reply("The frame has no column revenue_eur; use sales['revenue'].sum()."))
    ok(kernel, setup_cell(tmp_path, wire), "setup")
    ok(kernel, SALES.replace("{key!r}", repr(PRINTED_KEY)), "make-sales")
    failed = kernel.run(FAILING, cell_id="sum-eur")
    assert failed.status == "error" and failed.error["ename"] == "KeyError"
    answer = ok(kernel, "%%pi\nWhy did my last cell fail?", "ask")
    [request] = wire.requests_to("responses")
    body = json.dumps(request.body, ensure_ascii=False)
    assert FAILING in body and "KeyError: 'revenue_eur'" in body  # the failing code and the error reach the model
    assert "count    3.000000" in body  # what the first cell printed
    assert PRINTED_KEY not in body and PRINTED_KEY[:16] not in body  # a key a cell printed does not
    texts = [part["text"] for item in request.body["input"] if item.get("role") == "user" for part in item["content"]]
    assert texts[-1] == "Why did my last cell fail?"  # the prompt comes last, the notebook just before it
    assert texts[-2].startswith("notebook since your last turn: 2 cells, 1 error\n")
    assert "(cell sum-eur)" in texts[-2] and "(cell make-sal)" in texts[-2]
    saved = session_text(tmp_path)  # the file holds what the model was told, and no key
    assert FAILING in saved and "KeyError: 'revenue_eur'" in saved and PRINTED_KEY not in saved
    [record] = records(tmp_path)
    assert record["type"] == "custom_message" and record["display"] is True
    assert record["details"]["errors"] == 1 and [c["id"] for c in record["details"]["cells"]] == ["make-sales", "sum-eur"]
    # the user sees one folded line in the cell's output, and the answer
    shown = "".join(answer.data("text/markdown"))
    assert "*notebook since your last turn: 2 cells, 1 error*" in shown and "use sales['revenue'].sum()" in shown


def test_a_plot_reaches_a_model_that_takes_images_as_an_image(kernel, tmp_path, wire):
    wire.queue("anthropic", anthropic_reply([text_block("A rising line.")]))
    wire.queue("openai", openai_reply("I cannot see images."))
    ok(kernel, setup_cell(tmp_path, wire, "anthropic/claude-sonnet-4-5"), "setup")
    ok(kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('revenue by month')", "plot")
    ok(kernel, "%%pi\nWhat does my plot show?", "ask")
    [request] = wire.requests_to("anthropic")
    blocks = [b for m in request.body["messages"] if m["role"] == "user" for b in m["content"] if isinstance(b, dict)]
    images = [b for b in blocks if b.get("type") == "image"]
    assert len(images) == 1 and images[0]["source"]["media_type"] == "image/png"
    assert base64.b64decode(images[0]["source"]["data"]).startswith(b"\x89PNG")  # the plot itself
    told = next(b["text"] for b in blocks if b.get("type") == "text" and b["text"].startswith("notebook since"))
    assert told.startswith("notebook since your last turn: 1 cell, 1 image\n") and "[image 1: image/png " in told
    # stored once, in pi's image format, in the record before the prompt
    [record] = records(tmp_path)
    assert [b["type"] for b in record["content"]] == ["text", "image"] and record["content"][1]["mimeType"] == "image/png"
    assert session_text(tmp_path).count(images[0]["source"]["data"][:64]) == 1
    # a model without image input reads a placeholder where the picture was
    ok(kernel, "plt.plot([2, 2, 2])", "plot-2")
    ok(kernel, "%%pi --model openai/gpt-test\nAnd now?", "ask-2")
    [text_only] = wire.requests_to("openai")
    sent = json.dumps(text_only.body)
    assert "(image omitted: model does not support images)" in sent and "image_url" not in sent


def test_the_feature_off_sends_nothing_of_the_notebook(kernel, tmp_path, wire):
    wire.queue_default("openai", openai_reply("ok"))
    ok(kernel, setup_cell(tmp_path, wire, "openai/gpt-test"), "setup")
    ok(kernel, "x = 41\nprint('forty-one')", "x")
    ok(kernel, "%%pi --no-notebook\nHello?", "no-notebook")
    ok(kernel, "%config PiMagics.notebook_context = False")
    ok(kernel, "y = 'secret plan'\nprint(y)", "y")
    ok(kernel, "%%pi\nStill there?", "off")
    for request in wire.requests_to("openai"):
        sent = json.dumps(request.body)
        assert "notebook since" not in sent and "forty-one" not in sent and "secret plan" not in sent
    assert not records(tmp_path) and "forty-one" not in session_text(tmp_path)
    ok(kernel, "%config PiMagics.notebook_context = True")
    ok(kernel, "z = 3", "z")
    ok(kernel, "%%pi\nAnd now?", "on")
    last = json.dumps(wire.requests_to("openai")[-1].body)
    assert "z = 3" in last and "secret plan" not in last  # told what ran since the last turn, not before it


def test_branches_keep_what_they_were_told(kernel, tmp_path, wire):
    """A re-run (a sibling) is told what ran since its own start; a grid's branches share one record; a
    checkout never sends another branch's record."""
    wire.queue_default("openai", openai_reply("ok"))
    ok(kernel, setup_cell(tmp_path, wire, "openai/gpt-test"), "setup")
    ok(kernel, "a = 1", "a")
    ok(kernel, "%%pi\nfirst", "first")
    ok(kernel, "b = 2", "b")
    ok(kernel, "%%pi\nsecond", "second")
    ok(kernel, "c = 3", "c")
    ok(kernel, "%%pi\nsecond", "second")  # a re-run forks from where the cell started
    told = [r["content"][0]["text"] for r in records(tmp_path)]
    assert "a = 1" in told[0]
    assert "b = 2" in told[1] and "c = 3" not in told[1]
    assert "b = 2" in told[2] and "c = 3" in told[2] and "a = 1" not in told[2]  # since its start node's turn
    sibling_request = json.dumps(wire.requests_to("openai")[-1].body)
    assert sibling_request.count("notebook since your last turn") == 2  # its own, and the first turn's

    ok(kernel, "d = 4", "d")
    ok(kernel, "%%pi --vary tone=warm,terse\nSay it {tone}.", "grid")
    grid = records(tmp_path)[-1]
    assert "d = 4" in grid["content"][0]["text"]
    s = Session.open(next((tmp_path / "sessions").glob("*.jsonl")), readonly=True)
    users = [e for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "user" and "Say it" in str(e["message"])]
    assert len(users) == 2 and all(grid["id"] in s.branch_ids(u["id"]) for u in users)  # one record, both branches

    first_end = next(e["id"] for e in s.raw_entries() if e.get("type") == "message" and e["message"]["role"] == "assistant")
    ok(kernel, f"%pi checkout {first_end}", "co")
    ok(kernel, "e = 5", "e")
    ok(kernel, "%%pi\nafter the checkout", "after")
    request = json.dumps(wire.requests_to("openai")[-1].body)
    assert "e = 5" in request and "d = 4" in request  # what ran since the checked-out turn, in this kernel
    assert request.count("notebook since your last turn") == 2  # the first turn's and its own: no other branch's
    assert "Say it" not in request


def test_after_a_restart_the_first_turn_is_told_what_changed(tmp_path, wire):
    k = Kernel(str(tmp_path), env=KEYS)
    try:
        ok(k, setup_cell(tmp_path, wire, "offline/echo"), "setup")
        tool = 'call python with {{"code": "import threading\\nplan = \'A\'\\nlock = threading.Lock()"}}'
        ok(k, f"%%pi\n{tool}", "tool")
        assert ok(k, "print(plan, type(lock).__name__)").stdout.strip() == "A lock"
    finally:
        k.close()
    path = next((tmp_path / "sessions").glob("*.jsonl"))
    k = Kernel(str(tmp_path), env=KEYS)  # a new kernel: nothing in its namespace
    try:
        ok(k, setup_cell(tmp_path, wire, "offline/echo"), "setup")
        ok(k, f"%pi open {path}", "open")
        ok(k, "x = 1", "x")
        answer = ok(k, "%%pi\nWhat changed?", "ask")
        assert "could not restore lock" in answer.stdout + "".join(answer.data("text/markdown"))
    finally:
        k.close()
    [record] = records(tmp_path)
    text = record["content"][0]["text"]
    assert text.startswith("notebook since your last turn: kernel restarted, 1 cell\n")
    assert "it was restarted, or this conversation was opened in a new kernel" in text
    assert "Variables your branch's tools set: `lock`, `plan`, `threading`." in text  # the world's record of the branch
    assert "The kernel holds them again: `plan`, `threading`." in text  # restored before the turn
    assert "Not in the kernel now (run the cells that make them, or make them again): `lock`." in text
    assert "could not restore lock (_thread.lock: not serializable; %pi rerun " in text  # and the call that made it is offered
    assert record["details"]["kernelChanged"] is True and record["details"]["restart"]["missing"] == ["lock"]
    shown = "".join(answer.data("text/markdown"))
    assert "With it I was sent the notebook since my last turn: kernel restarted, 1 cell." in shown


def test_headless_runs_tell_the_agent_too(tmp_path, wire):
    """nbclient (as ``jupyter execute`` and papermill run a notebook): no browser, no cell ids, the same context."""
    import nbformat
    from notebook_runs import run

    wire.queue_default("openai", openai_reply("ok"))
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(setup_cell(tmp_path, wire, "openai/gpt-test")),
        nbformat.v4.new_code_cell(SALES.replace("{key!r}", repr(PRINTED_KEY))),
        nbformat.v4.new_code_cell(FAILING),
        nbformat.v4.new_code_cell("%%pi\nWhy did my last cell fail?"),
    ]
    path = tmp_path / "headless.ipynb"
    nbformat.write(nb, path)
    run(path, frontend="nbclient", env=KEYS, allow_errors=True)
    [request] = wire.requests_to("openai")
    body = json.dumps(request.body, ensure_ascii=False)
    assert FAILING in body and "KeyError: 'revenue_eur'" in body and PRINTED_KEY not in body
    [record] = records(tmp_path)
    assert [c.get("n") for c in record["details"]["cells"]] == [2, 3] and "id" not in record["details"]["cells"][0]


def test_the_notebook_tool_in_the_kernel(kernel, tmp_path, wire):
    ok(kernel, setup_cell(tmp_path, wire, "offline/echo"), "setup")
    ok(kernel, "import pandas as pd\nsales = pd.DataFrame({'region': ['north'], 'revenue': [1.5]})", "data")
    ok(kernel, '%%pi --no-notebook\ncall notebook with {{"action": "read", "cell": "In[2]"}}', "read")
    ok(kernel, '%%pi --no-notebook\ncall notebook with {{"action": "variables", "name": "sales"}}', "vars")
    results = [
        e["message"] for e in map(json.loads, session_text(tmp_path).splitlines()) if e.get("message", {}).get("role") == "toolResult"
    ]
    assert "sales = pd.DataFrame" in results[0]["content"][0]["text"]
    assert results[1]["content"][0]["text"].startswith("sales: pandas.DataFrame 1×2, columns: region ")
