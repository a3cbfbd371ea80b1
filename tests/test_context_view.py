"""``%pi context`` reads as prose: lines wrap at word boundaries, never inside a word."""

from __future__ import annotations

import re

from pi_jupyter import Agent, Session
from pi_jupyter.messages import AssistantMessage, TextContent, UserMessage
from pi_jupyter.notebook.context_view import context_bundle

LONG = "The training run diverges after step two hundred because the learning rate is too high for this batch size. " * 6


def test_context_wraps_prose_at_word_boundaries():
    s = Session.in_memory()
    s.append_message(UserMessage.text(LONG))
    s.append_message(AssistantMessage(content=[TextContent(text=LONG + " see https://example.com/" + "x" * 150)]))
    bundle = context_bundle(Agent(s, model="offline/echo"))
    words = set(LONG.split())
    lines = bundle["text/plain"].splitlines()
    assert max(len(line) for line in lines if "https://" not in line) <= 100
    for line in lines:  # every piece of a wrapped line is a whole word
        if line.startswith("The training run"):
            assert set(line.split()) <= words, line
    assert any(len(line) > 100 and "https://example.com/" in line for line in lines)  # a long word is kept whole
    html = bundle["text/html"]
    assert re.search(r"white-space:pre-wrap;[^\"]*word-break:normal", html)
    assert "step two hundred" in html and "**" not in html
    assert "Next request to offline/echo" in bundle["text/markdown"]


def test_the_notebook_context_is_folded_behind_its_line_and_the_rest_is_not():
    """``%pi context`` shows what the notebook told the model as the cell's view does: one line, the cells a click away."""
    from pi_jupyter.messages.notebook_context import NOTEBOOK_CONTEXT_HEAD, NOTEBOOK_CONTEXT_TYPE

    s = Session.in_memory()
    told = f"{NOTEBOOK_CONTEXT_HEAD} 2 cells, 1 error\n\n### In[3] failed: KeyError: 'revenue_eur'\n```python\ndf['revenue_eur']\n```"
    s.append_custom_message(NOTEBOOK_CONTEXT_TYPE, told)
    s.append_message(UserMessage.text("Why did my last cell fail?"))
    bundle = context_bundle(Agent(s, model="offline/echo"))
    html = bundle["text/html"]
    assert html.count("<details") == 1
    folded = html[html.index("<details") : html.index("</details>")]
    summary = folded[folded.index("<summary>") : folded.index("</summary>")]
    assert "notebook since your last turn: 2 cells, 1 error" in summary and "revenue_eur" not in summary
    assert "KeyError: &#x27;revenue_eur&#x27;" in folded  # the cells, inside the fold
    assert "Why did my last cell fail?" in html[html.index("</details>") :]  # the prompt is not folded
    # readers without HTML get the whole text
    assert "revenue_eur" in bundle["text/plain"] and "revenue_eur" in bundle["text/markdown"]
