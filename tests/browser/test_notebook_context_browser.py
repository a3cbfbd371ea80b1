"""The agent knows the notebook, in JupyterLab with its DEFAULT settings: the issue's example as a user meets it.

A DataFrame cell prints a summary (and, by mistake, a key), the next cell fails with KeyError,
then ``%%pi Why did my last cell fail?``. The model is OpenAI's SDK talking to the local wire
server: the request it receives holds the failing code and the KeyError and not the key; the
cell shows one folded line, "notebook since your last turn: 3 cells, 1 error", which opens on
what the model was told; the session file keeps it, with JupyterLab's cell ids.
"""

from __future__ import annotations

import json

import pytest
from wire.server import responses_reply

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

KEY = "sk-proj-" + "Wq7" * 15

SETUP = """
%load_ext pi_jupyter
%config PiMagics.model = "openai/gpt-4o"
%config PiMagics.base_url = {url!r}
%env OPENAI_API_KEY=sk-test-wire-0000000000000000000000
%pi new notebook-context-demo
print("setup-end")
"""

SALES = """import pandas as pd
sales = pd.DataFrame({{"region": ["north", "south", "east"], "revenue": [120.5, 98.0, 143.2]}})
print(sales.describe())
print("deploy key:", {key!r})"""

FAILING = "sales['revenue_eur'].sum()"
ASK = "%%pi\nWhy did my last cell fail?"


def test_why_did_my_last_cell_fail_in_jupyterlab(lab, wire):
    wire.queue("responses", responses_reply("The frame has no column revenue_eur; the column is called revenue."))
    path = lab.write_notebook("nbctx.ipynb", [SETUP.format(url=wire.url), SALES.format(key=KEY), FAILING, ASK])
    lab.open_notebook("nbctx.ipynb")
    lab.run_cell(0)
    lab.wait_for_output(0, "setup-end")
    lab.run_cell(1)
    lab.wait_for_output(1, "count")
    lab.run_cell(2)
    lab.wait_for_execution_count(2)
    lab.run_cell(3)
    out = lab.wait_for_static(3, "the column is called revenue", timeout=90)
    # one folded line in the cell (the setup cell is one of the user's cells too); the text the model was sent opens from it
    assert "notebook since your last turn: 3 cells, 1 error" in out
    fold = lab.cell(3).locator("details", has_text="notebook since your last turn")
    assert not fold.first.evaluate("d => d.open")
    fold.first.locator("summary").click()
    opened = fold.first.inner_text()
    assert FAILING in opened and "KeyError: 'revenue_eur'" in opened and KEY not in opened
    lab.screenshot("notebook_context.png", lab.cell(3))
    # what reached the model
    [request] = wire.requests_to("responses")
    body = json.dumps(request.body, ensure_ascii=False)
    assert FAILING in body and "KeyError: 'revenue_eur'" in body and KEY not in body
    assert "sk-test-wire-0000" not in body and "%env OPENAI_API_KEY=[REDACTED:OPENAI_API_KEY]" in body  # typed in a cell: redacted
    # what the file keeps: the same, with JupyterLab's cell ids
    # the server's folder is shared with other browser tests: this notebook's session is the one named by its %pi new
    [session] = [p for p in (path.parent / "pi-sessions").glob("*.jsonl") if "notebook-context-demo" in p.read_text()]
    text = session.read_text()
    assert FAILING in text and KEY not in text
    [record] = [e for e in map(json.loads, text.splitlines()) if e.get("customType") == "pi_jupyter.notebook_context"]
    import nbformat

    ids = [c.id for c in nbformat.read(path, as_version=4).cells]
    assert [c["id"] for c in record["details"]["cells"]] == ids[:3]
