"""What readers that do not run scripts make of a ``%%pi`` cell: ``nbconvert --to markdown`` and ``--sanitize-html``.

The notebook runs in a real kernel (nbclient) with the user's default model; its ``%%pi`` cell
holds a prompt with a code fence, markup as text and a ``<script>`` as text, and is run twice,
so its output carries the sibling pager (a script) and "answer 2 of 2". Each export runs in a
fresh ``jupyter nbconvert`` with the configuration the wheel installs.

* ``--to markdown``: the cell's output is its Markdown transcript (no HTML block, no script),
  the cell's source is one code block however many backticks the prompt holds, and nothing in
  the file becomes markup in a reader that passes raw HTML.
* ``--sanitize-html`` (what nbviewer-like services do: bleach escapes every tag outside a short
  list): the transcript reads as text, with no tag or script code shown as text.
"""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

import pytest
from hostile import live_markup
from test_nbconvert_exports import nbconvert, page_text

pytestmark = [pytest.mark.kernel, pytest.mark.timeout(300)]

PROMPT = (
    'Why does this print bold?\n```python\nprint("<b>hi</b>")\n```\nAnd is `a < b` true? <script>alert(1)</script> [x](javascript:alert(1))'
)
CELL = "%%pi\n" + PROMPT


@pytest.fixture(scope="module")
def executed(tmp_path_factory) -> Path:
    import nbformat
    from nbclient import NotebookClient

    folder = tmp_path_factory.mktemp("readers")
    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_code_cell(f"%load_ext pi_jupyter\n%config PiMagics.session_dir = {str(folder / 'sessions')!r}"),
        nbformat.v4.new_code_cell(CELL),
    ]
    client = NotebookClient(nb, timeout=120, kernel_name="python3", resources={"metadata": {"path": str(folder)}})
    with client.setup_kernel():
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        client.execute_cell(nb.cells[1], 1)  # a re-run: the output shows "answer 2 of 2" and the pager
    shown = nb.cells[1].outputs[0]["data"]
    assert "answer 2 of 2" in shown["text/markdown"] and "<script>" in shown["text/html"]
    path = folder / "readers.ipynb"
    nbformat.write(nb, path)
    return path


def _markdown_it(text: str) -> tuple[str, list]:
    from markdown_it import MarkdownIt

    md = MarkdownIt("commonmark", {"html": True})
    return md.render(text), md.parse(text)


def test_markdown_export_is_the_transcript_with_the_source_in_one_block(executed):
    import nbformat

    nbconvert(executed, "--to", "markdown")
    md = (executed.parent / "readers.md").read_text()
    html, tokens = _markdown_it(md)
    assert not live_markup(html), live_markup(html)
    assert not [t for t in tokens if t.type == "html_block"], "an HTML block in the Markdown export"
    assert "document.currentScript" not in md and "pi-static" not in md
    code = [t.content for t in tokens if t.type in ("fence", "code_block")]
    assert CELL + "\n" in code, code  # the cell's source: one block, its own fence inside
    transcript = nbformat.read(executed, as_version=4).cells[1].outputs[0]["data"]["text/markdown"]
    assert transcript.strip() in md  # the cell's output is its Markdown transcript, as `pi-jupyter export --format markdown` writes it
    text = unescape(re.sub(r"<[^>]+>", " ", html))
    assert "Why does this print bold?" in text and "answer 2 of 2" in text and 'print("<b>hi</b>")' in text


def test_sanitized_html_export_reads_as_text(executed):
    nbconvert(executed, "--to", "html", "--HTMLExporter.sanitize_html=True", "--output", "sanitized")
    page = (executed.parent / "sanitized.html").read_text()
    text = page_text(page)
    for shown_as_text in ("<details", "<summary", "<p style", "<div", "<pre", "<h4", "<br", "document.currentScript", "function ("):
        assert shown_as_text not in text, f"{shown_as_text!r} printed as text"
    assert "Why does this print bold?" in text and 'print("<b>hi</b>")' in text  # the prompt, its code as written
    assert "<script>alert(1)</script>" in text  # the prompt's markup, as text
    assert "answer 2 of 2" in text and "offline/echo" in text  # the sibling line and the status line
    assert "[offline model]" in text  # the answer


def test_github_like_sanitizers_drop_the_scripts_and_keep_the_transcript(executed):
    """What GitHub-like viewers draw of the saved ``text/html``: an allowlist sanitizer (ammonia, through nh3) removes the
    scripts with their code and the styles, and what is left reads: every part of the transcript, no code printed."""
    import nbformat

    nh3 = pytest.importorskip("nh3")
    from test_static_render import GITHUB_TAGS

    page = nbformat.read(executed, as_version=4).cells[1].outputs[0]["data"]["text/html"]
    clean = nh3.clean(page, tags=GITHUB_TAGS, attributes={"details": {"open"}, "a": {"href"}})
    text = page_text(clean)
    assert "document.currentScript" not in text and "function (" not in text
    assert "Why does this print bold?" in text and "<script>alert(1)</script>" in text and "[offline model]" in text
    assert "answer 2 of 2" in text and "offline/echo" in text
    assert "<details" in clean and "<script" not in clean and "style=" not in clean
