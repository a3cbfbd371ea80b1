"""Every piece of Markdown we write closes its own fences, whatever the model wrote.

Markdown outputs are read one after another: nbconvert joins the cells' ``text/markdown``, an
export joins the entries of a branch. A model's answer that ends inside a fence (or opens one in a
quote or a list item) used to leave it open into the next blocks, until a later line closed it:
a tool's output shown in its own fence, whose raw HTML then became live (script ran in Chromium
through markdown-it with ``html`` and mistune without escaping). Here any text a model could
write is followed by such a tool output, and read by those readers: nothing becomes live, and
the text after the output is a paragraph again.
"""

from __future__ import annotations

import pytest
from hostile import live_markup, shown_text
from hypothesis import given, settings
from hypothesis import strategies as st

from pi_jupyter.views.markdown_safe import md_fence, md_markdown, md_quote

PIECES = ["```", "````", "~~~", "```python", "~~~ x", "> ", "- ", "1. ", "   ", "\t", "\n", "\n\n", "`", "text", "<b>", "* x", ">"]
texts = st.lists(st.one_of(st.sampled_from(PIECES), st.text(alphabet="`~ >-\nab", max_size=6)), max_size=14).map("".join)

OUTPUT = md_fence("```\n~~~\n````\n<img src=x onerror=__pwn('out')>\n<script>__pwn('out')</script>\n", "text")
"""A tool's output as a transcript shows it: in its own fence, holding every kind of fence and raw HTML."""


def _readers() -> dict[str, object]:
    import mistune
    from markdown_it import MarkdownIt
    from nbconvert.filters.markdown_mistune import markdown2html_mistune

    return {
        "markdown-it": MarkdownIt("commonmark", {"html": True}).render,
        "mistune": mistune.create_markdown(escape=False),
        "nbconvert": markdown2html_mistune,
    }


READERS = _readers()


def check(block: str) -> None:
    doc = f"{block}\n\n{OUTPUT}\n\nXafter9 <img src=x onerror=__pwn('after')>\n"
    for name, read in READERS.items():
        page = read(doc)  # type: ignore[operator]
        assert live_markup(page) == [], (name, block, page)
        assert "Xafter9" in shown_text(page), (name, block)


@settings(max_examples=400, deadline=None)
@given(text=texts)
def test_an_answer_never_leaves_a_fence_open_for_what_follows(text):
    check(md_markdown(text))
    check(md_quote(text))


@pytest.mark.parametrize(
    "answer",
    [
        "Here is the code:\n```",  # the answer ends inside a fence
        "Here:\n```python\nx = 1",
        "- step one\n  ```\n  code",  # a fence in a list item
        "> quoted\n> ```",  # a fence in a quote
        "~~~\nunclosed tilde fence",
        "```\nclosed\n```\n\n```\nopen again",
        "````\nfour opened, three closed\n```",
    ],
)
def test_the_cases_the_audit_found(answer):
    check(md_markdown(answer))
    check(md_quote(answer))


def test_a_closed_fence_stays_code():
    out = md_markdown("before\n\n```python\nprint('<b>')\n```\n\nafter")
    page = READERS["markdown-it"](out)  # type: ignore[operator]
    assert "<code class=\"language-python\">print('&lt;b&gt;')" in page and "<p>after</p>" in page
