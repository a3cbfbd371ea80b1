"""Markdown and plain-text transcripts: what a saved notebook shows without JavaScript."""

from __future__ import annotations

import pytest

from pi_jupyter.messages import (
    AssistantMessage,
    BashExecutionMessage,
    CompactionSummaryMessage,
    CustomMessage,
    ImageContent,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from pi_jupyter.notebook.transcript import clip_middle, escape_markdown_html, format_call, transcript_markdown, transcript_text


def conversation(output: str = "a.py\nb.py\n", is_error: bool = False) -> list:
    return [
        UserMessage.text("List the files", images=[ImageContent(data="AAAA")]),
        AssistantMessage(
            model="claude-x",
            content=[
                ThinkingContent(thinking="I will run ls."),
                TextContent(text="Running `ls`."),
                ToolCall(id="t1", name="bash", arguments={"command": "ls", "timeout": 5}),
            ],
            stop_reason="toolUse",
        ),
        ToolResultMessage(tool_call_id="t1", tool_name="bash", content=[TextContent(text=output)], is_error=is_error),
        AssistantMessage(model="claude-x", content=[TextContent(text="There are **two** files.")]),
    ]


def test_markdown_shows_each_tool_call_with_its_result_below():
    md = transcript_markdown(conversation())
    assert md.index("**User**") < md.index("List the files") < md.index("**Assistant** · `claude-x`")
    assert "> List the files" in md and "*[1 image(s)]*" in md
    assert "> *Thinking:* I will run ls." in md
    call = '**Tool** `bash(command="ls", timeout=5)`'
    assert call in md
    assert md.index(call) < md.index("```text\na.py\nb.py\n```") < md.index("There are **two** files.")
    assert md.count("a.py") == 1  # the result is not repeated where the toolResult message sits


def test_long_tool_output_is_cut_in_the_middle():
    output = "".join(f"line {i}\n" for i in range(5000))
    md = transcript_markdown(conversation(output), max_output=500)
    assert "line 0\n" in md and "line 4999" in md and "line 2500" not in md
    assert "characters omitted" in md
    assert len(md) < 1500


def test_errors_aborts_and_failed_tools_are_marked():
    msgs = conversation(output="boom", is_error=True)
    msgs.append(AssistantMessage(content=[TextContent(text="partial")], stop_reason="aborted"))
    msgs.append(AssistantMessage(content=[], stop_reason="error", error_message="rate limited"))
    md = transcript_markdown(msgs)
    assert '`bash(command="ls", timeout=5)` · **error**' in md
    assert "*Stopped (aborted).*" in md and "**Error:** rate limited" in md
    text = transcript_text(msgs)
    assert '-> bash(command="ls", timeout=5)  [error]' in text
    assert "[stopped: aborted]" in text and "[error: rate limited]" in text


def test_raw_html_in_text_is_neutralised_but_code_is_untouched():
    text = "Look: <script>alert(1)</script> and `<b>` and\n```html\n<div>kept</div>\n```\n<img src=x>"
    out = escape_markdown_html(text)
    assert "&lt;script>alert(1)&lt;/script>" in out
    assert "`<b>`" in out and "<div>kept</div>" in out
    assert out.endswith("&lt;img src=x>")
    md = transcript_markdown([AssistantMessage(content=[TextContent(text=text)])])
    assert "<script>" not in md


def test_a_fence_inside_tool_output_does_not_close_the_block():
    msgs = conversation(output="```\nnot the end\n```\n")
    md = transcript_markdown(msgs)
    assert "````text\n```\nnot the end\n```\n````" in md


def test_other_roles_and_pi_dicts():
    msgs = [
        {"role": "user", "content": "hi", "timestamp": 1},
        CustomMessage(custom_type="note", content="visible", display=True),
        CustomMessage(custom_type="hidden", content="secret state", display=False),
        BashExecutionMessage(command="pwd", output="/tmp\n", exit_code=1),
        CompactionSummaryMessage(summary="Earlier we set up the data.", tokens_before=12345),
        {"role": "somethingNew", "x": 1},
    ]
    md = transcript_markdown(msgs)
    assert "> hi" in md and "**`note`**" in md and "visible" in md and "secret state" not in md
    assert "**Shell** `$ pwd` · exit 1" in md and "/tmp" in md
    assert "**Compaction summary** (12,345 tokens before)" in md
    assert "*[somethingNew message]*" in md
    text = transcript_text(msgs)
    assert text.splitlines()[0] == "User: hi"
    assert "$ pwd  (exit 1)" in text and "[compaction summary, 12345 tokens before]" in text


def test_plain_text_is_compact():
    text = transcript_text(conversation())
    assert text.splitlines() == [
        "User: List the files",
        "Assistant (claude-x):",
        "  Running `ls`.",
        '  -> bash(command="ls", timeout=5)',
        "     a.py",
        "     b.py",
        "Assistant (claude-x):",
        "  There are **two** files.",
    ]


def test_helpers_and_bad_input():
    assert format_call("write", {"path": "a", "content": "x" * 500}).endswith("…)")
    assert len(format_call("write", {"path": "a", "content": "x" * 500})) < 260
    assert clip_middle("abc", 10) == "abc"
    assert transcript_markdown([]) == "" and transcript_text([]) == ""
    with pytest.raises(TypeError, match="message 1"):
        transcript_markdown([UserMessage.text("ok"), 42])


def test_a_recorded_system_prompt_is_one_line_not_its_text():
    prompt = "You are a careful assistant.\n" + "Rule. " * 300
    system = {
        "role": "system",
        "content": "",
        "sections": {"preamble": prompt},
        "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
    }
    user = {"role": "user", "content": "hi", "timestamp": 1}
    md, text = transcript_markdown([system, user]), transcript_text([system, user])
    assert "Rule. Rule." not in md and "Rule. Rule." not in text  # a notice, not a wall of prompt text
    line = "The model's instructions were set; tools offered: read (%pi context shows them)"
    assert md.startswith(f"*[{line}]*") and "preamble" not in md
    assert text.splitlines()[0] == f"[{line}]"
