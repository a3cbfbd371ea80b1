"""The system prompt, assembled in pi's layout (``core/system-prompt.ts``, pi-design §8.2).

Default prompt: intro, ``Available tools:``, the note about custom tools, ``Guidelines:``,
then the append text, ``# Project Context`` with one ``## PATH`` section per context file,
the skills block (only when ``read`` is active), ``Current date:`` and ``Current working
directory:``. A custom prompt (SYSTEM.md) replaces the intro, tools and guidelines; the rest
follows it the same way. pi's block pointing at its own documentation is left out: it
describes the pi CLI, not this package.
"""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from .context import ContextFile
from .skills import Skill, format_skills_for_prompt

__all__ = ["DEFAULT_INTRO", "PI_DEFAULT_TOOL_NAMES", "PromptTool", "build_system_prompt"]

DEFAULT_INTRO = (
    "You are an expert assistant operating inside a Jupyter notebook via pi-jupyter, an agent harness that runs"
    " in the notebook's kernel. You help users by reading files, running Python code in the notebook,"
    " executing commands, editing code, and writing new files."
)

PI_DEFAULT_TOOL_NAMES: tuple[str, ...] = ("read", "bash", "edit", "write")
"""The tool names pi's guideline logic assumes when no tool list is given."""


@runtime_checkable
class PromptTool(Protocol):
    """What the prompt needs of a tool (a :class:`~pi_jupyter.agent.tools.Tool` has all three)."""

    name: str
    prompt_snippet: str | None
    prompt_guidelines: Sequence[str]


def _one_line(text: str | None) -> str | None:
    if not text:
        return None
    line = re.sub(r"\s+", " ", re.sub(r"[\r\n]+", " ", text)).strip()
    return line or None


def _date_text(date: _dt.date | str | None) -> str:
    if isinstance(date, str):
        return date
    if date is None:
        date = _dt.date.today()  # local date, as pi uses the local calendar
    return f"{date.year:04d}-{date.month:02d}-{date.day:02d}"


def _tail(prompt: str, *, append: str | None, context_files: Sequence[ContextFile], skills_block: str, date: str, cwd: str) -> str:
    if append:
        prompt += f"\n\n{append}"
    if context_files:
        prompt += "\n\n# Project Context\n\n"
        prompt += "Project-specific instructions and guidelines:\n\n"
        for f in context_files:
            prompt += f"## {f.path}\n\n{f.content}\n\n"
    prompt += skills_block
    prompt += f"\nCurrent date: {date}"
    prompt += f"\nCurrent working directory: {cwd.replace(chr(92), '/')}"
    return prompt


def build_system_prompt(
    *,
    cwd: str,
    tools: Sequence[PromptTool | str] | None = None,
    custom_prompt: str | None = None,
    append_system_prompt: str | Sequence[str] | None = None,
    context_files: Sequence[ContextFile] = (),
    skills: Sequence[Skill] = (),
    date: _dt.date | str | None = None,
    intro: str = DEFAULT_INTRO,
) -> str:
    """Assemble the system prompt as pi does.

    ``tools`` are the active tools in order: objects with ``name``, ``prompt_snippet`` and
    ``prompt_guidelines`` (every :class:`~pi_jupyter.agent.tools.Tool`), or bare names. A tool
    is listed under ``Available tools:`` only when it has a snippet (pi 0.73); its guidelines
    are added, trimmed and without duplicates. ``None`` means pi's default set
    (``read, bash, edit, write``) with no snippets. ``append_system_prompt`` may be several
    texts: they are joined with a blank line. ``custom_prompt`` (SYSTEM.md) replaces the
    default head; its skills block appears when ``read`` is active or no tool list was given.
    ``date`` defaults to today's local date.
    """
    if isinstance(append_system_prompt, str) or append_system_prompt is None:
        append = append_system_prompt or None
    else:
        append = "\n\n".join(append_system_prompt) or None
    date_text = _date_text(date)

    names: list[str] = []
    snippets: dict[str, str] = {}
    tool_guidelines: list[str] = []
    for t in tools or ():
        if isinstance(t, str):
            names.append(t)
            continue
        names.append(t.name)
        snippet = _one_line(getattr(t, "prompt_snippet", None))
        if snippet:
            snippets[t.name] = snippet
        tool_guidelines.extend(getattr(t, "prompt_guidelines", ()) or ())

    if custom_prompt:
        has_read = tools is None or "read" in names
        block = format_skills_for_prompt(skills) if has_read and skills else ""
        return _tail(custom_prompt, append=append, context_files=context_files, skills_block=block, date=date_text, cwd=cwd)

    active = names if tools is not None else list(PI_DEFAULT_TOOL_NAMES)
    visible = [n for n in active if snippets.get(n)]
    tools_list = "\n".join(f"- {n}: {snippets[n]}" for n in visible) if visible else "(none)"

    guidelines: list[str] = []

    def add(g: str) -> None:
        if g not in guidelines:
            guidelines.append(g)

    has_bash = "bash" in active
    has_explore = any(n in active for n in ("grep", "find", "ls"))
    if has_bash and not has_explore:
        add("Use bash for file operations like ls, rg, find")
    elif has_bash and has_explore:
        add("Prefer grep/find/ls tools over bash for file exploration (faster, respects .gitignore)")
    for g in tool_guidelines:
        g = g.strip()
        if g:
            add(g)
    add("Be concise in your responses")
    add("Show file paths clearly when working with files")
    guidelines_text = "\n".join(f"- {g}" for g in guidelines)

    prompt = (
        f"{intro}\n\n"
        f"Available tools:\n{tools_list}\n\n"
        "In addition to the tools above, you may have access to other custom tools depending on the project.\n\n"
        f"Guidelines:\n{guidelines_text}"
    )
    block = format_skills_for_prompt(skills) if "read" in active and skills else ""
    return _tail(prompt, append=append, context_files=context_files, skills_block=block, date=date_text, cwd=cwd)
