"""``%pi context`` and ``%pi skills``: what the next request sends, and which skills exist."""

from __future__ import annotations

import html
import json
import textwrap
from typing import Any

from ..messages import AssistantMessage, ImageContent, TextContent, ThinkingContent, ToolCall, ToolResultMessage, UserMessage
from ..messages.notebook_context import NOTEBOOK_CONTEXT_TYPE, folded_body, folded_line, is_notebook_context_text
from ..views.digest import plural
from ..views.markdown_safe import md_code, md_fence, md_text

_MAX_BLOCK = 1200


def _short(text: str, limit: int = _MAX_BLOCK) -> str:
    return text if len(text) <= limit else text[:limit] + f"\n… ({len(text) - limit:,} more characters)"


# prose wraps at word boundaries (a word longer than the line still breaks, so nothing overflows)
_PROSE = (
    "white-space:pre-wrap;overflow-wrap:anywhere;word-break:normal;font-family:var(--jp-code-font-family,monospace);"
    "font-size:.92em;padding:.4em .6em;background:rgba(127,127,127,.08);border-radius:4px"
)


def context_bundle(agent: Any) -> dict[str, str]:
    """``%pi context`` as display data: Markdown, HTML whose prose wraps at word boundaries, and wrapped text."""
    markdown = context_report(agent)
    blocks = _report_blocks(agent)
    parts = [f"<h4>{html.escape(blocks['title'])}</h4><p>{html.escape(blocks['summary'])}</p>"]
    for heading, text in blocks["sections"]:
        fold = _fold(text)
        if fold is None:
            parts.append(f'<p><strong>{html.escape(heading)}</strong></p><div style="{_PROSE}">{html.escape(text)}</div>')
        else:  # the notebook context: its one line, the cells a click away (as the cell's view shows it)
            line, body = fold
            parts.append(
                f'<details style="margin:1em 0"><summary><strong>{html.escape(heading)}</strong> · {html.escape(line)}</summary>'
                f'<div style="{_PROSE}">{html.escape(body)}</div></details>'
            )
    plain = [blocks["title"], blocks["summary"]]
    for heading, text in blocks["sections"]:
        plain.append(heading)
        lines = text.splitlines()
        plain.append("\n".join(textwrap.fill(line, 100, break_long_words=False, break_on_hyphens=False) for line in lines))
    return {"text/html": "".join(parts), "text/markdown": markdown, "text/plain": "\n\n".join(plain)}


def _fold(text: str) -> tuple[str, str] | None:
    """``(line, body)`` for a notebook context's text (its first line, the rest), else ``None``."""
    line = folded_line(NOTEBOOK_CONTEXT_TYPE, text) if is_notebook_context_text(text) else None
    return None if line is None else (line, folded_body(text))


def _report_blocks(agent: Any) -> dict[str, Any]:
    from ..agent.transcript_system import preview_request  # pi 1.x transcripts: the prompt and tools they record
    from ..compaction import estimate_context_tokens

    specs = [t.spec() for t in agent.tools]
    request = preview_request(agent.messages, agent.system_prompt, specs, agent.settings.record_system_prompt, agent.model)
    llm, system = request.messages, request.system_prompt or ""
    estimate = estimate_context_tokens(agent.messages)
    tokens = estimate.tokens
    window = agent.model.context_window
    summary = (
        f"{plural(len(llm), 'message')}, about {tokens:,} tokens of a {window:,}-token context window "
        f"({100 * tokens / max(window, 1):.1f}%); thinking {agent.thinking_level}; "
        f"tools: {', '.join(t.name for t in request.tools) or '(none)'}"
    )
    sections = [("System prompt", _short(system, 6000))]
    sections += [(f"{i}. {m.role}", _short(_message_text(m))) for i, m in enumerate(llm, 1)]
    return {"title": f"Next request to {agent.model.ref}", "summary": summary, "sections": sections}


def context_report(agent: Any) -> str:
    """Markdown: the system prompt, the messages after conversion, the tools, and a token estimate."""
    blocks = _report_blocks(agent)
    parts = [f"### {md_text(blocks['title'])}", md_text(blocks["summary"])]
    for heading, text in blocks["sections"]:
        parts.append(f"**{md_text(heading)}**")
        parts.append(md_fence(text))
    return "\n\n".join(parts)


def _message_text(m: Any) -> str:
    if isinstance(m, UserMessage) and isinstance(m.content, str):
        return m.content
    out: list[str] = []
    if isinstance(m, ToolResultMessage):
        out.append(f"[result of {m.tool_name} {m.tool_call_id}{' (error)' if m.is_error else ''}]")
    for block in getattr(m, "content", []) or []:
        if isinstance(block, TextContent):
            out.append(block.text)
        elif isinstance(block, ThinkingContent):
            out.append(f"[thinking] {block.thinking}")
        elif isinstance(block, ToolCall):
            out.append(f"[tool call {block.name}] {json.dumps(block.arguments, ensure_ascii=False)}")
        elif isinstance(block, ImageContent):
            out.append(f"[image {block.mime_type}, {len(block.data) * 3 // 4:,} bytes]")
    if isinstance(m, AssistantMessage) and m.stop_reason != "stop":
        out.append(f"[stop: {m.stop_reason}{': ' + m.error_message if m.error_message else ''}]")
    return "\n".join(out)


def skills_report(agent: Any) -> str:
    """Markdown: the skills found for the agent's working directory, and every warning."""
    agent.reload_resources()  # skills may have been added since the agent started
    res = agent.resources
    lines = ["### Skills"]
    skills = getattr(res, "skills", [])
    if not skills:
        lines.append(
            "No skills found (pi looks in `.pi/skills`, `.agents/skills` up to the git root, `~/.pi/agent/skills`, `~/.agents/skills`)."
        )
    for skill in skills:
        lines.append(f"- **{md_text(skill.name)}** — {md_text(skill.description)}  \n  {md_code(skill.file_path)}")
    diagnostics = getattr(res, "skill_diagnostics", None) or getattr(res, "diagnostics", [])
    if diagnostics:
        lines.append("#### Warnings")
        lines.extend(f"- {md_text(d)}" for d in diagnostics)
    return "\n".join(lines)
