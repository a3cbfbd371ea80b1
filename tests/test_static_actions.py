"""The action buttons' markup in the static rendering: where it acts, and what a sanitized copy keeps.

Trusted outputs carry the session, the kernel's bridge token, each message's entry and a
small script that adds "forget this" and "continue from this one". A sanitized copy (an
untrusted notebook, GitHub, an nbconvert page read without scripts) keeps the conversation,
the forgotten marks and the ``%pi checkout ID`` commands as text, and no buttons that cannot work.
"""

from __future__ import annotations

import re

import pytest
from test_static_render import github, text_of_html

from pi_jupyter.messages import AssistantMessage, TextContent, ToolCall, ToolResultMessage, UserMessage
from pi_jupyter.views.static_html import FORGOTTEN_NOTE, Actions, Sibling, render_html, render_siblings_html

bleach = pytest.importorskip("bleach")


def jupyterlab(html: str) -> str:
    """JupyterLab's sanitizer for untrusted output, approximately: ordinary tags and inline styles, no script, no data-*."""
    html = re.sub(r"<script\b.*?</script>", "", html, flags=re.S | re.I)
    from bleach.css_sanitizer import CSSSanitizer

    tags = {"div", "p", "pre", "code", "details", "summary", "span", "strong", "em", "h2", "ul", "li", "table", "tr", "td", "th"}
    css = CSSSanitizer(allowed_css_properties=["opacity", "border-left", "padding", "margin", "white-space", "font-size"])
    return bleach.clean(html, tags=tags, attributes={"*": ["style", "class"], "details": ["open"]}, css_sanitizer=css, strip=True)


def items():
    call = ToolCall(id="c1", name="read", arguments={"path": "notes.txt"})
    return [
        UserMessage.text("my token is sk-not-a-secret-just-text"),
        AssistantMessage(content=[TextContent(text="Let me read."), call], stop_reason="toolUse"),
        ToolResultMessage(tool_call_id="c1", tool_name="read", content=[TextContent(text="hello")]),
        AssistantMessage(content=[TextContent(text="It says hello.")]),
    ]


def test_trusted_output_names_its_bridge_and_entries_and_marks_forgotten_ones():
    sibs = render_siblings_html(
        [
            Sibling(end_id="aaaa1111", answer=AssistantMessage(content=[TextContent(text="First.")])),
            Sibling(end_id="bbbb2222", answer=AssistantMessage(content=[TextContent(text="Second.")]), current=True),
        ]
    )
    html = render_html(
        items(),
        entry_ids=["u1", "a1", "t1", "a2"],
        forgotten=["u1"],
        actions=Actions(session_id="sess-1", token="tok"),
        footer=sibs,
    )
    assert 'data-pi-session="sess-1" data-pi-bridge="tok"' in html
    # each message that can still be forgotten names its entry; the forgotten prompt is marked instead
    assert re.findall(r'data-pi-entry="(\w+)"', html) == ["a1", "t1", "a2"]
    assert re.search(r'<details class="pi-tool pi-tool-done" data-pi-entry="t1"', html)  # the result's entry on its card
    markup = re.sub(r"<script\b.*?</script>", "", html, flags=re.S)
    assert markup.count(FORGOTTEN_NOTE) == 1 and markup.index(FORGOTTEN_NOTE) < markup.index("Let me read.")  # under the prompt
    assert html.count("<script>") == 2  # the pager and the actions
    # continue from either answer: the current one (to come back) and the earlier one
    assert "%pi checkout aaaa1111" in html and "%pi checkout bbbb2222" in html

    for clean in (github(html), jupyterlab(html)):
        assert "<script" not in clean and "data-pi" not in clean and "__piJupyter" not in clean
        text = text_of_html(clean)
        assert "not sent any more" in text and "It says hello." in text
        assert "continue from this one: %pi checkout aaaa1111" in text  # the command to copy by hand
        assert "forget this" not in text  # buttons only where the script can make them work


def test_a_forgotten_tool_result_is_marked_on_its_card():
    html = render_html(items(), entry_ids=["u1", "a1", "t1", "a2"], forgotten=["t1"])
    card = re.search(r'<details class="pi-tool pi-tool-done".*?</details>', html, flags=re.S).group(0)
    assert FORGOTTEN_NOTE in card and "data-pi-entry" not in card and "hello" in card


def test_without_actions_nothing_acts():
    html = render_html(items(), entry_ids=["u1", None, None, "a2"])
    assert "<script" not in html and "data-pi-session" not in html
    assert re.findall(r'data-pi-entry="(\w+)"', html) == ["u1", "a2"]
