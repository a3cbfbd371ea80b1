"""Load everything the system prompt is made of, in one call: :func:`load_resources`.

The result, :class:`Resources`, is what ``%pi context`` and ``%pi skills`` show and what an
agent builds its system prompt from (:meth:`Resources.build_system_prompt`). It is a plain
snapshot: call :meth:`Resources.reload` to read the files again.
"""

from __future__ import annotations

import datetime as _dt
import os
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, PrivateAttr

from ..session.paths import agent_dir as default_agent_dir
from .context import (
    ContextFile,
    discover_append_system_prompt_file,
    discover_system_prompt_file,
    load_project_context_files,
    resolve_prompt_input,
)
from .skills import Skill, SkillDiagnostic, expand_skill_command, load_skills
from .system_prompt import DEFAULT_INTRO, PromptTool, build_system_prompt

__all__ = ["LoadOptions", "Resources", "load_resources"]


class LoadOptions(BaseModel):
    """How :func:`load_resources` was called (kept so :meth:`Resources.reload` can repeat it)."""

    cwd: str
    agent_dir: str
    home: str
    skill_paths: list[str] = []
    no_skills: bool = False
    no_context_files: bool = False
    system_prompt: str | None = None
    append_system_prompt: list[str] | None = None


class Resources(BaseModel):
    """Context files, skills and prompt texts found for one working directory.

    ``system_prompt_path`` / ``append_system_prompt_paths`` name the files the texts came
    from (``None`` / empty for literal text or nothing); ``warnings`` are problems outside
    skills (an unreadable AGENTS.md, SYSTEM.md ...).
    """

    cwd: str
    agent_dir: str
    context_files: list[ContextFile] = []
    skills: list[Skill] = []
    skill_diagnostics: list[SkillDiagnostic] = []
    custom_prompt: str | None = None
    system_prompt_path: str | None = None
    append_system_prompt: list[str] = []
    append_system_prompt_paths: list[str] = []
    warnings: list[str] = []
    system_prompt: str = ""
    """The system prompt for the ``tools`` given to :func:`load_resources` (rebuild it for other tools
    with :meth:`build_system_prompt`)."""
    options: LoadOptions = Field(repr=False)
    _tools: Any = PrivateAttr(default=None)

    def build_system_prompt(
        self,
        tools: Sequence[PromptTool | str] | None = None,
        *,
        date: _dt.date | str | None = None,
        intro: str = DEFAULT_INTRO,
    ) -> str:
        """The system prompt for these resources and the active ``tools`` (see :func:`~pi_jupyter.resources.build_system_prompt`)."""
        return build_system_prompt(
            cwd=self.cwd,
            tools=tools,
            custom_prompt=self.custom_prompt,
            append_system_prompt=self.append_system_prompt,
            context_files=self.context_files,
            skills=self.skills,
            date=date,
            intro=intro,
        )

    def skill(self, name: str) -> Skill | None:
        """The skill called ``name``, or ``None``."""
        return next((s for s in self.skills if s.name == name), None)

    def expand_skill_command(self, text: str) -> str:
        """Expand ``/skill:name args`` with these skills (pi's exact block); other text is unchanged."""
        return expand_skill_command(text, self.skills)

    @property
    def read_paths(self) -> list[str]:
        """Files and folders the model is told about that may lie outside the project root:
        the skills' folders and the context files. Give them to the policy
        (``Policy(read_paths=res.read_paths)``) so the ``read`` tool may open them."""
        paths: list[str] = []
        for s in self.skills:
            if s.base_dir not in paths:
                paths.append(s.base_dir)
        for f in self.context_files:
            if f.path not in paths:
                paths.append(f.path)
        return paths

    def reload(self) -> Resources:
        """Read everything again with the same options (and tools)."""
        o = self.options
        return load_resources(
            o.cwd,
            tools=self._tools,
            agent_dir=o.agent_dir,
            home=o.home,
            skill_paths=o.skill_paths,
            no_skills=o.no_skills,
            no_context_files=o.no_context_files,
            system_prompt=o.system_prompt,
            append_system_prompt=o.append_system_prompt,
        )


def load_resources(
    cwd: str | os.PathLike[str] | None = None,
    *,
    agent_dir: str | os.PathLike[str] | None = None,
    home: str | os.PathLike[str] | None = None,
    skill_paths: Sequence[str | os.PathLike[str]] = (),
    no_skills: bool = False,
    no_context_files: bool = False,
    system_prompt: str | os.PathLike[str] | None = None,
    append_system_prompt: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    tools: Sequence[PromptTool | str] | None = None,
) -> Resources:
    """Find context files, skills, SYSTEM.md and APPEND_SYSTEM.md for ``cwd`` as pi does.

    ``agent_dir`` defaults to pi's (``$PI_CODING_AGENT_DIR`` or ``~/.pi/agent``), ``home`` to
    the user's home (for ``~/.agents/skills``). ``skill_paths`` are pi's ``--skill`` paths,
    loaded after discovery; ``no_skills`` turns discovery off (explicit paths still load).
    ``system_prompt`` / ``append_system_prompt`` are pi's ``--system-prompt`` /
    ``--append-system-prompt``: a path is read, anything else is literal text; without them
    ``.pi/SYSTEM.md`` (else ``<agent_dir>/SYSTEM.md``) replaces the default prompt and
    ``.pi/APPEND_SYSTEM.md`` (else ``<agent_dir>/APPEND_SYSTEM.md``) is appended.
    ``tools`` (the session's active tools) are used for :attr:`Resources.system_prompt`.
    """
    cwd_s = os.path.abspath(os.fspath(cwd) if cwd is not None else os.getcwd())
    agent_s = os.path.abspath(os.path.expanduser(os.fspath(agent_dir))) if agent_dir is not None else str(default_agent_dir())
    home_s = os.path.abspath(os.fspath(home)) if home is not None else os.path.expanduser("~")
    if append_system_prompt is None:
        append_list: list[str] | None = None
    elif isinstance(append_system_prompt, (str, os.PathLike)):
        append_list = [os.fspath(append_system_prompt)]
    else:
        append_list = [os.fspath(a) for a in append_system_prompt]
    options = LoadOptions(
        cwd=cwd_s,
        agent_dir=agent_s,
        home=home_s,
        skill_paths=[os.fspath(p) for p in skill_paths],
        no_skills=no_skills,
        no_context_files=no_context_files,
        system_prompt=os.fspath(system_prompt) if system_prompt is not None else None,
        append_system_prompt=append_list,
    )

    warnings: list[str] = []
    context_files = [] if no_context_files else load_project_context_files(cwd_s, agent_s, warnings)

    if no_skills and not options.skill_paths:
        skills, diagnostics = [], []
    else:
        result = load_skills(cwd_s, agent_dir=agent_s, home=home_s, skill_paths=options.skill_paths, include_defaults=not no_skills)
        skills, diagnostics = result.skills, result.diagnostics

    system_source = options.system_prompt if options.system_prompt is not None else discover_system_prompt_file(cwd_s, agent_s)
    custom_prompt = resolve_prompt_input(system_source, "system prompt", warnings)
    system_path = system_source if system_source is not None and os.path.isfile(system_source) else None

    if append_list is not None:
        append_sources = append_list
    else:
        found = discover_append_system_prompt_file(cwd_s, agent_s)
        append_sources = [found] if found else []
    append_texts: list[str] = []
    append_paths: list[str] = []
    for source in append_sources:
        text = resolve_prompt_input(source, "append system prompt", warnings)
        if text is not None:
            append_texts.append(text)
            if os.path.isfile(source):
                append_paths.append(source)

    res = Resources(
        cwd=cwd_s,
        agent_dir=agent_s,
        context_files=context_files,
        skills=skills,
        skill_diagnostics=diagnostics,
        custom_prompt=custom_prompt,
        system_prompt_path=system_path,
        append_system_prompt=append_texts,
        append_system_prompt_paths=append_paths,
        warnings=warnings,
        options=options,
    )
    res._tools = list(tools) if tools is not None else None
    res.system_prompt = res.build_system_prompt(res._tools)
    return res
