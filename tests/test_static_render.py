"""The static rendering (views.static_html): what a reopened, untrusted or exported notebook shows.

Checked through sanitizers: JupyterLab's rules (tags and inline styles kept, no scripts) and a
GitHub-like allowlist (no style, no class), both applied with bleach; every part a reader
needs (prompt, rendered answer, folded thinking, tool call with arguments and result or error,
notices, status) must still be there, and model text must never become live markup.
"""

from __future__ import annotations

import re
from html import unescape

import pytest

from pi_jupyter.messages import AssistantMessage, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from pi_jupyter.views.static_html import PROMPT_FOLD, Notice, RunStatus, render_html, render_markdown

bleach = pytest.importorskip("bleach")

GITHUB_TAGS = {
    "a", "b", "blockquote", "br", "code", "dd", "del", "details", "div", "dl", "dt", "em", "h1", "h2", "h3", "h4",
    "h5", "h6", "hr", "i", "img", "li", "ol", "p", "pre", "s", "span", "strong", "sub", "summary", "sup", "table",
    "tbody", "td", "th", "thead", "tr", "ul",
}  # fmt: skip


def github(html: str) -> str:
    """What a GitHub-like sanitizer leaves: ordinary tags, ``open`` on details, ``href``; no style, no class.

    Scripts go with their content, as GitHub's and JupyterLab's sanitizers drop them (bleach would keep the text).
    """
    html = re.sub(r"<script\b.*?</script>", "", html, flags=re.S | re.I)
    return bleach.clean(html, tags=GITHUB_TAGS, attributes={"details": ["open"], "a": ["href"]}, strip=True)


def text_of_html(html: str) -> str:
    return re.sub(r"\s+", " ", unescape(bleach.clean(html, tags=set(), strip=True)))


def conversation() -> list:
    call = ToolCall(id="c1", name="bash", arguments={"command": "tail -n 3 train.log"})
    bad = ToolCall(id="c2", name="read", arguments={"path": "missing.txt"})
    return [
        UserMessage.text("Why does the loss diverge? <script>alert(1)</script>"),
        Notice(text="Retrying (attempt 1/3) in 1.0 s: overloaded", tone="warn"),
        AssistantMessage(
            content=[ThinkingContent(thinking="Look at the log first."), TextContent(text="Let me look."), call, bad],
            stop_reason="toolUse",
            model="fake",
        ),
        ToolResultMessage(tool_call_id="c1", tool_name="bash", content=[TextContent(text="step 220 loss nan\n")]),
        ToolResultMessage(tool_call_id="c2", tool_name="read", content=[TextContent(text="ENOENT: no such file")], is_error=True),
        AssistantMessage(
            content=[TextContent(text="## Why\n\nThe rate is **too high**. <b>raw</b>\n\n```python\nlr = 3e-4\n```\n")],
            model="fake",
        ),
    ]


def test_every_part_survives_a_github_like_sanitizer():
    status = RunStatus(model="offline/fake", state="done", input_tokens=1200, output_tokens=80, cost=0.0123, seconds=2.5)
    html = render_html(conversation(), status=status, title="Loss study")
    for page in (html, github(html)):
        text = text_of_html(page)
        assert "Why does the loss diverge? <script>alert(1)</script>" in text  # the prompt, as text
        assert "Retrying (attempt 1/3)" in text
        assert 'bash(command="tail -n 3 train.log")' in text and "step 220 loss nan" in text
        assert "ENOENT: no such file" in text and "error" in text
        assert "The rate is too high." in text and "lr = 3e-4" in text
        assert "offline/fake · done · 1,200 in / 80 out tokens · $0.0123 · 2.5 s" in text
    assert "<h2>Why</h2>" in html and "<strong>too high</strong>" in html  # Markdown rendered
    assert "<script" not in html and "<b>raw" not in html  # model and user text never become markup
    assert re.search(r'<details class="pi-thinking"[^>]*><summary>Thought</summary>', html)  # thinking folded
    assert "<details open" not in html.split("Thought")[0]
    assert 'style="color' in html  # the code is highlighted with inline colours (no stylesheet to lose)


def test_long_prompts_fold_and_markdown_matches():
    prompt = "word " * (PROMPT_FOLD // 2)
    html = render_html([UserMessage.text(prompt)])
    assert "show more</em></summary>" in html
    md = render_markdown(conversation(), status=RunStatus(model="m", state="aborted"))
    assert "*⚠ Retrying (attempt 1/3) in 1.0 s: overloaded*" in md
    assert "step 220 loss nan" in md and md.rstrip().endswith("*m · aborted*")


def test_aborted_and_error_answers_say_so():
    html = render_html(
        [
            AssistantMessage(content=[TextContent(text="partial")], stop_reason="aborted"),
            AssistantMessage(stop_reason="error", error_message="<boom>"),
        ]
    )
    assert "Stopped" in html and "partial" in html
    assert "&lt;boom&gt;" in html


def test_bad_items_name_the_place():
    with pytest.raises(TypeError, match="item 1"):
        render_html([UserMessage.text("hi"), 42])


def test_sibling_answers_fold_everywhere_and_page_where_scripts_run():
    from pi_jupyter.views.static_html import Sibling, render_siblings_html, render_siblings_markdown

    sibs = [
        Sibling(end_id="aaaa1111", answer=AssistantMessage(content=[TextContent(text="First try.")])),
        Sibling(end_id="bbbb2222", answer=None),
        Sibling(end_id="cccc3333", answer=AssistantMessage(content=[TextContent(text="Third try.")]), current=True),
    ]
    html = render_siblings_html(sibs)
    assert "answer 3 of 3" in html and "<script>" in html  # the pager, for trusted notebooks and nbconvert pages
    clean = github(html)
    assert "<script" not in clean and "document.currentScript" not in clean
    text = text_of_html(clean)
    assert "answer 1 of 3 · First try." in text and "answer 2 of 3 · (no answer)" in text
    assert "%pi checkout aaaa1111" in text and "Third try." not in text  # the current answer is the conversation above
    md = render_siblings_markdown(sibs)
    assert md == "*answer 3 of 3* · continue from another answer with 1: `%pi checkout aaaa1111`, 2: `%pi checkout bbbb2222`"


def test_insert_as_cell_is_marked_on_the_agents_code_not_on_quoted_tool_output():
    call = AssistantMessage(content=[ToolCall(id="c1", name="python", arguments={"code": "print(sum(range(5)))"})], stop_reason="toolUse")
    result = ToolResultMessage(tool_call_id="c1", tool_name="python", content=[TextContent(text="10\nOut: None")])
    answer = AssistantMessage(
        content=[
            TextContent(
                text="It printed:\n```\n10\nOut: None\n```\nTo keep it:\n```python\ntotal = sum(range(5))\n```\n"
                "Or in a shell:\n```bash\necho 10\n```\nUnlabelled:\n```\nx = 1\n```"
            )
        ]
    )
    html = render_html([UserMessage.text("Sum it, in code:\n```python\nsum(range(5))\n```"), call, result, answer])
    marked = re.findall(r'<pre [^>]*data-pi-insert="1"[^>]*><code>(.*?)</code>', html, re.S)
    plain = [re.sub("<[^>]+>", "", m).strip() for m in marked]
    assert plain == ["total = sum(range(5))", "x = 1"]  # not the quoted output, not bash, not the user's own prompt
    assert html.count("<pre") == 6  # every block is still there (Copy is offered on each)


def test_a_sibling_is_its_whole_turn_with_its_status_line():
    from pi_jupyter.views.static_html import Sibling, render_siblings_html

    turn_a = [
        Notice(text="Filled in {x} = 1"),
        UserMessage.text("plan A"),
        AssistantMessage(content=[ToolCall(id="a1", name="write", arguments={"path": "a_only.txt"})], stop_reason="toolUse"),
        ToolResultMessage(
            tool_call_id="a1",
            tool_name="write",
            content=[TextContent(text="wrote")],
            details={"world": [{"files": {"written": ["a_only.txt"]}}]},
        ),
        AssistantMessage(content=[TextContent(text="Done with A.")]),
    ]
    sibs = [
        Sibling(end_id="aaaa1111", answer=turn_a[-1], items=turn_a, status=RunStatus(model="offline/echo", state="done", seconds=1.5)),
        Sibling(end_id="bbbb2222", answer=AssistantMessage(content=[TextContent(text="Done with B.")]), current=True),
    ]
    html = render_siblings_html(sibs)
    folded = html.split('data-n="1"')[1]
    assert '<div class="pi-turn">' in folded
    for seen in ("Filled in {x} = 1", "plan A", "write", "Done with A.", "offline/echo · done · 1.5 s", "%pi checkout aaaa1111"):
        assert seen in folded, seen
    assert "Done with B." not in html  # the current run is the turn above, not repeated here
