"""Every ``%pi`` output reads cleanly in every reader, not only the ``%%pi`` transcripts.

A notebook runs in a real kernel (nbclient) with the offline model: a cell re-run (so ``%pi compare``
has two branches, with variables and files that differ), a grid, a model's judging round, the
tree (widget, picture, text), ``%pi context``, ``%pi skills`` and the class view. Then it is read
the ways a notebook is read the next day:

* JupyterLab draws each output's HTML (kept as it was);
* ``nbconvert --to html --sanitize-html`` (bleach escapes every tag outside a short list into
  visible text): no tag, style or script is printed as text;
* ``nbconvert --to markdown``: each pi output is its Markdown (no HTML block), which a reader that
  passes raw HTML shows as text;
* a GitHub-like allowlist sanitizer (ammonia, through nh3) over the saved HTML: no style or
  script code is left as text.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from test_nbconvert_exports import nbconvert, page_text

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(400)]

CELLS = [
    '%load_ext pi_jupyter\n%config PiMagics.model = "offline/echo"\n%config PiMagics.thinking = "off"\n'
    'import pandas as pd\ndf = pd.DataFrame({"a": [1, 2, 3]})\nk = 2',
    '%%pi\nuse python\n```python\ndf["b"] = df["a"] * k\nopen("notes.txt", "w").write("one line %d\\n" % k)\n```',
    "k = 3",
    "%pi compare In[2] In[4]",
    "%%pi --vary how=short,long --repeat 2 --name g\nAnswer in a {how} way: <b>why</b> is the sky blue?",
    "g",
    "g.summary()",
    "%pi judge last --by how --model offline/echo",
    "%pi tree",
    "%pi tree --static",
    "%pi tree --text",
    "%pi context",
    "%pi skills",
    "%pi class pi-sessions",
]
RAW = ("<th", "<details", "<summary", "<div", "<p>", "<p ", "<h1", "<h3", "<h4", "<br", "style=", "<table", "<span", "<code", "<pre", "<li")


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> Path:
    import nbformat
    from nbclient import NotebookClient

    folder = tmp_path_factory.mktemp("readers")
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(src) for src in CELLS]
    nb.cells.insert(3, nbformat.v4.new_code_cell(CELLS[1]))  # the same cell again after k changed: a re-run, a sibling branch
    nb.cells[3].id = nb.cells[1].id
    nb.cells[3].metadata["id"] = "rerun"  # nbformat keeps ids unique in the file; the kernel saw one cell run twice
    path = folder / "readers.ipynb"
    client = NotebookClient(nb, timeout=180, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    env = {**os.environ, "JPY_SESSION_NAME": str(path), "PI_JUPYTER_CONFIG": str(folder / "none")}
    with client.setup_kernel(env=env):
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
    nbformat.write(nb, path)
    return path


def _rich_outputs(path: Path) -> list[dict]:
    import nbformat

    nb = nbformat.read(path, as_version=4)
    return [o for c in nb.cells for o in c.outputs if o.output_type in ("display_data", "execute_result") and "text/html" in o.data]


def test_every_pi_output_carries_markdown_and_the_pi_mark(executed):
    outputs = _rich_outputs(executed)
    assert len(outputs) >= 12
    for o in outputs:  # marked: exports give them their Markdown (or plain text), never raw tags
        assert "pi_jupyter" in o.metadata, list(o.data)
    assert sum("text/markdown" in o.data for o in outputs) >= 9
    html = "".join(o.data["text/html"] for o in outputs)
    # JupyterLab's HTML is as it was: the tables, the diff, the class view
    assert "pi-compare-table" in html and "pi-world-compare" in html and "pi-class" in html


def test_sanitized_html_prints_no_tag(executed):
    nbconvert(executed, "--to", "html", "--HTMLExporter.sanitize_html=True", "--output", "sanitized")
    text = page_text((executed.parent / "sanitized.html").read_text())
    printed = [tag for tag in RAW if tag in text]
    assert not printed, [text[max(0, text.index(t) - 120) : text.index(t) + 120] for t in printed]
    shown = ("Variables and files that differ", "1 line: one line 2", "Common ancestor", "Cell by cell", "Next request to offline/echo")
    assert all(s in text for s in shown), [s for s in shown if s not in text]
    assert "<b>why</b>" in text  # the prompt's markup, as text


def test_markdown_export_has_no_html_block_from_pi(executed):
    from markdown_it import MarkdownIt

    nbconvert(executed, "--to", "markdown")
    md = (executed.parent / "readers.md").read_text()
    blocks = [t.content for t in MarkdownIt("commonmark", {"html": True}).parse(md) if t.type == "html_block"]
    assert not blocks, blocks[:3]
    assert "**Variables and files that differ**" in md and "| file notes.txt | 1 line: one line 2 | 1 line: one line 3 |" in md
    assert "1 lines" not in md


def test_github_like_sanitizer_leaves_no_code_as_text(executed):
    nh3 = pytest.importorskip("nh3")
    from test_static_render import GITHUB_TAGS

    for o in _rich_outputs(executed):
        clean = nh3.clean(o.data["text/html"], tags=GITHUB_TAGS, attributes={"details": {"open"}, "a": {"href"}})
        text = page_text(clean)
        assert not re.search(r"\b(padding|border|margin|font-weight|text-align|background|white-space)\s*:", text), text[:300]  # no CSS
        assert not re.search(r"function\s*\(|=>|document\.|addEventListener", text), text[:300]  # no script code
