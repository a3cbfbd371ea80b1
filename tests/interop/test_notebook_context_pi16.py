"""A session whose turns were told the notebook (DESIGN 16) opens in pi 1.6 with the same context.

A real kernel runs a user's cells (a DataFrame printed, a matplotlib plot, a cell failing with
KeyError), then ``%%pi`` cells: each turn's notebook context is a ``custom_message`` holding
text and the plot in pi's image format. pi 1.6's own ``SessionManager`` and ``convertToLlm``
rebuild the same messages from the file, and pi-ai's adapters build the same request as ours:
the plot as an image for a model that takes images, pi's placeholder for one that does not.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pi_jupyter.messages.notebook_context import NOTEBOOK_CONTEXT_TYPE
from pi_jupyter.session import Session

from .test_pi16_interop import _comparable, _model, _our_body, pi16  # noqa: F401 - pi16 is a fixture
from .test_session_interop import assert_same, ours

pytestmark = [pytest.mark.interop, pytest.mark.kernel]

CELLS = [
    ("import pandas as pd\nsales = pd.DataFrame({'region': ['north', 'south'], 'revenue': [120.5, 98.0]})\nprint(sales)", "data"),
    ("import matplotlib.pyplot as plt\nplt.plot([1, 3, 2])\nplt.title('revenue')", "plot"),
    ("sales['revenue_eur'].sum()", "fail"),
    ("%%pi\nWhy did my last cell fail?", "ask"),
    ("sales['revenue'].sum()", "fixed"),
    ("%%pi\nAnd now?", "again"),
]


def _vision(api: str) -> dict[str, Any]:
    return {**_model(api), "input": ["text", "image"]}


@pytest.fixture(scope="module")
def written(tmp_path_factory) -> Path:
    from kernel_client import Kernel

    folder = tmp_path_factory.mktemp("notebook-context")
    kernel = Kernel(str(folder))
    try:
        setup = "%load_ext pi_jupyter\n%config PiMagics.session_dir = {!r}\n%config PiMagics.model = 'offline/echo'\n"
        assert kernel.run(setup.format(str(folder / "sessions"))).status == "ok"
        for code, cell in CELLS:
            out = kernel.run(code, cell_id=cell)
            assert out.status == "ok" or cell == "fail", out.error
    finally:
        kernel.close()
    [path] = (folder / "sessions").glob("*.jsonl")
    return path


def test_pi16_rebuilds_the_notebook_context_we_recorded(pi16, written):  # noqa: F811 - the fixture
    session = Session.open(written, readonly=True)
    records = [e for e in session.raw_entries() if e.get("customType") == NOTEBOOK_CONTEXT_TYPE]
    assert [e["type"] for e in records] == ["custom_message", "custom_message"]
    first = records[0]["content"]
    assert [b["type"] for b in first] == ["text", "image"] and first[1]["mimeType"] == "image/png"
    assert "KeyError: 'revenue_eur'" in first[0]["text"]
    [pi] = pi16("pi_session_oracle.mjs", [{"op": "context", "file": str(written)}])
    assert_same(ours(written, pi["leafId"]), pi, "a notebook whose turns were told the notebook")
    roles = [m["role"] for m in pi["messages"]]
    assert roles == ["system", "custom", "user", "assistant", "custom", "user", "assistant"]
    assert pi["messages"][1]["customType"] == NOTEBOOK_CONTEXT_TYPE and pi["messages"][1]["content"] == first
    # pi sends it as a user message, the plot in it as an image, each turn's record once
    llm = pi["llm"]
    assert llm[1]["role"] == "user" and [b["type"] for b in llm[1]["content"]] == ["text", "image"]
    assert sum(1 for m in llm for b in m["content"] if isinstance(b, dict) and b.get("type") == "image") == 1


@pytest.mark.parametrize(
    ("api", "vision"),
    [("anthropic-messages", True), ("openai-responses", True), ("openai-completions", False), ("anthropic-messages", False)],
)
def test_the_request_with_the_plot_matches_pi_ai(pi16, written, api, vision):  # noqa: F811 - the fixture
    spec = _vision(api) if vision else _model(api)
    [pi] = pi16("pi_request_oracle.mjs", [{"file": str(written), "api": api, "model": spec}])
    session = Session.open(written, readonly=True)
    leaf = session.raw_entries()[-1]["id"]  # pi resumes at the last line
    mine = _our_body(api, session, leaf, spec)
    assert _comparable(api, mine) == _comparable(api, pi["body"]), api
    sent = json.dumps(mine)
    assert "KeyError: 'revenue_eur'" in sent and "sales['revenue_eur'].sum()" in sent
    if vision:
        assert "image/png" in sent and "(image omitted" not in sent
    else:
        assert "(image omitted: model does not support images)" in sent and "iVBORw0KGgo" not in sent
